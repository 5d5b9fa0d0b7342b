// AVX-512F micro-kernel, 12 x 32: 24 zmm accumulators + 2 B vectors + a broadcast fit the
// 32 registers. Only these functions are compiled for AVX-512 (target attribute); the
// driver calls them only when the CPU (and OS) support it.
#include <immintrin.h>

#include <algorithm>

#include "ep/cpu/gemm/gemm_internal.h"

namespace nxrt::gemm::detail {

namespace {

// R rows x NP panels of 32 columns. Each C element is one sequential chain of FMAs over
// k (no split partial sums, so the rounding matches a plain dot product); with few rows,
// NP > 1 supplies the independent chains (~8 in flight) that hide the FMA latency.
template <int R, int NP>
__attribute__((target("avx512f"), always_inline)) inline void tile(
    int64_t kc, const float* a, int64_t ak, const float* b, int64_t b_row, int64_t b_panel,
    float* c, int64_t rs_c, int64_t cs_c, float alpha, float beta, int64_t nr) {
  constexpr int V = 2 * NP;  // accumulator vectors per row
  __m512 acc[R][V];
#pragma GCC unroll 12
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v) acc[r][v] = _mm512_setzero_ps();
  for (int64_t k = 0; k < kc; ++k) {
    __m512 bv[V];
#pragma GCC unroll 4
    for (int q = 0; q < NP; ++q) {
      bv[2 * q] = _mm512_loadu_ps(b + q * b_panel + k * b_row);
      bv[2 * q + 1] = _mm512_loadu_ps(b + q * b_panel + k * b_row + 16);
    }
    // The next panel's row k: a B read in place has its rows far apart (one page each),
    // where the hardware prefetchers lose track; packed panels just stream.
    _mm_prefetch(reinterpret_cast<const char*>(b + NP * b_panel + k * b_row), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(b + NP * b_panel + k * b_row + 16), _MM_HINT_T0);
    const float* ap = a + k * ak;
#pragma GCC unroll 12
    for (int r = 0; r < R; ++r) {
      const __m512 av = _mm512_set1_ps(ap[r]);
#pragma GCC unroll 8
      for (int v = 0; v < V; ++v) acc[r][v] = _mm512_fmadd_ps(av, bv[v], acc[r][v]);
    }
  }
  if (cs_c == 1) {
    // Row-major C: masked stores cover a partial last panel without spilling.
    __mmask16 mask[V];
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v) {
      const int64_t left = nr - 16 * v;
      mask[v] = left >= 16 ? __mmask16(0xFFFF) : left <= 0 ? __mmask16(0)
                                                           : __mmask16((1u << left) - 1);
    }
    const __m512 va = _mm512_set1_ps(alpha);
    const __m512 vb = _mm512_set1_ps(beta);
#pragma GCC unroll 12
    for (int r = 0; r < R; ++r) {
      float* row = c + r * rs_c;
#pragma GCC unroll 8
      for (int v = 0; v < V; ++v) {
        __m512 out = _mm512_mul_ps(va, acc[r][v]);
        if (beta != 0.0f)
          out = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(mask[v], row + 16 * v), out);
        _mm512_mask_storeu_ps(row + 16 * v, mask[v], out);
      }
    }
    return;
  }
  // Transposed C: spill and store element by element.
  alignas(64) float spill[R * 32 * NP];
#pragma GCC unroll 12
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v) _mm512_store_ps(spill + (r * V + v) * 16, acc[r][v]);
  store_tile(spill, 32 * NP, c, rs_c, cs_c, alpha, beta, R, nr);
}

// Runs rows x nr (up to kPanelGroup panels) as tiles of NP panels, then single panels.
template <int R, int NP>
__attribute__((target("avx512f"), always_inline)) inline void rows(
    int64_t kc, const float* a, int64_t ak, const float* b, int64_t b_row, int64_t b_panel,
    float* c, int64_t rs_c, int64_t cs_c, float alpha, float beta, int64_t nr) {
  int64_t j = 0;
  if constexpr (NP > 1) {
    for (; j + 32 * (NP - 1) < nr; j += 32 * NP)
      tile<R, NP>(kc, a, ak, b + j / 32 * b_panel, b_row, b_panel, c + j * cs_c, rs_c, cs_c, alpha, beta,
                  std::min<int64_t>(nr - j, 32 * NP));
  }
  for (; j < nr; j += 32)
    tile<R, 1>(kc, a, ak, b + j / 32 * b_panel, b_row, b_panel, c + j * cs_c, rs_c, cs_c, alpha, beta,
               std::min<int64_t>(nr - j, 32));
}

}  // namespace

__attribute__((target("avx512f"))) void micro_kernel_avx512_12x32(
    int64_t kc, const float* a, int64_t ak, const float* b, int64_t b_row, int64_t b_panel,
    float* c, int64_t rs_c, int64_t cs_c, float alpha, float beta, int64_t mr, int64_t nr) {
  switch (mr) {
    case 1: return rows<1, 4>(kc, a, ak, b, b_row, b_panel, c, rs_c, cs_c, alpha, beta, nr);
    case 2: return rows<2, 2>(kc, a, ak, b, b_row, b_panel, c, rs_c, cs_c, alpha, beta, nr);
    case 3: return rows<3, 2>(kc, a, ak, b, b_row, b_panel, c, rs_c, cs_c, alpha, beta, nr);
    case 4: return rows<4, 1>(kc, a, ak, b, b_row, b_panel, c, rs_c, cs_c, alpha, beta, nr);
    case 5: return rows<5, 1>(kc, a, ak, b, b_row, b_panel, c, rs_c, cs_c, alpha, beta, nr);
    case 6: return rows<6, 1>(kc, a, ak, b, b_row, b_panel, c, rs_c, cs_c, alpha, beta, nr);
    case 7: return rows<7, 1>(kc, a, ak, b, b_row, b_panel, c, rs_c, cs_c, alpha, beta, nr);
    case 8: return rows<8, 1>(kc, a, ak, b, b_row, b_panel, c, rs_c, cs_c, alpha, beta, nr);
    case 9: return rows<9, 1>(kc, a, ak, b, b_row, b_panel, c, rs_c, cs_c, alpha, beta, nr);
    case 10: return rows<10, 1>(kc, a, ak, b, b_row, b_panel, c, rs_c, cs_c, alpha, beta, nr);
    case 11: return rows<11, 1>(kc, a, ak, b, b_row, b_panel, c, rs_c, cs_c, alpha, beta, nr);
    default: return rows<12, 1>(kc, a, ak, b, b_row, b_panel, c, rs_c, cs_c, alpha, beta, nr);
  }
}

}  // namespace nxrt::gemm::detail
