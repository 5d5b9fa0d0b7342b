// com.microsoft MatMulNBits: Y = A * dequantize(B)^T (+ bias), the weight B [N, K] stored
// as 2-, 4- or 8-bit codes in blocks of `block_size` along K, each block with a scale and a
// zero point: w = (code - zero_point) * scale. Codes are packed low bits first within a
// byte; B is [N, k_blocks, block_size * bits / 8] bytes. Zero points are either uint8,
// packed the same way per row ([N, ceil(k_blocks * bits / 8)], default 2^(bits - 1)), or
// floats like the scales ([N, k_blocks]). float32 A only.
//
// A constant 4- or 8-bit B (the usual case: quantized weights) is kept as codes: products
// of a few rows (an LLM's decode step) read them row by row (gemm/nbits_gemv.h), being
// bound by the bytes of weights they read; on AVX-512 more rows read them from strips
// (gemm/nbits_strips.h) and no float copy (eight times the bytes) is made. Elsewhere a
// constant B is also dequantized once and packed for the float GEMM; a B computed at run
// time is dequantized on every run. With accuracy_level 4 ("int8 compute"), 4- or 8-bit
// codes and integer zero points, A is computed in 8 bits, as onnxruntime does
// (gemm/nbits_q8.h: AVX-512 VNNI or AVX2), whatever the number of rows.
#include <algorithm>
#include <optional>
#include <vector>

#include "ep/cpu/gemm/gemm.h"
#include "ep/cpu/gemm/nbits_gemv.h"
#include "ep/cpu/gemm/nbits_q8.h"
#include "ep/cpu/gemm/nbits_strips.h"
#include "ep/cpu/kernels/common.h"

namespace nxrt::cpu {
namespace {

struct NBitsShape {
  int64_t K, N, bits, block_size;
  int64_t blocks() const { return (K + block_size - 1) / block_size; }
  int64_t blob() const { return block_size * bits / 8; }
  int64_t zero_point_bytes() const { return (blocks() * bits + 7) / 8; }  // per row
};

// Checks the weight inputs' sizes against the attributes.
Status check_weights(const NBitsShape& g, const Tensor& b, const Tensor& scales,
                     const Tensor* zero_points) {
  if (b.dtype() != DataType::kUint8 || b.numel() != g.N * g.blocks() * g.blob())
    return invalid_argument("B must hold N x k_blocks x blob_size = ", g.N, " x ", g.blocks(),
                            " x ", g.blob(), " uint8 values, got ", tensor_type_name(b.dtype()),
                            " ", b.shape().to_string());
  if (scales.numel() != g.N * g.blocks())
    return invalid_argument("scales must hold N x k_blocks = ", g.N * g.blocks(), " values, got ",
                            scales.shape().to_string());
  if (zero_points) {
    const int64_t want =
        zero_points->dtype() == DataType::kUint8 ? g.N * g.zero_point_bytes() : g.N * g.blocks();
    if (zero_points->numel() != want)
      return invalid_argument("zero_points must hold ", want, " values, got ",
                              zero_points->shape().to_string());
  }
  return Status();
}

// The code of element i of a row of packed codes.
inline int code_at(const uint8_t* row, int64_t i, int64_t bits) {
  const int64_t bit = i * bits;
  return (row[bit / 8] >> (bit % 8)) & ((1 << bits) - 1);
}

// The zero point of block `blk` of row n: packed uint8 codes, floats, or the default.
inline float zero_point(const NBitsShape& g, const Tensor* zero_points, int64_t n, int64_t blk) {
  if (!zero_points) return float(1 << (g.bits - 1));
  if (zero_points->dtype() == DataType::kUint8)
    return float(code_at(zero_points->data<uint8_t>() + n * g.zero_point_bytes(), blk, g.bits));
  return zero_points->data<float>()[n * g.blocks() + blk];
}

// W [N, K] in float, row n = dequantized weights of output n, after checking the weight
// inputs' sizes. Allocated within the tensor limits: a 4-bit B grows 8x here.
Expected<Tensor> dequantize_weights(const NBitsShape& g, const Tensor& b, const Tensor& scales,
                                    const Tensor* zero_points) {
  NXRT_RETURN_IF_ERROR(check_weights(g, b, scales, zero_points));
  NXRT_ASSIGN_OR_RETURN(Tensor w,
                        Tensor::allocate_uninitialized(DataType::kFloat, Shape{g.N, g.K}));
  const uint8_t* codes = b.data<uint8_t>();
  const float* scale = scales.data<float>();
  float* pw = w.data<float>();
  parallel_for(size_t(g.N), [&](size_t n) {
    for (int64_t blk = 0; blk < g.blocks(); ++blk) {
      const int64_t q = int64_t(n) * g.blocks() + blk;
      const float zp = zero_point(g, zero_points, int64_t(n), blk);
      const uint8_t* block = codes + q * g.blob();
      const int64_t k0 = blk * g.block_size, count = std::min(g.block_size, g.K - k0);
      float* out = pw + int64_t(n) * g.K + k0;
      for (int64_t i = 0; i < count; ++i)
        out[i] = (float(code_at(block, i, g.bits)) - zp) * scale[q];
    }
  });
  return w;
}

class MatMulNBitsKernel final : public Kernel {
 public:
  MatMulNBitsKernel(NBitsShape g, int64_t accuracy_level)
      : g_(g), accuracy_level_(accuracy_level) {}

  // Dequantizes and packs constant weights once; keeps 4- and 8-bit codes for few-row
  // products, or packs them for the 8-bit-A product.
  Status pack(const Tensor& b, const Tensor& scales, const Tensor* zero_points) {
    NXRT_RETURN_IF_ERROR(check_weights(g_, b, scales, zero_points));
    const bool codes_fit =
        (g_.bits == 4 || g_.bits == 8) && g_.block_size % 32 == 0 && g_.K % g_.block_size == 0;
    // A in 8 bits where onnxruntime computes it so: accuracy_level 4 with integer zero
    // points (or none). With float zero points (GGUF Q4_1's minimums) onnxruntime stays
    // in float, and so does this kernel, to give the same results.
    const bool integer_zero_points = !zero_points || zero_points->dtype() == DataType::kUint8;
    const bool int8_a =
        codes_fit && accuracy_level_ == 4 && integer_zero_points && gemm::nbits_q8_available();
    if (!codes_fit || (!gemm::nbits_strips_available() && !int8_a)) {
      NXRT_ASSIGN_OR_RETURN(Tensor w, dequantize_weights(g_, b, scales, zero_points));
      packed_ = gemm::PackedMatrix::pack_right(true, g_.K, g_.N, w.data<float>(), g_.K);
    }
    if (!codes_fit) return Status();
    const uint8_t* codes = b.data<uint8_t>();
    const float* scale = scales.data<float>();
    const size_t count = size_t(g_.N * g_.blocks());
    std::vector<float> zero(count);  // each block's zero point, unpacked
    for (int64_t n = 0; n < g_.N; ++n)
      for (int64_t blk = 0; blk < g_.blocks(); ++blk)
        zero[size_t(n * g_.blocks() + blk)] = zero_point(g_, zero_points, n, blk);
    if (int8_a) {  // integer zero points: kept as bytes, the offsets made in the kernel
      const std::vector<uint8_t> integer_zp(zero.begin(), zero.end());
      q8_strips_ = gemm::NBitsQ8Strips::pack(g_.N, g_.K, g_.block_size, g_.bits, codes, scale,
                                             integer_zp.data());
      return Status();
    }
    std::vector<float> neg_zp_scale(count);
    for (size_t q = 0; q < count; ++q) neg_zp_scale[q] = -zero[q] * scale[q];
    codes_.assign(codes, codes + g_.N * g_.K * g_.bits / 8);
    scale_.assign(scale, scale + g_.N * g_.blocks());
    neg_zp_scale_ = std::move(neg_zp_scale);
    if (gemm::nbits_strips_available())
      strips_ = gemm::NBitsStrips::pack(g_.N, g_.K, g_.block_size, g_.bits, codes_.data(),
                                        scale_.data(), neg_zp_scale_.data());
    return Status();
  }

  Status compute(KernelContext& ctx) const override {
    const Tensor& a = *ctx.input(0);
    if (a.rank() < 1 || a.shape().back() != g_.K)
      return invalid_argument("A has shape ", a.shape().to_string(),
                              "; its last dim must be K = ", g_.K);
    const Tensor* bias = ctx.input(5);
    if (bias && (bias->dtype() != DataType::kFloat || bias->numel() != g_.N))
      return invalid_argument("bias must hold N = ", g_.N, " float values, got ",
                              bias->shape().to_string());
    Shape out = a.shape();
    out[out.size() - 1] = g_.N;
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, out));
    const int64_t M = a.numel() / g_.K;  // K > 0 (checked at creation)
    float* py = y->data<float>();
    if (y->numel() == 0) return Status();
    if (!q8_strips_.empty()) {
      int8_product(a.data<float>(), M, py);
    } else if (!codes_.empty() && M <= kGemvRows) {
      gemv_4bit(a.data<float>(), M, py);
    } else if (!strips_.empty()) {
      strips_product(a.data<float>(), M, py);
    } else if (packed_.empty()) {
      NXRT_ASSIGN_OR_RETURN(Tensor w,
                            dequantize_weights(g_, *ctx.input(1), *ctx.input(2), ctx.input(3)));
      gemm::sgemm(false, true, M, g_.N, g_.K, 1.0f, a.data<float>(), g_.K, w.data<float>(), g_.K,
                  0.0f, py, g_.N);
    } else {
      gemm::sgemm_packed_right(false, M, 1.0f, a.data<float>(), g_.K, packed_, 0.0f, py, g_.N);
    }
    if (bias) {
      const float* pb = bias->data<float>();
      for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < g_.N; ++n) py[m * g_.N + n] += pb[n];
    }
    return Status();
  }

 private:
  // Up to this many rows the product reads the 4- or 8-bit codes row by row, decoding
  // each chunk once for all of them; more rows (a prompt, a batch of decode steps) take
  // the strips (AVX-512) or the packed float GEMM. Measured on 576 x 1536 4-bit weights in
  // L2, 1 thread (BM_NBitsRows): AVX-512 1 row 50 us, 4 rows 112 us (AVX2: 71 and 178),
  // against 115-125 us through the float GEMM; the strips' tiles take 170 us for 8 rows,
  // 446 for 32 (the float GEMM 133 and 399 from L2, but 4 bytes a weight from memory).
  static constexpr int64_t kGemvRows = 4;
  // Output columns per thread at least: below that a hand-off costs more than it saves.
  static constexpr double kMinMacsPerPiece = double(1 << 18);

  gemm::NBitsWeights weights() const {
    return {g_.N, g_.K, g_.block_size, g_.bits, codes_.data(), scale_.data(), neg_zp_scale_.data()};
  }

  void strips_product(const float* a, int64_t M, float* y) const {
    float* xp = thread_scratch<float>(size_t(gemm::nbits_strips_x_floats(M, g_.K)));
    gemm::nbits_strips_prepare(a, M, g_.K, xp);
    // Pieces hold pairs of strips: a pair shares a decoded tile.
    const int64_t together = 2;
    const int64_t strips = strips_.strips(), units = (strips + together - 1) / together;
    const size_t pieces = std::min<size_t>(
        parallel_pieces(double(g_.N) * double(g_.K) * double(M), kMinMacsPerPiece), size_t(units));
    parallel_for(pieces, [&](size_t i) {
      const int64_t s0 = units * int64_t(i) / int64_t(pieces) * together;
      const int64_t s1 = std::min(strips, units * int64_t(i + 1) / int64_t(pieces) * together);
      float* scratch = thread_scratch<float>(size_t(gemm::nbits_strips_scratch_floats(g_.K)), 1);
      gemm::nbits_strips_gemm(strips_, xp, M, s0, s1, y, g_.N, scratch);
    });
  }

  // A in 8 bits (accuracy_level 4): every row quantized, then the strips split between
  // threads, each taking all rows.
  void int8_product(const float* a, int64_t M, float* y) const {
    const int64_t row_bytes = gemm::nbits_q8_row_bytes(g_.K, g_.block_size);
    uint8_t* prepared = thread_scratch<uint8_t>(size_t(row_bytes * M));
    for (int64_t m = 0; m < M; ++m)
      gemm::nbits_q8_prepare(a + m * g_.K, g_.K, g_.block_size, prepared + m * row_bytes);
    const int64_t strips = q8_strips_.strips();
    const size_t pieces = std::min<size_t>(
        parallel_pieces(double(g_.N) * double(g_.K) * double(M), kMinMacsPerPiece), size_t(strips));
    parallel_for(pieces, [&](size_t i) {
      gemm::nbits_q8_gemm(q8_strips_, prepared, M, strips * int64_t(i) / int64_t(pieces),
                          strips * int64_t(i + 1) / int64_t(pieces), y, g_.N);
    });
  }

  void gemv_4bit(const float* a, int64_t M, float* y) const {
    const gemm::NBitsWeights w = weights();
    const int64_t stride = gemm::nbits_prepared_floats(g_.K, g_.block_size);
    float* prepared = thread_scratch<float>(size_t(stride * M));
    for (int64_t m = 0; m < M; ++m)
      gemm::nbits_prepare_row(a + m * g_.K, g_.K, g_.block_size, g_.bits, prepared + m * stride);
    const size_t pieces = parallel_pieces(double(g_.N) * double(g_.K), kMinMacsPerPiece);
    for (int64_t m = 0; m < M; m += gemm::kNBitsRowsAtOnce) {
      const int64_t rows = std::min(gemm::kNBitsRowsAtOnce, M - m);
      parallel_for(pieces, [&](size_t i) {
        gemm::nbits_gemm_rows(w, prepared + m * stride, stride, rows,
                              g_.N * int64_t(i) / int64_t(pieces),
                              g_.N * int64_t(i + 1) / int64_t(pieces), y + m * g_.N, g_.N);
      });
    }
  }

  NBitsShape g_;
  int64_t accuracy_level_ = 0;
  gemm::PackedMatrix packed_;
  gemm::NBitsQ8Strips q8_strips_;  // B for 8-bit A (gemm/nbits_q8.h); else empty
  gemm::NBitsStrips strips_;       // constant 4- or 8-bit B on AVX-512; empty otherwise
  std::vector<uint8_t> codes_;     // constant 4- or 8-bit B as given; empty when not used
  std::vector<float> scale_, neg_zp_scale_;
};

}  // namespace

Expected<KernelPtr> create_matmul_nbits(KernelInit& init) {
  if (init.input_type(0) != DataType::kFloat) return init.unsupported_type(0);
  if (init.input_type(1) != DataType::kUint8) return init.unsupported_type(1);
  if (init.input_type(2) != DataType::kFloat) return init.unsupported_type(2);
  if (init.has_input(3) && init.input_type(3) != DataType::kUint8 &&
      init.input_type(3) != DataType::kFloat)
    return init.unsupported_type(3);
  if (init.has_input(4))
    return init.error(
        StatusCode::kNotImplemented,
        "input g_idx (act-order weights, deprecated in onnxruntime) is not supported");
  if (init.has_input(5) && init.input_type(5) != DataType::kFloat) return init.unsupported_type(5);
  AttrReader attrs(init.node);
  NBitsShape g{attrs.require_int("K"), attrs.require_int("N"), attrs.get_int("bits", 4),
               attrs.require_int("block_size")};
  NXRT_RETURN_IF_ERROR(attrs.status());
  if (g.bits != 2 && g.bits != 4 && g.bits != 8)
    return init.error(StatusCode::kInvalidGraph, "bits must be 2, 4 or 8, got ", g.bits);
  if (g.block_size < 16 || (g.block_size & (g.block_size - 1)) != 0)
    return init.error(StatusCode::kInvalidGraph,
                      "block_size must be a power of 2 of at least 16, got ", g.block_size);
  if (g.K <= 0 || g.N <= 0 || g.K > (int64_t(1) << 31) || g.N > (int64_t(1) << 31))
    return init.error(StatusCode::kInvalidGraph, "K and N must be in [1, 2^31], got K = ", g.K,
                      ", N = ", g.N);
  init.set_all_outputs(DataType::kFloat);
  const int64_t accuracy_level = attrs.get_int("accuracy_level", 0);
  auto kernel = std::make_unique<MatMulNBitsKernel>(g, accuracy_level);
  const Tensor* b = init.constant_input(1);
  const Tensor* scales = init.constant_input(2);
  const Tensor* zero_points = init.has_input(3) ? init.constant_input(3) : nullptr;
  if (b && scales && (!init.has_input(3) || zero_points)) {
    if (Status s = kernel->pack(*b, *scales, zero_points); !s.ok())
      return init.error(s.code(), s.message());
    for (size_t i = 1; i < 4; ++i)
      if (init.has_input(i)) init.absorb_constant(i);
  }
  return KernelPtr(std::move(kernel));
}

}  // namespace nxrt::cpu
