// AVX2+FMA micro-kernel. Only these functions are compiled for AVX2 (target attribute),
// so the library still runs on CPUs without it; the driver picks them at run time.
#include <immintrin.h>

#include "ep/cpu/gemm/gemm_internal.h"

namespace nxrt::gemm::detail {

namespace {

// R rows x 16 columns. An FMA has ~4 cycles of latency and two issue ports, so about
// eight independent accumulator chains keep the units busy: with few rows, P > 1 splits
// k into P interleaved partial sums that are added at the end.
template <int R, int P>
__attribute__((target("avx2,fma"), always_inline)) inline void tile(
    int64_t kc, const float* a, int64_t ak, const float* b, float* c, int64_t rs_c,
    int64_t cs_c, float alpha, float beta, int64_t nr) {
  __m256 acc[P][R][2];
#pragma GCC unroll 4
  for (int p = 0; p < P; ++p)
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) acc[p][r][0] = acc[p][r][1] = _mm256_setzero_ps();
  int64_t k = 0;
  for (; k + P <= kc; k += P) {
#pragma GCC unroll 4
    for (int p = 0; p < P; ++p) {
      const float* bk = b + (k + p) * 16;
      const float* ap = a + (k + p) * ak;
      const __m256 b0 = _mm256_loadu_ps(bk);
      const __m256 b1 = _mm256_loadu_ps(bk + 8);
#pragma GCC unroll 6
      for (int r = 0; r < R; ++r) {
        const __m256 av = _mm256_broadcast_ss(ap + r);
        acc[p][r][0] = _mm256_fmadd_ps(av, b0, acc[p][r][0]);
        acc[p][r][1] = _mm256_fmadd_ps(av, b1, acc[p][r][1]);
      }
    }
  }
  for (; k < kc; ++k) {
    const __m256 b0 = _mm256_loadu_ps(b + k * 16);
    const __m256 b1 = _mm256_loadu_ps(b + k * 16 + 8);
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      const __m256 av = _mm256_broadcast_ss(a + k * ak + r);
      acc[0][r][0] = _mm256_fmadd_ps(av, b0, acc[0][r][0]);
      acc[0][r][1] = _mm256_fmadd_ps(av, b1, acc[0][r][1]);
    }
  }
#pragma GCC unroll 4
  for (int p = 1; p < P; ++p)
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      acc[0][r][0] = _mm256_add_ps(acc[0][r][0], acc[p][r][0]);
      acc[0][r][1] = _mm256_add_ps(acc[0][r][1], acc[p][r][1]);
    }
  if (nr == 16 && cs_c == 1) {
    const __m256 va = _mm256_set1_ps(alpha);
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      float* row = c + r * rs_c;
      if (beta == 0.0f) {
        _mm256_storeu_ps(row, _mm256_mul_ps(va, acc[0][r][0]));
        _mm256_storeu_ps(row + 8, _mm256_mul_ps(va, acc[0][r][1]));
      } else {
        const __m256 vb = _mm256_set1_ps(beta);
        _mm256_storeu_ps(row, _mm256_fmadd_ps(va, acc[0][r][0],
                                              _mm256_mul_ps(vb, _mm256_loadu_ps(row))));
        _mm256_storeu_ps(row + 8, _mm256_fmadd_ps(va, acc[0][r][1],
                                                  _mm256_mul_ps(vb, _mm256_loadu_ps(row + 8))));
      }
    }
    return;
  }
  // Edge or transposed tile: spill the accumulators and merge only the valid part.
  alignas(32) float spill[R * 16];
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) {
    _mm256_store_ps(spill + r * 16, acc[0][r][0]);
    _mm256_store_ps(spill + r * 16 + 8, acc[0][r][1]);
  }
  store_tile(spill, 16, c, rs_c, cs_c, alpha, beta, R, nr);
}

}  // namespace

__attribute__((target("avx2,fma"))) void micro_kernel_avx2_6x16(
    int64_t kc, const float* a, int64_t ak, const float* b, float* c, int64_t rs_c,
    int64_t cs_c, float alpha, float beta, int64_t mr, int64_t nr) {
  // 6 rows: 12 accumulators + 2 B vectors + 1 broadcast = 15 of 16 ymm registers.
  switch (mr) {
    case 1: return tile<1, 4>(kc, a, ak, b, c, rs_c, cs_c, alpha, beta, nr);
    case 2: return tile<2, 2>(kc, a, ak, b, c, rs_c, cs_c, alpha, beta, nr);
    case 3: return tile<3, 1>(kc, a, ak, b, c, rs_c, cs_c, alpha, beta, nr);
    case 4: return tile<4, 1>(kc, a, ak, b, c, rs_c, cs_c, alpha, beta, nr);
    case 5: return tile<5, 1>(kc, a, ak, b, c, rs_c, cs_c, alpha, beta, nr);
    default: return tile<6, 1>(kc, a, ak, b, c, rs_c, cs_c, alpha, beta, nr);
  }
}

}  // namespace nxrt::gemm::detail
