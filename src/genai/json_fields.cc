#include "genai/json_fields.h"

namespace nxrt::genai::json {

Expected<Json> parse(std::string_view text) {
  // nlohmann reports the position only through its exception; it stays in here.
  try {
    return Json::parse(text.begin(), text.end());
  } catch (const Json::exception& e) {
    std::string what = e.what();
    if (const size_t end = what.find("] ");
        what.rfind("[json.exception", 0) == 0 && end != std::string::npos)
      what.erase(0, end + 2);
    return invalid_argument("not valid JSON: ", what);
  }
}

std::string brief(const Json& value) {
  // Containers are named, not printed: dump() recurses, and a hostile file nests deeply.
  if (value.is_object()) return "an object";
  if (value.is_array()) return str_cat("a list of ", value.size());
  std::string text = value.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (text.size() > 80) text = text.substr(0, 77) + "...";
  return text;
}

const Json* member(const Json& obj, const char* key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}

std::string path_of(std::string_view parent, const char* key) {
  return parent.empty() ? std::string(key) : str_cat(parent, ".", key);
}

std::string path_of(std::string_view parent, size_t index) {
  return str_cat(parent, "[", index, "]");
}

bool truthy(const Json* value) {
  if (value == nullptr || value->is_null()) return false;
  if (value->is_boolean()) return value->get<bool>();
  if (value->is_number_float()) return value->get<double>() != 0.0;
  if (value->is_number()) return value->get<int64_t>() != 0;
  if (value->is_string()) return !value->get_ref<const std::string&>().empty();
  return !value->empty();
}

Expected<bool> read_bool(const Json& obj, const char* key, std::string_view path, bool fallback) {
  const Json* value = member(obj, key);
  if (value == nullptr) return fallback;
  if (!value->is_boolean())
    return invalid_argument("'", path_of(path, key), "' must be true or false, not ",
                            brief(*value));
  return value->get<bool>();
}

Expected<std::optional<std::string>> read_string(const Json& obj, const char* key,
                                                 std::string_view path) {
  const Json* value = member(obj, key);
  if (value == nullptr) return std::optional<std::string>();
  if (!value->is_string())
    return invalid_argument("'", path_of(path, key), "' must be a string, not ", brief(*value));
  return std::optional<std::string>(value->get<std::string>());
}

Expected<int32_t> read_id(const Json& value, std::string_view path) {
  const bool in_range =
      (value.is_number_unsigned() && value.get<uint64_t>() <= uint64_t(kMaxTokenId)) ||
      (value.is_number_integer() && !value.is_number_unsigned() && value.get<int64_t>() >= 0 &&
       value.get<int64_t>() <= kMaxTokenId);
  if (!in_range)
    return invalid_argument("'", path, "' must be a token id (an integer from 0 to ", kMaxTokenId,
                            "), not ", brief(value));
  return static_cast<int32_t>(value.get<int64_t>());
}

}  // namespace nxrt::genai::json
