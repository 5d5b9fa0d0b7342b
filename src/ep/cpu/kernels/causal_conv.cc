// CausalConvWithState (opset 27): stateful causal depthwise 1-D convolution with an
// optional fused SiLU, as used by Mamba / Gated DeltaNet decode loops.
//
// Each (batch, channel) row is handled on its own: the carry (past_state or zeros) and
// the new input are laid out once as one contiguous "padded" row in float, so the
// k-tap filter and the present_state tail both read plain contiguous memory.
#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

#include "ep/cpu/kernels/common.h"

namespace nxrt::cpu {
namespace {

template <typename T>
T store(float v) {
  if constexpr (std::is_same_v<T, float>)
    return v;
  else
    return T(v);
}

class CausalConvKernel final : public Kernel {
 public:
  CausalConvKernel(DataType type, bool silu) : type_(type), silu_(silu) {}

  Status compute(KernelContext& ctx) const override {
    switch (type_) {
      NXRT_CASE(kFloat, return run<T>(ctx))
      NXRT_CASE(kFloat16, return run<T>(ctx))
      NXRT_CASE(kBFloat16, return run<T>(ctx))
      default:
        break;
    }
    return not_implemented("CausalConvWithState does not support ", tensor_type_name(type_));
  }

 private:
  template <typename T>
  Status run(KernelContext& ctx) const {
    const Tensor& x = *ctx.input(0);
    const Tensor& w = *ctx.input(1);
    const Tensor* bias = ctx.input(2);
    const Tensor* past = ctx.input(3);
    if (x.rank() != 3)
      return invalid_argument("input must be rank 3 (batch, channels, length), got shape ",
                              x.shape().to_string());
    const int64_t B = x.shape()[0], C = x.shape()[1], L = x.shape()[2];
    if (w.rank() != 3 || w.shape()[0] != C || w.shape()[1] != 1 || w.shape()[2] < 1)
      return invalid_argument("weight must have shape (", C, ", 1, k) with k >= 1, got ",
                              w.shape().to_string());
    const int64_t K = w.shape()[2];
    const int64_t carry = K - 1;
    if (bias && (bias->rank() != 1 || bias->shape()[0] != C))
      return invalid_argument("bias must have shape (", C, "), got ", bias->shape().to_string());
    if (past && (past->rank() != 3 || past->shape()[0] != B || past->shape()[1] != C ||
                 past->shape()[2] != carry))
      return invalid_argument("past_state must have shape (", B, ", ", C, ", ", carry, "), got ",
                              past->shape().to_string());

    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, Shape{B, C, L}));
    Tensor* present = nullptr;
    if (ctx.num_outputs() > 1) {
      NXRT_ASSIGN_OR_RETURN(present, ctx.output(1, Shape{B, C, carry}));
    }

    const T* xp = x.data<T>();
    const T* wp = w.data<T>();
    const T* bp = bias ? bias->data<T>() : nullptr;
    const T* pp = past ? past->data<T>() : nullptr;
    T* yp = y->data<T>();
    T* sp = present ? present->data<T>() : nullptr;

    const int64_t padded_len = carry + L;
    std::vector<float> row(static_cast<size_t>(padded_len)), taps(static_cast<size_t>(K));
    for (int64_t b = 0; b < B; ++b) {
      for (int64_t c = 0; c < C; ++c) {
        const int64_t bc = b * C + c;
        for (int64_t j = 0; j < carry; ++j) row[size_t(j)] = pp ? float(pp[bc * carry + j]) : 0.0f;
        for (int64_t t = 0; t < L; ++t) row[size_t(carry + t)] = float(xp[bc * L + t]);
        for (int64_t j = 0; j < K; ++j) taps[size_t(j)] = float(wp[c * K + j]);
        const float b0 = bp ? float(bp[c]) : 0.0f;
        T* out = yp + bc * L;
        for (int64_t t = 0; t < L; ++t) {
          const float* win = &row[size_t(t)];
          float acc = b0;
          for (int64_t j = 0; j < K; ++j) acc += taps[size_t(j)] * win[j];
          if (silu_) {
            // The activation sees the convolution already rounded to the storage type,
            // as the unfused Conv -> Sigmoid -> Mul graph would.
            const float r = float(store<T>(acc));
            acc = r / (1.0f + std::exp(-r));
          }
          out[t] = store<T>(acc);
        }
        if (sp) {
          // The carry is the tail of the padded row: raw values, never convolved.
          T* dst = sp + bc * carry;
          for (int64_t j = 0; j < carry; ++j)
            dst[j] = store<T>(row[size_t(padded_len - carry + j)]);
        }
      }
    }
    return Status();
  }

  DataType type_;
  bool silu_;
};

}  // namespace

Expected<KernelPtr> create_causal_conv_with_state(KernelInit& init) {
  AttrReader attrs(init.node);
  const std::string activation = attrs.get_string("activation", "none");
  NXRT_RETURN_IF_ERROR(attrs.status());
  if (activation != "none" && activation != "silu" && activation != "swish")
    return init.error(StatusCode::kInvalidGraph, "activation '", activation,
                      "' is not one of 'none', 'silu', 'swish'");
  if (init.num_inputs() < 2 || !init.has_input(0) || !init.has_input(1))
    return init.error(StatusCode::kInvalidGraph, "needs the input and weight inputs");
  const DataType t = init.input_type(0);
  if (t != DataType::kFloat && t != DataType::kFloat16 && t != DataType::kBFloat16)
    return init.unsupported_type(0);
  for (size_t i = 1; i < 4; ++i)
    if (init.has_input(i) && init.input_type(i) != t)
      return init.error(StatusCode::kInvalidGraph, "input ", i, " has type ",
                        tensor_type_name(init.input_type(i)), ", expected ", tensor_type_name(t));
  init.set_all_outputs(t);
  return make_kernel<CausalConvKernel>(t, activation != "none");
}

}  // namespace nxrt::cpu
