// com.microsoft Attention, float32: the self-attention node onnxruntime's transformer
// optimizer writes for BERT-style encoders (and GPT-2 with a past), with the Q, K and V
// projections packed into one weight:
//   [Q K V] = input [B, S, in] * weights [in, q + k + v] (+ bias [q + k + v]),
//   out [B, S, v] = softmax(scale * Q K^T + mask + attention_bias) V per head.
// mask_index (int32) is [B] key lengths, [2B] end then start positions, [B, T] or
// [B, S, T] with 0 = masked; a masked score gets mask_filter_value added, and with
// unidirectional = 1 so does every key after the query's position, as onnxruntime adds
// them (so a row with every key masked averages them, as there). past [2, B, N, P, D] is
// prepended to the new keys and values (T = P + S); present [2, B, N, T, D] returns them.
// The 4-D Megatron mask, past_sequence_length (a shared past/present buffer) and rotary
// embedding are refused, and so is a weight that is not a constant (it is packed for the
// GEMM once).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/parallel.h"
#include "ep/cpu/gemm/gemm.h"
#include "ep/cpu/kernels/attention_rows.h"
#include "ep/cpu/kernels/common.h"
#include "ops/attrs.h"

namespace nxrt::cpu {
namespace {

struct PackedAttentionAttrs {
  int64_t heads = 0;
  float scale = 0.0f;  // 0: 1 / sqrt(head size)
  float mask_filter_value = -10000.0f;
  bool unidirectional = false;
  std::vector<int64_t> hidden;  // q, k, v widths; empty: the weight's columns in thirds
};

// What mask_index says of one score: 0 or mask_filter_value.
struct MaskIndex {
  enum class Form { kNone, kLengths, kEndStart, kRows, kPerQuery } form = Form::kNone;
  const int32_t* data = nullptr;
  int64_t B = 0, S = 0, T = 0;
  float value = 0.0f;
  float at(int64_t b, int64_t i, int64_t j) const {
    switch (form) {
      case Form::kNone:
        return 0.0f;
      case Form::kLengths:
        return j >= data[b] ? value : 0.0f;
      case Form::kEndStart:
        return j >= data[b] || j < data[B + b] ? value : 0.0f;
      case Form::kRows:
        return data[b * T + j] > 0 ? 0.0f : value;
      case Form::kPerQuery:
        return data[(b * S + i) * T + j] > 0 ? 0.0f : value;
    }
    return 0.0f;
  }
};

Status read_mask(const Tensor& mask, int64_t B, int64_t S, int64_t T, float value, MaskIndex& m) {
  if (mask.dtype() != DataType::kInt32)
    return invalid_argument("mask_index must be int32, got ", dtype_name(mask.dtype()));
  m.data = mask.data<int32_t>();
  m.B = B;
  m.S = S;
  m.T = T;
  m.value = value;
  const Shape& s = mask.shape();
  if (s == Shape{B})
    m.form = MaskIndex::Form::kLengths;
  else if (s == Shape{2 * B})
    m.form = MaskIndex::Form::kEndStart;
  else if (s == Shape{B, T})
    m.form = MaskIndex::Form::kRows;
  else if (s == Shape{B, S, T})
    m.form = MaskIndex::Form::kPerQuery;
  else
    return not_implemented("mask_index of shape ", s.to_string(), " (supported: [", B, "], [",
                           2 * B, "], [", B, ", ", T, "], [", B, ", ", S, ", ", T, "])");
  return Status();
}

class PackedQkvAttentionKernel final : public Kernel {
 public:
  PackedQkvAttentionKernel(PackedAttentionAttrs a, int64_t in, int64_t q, int64_t k, int64_t v,
                           bool want_present)
      : a_(std::move(a)), in_(in), q_(q), k_(k), v_(v), want_present_(want_present) {}

  void pack(const Tensor& weights) {
    packed_ = gemm::PackedMatrix::pack_right(false, in_, q_ + k_ + v_, weights.data<float>(),
                                             q_ + k_ + v_);
  }

  Status compute(KernelContext& ctx) const override {
    const Tensor& input = *ctx.input(0);
    const Tensor* bias = ctx.input(2);
    const Tensor* mask = ctx.input(3);
    const Tensor* past = ctx.input(4);
    const Tensor* attn_bias = ctx.input(5);
    if (ctx.input(6))
      return not_implemented(
          "Attention input 6 (past_sequence_length: a past and present "
          "sharing one buffer) is not supported");
    const int64_t width = q_ + k_ + v_, N = a_.heads;
    if (input.rank() != 3 || input.shape()[2] != in_)
      return invalid_argument("input shape ", input.shape().to_string(),
                              " must be [batch, sequence, ", in_, "]");
    if (bias && bias->numel() != width)
      return invalid_argument("bias has ", bias->numel(), " values; expected ", width);
    const int64_t B = input.shape()[0], S = input.shape()[1];
    const int64_t D = q_ / N, Dv = v_ / N;
    int64_t P = 0;
    if (past) {
      const Shape& s = past->shape();
      if (s.size() != 5 || s[0] != 2 || s[1] != B || s[2] != N || s[4] != D)
        return invalid_argument("past shape ", s.to_string(), " must be [2, ", B, ", ", N,
                                ", past length, ", D, "]");
      P = s[3];
    }
    const int64_t T = P + S;
    MaskIndex m;
    if (mask) NXRT_RETURN_IF_ERROR(read_mask(*mask, B, S, T, a_.mask_filter_value, m));
    AttentionBias extra;
    NXRT_RETURN_IF_ERROR(read_attention_bias(attn_bias, B, N, S, T, extra));

    NXRT_ASSIGN_OR_RETURN(Tensor * out, ctx.output(0, Shape{B, S, v_}));
    // The projections of every token: [B * S, q + k + v].
    float* qkv = thread_scratch<float>(size_t(B * S * width), 0);
    gemm::sgemm_packed_right(false, B * S, 1.0f, input.data<float>(), in_, packed_, 0.0f, qkv,
                             width);
    if (bias) {
      const float* pb = bias->data<float>();
      for (int64_t r = 0; r < B * S; ++r)
        for (int64_t c = 0; c < width; ++c) qkv[r * width + c] += pb[c];
    }
    // Keys and values per (batch, head) as [T, width] rows: the past, then the new ones.
    float* keys;
    if (want_present_) {
      NXRT_ASSIGN_OR_RETURN(Tensor * present, ctx.output(1, Shape{2, B, N, T, D}));
      keys = present->data<float>();
    } else {
      keys = thread_scratch<float>(size_t(B * N * T * (D + Dv)), 1);
    }
    float* values = keys + B * N * T * D;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t n = 0; n < N; ++n) {
        float* kr = keys + (b * N + n) * T * D;
        float* vr = values + (b * N + n) * T * Dv;
        if (P > 0) {
          const float* pk = past->data<float>() + (b * N + n) * P * D;
          std::memcpy(kr, pk, size_t(P * D) * sizeof(float));
          std::memcpy(vr, pk + B * N * P * D, size_t(P * Dv) * sizeof(float));
        }
        for (int64_t j = 0; j < S; ++j) {
          const float* row = qkv + (b * S + j) * width;
          std::memcpy(kr + (P + j) * D, row + q_ + n * D, size_t(D) * sizeof(float));
          std::memcpy(vr + (P + j) * Dv, row + q_ + k_ + n * Dv, size_t(Dv) * sizeof(float));
        }
      }

    const float scale = a_.scale != 0.0f ? a_.scale : 1.0f / std::sqrt(float(D));
    float* y = out->data<float>();
    const double work = double(B * N) * double(S) * double(T) * double(D + Dv);
    for_each_head(B, N, work, size_t(T), [&](int64_t b, int64_t n, float* scores) {
      const float* kr = keys + (b * N + n) * T * D;
      const float* vr = values + (b * N + n) * T * Dv;
      for (int64_t i = 0; i < S; ++i) {
        const float* q = qkv + (b * S + i) * width + n * D;
        float max = -std::numeric_limits<float>::infinity();
        for (int64_t j = 0; j < T; ++j) {
          float s = attention_dot(q, kr + j * D, D) * scale + m.at(b, i, j) + extra.at(b, n, i, j);
          if (a_.unidirectional && j > P + i) s += a_.mask_filter_value;
          scores[j] = s;
          max = std::max(max, s);
        }
        attend_values(scores, 0, T - 1, max, 0.0f, vr, Dv, y + (b * S + i) * v_ + n * Dv);
      }
    });
    return Status();
  }

 private:
  PackedAttentionAttrs a_;
  int64_t in_, q_, k_, v_;
  bool want_present_;
  gemm::PackedMatrix packed_;
};

}  // namespace

Expected<KernelPtr> create_packed_qkv_attention(KernelInit& init) {
  AttrReader attrs(init.node);
  PackedAttentionAttrs a;
  a.heads = attrs.get_int("num_heads", 0);
  a.scale = attrs.get_float("scale", 0.0f);
  a.mask_filter_value = attrs.get_float("mask_filter_value", -10000.0f);
  a.unidirectional = attrs.get_int("unidirectional", 0) != 0;
  a.hidden = attrs.get_ints("qkv_hidden_sizes", {});
  const bool rotary = attrs.get_int("do_rotary", 0) != 0;
  const bool shared_buffer = attrs.get_int("past_present_share_buffer", 0) != 0;
  NXRT_RETURN_IF_ERROR(attrs.status());
  if (a.heads <= 0)
    return init.error(StatusCode::kInvalidGraph, "num_heads must be positive, got ", a.heads);
  if (rotary || shared_buffer)
    return init.error(StatusCode::kNotImplemented,
                      rotary ? "do_rotary = 1 is not supported"
                             : "past_present_share_buffer = 1 is not supported");
  for (size_t i : {0, 1, 2, 4, 5})
    if (init.has_input(i) && init.input_type(i) != DataType::kFloat)
      return init.unsupported_type(i);
  // The weights are a constant in the models onnxruntime's optimizer writes: packed once.
  const Tensor* weights = init.constant_input(1);
  if (!weights)
    return init.error(StatusCode::kNotImplemented,
                      "Attention with weights computed at run time is not supported");
  if (weights->rank() != 2)
    return init.error(StatusCode::kInvalidGraph, "weights shape ", weights->shape().to_string(),
                      " must be [input hidden, q + k + v]");
  const int64_t in = weights->shape()[0], width = weights->shape()[1];
  if (a.hidden.empty()) {
    if (width % 3 != 0)
      return init.error(StatusCode::kInvalidGraph, "weights have ", width,
                        " columns, not three equal projections; give qkv_hidden_sizes");
    a.hidden = {width / 3, width / 3, width / 3};
  }
  if (a.hidden.size() != 3 || a.hidden[0] != a.hidden[1] || a.hidden[0] <= 0 || a.hidden[2] <= 0 ||
      a.hidden[0] + a.hidden[1] + a.hidden[2] != width || a.hidden[0] % a.heads != 0 ||
      a.hidden[2] % a.heads != 0)
    return init.error(StatusCode::kInvalidGraph, "qkv_hidden_sizes must be three sizes (q = k) ",
                      "adding up to the weights' ", width, " columns, each a multiple of ", a.heads,
                      " heads");
  const bool want_present = output_wanted(init, 1);
  if ((want_present || init.has_input(4)) && a.hidden[0] != a.hidden[2])
    return init.error(StatusCode::kNotImplemented,
                      "past and present need equal key and value sizes");
  init.set_all_outputs(DataType::kFloat);
  auto kernel = std::make_unique<PackedQkvAttentionKernel>(a, in, a.hidden[0], a.hidden[1],
                                                           a.hidden[2], want_present);
  kernel->pack(*weights);
  init.absorb_constant(1);
  return KernelPtr(std::move(kernel));
}

}  // namespace nxrt::cpu
