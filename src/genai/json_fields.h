// Typed, non-throwing reads of JSON fields for the tokenizer files: each returns the
// value or an error naming the field by its path ("model.merges[17]").
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"

namespace nxrt::genai::json {

using Json = nlohmann::json;

// The document, or an error with the parser's line and column.
Expected<Json> parse(std::string_view text);

// The value for an error message: a scalar as JSON (cut short), a container by its kind.
std::string brief(const Json& value);

// The member `key` of an object; nullptr when absent or null, or when obj is no object.
const Json* member(const Json& obj, const char* key);

std::string path_of(std::string_view parent, const char* key);  // "model" + "vocab"
std::string path_of(std::string_view parent, size_t index);     // "merges" + 3

// Python's truth value (null, false, 0, "" and empty containers are false): what the
// Python port tests flags such as "dropout" with.
bool truthy(const Json* value);

Expected<bool> read_bool(const Json& obj, const char* key, std::string_view path, bool fallback);
// A string member; nullopt when absent or null.
Expected<std::optional<std::string>> read_string(const Json& obj, const char* key,
                                                 std::string_view path);
// A token id: an integer in [0, kMaxTokenId].
Expected<int32_t> read_id(const Json& value, std::string_view path);

// Ids beyond this are refused rather than allocated for: no vocabulary comes near it.
constexpr int64_t kMaxTokenId = (int64_t{1} << 24) - 1;

}  // namespace nxrt::genai::json
