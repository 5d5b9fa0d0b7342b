// AVX-512F micro-kernel, 12 x 32: 24 zmm accumulators + 2 B vectors + a broadcast fit the
// 32 registers. Only these functions are compiled for AVX-512 (target attribute); the
// driver calls them only when the CPU (and OS) support it.
#include <immintrin.h>

#include "ep/cpu/gemm/gemm_internal.h"

namespace nxrt::gemm::detail {

namespace {

// R rows x 32 columns; P interleaved partial sums over k when R alone gives too few
// independent FMA chains (see the AVX2 kernel).
template <int R, int P>
__attribute__((target("avx512f"), always_inline)) inline void tile(
    int64_t kc, const float* a, int64_t ak, const float* b, float* c, int64_t rs_c,
    int64_t cs_c, float alpha, float beta, int64_t nr) {
  __m512 acc[P][R][2];
#pragma GCC unroll 4
  for (int p = 0; p < P; ++p)
#pragma GCC unroll 12
    for (int r = 0; r < R; ++r) acc[p][r][0] = acc[p][r][1] = _mm512_setzero_ps();
  int64_t k = 0;
  for (; k + P <= kc; k += P) {
#pragma GCC unroll 4
    for (int p = 0; p < P; ++p) {
      const float* bk = b + (k + p) * 32;
      const float* ap = a + (k + p) * ak;
      const __m512 b0 = _mm512_loadu_ps(bk);
      const __m512 b1 = _mm512_loadu_ps(bk + 16);
#pragma GCC unroll 12
      for (int r = 0; r < R; ++r) {
        const __m512 av = _mm512_set1_ps(ap[r]);
        acc[p][r][0] = _mm512_fmadd_ps(av, b0, acc[p][r][0]);
        acc[p][r][1] = _mm512_fmadd_ps(av, b1, acc[p][r][1]);
      }
    }
  }
  for (; k < kc; ++k) {
    const __m512 b0 = _mm512_loadu_ps(b + k * 32);
    const __m512 b1 = _mm512_loadu_ps(b + k * 32 + 16);
#pragma GCC unroll 12
    for (int r = 0; r < R; ++r) {
      const __m512 av = _mm512_set1_ps(a[k * ak + r]);
      acc[0][r][0] = _mm512_fmadd_ps(av, b0, acc[0][r][0]);
      acc[0][r][1] = _mm512_fmadd_ps(av, b1, acc[0][r][1]);
    }
  }
#pragma GCC unroll 4
  for (int p = 1; p < P; ++p)
#pragma GCC unroll 12
    for (int r = 0; r < R; ++r) {
      acc[0][r][0] = _mm512_add_ps(acc[0][r][0], acc[p][r][0]);
      acc[0][r][1] = _mm512_add_ps(acc[0][r][1], acc[p][r][1]);
    }
  if (cs_c == 1) {
    // Row-major C: masked stores cover a partial last panel without spilling.
    const __mmask16 m0 = nr >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << nr) - 1);
    const __mmask16 m1 =
        nr >= 32 ? __mmask16(0xFFFF) : nr <= 16 ? __mmask16(0) : __mmask16((1u << (nr - 16)) - 1);
    const __m512 va = _mm512_set1_ps(alpha);
    const __m512 vb = _mm512_set1_ps(beta);
#pragma GCC unroll 12
    for (int r = 0; r < R; ++r) {
      float* row = c + r * rs_c;
      __m512 v0 = _mm512_mul_ps(va, acc[0][r][0]);
      __m512 v1 = _mm512_mul_ps(va, acc[0][r][1]);
      if (beta != 0.0f) {
        v0 = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m0, row), v0);
        v1 = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m1, row + 16), v1);
      }
      _mm512_mask_storeu_ps(row, m0, v0);
      _mm512_mask_storeu_ps(row + 16, m1, v1);
    }
    return;
  }
  // Transposed C: spill and store element by element.
  alignas(64) float spill[R * 32];
#pragma GCC unroll 12
  for (int r = 0; r < R; ++r) {
    _mm512_store_ps(spill + r * 32, acc[0][r][0]);
    _mm512_store_ps(spill + r * 32 + 16, acc[0][r][1]);
  }
  store_tile(spill, 32, c, rs_c, cs_c, alpha, beta, R, nr);
}

}  // namespace

__attribute__((target("avx512f"))) void micro_kernel_avx512_12x32(
    int64_t kc, const float* a, int64_t ak, const float* b, float* c, int64_t rs_c,
    int64_t cs_c, float alpha, float beta, int64_t mr, int64_t nr) {
  switch (mr) {
    case 1: return tile<1, 4>(kc, a, ak, b, c, rs_c, cs_c, alpha, beta, nr);
    case 2: return tile<2, 2>(kc, a, ak, b, c, rs_c, cs_c, alpha, beta, nr);
    case 3: return tile<3, 2>(kc, a, ak, b, c, rs_c, cs_c, alpha, beta, nr);
    case 4: return tile<4, 1>(kc, a, ak, b, c, rs_c, cs_c, alpha, beta, nr);
    case 5: return tile<5, 1>(kc, a, ak, b, c, rs_c, cs_c, alpha, beta, nr);
    case 6: return tile<6, 1>(kc, a, ak, b, c, rs_c, cs_c, alpha, beta, nr);
    case 7: return tile<7, 1>(kc, a, ak, b, c, rs_c, cs_c, alpha, beta, nr);
    case 8: return tile<8, 1>(kc, a, ak, b, c, rs_c, cs_c, alpha, beta, nr);
    case 9: return tile<9, 1>(kc, a, ak, b, c, rs_c, cs_c, alpha, beta, nr);
    case 10: return tile<10, 1>(kc, a, ak, b, c, rs_c, cs_c, alpha, beta, nr);
    case 11: return tile<11, 1>(kc, a, ak, b, c, rs_c, cs_c, alpha, beta, nr);
    default: return tile<12, 1>(kc, a, ak, b, c, rs_c, cs_c, alpha, beta, nr);
  }
}

}  // namespace nxrt::gemm::detail
