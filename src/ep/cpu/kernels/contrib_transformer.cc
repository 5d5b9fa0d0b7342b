// onnxruntime's com.microsoft transformer ops that its optimizer writes into saved
// models: FastGelu and BiasGelu (Gelu's tanh and exact forms after a bias), BiasAdd,
// BiasSplitGelu, and SkipLayerNormalization / SkipSimplifiedLayerNormalization (a
// residual sum and LayerNormalization or RMS normalization over the last dim in one
// pass). float only.
#include <cmath>
#include <vector>

#include "ep/cpu/kernels/common.h"
#include "ep/cpu/vmath/vmath.h"

namespace nxrt::cpu {
namespace {

// Checks that a per-hidden-unit parameter has `hidden` values (a 1-D tensor or any shape
// of that many elements, as onnxruntime accepts).
Status check_hidden(const Tensor* t, int64_t hidden, const char* what) {
  if (t && t->numel() != hidden)
    return invalid_argument(what, " has ", t->numel(), " values; expected ", hidden,
                            " (the input's last dim)");
  return Status();
}

// Runs fn(r) for rows r < rows, split across the run's threads when `work` (about the
// operations in all) is large.
template <typename Fn>
void for_rows(int64_t rows, int64_t work, Fn&& fn) {
  if (rows <= 0) return;
  const size_t pieces = std::min(parallel_pieces(double(work), double(1 << 18)), size_t(rows));
  parallel_for(pieces, [&](size_t piece) {
    for (int64_t r = rows * int64_t(piece) / int64_t(pieces);
         r < rows * int64_t(piece + 1) / int64_t(pieces); ++r)
      fn(r);
  });
}

// FastGelu(X, bias) = 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))) and BiasGelu(X,
// bias) = x Phi(x), x = X + bias, the bias broadcast along X's last dim (optional for
// FastGelu).
class BiasGeluKernel final : public Kernel {
 public:
  explicit BiasGeluKernel(vmath::Unary fn) : fn_(fn) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    const Tensor* bias = ctx.input(1);
    const int64_t hidden = x.rank() == 0 ? 1 : x.shape().back();
    NXRT_RETURN_IF_ERROR(check_hidden(bias, hidden, "bias"));
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, x.shape()));
    const int64_t n = x.numel();
    if (n == 0) return Status();
    const float* px = x.data<float>();
    float* py = y->data<float>();
    if (!bias) {
      vmath::unary(fn_, {}, px, py, size_t(n));
      return Status();
    }
    const float* pb = bias->data<float>();
    for_rows(n / hidden, n * 8, [&](int64_t r) {
      float* out = py + r * hidden;
      const float* in = px + r * hidden;
      for (int64_t j = 0; j < hidden; ++j) out[j] = in[j] + pb[j];
      vmath::unary(fn_, {}, out, out, size_t(hidden));
    });
    return Status();
  }

 private:
  vmath::Unary fn_;
};

// BiasAdd(X, bias, skip) = X + bias + skip: X and skip [N, S, C], bias [C].
class BiasAddKernel final : public Kernel {
 public:
  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    const Tensor& bias = *ctx.input(1);
    const Tensor& skip = *ctx.input(2);
    if (x.rank() != 3) return invalid_argument("X must be [N, S, C], got ", x.shape().to_string());
    const int64_t hidden = x.shape().back();
    NXRT_RETURN_IF_ERROR(check_hidden(&bias, hidden, "bias"));
    if (skip.shape() != x.shape())
      return invalid_argument("skip has shape ", skip.shape().to_string(), "; expected X's ",
                              x.shape().to_string());
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, x.shape()));
    const float* px = x.data<float>();
    const float* pb = bias.data<float>();
    const float* ps = skip.data<float>();
    float* py = y->data<float>();
    for_rows(hidden > 0 ? x.numel() / hidden : 0, x.numel(), [&](int64_t r) {
      for (int64_t j = r * hidden; j < (r + 1) * hidden; ++j)
        py[j] = px[j] + pb[j % hidden] + ps[j];
    });
    return Status();
  }
};

// BiasSplitGelu(X, bias) = left * Gelu(right), where left and right are the two halves of
// X + bias along the last dim: X [N, S, 2D], bias [2D], Y [N, S, D] (exact Gelu).
class BiasSplitGeluKernel final : public Kernel {
 public:
  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    const Tensor& bias = *ctx.input(1);
    if (x.rank() != 3 || x.shape().back() % 2 != 0)
      return invalid_argument("X must be [N, S, 2D], got ", x.shape().to_string());
    const int64_t hidden = x.shape().back(), half = hidden / 2;
    NXRT_RETURN_IF_ERROR(check_hidden(&bias, hidden, "bias"));
    Shape out_shape = x.shape();
    out_shape[2] = half;
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, out_shape));
    const float* px = x.data<float>();
    const float* pb = bias.data<float>();
    float* py = y->data<float>();
    for_rows(hidden > 0 ? x.numel() / hidden : 0, x.numel() * 8, [&](int64_t r) {
      const float* in = px + r * hidden;
      float* out = py + r * half;
      for (int64_t j = 0; j < half; ++j) out[j] = in[half + j] + pb[half + j];
      vmath::unary(vmath::Unary::kGelu, {}, out, out, size_t(half));
      for (int64_t j = 0; j < half; ++j) out[j] *= in[j] + pb[j];
    });
    return Status();
  }
};

// SkipLayerNormalization(input, skip, gamma, beta, bias): s = input + skip + bias, then
// LayerNormalization of s over the last dim with gamma and beta. Outputs: the result,
// and optionally the mean and 1 / sqrt(var + epsilon) of each row ([..., 1]) and s
// itself. skip may also be one [S, H] or [1, S, H] block shared by every batch.
// SkipSimplifiedLayerNormalization(input, skip, gamma, bias): the same with RMS
// normalization (no mean subtracted, no beta; its mean output, which onnxruntime
// documents as unused, holds zeros).
class SkipLayerNormKernel final : public Kernel {
 public:
  SkipLayerNormKernel(bool simplified, float epsilon, bool want_mean, bool want_inv, bool want_sum)
      : simplified_(simplified),
        epsilon_(epsilon),
        want_mean_(want_mean),
        want_inv_(want_inv),
        want_sum_(want_sum) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    const Tensor& skip = *ctx.input(1);
    const Tensor& gamma = *ctx.input(2);
    const Tensor* beta = simplified_ ? nullptr : ctx.input(3);
    const Tensor* bias = ctx.input(simplified_ ? 3 : 4);
    if (x.rank() < 1) return invalid_argument("input must have rank >= 1");
    const int64_t hidden = x.shape().back(), n = x.numel();
    const int64_t rows = hidden > 0 ? n / hidden : 0;
    if (skip.numel() == 0 || n % std::max<int64_t>(skip.numel(), 1) != 0 ||
        skip.shape().back() != hidden)
      return invalid_argument("skip has shape ", skip.shape().to_string(),
                              "; expected the input's ", x.shape().to_string(),
                              " or a block of its last dims");
    NXRT_RETURN_IF_ERROR(check_hidden(&gamma, hidden, "gamma"));
    NXRT_RETURN_IF_ERROR(check_hidden(beta, hidden, "beta"));
    NXRT_RETURN_IF_ERROR(check_hidden(bias, hidden, "bias"));
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, x.shape()));
    Shape stat_shape = x.shape();
    stat_shape[stat_shape.size() - 1] = 1;
    Tensor* mean_out = nullptr;
    Tensor* inv_out = nullptr;
    Tensor* sum_out = nullptr;
    if (want_mean_) {
      NXRT_ASSIGN_OR_RETURN(mean_out, ctx.output(1, stat_shape));
    }
    if (want_inv_) {
      NXRT_ASSIGN_OR_RETURN(inv_out, ctx.output(2, stat_shape));
    }
    if (want_sum_) {
      NXRT_ASSIGN_OR_RETURN(sum_out, ctx.output(3, x.shape()));
    }
    if (rows == 0) return Status();
    const float* px = x.data<float>();
    const float* ps = skip.data<float>();
    const int64_t skip_rows = skip.numel() / hidden;
    const float* pg = gamma.data<float>();
    const float* pbeta = beta ? beta->data<float>() : nullptr;
    const float* pbias = bias ? bias->data<float>() : nullptr;
    float* py = y->data<float>();
    for_rows(rows, n * 4, [&](int64_t r) {
      // s goes to the sum output when wanted, else to y, which is then overwritten.
      float* s = sum_out ? sum_out->data<float>() + r * hidden : py + r * hidden;
      const float* in = px + r * hidden;
      const float* sk = ps + (r % skip_rows) * hidden;
      // onnxruntime's float steps in its order (Welford's running mean and sum of squared
      // deviations, one element at a time; a division by the deviation): dynamically
      // quantized encoders (kokoro's ALBERT) turn any last-bit difference into other 8-bit
      // codes downstream, which grow layer by layer.
      float mean = 0.0f, m2 = 0.0f, sum_sq = 0.0f;
      for (int64_t j = 0; j < hidden; ++j) {
        float v = in[j] + sk[j];
        if (pbias) v += pbias[j];
        s[j] = v;
        if (simplified_) {
          sum_sq += v * v;
        } else {
          const float delta = v - mean;
          mean += delta / float(j + 1);
          m2 += delta * (v - mean);
        }
      }
      const float count = float(hidden);
      const float dev = std::sqrt((simplified_ ? sum_sq : m2) / count + epsilon_);
      float* out = py + r * hidden;
      if (simplified_) {
        for (int64_t j = 0; j < hidden; ++j) out[j] = s[j] / dev * pg[j];
      } else if (pbeta) {
        for (int64_t j = 0; j < hidden; ++j) out[j] = (s[j] - mean) / dev * pg[j] + pbeta[j];
      } else {
        for (int64_t j = 0; j < hidden; ++j) out[j] = (s[j] - mean) / dev * pg[j];
      }
      if (mean_out) mean_out->data<float>()[r] = mean;
      if (inv_out) inv_out->data<float>()[r] = 1.0f / dev;
    });
    return Status();
  }

 private:
  bool simplified_;
  float epsilon_;
  bool want_mean_, want_inv_, want_sum_;
};

}  // namespace

namespace {

// Checks that inputs [0, count) are float, those from `optional_from` on only when given.
Status float_inputs(KernelInit& init, size_t count, size_t optional_from) {
  for (size_t i = 0; i < count; ++i) {
    if (i >= optional_from && !init.has_input(i)) continue;
    if (init.input_type(i) != DataType::kFloat) return init.unsupported_type(i);
  }
  init.set_all_outputs(DataType::kFloat);
  return Status();
}

Expected<KernelPtr> create_skip_norm(KernelInit& init, bool simplified) {
  NXRT_RETURN_IF_ERROR(float_inputs(init, simplified ? 4 : 5, 3));  // beta, bias optional
  AttrReader attrs(init.node);
  const float epsilon = attrs.get_float("epsilon", 1e-12f);
  NXRT_RETURN_IF_ERROR(attrs.status());
  return make_kernel<SkipLayerNormKernel>(simplified, epsilon, output_wanted(init, 1),
                                          output_wanted(init, 2), output_wanted(init, 3));
}

}  // namespace

Expected<KernelPtr> create_fast_gelu(KernelInit& init) {
  NXRT_RETURN_IF_ERROR(float_inputs(init, 2, 1));
  return make_kernel<BiasGeluKernel>(vmath::Unary::kGeluTanh);
}

Expected<KernelPtr> create_bias_gelu(KernelInit& init) {
  NXRT_RETURN_IF_ERROR(float_inputs(init, 2, 2));
  return make_kernel<BiasGeluKernel>(vmath::Unary::kGelu);
}

Expected<KernelPtr> create_bias_add(KernelInit& init) {
  NXRT_RETURN_IF_ERROR(float_inputs(init, 3, 3));
  return make_kernel<BiasAddKernel>();
}

Expected<KernelPtr> create_bias_split_gelu(KernelInit& init) {
  NXRT_RETURN_IF_ERROR(float_inputs(init, 2, 2));
  return make_kernel<BiasSplitGeluKernel>();
}

Expected<KernelPtr> create_skip_layer_normalization(KernelInit& init) {
  return create_skip_norm(init, false);
}

Expected<KernelPtr> create_skip_simplified_layer_normalization(KernelInit& init) {
  return create_skip_norm(init, true);
}

}  // namespace nxrt::cpu
