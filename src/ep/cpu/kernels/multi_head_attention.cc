// com.microsoft MultiHeadAttention, float32, as onnxruntime's transformer exports and
// optimizer write it (BERT-style encoders, T5 / Whisper decoders with a KV cache):
//   out = softmax(scale * Q K^T + mask + attention_bias (+ causal)) V per head.
// Inputs: query [B, S, N*D]; key and value [B, L, N*D] (or already split into heads,
// [B, N, L, D], as cross attention passes them); bias [N*D + N*D + N*Dv] added to the
// three projections (3-D key/value only); key_padding_mask (int32: [B] key lengths,
// [B, T] or [B, S, T], 0 = masked), which adds mask_filter_value to masked scores;
// attention_bias [B or 1, N or 1, S, T]; past_key/past_value [B, N, P, D] prepended to the
// new keys (T = P + L). Outputs: [B, S, N*Dv] and present_key/present_value [B, N, T, D].
// unidirectional = 1: query i attends to keys up to P + i (self attention, L = S).
// Packed QKV/KV, past_sequence_length and cache_indirection (beam search) are refused, as
// onnxruntime's CPU provider refuses the packed forms.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/parallel.h"
#include "ep/cpu/kernels/attention_rows.h"
#include "ep/cpu/kernels/common.h"
#include "ops/attrs.h"

namespace nxrt::cpu {
namespace {

struct MhaAttrs {
  int64_t heads = 0;
  float scale = 0.0f;  // 0: 1 / sqrt(head size)
  float mask_filter_value = -10000.0f;
  bool unidirectional = false;
};

// A key or value input as [B, N, L, width] rows: 3-D [B, L, N*width] or 4-D BNSH.
struct HeadRows {
  const float* data = nullptr;
  int64_t len = 0, width = 0;
  bool bnsh = false;
  int64_t heads = 0;
  const float* row(int64_t b, int64_t n, int64_t j) const {
    return bnsh ? data + ((b * heads + n) * len + j) * width
                : data + (b * len + j) * heads * width + n * width;
  }
};

Status head_rows(const Tensor& t, int64_t B, int64_t N, const char* what, HeadRows& out) {
  out.data = t.data<float>();
  out.heads = N;
  if (t.rank() == 3 && t.shape()[0] == B && t.shape()[2] % N == 0) {
    out.len = t.shape()[1];
    out.width = t.shape()[2] / N;
  } else if (t.rank() == 4 && t.shape()[0] == B && t.shape()[1] == N) {
    out.bnsh = true;
    out.len = t.shape()[2];
    out.width = t.shape()[3];
  } else {
    return invalid_argument(what, " shape ", t.shape().to_string(), " must be [", B, ", length, ",
                            N, " * head size] or [", B, ", ", N, ", length, head size]");
  }
  return Status();
}

class MultiHeadAttentionKernel final : public Kernel {
 public:
  MultiHeadAttentionKernel(MhaAttrs a, bool want_key, bool want_value)
      : a_(a), want_present_{want_key, want_value} {}

  Status compute(KernelContext& ctx) const override {
    const Tensor& query = *ctx.input(0);
    const Tensor* key = ctx.input(1);
    const Tensor* value = ctx.input(2);
    const Tensor* bias = ctx.input(3);
    const Tensor* mask = ctx.input(4);
    const Tensor* attn_bias = ctx.input(5);
    const Tensor* past_key = ctx.input(6);
    const Tensor* past_value = ctx.input(7);
    for (size_t i = 8; i < ctx.num_inputs(); ++i)
      if (ctx.input(i))
        return not_implemented("MultiHeadAttention input ", i,
                               " (past_sequence_length / cache_indirection) is not supported");
    if (query.rank() != 3)
      return not_implemented("query of shape ", query.shape().to_string(),
                             ": packed QKV is not supported; query must be [batch, sequence, "
                             "hidden]");
    if (!key || !value)
      return not_implemented("MultiHeadAttention without separate key and value (packed KV)");
    const int64_t B = query.shape()[0], S = query.shape()[1], N = a_.heads;
    if (query.shape()[2] % N != 0)
      return invalid_argument("query hidden size ", query.shape()[2], " is not a multiple of ", N,
                              " heads");
    const int64_t D = query.shape()[2] / N;
    HeadRows k, v;
    NXRT_RETURN_IF_ERROR(head_rows(*key, B, N, "key", k));
    NXRT_RETURN_IF_ERROR(head_rows(*value, B, N, "value", v));
    if (k.width != D || v.len != k.len || k.bnsh != v.bnsh)
      return invalid_argument("key ", key->shape().to_string(), " and value ",
                              value->shape().to_string(), " do not match query ",
                              query.shape().to_string());
    const int64_t L = k.len, Dv = v.width;
    if (bias) {
      if (k.bnsh) return not_implemented("bias with key/value already split into heads");
      if (bias->numel() != N * (2 * D + Dv))
        return invalid_argument("bias has ", bias->numel(), " values; expected ", N * (2 * D + Dv));
    }
    int64_t P = 0;
    if (past_key || past_value) {
      if (!past_key || !past_value)
        return invalid_argument("past_key and past_value come together");
      if (past_key->shape().size() != 4 || past_key->shape()[0] != B || past_key->shape()[1] != N ||
          past_key->shape()[3] != D || past_value->shape() != Shape{B, N, past_key->shape()[2], Dv})
        return invalid_argument("past_key ", past_key->shape().to_string(), " / past_value ",
                                past_value->shape().to_string(), " must be [", B, ", ", N,
                                ", past, head size]");
      P = past_key->shape()[2];
    }
    const int64_t T = P + L;
    if (a_.unidirectional && L != S)
      return not_implemented("unidirectional attention with ", L, " new keys for ", S, " queries");
    // The mask as (row stride per batch, per query) over T keys, or key lengths.
    const int32_t* mask_data = nullptr;
    int64_t mask_b = 0, mask_s = 0;
    bool mask_lengths = false;
    if (mask) {
      if (mask->dtype() != DataType::kInt32)
        return invalid_argument("key_padding_mask must be int32, got ", dtype_name(mask->dtype()));
      mask_data = mask->data<int32_t>();
      if (mask->shape() == Shape{B}) {
        mask_lengths = true;
      } else if (mask->shape() == Shape{B, T}) {
        mask_b = T;
      } else if (mask->shape() == Shape{B, S, T}) {
        mask_b = S * T;
        mask_s = T;
      } else {
        return not_implemented("key_padding_mask of shape ", mask->shape().to_string(),
                               " (supported: [", B, "], [", B, ", ", T, "], [", B, ", ", S, ", ", T,
                               "])");
      }
    }
    AttentionBias extra;
    NXRT_RETURN_IF_ERROR(read_attention_bias(attn_bias, B, N, S, T, extra));

    NXRT_ASSIGN_OR_RETURN(Tensor * out, ctx.output(0, Shape{B, S, N * Dv}));
    // Keys and values of every (batch, head) as contiguous [T, width] rows: the past,
    // then the new ones with their bias; in the present outputs when they are wanted.
    float* pk = nullptr;
    float* pv = nullptr;
    if (want_present_[0]) {
      NXRT_ASSIGN_OR_RETURN(Tensor * present_key, ctx.output(1, Shape{B, N, T, D}));
      pk = present_key->data<float>();
    } else {
      pk = thread_scratch<float>(size_t(B * N * T * D), 0);
    }
    if (want_present_[1]) {
      NXRT_ASSIGN_OR_RETURN(Tensor * present_value, ctx.output(2, Shape{B, N, T, Dv}));
      pv = present_value->data<float>();
    } else {
      pv = thread_scratch<float>(size_t(B * N * T * Dv), 1);
    }
    const float* bq = bias ? bias->data<float>() : nullptr;
    const float* bk = bias ? bq + N * D : nullptr;
    const float* bv = bias ? bq + 2 * N * D : nullptr;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t n = 0; n < N; ++n) {
        float* kr = pk + (b * N + n) * T * D;
        float* vr = pv + (b * N + n) * T * Dv;
        if (P > 0) {
          std::memcpy(kr, past_key->data<float>() + (b * N + n) * P * D,
                      size_t(P * D) * sizeof(float));
          std::memcpy(vr, past_value->data<float>() + (b * N + n) * P * Dv,
                      size_t(P * Dv) * sizeof(float));
        }
        for (int64_t j = 0; j < L; ++j) {
          const float* ks = k.row(b, n, j);
          const float* vs = v.row(b, n, j);
          float* kd = kr + (P + j) * D;
          float* vd = vr + (P + j) * Dv;
          for (int64_t d = 0; d < D; ++d) kd[d] = ks[d] + (bk ? bk[n * D + d] : 0.0f);
          for (int64_t d = 0; d < Dv; ++d) vd[d] = vs[d] + (bv ? bv[n * Dv + d] : 0.0f);
        }
      }

    const float scale = a_.scale != 0.0f ? a_.scale : 1.0f / std::sqrt(float(D));
    const float* qp = query.data<float>();
    float* y = out->data<float>();
    const double work = double(B * N) * double(S) * double(T) * double(D + Dv);
    for_each_head(B, N, work, size_t(T + D), [&](int64_t b, int64_t n, float* scores) {
      float* q = scores + T;
      const float* kr = pk + (b * N + n) * T * D;
      const float* vr = pv + (b * N + n) * T * Dv;
      for (int64_t i = 0; i < S; ++i) {
        const float* qs = qp + (b * S + i) * N * D + n * D;
        for (int64_t d = 0; d < D; ++d) q[d] = qs[d] + (bq ? bq[n * D + d] : 0.0f);
        const int64_t last = a_.unidirectional ? P + i : T - 1;
        float max = -std::numeric_limits<float>::infinity();
        for (int64_t j = 0; j <= last; ++j) {
          float s = attention_dot(q, kr + j * D, D) * scale + extra.at(b, n, i, j);
          if (mask_data) {
            const bool keep =
                mask_lengths ? j < mask_data[b] : mask_data[b * mask_b + i * mask_s + j] != 0;
            if (!keep) s += a_.mask_filter_value;
          }
          scores[j] = s;
          max = std::max(max, s);
        }
        attend_values(scores, 0, last, max, 0.0f, vr, Dv, y + (b * S + i) * N * Dv + n * Dv);
      }
    });
    return Status();
  }

 private:
  MhaAttrs a_;
  bool want_present_[2];
};

}  // namespace

Expected<KernelPtr> create_multi_head_attention(KernelInit& init) {
  AttrReader attrs(init.node);
  MhaAttrs a;
  a.heads = attrs.get_int("num_heads", 0);
  a.scale = attrs.get_float("scale", 0.0f);
  a.mask_filter_value = attrs.get_float("mask_filter_value", -10000.0f);
  a.unidirectional = attrs.get_int("unidirectional", 0) != 0;
  NXRT_RETURN_IF_ERROR(attrs.status());
  if (a.heads <= 0)
    return init.error(StatusCode::kInvalidGraph, "num_heads must be positive, got ", a.heads);
  if (init.input_type(0) != DataType::kFloat) return init.unsupported_type(0);
  for (size_t i : {1, 2, 3, 5, 6, 7})
    if (init.has_input(i) && init.input_type(i) != DataType::kFloat)
      return init.error(StatusCode::kInvalidGraph, "input ", i, " has type ",
                        dtype_name(init.input_type(i)), ", expected float");
  if (output_wanted(init, 3))
    return init.error(StatusCode::kNotImplemented,
                      "MultiHeadAttention's qk output (output 3) is not supported");
  init.set_all_outputs(DataType::kFloat);
  return make_kernel<MultiHeadAttentionKernel>(a, output_wanted(init, 1), output_wanted(init, 2));
}

}  // namespace nxrt::cpu
