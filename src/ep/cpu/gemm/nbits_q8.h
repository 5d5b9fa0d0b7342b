// com.microsoft MatMulNBits at accuracy_level 4 with 4- or 8-bit weights: the spec lets A be
// computed in 8 bits there, and onnxruntime does so: each block of a row of A (block_size
// values, as the weights' blocks) becomes int8 with one float scale (max |x| / 127,
// rounded to nearest), the products with the 4-bit codes are integer dot products
// (AVX-512 VNNI's vpdpbusd: 64 multiply-adds an instruction; on AVX2 vpmaddubsw and
// vpmaddwd give the same sums), and their 32-bit sums are
// scaled per 32 k by the weights' block scale times A's. (The same quantization as
// onnxruntime's: the two agree within float rounding, tests/python's accuracy_level tests.)
//
// The codes lie in strips of 16 outputs: 64 bytes hold the 16 outputs' codes of 4
// consecutive k in their low nibbles and of the next 4 k in the high ones, so a vpdpbusd
// against x's 4 values broadcast adds 64 products into the 16 outputs' sums. A strip holds
// per block the 16 outputs' scales and zero points (80 bytes; the zero points are
// integers here, as the offsets they make), then the codes, 256 bytes per 32 k: 21 bytes
// per 32 weights, two sequential streams. Measured on SmolLM2-135M's feed-forward shape
// (576 x 1536, in L2, 1 thread, BM_NBitsRows): 1 row 13 us against 50 for the float path's
// table lookups (gemm/nbits_gemv.h), 32 rows 235-240 us against 415 for its strips.
//
// Each row is computed alone, in the same order whatever rows or outputs are computed with
// it, so a row's result does not depend on the batch it is in (one row or a prompt).
#pragma once

#include <cstdint>
#include <vector>

#include "ep/cpu/gemm/gemm.h"
#include "ep/cpu/gemm/nbits_gemv.h"

namespace nxrt::gemm {

// Whether this CPU runs the 8-bit path: AVX-512 VNNI, or AVX2 + FMA (vpmaddubsw, the same
// results, slower); NXRT_GEMM_KERNEL=avx2 takes the AVX2 kernel, =portable none. `kernel`
// (tests): another than kAuto asks for that one.
bool nbits_q8_available(MicroKernel kernel = MicroKernel::kAuto);

constexpr int64_t kNBitsQ8StripOutputs = 16;

struct NBitsQ8Strips {
  int64_t N = 0, K = 0, block_size = 0, bits = 4;
  std::vector<uint8_t> storage;

  int64_t strips() const { return (N + kNBitsQ8StripOutputs - 1) / kNBitsQ8StripOutputs; }
  int64_t blocks() const { return K / block_size; }
  // A strip: the blocks' scales and zero points, then (from a 64-byte boundary) the codes.
  int64_t codes_at() const { return (blocks() * kScaleBytes + 63) / 64 * 64; }
  // Codes of 32 k for the 16 outputs: 4-bit codes two to a byte, 8-bit ones one.
  int64_t chunk_bytes() const { return bits == 4 ? 256 : 512; }
  int64_t strip_bytes() const { return codes_at() + K / 32 * chunk_bytes(); }
  // Block b's 16 float scales, then its 16 uint8 zero points.
  const uint8_t* scales(int64_t strip, int64_t b) const {
    return data() + strip * strip_bytes() + b * kScaleBytes;
  }
  // The codes of k from 32 * chunk on: 4 vectors of 64 bytes (4 bits: k 8j..8j+3 in the
  // low nibbles of vector j, 8j+4..8j+7 in the high ones) or 8 (8 bits: k 4m..4m+3 in
  // vector m).
  const uint8_t* codes(int64_t strip, int64_t chunk) const {
    return data() + strip * strip_bytes() + codes_at() + chunk * chunk_bytes();
  }
  // storage from its first 64-byte boundary
  const uint8_t* data() const { return first_cache_line(storage); }
  bool empty() const { return storage.empty(); }
  // From MatMulNBits' codes [N][K * bits / 8] (4 bits: element 2i in the low nibble of
  // byte i), scale and zero_point [N][K / block_size] (integers, one a byte); block_size a
  // multiple of 32 dividing K.
  static NBitsQ8Strips pack(int64_t N, int64_t K, int64_t block_size, int64_t bits,
                            const uint8_t* codes, const float* scale, const uint8_t* zero_point);

  static constexpr int64_t kScaleBytes = kNBitsQ8StripOutputs * 5;
};

// count (a multiple of 16) values of x as int8 times the returned scale, max |x| / 127,
// each rounded to nearest (ties to even); NaN when a value is not finite, so every output
// it enters is NaN.
float nbits_q8_quantize(const float* x, int64_t count, int8_t* q);

// Bytes nbits_q8_prepare writes for one row of K (a multiple of 32): the K int8 values in
// order, a scale per 32 (its block's), the blocks' sums of x' (the 8-bit values times
// their scale); a multiple of 64.
int64_t nbits_q8_row_bytes(int64_t K, int64_t block_size);
void nbits_q8_prepare(const float* x, int64_t K, int64_t block_size, uint8_t* row);

// y[r * ldy + n] = sum_k x'[r][k] * w[n][k] for rows [0, rows) (prepared rows row_bytes
// apart) and the outputs of strips [s0, s1) below N. Call only when
// nbits_q8_available(kernel).
void nbits_q8_gemm(const NBitsQ8Strips& w, const uint8_t* prepared, int64_t rows, int64_t s0,
                   int64_t s1, float* y, int64_t ldy, MicroKernel kernel = MicroKernel::kAuto);

// The same products in plain loops from MatMulNBits' own layout (integer sums per 32, then
// floats in k order): the reference the tests hold nbits_q8_gemm and the packing to.
void nbits_q8_gemm_reference(const NBitsWeights& w, const uint8_t* prepared, int64_t rows, float* y,
                             int64_t ldy);

}  // namespace nxrt::gemm
