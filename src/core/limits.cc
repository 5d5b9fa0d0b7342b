#include "core/limits.h"

#include <charconv>

namespace nxrt {

const Limits& default_limits() {
  static const Limits limits;
  return limits;
}

std::string limit_text(const char* key, int64_t value) {
  return str_cat("limit ", key, " = ", value, "; raise it with the session config entry '", key,
                 "' (SessionOptions.add_session_config_entry)");
}

Expected<Limits> parse_limits(const std::map<std::string, std::string>& config_entries) {
  Limits limits;
  struct Field {
    const char* key;
    int64_t Limits::*member;
  };
  static const Field kFields[] = {
      {kLimitMaxModelBytes, &Limits::max_model_bytes},
      {kLimitMaxTensorBytes, &Limits::max_tensor_bytes},
      {kLimitMaxTensorElements, &Limits::max_tensor_elements},
      {kLimitMaxGraphDepth, &Limits::max_graph_depth},
      {kLimitMaxNodes, &Limits::max_nodes},
      {kLimitMaxSessionMemoryBytes, &Limits::max_session_memory_bytes},
  };
  static const std::string kPrefix = "nxrt.limits.";
  for (const auto& [key, value] : config_entries) {
    if (key.compare(0, kPrefix.size(), kPrefix) != 0) continue;
    const Field* field = nullptr;
    for (const Field& f : kFields)
      if (key == f.key) field = &f;
    if (!field) {
      std::string known;
      for (const Field& f : kFields) known += str_cat(known.empty() ? "" : ", ", f.key);
      return invalid_argument("unknown session config entry '", key, "' (the limits are ", known,
                              ")");
    }
    int64_t parsed = 0;
    const char* end = value.data() + value.size();
    const auto [ptr, ec] = std::from_chars(value.data(), end, parsed);
    if (value.empty() || ec != std::errc() || ptr != end || parsed < 0)
      return invalid_argument("session config entry '", key, "' must be a non-negative decimal ",
                              "integer, not '", value, "'");
    limits.*(field->member) = parsed;
  }
  return limits;
}

}  // namespace nxrt
