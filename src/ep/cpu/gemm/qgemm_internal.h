// Shared between the 8-bit GEMM driver and its AVX-512 VNNI kernel.
#pragma once

#include <cstdint>

namespace nxrt::gemm::detail {

// Rows per micro-kernel call and columns per packed panel.
constexpr int64_t kQRows = 12;
constexpr int64_t kQPanel = 16;

// Raw sums for mr <= kQRows rows of a' (uint8, rows lda bytes apart, k4 bytes each) and nr
// columns (nr <= 2 * kQPanel) of packed b' starting at panel `b` (the next panel is
// panel_bytes further): c[i * ldc + j] = sum_k a'[i][k] * b'[k][j].
using QKernelFn = void (*)(int64_t k4, const uint8_t* a, int64_t lda, const int8_t* b,
                           int64_t panel_bytes, int32_t* c, int64_t ldc, int64_t mr, int64_t nr);

// Only call when has_avx512_vnni().
void qkernel_avx512_vnni(int64_t k4, const uint8_t* a, int64_t lda, const int8_t* b,
                         int64_t panel_bytes, int32_t* c, int64_t ldc, int64_t mr, int64_t nr);

}  // namespace nxrt::gemm::detail
