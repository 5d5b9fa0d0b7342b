// float16 and bfloat16 storage types. Arithmetic widens to float: this CPU (and most)
// has no native half compute, so kernels convert on load and round on store.
#pragma once

#include <cstdint>
#include <cstring>

namespace nxrt {

struct Float16 {
  uint16_t bits = 0;
  Float16() = default;
  explicit Float16(float value) : bits(from_float(value)) {}
  operator float() const { return to_float(bits); }

  static uint16_t from_float(float value);
  static float to_float(uint16_t bits);
};

struct BFloat16 {
  uint16_t bits = 0;
  BFloat16() = default;
  explicit BFloat16(float value) : bits(from_float(value)) {}
  operator float() const {
    uint32_t wide = uint32_t(bits) << 16;
    float out;
    std::memcpy(&out, &wide, sizeof(out));
    return out;
  }
  // Round to nearest even, keeping NaN a (quiet) NaN.
  static uint16_t from_float(float value) {
    uint32_t u;
    std::memcpy(&u, &value, sizeof(u));
    if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40);
    u += 0x7fffu + ((u >> 16) & 1u);
    return uint16_t(u >> 16);
  }
};

static_assert(sizeof(Float16) == 2 && sizeof(BFloat16) == 2);

}  // namespace nxrt
