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
  // Every kernel output goes through this: an overflow-checked multiply, not a division
  // per dim (a 64-bit division costs tens of cycles).
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0 || __builtin_mul_overflow(n, d, &n)) return -1;
  }
  return n;
}

}  // namespace nxrt
