// Hash for unordered containers keyed by std::string that are looked up with
// std::string_view (no temporary string per lookup).
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace nxrt::genai {

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

template <typename T>
using StringMap = std::unordered_map<std::string, T, StringHash, std::equal_to<>>;

}  // namespace nxrt::genai
