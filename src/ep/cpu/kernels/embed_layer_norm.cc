// com.microsoft EmbedLayerNormalization, BERT's embedding layer in one op:
//   sum[b, s] = word_embedding[input_ids[b, s]] + position_embedding[position]
//               (+ segment_embedding[segment_ids[b, s]])
//   output[b, s] = LayerNormalization(sum[b, s]) * gamma + beta   (over the hidden dim)
// position is position_ids[b, s] (or [0, s] when position_ids is [1, S]), else s. With
// segment_embedding but no segment_ids every token takes segment 0, as in onnxruntime.
// Outputs: output [B, S, H]; mask_index [B] (int32), the number of mask values equal to
// 1 in each sequence (0 without a mask), as onnxruntime's CPU kernel counts them; and
// embedding_sum [B, S, H], the sum before normalization. float or float16 embeddings
// (float16 is computed in float and rounded once); int32 ids. An id outside its table is
// an error naming the input and the position.
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "ep/cpu/kernels/common.h"
#include "ops/attrs.h"

namespace nxrt::cpu {
namespace {

enum Input : size_t {
  kIds,
  kSegmentIds,
  kWord,
  kPosition,
  kSegment,
  kGamma,
  kBeta,
  kMask,
  kPositionIds,
};

// Checks that every id of `ids` lies in [0, rows) of `table`.
Status check_ids(const Tensor& ids, int64_t rows, const char* what, const char* table) {
  const int32_t* p = ids.data<int32_t>();
  const int64_t cols = ids.rank() == 2 ? ids.shape()[1] : 1;
  for (int64_t i = 0; i < ids.numel(); ++i)
    if (p[i] < 0 || p[i] >= rows)
      return invalid_argument(what, "[", i / cols, ", ", i % cols, "] = ", p[i], " is outside ",
                              table, "'s ", rows, " rows");
  return Status();
}

class EmbedLayerNormKernel final : public Kernel {
 public:
  EmbedLayerNormKernel(float epsilon, bool want_mask_index, bool want_sum)
      : epsilon_(epsilon), want_mask_index_(want_mask_index), want_sum_(want_sum) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor& ids = *ctx.input(kIds);
    const Tensor* segment_ids = ctx.input(kSegmentIds);
    const Tensor& word = *ctx.input(kWord);
    const Tensor& position = *ctx.input(kPosition);
    const Tensor* segment = ctx.input(kSegment);
    const Tensor& gamma = *ctx.input(kGamma);
    const Tensor& beta = *ctx.input(kBeta);
    const Tensor* mask = ctx.input(kMask);
    const Tensor* position_ids = ctx.input(kPositionIds);
    if (ids.rank() != 2)
      return invalid_argument("input_ids must be [batch, sequence], got ", ids.shape().to_string());
    const int64_t B = ids.shape()[0], S = ids.shape()[1];
    if (word.rank() != 2)
      return invalid_argument("word_embedding must be [vocab, hidden], got ",
                              word.shape().to_string());
    const int64_t H = word.shape()[1];
    if (position.rank() != 2 || position.shape()[1] != H)
      return invalid_argument("position_embedding has shape ", position.shape().to_string(),
                              "; expected [positions, ", H, "] (word_embedding's hidden size)");
    if (segment && (segment->rank() != 2 || segment->shape()[1] != H))
      return invalid_argument("segment_embedding has shape ", segment->shape().to_string(),
                              "; expected [segments, ", H, "] (word_embedding's hidden size)");
    if (gamma.numel() != H)
      return invalid_argument("gamma has ", gamma.numel(), " values; expected the hidden size ", H);
    if (beta.numel() != H)
      return invalid_argument("beta has ", beta.numel(), " values; expected the hidden size ", H);
    for (const auto& [t, what] : {std::pair{segment_ids, "segment_ids"}, std::pair{mask, "mask"}})
      if (t && t->shape() != ids.shape())
        return invalid_argument(what, " has shape ", t->shape().to_string(),
                                "; expected input_ids' ", ids.shape().to_string());
    if (segment_ids && !segment)
      return invalid_argument("segment_ids needs segment_embedding, which is missing");
    if (position_ids && (position_ids->rank() != 2 || position_ids->shape()[1] != S ||
                         (position_ids->shape()[0] != B && position_ids->shape()[0] != 1)))
      return invalid_argument("position_ids has shape ", position_ids->shape().to_string(),
                              "; expected [", B, ", ", S, "] or [1, ", S, "]");
    NXRT_RETURN_IF_ERROR(check_ids(ids, word.shape()[0], "input_ids", "word_embedding"));
    if (segment_ids)
      NXRT_RETURN_IF_ERROR(
          check_ids(*segment_ids, segment->shape()[0], "segment_ids", "segment_embedding"));
    if (segment && !segment_ids && segment->shape()[0] < 1 && B * S > 0)
      return invalid_argument("segment_embedding has no rows for the default segment 0");
    if (position_ids) {
      NXRT_RETURN_IF_ERROR(
          check_ids(*position_ids, position.shape()[0], "position_ids", "position_embedding"));
    } else if (S > position.shape()[0]) {
      return invalid_argument("sequence length ", S, " exceeds position_embedding's ",
                              position.shape()[0], " rows (and no position_ids were given)");
    }

    NXRT_ASSIGN_OR_RETURN(Tensor * out, ctx.output(0, Shape{B, S, H}));
    if (want_mask_index_) {
      NXRT_ASSIGN_OR_RETURN(Tensor * mask_index, ctx.output(1, Shape{B}));
      int32_t* pm = mask_index->data<int32_t>();
      for (int64_t b = 0; b < B; ++b) {
        int32_t count = 0;
        if (mask)
          for (int64_t s = 0; s < S; ++s) count += mask->data<int32_t>()[b * S + s] == 1;
        pm[b] = count;
      }
    }
    Tensor* sum = nullptr;
    if (want_sum_) {
      NXRT_ASSIGN_OR_RETURN(sum, ctx.output(2, Shape{B, S, H}));
    }
    if (B * S == 0 || H == 0) return Status();
    const Tables t{ids.data<int32_t>(),
                   segment_ids ? segment_ids->data<int32_t>() : nullptr,
                   position_ids ? position_ids->data<int32_t>() : nullptr,
                   position_ids && position_ids->shape()[0] == 1,
                   segment != nullptr,
                   S,
                   H};
    if (word.dtype() == DataType::kFloat16)
      run<Float16>(t, word, position, segment, gamma, beta, *out, sum);
    else
      run<float>(t, word, position, segment, gamma, beta, *out, sum);
    return Status();
  }

 private:
  struct Tables {
    const int32_t* ids;
    const int32_t* segment_ids;   // null: segment 0 (when there is a segment table)
    const int32_t* position_ids;  // null: the token's index
    bool shared_positions;        // position_ids is [1, S]
    bool has_segment;
    int64_t S, H;
  };

  template <typename T>
  void run(const Tables& t, const Tensor& word, const Tensor& position, const Tensor* segment,
           const Tensor& gamma, const Tensor& beta, Tensor& out, Tensor* sum) const {
    const T* pw = word.data<T>();
    const T* pp = position.data<T>();
    const T* ps = segment ? segment->data<T>() : nullptr;
    const T* pg = gamma.data<T>();
    const T* pb = beta.data<T>();
    T* po = out.data<T>();
    T* psum = sum ? sum->data<T>() : nullptr;
    const int64_t H = t.H, rows = out.numel() / H;
    const size_t pieces =
        std::min(parallel_pieces(double(rows * H) * 6, double(1 << 18)), size_t(rows));
    parallel_for(pieces, [&](size_t piece) {
      float* e = thread_scratch<float>(size_t(H));
      for (int64_t r = rows * int64_t(piece) / int64_t(pieces);
           r < rows * int64_t(piece + 1) / int64_t(pieces); ++r) {
        const int64_t s = r % t.S;
        const int64_t pos = !t.position_ids      ? s
                            : t.shared_positions ? t.position_ids[s]
                                                 : t.position_ids[r];
        const T* w_row = pw + int64_t(t.ids[r]) * H;
        const T* p_row = pp + pos * H;
        const T* s_row = t.has_segment ? ps + (t.segment_ids ? t.segment_ids[r] : 0) * H : nullptr;
        double total = 0.0;
        for (int64_t j = 0; j < H; ++j) {
          float v = float(w_row[j]) + float(p_row[j]);
          if (s_row) v += float(s_row[j]);
          e[j] = v;
          total += v;
        }
        if (psum)
          for (int64_t j = 0; j < H; ++j) psum[r * H + j] = narrow<T>(e[j]);
        const double mean = total / double(H);
        double sq = 0.0;
        for (int64_t j = 0; j < H; ++j) sq += (e[j] - mean) * (e[j] - mean);
        const double inv = 1.0 / std::sqrt(sq / double(H) + double(epsilon_));
        T* o = po + r * H;
        for (int64_t j = 0; j < H; ++j)
          o[j] = narrow<T>(float((e[j] - mean) * inv) * float(pg[j]) + float(pb[j]));
      }
    });
  }

  float epsilon_;
  bool want_mask_index_, want_sum_;
};

bool named_output(const KernelInit& init, size_t i) {
  return i < init.node.outputs.size() && !init.node.outputs[i].empty();
}

}  // namespace

Expected<KernelPtr> create_embed_layer_normalization(KernelInit& init) {
  const DataType t = init.input_type(kWord);
  if (t != DataType::kFloat && t != DataType::kFloat16) return init.unsupported_type(kWord);
  for (size_t i : {kIds, kSegmentIds, kMask, kPositionIds})
    if ((i == kIds || init.has_input(i)) && init.input_type(i) != DataType::kInt32)
      return init.unsupported_type(i);
  for (size_t i : {kPosition, kSegment, kGamma, kBeta}) {
    if (i == kSegment && !init.has_input(i)) continue;
    if (!init.has_input(i))
      return init.error(StatusCode::kInvalidGraph, "input ", i,
                        i == kPosition ? " (position_embedding)"
                        : i == kGamma  ? " (gamma)"
                                       : " (beta)",
                        " is required");
    if (init.input_type(i) != t)
      return init.error(StatusCode::kInvalidGraph, "input ", i, " has type ",
                        tensor_type_name(init.input_type(i)), "; expected word_embedding's ",
                        tensor_type_name(t));
  }
  AttrReader attrs(init.node);
  const float epsilon = attrs.get_float("epsilon", 1e-12f);
  const int64_t mask_index_type = attrs.get_int("mask_index_type", 1);
  NXRT_RETURN_IF_ERROR(attrs.status());
  if (mask_index_type != 0 && mask_index_type != 1)
    return init.error(StatusCode::kNotImplemented, "mask_index_type ", mask_index_type,
                      " is not supported (0 or 1)");
  for (size_t i = 0; i < init.output_types.size(); ++i)
    init.output_types[i] = i == 1 ? DataType::kInt32 : t;
  return make_kernel<EmbedLayerNormKernel>(epsilon, named_output(init, 1), named_output(init, 2));
}

}  // namespace nxrt::cpu
