#include "core/shape.h"

#include <limits>

namespace nxrt {

std::string Shape::to_string() const {
  std::string out = "[";
  for (size_t i = 0; i < rank_; ++i) {
    if (i) out += ",";
    out += std::to_string(data()[i]);
  }
  return out + "]";
}

int64_t checked_numel(std::span<const int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0) return -1;
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d) return -1;
    n *= d;
  }
  return n;
}

}  // namespace nxrt
