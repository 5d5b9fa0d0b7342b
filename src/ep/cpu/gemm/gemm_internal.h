// Shared between the GEMM driver and the ISA-specific micro-kernels.
#pragma once

#include <cstdint>

namespace nxrt::gemm::detail {

// Computes an mr x nr tile (mr <= MR, nr <= NR of the kernel) of
// C = alpha * Ap * Bp + beta * C, where Ap is an MR-row panel packed k-major
// (MR floats per k) and Bp an NR-column panel packed k-major (NR floats per k).
// beta == 0 must not read C.
using MicroKernelFn = void (*)(int64_t kc, const float* a, const float* b, float* c,
                               int64_t ldc, float alpha, float beta, int64_t mr, int64_t nr);

// 6 x 16 tile with AVX2+FMA; only call when has_avx2_fma().
void micro_kernel_avx2_6x16(int64_t kc, const float* a, const float* b, float* c, int64_t ldc,
                            float alpha, float beta, int64_t mr, int64_t nr);

// Writes a finished tile held in `acc` (row stride `acc_ld`) into C with alpha/beta.
inline void store_tile(const float* acc, int64_t acc_ld, float* c, int64_t ldc, float alpha,
                       float beta, int64_t mr, int64_t nr) {
  for (int64_t i = 0; i < mr; ++i) {
    float* row = c + i * ldc;
    const float* src = acc + i * acc_ld;
    if (beta == 0.0f) {
      for (int64_t j = 0; j < nr; ++j) row[j] = alpha * src[j];
    } else {
      for (int64_t j = 0; j < nr; ++j) row[j] = alpha * src[j] + beta * row[j];
    }
  }
}

}  // namespace nxrt::gemm::detail
