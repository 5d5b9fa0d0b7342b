// AVX2+FMA micro-kernel. Only these functions are compiled for AVX2 (target attribute),
// so the library still runs on CPUs without it; the driver picks them at run time.
#include <immintrin.h>

#include <algorithm>

#include "ep/cpu/gemm/gemm_internal.h"

namespace nxrt::gemm::detail {

namespace {

// R rows x NP panels of 16 columns. Each C element is one sequential chain of FMAs over
// k (no split partial sums, so the rounding matches a plain dot product); with few rows,
// NP > 1 supplies the independent chains (~8 in flight) that hide the FMA latency.
template <int R, int NP>
__attribute__((target("avx2,fma"), always_inline)) inline void tile(
    int64_t kc, const float* a, int64_t ak, const float* b, int64_t b_row, int64_t b_panel,
    float* c, int64_t rs_c, int64_t cs_c, float alpha, float beta, int64_t nr) {
  constexpr int V = 2 * NP;  // accumulator vectors per row
  __m256 acc[R][V];
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v) acc[r][v] = _mm256_setzero_ps();
  for (int64_t k = 0; k < kc; ++k) {
    __m256 bv[V];
#pragma GCC unroll 4
    for (int q = 0; q < NP; ++q) {
      bv[2 * q] = _mm256_loadu_ps(b + q * b_panel + k * b_row);
      bv[2 * q + 1] = _mm256_loadu_ps(b + q * b_panel + k * b_row + 8);
    }
    const float* ap = a + k * ak;
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      const __m256 av = _mm256_broadcast_ss(ap + r);
#pragma GCC unroll 8
      for (int v = 0; v < V; ++v) acc[r][v] = _mm256_fmadd_ps(av, bv[v], acc[r][v]);
    }
  }
  if (nr == 16 * NP && cs_c == 1) {
    const __m256 va = _mm256_set1_ps(alpha);
    const __m256 vb = _mm256_set1_ps(beta);
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      float* row = c + r * rs_c;
#pragma GCC unroll 8
      for (int v = 0; v < V; ++v) {
        __m256 out = _mm256_mul_ps(va, acc[r][v]);
        if (beta != 0.0f) out = _mm256_fmadd_ps(vb, _mm256_loadu_ps(row + 8 * v), out);
        _mm256_storeu_ps(row + 8 * v, out);
      }
    }
    return;
  }
  // Edge or transposed tile: spill the accumulators and merge only the valid part.
  alignas(32) float spill[R * 16 * NP];
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v) _mm256_store_ps(spill + (r * V + v) * 8, acc[r][v]);
  store_tile(spill, 16 * NP, c, rs_c, cs_c, alpha, beta, R, nr);
}

// Runs rows x nr (up to kPanelGroup panels) as tiles of NP panels, then single panels.
template <int R, int NP>
__attribute__((target("avx2,fma"), always_inline)) inline void rows(
    int64_t kc, const float* a, int64_t ak, const float* b, int64_t b_row, int64_t b_panel,
    float* c, int64_t rs_c, int64_t cs_c, float alpha, float beta, int64_t nr) {
  int64_t j = 0;
  if constexpr (NP > 1) {
    for (; j + 16 * (NP - 1) < nr; j += 16 * NP)
      tile<R, NP>(kc, a, ak, b + j / 16 * b_panel, b_row, b_panel, c + j * cs_c, rs_c, cs_c, alpha,
                  beta, std::min<int64_t>(nr - j, 16 * NP));
  }
  for (; j < nr; j += 16)
    tile<R, 1>(kc, a, ak, b + j / 16 * b_panel, b_row, b_panel, c + j * cs_c, rs_c, cs_c, alpha,
               beta, std::min<int64_t>(nr - j, 16));
}

}  // namespace

__attribute__((target("avx2,fma"))) void micro_kernel_avx2_6x16(
    int64_t kc, const float* a, int64_t ak, const float* b, int64_t b_row, int64_t b_panel,
    float* c, int64_t rs_c, int64_t cs_c, float alpha, float beta, int64_t mr, int64_t nr) {
  // 6 rows: 12 accumulators + 2 B vectors + 1 broadcast = 15 of 16 ymm registers.
  switch (mr) {
    case 1:
      return rows<1, 4>(kc, a, ak, b, b_row, b_panel, c, rs_c, cs_c, alpha, beta, nr);
    case 2:
      return rows<2, 2>(kc, a, ak, b, b_row, b_panel, c, rs_c, cs_c, alpha, beta, nr);
    case 3:
      return rows<3, 1>(kc, a, ak, b, b_row, b_panel, c, rs_c, cs_c, alpha, beta, nr);
    case 4:
      return rows<4, 1>(kc, a, ak, b, b_row, b_panel, c, rs_c, cs_c, alpha, beta, nr);
    case 5:
      return rows<5, 1>(kc, a, ak, b, b_row, b_panel, c, rs_c, cs_c, alpha, beta, nr);
    default:
      return rows<6, 1>(kc, a, ak, b, b_row, b_panel, c, rs_c, cs_c, alpha, beta, nr);
  }
}

}  // namespace nxrt::gemm::detail
