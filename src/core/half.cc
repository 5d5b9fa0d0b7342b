#include "core/half.h"

namespace nxrt {

// IEEE binary16 conversion with round-to-nearest-even, subnormals, inf and NaN.
uint16_t Float16::from_float(float value) {
  uint32_t u;
  std::memcpy(&u, &value, sizeof(u));
  const uint32_t sign = (u >> 16) & 0x8000u;
  u &= 0x7fffffffu;
  if (u > 0x7f800000u) return uint16_t(sign | 0x7e00u);   // NaN
  if (u >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // overflow rounds to inf
  if (u < 0x38800000u) {                                  // result is subnormal or zero
    if (u < 0x33000000u) return uint16_t(sign);           // below half the smallest subnormal
    const uint32_t exponent = u >> 23;
    const uint32_t mantissa = (u & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - exponent;  // 14 + (112 - exponent) + 0
    uint32_t half = mantissa >> shift;
    const uint32_t rest = mantissa & ((1u << shift) - 1);
    const uint32_t halfway = 1u << (shift - 1);
    if (rest > halfway || (rest == halfway && (half & 1u))) ++half;
    return uint16_t(sign | half);
  }
  uint32_t rounded = u + 0xfffu + ((u >> 13) & 1u);
  return uint16_t(sign | ((rounded - 0x38000000u) >> 13));
}

float Float16::to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1fu;
  uint32_t mantissa = h & 0x3ffu;
  uint32_t u;
  if (exponent == 0x1f) {
    u = sign | 0x7f800000u | (mantissa << 13);
  } else if (exponent == 0) {
    if (mantissa == 0) {
      u = sign;
    } else {  // normalise the subnormal
      int e = -1;
      do {
        ++e;
        mantissa <<= 1;
      } while ((mantissa & 0x400u) == 0);
      u = sign | uint32_t(127 - 15 - e) << 23 | (mantissa & 0x3ffu) << 13;
    }
  } else {
    u = sign | (exponent + 112) << 23 | mantissa << 13;
  }
  float out;
  std::memcpy(&out, &u, sizeof(out));
  return out;
}

}  // namespace nxrt
