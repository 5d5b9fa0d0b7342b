// AVX-512 implementations of vmath's unary functions: the same polynomials as the AVX2
// ones (vmath_unary.inc) on sixteen lanes. Only this file is compiled for AVX-512; vmath.cc
// picks it at run time when the CPU has AVX-512F and DQ.
#include "ep/cpu/vmath/vmath_internal.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>

#include "ep/cpu/vmath/target_region.h"

NXRT_TARGET_BEGIN("avx512f,avx512dq,avx2,fma")
#if !defined(__clang__)
// GCC 12's AVX-512 intrinsics start from _mm512_undefined_ps(), which its flow analysis
// reports as "may be used uninitialized" once inlined (a known false positive).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"  // the same, from vgetmantps / vgetexpps
#endif

#define NXRT_AVX512 __attribute__((always_inline)) inline

namespace nxrt::vmath::detail {
namespace {

// The operations vmath_unary.inc is written in, on sixteen lanes; masks are k registers.
struct Avx512 {
  using R = __m512;
  using M = __mmask16;
  static constexpr size_t kWidth = 16;
  static NXRT_AVX512 R splat(float v) { return _mm512_set1_ps(v); }
  static NXRT_AVX512 R load(const float* p) { return _mm512_loadu_ps(p); }
  static NXRT_AVX512 void store(float* p, R v) { _mm512_storeu_ps(p, v); }
  static NXRT_AVX512 R add(R a, R b) { return _mm512_add_ps(a, b); }
  static NXRT_AVX512 R sub(R a, R b) { return _mm512_sub_ps(a, b); }
  static NXRT_AVX512 R mul(R a, R b) { return _mm512_mul_ps(a, b); }
  static NXRT_AVX512 R div(R a, R b) { return _mm512_div_ps(a, b); }
  static NXRT_AVX512 R fmadd(R a, R b, R c) { return _mm512_fmadd_ps(a, b, c); }
  static NXRT_AVX512 R fnmadd(R a, R b, R c) { return _mm512_fnmadd_ps(a, b, c); }
  static NXRT_AVX512 R min(R a, R b) { return _mm512_min_ps(a, b); }
  static NXRT_AVX512 R max(R a, R b) { return _mm512_max_ps(a, b); }
  static NXRT_AVX512 R bit_and(R a, R b) { return _mm512_and_ps(a, b); }
  static NXRT_AVX512 R bit_or(R a, R b) { return _mm512_or_ps(a, b); }
  static NXRT_AVX512 R bit_xor(R a, R b) { return _mm512_xor_ps(a, b); }
  static NXRT_AVX512 R clear_sign(R a) { return _mm512_abs_ps(a); }
  static NXRT_AVX512 M lt(R a, R b) { return _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ); }
  static NXRT_AVX512 M ge(R a, R b) { return _mm512_cmp_ps_mask(a, b, _CMP_GE_OQ); }
  static NXRT_AVX512 R blend(R a, R b, M m) { return _mm512_mask_blend_ps(m, a, b); }
  static NXRT_AVX512 R zero_where(M m, R v) { return _mm512_maskz_mov_ps(M(~m), v); }
  static NXRT_AVX512 R sub_where(M m, R src, R a, R b) { return _mm512_mask_sub_ps(src, m, a, b); }
  static NXRT_AVX512 M low_bit_set(R a) {
    return _mm512_test_epi32_mask(_mm512_castps_si512(a), _mm512_set1_epi32(1));
  }
  template <int kBits>
  static NXRT_AVX512 R shift_bits_left(R a) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_castps_si512(a), kBits));
  }
  static NXRT_AVX512 R sqrt(R a) { return _mm512_sqrt_ps(a); }
  // vscalefps: p * 2^n in one instruction, subnormal results and overflow included.
  static NXRT_AVX512 R scale_by_pow2(R p, R n) { return _mm512_scalef_ps(p, n); }
  static NXRT_AVX512 M is_nan(R a) { return _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q); }
  // x = m 2^e with m in [sqrt(1/2), sqrt(2)) for positive finite x, subnormals included
  // (vgetmantps / vgetexpps).
  static NXRT_AVX512 R split_log2(R x, R& e) {
    R m = _mm512_getmant_ps(x, _MM_MANT_NORM_1_2, _MM_MANT_SIGN_src);
    e = _mm512_getexp_ps(x);
    const M big = _mm512_cmp_ps_mask(m, _mm512_set1_ps(1.41421356f), _CMP_GT_OQ);
    m = _mm512_mask_mul_ps(m, big, m, _mm512_set1_ps(0.5f));
    e = _mm512_mask_add_ps(e, big, e, _mm512_set1_ps(1.0f));
    return m;
  }
};

namespace avx512 {
using V = Avx512;
#include "ep/cpu/vmath/vmath_unary.inc"
}  // namespace avx512

}  // namespace

// Sixteen values at a time, the same results as the AVX2 and portable forms: x / scale
// rounded half to even, plus the zero point, NaN -> 0, clamped, then narrowed (exact: the
// values are in range already). The clamp is applied to the rounded quotient, against the
// bounds less the zero point (the same thing, both being whole numbers), and the zero
// point added as an integer after the conversion.
// A 512-bit division costs about a cycle per element, so the quotient is first taken as
// x * (1 / scale), within 2 ulps of x / scale. Rounding can only tell them apart when the
// quotient lies within a few ulps of a half-integer: lanes within 2^-12 of one (8 ulps
// and more for |q| < 512; past 256 the clamp decides whichever way it rounds) are divided
// for real, so the result is the division's, bit for bit.
void quantize_8bit_avx512(const float* x, size_t n, float scale, float zero_point, bool is_signed,
                          void* y) {
  const __m512 vs = _mm512_set1_ps(scale);
  const float inverse = 1.0f / scale;
  // A reciprocal that is 0, inf, NaN or subnormal is no stand-in for the division.
  const bool fast = std::isnormal(inverse);
  const __m512 vinv = _mm512_set1_ps(inverse);
  const __m512 near_half = _mm512_set1_ps(0.5f - 0x1p-12f);
  const __m512 lo = _mm512_set1_ps((is_signed ? -128.0f : 0.0f) - zero_point);
  const __m512 hi = _mm512_set1_ps((is_signed ? 127.0f : 255.0f) - zero_point);
  const __m512i vz = _mm512_set1_epi32(int32_t(zero_point));
  constexpr int kNearest = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
  auto* out = static_cast<uint8_t*>(y);
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 v = _mm512_loadu_ps(x + i);
    __m512 r;
    if (fast) {
      const __m512 q = _mm512_mul_ps(v, vinv);
      r = _mm512_roundscale_ps(q, kNearest);
      const __mmask16 close =
          _mm512_cmp_ps_mask(_mm512_abs_ps(_mm512_sub_ps(q, r)), near_half, _CMP_GE_OQ);
      if (close) r = _mm512_mask_roundscale_ps(r, close, _mm512_div_ps(v, vs), kNearest);
    } else {
      r = _mm512_roundscale_ps(_mm512_div_ps(v, vs), kNearest);
    }
    const __mmask16 ordered = _mm512_cmp_ps_mask(r, r, _CMP_ORD_Q);  // NaN -> 0
    r = _mm512_min_ps(hi, _mm512_max_ps(lo, r));
    const __m512i i32 = _mm512_maskz_add_epi32(ordered, _mm512_cvtps_epi32(r), vz);
    const __m128i bytes = is_signed ? _mm512_cvtsepi32_epi8(i32) : _mm512_cvtusepi32_epi8(i32);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), bytes);
  }
  quantize_8bit_portable(x + i, n - i, scale, zero_point, is_signed, out + i);
}

void dequantize_8bit_avx512(const void* x, bool is_signed, size_t n, float scale, float zero_point,
                            float* y) {
  const __m512 vs = _mm512_set1_ps(scale), vz = _mm512_set1_ps(zero_point);
  const auto* in = static_cast<const uint8_t*>(x);
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i));
    const __m512i i32 = is_signed ? _mm512_cvtepi8_epi32(b) : _mm512_cvtepu8_epi32(b);
    _mm512_storeu_ps(y + i, _mm512_mul_ps(_mm512_sub_ps(_mm512_cvtepi32_ps(i32), vz), vs));
  }
  dequantize_8bit_portable(in + i, is_signed, n - i, scale, zero_point, y + i);
}

namespace {

// The running max of pooling on sixteen lanes: v where larger or NaN; a NaN in m stays.
NXRT_AVX512 __m512 max_keep_nan16(__m512 m, __m512 v) {
  return _mm512_mask_max_ps(m, _mm512_cmp_ps_mask(m, m, _CMP_ORD_Q), m, v);
}

NXRT_AVX512 __m512 combine(bool max, __m512 acc, __m512 v) {
  return max ? max_keep_nan16(acc, v) : _mm512_add_ps(acc, v);
}

// Lanes [0, n) of a mask, n <= 16 (0 for n <= 0).
NXRT_AVX512 __mmask16 first_lanes(int64_t n) {
  return n >= 16 ? __mmask16(0xFFFF) : n <= 0 ? __mmask16(0) : __mmask16((1u << n) - 1);
}

// Elements p[i * stride] for lanes i in `lanes` (others 0; nothing read for them). Stride
// 1 loads, stride 2 loads two vectors and keeps the even elements (one permute; a gather
// costs a load per element), larger strides gather.
NXRT_AVX512 __m512 load_every(const float* p, int64_t stride, __mmask16 lanes, __m512i gather_idx) {
  if (stride == 1) return _mm512_maskz_loadu_ps(lanes, p);
  if (stride == 2) {
    // Element 2i of the 32 starting at p: lane i of the result; lanes past the last one
    // asked for read nothing.
    const int64_t span = 2 * int64_t(__builtin_popcount(lanes)) - 1;
    const __m512 lo = _mm512_maskz_loadu_ps(first_lanes(span), p);
    const __m512 hi = _mm512_maskz_loadu_ps(first_lanes(span - 16), p + 16);
    const __m512i even =
        _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    return _mm512_maskz_mov_ps(lanes, _mm512_permutex2var_ps(lo, even, hi));
  }
  return _mm512_mask_i32gather_ps(_mm512_setzero_ps(), lanes, gather_idx, p, 4);
}

}  // namespace

void reduce_rows_avx512(bool max, const float* const* rows, size_t nrows, float* out, size_t n) {
  for (size_t j = 0; j < n; j += 16) {
    // Masked at the end of the row: pooled rows are short (7 to 112 wide).
    const __mmask16 lanes = first_lanes(int64_t(n - j));
    __m512 acc = _mm512_maskz_loadu_ps(lanes, rows[0] + j);
    for (size_t r = 1; r < nrows; ++r)
      acc = combine(max, acc, _mm512_maskz_loadu_ps(lanes, rows[r] + j));
    _mm512_mask_storeu_ps(out + j, lanes, acc);
  }
}

namespace {

// Sixteen elements p[i * S] (S = 1 or 2, fixed at compile time), whole (the caller knows
// the 16 * S floats are readable).
template <int S>
NXRT_AVX512 __m512 load_whole(const float* p) {
  if constexpr (S == 1) {
    return _mm512_loadu_ps(p);
  } else {
    const __m512i even =
        _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    return _mm512_permutex2var_ps(_mm512_loadu_ps(p), even, _mm512_loadu_ps(p + 16));
  }
}

// Runs a plane's output rows in blocks of sixteen for a stride S of 1 or 2:
// block(p, dst, lanes, whole) computes the outputs at dst from the windows starting at p;
// `whole` is std::true_type when every tap's 16 * S floats are readable (in the plane or
// its slack: plain loads, all lanes computed, `lanes` stored), else std::false_type and
// only `lanes` are computed, through masked loads. A row's last outputs go as one more
// whole block that overlaps the one before it (some outputs computed twice, identically)
// when it can, so masks are rare.
template <int S, typename Block>
NXRT_AVX512 void plane_blocks(const float* x, int64_t ld, const PoolWindow& w, float* out,
                              Block&& block) {
  const int64_t readable = ((w.OH - 1) * w.SH + (w.KH - 1) * w.DH) * ld + (w.OW - 1) * w.SW +
                           (w.KW - 1) * w.DW + 1 + w.slack;
  const int64_t reach = (w.KH - 1) * w.DH * ld + (w.KW - 1) * w.DW + 16 * S;
  auto fits = [&](const float* p) { return (p - x) + reach <= readable; };
  for (int64_t oh = 0; oh < w.OH; ++oh) {
    const float* top = x + oh * w.SH * ld;
    float* dst = out + oh * w.out_stride();
    int64_t o = 0;
    for (; o + 16 <= w.OW && fits(top + o * S); o += 16)
      block(top + o * S, dst + o, __mmask16(0xFFFF), std::true_type{});
    if (o < w.OW && w.OW >= 16 && fits(top + (w.OW - 16) * S)) {
      block(top + (w.OW - 16) * S, dst + w.OW - 16, __mmask16(0xFFFF), std::true_type{});
      o = w.OW;
    }
    // A short row (or its end) with readable floats after it: whole loads, masked store.
    if (o < w.OW && fits(top + o * S)) {
      block(top + o * S, dst + o, first_lanes(w.OW - o), std::true_type{});
      o = w.OW;
    }
    for (; o < w.OW; o += 16) block(top + o * S, dst + o, first_lanes(w.OW - o), std::false_type{});
  }
}

// Sixteen elements p[i * S] (S = 1 or 2): plain loads for a whole block, masked ones else.
template <int S, bool WHOLE>
NXRT_AVX512 __m512 load_block(const float* p, __mmask16 lanes) {
  if constexpr (WHOLE) {
    return load_whole<S>(p);
  } else {
    return load_every(p, S, lanes, _mm512_setzero_si512());  // no gather for S <= 2
  }
}

// pool_plane for a stride S of 1 or 2 (MAX: max, else sum times scale).
template <int S, bool MAX>
void pool_plane_fixed(const float* x, int64_t ld, const PoolWindow& w, float scale, float* out) {
  const __m512 vscale = _mm512_set1_ps(scale);
  plane_blocks<S>(x, ld, w, out, [&](const float* p, float* dst, __mmask16 lanes, auto whole) {
    constexpr bool kWhole = decltype(whole)::value;
    __m512 acc = load_block<S, kWhole>(p, lanes);
    for (int64_t kh = 0; kh < w.KH; ++kh) {
      const float* row = p + kh * w.DH * ld;
      for (int64_t kw = kh == 0 ? 1 : 0; kw < w.KW; ++kw)
        acc = combine(MAX, acc, load_block<S, kWhole>(row + kw * w.DW, lanes));
    }
    if (!MAX) acc = _mm512_mul_ps(acc, vscale);
    _mm512_mask_storeu_ps(dst, lanes, acc);
  });
}

// depthwise_plane for a stride S of 1 or 2. Two sums (even and odd taps, named: an
// indexed pair would live on the stack) halve the FMA latency chain of a 3x3 window.
template <int S>
void depthwise_plane_fixed(const float* x, int64_t ld, const PoolWindow& w, const float* weights,
                           float* out) {
  plane_blocks<S>(x, ld, w, out, [&](const float* p, float* dst, __mmask16 lanes, auto whole) {
    constexpr bool kWhole = decltype(whole)::value;
    __m512 even = _mm512_setzero_ps(), odd = _mm512_setzero_ps();
    for (int64_t kh = 0; kh < w.KH; ++kh) {
      const float* row = p + kh * w.DH * ld;
      const float* wk = weights + kh * w.KW;
      int64_t kw = 0;
      for (; kw + 1 < w.KW; kw += 2) {
        even = _mm512_fmadd_ps(_mm512_set1_ps(wk[kw]),
                               load_block<S, kWhole>(row + kw * w.DW, lanes), even);
        odd = _mm512_fmadd_ps(_mm512_set1_ps(wk[kw + 1]),
                              load_block<S, kWhole>(row + (kw + 1) * w.DW, lanes), odd);
      }
      if (kw < w.KW) {
        even = _mm512_fmadd_ps(_mm512_set1_ps(wk[kw]),
                               load_block<S, kWhole>(row + kw * w.DW, lanes), even);
        std::swap(even, odd);  // the next row starts on the other sum
      }
    }
    _mm512_mask_storeu_ps(dst, lanes, _mm512_add_ps(even, odd));
  });
}

// depthwise_plane for the common 3 x 3 window of adjacent taps: the nine weights stay in
// registers for the whole plane, and a block sums each window row apart (three FMAs deep)
// before adding the rows, instead of one chain through every tap.
template <int S>
void depthwise_plane_3x3(const float* x, int64_t ld, const PoolWindow& w, const float* weights,
                         float* out) {
  __m512 k[9];
#pragma GCC unroll 9
  for (int i = 0; i < 9; ++i) k[i] = _mm512_set1_ps(weights[i]);
  plane_blocks<S>(x, ld, w, out, [&](const float* p, float* dst, __mmask16 lanes, auto whole) {
    constexpr bool kWhole = decltype(whole)::value;
    __m512 rows[3];
#pragma GCC unroll 3
    for (int kh = 0; kh < 3; ++kh) {
      const float* row = p + kh * ld;
      __m512 acc = _mm512_mul_ps(k[3 * kh], load_block<S, kWhole>(row, lanes));
      acc = _mm512_fmadd_ps(k[3 * kh + 1], load_block<S, kWhole>(row + 1, lanes), acc);
      rows[kh] = _mm512_fmadd_ps(k[3 * kh + 2], load_block<S, kWhole>(row + 2, lanes), acc);
    }
    _mm512_mask_storeu_ps(dst, lanes, _mm512_add_ps(_mm512_add_ps(rows[0], rows[1]), rows[2]));
  });
}

}  // namespace

void pad_planes_avx512(const float* x, int64_t planes, int64_t H, int64_t W, int64_t top,
                       int64_t left, int64_t HP, int64_t WP, int64_t dst_stride, float fill,
                       float* out) {
  const int64_t rows = std::min(H, HP - top), cols = std::min(W, WP - left);
  const __m512 vfill = _mm512_set1_ps(fill);
  for (int64_t p = 0; p < planes; ++p) {
    float* dst = out + p * dst_stride;
    for (int64_t i = 0; i < HP * WP; i += 16)
      _mm512_mask_storeu_ps(dst + i, first_lanes(HP * WP - i), vfill);
    for (int64_t h = 0; h < rows; ++h) {
      const float* src = x + (p * H + h) * W;
      float* row = dst + (h + top) * WP + left;
      for (int64_t j = 0; j < cols; j += 16) {
        const __mmask16 lanes = first_lanes(cols - j);
        _mm512_mask_storeu_ps(row + j, lanes, _mm512_maskz_loadu_ps(lanes, src + j));
      }
    }
  }
}

void depthwise_plane_avx512(const float* x, int64_t ld, const PoolWindow& w, const float* weights,
                            float* out) {
  const bool k3x3 = w.KH == 3 && w.KW == 3 && w.DH == 1 && w.DW == 1;
  if (k3x3 && w.SW == 1) return depthwise_plane_3x3<1>(x, ld, w, weights, out);
  if (k3x3 && w.SW == 2) return depthwise_plane_3x3<2>(x, ld, w, weights, out);
  if (w.SW == 1) return depthwise_plane_fixed<1>(x, ld, w, weights, out);
  if (w.SW == 2) return depthwise_plane_fixed<2>(x, ld, w, weights, out);
  const __m512i idx =
      _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                         _mm512_set1_epi32(int32_t(w.SW)));
  for (int64_t oh = 0; oh < w.OH; ++oh) {
    const float* top = x + oh * w.SH * ld;
    for (int64_t o = 0; o < w.OW; o += 16) {
      const __mmask16 lanes = first_lanes(w.OW - o);
      const float* p = top + o * w.SW;
      __m512 acc = _mm512_setzero_ps();
      for (int64_t kh = 0; kh < w.KH; ++kh)
        for (int64_t kw = 0; kw < w.KW; ++kw)
          acc = _mm512_fmadd_ps(_mm512_set1_ps(weights[kh * w.KW + kw]),
                                load_every(p + kh * w.DH * ld + kw * w.DW, w.SW, lanes, idx), acc);
      _mm512_mask_storeu_ps(out + oh * w.out_stride() + o, lanes, acc);
    }
  }
}

namespace {

// The largest of x[0..n) (n >= 1), NaN when any element is NaN: four running maxima, so
// the loop is not one chain of max latencies (a 400-float attention row: ~4x fewer
// cycles), and NaN found by unordered compares of pairs of vectors (max_ps drops NaN).
NXRT_AVX512 float row_max(const float* x, int64_t n) {
  const __m512 lowest = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  __m512 m0 = lowest, m1 = lowest, m2 = lowest, m3 = lowest;
  __mmask16 nan = 0;
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    const __m512 v0 = _mm512_loadu_ps(x + i), v1 = _mm512_loadu_ps(x + i + 16);
    const __m512 v2 = _mm512_loadu_ps(x + i + 32), v3 = _mm512_loadu_ps(x + i + 48);
    nan |= _mm512_cmp_ps_mask(v0, v1, _CMP_UNORD_Q) | _mm512_cmp_ps_mask(v2, v3, _CMP_UNORD_Q);
    m0 = _mm512_max_ps(m0, v0);
    m1 = _mm512_max_ps(m1, v1);
    m2 = _mm512_max_ps(m2, v2);
    m3 = _mm512_max_ps(m3, v3);
  }
  for (; i < n; i += 16) {
    const __m512 v = _mm512_mask_loadu_ps(lowest, first_lanes(n - i), x + i);
    nan |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    m0 = _mm512_max_ps(m0, v);
  }
  if (nan) return std::numeric_limits<float>::quiet_NaN();
  return _mm512_reduce_max_ps(_mm512_max_ps(_mm512_max_ps(m0, m1), _mm512_max_ps(m2, m3)));
}

}  // namespace

void softmax_rows_avx512(bool log, const float* x, float* y, int64_t rows, int64_t n,
                         bool nan_to_zero) {
  // The last pass's result, NaN lanes zeroed for SafeSoftmax.
  auto finish = [nan_to_zero](__m512 v) {
    return nan_to_zero ? _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(v, v, _CMP_ORD_Q), v) : v;
  };
  const int64_t whole = n / 16 * 16;
  const __mmask16 tail = first_lanes(n - whole);
  for (int64_t r = 0; r < rows; ++r, x += n, y += n) {
    float m = row_max(x, n);
    if (std::isinf(m)) m = 0.0f;
    const __m512 vm = _mm512_set1_ps(m);
    // y = exp(x - m), summed in two vectors of partial sums.
    __m512 sum0 = _mm512_setzero_ps(), sum1 = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
      // The next row, on its way into L1 while this one's exponentials keep the core busy
      // (its max pass then does not wait on memory; a prefetch past the end is harmless).
      _mm_prefetch(reinterpret_cast<const char*>(x + n + i), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(x + n + i + 16), _MM_HINT_T0);
      const __m512 e0 = avx512::exp_ps(_mm512_sub_ps(_mm512_loadu_ps(x + i), vm));
      const __m512 e1 = avx512::exp_ps(_mm512_sub_ps(_mm512_loadu_ps(x + i + 16), vm));
      sum0 = _mm512_add_ps(sum0, e0);
      sum1 = _mm512_add_ps(sum1, e1);
      if (!log) {
        _mm512_storeu_ps(y + i, e0);
        _mm512_storeu_ps(y + i + 16, e1);
      }
    }
    for (; i < n; i += 16) {
      const __mmask16 lanes = first_lanes(n - i);
      const __m512 e = avx512::exp_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(lanes, x + i), vm));
      sum0 = _mm512_mask_add_ps(sum0, lanes, sum0, e);
      if (!log) _mm512_mask_storeu_ps(y + i, lanes, e);
    }
    const float total = _mm512_reduce_add_ps(_mm512_add_ps(sum0, sum1));
    if (log) {
      // (x - m) - log(sum), in this order, as onnxruntime: near-zero outputs keep their digits.
      const __m512 vlog = _mm512_set1_ps(std::log(total));
      for (i = 0; i < whole; i += 16)
        _mm512_storeu_ps(y + i,
                         finish(_mm512_sub_ps(_mm512_sub_ps(_mm512_loadu_ps(x + i), vm), vlog)));
      if (tail) {
        const __m512 v = _mm512_sub_ps(_mm512_maskz_loadu_ps(tail, x + whole), vm);
        _mm512_mask_storeu_ps(y + whole, tail, finish(_mm512_sub_ps(v, vlog)));
      }
    } else {
      const __m512 inv = _mm512_set1_ps(1.0f / total);
      for (i = 0; i < whole; i += 16)
        _mm512_storeu_ps(y + i, finish(_mm512_mul_ps(_mm512_loadu_ps(y + i), inv)));
      if (tail)
        _mm512_mask_storeu_ps(y + whole, tail,
                              finish(_mm512_mul_ps(_mm512_maskz_loadu_ps(tail, y + whole), inv)));
    }
  }
}

void window_rows_avx512(const float* plane, int64_t H, int64_t W, int64_t ih0, int64_t ih_step,
                        int64_t rows, int64_t off, int64_t lo, int64_t hi, int64_t OW, float* out) {
  // Lanes [lo, hi) are read (the masked-off ones never touch memory, so `off` may point
  // before the row); lanes [0, OW) are written.
  const __mmask16 read = hi > lo ? __mmask16(first_lanes(hi) & ~first_lanes(lo)) : 0;
  const __mmask16 write = first_lanes(OW);
  for (int64_t r = 0; r < rows; ++r, out += OW) {
    const int64_t ih = ih0 + r * ih_step;
    const __m512 v =
        ih >= 0 && ih < H ? _mm512_maskz_loadu_ps(read, plane + ih * W + off) : _mm512_setzero_ps();
    _mm512_mask_storeu_ps(out, write, v);
  }
}

// Lanes [lo, hi) (hi <= 16) of p[o * step], step 1 or 2, the others zero: what the short
// rows of strided_rows and depthwise_short_rows load. Masked-off lanes never touch memory,
// so the row's start may lie before p's first read (the padding).
struct StridedLanes {
  __mmask16 lanes = 0, span_lo = 0, span_hi = 0;  // result lanes; stride 2's two loads
  int64_t step = 1;

  NXRT_AVX512 static StridedLanes make(int64_t lo, int64_t hi, int64_t step) {
    StridedLanes s;
    s.step = step;
    if (hi <= lo) return s;
    s.lanes = __mmask16(first_lanes(hi) & ~first_lanes(lo));
    // Stride 2: lane o is element 2o of the 32 floats two loads cover; only
    // [2 lo, 2 hi - 1) is read.
    const uint64_t span =
        ((uint64_t(1) << (step * (hi - 1) + 1)) - 1) & ~((uint64_t(1) << (step * lo)) - 1);
    s.span_lo = __mmask16(span);
    s.span_hi = __mmask16(span >> 16);
    return s;
  }

  NXRT_AVX512 __m512 load(const float* p) const {
    if (step == 1) return _mm512_maskz_loadu_ps(lanes, p);
    const __m512i even =
        _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512 a = _mm512_maskz_loadu_ps(span_lo, p);
    const __m512 b = _mm512_maskz_loadu_ps(span_hi, p + 16);
    return _mm512_maskz_mov_ps(lanes, _mm512_permutex2var_ps(a, even, b));
  }
};

void depthwise_short_rows_avx512(const float* x, int64_t width, int64_t channels, const float* w,
                                 int64_t taps, int64_t step, int64_t pad, int64_t count, float* y) {
  // Per tap: the lanes whose input index o * step + q - pad lies in [0, width).
  StridedLanes tap[16];
  for (int64_t q = 0; q < taps; ++q) {
    int64_t lo = 0, hi = 0;
    for (int64_t o = 0; o < count; ++o) {  // at most 16 lanes: no divisions needed
      const int64_t i = o * step + q - pad;
      if (i < 0) lo = o + 1;
      if (i < width) hi = o + 1;
    }
    tap[q] = StridedLanes::make(lo, hi, step);
  }
  const __mmask16 out = first_lanes(count);
  for (int64_t c = 0; c < channels; ++c) {
    const float* row = x + c * width - pad;
    const float* wc = w + c * taps;
    __m512 acc = _mm512_setzero_ps();
    for (int64_t q = 0; q < taps; ++q)
      acc = _mm512_fmadd_ps(_mm512_set1_ps(wc[q]), tap[q].load(row + q), acc);
    _mm512_mask_storeu_ps(y + c * count, out, acc);
  }
}

void channel_affine_clamp_avx512(float* y, int64_t channels, int64_t cols, const float* scale,
                                 const float* bias, float lo, float hi) {
  // Lane j of a vector starting at element e belongs to channel e / cols + j / cols: the
  // per-channel values are spread over the lanes by one permute.
  const int shift = std::countr_zero(uint64_t(cols));  // cols is a power of two
  const __m512i spread = _mm512_srli_epi32(
      _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15), unsigned(shift));
  const __m512 vlo = _mm512_set1_ps(lo), vhi = _mm512_set1_ps(hi);
  const int64_t total = channels * cols, per_vector = 16 >> shift;
  for (int64_t e = 0, c = 0; e < total; e += 16, c += per_vector) {
    const __mmask16 lanes = first_lanes(total - e), params = first_lanes(channels - c);
    __m512 v = _mm512_maskz_loadu_ps(lanes, y + e);
    const __m512 b = bias ? _mm512_permutexvar_ps(spread, _mm512_maskz_loadu_ps(params, bias + c))
                          : _mm512_setzero_ps();
    if (scale)
      v = _mm512_fmadd_ps(
          v, _mm512_permutexvar_ps(spread, _mm512_maskz_loadu_ps(params, scale + c)), b);
    else
      v = _mm512_add_ps(v, b);
    // max(lo, x) and min(hi, x) return x when it is NaN (the second operand).
    v = _mm512_min_ps(vhi, _mm512_max_ps(vlo, v));
    _mm512_mask_storeu_ps(y + e, lanes, v);
  }
}

void strided_rows_avx512(const float* x, int64_t ld, int64_t rows, int64_t off, int64_t step,
                         int64_t lo, int64_t hi, int64_t count, float* out, int64_t out_ld) {
  const StridedLanes read = StridedLanes::make(lo, hi, step);
  const __mmask16 write = first_lanes(count);
  for (int64_t r = 0; r < rows; ++r)
    _mm512_mask_storeu_ps(out + r * out_ld, write, read.load(x + r * ld + off));
}

void pool_plane_avx512(bool max, const float* x, int64_t ld, const PoolWindow& w, float scale,
                       float* out) {
  if (w.SW == 1) {
    return max ? pool_plane_fixed<1, true>(x, ld, w, scale, out)
               : pool_plane_fixed<1, false>(x, ld, w, scale, out);
  }
  if (w.SW == 2) {
    return max ? pool_plane_fixed<2, true>(x, ld, w, scale, out)
               : pool_plane_fixed<2, false>(x, ld, w, scale, out);
  }
  const __m512i idx =
      _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                         _mm512_set1_epi32(int32_t(w.SW)));
  const __m512 vscale = _mm512_set1_ps(scale);
  for (int64_t oh = 0; oh < w.OH; ++oh) {
    const float* top = x + oh * w.SH * ld;
    float* dst = out + oh * w.out_stride();
    for (int64_t o = 0; o < w.OW; o += 16) {
      const __mmask16 lanes = first_lanes(w.OW - o);
      const float* p = top + o * w.SW;
      __m512 acc = load_every(p, w.SW, lanes, idx);
      for (int64_t kh = 0; kh < w.KH; ++kh) {
        const float* row = p + kh * w.DH * ld;
        for (int64_t kw = kh == 0 ? 1 : 0; kw < w.KW; ++kw)
          acc = combine(max, acc, load_every(row + kw * w.DW, w.SW, lanes, idx));
      }
      if (!max) acc = _mm512_mul_ps(acc, vscale);
      _mm512_mask_storeu_ps(dst + o, lanes, acc);
    }
  }
}

void reduce_taps_avx512(bool max, const float* r, size_t count, int64_t stride, int64_t taps,
                        int64_t dilation, float scale, float* out) {
  const __m512i idx =
      _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                         _mm512_set1_epi32(int32_t(stride)));
  const __m512 vscale = _mm512_set1_ps(scale);
  for (size_t o = 0; o < count; o += 16) {
    const __mmask16 lanes = first_lanes(int64_t(count - o));
    const float* p = r + int64_t(o) * stride;
    __m512 acc = load_every(p, stride, lanes, idx);
    for (int64_t t = 1; t < taps; ++t)
      acc = combine(max, acc, load_every(p + t * dilation, stride, lanes, idx));
    if (!max) acc = _mm512_mul_ps(acc, vscale);
    _mm512_mask_storeu_ps(out + o, lanes, acc);
  }
}

void unary_avx512(Unary fn, const UnaryParams& p, const float* x, float* y, size_t n) {
  avx512::unary_dispatch<false>(fn, p, 1.0f, 0.0f, x, y, n);
}

bool all_within_avx512(const float* x, size_t n, float limit) {
  return avx512::all_within(x, n, limit);
}

void unary_affine_avx512(Unary fn, const UnaryParams& p, float scale, float shift, const float* x,
                         float* y, size_t n) {
  avx512::unary_dispatch<true>(fn, p, scale, shift, x, y, n);
}

}  // namespace nxrt::vmath::detail

#if !defined(__clang__)
#pragma GCC diagnostic pop
#endif
NXRT_TARGET_END

#else

namespace nxrt::vmath::detail {
void quantize_8bit_avx512(const float* x, size_t n, float scale, float zero_point, bool is_signed,
                          void* y) {
  quantize_8bit_portable(x, n, scale, zero_point, is_signed, y);
}
void dequantize_8bit_avx512(const void* x, bool is_signed, size_t n, float scale, float zero_point,
                            float* y) {
  dequantize_8bit_portable(x, is_signed, n, scale, zero_point, y);
}
void unary_avx512(Unary fn, const UnaryParams& p, const float* x, float* y, size_t n) {
  unary_reference(fn, p, x, y, n);
}
bool all_within_avx512(const float*, size_t, float) { return false; }  // never called
void unary_affine_avx512(Unary fn, const UnaryParams& p, float scale, float shift, const float* x,
                         float* y, size_t n) {
  unary_affine(fn, p, scale, shift, x, y, n);
}
void reduce_rows_avx512(bool max, const float* const* rows, size_t nrows, float* out, size_t n) {
  reduce_rows_portable(max, rows, nrows, out, 0, n);
}
void reduce_taps_avx512(bool max, const float* r, size_t count, int64_t stride, int64_t taps,
                        int64_t dilation, float scale, float* out) {
  reduce_taps_portable(max, r, count, stride, taps, dilation, scale, out);
}
void pool_plane_avx512(bool max, const float* x, int64_t ld, const PoolWindow& w, float scale,
                       float* out) {
  pool_plane(max, x, ld, w, scale, out);
}
void depthwise_short_rows_avx512(const float*, int64_t, int64_t, const float*, int64_t, int64_t,
                                 int64_t, int64_t, float*) {}
void channel_affine_clamp_avx512(float*, int64_t, int64_t, const float*, const float*, float,
                                 float) {}
void strided_rows_avx512(const float* x, int64_t ld, int64_t rows, int64_t off, int64_t step,
                         int64_t lo, int64_t hi, int64_t count, float* out, int64_t out_ld) {
  strided_rows(x, ld, rows, off, step, lo, hi, count, out, out_ld);
}
void window_rows_avx512(const float* plane, int64_t H, int64_t W, int64_t ih0, int64_t ih_step,
                        int64_t rows, int64_t off, int64_t lo, int64_t hi, int64_t OW, float* out) {
  window_rows(plane, H, W, ih0, ih_step, rows, off, lo, hi, OW, out);
}
void softmax_rows_avx512(bool, const float*, float*, int64_t, int64_t, bool) {}
void depthwise_plane_avx512(const float* x, int64_t ld, const PoolWindow& w, const float* weights,
                            float* out) {
  depthwise_plane(x, ld, w, weights, out);
}
void pad_planes_avx512(const float* x, int64_t planes, int64_t H, int64_t W, int64_t top,
                       int64_t left, int64_t HP, int64_t WP, int64_t dst_stride, float fill,
                       float* out) {
  pad_planes(x, planes, H, W, top, left, HP, WP, dst_stride, fill, out);
}
}  // namespace nxrt::vmath::detail

#endif
