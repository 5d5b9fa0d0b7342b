// Shared between the GEMM driver and the ISA-specific micro-kernels.
#pragma once

#include <cstdint>

#include "ep/cpu/gemm/gemm.h"

namespace nxrt::gemm::detail {

// Consecutive B panels one micro-kernel call may cover (thin tiles use several at once).
constexpr int64_t kPanelGroup = 4;

// Computes an mr x nr block (mr <= MR, nr <= kPanelGroup * NR of the kernel) of
// C = alpha * Ap * Bp + beta * C.
//  - Ap: element (i, k) at a[k * ak + i]. Packed panels have ak == MR; an unpacked
//    transposed A (or a single row of A, ak == 1) is read in place.
//  - Bp: NR-column panels, row k of panel q at b + q * b_panel + k * b_row. Packed panels
//    are k-major (b_row == NR, b_panel == kc * NR, zero padded); a row-major B is read in
//    place (b_row == ldb, b_panel == NR) where its panels are whole.
//  - C: element (i, j) at c[i * rs_c + j * cs_c], so a kernel can also write C^T.
// beta == 0 must not read C. Kernels compute only the mr rows asked for, so a thin
// problem (a few rows) does not pay for the whole MR-row tile.
using MicroKernelFn = void (*)(int64_t kc, const float* a, int64_t ak, const float* b,
                               int64_t b_row, int64_t b_panel, float* c, int64_t rs_c, int64_t cs_c,
                               float alpha, float beta, int64_t mr, int64_t nr);

// 6 x 16 with AVX2+FMA; only call when has_avx2_fma().
void micro_kernel_avx2_6x16(int64_t kc, const float* a, int64_t ak, const float* b, int64_t b_row,
                            int64_t b_panel, float* c, int64_t rs_c, int64_t cs_c, float alpha,
                            float beta, int64_t mr, int64_t nr);

// 12 x 32 and 8 x 48 with AVX-512F; only call when has_avx512f().
void micro_kernel_avx512_12x32(int64_t kc, const float* a, int64_t ak, const float* b,
                               int64_t b_row, int64_t b_panel, float* c, int64_t rs_c, int64_t cs_c,
                               float alpha, float beta, int64_t mr, int64_t nr);
void micro_kernel_avx512_8x48(int64_t kc, const float* a, int64_t ak, const float* b, int64_t b_row,
                              int64_t b_panel, float* c, int64_t rs_c, int64_t cs_c, float alpha,
                              float beta, int64_t mr, int64_t nr);

// The same two AVX-512 kernels over a B given as row pointers: element (k, j) at
// b_rows[k][col + j], read as whole NR-wide panels (the caller leaves the columns past
// nr readable). C is row-major (row stride ldc), alpha is 1.
void micro_kernel_avx512_rows_12x32(int64_t kc, const float* a, int64_t ak,
                                    const float* const* b_rows, int64_t col, float* c, int64_t ldc,
                                    float beta, int64_t mr, int64_t nr);
void micro_kernel_avx512_rows_8x48(int64_t kc, const float* a, int64_t ak,
                                   const float* const* b_rows, int64_t col, float* c, int64_t ldc,
                                   float beta, int64_t mr, int64_t nr);

// The row-pointer kernel and its conv variant with AVX2+FMA; only call when has_avx2_fma().
void micro_kernel_avx2_rows_6x16(int64_t kc, const float* a, int64_t ak, const float* const* b_rows,
                                 int64_t col, float* c, int64_t ldc, float beta, int64_t mr,
                                 int64_t nr);
void micro_kernel_avx2_rows_conv_6x16(int64_t kc, const float* a, int64_t ak,
                                      const float* const* b_rows, int64_t col, const float* c,
                                      int64_t ldc, float beta, int64_t mr, int64_t nr,
                                      const ConvOutput& out, int64_t row0);

// Where the row-pointer kernels' conv variants put a finished tile (ConvOutput, gemm.h):
// null for a plain C; row0 is the tile's first row in the product.
struct ConvTarget {
  const ConvOutput* out = nullptr;
  int64_t row0 = 0;
};
void micro_kernel_avx512_rows_conv_12x32(int64_t kc, const float* a, int64_t ak,
                                         const float* const* b_rows, int64_t col, const float* c,
                                         int64_t ldc, float beta, int64_t mr, int64_t nr,
                                         const ConvOutput& out, int64_t row0);
void micro_kernel_avx512_rows_conv_8x48(int64_t kc, const float* a, int64_t ak,
                                        const float* const* b_rows, int64_t col, const float* c,
                                        int64_t ldc, float beta, int64_t mr, int64_t nr,
                                        const ConvOutput& out, int64_t row0);

// Writes a finished tile held in `acc` (row stride `acc_ld`) into C with alpha/beta.
inline void store_tile(const float* acc, int64_t acc_ld, float* c, int64_t rs_c, int64_t cs_c,
                       float alpha, float beta, int64_t mr, int64_t nr) {
  if (rs_c == 1 && cs_c != 1) {
    // Transposed C: each tile column is a contiguous run of mr floats.
    for (int64_t j = 0; j < nr; ++j) {
      float* col = c + j * cs_c;
      if (beta == 0.0f) {
        for (int64_t i = 0; i < mr; ++i) col[i] = alpha * acc[i * acc_ld + j];
      } else {
        for (int64_t i = 0; i < mr; ++i) col[i] = alpha * acc[i * acc_ld + j] + beta * col[i];
      }
    }
    return;
  }
  for (int64_t i = 0; i < mr; ++i) {
    float* row = c + i * rs_c;
    const float* src = acc + i * acc_ld;
    if (beta == 0.0f) {
      for (int64_t j = 0; j < nr; ++j) row[j * cs_c] = alpha * src[j];
    } else {
      for (int64_t j = 0; j < nr; ++j) row[j * cs_c] = alpha * src[j] + beta * row[j * cs_c];
    }
  }
}

}  // namespace nxrt::gemm::detail
