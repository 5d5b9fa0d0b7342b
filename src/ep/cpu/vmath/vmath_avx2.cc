// AVX2+FMA implementations of vmath.h. Only these functions are compiled for AVX2
// (target attributes), so the library still loads on CPUs without it; vmath.cc picks
// them at run time.
#include "ep/cpu/vmath/vmath_internal.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "ep/cpu/vmath/target_region.h"

// Everything below is compiled for AVX2+FMA, vmath_unary.inc's templates and lambdas
// included.
NXRT_TARGET_BEGIN("avx2,fma")

#define NXRT_AVX2 __attribute__((target("avx2,fma"), always_inline)) inline

#include "ep/cpu/vmath/vmath_avx2_lanes.h"

namespace nxrt::vmath::detail {
namespace {

using avx2_lanes::max_keep_nan_ps;
using avx2_lanes::tail_mask;

// The operations vmath_unary.inc is written in, on eight lanes.
struct Avx2 {
  using R = __m256;
  using M = __m256;  // all-ones lanes
  static constexpr size_t kWidth = 8;
  static NXRT_AVX2 R splat(float v) { return _mm256_set1_ps(v); }
  static NXRT_AVX2 R load(const float* p) { return _mm256_loadu_ps(p); }
  static NXRT_AVX2 void store(float* p, R v) { _mm256_storeu_ps(p, v); }
  static NXRT_AVX2 R add(R a, R b) { return _mm256_add_ps(a, b); }
  static NXRT_AVX2 R sub(R a, R b) { return _mm256_sub_ps(a, b); }
  static NXRT_AVX2 R mul(R a, R b) { return _mm256_mul_ps(a, b); }
  static NXRT_AVX2 R div(R a, R b) { return _mm256_div_ps(a, b); }
  static NXRT_AVX2 R fmadd(R a, R b, R c) { return _mm256_fmadd_ps(a, b, c); }
  static NXRT_AVX2 R fnmadd(R a, R b, R c) { return _mm256_fnmadd_ps(a, b, c); }
  static NXRT_AVX2 R min(R a, R b) { return _mm256_min_ps(a, b); }
  static NXRT_AVX2 R max(R a, R b) { return _mm256_max_ps(a, b); }
  static NXRT_AVX2 R bit_and(R a, R b) { return _mm256_and_ps(a, b); }
  static NXRT_AVX2 R bit_or(R a, R b) { return _mm256_or_ps(a, b); }
  static NXRT_AVX2 R bit_xor(R a, R b) { return _mm256_xor_ps(a, b); }
  static NXRT_AVX2 R clear_sign(R a) { return _mm256_andnot_ps(splat(-0.0f), a); }
  static NXRT_AVX2 M lt(R a, R b) { return _mm256_cmp_ps(a, b, _CMP_LT_OQ); }
  static NXRT_AVX2 M ge(R a, R b) { return _mm256_cmp_ps(a, b, _CMP_GE_OQ); }
  static NXRT_AVX2 R blend(R a, R b, M m) { return _mm256_blendv_ps(a, b, m); }
  static NXRT_AVX2 R zero_where(M m, R v) { return _mm256_andnot_ps(m, v); }
  static NXRT_AVX2 R sub_where(M m, R src, R a, R b) {
    return _mm256_blendv_ps(src, _mm256_sub_ps(a, b), m);
  }
  static NXRT_AVX2 M low_bit_set(R a) {
    const __m256i one = _mm256_set1_epi32(1);
    return _mm256_castsi256_ps(
        _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_castps_si256(a), one), one));
  }
  template <int kBits>
  static NXRT_AVX2 R shift_bits_left(R a) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_castps_si256(a), kBits));
  }
  static NXRT_AVX2 R sqrt(R a) { return _mm256_sqrt_ps(a); }
  // 2^n built in the exponent field, applied as two halves so that results below 2^-126
  // (subnormal) and overflow to +inf both come out right.
  static NXRT_AVX2 R scale_by_pow2(R p, R n) {
    const __m256i ni = _mm256_cvtps_epi32(n);
    const __m256i n1 = _mm256_srai_epi32(ni, 1);
    const __m256i n2 = _mm256_sub_epi32(ni, n1);
    const __m256i bias = _mm256_set1_epi32(127);
    const R s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
    const R s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23));
    return _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
  }
  static NXRT_AVX2 M is_nan(R a) { return _mm256_cmp_ps(a, a, _CMP_UNORD_Q); }
  // x = m 2^e with m in [sqrt(1/2), sqrt(2)) for positive finite x: subnormals are scaled
  // by 2^23 first, then the exponent field and the mantissa bits are read apart.
  static NXRT_AVX2 R split_log2(R x, R& e) {
    const R tiny = _mm256_cmp_ps(x, _mm256_set1_ps(1.17549435e-38f), _CMP_LT_OQ);
    x = _mm256_blendv_ps(x, _mm256_mul_ps(x, _mm256_set1_ps(8388608.0f)), tiny);
    const __m256i bits = _mm256_castps_si256(x);
    const __m256i biased = _mm256_srli_epi32(bits, 23);
    e = _mm256_sub_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(biased, _mm256_set1_epi32(127))),
                      _mm256_and_ps(tiny, _mm256_set1_ps(23.0f)));
    R m = _mm256_castsi256_ps(_mm256_or_si256(_mm256_and_si256(bits, _mm256_set1_epi32(0x007FFFFF)),
                                              _mm256_set1_epi32(0x3F800000)));
    const R big = _mm256_cmp_ps(m, _mm256_set1_ps(1.41421356f), _CMP_GT_OQ);
    m = _mm256_blendv_ps(m, _mm256_mul_ps(m, _mm256_set1_ps(0.5f)), big);
    e = _mm256_add_ps(e, _mm256_and_ps(big, _mm256_set1_ps(1.0f)));
    return m;
  }
};

namespace avx2 {
using V = Avx2;
#include "ep/cpu/vmath/vmath_unary.inc"
}  // namespace avx2

}  // namespace

void unary_avx2(Unary fn, const UnaryParams& p, const float* x, float* y, size_t n) {
  avx2::unary_dispatch<false>(fn, p, 1.0f, 0.0f, x, y, n);
}

bool all_within_avx2(const float* x, size_t n, float limit) {
  return avx2::all_within(x, n, limit);
}

void unary_affine_avx2(Unary fn, const UnaryParams& p, float scale, float shift, const float* x,
                       float* y, size_t n) {
  avx2::unary_dispatch<true>(fn, p, scale, shift, x, y, n);
}

// Four running maxima of eight lanes (independent chains), NaN kept, then folded.
__attribute__((target("avx2,fma"))) float max_value_avx2(const float* x, size_t n) {
  if (n < 32) return max_value_portable(x, 1, n, x[0]);
  __m256 m0 = _mm256_loadu_ps(x), m1 = _mm256_loadu_ps(x + 8), m2 = _mm256_loadu_ps(x + 16),
         m3 = _mm256_loadu_ps(x + 24);
  size_t i = 32;
  for (; i + 32 <= n; i += 32) {
    m0 = max_keep_nan_ps(m0, _mm256_loadu_ps(x + i));
    m1 = max_keep_nan_ps(m1, _mm256_loadu_ps(x + i + 8));
    m2 = max_keep_nan_ps(m2, _mm256_loadu_ps(x + i + 16));
    m3 = max_keep_nan_ps(m3, _mm256_loadu_ps(x + i + 24));
  }
  m0 = max_keep_nan_ps(max_keep_nan_ps(m0, m1), max_keep_nan_ps(m2, m3));
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, m0);
  float m = lanes[0];
  for (int j = 1; j < 8; ++j) m = max_keep_nan(m, lanes[j]);
  return max_value_portable(x, i, n, m);
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
  if (j < n) {
    // The last few with masked loads: pooled rows are short (7 to 56 wide).
    const __m256i mask = tail_mask(n - j);
    __m256 acc = _mm256_maskload_ps(rows[0] + j, mask);
    for (size_t r = 1; r < nrows; ++r) {
      const __m256 v = _mm256_maskload_ps(rows[r] + j, mask);
      acc = max ? max_keep_nan_ps(acc, v) : _mm256_add_ps(acc, v);
    }
    _mm256_maskstore_ps(out + j, mask, acc);
  }
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

// Sixteen outputs at a time (two vectors, masked at the end of the row), each summed in
// two chains (even and odd taps): the sums of a 3x3 window are short, so one chain per
// vector would wait on the FMA latency; rows of mobile networks are 7 to 56 wide.
__attribute__((target("avx2,fma"))) void depthwise_row_avx2(const float* const* rows,
                                                            const float* const* w, size_t nrows,
                                                            int64_t first, int64_t taps,
                                                            int64_t stride, int64_t dilation,
                                                            float* out, size_t count) {
  const __m256i idx = lane_offsets(stride);
  const __m256i all = _mm256_set1_epi32(-1);
  auto load = [&](const float* p, __m256i mask) {
    return stride == 1 ? _mm256_maskload_ps(p, mask)
                       : _mm256_mask_i32gather_ps(_mm256_setzero_ps(), p, idx,
                                                  _mm256_castsi256_ps(mask), 4);
  };
  for (size_t o = 0; o < count; o += 16) {
    const size_t left = count - o;
    const __m256i m0 = left >= 8 ? all : tail_mask(left);
    const bool second = left > 8;
    const __m256i m1 = left >= 16 ? all : tail_mask(second ? left - 8 : 0);
    __m256 a[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
    __m256 b[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
    size_t t = 0;
    for (size_t r = 0; r < nrows; ++r) {
      const float* p = rows[r] + first + int64_t(o) * stride;
      for (int64_t q = 0; q < taps; ++q, t ^= 1) {
        const __m256 wv = _mm256_set1_ps(w[r][q]);
        const float* pq = p + q * dilation;
        a[t] = _mm256_fmadd_ps(wv, load(pq, m0), a[t]);
        if (second) b[t] = _mm256_fmadd_ps(wv, load(pq + 8 * stride, m1), b[t]);
      }
    }
    _mm256_maskstore_ps(out + o, m0, _mm256_add_ps(a[0], a[1]));
    if (second) _mm256_maskstore_ps(out + o + 8, m1, _mm256_add_ps(b[0], b[1]));
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
  if (o < count) {
    // The last few outputs with masked loads or gathers (masked lanes read nothing).
    const __m256i mask = tail_mask(count - o);
    const float* p = r + int64_t(o) * stride;
    auto load = [&](const float* q) {
      return stride == 1 ? _mm256_maskload_ps(q, mask)
                         : _mm256_mask_i32gather_ps(_mm256_setzero_ps(), q, idx,
                                                    _mm256_castsi256_ps(mask), 4);
    };
    __m256 acc = load(p);
    for (int64_t t = 1; t < taps; ++t) {
      const __m256 v = load(p + t * dilation);
      acc = max ? max_keep_nan_ps(acc, v) : _mm256_add_ps(acc, v);
    }
    if (!max) acc = _mm256_mul_ps(acc, _mm256_set1_ps(scale));
    _mm256_maskstore_ps(out + o, mask, acc);
  }
}

namespace {

// The largest lane, or NaN when `nan` (a lane mask) has any lane set.
NXRT_AVX2 float reduce_max(__m256 v, __m256 nan) {
  if (_mm256_movemask_ps(nan)) return std::numeric_limits<float>::quiet_NaN();
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  return _mm_cvtss_f32(_mm_max_ss(m, _mm_movehdup_ps(m)));
}

NXRT_AVX2 float reduce_add(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}

}  // namespace

// softmax_rows on eight lanes: the same three passes as the AVX-512 form, the row's last
// partial vector through masked loads and stores.
void softmax_rows_avx2(bool log, const float* x, float* y, int64_t rows, int64_t n,
                       bool nan_to_zero) {
  const int64_t whole = n / 8 * 8;
  const __m256i tail = tail_mask(size_t(n - whole));
  const __m256 ninf = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  for (int64_t r = 0; r < rows; ++r, x += n, y += n) {
    // The maximum, and whether any element is NaN (max_ps drops NaN operands).
    __m256 vmax = ninf, nan = _mm256_setzero_ps();
    for (int64_t i = 0; i < n; i += 8) {
      const __m256 v = i < whole ? _mm256_loadu_ps(x + i)
                                 : _mm256_blendv_ps(ninf, _mm256_maskload_ps(x + i, tail),
                                                    _mm256_castsi256_ps(tail));
      nan = _mm256_or_ps(nan, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
      vmax = _mm256_max_ps(vmax, v);
    }
    float m = reduce_max(vmax, nan);
    if (std::isinf(m)) m = 0.0f;
    const __m256 vm = _mm256_set1_ps(m);
    // y = exp(x - m), summed in one vector of partial sums.
    __m256 sum = _mm256_setzero_ps();
    for (int64_t i = 0; i < n; i += 8) {
      if (i < whole) {
        const __m256 e = avx2::exp_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i), vm));
        sum = _mm256_add_ps(sum, e);
        if (!log) _mm256_storeu_ps(y + i, e);
      } else {
        const __m256 e =
            _mm256_and_ps(avx2::exp_ps(_mm256_sub_ps(_mm256_maskload_ps(x + i, tail), vm)),
                          _mm256_castsi256_ps(tail));
        sum = _mm256_add_ps(sum, e);
        if (!log) _mm256_maskstore_ps(y + i, tail, e);
      }
    }
    const float total = reduce_add(sum);
    // Log: (x - m) - log(sum), in this order, as onnxruntime: near-zero outputs keep their
    // digits. Else y / sum as y * (1 / sum).
    const __m256 shift = _mm256_set1_ps(std::log(total)), inv = _mm256_set1_ps(1.0f / total);
    for (int64_t i = 0; i < n; i += 8) {
      const bool full = i < whole;
      __m256 v =
          log ? _mm256_sub_ps(full ? _mm256_loadu_ps(x + i) : _mm256_maskload_ps(x + i, tail), vm)
              : (full ? _mm256_loadu_ps(y + i) : _mm256_maskload_ps(y + i, tail));
      v = log ? _mm256_sub_ps(v, shift) : _mm256_mul_ps(v, inv);
      if (nan_to_zero) v = _mm256_and_ps(v, _mm256_cmp_ps(v, v, _CMP_ORD_Q));
      if (full) {
        _mm256_storeu_ps(y + i, v);
      } else {
        _mm256_maskstore_ps(y + i, tail, v);
      }
    }
  }
}

}  // namespace nxrt::vmath::detail

NXRT_TARGET_END

#else

// Without x86 vector units vmath.cc never picks these; they forward to the portable code so
// that every entry point is still defined and correct.
namespace nxrt::vmath::detail {
void unary_avx2(Unary fn, const UnaryParams& p, const float* x, float* y, size_t n) {
  unary_reference(fn, p, x, y, n);
}
bool all_within_avx2(const float*, size_t, float) { return false; }  // never called
void unary_affine_avx2(Unary fn, const UnaryParams& p, float scale, float shift, const float* x,
                       float* y, size_t n) {
  unary_affine(fn, p, scale, shift, x, y, n);
}
void reduce_rows_avx2(bool max, const float* const* rows, size_t nrows, float* out, size_t n) {
  reduce_rows_portable(max, rows, nrows, out, 0, n);
}
float max_value_avx2(const float* x, size_t n) { return max_value_portable(x, 1, n, x[0]); }
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
void softmax_rows_avx2(bool, const float*, float*, int64_t, int64_t, bool) {}
}  // namespace nxrt::vmath::detail

#endif
