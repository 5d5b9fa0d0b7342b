// com.microsoft MatMulNBits with constant 4- or 8-bit weights on AVX-512, for products of
// more rows than a decode step's (prompts, batched decode steps): y[m][n] = sum over k,
// in order, of x[m][k] * w[n][k], one FMA chain per output, where w = code * scale +
// (-zero_point * scale) by one FMA. A row's result does not depend on how many rows are
// computed with it (5 or 500).
//
// The codes are kept (never a float copy, four or eight times larger: the float GEMM on
// such a copy streamed 4 bytes per weight from memory at 32 rows) in strips of 16 weight
// rows: each byte position of a chunk of 32 codes holds the 16 rows' bytes side by side,
// so one widening load gives a vector of 16 outputs' codes at one k. Four strips (a quad,
// 64 outputs) are interleaved block by block, scales and offsets first. Two strips at a
// time, the first group of 12 rows decodes the codes as it multiplies them in a 12 x 32
// register tile and leaves the floats in a [K][32] tile (L2) that the other groups of 12
// multiply. A group of at most 8 rows (a short product, the last group) takes an 8 x 32
// tile instead, with the same sums.
//
// (A decode step's 1-4 rows read row-major codes, gemm/nbits_gemv.h: with strips they
// ran 13-25% slower, measured by `nxrt generate` on SmolLM2-135M int4.)
#pragma once

#include <cstdint>
#include <vector>

#include "ep/cpu/gemm/gemm.h"

namespace nxrt::gemm {

constexpr int64_t kNBitsStripRows = 16;  // weight rows (outputs) per strip
constexpr int64_t kNBitsGroupRows = 12;  // rows of x per group of the prepared x

// Whether this CPU runs the strips (AVX-512, and not capped by NXRT_GEMM_KERNEL).
bool nbits_strips_available();

constexpr int64_t kNBitsQuadStrips = 4;

struct NBitsStrips {
  int64_t N = 0, K = 0, block_size = 0, bits = 4;
  // Per quad, per block: scale [4 strips][16], offset (-zero_point * scale) [4][16], then
  // the block's codes [chunk][byte position][4 strips][16 rows]; from data() on.
  std::vector<uint8_t> storage;

  int64_t strips() const { return (N + kNBitsStripRows - 1) / kNBitsStripRows; }
  int64_t block_bytes() const {
    return 2 * kNBitsQuadStrips * kNBitsStripRows * int64_t(sizeof(float)) +
           block_size * bits / 8 * kNBitsQuadStrips * kNBitsStripRows;
  }
  const uint8_t* block(int64_t quad, int64_t b) const {
    return data() + (quad * (K / block_size) + b) * block_bytes();
  }
  // storage from its first 64-byte boundary (scales load as whole cache lines)
  const uint8_t* data() const { return first_cache_line(storage); }
  bool empty() const { return storage.empty(); }
  // From MatMulNBits' layout: codes [N][K * bits / 8] (4 bits: element 2i in the low
  // nibble of byte i), scale and neg_zp_scale [N][K / block_size]. block_size is a
  // multiple of 32 dividing K.
  static NBitsStrips pack(int64_t N, int64_t K, int64_t block_size, int64_t bits,
                          const uint8_t* codes, const float* scale, const float* neg_zp_scale);
};

// Floats nbits_strips_prepare writes for M rows of K.
inline int64_t nbits_strips_x_floats(int64_t M, int64_t K) {
  return (M + kNBitsGroupRows - 1) / kNBitsGroupRows * K * kNBitsGroupRows;
}
// x [M][K] in groups of 12 rows, k-major: element (m, k) at
// xp[(m / 12 * K + k) * 12 + m % 12], zero past M.
void nbits_strips_prepare(const float* x, int64_t M, int64_t K, float* xp);

// Floats of scratch nbits_strips_gemm needs per thread.
inline int64_t nbits_strips_scratch_floats(int64_t K) { return K * 2 * kNBitsStripRows; }
// y[m][n] for all M rows and the outputs of strips [s0, s1) (n < N); `scratch`: see
// nbits_strips_scratch_floats.
void nbits_strips_gemm(const NBitsStrips& w, const float* xp, int64_t M, int64_t s0, int64_t s1,
                       float* y, int64_t ldy, float* scratch);

}  // namespace nxrt::gemm
