// AVX2+FMA micro-kernel. Only this function is compiled for AVX2 (target attribute), so
// the library still runs on CPUs without it; the driver picks it at run time.
#include <immintrin.h>

#include "ep/cpu/gemm/gemm_internal.h"

namespace nxrt::gemm::detail {

namespace {
__attribute__((target("avx2,fma"), always_inline)) inline void store8(float* dst, __m256 acc,
                                                                     __m256 va, __m256 vb,
                                                                     bool keep) {
  if (keep)
    _mm256_storeu_ps(dst, _mm256_fmadd_ps(va, acc, _mm256_mul_ps(vb, _mm256_loadu_ps(dst))));
  else
    _mm256_storeu_ps(dst, _mm256_mul_ps(va, acc));
}
}  // namespace

// 6 rows x 16 columns: 12 accumulators + 2 B vectors + 1 broadcast = 15 of 16 ymm registers.
__attribute__((target("avx2,fma"))) void micro_kernel_avx2_6x16(
    int64_t kc, const float* a, const float* b, float* c, int64_t ldc, float alpha, float beta,
    int64_t mr, int64_t nr) {
  __m256 c00 = _mm256_setzero_ps(), c01 = _mm256_setzero_ps();
  __m256 c10 = _mm256_setzero_ps(), c11 = _mm256_setzero_ps();
  __m256 c20 = _mm256_setzero_ps(), c21 = _mm256_setzero_ps();
  __m256 c30 = _mm256_setzero_ps(), c31 = _mm256_setzero_ps();
  __m256 c40 = _mm256_setzero_ps(), c41 = _mm256_setzero_ps();
  __m256 c50 = _mm256_setzero_ps(), c51 = _mm256_setzero_ps();
  for (int64_t k = 0; k < kc; ++k) {
    const __m256 b0 = _mm256_loadu_ps(b);
    const __m256 b1 = _mm256_loadu_ps(b + 8);
    __m256 av = _mm256_broadcast_ss(a + 0);
    c00 = _mm256_fmadd_ps(av, b0, c00);
    c01 = _mm256_fmadd_ps(av, b1, c01);
    av = _mm256_broadcast_ss(a + 1);
    c10 = _mm256_fmadd_ps(av, b0, c10);
    c11 = _mm256_fmadd_ps(av, b1, c11);
    av = _mm256_broadcast_ss(a + 2);
    c20 = _mm256_fmadd_ps(av, b0, c20);
    c21 = _mm256_fmadd_ps(av, b1, c21);
    av = _mm256_broadcast_ss(a + 3);
    c30 = _mm256_fmadd_ps(av, b0, c30);
    c31 = _mm256_fmadd_ps(av, b1, c31);
    av = _mm256_broadcast_ss(a + 4);
    c40 = _mm256_fmadd_ps(av, b0, c40);
    c41 = _mm256_fmadd_ps(av, b1, c41);
    av = _mm256_broadcast_ss(a + 5);
    c50 = _mm256_fmadd_ps(av, b0, c50);
    c51 = _mm256_fmadd_ps(av, b1, c51);
    a += 6;
    b += 16;
  }
  if (mr == 6 && nr == 16) {
    const __m256 va = _mm256_set1_ps(alpha);
    const __m256 vb = _mm256_set1_ps(beta);
    const bool keep = beta != 0.0f;
    store8(c + 0 * ldc, c00, va, vb, keep);
    store8(c + 0 * ldc + 8, c01, va, vb, keep);
    store8(c + 1 * ldc, c10, va, vb, keep);
    store8(c + 1 * ldc + 8, c11, va, vb, keep);
    store8(c + 2 * ldc, c20, va, vb, keep);
    store8(c + 2 * ldc + 8, c21, va, vb, keep);
    store8(c + 3 * ldc, c30, va, vb, keep);
    store8(c + 3 * ldc + 8, c31, va, vb, keep);
    store8(c + 4 * ldc, c40, va, vb, keep);
    store8(c + 4 * ldc + 8, c41, va, vb, keep);
    store8(c + 5 * ldc, c50, va, vb, keep);
    store8(c + 5 * ldc + 8, c51, va, vb, keep);
    return;
  }
  // Edge tile: spill the accumulators and merge only the valid part.
  alignas(32) float tile[6 * 16];
  _mm256_store_ps(tile + 0, c00); _mm256_store_ps(tile + 8, c01);
  _mm256_store_ps(tile + 16, c10); _mm256_store_ps(tile + 24, c11);
  _mm256_store_ps(tile + 32, c20); _mm256_store_ps(tile + 40, c21);
  _mm256_store_ps(tile + 48, c30); _mm256_store_ps(tile + 56, c31);
  _mm256_store_ps(tile + 64, c40); _mm256_store_ps(tile + 72, c41);
  _mm256_store_ps(tile + 80, c50); _mm256_store_ps(tile + 88, c51);
  store_tile(tile, 16, c, ldc, alpha, beta, mr, nr);
}

}  // namespace nxrt::gemm::detail
