// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss. Both gather -logp[n, target, d]
// over [N, C, D...] inputs, weight it per class, and reduce (none / sum / mean, where a
// weighted mean divides by the sum of the gathered weights, as the ONNX reference does).
#include <cmath>
#include <optional>

#include "ep/cpu/kernels/common.h"

namespace nxrt::cpu {
namespace {

enum class Reduction { kNone, kSum, kMean };

struct LossAttrs {
  Reduction reduction = Reduction::kMean;
  std::optional<int64_t> ignore_index;
};

Expected<LossAttrs> read_loss_attrs(KernelInit& init) {
  AttrReader attrs(init.node);
  LossAttrs out;
  const std::string reduction = attrs.get_string("reduction", "mean");
  if (attrs.has("ignore_index")) out.ignore_index = attrs.get_int("ignore_index", 0);
  NXRT_RETURN_IF_ERROR(attrs.status());
  if (reduction == "none")
    out.reduction = Reduction::kNone;
  else if (reduction == "sum")
    out.reduction = Reduction::kSum;
  else if (reduction == "mean")
    out.reduction = Reduction::kMean;
  else
    return init.error(StatusCode::kInvalidGraph, "reduction '", reduction,
                      "' is not none, sum or mean");
  return out;
}

template <typename T>
int64_t target_at(const Tensor& t, int64_t i) {
  return int64_t(t.data<T>()[i]);
}

// logp: [N, C, D] in double; returns the loss tensor in `out` (typed T).
template <typename T>
Status reduce_loss(KernelContext& ctx, const std::vector<double>& logp, int64_t n, int64_t c,
                   int64_t d, const Tensor& target, const Tensor* weight, const LossAttrs& attrs) {
  std::vector<double> loss(size_t(n * d), 0.0);
  std::vector<double> gathered(size_t(n * d), 1.0);
  const bool has_weights = weight || attrs.ignore_index.has_value();
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t k = 0; k < d; ++k) {
      const int64_t idx = i * d + k;
      const int64_t cls = target.dtype() == DataType::kInt64 ? target_at<int64_t>(target, idx)
                                                             : target_at<int32_t>(target, idx);
      if (attrs.ignore_index && cls == *attrs.ignore_index) {
        gathered[size_t(idx)] = 0.0;
        continue;
      }
      if (cls < 0 || cls >= c)
        return invalid_argument("target value ", cls, " at position ", idx,
                                " is outside the class range [0, ", c, ")");
      const double w = weight ? double(float(weight->data<T>()[cls])) : 1.0;
      gathered[size_t(idx)] = w;
      loss[size_t(idx)] = -logp[size_t((i * c + cls) * d + k)] * w;
    }
  }
  if (attrs.reduction == Reduction::kNone) {
    NXRT_ASSIGN_OR_RETURN(Tensor * out, ctx.output(0, target.shape()));
    for (size_t i = 0; i < loss.size(); ++i) out->data<T>()[i] = T(float(loss[i]));
    return Status();
  }
  double total = 0, weights = 0;
  for (size_t i = 0; i < loss.size(); ++i) {
    total += loss[i];
    weights += gathered[i];
  }
  if (attrs.reduction == Reduction::kMean)
    total = has_weights ? total / weights : total / double(loss.size());
  NXRT_ASSIGN_OR_RETURN(Tensor * out, ctx.output(0, Shape{}));
  *out->data<T>() = T(float(total));
  return Status();
}

template <typename T>
void widen(const Tensor& t, std::vector<double>& out) {
  out.resize(size_t(t.numel()));
  for (size_t i = 0; i < out.size(); ++i) out[i] = double(float(t.data<T>()[i]));
}
template <>
void widen<double>(const Tensor& t, std::vector<double>& out) {
  out.assign(t.data<double>(), t.data<double>() + t.numel());
}

Status check_shapes(const Tensor& x, const Tensor& target, int64_t& n, int64_t& c, int64_t& d) {
  if (x.rank() < 2)
    return invalid_argument("input must have rank >= 2, got ", x.shape().to_string());
  n = x.shape()[0];
  c = x.shape()[1];
  d = x.shape().product(2, x.rank());
  bool ok = target.rank() + 1 == x.rank() && target.shape()[0] == n;
  for (size_t k = 2; ok && k < x.rank(); ++k) ok = target.shape()[k - 1] == x.shape()[k];
  if (!ok)
    return invalid_argument("target shape ", target.shape().to_string(),
                            " does not match input shape ", x.shape().to_string(),
                            " (expected [N, d1, ...])");
  return Status();
}

class NllLossKernel final : public Kernel {
 public:
  NllLossKernel(DataType dtype, LossAttrs attrs) : dtype_(dtype), attrs_(attrs) {}
  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    const Tensor& target = *ctx.input(1);
    int64_t n, c, d;
    NXRT_RETURN_IF_ERROR(check_shapes(x, target, n, c, d));
    std::vector<double> logp;
    switch (dtype_) {
      NXRT_CASES_FLOAT(widen<T>(x, logp);
                       return reduce_loss<T>(ctx, logp, n, c, d, target, ctx.input(2), attrs_))
      default:
        break;
    }
    return not_implemented("input 0 has unsupported type ", tensor_type_name(dtype_));
  }

 private:
  DataType dtype_;
  LossAttrs attrs_;
};

class SoftmaxCrossEntropyKernel final : public Kernel {
 public:
  SoftmaxCrossEntropyKernel(DataType dtype, LossAttrs attrs) : dtype_(dtype), attrs_(attrs) {}
  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    const Tensor& target = *ctx.input(1);
    int64_t n, c, d;
    NXRT_RETURN_IF_ERROR(check_shapes(x, target, n, c, d));
    std::vector<double> logp;
    switch (dtype_) {
      NXRT_CASES_FLOAT(widen<T>(x, logp))
      default:
        return not_implemented("input 0 has unsupported type ", tensor_type_name(dtype_));
    }
    // log-softmax over the class axis (stride d), stabilised by the max.
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t k = 0; k < d; ++k) {
        double* base = logp.data() + i * c * d + k;
        double max = base[0];
        for (int64_t j = 1; j < c; ++j) max = std::max(max, base[j * d]);
        double sum = 0;
        for (int64_t j = 0; j < c; ++j) sum += std::exp(base[j * d] - max);
        const double log_sum = std::log(sum) + max;
        for (int64_t j = 0; j < c; ++j) base[j * d] -= log_sum;
      }
    }
    switch (dtype_) {
      NXRT_CASES_FLOAT({
        if (ctx.num_outputs() > 1) {
          NXRT_ASSIGN_OR_RETURN(Tensor * log_prob, ctx.output(1, x.shape()));
          for (size_t i = 0; i < logp.size(); ++i) log_prob->data<T>()[i] = T(float(logp[i]));
        }
        return reduce_loss<T>(ctx, logp, n, c, d, target, ctx.input(2), attrs_);
      })
      default:
        break;
    }
    return not_implemented("input 0 has unsupported type ", tensor_type_name(dtype_));
  }

 private:
  DataType dtype_;
  LossAttrs attrs_;
};

template <typename K>
Expected<KernelPtr> create_loss(KernelInit& init) {
  const DataType t = init.input_type(0);
  if (!is_float_type(t)) return init.unsupported_type(0);
  const DataType target = init.input_type(1);
  if (target != DataType::kInt64 && target != DataType::kInt32) return init.unsupported_type(1);
  if (init.has_input(2) && init.input_type(2) != t)
    return init.error(StatusCode::kInvalidGraph, "weight must have the input's type");
  NXRT_ASSIGN_OR_RETURN(LossAttrs attrs, read_loss_attrs(init));
  init.set_all_outputs(t);
  return make_kernel<K>(t, attrs);
}

}  // namespace

Expected<KernelPtr> create_negative_log_likelihood_loss(KernelInit& init) {
  return create_loss<NllLossKernel>(init);
}
Expected<KernelPtr> create_softmax_cross_entropy_loss(KernelInit& init) {
  return create_loss<SoftmaxCrossEntropyKernel>(init);
}

}  // namespace nxrt::cpu
