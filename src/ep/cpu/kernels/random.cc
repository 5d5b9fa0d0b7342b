// Random generators: RandomUniform(Like), RandomNormal(Like), Bernoulli, Multinomial.
// Draws follow numpy's legacy RandomState (numpy_random.h) in the order onnx's reference
// implementation consumes them, and the dtype conversions and scale/shift arithmetic
// round as numpy does, so a seeded node reproduces the reference's values. The planner
// never constant-folds these ops (is_nondeterministic in planner.cc).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "ep/cpu/kernels/common.h"
#include "ep/cpu/kernels/numpy_random.h"

namespace nxrt::cpu {
namespace {

template <typename T>
constexpr bool kHalf = std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>;

// float16/bfloat16 arithmetic is done in float and rounded once, like numpy's half ops.
template <typename T>
using wide_t = std::conditional_t<kHalf<T>, float, T>;

// double -> float rounding to odd: narrowing that float to a 16-bit float then rounds
// exactly as a direct double -> half conversion (numpy's astype) would, avoiding the
// double-rounding error of going through a round-to-nearest float.
float to_float_round_odd(double v) {
  float f = float(v);
  if (!std::isfinite(f) || double(f) == v) return f;
  if (std::fabs(double(f)) > std::fabs(v)) f = std::nextafter(f, 0.0f);
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  bits |= 1u;
  std::memcpy(&f, &bits, sizeof bits);
  return f;
}

template <typename T>
T from_double(double v) {
  if constexpr (kHalf<T>)
    return T(to_float_round_odd(v));
  else
    return T(v);
}

// out[i] = (T(draw()) * scale) + shift, each step rounded to T: the reference's
// `res = draws.astype(T); res *= scale; res += shift` with float32 scalars (so 16-bit
// types multiply and add in float, double in double).
template <typename T, typename Draw>
void fill_affine(T* out, int64_t n, float scale, float shift, Draw&& draw) {
  const wide_t<T> ws = wide_t<T>(scale), wb = wide_t<T>(shift);
  for (int64_t i = 0; i < n; ++i) {
    const T r = from_double<T>(draw());
    const T scaled = narrow<T>(wide_t<T>(r) * ws);
    out[i] = narrow<T>(wide_t<T>(scaled) + wb);
  }
}

enum class Dist { kUniform, kNormal };

// The four Random* ops. `shape` is used when there is no input (RandomUniform and
// RandomNormal); the *Like forms take the shape of input 0.
class RandomKernel final : public Kernel {
 public:
  RandomKernel(Dist dist, DataType dtype, float a, float b, bool has_seed, float seed, bool like,
               std::vector<int64_t> shape)
      : dist_(dist),
        dtype_(dtype),
        a_(a),
        b_(b),
        has_seed_(has_seed),
        seed_(seed),
        like_(like),
        shape_(std::move(shape)) {}

  Status compute(KernelContext& ctx) const override {
    Shape shape;
    if (like_) {
      const Tensor* x = ctx.input(0);
      if (!x) return invalid_argument("input 0 is missing");
      shape = x->shape();
    } else {
      shape = Shape(shape_);
    }
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, shape));
    const int64_t n = y->numel();
    NumpyRandom rng = NumpyRandom::for_call(has_seed_, seed_);
    switch (dtype_) {
      NXRT_CASES_FLOAT({
        if (dist_ == Dist::kUniform)  // a_ = low, b_ = high; the span rounds to float
          fill_affine(y->data<T>(), n, b_ - a_, a_, [&] { return rng.next_double(); });
        else  // a_ = mean, b_ = scale
          fill_affine(y->data<T>(), n, b_, a_, [&] { return rng.next_gauss(); });
        return Status();
      })
      default:
        break;
    }
    return not_implemented("output type ", tensor_type_name(dtype_), " is not supported");
  }

 private:
  Dist dist_;
  DataType dtype_;
  float a_, b_;
  bool has_seed_;
  float seed_;
  bool like_;
  std::vector<int64_t> shape_;
};

template <typename T>
T zero_one(int v) {
  if constexpr (kHalf<T>)
    return T(float(v));
  else
    return T(v);
}

class BernoulliKernel final : public Kernel {
 public:
  BernoulliKernel(DataType in_type, DataType out_type, bool has_seed, float seed)
      : in_type_(in_type), out_type_(out_type), has_seed_(has_seed), seed_(seed) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    const int64_t n = x.numel();
    // numpy converts p to double before sampling.
    std::vector<double> p(static_cast<size_t>(n));
    switch (in_type_) {
      NXRT_CASES_FLOAT(for (int64_t i = 0; i < n; ++i) p[size_t(i)] = double(x.data<T>()[i]))
      default:
        return not_implemented("input type ", tensor_type_name(in_type_), " is not supported");
    }
    for (int64_t i = 0; i < n; ++i)
      if (!(p[size_t(i)] >= 0.0 && p[size_t(i)] <= 1.0))
        return invalid_argument("probability ", p[size_t(i)], " at index ", i,
                                " is outside [0, 1]");
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, x.shape()));
    NumpyRandom rng = NumpyRandom::for_call(has_seed_, seed_);
    switch (out_type_) {
      NXRT_CASES_NUMERIC({
        T* out = y->data<T>();
        for (int64_t i = 0; i < n; ++i) out[i] = zero_one<T>(rng.next_bernoulli(p[size_t(i)]));
        return Status();
      })
      NXRT_CASE(kBool, {
        T* out = y->data<T>();
        for (int64_t i = 0; i < n; ++i) out[i] = rng.next_bernoulli(p[size_t(i)]) != 0;
        return Status();
      })
      default:
        break;
    }
    return not_implemented("output type ", tensor_type_name(out_type_), " is not supported");
  }

 private:
  DataType in_type_, out_type_;
  bool has_seed_;
  float seed_;
};

// Multinomial: input [batch, classes] of unnormalized log-probabilities, output
// [batch, sample_size] class indices. Each row's softmax is accumulated once (O(classes)),
// then every sample is a binary search of a uniform draw in the running sums.
class MultinomialKernel final : public Kernel {
 public:
  MultinomialKernel(DataType in_type, DataType out_type, int64_t samples, bool has_seed, float seed)
      : in_type_(in_type),
        out_type_(out_type),
        samples_(samples),
        has_seed_(has_seed),
        seed_(seed) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    if (x.rank() != 2)
      return invalid_argument("input must have shape [batch_size, class_size], got ",
                              x.shape().to_string());
    const int64_t batch = x.shape()[0], classes = x.shape()[1];
    if (classes == 0 && batch > 0 && samples_ > 0)
      return invalid_argument("cannot sample from zero classes");
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, Shape{batch, samples_}));
    std::vector<double> logits(static_cast<size_t>(classes)),
        cumulative(static_cast<size_t>(classes));
    NumpyRandom rng = NumpyRandom::for_call(has_seed_, seed_);
    for (int64_t b = 0; b < batch; ++b) {
      switch (in_type_) {
        NXRT_CASES_FLOAT({
          const T* row = x.data<T>() + b * classes;
          for (int64_t c = 0; c < classes; ++c) logits[size_t(c)] = double(row[c]);
        })
        default:
          return not_implemented("input type ", tensor_type_name(in_type_), " is not supported");
      }
      // Shifting by the largest logit keeps exp() in range; -inf logits get weight 0.
      double top = -std::numeric_limits<double>::infinity();
      for (double v : logits) {
        if (std::isnan(v) || v == std::numeric_limits<double>::infinity())
          return invalid_argument("row ", b, " has a NaN or +inf log-probability");
        top = std::max(top, v);
      }
      if (top == -std::numeric_limits<double>::infinity())
        return invalid_argument("row ", b, " has no class with positive probability");
      double total = 0.0;
      for (int64_t c = 0; c < classes; ++c) {
        total += std::exp(logits[size_t(c)] - top);
        cumulative[size_t(c)] = total;
      }
      // Rounding can leave u at the very end; the last class of positive weight takes it.
      int64_t last = classes - 1;
      while (last > 0 && cumulative[size_t(last)] == cumulative[size_t(last - 1)]) --last;
      for (int64_t s = 0; s < samples_; ++s) {
        const double u = rng.next_double() * total;
        const int64_t k =
            std::upper_bound(cumulative.begin(), cumulative.end(), u) - cumulative.begin();
        const int64_t pick = std::min(k, last);
        if (out_type_ == DataType::kInt32)
          y->data<int32_t>()[b * samples_ + s] = int32_t(pick);
        else
          y->data<int64_t>()[b * samples_ + s] = pick;
      }
    }
    return Status();
  }

 private:
  DataType in_type_, out_type_;
  int64_t samples_;
  bool has_seed_;
  float seed_;
};

// Reads the optional `dtype` attribute; `fallback` when absent.
Status read_dtype(AttrReader& attrs, DataType fallback, DataType& out) {
  if (!attrs.has("dtype")) {
    out = fallback;
    return Status();
  }
  const int64_t raw = attrs.get_int("dtype", 0);
  NXRT_RETURN_IF_ERROR(attrs.status());
  if (raw < 0 || raw > std::numeric_limits<int32_t>::max() || !dtype_is_known(int32_t(raw)))
    return invalid_graph("dtype ", raw, " is not a known type");
  out = DataType(raw);
  return Status();
}

Expected<KernelPtr> create_random(KernelInit& init, Dist dist, bool like) {
  AttrReader attrs(init.node);
  const bool uniform = dist == Dist::kUniform;
  const float a = attrs.get_float(uniform ? "low" : "mean", 0.0f);
  const float b = attrs.get_float(uniform ? "high" : "scale", 1.0f);
  const bool has_seed = attrs.has("seed");
  const float seed = attrs.get_float("seed", 0.0f);
  std::vector<int64_t> shape;
  if (!like) shape = attrs.require_ints("shape");
  NXRT_RETURN_IF_ERROR(attrs.status());
  DataType dtype = DataType::kFloat;
  if (like) {
    if (!init.has_input(0)) return init.error(StatusCode::kInvalidGraph, "input 0 is missing");
    dtype = init.input_type(0);
  }
  Status st = read_dtype(attrs, dtype, dtype);
  if (!st.ok()) return init.error(st.code(), st.message());
  if (!is_float_type(dtype))
    return init.error(
        StatusCode::kInvalidGraph, "output type ", tensor_type_name(dtype),
        " is not a floating-point type",
        like && !attrs.has("dtype") ? " (set the dtype attribute for a non-float input)" : "");
  if (!like && checked_numel(shape) < 0)
    return init.error(StatusCode::kInvalidGraph, "shape ", Shape(shape).to_string(),
                      " has a negative dim or is too large");
  init.set_all_outputs(dtype);
  return make_kernel<RandomKernel>(dist, dtype, a, b, has_seed, seed, like, std::move(shape));
}

}  // namespace

Expected<KernelPtr> create_random_uniform(KernelInit& init) {
  return create_random(init, Dist::kUniform, false);
}
Expected<KernelPtr> create_random_normal(KernelInit& init) {
  return create_random(init, Dist::kNormal, false);
}
Expected<KernelPtr> create_random_uniform_like(KernelInit& init) {
  return create_random(init, Dist::kUniform, true);
}
Expected<KernelPtr> create_random_normal_like(KernelInit& init) {
  return create_random(init, Dist::kNormal, true);
}

Expected<KernelPtr> create_bernoulli(KernelInit& init) {
  AttrReader attrs(init.node);
  const bool has_seed = attrs.has("seed");
  const float seed = attrs.get_float("seed", 0.0f);
  NXRT_RETURN_IF_ERROR(attrs.status());
  const DataType in = init.input_type(0);
  if (!is_float_type(in)) return init.unsupported_type(0);
  DataType out = in;
  Status st = read_dtype(attrs, in, out);
  if (!st.ok()) return init.error(st.code(), st.message());
  if (!is_float_type(out) && !is_integer_type(out) && out != DataType::kBool)
    return init.error(StatusCode::kInvalidGraph, "output type ", tensor_type_name(out),
                      " is not numeric or bool");
  init.set_all_outputs(out);
  return make_kernel<BernoulliKernel>(in, out, has_seed, seed);
}

Expected<KernelPtr> create_multinomial(KernelInit& init) {
  AttrReader attrs(init.node);
  const int64_t samples = attrs.get_int("sample_size", 1);
  const bool has_seed = attrs.has("seed");
  const float seed = attrs.get_float("seed", 0.0f);
  NXRT_RETURN_IF_ERROR(attrs.status());
  const DataType in = init.input_type(0);
  if (!is_float_type(in)) return init.unsupported_type(0);
  DataType out = DataType::kInt32;
  Status st = read_dtype(attrs, DataType::kInt32, out);
  if (!st.ok()) return init.error(st.code(), st.message());
  if (out != DataType::kInt32 && out != DataType::kInt64)
    return init.error(StatusCode::kInvalidGraph, "dtype must be int32 or int64, got ",
                      tensor_type_name(out));
  if (samples < 0)
    return init.error(StatusCode::kInvalidGraph, "sample_size ", samples, " is negative");
  init.set_all_outputs(out);
  return make_kernel<MultinomialKernel>(in, out, samples, has_seed, seed);
}

}  // namespace nxrt::cpu
