// strided_rows and channel_affine_clamp (vmath.h) on AVX2 for rows of a few positions (the
// last layers of audio encoders, 1 to 4 positions): one masked load and one store per row,
// or eight elements of several whole rows per vector, where the portable loops pay a branch
// and a few cycles per element. Masked loads only: a masked store is microcoded on AMD.
#include "ep/cpu/vmath/vmath_internal.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#include <bit>
#include <cstdint>

#include "ep/cpu/vmath/target_region.h"
#include "ep/cpu/vmath/vmath_avx2_lanes.h"

NXRT_TARGET_BEGIN("avx2,fma")

namespace nxrt::vmath::detail {
namespace {

// Stores lanes [0, n) of v (n <= 4) and nothing past them.
inline void store_first(float* dst, __m128 v, int64_t n) {
  if (n == 4) return _mm_storeu_ps(dst, v);
  if (n >= 2) _mm_storel_pi(reinterpret_cast<__m64*>(dst), v);
  if (n == 3) _mm_store_ss(dst + 2, _mm_movehl_ps(v, v));
  if (n == 1) _mm_store_ss(dst, v);
}

}  // namespace

void strided_rows_avx2(const float* x, int64_t ld, int64_t rows, int64_t off, int64_t step,
                       int64_t lo, int64_t hi, int64_t count, float* out, int64_t out_ld) {
  // Lane o reads x[o * step] for o in [lo, hi); the others are masked (no fault, zero).
  const __m256i lanes = _mm256_andnot_si256(avx2_lanes::tail_mask(size_t(step * lo)),
                                            avx2_lanes::tail_mask(size_t(step * (hi - 1) + 1)));
  if (step == 1) {
    const __m128i lanes4 = _mm256_castsi256_si128(lanes);
    for (int64_t r = 0; r < rows; ++r)
      store_first(out + r * out_ld, _mm_maskload_ps(x + r * ld + off, lanes4), count);
    return;
  }
  // Step 2: the even lanes of eight, gathered into the low four.
  const __m256i even = _mm256_setr_epi32(0, 2, 4, 6, 0, 0, 0, 0);
  const __m256i every_other =
      _mm256_and_si256(lanes, _mm256_setr_epi32(-1, 0, -1, 0, -1, 0, -1, 0));
  for (int64_t r = 0; r < rows; ++r) {
    const __m256 v = _mm256_maskload_ps(x + r * ld + off, every_other);
    store_first(out + r * out_ld, _mm256_castps256_ps128(_mm256_permutevar8x32_ps(v, even)), count);
  }
}

void channel_affine_clamp_avx2(float* y, int64_t channels, int64_t cols, const float* scale,
                               const float* bias, float lo, float hi) {
  // Lane j of a vector starting at element e belongs to channel e / cols + j / cols: the
  // per-channel values are spread over the lanes by one permute.
  const int shift = std::countr_zero(uint64_t(cols));  // cols is a power of two
  const __m256i spread = _mm256_srli_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), int(shift));
  const __m256 vlo = _mm256_set1_ps(lo), vhi = _mm256_set1_ps(hi);
  const int64_t total = channels * cols, per_vector = 8 >> shift;
  // A vector's own channels only (reading past the last channel's value would fault).
  const __m256i params = avx2_lanes::tail_mask(size_t(per_vector));
  int64_t e = 0, c = 0;
  for (; e + 8 <= total; e += 8, c += per_vector) {
    __m256 v = _mm256_loadu_ps(y + e);
    const __m256 b = bias ? _mm256_permutevar8x32_ps(_mm256_maskload_ps(bias + c, params), spread)
                          : _mm256_setzero_ps();
    if (scale)
      v = _mm256_fmadd_ps(
          v, _mm256_permutevar8x32_ps(_mm256_maskload_ps(scale + c, params), spread), b);
    else
      v = _mm256_add_ps(v, b);
    // max(lo, x) and min(hi, x) return x when it is NaN (the second operand).
    _mm256_storeu_ps(y + e, _mm256_min_ps(vhi, _mm256_max_ps(vlo, v)));
  }
  // The last partial vector's channels as the portable loop does them.
  channel_affine_clamp_portable(y + e, channels - c, cols, cols, scale ? scale + c : nullptr,
                                bias ? bias + c : nullptr, lo, hi);
}

}  // namespace nxrt::vmath::detail

NXRT_TARGET_END

#else

namespace nxrt::vmath::detail {
void strided_rows_avx2(const float*, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                       float*, int64_t) {}
void channel_affine_clamp_avx2(float*, int64_t, int64_t, const float*, const float*, float, float) {
}
}  // namespace nxrt::vmath::detail

#endif
