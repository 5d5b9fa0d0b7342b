// com.microsoft NGramRepeatBlock(input_ids, scores), attribute ngram_size = n: a beam
// search step's no-repeat-n-gram rule. For each sequence b, every earlier n-gram of
// input_ids[b] whose first n - 1 tokens equal the sequence's last n - 1 tokens bans its
// last token: scores_out[b, token] = -inf (with n = 1, every token seen is banned).
// input_ids [batch, sequence] int64, scores [batch, vocab] float; a banned token outside
// [0, vocab) is an error, as in onnxruntime (tokens never banned are not checked).
#include <algorithm>
#include <cstring>
#include <limits>

#include "ep/cpu/kernels/common.h"
#include "ops/attrs.h"

namespace nxrt::cpu {
namespace {

class NGramRepeatBlockKernel final : public Kernel {
 public:
  explicit NGramRepeatBlockKernel(int64_t n) : n_(n) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor& ids = *ctx.input(0);
    const Tensor& scores = *ctx.input(1);
    if (ids.rank() != 2)
      return invalid_argument("input_ids must be [batch, sequence], got ", ids.shape().to_string());
    if (scores.rank() != 2 || scores.shape()[0] != ids.shape()[0])
      return invalid_argument("scores has shape ", scores.shape().to_string(), "; expected [",
                              ids.shape()[0], ", vocab] (input_ids' batch)");
    const int64_t batch = ids.shape()[0], seq = ids.shape()[1], vocab = scores.shape()[1];
    NXRT_ASSIGN_OR_RETURN(Tensor * out, ctx.output(0, scores.shape()));
    if (scores.numel() > 0)
      std::memcpy(out->data<float>(), scores.data<float>(), size_t(scores.numel()) * sizeof(float));
    if (seq + 1 < n_) return Status();  // no n-gram ends at the next token yet
    const int64_t* pid = ids.data<int64_t>();
    float* po = out->data<float>();
    const int64_t prefix = n_ - 1;  // tokens an n-gram shares with the sequence's end
    for (int64_t b = 0; b < batch; ++b) {
      const int64_t* row = pid + b * seq;
      const int64_t* tail = row + seq - prefix;
      for (int64_t i = 0; i + prefix < seq; ++i) {
        if (!std::equal(row + i, row + i + prefix, tail)) continue;
        const int64_t token = row[i + prefix];
        if (token < 0 || token >= vocab)
          return invalid_argument("input_ids[", b, ", ", i + prefix, "] = ", token,
                                  " would be banned but is outside scores' vocabulary of ", vocab);
        po[b * vocab + token] = -std::numeric_limits<float>::infinity();
      }
    }
    return Status();
  }

 private:
  int64_t n_;
};

}  // namespace

Expected<KernelPtr> create_ngram_repeat_block(KernelInit& init) {
  if (init.input_type(0) != DataType::kInt64) return init.unsupported_type(0);
  if (init.input_type(1) != DataType::kFloat) return init.unsupported_type(1);
  AttrReader attrs(init.node);
  const int64_t n = attrs.require_int("ngram_size");
  NXRT_RETURN_IF_ERROR(attrs.status());
  if (n <= 0) return init.error(StatusCode::kInvalidGraph, "ngram_size must be positive, got ", n);
  init.set_all_outputs(DataType::kFloat);
  return make_kernel<NGramRepeatBlockKernel>(n);
}

}  // namespace nxrt::cpu
