// Shared between the 8-bit GEMM driver and its AVX-512 VNNI, AMX and AVX2 kernels.
#pragma once

#include <cstdint>

namespace nxrt::gemm::detail {

// Rows per micro-kernel call (VNNI and AVX2: kQRows, AMX: kQRowsAmx) and columns per
// packed panel.
constexpr int64_t kQRows = 12;
constexpr int64_t kQRowsAmx = 32;
constexpr int64_t kQPanel = 16;

// Raw sums for mr <= kQRows rows of a' (uint8, rows lda bytes apart, k4 bytes each) and nr
// columns (nr <= 2 * kQPanel) of packed b' starting at panel `b` (the next panel is
// panel_bytes further): c[i * ldc + j] = sum_k a'[i][k] * b'[k][j].
using QKernelFn = void (*)(int64_t k4, const uint8_t* a, int64_t lda, const int8_t* b,
                           int64_t panel_bytes, int32_t* c, int64_t ldc, int64_t mr, int64_t nr);

// Only call when has_avx512_vnni().
void qkernel_avx512_vnni(int64_t k4, const uint8_t* a, int64_t lda, const int8_t* b,
                         int64_t panel_bytes, int32_t* c, int64_t ldc, int64_t mr, int64_t nr);

// The AVX2 form of a QKernelFn: a holds mr <= kQRows int16 rows of a' (from
// prepare_rows_avx2), lda int16 apart. Only call when has_avx2().
void qkernel_avx2(int64_t k4, const int16_t* a, int64_t lda, const int8_t* b, int64_t panel_bytes,
                  int32_t* c, int64_t ldc, int64_t mr, int64_t nr);

// prepare_rows_avx512 for the AVX2 kernel: the rows of a' widened to int16 (dst row i at
// dst + i * K4, zero padded from K to K4), with their sums. Only call when has_avx2().
void prepare_rows_avx2(const uint8_t* src, int64_t lda, int64_t rows, int64_t K, int64_t K4,
                       uint8_t flip, int16_t* dst, int32_t* row_sum);

// finish_row_avx512 in AVX2. Only call when has_avx2().
void finish_row_avx2(const int32_t* raw, const int32_t* terms, const int32_t* zero, int32_t row_sum,
                     int64_t n, int32_t* c_out, float* y, const float* scale, const float* bias);

// Packs rows [0, K) x columns [0, N) of B (bytes XOR flip) into out: 16-column panels of
// K4 / 4 groups x 64 bytes, column j's k at panel j / 16, byte (k / 4) * 64 + (j % 16) * 4
// + k % 4. out must be zeroed (the padding of the last panel and of K..K4 stays 0).
void pack_quant_panels(const uint8_t* B, int64_t ldb, int64_t K, int64_t N, int64_t K4,
                       uint8_t flip, int8_t* out);

// Whether this CPU has AMX with 8-bit products and the OS lets this process use it (on
// Linux it asks for the tile state once).
bool amx_available();
// Loads this thread's tile configuration (before qkernel_amx calls) and releases it.
void amx_configure();
void amx_release();
// The QKernelFn for AMX: mr <= kQRowsAmx rows, whose A buffer holds kQRowsAmx readable
// rows; k4 a multiple of 64 (B packed that deep). Only between amx_configure/release.
void qkernel_amx(int64_t k4, const uint8_t* a, int64_t lda, const int8_t* b, int64_t panel_bytes,
                 int32_t* c, int64_t ldc, int64_t mr, int64_t nr);

// A rows of A shifted to uint8 (XOR flip), zero padded from K to K4, with their sums:
// dst row i at dst + i * K4. AVX-512BW form; only call when has_avx512_vnni().
void prepare_rows_avx512(const uint8_t* src, int64_t lda, int64_t rows, int64_t K, int64_t K4,
                         uint8_t flip, uint8_t* dst, int32_t* row_sum);

// One row of the corrected result: raw[j] + terms[j] - zero[j] * row_sum, as int32 into
// c_out (when y is null) or as float * scale[j] (+ bias[j]) into y.
void finish_row_avx512(const int32_t* raw, const int32_t* terms, const int32_t* zero,
                       int32_t row_sum, int64_t n, int32_t* c_out, float* y, const float* scale,
                       const float* bias);

}  // namespace nxrt::gemm::detail
