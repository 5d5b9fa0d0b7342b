// com.microsoft GroupQueryAttention, float32: causal attention of num_heads query heads
// over kv_num_heads key/value heads (query head h reads kv head h / (num_heads /
// kv_num_heads)), with the KV cache in BNSH layout, as onnxruntime-genai's decoder
// models use it.
//
// Inputs: query [B, S, Hq*D] (or Q, K and V packed as [B, S, (Hq + 2 Hkv) * D] when key
// and value are absent), key and value [B, S, Hkv*D], past_key and past_value
// [B, Hkv, P, D], seqlens_k [B] (int32: each sequence's total length minus one),
// total_sequence_length (int32 scalar), cos_cache and sin_cache [max_position,
// rotary_dim / 2] when do_rotary. Outputs: [B, S, Hq*D] and present_key/present_value
// [B, Hkv, max(P, total_sequence_length), D].
//
// Sequence b holds seqlens_k[b] + 1 tokens of which the S new ones come last: they are
// at positions past_b = seqlens_k[b] + 1 - S and on (0 and on for a first prompt, whose
// batch rows may be padded at the end), written there into the present cache after the
// past one. New token i attends to cache positions [0, past_b + i], the last
// local_window_size of them when that is set.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "core/parallel.h"
#include "ep/cpu/gemm/gemm.h"
#include "ep/cpu/kernels/attention_rows.h"
#include "ep/cpu/kernels/common.h"
#include "ops/attrs.h"

namespace nxrt::cpu {
namespace {

struct GqaAttrs {
  int64_t q_heads = 0, kv_heads = 0;
  float scale = 0.0f;  // 0: 1 / sqrt(head size)
  float softcap = 0.0f;
  int64_t local_window = -1;
  bool rotary = false, rotary_interleaved = false, smooth_softmax = false;
};

// Rotates the first 2 * half values of one head in place at `position`.
void rotate(float* x, int64_t half, bool interleaved, const float* cos_row, const float* sin_row) {
  for (int64_t j = 0; j < half; ++j) {
    const int64_t i1 = interleaved ? 2 * j : j, i2 = interleaved ? 2 * j + 1 : j + half;
    const float x1 = x[i1], x2 = x[i2];
    x[i1] = cos_row[j] * x1 - sin_row[j] * x2;
    x[i2] = sin_row[j] * x1 + cos_row[j] * x2;
  }
}

// From this many new tokens per sequence (a prompt), a (sequence, head)'s attention runs
// as two matrix products per block of kQueryBlock queries (scores = Q K^T, then weights
// times V), which the packed GEMM runs near its peak; fewer (decode steps) take one dot
// product per key. Each score and output is the same sum whatever else runs beside it
// (the GEMM's K slices are fixed, a key past a query's last weighs exactly 0), so a
// prompt's rows do not depend on how many queries or sequences come with it, from 5 on.
constexpr int64_t kProductQueries = 5;
constexpr int64_t kQueryBlock = 64;

// One (sequence, query head) of a GroupQueryAttention: where its queries, keys, values
// and outputs are.
struct HeadTask {
  const float* q;  // query row i at q + i * q_row
  int64_t q_row;
  const float* k;  // key row j at k + j * D (the cache, rotated)
  const float* v;  // value row j at v + j * D
  float* y;        // output row i at y + i * y_row
  int64_t y_row;
  int64_t S, D, past;  // new tokens, head size, tokens before them
};

// attend_values' softmax and weighted sum, for queries [0, S) of `t` as matrix products;
// `scratch` holds kQueryBlock * (D + past + S) floats. rotate_q(q, position) rotates a
// query in place (or does nothing).
template <typename Rotate>
void attend_by_products(const HeadTask& t, const GqaAttrs& a, float scale, float* scratch,
                        Rotate&& rotate_q) {
  float* q = scratch;
  float* scores = scratch + kQueryBlock * t.D;
  for (int64_t i0 = 0; i0 < t.S; i0 += kQueryBlock) {
    const int64_t rows = std::min(kQueryBlock, t.S - i0);
    const int64_t keys = t.past + i0 + rows;  // what the block's last query attends to
    for (int64_t r = 0; r < rows; ++r) {
      std::memcpy(q + r * t.D, t.q + (i0 + r) * t.q_row, size_t(t.D) * sizeof(float));
      rotate_q(q + r * t.D, t.past + i0 + r);
    }
    gemm::sgemm(false, true, rows, keys, t.D, scale, q, t.D, t.k, t.D, 0.0f, scores, keys);
    for (int64_t r = 0; r < rows; ++r) {
      float* s = scores + r * keys;
      const int64_t last = t.past + i0 + r;
      const int64_t first =
          a.local_window > 0 ? std::max<int64_t>(0, last - a.local_window + 1) : 0;
      const float inv = softmax_weights(s + first, last + 1 - first, a.softcap, a.smooth_softmax);
      std::fill(s, s + first, 0.0f);
      for (int64_t j = first; j <= last; ++j) s[j] *= inv;
      std::fill(s + last + 1, s + keys, 0.0f);
    }
    gemm::sgemm(false, false, rows, t.D, keys, 1.0f, scores, keys, t.v, t.D, 0.0f,
                t.y + i0 * t.y_row, t.y_row);
  }
}

class GroupQueryAttentionKernel final : public Kernel {
 public:
  GroupQueryAttentionKernel(GqaAttrs a, bool want_key, bool want_value)
      : a_(a), want_present_{want_key, want_value} {}

  Status compute(KernelContext& ctx) const override {
    const Tensor& query = *ctx.input(0);
    const Tensor* key = ctx.input(1);
    const Tensor* value = ctx.input(2);
    const Tensor* past_key = ctx.input(3);
    const Tensor* past_value = ctx.input(4);
    const Tensor& seqlens = *ctx.input(5);
    const Tensor& total_t = *ctx.input(6);
    const Tensor* cos_t = ctx.input(7);
    const Tensor* sin_t = ctx.input(8);
    for (size_t i = 9; i < ctx.num_inputs(); ++i)
      if (ctx.input(i))
        return not_implemented("GroupQueryAttention input ", i,
                               " (position_ids, attention_bias or head_sink) is not supported");
    const int64_t Hq = a_.q_heads, Hkv = a_.kv_heads;
    if (query.rank() != 3) return invalid_argument("query must be [batch, sequence, hidden]");
    const int64_t B = query.shape()[0], S = query.shape()[1];
    const bool packed = !key && !value;
    if (!packed && (!key || !value)) return invalid_argument("key and value come together");
    const int64_t q_width = query.shape()[2];
    const int64_t D = packed ? q_width / (Hq + 2 * Hkv) : q_width / Hq;
    if (D <= 0 || (packed ? D * (Hq + 2 * Hkv) : D * Hq) != q_width)
      return invalid_argument("query width ", q_width, " is not a multiple of the heads");
    if (!packed)
      for (const Tensor* t : {key, value})
        if (t->shape() != Shape{B, S, Hkv * D})
          return invalid_argument("key/value shape ", t->shape().to_string(), " must be [", B, ",",
                                  S, ",", Hkv * D, "]");
    int64_t P = 0;
    if (past_key || past_value) {
      if (!past_key || !past_value)
        return invalid_argument("past_key and past_value come together");
      if (past_key->rank() != 4 || past_key->shape()[0] != B || past_key->shape()[1] != Hkv ||
          past_key->shape()[3] != D || past_value->shape() != past_key->shape())
        return invalid_argument("past_key/past_value shape ", past_key->shape().to_string(),
                                " must be [", B, ",", Hkv, ", past, ", D, "]");
      P = past_key->shape()[2];
    }
    if (seqlens.dtype() != DataType::kInt32 || seqlens.numel() != B)
      return invalid_argument("seqlens_k must hold ", B, " int32 values");
    if (total_t.dtype() != DataType::kInt32 || total_t.numel() != 1)
      return invalid_argument("total_sequence_length must be one int32 value");
    const int64_t total = total_t.data<int32_t>()[0];
    // The cache holds the past and the new tokens, so the total never exceeds them: this
    // also bounds the cache by the inputs' sizes (an absurd total is refused, not allocated).
    if (total < S || total > P + S)
      return invalid_argument("total_sequence_length ", total, " must be between ", S, " and ",
                              P + S, " (the past plus the new tokens)");
    const int64_t T = std::max(P, total);  // the present cache's length
    const bool first_prompt = P == 0 && S == total;
    std::vector<int64_t> past_len(static_cast<size_t>(B));
    for (int64_t b = 0; b < B; ++b) {
      const int64_t len = int64_t(seqlens.data<int32_t>()[b]) + 1;
      past_len[size_t(b)] = first_prompt ? 0 : len - S;
      if (len < 1 || len > T || past_len[size_t(b)] < 0 || past_len[size_t(b)] + S > T)
        return invalid_argument("seqlens_k[", b, "] = ", len - 1, " does not fit ", S,
                                " new tokens in a cache of ", T);
    }
    int64_t half = 0;
    if (a_.rotary) {
      if (!cos_t || !sin_t) return invalid_argument("do_rotary needs cos_cache and sin_cache");
      if (cos_t->rank() != 2 || cos_t->shape() != sin_t->shape() || 2 * cos_t->shape()[1] > D)
        return invalid_argument("cos_cache/sin_cache shape ", cos_t->shape().to_string(),
                                " must be [max_position, at most ", D / 2, "]");
      half = cos_t->shape()[1];
      for (int64_t b = 0; b < B; ++b)
        if (past_len[size_t(b)] + S > cos_t->shape()[0])
          return invalid_argument("position ", past_len[size_t(b)] + S - 1,
                                  " is outside the rotary cache of ", cos_t->shape()[0]);
    }

    NXRT_ASSIGN_OR_RETURN(Tensor * out, ctx.output(0, Shape{B, S, Hq * D}));
    float* pk = nullptr;
    float* pv = nullptr;
    if (want_present_[0]) {
      NXRT_ASSIGN_OR_RETURN(Tensor * present_key, ctx.output(1, Shape{B, Hkv, T, D}));
      pk = present_key->data<float>();
    }
    if (want_present_[1]) {
      NXRT_ASSIGN_OR_RETURN(Tensor * present_value, ctx.output(2, Shape{B, Hkv, T, D}));
      pv = present_value->data<float>();
    }
    // Without the present outputs the new keys still need a cache to attend over.
    const size_t cache_floats = size_t(B * Hkv * T * D);
    if (!pk) pk = thread_scratch<float>(cache_floats, 0);
    if (!pv) pv = thread_scratch<float>(cache_floats, 1);
    // The past, then the new (rotated) keys and values after each sequence's past. A
    // caller that binds present to past's own memory (past_present_share_buffer: a
    // generation engine's preallocated cache) gets the new rows written in place, with
    // no copy of the cache.
    const bool shared_key = P > 0 && past_key->data<float>() == pk;
    const bool shared_value = P > 0 && past_value->data<float>() == pv;
    if (shared_key != shared_value || ((shared_key || shared_value) && T != P))
      return invalid_argument(
          "present_key/present_value share the past's memory only together "
          "and only when the past has the capacity of the present");
    for (int64_t bh = 0; bh < B * Hkv && !shared_key; ++bh) {
      float* k_rows = pk + bh * T * D;
      float* v_rows = pv + bh * T * D;
      if (P > 0) {
        std::memcpy(k_rows, past_key->data<float>() + bh * P * D, size_t(P * D) * sizeof(float));
        std::memcpy(v_rows, past_value->data<float>() + bh * P * D, size_t(P * D) * sizeof(float));
      }
      std::fill(k_rows + P * D, k_rows + T * D, 0.0f);
      std::fill(v_rows + P * D, v_rows + T * D, 0.0f);
    }
    const int64_t row = packed ? (Hq + 2 * Hkv) * D : Hq * D;  // floats per query token
    const float* qp = query.data<float>();
    const float* kp = packed ? qp + Hq * D : key->data<float>();
    const float* vp = packed ? qp + (Hq + Hkv) * D : value->data<float>();
    const int64_t kv_row = packed ? row : Hkv * D;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t i = 0; i < S; ++i) {
        const int64_t pos = past_len[size_t(b)] + i;
        for (int64_t h = 0; h < Hkv; ++h) {
          float* k = pk + ((b * Hkv + h) * T + pos) * D;
          float* v = pv + ((b * Hkv + h) * T + pos) * D;
          std::memcpy(k, kp + (b * S + i) * kv_row + h * D, size_t(D) * sizeof(float));
          std::memcpy(v, vp + (b * S + i) * kv_row + h * D, size_t(D) * sizeof(float));
          if (a_.rotary)
            rotate(k, half, a_.rotary_interleaved, cos_t->data<float>() + pos * half,
                   sin_t->data<float>() + pos * half);
        }
      }

    const float scale = a_.scale != 0.0f ? a_.scale : 1.0f / std::sqrt(float(D));
    const int64_t group = Hq / Hkv;
    float* y = out->data<float>();
    // One task per (batch, query head): the scores of its S rows over at most T keys.
    const double work = double(B * Hq) * double(S) * double(T) * double(D);
    const size_t pieces = parallel_pieces(work, double(1 << 17));
    const size_t tasks = size_t(B * Hq), per_piece = (tasks + pieces - 1) / pieces;
    const bool by_products = S >= kProductQueries;
    parallel_for(pieces, [&](size_t piece) {
      float* scores = thread_scratch<float>(
          by_products ? size_t(kQueryBlock * (D + T)) : size_t(T) + size_t(D), 2);
      float* q = scores + T;
      for (size_t task = piece * per_piece; task < std::min(tasks, (piece + 1) * per_piece);
           ++task) {
        const int64_t b = int64_t(task) / Hq, h = int64_t(task) % Hq, hk = h / group;
        const float* k_rows = pk + (b * Hkv + hk) * T * D;
        const float* v_rows = pv + (b * Hkv + hk) * T * D;
        if (by_products) {
          const HeadTask t{qp + b * S * row + h * D,   row,    k_rows, v_rows,
                           y + b * S * Hq * D + h * D, Hq * D, S,      D,
                           past_len[size_t(b)]};
          attend_by_products(t, a_, scale, scores, [&](float* x, int64_t pos) {
            if (a_.rotary)
              rotate(x, half, a_.rotary_interleaved, cos_t->data<float>() + pos * half,
                     sin_t->data<float>() + pos * half);
          });
          continue;
        }
        for (int64_t i = 0; i < S; ++i) {
          const int64_t pos = past_len[size_t(b)] + i;
          std::memcpy(q, qp + (b * S + i) * row + h * D, size_t(D) * sizeof(float));
          if (a_.rotary)
            rotate(q, half, a_.rotary_interleaved, cos_t->data<float>() + pos * half,
                   sin_t->data<float>() + pos * half);
          const int64_t last = pos;
          const int64_t first =
              a_.local_window > 0 ? std::max<int64_t>(0, pos - a_.local_window + 1) : 0;
          float* o = y + (b * S + i) * Hq * D + h * D;
          const AttendRow one{first, last, scale, a_.softcap, a_.smooth_softmax};
          if (attend_row_avx512(q, k_rows, v_rows, D, one, scores, o)) continue;
          float max = -std::numeric_limits<float>::infinity();
          for (int64_t j = first; j <= last; ++j) {
            float s = attention_dot(q, k_rows + j * D, D) * scale;
            if (a_.softcap > 0.0f) s = a_.softcap * std::tanh(s / a_.softcap);
            scores[j] = s;
            max = std::max(max, s);
          }
          // Smooth softmax adds an exp(0) term to the denominator (a virtual sink at 0).
          if (a_.smooth_softmax) max = std::max(max, 0.0f);
          attend_values(scores, first, last, max, a_.smooth_softmax ? std::exp(-max) : 0.0f, v_rows,
                        D, o);
        }
      }
    });
    return Status();
  }

 private:
  GqaAttrs a_;
  bool want_present_[2];
};

}  // namespace

Expected<KernelPtr> create_group_query_attention(KernelInit& init) {
  AttrReader attrs(init.node);
  GqaAttrs a;
  a.q_heads = attrs.get_int("num_heads", 0);
  a.kv_heads = attrs.get_int("kv_num_heads", 0);
  a.scale = attrs.get_float("scale", 0.0f);
  a.softcap = attrs.get_float("softcap", 0.0f);
  a.local_window = attrs.get_int("local_window_size", -1);
  a.rotary = attrs.get_int("do_rotary", 0) != 0;
  a.rotary_interleaved = attrs.get_int("rotary_interleaved", 0) != 0;
  a.smooth_softmax = attrs.get_int("smooth_softmax", 0) != 0;
  NXRT_RETURN_IF_ERROR(attrs.status());
  if (a.q_heads <= 0 || a.kv_heads <= 0 || a.q_heads % a.kv_heads != 0)
    return init.error(StatusCode::kInvalidGraph, "num_heads (", a.q_heads,
                      ") must be a positive multiple of kv_num_heads (", a.kv_heads, ")");
  if (a.softcap < 0.0f)
    return init.error(StatusCode::kInvalidGraph, "softcap must not be negative");
  if (init.input_type(0) != DataType::kFloat) return init.unsupported_type(0);
  for (size_t i : {1, 2, 3, 4, 7, 8})
    if (init.has_input(i) && init.input_type(i) != DataType::kFloat)
      return init.error(StatusCode::kInvalidGraph, "input ", i, " has type ",
                        dtype_name(init.input_type(i)), ", expected float");
  for (size_t i : {5, 6})
    if (!init.has_input(i) || init.input_type(i) != DataType::kInt32)
      return init.error(StatusCode::kInvalidGraph, "input ", i,
                        " (seqlens_k / total_sequence_length) must be int32");
  init.set_all_outputs(DataType::kFloat);
  return make_kernel<GroupQueryAttentionKernel>(a, output_wanted(init, 1), output_wanted(init, 2));
}

}  // namespace nxrt::cpu
