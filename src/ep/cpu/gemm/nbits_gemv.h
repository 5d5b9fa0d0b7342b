// Products of one row with 4- or 8-bit block-quantized weights (com.microsoft MatMulNBits
// at decode time, M = 1): y[n] = sum_k x[k] * (code[n][k] - zero_point[n][b]) * scale[n][b],
// computed from the codes themselves. A token then reads an eighth (4-bit) or a fourth
// (8-bit) of the bytes of a float copy of the weights, which is what bounds single-row
// products.
#pragma once

#include <cstdint>

#include "ep/cpu/gemm/gemm.h"

namespace nxrt::gemm {

// Weights in MatMulNBits' layout: with 4 bits row n's codes are K / 2 bytes, element 2i
// in the low nibble of byte i and 2i + 1 in its high one; with 8 bits one byte each.
// Blocks of block_size (a multiple of 32 that divides K) share a scale. The zero point
// enters as -zero_point * scale per block.
struct NBitsWeights {
  int64_t N = 0, K = 0, block_size = 0, bits = 4;
  const uint8_t* codes = nullptr;       // [N][K * bits / 8]
  const float* scale = nullptr;         // [N][K / block_size]
  const float* neg_zp_scale = nullptr;  // [N][K / block_size]
};

// Floats nbits_prepare_row writes for one row of x.
inline int64_t nbits_prepared_floats(int64_t K, int64_t block_size) { return K + K / block_size; }

// Rearranges x [K] for nbits_gemv: with 4 bits each 32 values as their 16 even then 16 odd
// elements (the order of a 16-byte chunk's low and high nibbles), with 8 bits as they
// are; then the sum of each block.
void nbits_prepare_row(const float* x, int64_t K, int64_t block_size, int64_t bits,
                       float* prepared);

// y[n] for n in [n0, n1). `kernel` (tests): kAuto takes the best this CPU runs (AVX-512,
// AVX2+FMA, portable); another value takes that one where it runs, else the next below.
void nbits_gemv(const NBitsWeights& w, const float* prepared, int64_t n0, int64_t n1, float* y,
                MicroKernel kernel = MicroKernel::kAuto);

// The same for `rows` (1 to kNBitsRowsAtOnce) rows at once: row r's prepared x at
// prepared + r * prepared_stride, its outputs at y + r * ldy. Each chunk of codes is
// decoded once for all rows, so a few rows (a batch of decode steps) cost little more
// than one. (More rows at once lose to the float GEMM on a dequantized copy: 8 rows of
// 576 x 1536 codes take 200 us on AVX-512 against its 124 us, measured by
// bench/micro's BM_NBitsRows.)
constexpr int64_t kNBitsRowsAtOnce = 4;
void nbits_gemm_rows(const NBitsWeights& w, const float* prepared, int64_t prepared_stride,
                     int64_t rows, int64_t n0, int64_t n1, float* y, int64_t ldy,
                     MicroKernel kernel = MicroKernel::kAuto);

}  // namespace nxrt::gemm
