// Elementwise ops that do not fit the plain binary/unary families: Pow (base and
// exponent of different dtypes), Mod, BitShift, Clip, PRelu, Shrink and Dropout.
#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <type_traits>

#include "ep/cpu/kernels/common.h"
#include "ep/cpu/kernels/numpy_random.h"
#include "ep/cpu/vmath/vmath.h"

namespace nxrt::cpu {
namespace {

// float16/bfloat16 are storage only; arithmetic happens in float.

template <typename T>
constexpr bool kIsHalf = std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>;

template <typename T>
T from_double(double v) {
  if constexpr (kIsHalf<T>) {
    return T(float(v));
  } else if constexpr (std::is_integral_v<T>) {
    // Out-of-range double->int conversion is undefined behaviour; saturate instead.
    if (std::isnan(v)) return T(0);
    if (v <= double(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
    if (v >= double(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
    return T(v);
  } else {
    return T(v);
  }
}

// ---- Pow ----

// Integer power by squaring in unsigned arithmetic, so overflow wraps instead of being UB.
template <typename X, typename Y>
X int_pow(X base, Y exp) {
  if constexpr (std::is_signed_v<Y>) {
    if (exp < 0) {
      // Truncated 1/base^n: only |base| == 1 gives a non-zero result.
      if (base == X(1)) return X(1);
      if constexpr (std::is_signed_v<X>) {
        if (base == X(-1)) return (exp % 2 == 0) ? X(1) : X(-1);
      }
      return X(0);
    }
  }
  uint64_t result = 1, b = uint64_t(base);
  for (uint64_t e = uint64_t(exp); e != 0; e >>= 1) {
    if (e & 1) result *= b;
    b *= b;
  }
  return X(result);
}

template <typename X, typename Y>
X pow_one(X x, Y y) {
  if constexpr (std::is_integral_v<X> && std::is_integral_v<Y>) {
    return int_pow(x, y);
  } else {
    return from_double<X>(std::pow(double(wide_t<X>(x)), double(wide_t<Y>(y))));
  }
}

template <typename X>
Status pow_with_base(KernelContext& ctx, const Tensor& a, const Tensor& b) {
  switch (b.dtype()) {
    NXRT_CASES_NUMERIC(
        return broadcast_binary<X, T, X>(ctx, a, b, [](X x, T y) { return pow_one(x, y); }))
    default:
      break;
  }
  return not_implemented("exponent type ", tensor_type_name(b.dtype()), " is not supported");
}

// A single exponent of 2, 0.5 or 1 on a float base (x^2 in power spectra, sqrt of
// magnitudes): a multiply, a sqrt or a copy instead of a libm pow per element. The results
// are bit-identical to pow's: a float square is exact in double, so rounding it once to
// float equals the float product; a float sqrt is correctly rounded and pow(x, 0.5)
// differs from sqrt(x) only at -0 and -inf, handled below.
template <typename X>
Status pow_fast(KernelContext& ctx, const Tensor& a, double e) {
  using W = wide_t<X>;
  NXRT_ASSIGN_OR_RETURN(Tensor * out, ctx.output(0, a.shape()));
  const X* px = a.data<X>();
  X* py = out->data<X>();
  const int64_t n = a.numel();
  // Memory-bound: large tensors (a vocoder's activations) split across the run's threads.
  parallel_ranges(n, double(1 << 15), [&](size_t, int64_t begin, int64_t end) {
    if (e == 2.0) {
      for (int64_t i = begin; i < end; ++i) {
        const W v = W(px[i]);
        py[i] = X(v * v);
      }
    } else if (e == 0.5) {
      constexpr W inf = std::numeric_limits<W>::infinity();
      for (int64_t i = begin; i < end; ++i) {
        const W v = W(px[i]);
        py[i] = X(v == W(0) ? W(0) : v == -inf ? inf : std::sqrt(v));
      }
    } else {
      std::copy(px + begin, px + end, py + begin);
    }
  });
  return Status();
}

// The value of a one-element exponent as double.
double scalar_value(const Tensor& b) {
  switch (b.dtype()) {
    NXRT_CASES_NUMERIC(return double(wide_t<T>(b.data<T>()[0])))
    default:
      return std::numeric_limits<double>::quiet_NaN();
  }
}

class PowKernel final : public Kernel {
 public:
  Status compute(KernelContext& ctx) const override {
    const Tensor& a = *ctx.input(0);
    const Tensor& b = *ctx.input(1);
    // The fast path keeps the output shape: b must not add or widen dims.
    if (b.numel() == 1 && b.rank() <= a.rank() && is_float_type(a.dtype()) &&
        a.dtype() != DataType::kDouble) {
      const double e = scalar_value(b);
      if (e == 2.0 || e == 0.5 || e == 1.0) {
        switch (a.dtype()) {
          case DataType::kFloat:
            return pow_fast<float>(ctx, a, e);
          case DataType::kFloat16:
            return pow_fast<Float16>(ctx, a, e);
          case DataType::kBFloat16:
            return pow_fast<BFloat16>(ctx, a, e);
          default:
            break;
        }
      }
    }
    switch (a.dtype()) {
      NXRT_CASES_NUMERIC(return pow_with_base<T>(ctx, a, b))
      default:
        break;
    }
    return not_implemented("base type ", tensor_type_name(a.dtype()), " is not supported");
  }
};

// ---- Mod ----

template <typename T>
T int_mod(T a, T b, bool fmod) {
  if constexpr (std::is_signed_v<T>) {
    if (b == T(-1)) return T(0);  // avoids the INT_MIN % -1 trap
    T r = T(a % b);
    if (!fmod && r != 0 && ((r < 0) != (b < 0))) r = T(r + b);
    return r;
  } else {
    (void)fmod;
    return T(a % b);
  }
}

class ModKernel final : public Kernel {
 public:
  ModKernel(DataType dtype, bool fmod) : dtype_(dtype), fmod_(fmod) {}
  Status compute(KernelContext& ctx) const override {
    const Tensor& a = *ctx.input(0);
    const Tensor& b = *ctx.input(1);
    const bool fmod = fmod_;
    switch (dtype_) {
      NXRT_CASES_INT({
        const T* pb = b.data<T>();
        for (int64_t i = 0; i < b.numel(); ++i)
          if (pb[i] == T(0)) return invalid_argument("integer modulo by zero");
        return broadcast_binary<T, T, T>(ctx, a, b,
                                         [fmod](T x, T y) { return int_mod(x, y, fmod); });
      })
      NXRT_CASES_FLOAT(return broadcast_binary<T, T, T>(
          ctx, a, b, [](T x, T y) { return T(std::fmod(wide_t<T>(x), wide_t<T>(y))); }))
      default:
        break;
    }
    return not_implemented("type ", tensor_type_name(dtype_), " is not supported");
  }

 private:
  DataType dtype_;
  bool fmod_;
};

// ---- BitShift ----

class BitShiftKernel final : public Kernel {
 public:
  BitShiftKernel(DataType dtype, bool left) : dtype_(dtype), left_(left) {}
  Status compute(KernelContext& ctx) const override {
    const Tensor& a = *ctx.input(0);
    const Tensor& b = *ctx.input(1);
    const bool left = left_;
    switch (dtype_) {
      NXRT_CASE(kUint8, return shift<T>(ctx, a, b, left))
      NXRT_CASE(kUint16, return shift<T>(ctx, a, b, left))
      NXRT_CASE(kUint32, return shift<T>(ctx, a, b, left))
      NXRT_CASE(kUint64, return shift<T>(ctx, a, b, left))
      default:
        break;
    }
    return not_implemented("type ", tensor_type_name(dtype_), " is not supported");
  }

 private:
  template <typename T>
  static Status shift(KernelContext& ctx, const Tensor& a, const Tensor& b, bool left) {
    constexpr T kBits = T(sizeof(T) * 8);
    // Shifting by the bit width or more is UB in C++; every bit is shifted out instead.
    return broadcast_binary<T, T, T>(ctx, a, b, [left](T x, T s) {
      if (s >= kBits) return T(0);
      return left ? T(x << s) : T(x >> s);
    });
  }
  DataType dtype_;
  bool left_;
};

// ---- Clip ----

class ClipKernel final : public Kernel {
 public:
  // `attr_min/max` are used for opset < 11 (attributes); later opsets read inputs 1 and 2.
  ClipKernel(DataType dtype, bool from_attrs, float attr_min, float attr_max)
      : dtype_(dtype), from_attrs_(from_attrs), attr_min_(attr_min), attr_max_(attr_max) {}

  Status compute(KernelContext& ctx) const override {
    switch (dtype_) {
      NXRT_CASES_NUMERIC(return run<T>(ctx))
      default:
        break;
    }
    return not_implemented("type ", tensor_type_name(dtype_), " is not supported");
  }

 private:
  template <typename T>
  Status run(KernelContext& ctx) const {
    using W = wide_t<T>;
    // An absent bound is the spec's numeric_limits<T>::lowest() / max() (onnxruntime too):
    // an infinite input clamps to T's largest finite value (onnx.reference skips the bound).
    W lo = std::numeric_limits<W>::lowest(), hi = std::numeric_limits<W>::max();
    if constexpr (std::is_same_v<T, Float16>) {
      hi = 65504.0f;
      lo = -hi;
    } else if constexpr (std::is_same_v<T, BFloat16>) {
      BFloat16 largest;
      largest.bits = 0x7f7f;  // 3.3895314e38
      hi = float(largest);
      lo = -hi;
    }
    if (from_attrs_) {
      lo = W(attr_min_);
      hi = W(attr_max_);
    } else {
      for (size_t k = 1; k <= 2; ++k) {
        const Tensor* t = ctx.input(k);
        if (!t) continue;
        if (t->numel() != 1)
          return invalid_argument(k == 1 ? "min" : "max", " must be a scalar, got shape ",
                                  t->shape().to_string());
        (k == 1 ? lo : hi) = W(t->data<T>()[0]);
      }
    }
    const Tensor& x = *ctx.input(0);
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, x.shape()));
    const T* px = x.data<T>();
    T* py = y->data<T>();
    const int64_t n = x.numel();
    // Comparisons (not std::clamp) so NaN passes through and min > max yields max.
    for (int64_t i = 0; i < n; ++i) {
      W v = W(px[i]);
      if (v < lo) v = lo;
      if (v > hi) v = hi;
      py[i] = T(v);
    }
    return Status();
  }

  DataType dtype_;
  bool from_attrs_;
  float attr_min_, attr_max_;
};

// ---- PRelu ----

template <typename T>
T prelu_one(T v, T slope) {
  using W = wide_t<T>;
  if constexpr (std::is_unsigned_v<W>)
    return v;  // never negative: the slope is unused
  else
    // A select of the factor, then one multiply: branch-free, so the loop vectorizes (a
    // branch on the sign mispredicts half the time on real activations). v * 1 is v,
    // NaN and -0 included.
    return T(W(v) * (W(v) < W(0) ? W(slope) : W(1)));
}

class PReluKernel final : public Kernel {
 public:
  PReluKernel(DataType dtype, bool legacy_channel)
      : dtype_(dtype), legacy_channel_(legacy_channel) {}
  // float: each run with one slope (the per-channel case) is a vector LeakyRelu.
  Status prelu_float(KernelContext& ctx, const Tensor& x, const Tensor& slope) const {
    const Shape* shapes[] = {&x.shape(), &slope.shape()};
    Shape out_shape;
    if (!broadcast_shapes(shapes, out_shape) || !(out_shape == x.shape()))
      return invalid_argument("shapes ", x.shape().to_string(), " and ", slope.shape().to_string(),
                              " do not broadcast to the first input's shape");
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, out_shape));
    const float* px = x.data<float>();
    const float* ps = slope.data<float>();
    float* py = y->data<float>();
    const BroadcastPlan plan = make_broadcast_plan(out_shape, shapes);
    for_each_broadcast_run(
        plan, [&](const int64_t* off, int64_t o, int64_t count, const int64_t* step) {
          if (step[0] == 1 && step[1] == 0) {
            vmath::unary(vmath::Unary::kLeakyRelu, {ps[off[1]], 0, 0}, px + off[0], py + o,
                         size_t(count));
            return;
          }
          for (int64_t i = 0; i < count; ++i)
            py[o + i] = prelu_one<float>(px[off[0] + i * step[0]], ps[off[1] + i * step[1]]);
        });
    return Status();
  }

  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    Tensor slope = *ctx.input(1);
    // Before opset 7 a 1-D slope of length C applied per channel (axis 1), not to the last axis.
    if (legacy_channel_ && slope.rank() == 1 && x.rank() >= 2 && slope.numel() == x.shape()[1] &&
        slope.numel() != 1) {
      Shape s(std::vector<int64_t>(x.rank() - 1, 1));
      s[0] = slope.numel();
      slope.mutable_shape() = s;
    }
    if (dtype_ == DataType::kFloat) return prelu_float(ctx, x, slope);
    switch (dtype_) {
      // A lambda, not the function's address: the loops inline it and vectorize.
      NXRT_CASES_NUMERIC(return broadcast_binary<T, T, T>(
          ctx, x, slope, [](T v, T s) { return prelu_one<T>(v, s); }, &x.shape()))
      default:
        break;
    }
    return not_implemented("type ", tensor_type_name(dtype_), " is not supported");
  }

 private:
  DataType dtype_;
  bool legacy_channel_;
};

// ---- Shrink ----

class ShrinkKernel final : public Kernel {
 public:
  ShrinkKernel(DataType dtype, double bias, double lambd)
      : dtype_(dtype), bias_(bias), lambd_(lambd) {}
  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, x.shape()));
    const int64_t n = x.numel();
    switch (dtype_) {
      NXRT_CASES_NUMERIC({
        const T* px = x.data<T>();
        T* py = y->data<T>();
        for (int64_t i = 0; i < n; ++i) {
          const double v = double(wide_t<T>(px[i]));
          py[i] = v < -lambd_  ? from_double<T>(v + bias_)
                  : v > lambd_ ? from_double<T>(v - bias_)
                               : T(0);
        }
        return Status();
      })
      default:
        break;
    }
    return not_implemented("type ", tensor_type_name(dtype_), " is not supported");
  }

 private:
  DataType dtype_;
  double bias_, lambd_;
};

// ---- Dropout ----

class DropoutKernel final : public Kernel {
 public:
  DropoutKernel(DataType dtype, DataType mask_type, bool inputs, float ratio, bool has_seed,
                int64_t seed)
      : dtype_(dtype),
        mask_type_(mask_type),
        inputs_(inputs),
        ratio_(ratio),
        has_seed_(has_seed),
        seed_(seed) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    float ratio = ratio_;
    bool training = false;
    if (inputs_) {
      if (const Tensor* r = ctx.input(1)) {
        if (r->numel() != 1) return invalid_argument("ratio must be a scalar");
        switch (r->dtype()) {
          NXRT_CASES_FLOAT(ratio = float(r->data<T>()[0]))
          default:
            return invalid_argument("ratio has unsupported type ", dtype_name(r->dtype()));
        }
      }
      if (const Tensor* t = ctx.input(2)) {
        if (t->numel() != 1 || t->dtype() != DataType::kBool)
          return invalid_argument("training_mode must be a bool scalar");
        training = t->data<bool>()[0];
      }
    }
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, x.shape()));
    Tensor* mask = nullptr;
    if (ctx.num_outputs() > 1) {
      NXRT_ASSIGN_OR_RETURN(mask, ctx.output(1, x.shape()));
    }
    const int64_t n = x.numel();
    if (!training || ratio == 0.0f) {
      copy_elements(dtype_, x.raw(), y->raw(), n);
      if (mask) fill_mask_true(*mask);
      return Status();
    }
    if (!(ratio >= 0.0f && ratio < 1.0f))
      return invalid_argument("ratio ", ratio, " is outside [0, 1)");
    // A fresh generator per run keeps compute() const and makes a seeded node
    // reproducible; it draws numpy's legacy RandomState stream.
    NumpyRandom gen(has_seed_ ? uint32_t(seed_) : uint32_t(std::random_device{}()));
    const float scale = float(1.0 / (1.0 - double(ratio)));
    bool* keep_mask = mask && mask_type_ == DataType::kBool ? mask->data<bool>() : nullptr;
    switch (dtype_) {
      NXRT_CASES_FLOAT({
        const T* px = x.data<T>();
        T* py = y->data<T>();
        for (int64_t i = 0; i < n; ++i) {
          const bool keep = gen.next_double() >= double(ratio);
          py[i] = keep ? T(float(px[i]) * scale) : T(0.0f);
          if (keep_mask) keep_mask[i] = keep;
        }
        return Status();
      })
      default:
        break;
    }
    return not_implemented("training-mode dropout of ", tensor_type_name(dtype_),
                           " is not supported");
  }

 private:
  void fill_mask_true(Tensor& mask) const {
    const int64_t n = mask.numel();
    switch (mask_type_) {
      NXRT_CASES_NUMERIC(for (int64_t i = 0; i < n; ++i) mask.data<T>()[i] = T(1.0f))
      NXRT_CASE(kBool, for (int64_t i = 0; i < n; ++i) mask.data<T>()[i] = true)
      default:
        break;
    }
  }

  DataType dtype_, mask_type_;
  bool inputs_;
  float ratio_;
  bool has_seed_;
  int64_t seed_;
};

bool is_numeric(DataType t) { return is_float_type(t) || is_integer_type(t); }

}  // namespace

Expected<KernelPtr> create_pow(KernelInit& init) {
  if (!is_numeric(init.input_type(0))) return init.unsupported_type(0);
  if (!is_numeric(init.input_type(1))) return init.unsupported_type(1);
  init.set_all_outputs(init.input_type(0));
  return make_kernel<PowKernel>();
}

Expected<KernelPtr> create_mod(KernelInit& init) {
  AttrReader attrs(init.node);
  const bool fmod = attrs.get_int("fmod", 0) != 0;
  NXRT_RETURN_IF_ERROR(attrs.status());
  const DataType t = init.input_type(0);
  if (init.input_type(1) != t)
    return init.error(StatusCode::kInvalidGraph, "inputs have different types ",
                      tensor_type_name(t), " and ", tensor_type_name(init.input_type(1)));
  if (!is_numeric(t)) return init.unsupported_type(0);
  if (is_float_type(t) && !fmod)
    return init.error(StatusCode::kInvalidGraph, "fmod must be 1 for floating-point inputs");
  init.set_all_outputs(t);
  return make_kernel<ModKernel>(t, fmod);
}

Expected<KernelPtr> create_bit_shift(KernelInit& init) {
  AttrReader attrs(init.node);
  const std::string direction = attrs.get_string("direction");
  NXRT_RETURN_IF_ERROR(attrs.status());
  if (direction != "LEFT" && direction != "RIGHT")
    return init.error(StatusCode::kInvalidGraph, "direction must be LEFT or RIGHT, got '",
                      direction, "'");
  const DataType t = init.input_type(0);
  if (init.input_type(1) != t) return init.unsupported_type(1);
  if (t != DataType::kUint8 && t != DataType::kUint16 && t != DataType::kUint32 &&
      t != DataType::kUint64)
    return init.unsupported_type(0);
  init.set_all_outputs(t);
  return make_kernel<BitShiftKernel>(t, direction == "LEFT");
}

Expected<KernelPtr> create_clip(KernelInit& init) {
  const DataType t = init.input_type(0);
  if (!is_numeric(t)) return init.unsupported_type(0);
  const bool from_attrs = init.opset < 11;
  AttrReader attrs(init.node);
  const float lo = attrs.get_float("min", std::numeric_limits<float>::lowest());
  const float hi = attrs.get_float("max", std::numeric_limits<float>::max());
  NXRT_RETURN_IF_ERROR(attrs.status());
  for (size_t k = 1; k <= 2; ++k)
    if (!from_attrs && init.has_input(k) && init.input_type(k) != t)
      return init.unsupported_type(k);
  init.set_all_outputs(t);
  return make_kernel<ClipKernel>(t, from_attrs, lo, hi);
}

Expected<KernelPtr> create_prelu(KernelInit& init) {
  const DataType t = init.input_type(0);
  if (!is_numeric(t)) return init.unsupported_type(0);
  if (init.input_type(1) != t) return init.unsupported_type(1);
  init.set_all_outputs(t);
  return make_kernel<PReluKernel>(t, init.opset < 7);
}

Expected<KernelPtr> create_shrink(KernelInit& init) {
  AttrReader attrs(init.node);
  const float bias = attrs.get_float("bias", 0.0f);
  const float lambd = attrs.get_float("lambd", 0.5f);
  NXRT_RETURN_IF_ERROR(attrs.status());
  const DataType t = init.input_type(0);
  if (!is_numeric(t)) return init.unsupported_type(0);
  init.set_all_outputs(t);
  return make_kernel<ShrinkKernel>(t, bias, lambd);
}

Expected<KernelPtr> create_dropout(KernelInit& init) {
  AttrReader attrs(init.node);
  const float ratio = attrs.get_float("ratio", 0.5f);
  const bool has_seed = attrs.has("seed");
  const int64_t seed = attrs.get_int("seed", 0);
  NXRT_RETURN_IF_ERROR(attrs.status());
  const DataType t = init.input_type(0);
  if (!is_float_type(t)) return init.unsupported_type(0);
  // The mask was of the data type until opset 10 made it bool.
  const DataType mask_type = init.opset >= 10 ? DataType::kBool : t;
  init.output_types[0] = t;
  if (init.output_types.size() > 1) init.output_types[1] = mask_type;
  return make_kernel<DropoutKernel>(t, mask_type, init.opset >= 12, ratio, has_seed, seed);
}

}  // namespace nxrt::cpu
