// Encoding and decoding of the narrow float formats ONNX defines: the float8 types with a
// mantissa (E4M3FN, E4M3FNUZ, E5M2, E5M2FNUZ), float4 E2M1 and float8 E8M0 (a bare
// power-of-two exponent used as a scale). Every value is held as its bit pattern in one
// byte (see dtype.h); float4 uses the low four bits.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "core/dtype.h"

namespace nxrt {

// ---------------------------------------------------------------- float8 with mantissa

inline bool is_float8(DataType t) {
  return t == DataType::kFloat8E4M3FN || t == DataType::kFloat8E4M3FNUZ ||
         t == DataType::kFloat8E5M2 || t == DataType::kFloat8E5M2FNUZ;
}

struct F8Format {
  int man_bits;
  int bias;
  bool fnuz;     // no infinities, no negative zero, NaN is 0x80
  bool has_inf;  // IEEE-like (E5M2): all-ones exponent holds inf and NaN
  double max;
  uint8_t max_code;
};

inline F8Format f8_format(DataType t) {
  switch (t) {
    case DataType::kFloat8E4M3FN:
      return {3, 7, false, false, 448.0, 0x7e};
    case DataType::kFloat8E4M3FNUZ:
      return {3, 8, true, false, 240.0, 0x7f};
    case DataType::kFloat8E5M2:
      return {2, 15, false, true, 57344.0, 0x7b};
    default:
      return {2, 16, true, false, 57344.0, 0x7f};  // E5M2FNUZ
  }
}

inline float f8_to_float(uint8_t v, const F8Format& f) {
  const int exp_bits = 7 - f.man_bits;
  const int e = (v >> f.man_bits) & ((1 << exp_bits) - 1);
  const int m = v & ((1 << f.man_bits) - 1);
  const bool neg = (v & 0x80) != 0;
  if (f.fnuz) {
    if (v == 0x80) return std::numeric_limits<float>::quiet_NaN();
  } else if (f.has_inf) {
    if (e == (1 << exp_bits) - 1) {
      if (m != 0) return std::numeric_limits<float>::quiet_NaN();
      return neg ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
    }
  } else if ((v & 0x7f) == 0x7f) {
    return std::numeric_limits<float>::quiet_NaN();
  }
  const double mag = e == 0 ? std::ldexp(double(m), 1 - f.bias - f.man_bits)
                            : std::ldexp(double(m + (1 << f.man_bits)), e - f.bias - f.man_bits);
  return float(neg ? -mag : mag);
}

namespace detail {
// Rounds a > 0 to nearest even on the grid of a format with `man_bits` mantissa bits whose
// smallest normal exponent is `min_exp`. Returns the magnitude code (exponent field and
// mantissa field side by side) and sets `value` to the rounded magnitude. Subnormals encode
// their mantissa directly; normals add the biased exponent, and a carry out of the mantissa
// moves into the exponent field on its own.
inline int round_minifloat(double a, int man_bits, int min_exp, double& value) {
  int ex = 0;
  std::frexp(a, &ex);  // a = fraction * 2^ex with fraction in [0.5, 1)
  const int e = std::max(ex - 1, min_exp);
  // a in units of the spacing between representable values at exponent e
  const double units = std::nearbyint(std::ldexp(a, man_bits - e));
  value = std::ldexp(units, e - man_bits);
  return (e - min_exp) * (1 << man_bits) + int(units);
}
}  // namespace detail

// Round to nearest even. Out-of-range values (after rounding) and infinities saturate to
// the largest finite value when `saturate`, else become inf (E5M2) or NaN (the others).
inline uint8_t float_to_f8(double x, const F8Format& f, bool saturate) {
  const uint8_t nan = f.fnuz ? 0x80 : 0x7f;
  if (std::isnan(x)) return nan;
  const uint8_t sign = std::signbit(x) ? 0x80 : 0;
  const uint8_t overflow =
      saturate ? uint8_t(sign | f.max_code) : (f.has_inf ? uint8_t(sign | 0x7c) : nan);
  if (std::isinf(x)) return overflow;
  const double a = std::fabs(x);
  const uint8_t zero = f.fnuz ? 0 : sign;
  if (a == 0) return zero;
  double rounded = 0;
  const int code = detail::round_minifloat(a, f.man_bits, 1 - f.bias, rounded);
  if (rounded > f.max) return overflow;
  if (code == 0) return zero;
  return uint8_t(sign | code);
}

// ---------------------------------------------------------------- float4 E2M1

inline float f4e2m1_to_float(uint8_t v) {
  static constexpr float kMagnitude[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  const float m = kMagnitude[v & 7];
  return (v & 8) ? -m : m;
}

// Round to nearest even, always saturating (the format has no inf or NaN): beyond +-6 and
// +-inf give +-6, and NaN gives +6, as the ONNX float4 specification's cast table says.
inline uint8_t float_to_f4e2m1(double x) {
  if (std::isnan(x)) return 0x7;
  const uint8_t sign = std::signbit(x) ? 0x8 : 0;
  const double a = std::fabs(x);
  if (a >= 6.0) return uint8_t(sign | 0x7);
  if (a == 0) return sign;
  double rounded = 0;
  const int code = detail::round_minifloat(a, 1, 0, rounded);
  return uint8_t(sign | std::min(code, 7));
}

// ---------------------------------------------------------------- float8 E8M0

// Cast's round_mode for float8e8m0: `up` rounds away from zero, `down` toward zero,
// `nearest` to the nearer power of two with ties (mantissa exactly 1.5) going up.
enum class E8M0Rounding { kUp, kDown, kNearest };

// 2^(v - 127); 0xFF is the only NaN and there is no zero or sign.
inline float e8m0_to_float(uint8_t v) {
  if (v == 0xFF) return std::numeric_limits<float>::quiet_NaN();
  return std::ldexp(1.0f, int(v) - 127);
}

// Values outside [2^-127, 2^127] (zero and inf included) clamp to the end of the range when
// `saturate`, else become NaN. Negative inputs are undefined by the spec; their magnitude is
// used, as the ONNX reference does (it reads only the exponent bits).
inline uint8_t float_to_e8m0(double x, bool saturate, E8M0Rounding mode) {
  if (std::isnan(x)) return 0xFF;
  const double a = std::fabs(x);
  if (std::isinf(a)) return saturate ? 0xFE : 0xFF;
  if (a == 0) return saturate ? 0x00 : 0xFF;
  int ex = 0;
  const double fraction = std::frexp(a, &ex);  // a = (2 * fraction) * 2^(ex - 1)
  int e = ex - 1;
  if ((mode == E8M0Rounding::kUp && fraction > 0.5) ||
      (mode == E8M0Rounding::kNearest && fraction >= 0.75))
    ++e;
  const int code = e + 127;
  if (code > 0xFE) return saturate ? 0xFE : 0xFF;
  // Below 2^-127: rounding up lands on 2^-127 itself, anything else is out of range.
  if (code < 0) return saturate || mode == E8M0Rounding::kUp ? 0x00 : 0xFF;
  return uint8_t(code);
}

}  // namespace nxrt
