// Normalizations with their own access patterns: BatchNormalization (per channel, from
// given or batch statistics), LRN (across neighbouring channels), LpNormalization
// (along one axis) and MeanVarianceNormalization (over arbitrary axes).
// Float16/bfloat16 compute in float, double in double.
#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "ep/cpu/kernels/common.h"
#include "ep/cpu/kernels/reduce_plan.h"

namespace nxrt::cpu {
namespace {

// t's values as A into out (t.numel() of them).
template <typename A>
Status load_values(const Tensor& t, A* out, const char* what) {
  switch (t.dtype()) {
    NXRT_CASES_FLOAT({
      const T* p = t.data<T>();
      for (size_t i = 0; i < size_t(t.numel()); ++i) {
        if constexpr (std::is_same_v<T, double> || std::is_same_v<T, float>)
          out[i] = A(p[i]);
        else
          out[i] = A(float(p[i]));
      }
    })
    default:
      return invalid_argument(what, " has type ", tensor_type_name(t.dtype()),
                              ", not a float type");
  }
  return Status();
}

template <typename A>
Status store_values(const std::vector<A>& v, Tensor& t) {
  switch (t.dtype()) {
    NXRT_CASES_FLOAT({
      T* p = t.data<T>();
      for (size_t i = 0; i < v.size(); ++i) p[i] = narrow<T>(v[i]);
    })
    default:
      return not_implemented("type ", tensor_type_name(t.dtype()), " is not supported");
  }
  return Status();
}

// ---- BatchNormalization ----

// Inference: y = x * a + b per channel (or per feature before opset 9 with spatial=0),
// with a = scale / sqrt(var + eps) and b = bias - mean * a folded once per run.
// Training: the statistics come from the batch, and the running statistics are blended
// with momentum into the extra outputs.
class BatchNormKernel final : public Kernel {
 public:
  BatchNormKernel(DataType dtype, float epsilon, float momentum, bool training, bool spatial,
                  bool legacy_outputs)
      : dtype_(dtype),
        epsilon_(epsilon),
        momentum_(momentum),
        training_(training),
        spatial_(spatial),
        legacy_outputs_(legacy_outputs) {}

  Status compute(KernelContext& ctx) const override {
    if (dtype_ == DataType::kDouble) return run<double>(ctx);
    return run<float>(ctx);
  }

 private:
  template <typename A>
  Status run(KernelContext& ctx) const {
    const Tensor& x = *ctx.input(0);
    const Shape& s = x.shape();
    if (s.size() < 2) return invalid_argument("input must be [N, C, ...], got ", s.to_string());
    const int64_t n = s[0], c = s[1];
    const int64_t spatial = s.product(2, s.size());
    // Per-channel parameters normally; spatial=0 (opset < 9) gives one per feature.
    const int64_t params = spatial_ || training_ ? c : c * spatial;
    const int64_t run_len = spatial_ || training_ ? spatial : 1;
    const Tensor* in[4] = {ctx.input(1), ctx.input(2), ctx.input(3), ctx.input(4)};
    for (const Tensor* t : in)
      if (t->numel() != params)
        return invalid_argument("scale, B, mean and var need ", params, " values each for input ",
                                s.to_string(), ", got ", in[0]->numel(), ", ", in[1]->numel(), ", ",
                                in[2]->numel(), ", ", in[3]->numel());
    // The parameters and the folded a, b in this thread's scratch: a warm run of inference
    // does not allocate.
    A* values = thread_scratch<A>(size_t(6 * params), 0);
    A *scale = values, *bias = values + params, *mean = values + 2 * params;
    A *var = values + 3 * params, *a = values + 4 * params, *b = values + 5 * params;
    NXRT_RETURN_IF_ERROR(load_values(*in[0], scale, "scale"));
    NXRT_RETURN_IF_ERROR(load_values(*in[1], bias, "B"));
    NXRT_RETURN_IF_ERROR(load_values(*in[2], mean, "input_mean"));
    NXRT_RETURN_IF_ERROR(load_values(*in[3], var, "input_var"));
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, s));
    std::vector<A> batch_mean, batch_var;
    if (training_) {
      batch_stats(x, n, c, spatial, batch_mean, batch_var);
      NXRT_RETURN_IF_ERROR(write_training_outputs(ctx, mean, var, batch_mean, batch_var));
    }
    const A* use_mean = training_ ? batch_mean.data() : mean;
    const A* use_var = training_ ? batch_var.data() : var;
    for (size_t i = 0; i < size_t(params); ++i) {
      a[i] = scale[i] / std::sqrt(use_var[i] + A(epsilon_));
      b[i] = bias[i] - use_mean[i] * a[i];
    }
    switch (dtype_) {
      NXRT_CASES_FLOAT({
        const T* px = x.data<T>();
        T* py = y->data<T>();
        // Planes (image, parameter) in blocks over the run's threads (memory-bound).
        const int64_t planes = n * params;
        if (planes == 0) return Status();
        const int64_t pieces = std::min<int64_t>(
            int64_t(parallel_pieces(double(planes * run_len), double(1 << 16))), planes);
        const int64_t per_piece = (planes + pieces - 1) / pieces;
        parallel_for(size_t(pieces), [&](size_t piece) {
          const int64_t q1 = std::min(planes, int64_t(piece + 1) * per_piece);
          for (int64_t q = int64_t(piece) * per_piece; q < q1; ++q) {
            const A ap = a[size_t(q % params)], bp = b[size_t(q % params)];
            const int64_t off = q * run_len;
            for (int64_t i = 0; i < run_len; ++i) py[off + i] = narrow<T>(A(px[off + i]) * ap + bp);
          }
        });
      })
      default:
        return not_implemented("type ", tensor_type_name(dtype_), " is not supported");
    }
    return Status();
  }

  // Per-channel mean and (population) variance over N and the spatial dims.
  template <typename A>
  void batch_stats(const Tensor& x, int64_t n, int64_t c, int64_t spatial, std::vector<A>& mean,
                   std::vector<A>& var) const {
    mean.assign(size_t(c), A(0));
    var.assign(size_t(c), A(0));
    const A count = A(n * spatial);
    switch (dtype_) {
      NXRT_CASES_FLOAT({
        const T* px = x.data<T>();
        for (int64_t ch = 0; ch < c; ++ch) {
          A sum = 0;
          for (int64_t img = 0; img < n; ++img) {
            const T* r = px + (img * c + ch) * spatial;
            for (int64_t i = 0; i < spatial; ++i) sum += A(r[i]);
          }
          const A m = count > 0 ? sum / count : A(0);
          A sq = 0;
          for (int64_t img = 0; img < n; ++img) {
            const T* r = px + (img * c + ch) * spatial;
            for (int64_t i = 0; i < spatial; ++i) {
              const A d = A(r[i]) - m;
              sq += d * d;
            }
          }
          mean[size_t(ch)] = m;
          var[size_t(ch)] = count > 0 ? sq / count : A(0);
        }
      })
      default:
        break;
    }
  }

  // Opset >= 14: (Y, running_mean, running_var). Before: (Y, mean, var, saved_mean,
  // saved_var) with mean/var the running statistics.
  template <typename A>
  Status write_training_outputs(KernelContext& ctx, const A* mean, const A* var,
                                const std::vector<A>& batch_mean,
                                const std::vector<A>& batch_var) const {
    const size_t c = batch_mean.size();
    const Shape shape{int64_t(c)};
    const A mom = A(momentum_);
    std::vector<A> run_mean(c), run_var(c);
    for (size_t i = 0; i < c; ++i) {
      run_mean[i] = mean[i] * mom + batch_mean[i] * (A(1) - mom);
      run_var[i] = var[i] * mom + batch_var[i] * (A(1) - mom);
    }
    const std::vector<A>* values[] = {&run_mean, &run_var, &batch_mean, &batch_var};
    const size_t extra = std::min<size_t>(ctx.num_outputs() - 1, legacy_outputs_ ? 4 : 2);
    for (size_t k = 0; k < extra; ++k) {
      NXRT_ASSIGN_OR_RETURN(Tensor * t, ctx.output(1 + k, shape));
      NXRT_RETURN_IF_ERROR(store_values(*values[k], *t));
    }
    return Status();
  }

  DataType dtype_;
  float epsilon_;
  float momentum_;
  bool training_;
  bool spatial_;
  bool legacy_outputs_;
};

// ---- LRN ----

// y = x / (bias + alpha / size * sum of x^2 over the channel window) ^ beta, the window
// being [c - floor((size-1)/2), c + ceil((size-1)/2)]. Whole spatial planes are summed
// at once, so the inner loops run over contiguous memory.
class LrnKernel final : public Kernel {
 public:
  LrnKernel(DataType dtype, int64_t size, float alpha, float beta, float bias)
      : dtype_(dtype), size_(size), alpha_(alpha), beta_(beta), bias_(bias) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    const Shape& s = x.shape();
    if (s.size() < 2) return invalid_argument("input must be [N, C, ...], got ", s.to_string());
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, s));
    switch (dtype_) {
      NXRT_CASES_FLOAT(run<T>(x.data<T>(), y->data<T>(), s[0], s[1], s.product(2, s.size())))
      default:
        return not_implemented("type ", tensor_type_name(dtype_), " is not supported");
    }
    return Status();
  }

 private:
  template <typename T>
  void run(const T* x, T* y, int64_t n, int64_t c, int64_t spatial) const {
    using A = wide_t<T>;
    const int64_t before = (size_ - 1) / 2;
    const int64_t after = size_ - 1 - before;
    const A scale = A(alpha_) / A(size_);
    // Squares and window sums in this thread's scratch: a warm run does not allocate.
    A* sq = thread_scratch<A>(size_t(c * spatial), 0);
    A* sum = thread_scratch<A>(size_t(spatial), 1);
    for (int64_t img = 0; img < n; ++img) {
      const T* xi = x + img * c * spatial;
      T* yi = y + img * c * spatial;
      for (int64_t i = 0; i < c * spatial; ++i) sq[i] = A(xi[i]) * A(xi[i]);
      for (int64_t ch = 0; ch < c; ++ch) {
        std::fill(sum, sum + spatial, A(0));
        const int64_t lo = std::max<int64_t>(0, ch - before);
        const int64_t hi = std::min<int64_t>(c - 1, ch + after);
        for (int64_t k = lo; k <= hi; ++k) {
          const A* plane = sq + k * spatial;
          for (int64_t i = 0; i < spatial; ++i) sum[i] += plane[i];
        }
        const T* xc = xi + ch * spatial;
        T* yc = yi + ch * spatial;
        if (beta_ == 0.75f) {
          // The common beta (AlexNet, GoogLeNet): b^0.75 = sqrt(b) * sqrt(sqrt(b)), which
          // vectorizes, where pow is a libm call per element.
          for (int64_t i = 0; i < spatial; ++i) {
            const A b = A(bias_) + scale * sum[i];
            const A r = std::sqrt(b);
            yc[i] = narrow<T>(A(xc[i]) / (r * std::sqrt(r)));
          }
        } else {
          for (int64_t i = 0; i < spatial; ++i)
            yc[i] = narrow<T>(A(xc[i]) / std::pow(A(bias_) + scale * sum[i], A(beta_)));
        }
      }
    }
  }

  DataType dtype_;
  int64_t size_;
  float alpha_, beta_, bias_;
};

// ---- LpNormalization ----

// y = x / ||x||_p along `axis` (p is 1 or 2); a zero vector stays zero (as the
// reference does) instead of becoming NaN.
class LpNormKernel final : public Kernel {
 public:
  LpNormKernel(DataType dtype, int64_t axis, int64_t p) : dtype_(dtype), axis_(axis), p_(p) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    const int64_t rank = int64_t(x.rank());
    int64_t axis = axis_;
    if (!normalize_axis(axis, rank))
      return invalid_argument("axis ", axis_, " is out of range for an input of rank ", rank);
    const Shape& s = x.shape();
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, s));
    const int64_t outer = s.product(0, size_t(axis));
    const int64_t len = s[size_t(axis)];
    const int64_t inner = s.product(size_t(axis) + 1, s.size());
    switch (dtype_) {
      NXRT_CASES_FLOAT(run<T>(x.data<T>(), y->data<T>(), outer, len, inner))
      default:
        return not_implemented("type ", tensor_type_name(dtype_), " is not supported");
    }
    return Status();
  }

 private:
  template <typename T>
  void run(const T* x, T* y, int64_t outer, int64_t len, int64_t inner) const {
    using A = wide_t<T>;
    const bool l1 = p_ == 1;
    // Norms of a block's `inner` columns, accumulated row by row in memory order.
    std::vector<A> norm(static_cast<size_t>(inner));
    for (int64_t o = 0; o < outer; ++o) {
      const T* xb = x + o * len * inner;
      T* yb = y + o * len * inner;
      std::fill(norm.begin(), norm.end(), A(0));
      for (int64_t k = 0; k < len; ++k)
        for (int64_t j = 0; j < inner; ++j) {
          const A v = A(xb[k * inner + j]);
          norm[size_t(j)] += l1 ? std::fabs(v) : v * v;
        }
      for (A& v : norm) v = v == A(0) ? A(0) : A(1) / (l1 ? v : std::sqrt(v));
      for (int64_t k = 0; k < len; ++k)
        for (int64_t j = 0; j < inner; ++j)
          yb[k * inner + j] = narrow<T>(A(xb[k * inner + j]) * norm[size_t(j)]);
    }
  }

  DataType dtype_;
  int64_t axis_;
  int64_t p_;
};

// ---- MeanVarianceNormalization ----

// y = (x - mean) / (std + 1e-9) with the statistics over `axes` (the ONNX function's
// formula). Mean first, then the variance around it, for accuracy.
class MvnKernel final : public Kernel {
 public:
  MvnKernel(DataType dtype, std::vector<int64_t> axes) : dtype_(dtype), axes_(std::move(axes)) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    SmallVec<bool> reduced;
    NXRT_RETURN_IF_ERROR(mark_axes(axes_, int64_t(x.rank()), reduced));
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, x.shape()));
    const ReducePlan plan = make_reduce_plan(x.shape(), reduced);
    switch (dtype_) {
      NXRT_CASES_FLOAT(run<T>(plan, x.data<T>(), y->data<T>()))
      default:
        return not_implemented("type ", tensor_type_name(dtype_), " is not supported");
    }
    return Status();
  }

 private:
  template <typename T>
  static void run(const ReducePlan& p, const T* x, T* y) {
    using A = wide_t<T>;
    std::vector<A> mean(size_t(p.out_numel), A(0)), scale(size_t(p.out_numel), A(0));
    const int64_t len = p.inner;
    const A count = A(p.reduce_count);
    // Visits every element with its statistics slot.
    const auto visit = [&](auto&& fn) {
      for_each_reduce_run(p, [&](int64_t in, int64_t out) {
        if (p.inner_reduced) {
          for (int64_t i = 0; i < len; ++i) fn(in + i, out);
        } else {
          for (int64_t i = 0; i < len; ++i) fn(in + i, out + i);
        }
      });
    };
    visit([&](int64_t i, int64_t o) { mean[size_t(o)] += A(x[i]); });
    for (A& m : mean) m /= count;
    visit([&](int64_t i, int64_t o) {
      const A d = A(x[i]) - mean[size_t(o)];
      scale[size_t(o)] += d * d;
    });
    for (A& v : scale) v = A(1) / (std::sqrt(v / count) + A(1e-9));
    visit([&](int64_t i, int64_t o) {
      y[i] = narrow<T>((A(x[i]) - mean[size_t(o)]) * scale[size_t(o)]);
    });
  }

  DataType dtype_;
  std::vector<int64_t> axes_;
};

}  // namespace

Expected<KernelPtr> create_batch_normalization(KernelInit& init) {
  const DataType t = init.input_type(0);
  for (size_t i = 0; i < 5; ++i)
    if (!is_float_type(init.input_type(i))) return init.unsupported_type(i);
  AttrReader attrs(init.node);
  const float epsilon = attrs.get_float("epsilon", 1e-5f);
  const float momentum = attrs.get_float("momentum", 0.9f);
  bool training;
  if (init.opset >= 14) {
    training = attrs.get_int("training_mode", 0) != 0;
  } else {
    // Before 14 the mode followed the outputs: the statistics outputs mean training.
    size_t named = 0;
    for (const std::string& o : init.node.outputs) named += !o.empty();
    training = named > 1;
    if (init.opset < 7 && attrs.get_int("is_test", 0) != 0) training = false;
  }
  const bool spatial = init.opset >= 9 || attrs.get_int("spatial", 1) != 0;
  NXRT_RETURN_IF_ERROR(attrs.status());
  const bool legacy = init.opset < 14;
  if (init.node.outputs.size() > (legacy ? 5u : 3u))
    return init.error(StatusCode::kInvalidGraph, "has ", init.node.outputs.size(), " outputs");
  init.set_all_outputs(t);
  if (!legacy) {
    // running_mean and running_var have the type of input_mean/input_var
    for (size_t o = 1; o < init.output_types.size(); ++o) init.output_types[o] = init.input_type(3);
  }
  return make_kernel<BatchNormKernel>(t, epsilon, momentum, training, spatial, legacy);
}

Expected<KernelPtr> create_lrn(KernelInit& init) {
  const DataType t = init.input_type(0);
  if (!is_float_type(t)) return init.unsupported_type(0);
  AttrReader attrs(init.node);
  const int64_t size = attrs.require_int("size");
  const float alpha = attrs.get_float("alpha", 1e-4f);
  const float beta = attrs.get_float("beta", 0.75f);
  const float bias = attrs.get_float("bias", 1.0f);
  NXRT_RETURN_IF_ERROR(attrs.status());
  if (size <= 0) return init.error(StatusCode::kInvalidGraph, "size must be positive, got ", size);
  init.set_all_outputs(t);
  return make_kernel<LrnKernel>(t, size, alpha, beta, bias);
}

Expected<KernelPtr> create_lp_normalization(KernelInit& init) {
  const DataType t = init.input_type(0);
  if (!is_float_type(t)) return init.unsupported_type(0);
  AttrReader attrs(init.node);
  const int64_t axis = attrs.get_int("axis", -1);
  const int64_t p = attrs.get_int("p", 2);
  NXRT_RETURN_IF_ERROR(attrs.status());
  if (p != 1 && p != 2) return init.error(StatusCode::kInvalidGraph, "p must be 1 or 2, got ", p);
  init.set_all_outputs(t);
  return make_kernel<LpNormKernel>(t, axis, p);
}

Expected<KernelPtr> create_mean_variance_normalization(KernelInit& init) {
  const DataType t = init.input_type(0);
  if (!is_float_type(t)) return init.unsupported_type(0);
  AttrReader attrs(init.node);
  std::vector<int64_t> axes = attrs.get_ints("axes", {0, 2, 3});
  NXRT_RETURN_IF_ERROR(attrs.status());
  init.set_all_outputs(t);
  return make_kernel<MvnKernel>(t, std::move(axes));
}

}  // namespace nxrt::cpu
