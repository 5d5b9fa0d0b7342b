// AVX2+FMA implementations of vmath.h. Only these functions are compiled for AVX2
// (target attributes), so the library still loads on CPUs without it; vmath.cc picks
// them at run time.
#include "ep/cpu/vmath/vmath_internal.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#define NXRT_AVX2 __attribute__((target("avx2,fma"), always_inline)) inline

namespace nxrt::vmath::detail {
namespace {

NXRT_AVX2 __m256 splat(float v) { return _mm256_set1_ps(v); }

// max_keep_nan() on eight lanes. max_ps returns its second operand when either is NaN, so a
// NaN in v wins; a NaN already in m is kept by the blend.
NXRT_AVX2 __m256 max_keep_nan_ps(__m256 m, __m256 v) {
  return _mm256_blendv_ps(_mm256_max_ps(m, v), m, _mm256_cmp_ps(m, m, _CMP_UNORD_Q));
}

// e^x. x = n ln2 + r with |r| <= ln2 / 2 (ln2 split in two parts so r is exact to float
// precision), e^r by its Taylor series to r^7 (truncation < 1e-8 relative), and 2^n built
// in the exponent field. n is applied as two halves so that results below 2^-126
// (subnormal) and overflow to +inf both come out right. Inputs are clamped to [-104, 89],
// past which the result is 0 or inf anyway; min/max keep NaN (second operand on NaN).
NXRT_AVX2 __m256 exp_ps(__m256 x) {
  x = _mm256_min_ps(splat(89.0f), x);
  x = _mm256_max_ps(splat(-104.0f), x);
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, splat(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, splat(0.693145751953125f), x);
  r = _mm256_fnmadd_ps(n, splat(1.428606765330187045e-06f), r);
  __m256 p = splat(1.0f / 5040);
  p = _mm256_fmadd_ps(p, r, splat(1.0f / 720));
  p = _mm256_fmadd_ps(p, r, splat(1.0f / 120));
  p = _mm256_fmadd_ps(p, r, splat(1.0f / 24));
  p = _mm256_fmadd_ps(p, r, splat(1.0f / 6));
  p = _mm256_fmadd_ps(p, r, splat(0.5f));
  p = _mm256_fmadd_ps(p, r, splat(1.0f));
  p = _mm256_fmadd_ps(p, r, splat(1.0f));
  const __m256i ni = _mm256_cvtps_epi32(n);
  const __m256i n1 = _mm256_srai_epi32(ni, 1);
  const __m256i n2 = _mm256_sub_epi32(ni, n1);
  const __m256i bias = _mm256_set1_epi32(127);
  const __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
  const __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23));
  return _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
}

NXRT_AVX2 __m256 abs_ps(__m256 x) { return _mm256_andnot_ps(splat(-0.0f), x); }

// 1 / (1 + e^-x); e^-x overflows to inf for very negative x, giving 0.
NXRT_AVX2 __m256 sigmoid_ps(__m256 x) {
  const __m256 e = exp_ps(_mm256_sub_ps(_mm256_setzero_ps(), x));
  return _mm256_div_ps(splat(1.0f), _mm256_add_ps(splat(1.0f), e));
}

// tanh: odd Taylor series to x^11 below |x| = 0.4 (where 1 - 2/(e^2x + 1) would cancel),
// the exponential form above it; the sign is put back at the end.
NXRT_AVX2 __m256 tanh_ps(__m256 x) {
  const __m256 sign = _mm256_and_ps(x, splat(-0.0f));
  const __m256 a = abs_ps(x);
  const __m256 a2 = _mm256_mul_ps(a, a);
  __m256 p = splat(-1382.0f / 155925);
  p = _mm256_fmadd_ps(p, a2, splat(62.0f / 2835));
  p = _mm256_fmadd_ps(p, a2, splat(-17.0f / 315));
  p = _mm256_fmadd_ps(p, a2, splat(2.0f / 15));
  p = _mm256_fmadd_ps(p, a2, splat(-1.0f / 3));
  const __m256 small = _mm256_fmadd_ps(_mm256_mul_ps(p, a2), a, a);
  const __m256 e = exp_ps(_mm256_add_ps(a, a));
  const __m256 large =
      _mm256_sub_ps(splat(1.0f), _mm256_div_ps(splat(2.0f), _mm256_add_ps(e, splat(1.0f))));
  const __m256 use_small = _mm256_cmp_ps(a, splat(0.4f), _CMP_LT_OQ);
  return _mm256_or_ps(_mm256_blendv_ps(large, small, use_small), sign);
}

// erf below |x| = 0.5 by its Maclaurin series to x^11 (truncation < 3e-8 relative).
NXRT_AVX2 __m256 erf_small_ps(__m256 x) {
  const __m256 x2 = _mm256_mul_ps(x, x);
  __m256 p = splat(-1.0f / 1320);
  p = _mm256_fmadd_ps(p, x2, splat(1.0f / 216));
  p = _mm256_fmadd_ps(p, x2, splat(-1.0f / 42));
  p = _mm256_fmadd_ps(p, x2, splat(1.0f / 10));
  p = _mm256_fmadd_ps(p, x2, splat(-1.0f / 3));
  p = _mm256_fmadd_ps(p, x2, splat(1.0f));
  return _mm256_mul_ps(_mm256_mul_ps(p, x), splat(1.12837916709551257f));  // 2 / sqrt(pi)
}

// erfc(z) for z >= 0 with relative error about 1.2e-7 everywhere (so 1 + erf(x) of very
// negative x keeps its digits): t = 1 / (1 + z/2), erfc = t exp(-z^2 + P(t)) with the
// Chebyshev-fitted coefficients of Press et al., Numerical Recipes, section 6.2.
// Past z = 10.5 erfc underflows to 0 in float: z is clamped there (so the reciprocal, an
// estimate refined by one Newton step, cheaper than a division, never sees inf) and the
// result zeroed.
NXRT_AVX2 __m256 erfc_pos_ps(__m256 z) {
  const __m256 underflow = _mm256_cmp_ps(z, splat(10.5f), _CMP_GE_OQ);
  z = _mm256_min_ps(splat(10.5f), z);
  const __m256 d = _mm256_fmadd_ps(z, splat(0.5f), splat(1.0f));
  __m256 t = _mm256_rcp_ps(d);
  t = _mm256_fmadd_ps(t, _mm256_fnmadd_ps(d, t, splat(1.0f)), t);
  __m256 p = splat(0.17087277f);
  p = _mm256_fmadd_ps(p, t, splat(-0.82215223f));
  p = _mm256_fmadd_ps(p, t, splat(1.48851587f));
  p = _mm256_fmadd_ps(p, t, splat(-1.13520398f));
  p = _mm256_fmadd_ps(p, t, splat(0.27886807f));
  p = _mm256_fmadd_ps(p, t, splat(-0.18628806f));
  p = _mm256_fmadd_ps(p, t, splat(0.09678418f));
  p = _mm256_fmadd_ps(p, t, splat(0.37409196f));
  p = _mm256_fmadd_ps(p, t, splat(1.00002368f));
  p = _mm256_fmadd_ps(p, t, splat(-1.26551223f));
  p = _mm256_fnmadd_ps(z, z, p);
  return _mm256_andnot_ps(underflow, _mm256_mul_ps(t, exp_ps(p)));
}

NXRT_AVX2 __m256 erf_ps(__m256 x) {
  const __m256 sign = _mm256_and_ps(x, splat(-0.0f));
  const __m256 a = abs_ps(x);
  const __m256 large = _mm256_or_ps(_mm256_sub_ps(splat(1.0f), erfc_pos_ps(a)), sign);
  const __m256 use_small = _mm256_cmp_ps(a, splat(0.5f), _CMP_LT_OQ);
  return _mm256_blendv_ps(large, erf_small_ps(x), use_small);
}

// x * (1 + erf(x / sqrt 2)) / 2, with 1 + erf taken as erfc of the mirrored argument on the
// negative side, so the tiny values of very negative x keep their relative precision.
NXRT_AVX2 __m256 gelu_ps(__m256 x) {
  const __m256 u = _mm256_mul_ps(x, splat(0.70710678118654752f));
  const __m256 a = abs_ps(u);
  const __m256 c = erfc_pos_ps(a);
  const __m256 negative = _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_LT_OQ);
  __m256 one_plus = _mm256_blendv_ps(_mm256_sub_ps(splat(2.0f), c), c, negative);
  const __m256 use_small = _mm256_cmp_ps(a, splat(0.5f), _CMP_LT_OQ);
  one_plus = _mm256_blendv_ps(one_plus, _mm256_add_ps(splat(1.0f), erf_small_ps(u)), use_small);
  return _mm256_mul_ps(_mm256_mul_ps(x, splat(0.5f)), one_plus);
}

// 0.5 x (1 + tanh(s)) = x * sigmoid(2 s), s = sqrt(2/pi) (x + 0.044715 x^3).
NXRT_AVX2 __m256 gelu_tanh_ps(__m256 x) {
  const __m256 x3 = _mm256_mul_ps(_mm256_mul_ps(x, x), x);
  const __m256 s = _mm256_fmadd_ps(x3, splat(0.044715f), x);
  return _mm256_mul_ps(x, sigmoid_ps(_mm256_mul_ps(s, splat(2 * 0.79788456080286536f))));
}

NXRT_AVX2 __m256 clamp01(__m256 v) {
  return _mm256_min_ps(splat(1.0f), _mm256_max_ps(_mm256_setzero_ps(), v));
}

// e^x - 1 for the negative branch of Elu/Selu; exact enough since those branches are
// bounded by alpha and the tolerance is relative to it.
NXRT_AVX2 __m256 expm1_neg_ps(__m256 x) { return _mm256_sub_ps(exp_ps(x), splat(1.0f)); }

template <Unary F>
NXRT_AVX2 __m256 apply(__m256 x, const UnaryParams& p) {
  if constexpr (F == Unary::kExp) return exp_ps(x);
  if constexpr (F == Unary::kTanh) return tanh_ps(x);
  if constexpr (F == Unary::kSigmoid) return sigmoid_ps(x);
  if constexpr (F == Unary::kErf) return erf_ps(x);
  if constexpr (F == Unary::kGelu) return gelu_ps(x);
  if constexpr (F == Unary::kGeluTanh) return gelu_tanh_ps(x);
  if constexpr (F == Unary::kRelu) return _mm256_max_ps(_mm256_setzero_ps(), x);
  if constexpr (F == Unary::kLeakyRelu) {
    const __m256 neg = _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_LT_OQ);
    return _mm256_blendv_ps(x, _mm256_mul_ps(x, splat(p.alpha)), neg);
  }
  if constexpr (F == Unary::kHardSigmoid)
    return clamp01(_mm256_fmadd_ps(x, splat(p.alpha), splat(p.beta)));
  if constexpr (F == Unary::kHardSwish)
    return _mm256_mul_ps(x, clamp01(_mm256_fmadd_ps(x, splat(1.0f / 6), splat(0.5f))));
  if constexpr (F == Unary::kSwish)
    return _mm256_mul_ps(x, sigmoid_ps(_mm256_mul_ps(x, splat(p.alpha))));
  if constexpr (F == Unary::kElu || F == Unary::kSelu) {
    const __m256 neg = _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_LT_OQ);
    const __m256 e =
        _mm256_mul_ps(splat(p.alpha), expm1_neg_ps(_mm256_min_ps(x, _mm256_setzero_ps())));
    const __m256 y = _mm256_blendv_ps(x, e, neg);
    if constexpr (F == Unary::kSelu) return _mm256_mul_ps(y, splat(p.gamma));
    return y;
  }
  if constexpr (F == Unary::kSqrt) return _mm256_sqrt_ps(x);
  if constexpr (F == Unary::kReciprocal) return _mm256_div_ps(splat(1.0f), x);
  if constexpr (F == Unary::kNeg) return _mm256_xor_ps(x, splat(-0.0f));
  if constexpr (F == Unary::kAbs) return abs_ps(x);
  if constexpr (F == Unary::kClip)  // NaN passes through (min/max return x on NaN)
    return _mm256_min_ps(splat(p.beta), _mm256_max_ps(splat(p.alpha), x));
  if constexpr (F == Unary::kSoftsign)
    return _mm256_div_ps(x, _mm256_add_ps(splat(1.0f), abs_ps(x)));
  return x;
}

// Whole vectors, then the tail through a zero-padded vector (no scalar second path, so
// every element gets the same arithmetic).
template <Unary F>
__attribute__((target("avx2,fma"))) void run(const UnaryParams& p, const float* x, float* y,
                                             size_t n) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256 a = _mm256_loadu_ps(x + i), b = _mm256_loadu_ps(x + i + 8);
    _mm256_storeu_ps(y + i, apply<F>(a, p));
    _mm256_storeu_ps(y + i + 8, apply<F>(b, p));
  }
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, apply<F>(_mm256_loadu_ps(x + i), p));
  if (i < n) {
    alignas(32) float buf[8] = {};
    for (size_t j = i; j < n; ++j) buf[j - i] = x[j];
    _mm256_store_ps(buf, apply<F>(_mm256_load_ps(buf), p));
    for (size_t j = i; j < n; ++j) y[j] = buf[j - i];
  }
}

}  // namespace

void unary_avx2(Unary fn, const UnaryParams& p, const float* x, float* y, size_t n) {
  switch (fn) {
#define NXRT_VMATH_CASE(F) \
  case Unary::F:           \
    return run<Unary::F>(p, x, y, n);
    NXRT_VMATH_CASE(kExp)
    NXRT_VMATH_CASE(kTanh)
    NXRT_VMATH_CASE(kSigmoid)
    NXRT_VMATH_CASE(kErf)
    NXRT_VMATH_CASE(kGelu)
    NXRT_VMATH_CASE(kGeluTanh)
    NXRT_VMATH_CASE(kRelu)
    NXRT_VMATH_CASE(kLeakyRelu)
    NXRT_VMATH_CASE(kHardSigmoid)
    NXRT_VMATH_CASE(kHardSwish)
    NXRT_VMATH_CASE(kSwish)
    NXRT_VMATH_CASE(kElu)
    NXRT_VMATH_CASE(kSelu)
    NXRT_VMATH_CASE(kSqrt)
    NXRT_VMATH_CASE(kReciprocal)
    NXRT_VMATH_CASE(kNeg)
    NXRT_VMATH_CASE(kAbs)
    NXRT_VMATH_CASE(kClip)
    NXRT_VMATH_CASE(kSoftsign)
#undef NXRT_VMATH_CASE
  }
}

__attribute__((target("avx2,fma"))) void reduce_rows_avx2(bool max, const float* const* rows,
                                                          size_t nrows, float* out, size_t n) {
  size_t j = 0;
  for (; j + 8 <= n; j += 8) {
    __m256 acc = _mm256_loadu_ps(rows[0] + j);
    for (size_t r = 1; r < nrows; ++r) {
      const __m256 v = _mm256_loadu_ps(rows[r] + j);
      acc = max ? max_keep_nan_ps(acc, v) : _mm256_add_ps(acc, v);
    }
    _mm256_storeu_ps(out + j, acc);
  }
  reduce_rows_portable(max, rows, nrows, out, j, n);
}

// Eight quantized values: x / scale rounded half to even (the default MXCSR mode), plus
// the zero point, NaN -> 0, clamped, narrowed through saturating packs (exact, as
// the values are already in range).
NXRT_AVX2 __m128i quantize8(__m256 x, __m256 scale, __m256 zp, __m256 lo, __m256 hi,
                            bool is_signed) {
  __m256 r =
      _mm256_round_ps(_mm256_div_ps(x, scale), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  r = _mm256_add_ps(r, zp);
  r = _mm256_andnot_ps(_mm256_cmp_ps(r, r, _CMP_UNORD_Q), r);
  r = _mm256_min_ps(hi, _mm256_max_ps(lo, r));
  const __m256i i32 = _mm256_cvtps_epi32(r);
  const __m128i i16 =
      _mm_packs_epi32(_mm256_castsi256_si128(i32), _mm256_extracti128_si256(i32, 1));
  return is_signed ? _mm_packs_epi16(i16, i16) : _mm_packus_epi16(i16, i16);
}

__attribute__((target("avx2,fma"))) void quantize_8bit_avx2(const float* x, size_t n, float scale,
                                                            float zero_point, bool is_signed,
                                                            void* y) {
  const __m256 vs = _mm256_set1_ps(scale), vz = _mm256_set1_ps(zero_point);
  const __m256 lo = _mm256_set1_ps(is_signed ? -128.0f : 0.0f);
  const __m256 hi = _mm256_set1_ps(is_signed ? 127.0f : 255.0f);
  auto* out = static_cast<uint8_t*>(y);
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storel_epi64(reinterpret_cast<__m128i*>(out + i),
                     quantize8(_mm256_loadu_ps(x + i), vs, vz, lo, hi, is_signed));
  quantize_8bit_portable(x + i, n - i, scale, zero_point, is_signed, out + i);
}

NXRT_AVX2 __m256 dequantize8(const uint8_t* p, bool is_signed, __m256 scale, __m256 zp) {
  const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
  const __m256i i32 = is_signed ? _mm256_cvtepi8_epi32(b) : _mm256_cvtepu8_epi32(b);
  return _mm256_mul_ps(_mm256_sub_ps(_mm256_cvtepi32_ps(i32), zp), scale);
}

__attribute__((target("avx2,fma"))) void dequantize_8bit_avx2(const void* x, bool is_signed,
                                                              size_t n, float scale,
                                                              float zero_point, float* y) {
  const __m256 vs = _mm256_set1_ps(scale), vz = _mm256_set1_ps(zero_point);
  const auto* in = static_cast<const uint8_t*>(x);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, dequantize8(in + i, is_signed, vs, vz));
  dequantize_8bit_portable(in + i, is_signed, n - i, scale, zero_point, y + i);
}

// Lane i's offset i * stride, for gathers (stride <= kMaxGatherStride).
NXRT_AVX2 __m256i lane_offsets(int64_t stride) {
  return _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
                            _mm256_set1_epi32(int32_t(stride)));
}

NXRT_AVX2 __m256 load_strided(const float* p, int64_t stride, __m256i idx) {
  return stride == 1 ? _mm256_loadu_ps(p) : _mm256_i32gather_ps(p, idx, 4);
}

__attribute__((target("avx2,fma"))) void depthwise_row_avx2(const float* const* rows,
                                                            const float* const* w, size_t nrows,
                                                            int64_t first, int64_t taps,
                                                            int64_t stride, int64_t dilation,
                                                            float* out, size_t count) {
  const __m256i idx = lane_offsets(stride);
  size_t o = 0;
  for (; o + 8 <= count; o += 8) {
    __m256 acc = _mm256_setzero_ps();
    for (size_t r = 0; r < nrows; ++r) {
      const float* p = rows[r] + first + int64_t(o) * stride;
      for (int64_t q = 0; q < taps; ++q)
        acc = _mm256_fmadd_ps(_mm256_set1_ps(w[r][q]), load_strided(p + q * dilation, stride, idx),
                              acc);
    }
    _mm256_storeu_ps(out + o, acc);
  }
  if (o < count) {
    // The last few outputs with masked loads (short rows are common: 7 or 14 wide).
    const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(int(count - o)),
                                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    __m256 acc = _mm256_setzero_ps();
    for (size_t r = 0; r < nrows; ++r) {
      const float* p = rows[r] + first + int64_t(o) * stride;
      for (int64_t q = 0; q < taps; ++q) {
        const __m256 v = stride == 1
                             ? _mm256_maskload_ps(p + q * dilation, mask)
                             : _mm256_mask_i32gather_ps(_mm256_setzero_ps(), p + q * dilation, idx,
                                                        _mm256_castsi256_ps(mask), 4);
        acc = _mm256_fmadd_ps(_mm256_set1_ps(w[r][q]), v, acc);
      }
    }
    _mm256_maskstore_ps(out + o, mask, acc);
  }
}

// Eight outputs at a time: contiguous loads for stride 1, a gather otherwise.
__attribute__((target("avx2,fma"))) void reduce_taps_avx2(bool max, const float* r, size_t count,
                                                          int64_t stride, int64_t taps,
                                                          int64_t dilation, float scale,
                                                          float* out) {
  const __m256i idx = lane_offsets(stride);
  size_t o = 0;
  for (; o + 8 <= count; o += 8) {
    const float* p = r + int64_t(o) * stride;
    __m256 acc = load_strided(p, stride, idx);
    for (int64_t t = 1; t < taps; ++t) {
      const __m256 v = load_strided(p + t * dilation, stride, idx);
      acc = max ? max_keep_nan_ps(acc, v) : _mm256_add_ps(acc, v);
    }
    if (!max) acc = _mm256_mul_ps(acc, _mm256_set1_ps(scale));
    _mm256_storeu_ps(out + o, acc);
  }
  reduce_taps_portable(max, r + int64_t(o) * stride, count - o, stride, taps, dilation, scale,
                       out + o);
}

}  // namespace nxrt::vmath::detail

#else

// Without x86 vector units vmath.cc never picks these; they forward to the portable code so
// that every entry point is still defined and correct.
namespace nxrt::vmath::detail {
void unary_avx2(Unary fn, const UnaryParams& p, const float* x, float* y, size_t n) {
  unary_reference(fn, p, x, y, n);
}
void reduce_rows_avx2(bool max, const float* const* rows, size_t nrows, float* out, size_t n) {
  reduce_rows_portable(max, rows, nrows, out, 0, n);
}
void quantize_8bit_avx2(const float* x, size_t n, float scale, float zero_point, bool is_signed,
                        void* y) {
  quantize_8bit_portable(x, n, scale, zero_point, is_signed, y);
}
void dequantize_8bit_avx2(const void* x, bool is_signed, size_t n, float scale, float zero_point,
                          float* y) {
  dequantize_8bit_portable(x, is_signed, n, scale, zero_point, y);
}
void depthwise_row_avx2(const float* const* rows, const float* const* w, size_t nrows,
                        int64_t first, int64_t taps, int64_t stride, int64_t dilation, float* out,
                        size_t count) {
  depthwise_row_portable(rows, w, nrows, first, taps, stride, dilation, out, 0, count);
}
void reduce_taps_avx2(bool max, const float* r, size_t count, int64_t stride, int64_t taps,
                      int64_t dilation, float scale, float* out) {
  reduce_taps_portable(max, r, count, stride, taps, dilation, scale, out);
}
}  // namespace nxrt::vmath::detail

#endif
