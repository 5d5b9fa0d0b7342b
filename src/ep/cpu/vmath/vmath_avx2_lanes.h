// Small AVX2 helpers shared by vmath's AVX2 files (vmath_avx2.cc, vmath_plane_avx2.cc);
// include only inside their AVX2 target region (x86 builds only).
#pragma once

#include <immintrin.h>

#include <cstddef>

namespace nxrt::vmath::detail::avx2_lanes {

// max_keep_nan() on eight lanes. max_ps returns its second operand when either is NaN, so a
// NaN in v wins; a NaN already in m is kept by the blend.
__attribute__((target("avx2,fma"), always_inline)) inline __m256 max_keep_nan_ps(__m256 m,
                                                                                 __m256 v) {
  return _mm256_blendv_ps(_mm256_max_ps(m, v), m, _mm256_cmp_ps(m, m, _CMP_UNORD_Q));
}

// Lanes [0, left) set (left < 8): the tail of a row for masked loads and stores.
__attribute__((target("avx2,fma"), always_inline)) inline __m256i tail_mask(size_t left) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(int(left)),
                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

}  // namespace nxrt::vmath::detail::avx2_lanes
