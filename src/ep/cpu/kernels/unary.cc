// Elementwise unary math and activations. Floats compute in float (double for double);
// the attribute-carrying activations read alpha/beta/gamma at prepare.
#include <algorithm>
#include <cmath>
#include <limits>

#include "ep/cpu/kernels/common.h"
#include "ep/cpu/vmath/vmath.h"

namespace nxrt::cpu {
namespace {

struct Params {
  float alpha = 0, beta = 0, gamma = 0;
  std::string approximate;
};

using FloatFn = double (*)(double x, const Params& p);

template <typename T>
void apply_float(const Tensor& in, Tensor& out, FloatFn fn, const Params& p) {
  const T* x = in.data<T>();
  T* y = out.data<T>();
  const int64_t n = in.numel();
  if constexpr (std::is_same_v<T, double>) {
    for (int64_t i = 0; i < n; ++i) y[i] = fn(x[i], p);
  } else {
    // The rarer ops: float math in double keeps one implementation per op (the common
    // activations run through vmath, VectorUnaryKernel).
    for (int64_t i = 0; i < n; ++i) y[i] = T(float(fn(double(float(x[i])), p)));
  }
}

class FloatUnaryKernel final : public Kernel {
 public:
  FloatUnaryKernel(DataType dtype, FloatFn fn, Params params)
      : dtype_(dtype), fn_(fn), params_(std::move(params)) {}
  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, x.shape()));
    switch (dtype_) {
      NXRT_CASES_FLOAT(apply_float<T>(x, *y, fn_, params_))
      default:
        return not_implemented("input X has unsupported type ", tensor_type_name(dtype_));
    }
    return Status();
  }

 private:
  DataType dtype_;
  FloatFn fn_;
  Params params_;
};

// Ops without a vmath form, in double for every float type. The others (VectorUnaryKernel)
// are defined once, in vmath: vectorized for float32, vmath::reference for float64.
struct FloatOpDef {
  const char* name;
  FloatFn fn;
};

const FloatOpDef kFloatOps[] = {
    {"Log", [](double x, const Params&) { return std::log(x); }},
    {"Floor", [](double x, const Params&) { return std::floor(x); }},
    {"Ceil", [](double x, const Params&) { return std::ceil(x); }},
    {"Round", [](double x, const Params&) { return std::nearbyint(x); }},
    {"Tan", [](double x, const Params&) { return std::tan(x); }},
    {"Asin", [](double x, const Params&) { return std::asin(x); }},
    {"Acos", [](double x, const Params&) { return std::acos(x); }},
    {"Atan", [](double x, const Params&) { return std::atan(x); }},
    {"Sinh", [](double x, const Params&) { return std::sinh(x); }},
    {"Cosh", [](double x, const Params&) { return std::cosh(x); }},
    {"Asinh", [](double x, const Params&) { return std::asinh(x); }},
    {"Acosh", [](double x, const Params&) { return std::acosh(x); }},
    {"Atanh", [](double x, const Params&) { return std::atanh(x); }},
    {"Celu",
     [](double x, const Params& p) {
       if (std::isnan(x)) return x;  // (std::max/min would turn NaN into 0)
       return std::max(0.0, x) + std::min(0.0, p.alpha * (std::exp(x / p.alpha) - 1.0));
     }},
    {"ThresholdedRelu", [](double x, const Params& p) { return x > p.alpha ? x : 0.0; }},
};

// Float ops with a vector implementation (vmath): float32 runs straight through it,
// float16/bfloat16 are widened a block at a time in a stack buffer and narrowed back,
// float64 uses vmath's double-precision definition.
// Large tensors are split across the run's threads (memory-bound: pieces of >= 32K).
class VectorUnaryKernel final : public Kernel {
 public:
  VectorUnaryKernel(DataType dtype, vmath::Unary fn, vmath::UnaryParams params)
      : dtype_(dtype), fn_(fn), params_(params) {}
  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, x.shape()));
    const int64_t n = x.numel();
    parallel_ranges(n, double(1 << 15), [&](size_t, int64_t begin, int64_t end) {
      switch (dtype_) {
        case DataType::kFloat:
          vmath::unary(fn_, params_, x.data<float>() + begin, y->data<float>() + begin,
                       size_t(end - begin));
          break;
        case DataType::kFloat16:
          run_widened(x.data<Float16>(), y->data<Float16>(), begin, end);
          break;
        case DataType::kBFloat16:
          run_widened(x.data<BFloat16>(), y->data<BFloat16>(), begin, end);
          break;
        case DataType::kDouble:  // float64 stays float64: the double-precision definition
          for (int64_t i = begin; i < end; ++i)
            y->data<double>()[i] = vmath::reference(fn_, params_, x.data<double>()[i]);
          break;
        default:
          break;
      }
    });
    return Status();
  }

 private:
  template <typename T>
  void run_widened(const T* x, T* y, int64_t begin, int64_t end) const {
    constexpr int64_t kBlock = 256;
    float buf[kBlock];
    for (int64_t i = begin; i < end; i += kBlock) {
      const int64_t m = std::min(kBlock, end - i);
      for (int64_t j = 0; j < m; ++j) buf[j] = float(x[i + j]);
      vmath::unary(fn_, params_, buf, buf, size_t(m));
      for (int64_t j = 0; j < m; ++j) y[i + j] = T(buf[j]);
    }
  }

  DataType dtype_;
  vmath::Unary fn_;
  vmath::UnaryParams params_;
};

// The vmath function for an op, or false when it has none (kFloatOps then defines it).
bool vector_form(const std::string& op, const Params& p, vmath::Unary& fn) {
  using U = vmath::Unary;
  static const std::pair<const char*, U> kTable[] = {{"Exp", U::kExp},
                                                     {"Tanh", U::kTanh},
                                                     {"Sigmoid", U::kSigmoid},
                                                     {"Erf", U::kErf},
                                                     {"LeakyRelu", U::kLeakyRelu},
                                                     {"HardSigmoid", U::kHardSigmoid},
                                                     {"HardSwish", U::kHardSwish},
                                                     {"Elu", U::kElu},
                                                     {"Selu", U::kSelu},
                                                     {"Sqrt", U::kSqrt},
                                                     {"Reciprocal", U::kReciprocal},
                                                     {"Softsign", U::kSoftsign},
                                                     {"Softplus", U::kSoftplus},
                                                     {"Mish", U::kMish},
                                                     {"Log", U::kLog},
                                                     {"Sin", U::kSin},
                                                     {"Cos", U::kCos},
                                                     {"Swish", U::kSwish},
                                                     {"QuickGelu", U::kSwish}};
  if (op == "Gelu") {  // approximate is checked at creation
    fn = p.approximate == "tanh" ? U::kGeluTanh : U::kGelu;
    return true;
  }
  for (const auto& [name, f] : kTable) {
    if (op == name) {
      fn = f;
      return true;
    }
  }
  return false;
}

Expected<KernelPtr> create_float_unary(KernelInit& init, const char* name) {
  const DataType t = init.input_type(0);
  if (!is_float_type(t)) return init.unsupported_type(0);
  AttrReader attrs(init.node);
  Params p;
  const std::string op = name;
  p.alpha = attrs.get_float("alpha", op == "LeakyRelu"     ? 0.01f
                                     : op == "HardSigmoid" ? 0.2f
                                     : op == "Selu"        ? 1.67326319217681884765625f
                                     : op == "QuickGelu"   ? 1.702f
                                                           : 1.0f);
  p.beta = attrs.get_float("beta", 0.5f);
  p.gamma = attrs.get_float("gamma", 1.05070102214813232421875f);
  p.approximate = attrs.get_string("approximate", "none");
  NXRT_RETURN_IF_ERROR(attrs.status());
  if (op == "Gelu" && p.approximate != "none" && p.approximate != "tanh")
    return init.error(StatusCode::kInvalidGraph, "approximate must be 'none' or 'tanh', got '",
                      p.approximate, "'");
  vmath::Unary vfn;
  if (vector_form(op, p, vfn)) {
    init.set_all_outputs(t);
    return make_kernel<VectorUnaryKernel>(t, vfn, vmath::UnaryParams{p.alpha, p.beta, p.gamma});
  }
  for (const FloatOpDef& def : kFloatOps) {
    if (op == def.name) {
      init.set_all_outputs(t);
      return make_kernel<FloatUnaryKernel>(t, def.fn, p);
    }
  }
  return init.error(StatusCode::kEngineError, "no unary definition");
}

// Ops defined for signed numbers too: Abs, Neg, Sign, Relu.
enum class SignedOp { kAbs, kNeg, kSign, kRelu };

template <typename T>
T signed_apply(SignedOp op, T x) {
  constexpr bool kHalf = std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>;
  using W = std::conditional_t<kHalf, float, T>;
  if constexpr (kHalf) {
    if (op == SignedOp::kAbs) {  // IEEE abs: clear the sign bit (-0 -> +0, NaN stays NaN)
      T r = x;
      r.bits = uint16_t(x.bits & 0x7fffu);
      return r;
    }
  }
  const W v = W(x);
  W r = v;
  switch (op) {
    case SignedOp::kAbs:
      if constexpr (std::is_unsigned_v<W>)
        r = v;
      else if constexpr (std::is_floating_point_v<W>)
        r = std::fabs(v);  // -0 -> +0 (a compare-and-negate keeps -0)
      else
        r = v < W(0) ? W(-v) : v;
      break;
    case SignedOp::kNeg:
      r = W(-v);
      break;
    case SignedOp::kSign:
      // NaN is none of the spec's three cases: it passes through (numpy, onnx.reference,
      // onnxruntime's float and double).
      r = v > W(0) ? W(1) : (v < W(0) ? W(-1) : (v == W(0) ? W(0) : v));
      break;
    case SignedOp::kRelu:
      r = v < W(0) ? W(0) : v;
      break;  // NaN passes through, as in numpy and torch
  }
  if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>)
    return T(float(r));
  else
    return T(r);
}

class SignedUnaryKernel final : public Kernel {
 public:
  SignedUnaryKernel(DataType dtype, SignedOp op) : dtype_(dtype), op_(op) {}
  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, x.shape()));
    const int64_t n = x.numel();
    switch (dtype_) {
      NXRT_CASES_NUMERIC({
        const T* in = x.data<T>();
        T* out = y->data<T>();
        for (int64_t i = 0; i < n; ++i) out[i] = signed_apply<T>(op_, in[i]);
      })
      default:
        return not_implemented("input X has unsupported type ", tensor_type_name(dtype_));
    }
    return Status();
  }

 private:
  DataType dtype_;
  SignedOp op_;
};

Expected<KernelPtr> create_signed(KernelInit& init, SignedOp op) {
  const DataType t = init.input_type(0);
  if (!is_float_type(t) && !is_integer_type(t)) return init.unsupported_type(0);
  init.set_all_outputs(t);
  if (t == DataType::kFloat && op != SignedOp::kSign) {
    const vmath::Unary fn = op == SignedOp::kAbs   ? vmath::Unary::kAbs
                            : op == SignedOp::kNeg ? vmath::Unary::kNeg
                                                   : vmath::Unary::kRelu;
    return make_kernel<VectorUnaryKernel>(t, fn, vmath::UnaryParams{});
  }
  return make_kernel<SignedUnaryKernel>(t, op);
}

// IsNaN, IsInf, Not, BitwiseNot.
class PredicateKernel final : public Kernel {
 public:
  enum class Kind { kIsNaN, kIsInf, kNot, kBitwiseNot };
  PredicateKernel(Kind kind, DataType dtype, bool pos, bool neg)
      : kind_(kind), dtype_(dtype), detect_pos_(pos), detect_neg_(neg) {}
  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, x.shape()));
    const int64_t n = x.numel();
    if (kind_ == Kind::kNot) {
      for (int64_t i = 0; i < n; ++i) y->data<bool>()[i] = !x.data<bool>()[i];
      return Status();
    }
    if (kind_ == Kind::kBitwiseNot) {
      switch (dtype_) {
        NXRT_CASES_INT(for (int64_t i = 0; i < n; ++i) y->data<T>()[i] = T(~x.data<T>()[i]))
        default:
          return not_implemented("input X has unsupported type ", tensor_type_name(dtype_));
      }
      return Status();
    }
    switch (dtype_) {
      NXRT_CASES_FLOAT(for (int64_t i = 0; i < n; ++i) {
        const float v = float(x.data<T>()[i]);
        y->data<bool>()[i] = kind_ == Kind::kIsNaN ? std::isnan(v)
                                                   : std::isinf(v) && ((v > 0 && detect_pos_) ||
                                                                       (v < 0 && detect_neg_));
      })
      default:
        return not_implemented("input X has unsupported type ", tensor_type_name(dtype_));
    }
    return Status();
  }

 private:
  Kind kind_;
  DataType dtype_;
  bool detect_pos_, detect_neg_;
};

Expected<KernelPtr> create_predicate(KernelInit& init, PredicateKernel::Kind kind) {
  const DataType t = init.input_type(0);
  AttrReader attrs(init.node);
  const bool pos = attrs.get_int("detect_positive", 1) != 0;
  const bool neg = attrs.get_int("detect_negative", 1) != 0;
  NXRT_RETURN_IF_ERROR(attrs.status());
  using K = PredicateKernel::Kind;
  if (kind == K::kNot && t != DataType::kBool) return init.unsupported_type(0);
  if (kind == K::kBitwiseNot && !is_integer_type(t)) return init.unsupported_type(0);
  if ((kind == K::kIsNaN || kind == K::kIsInf) && !is_float_type(t))
    return init.unsupported_type(0);
  init.set_all_outputs(kind == K::kBitwiseNot ? t : DataType::kBool);
  return make_kernel<PredicateKernel>(kind, t, pos, neg);
}

}  // namespace

#define NXRT_FLOAT_UNARY(fn, name) \
  Expected<KernelPtr> fn(KernelInit& init) { return create_float_unary(init, name); }
NXRT_FLOAT_UNARY(create_exp, "Exp")
NXRT_FLOAT_UNARY(create_log, "Log")
NXRT_FLOAT_UNARY(create_sqrt, "Sqrt")
NXRT_FLOAT_UNARY(create_reciprocal, "Reciprocal")
NXRT_FLOAT_UNARY(create_floor, "Floor")
NXRT_FLOAT_UNARY(create_ceil, "Ceil")
NXRT_FLOAT_UNARY(create_round, "Round")
NXRT_FLOAT_UNARY(create_sin, "Sin")
NXRT_FLOAT_UNARY(create_cos, "Cos")
NXRT_FLOAT_UNARY(create_tan, "Tan")
NXRT_FLOAT_UNARY(create_asin, "Asin")
NXRT_FLOAT_UNARY(create_acos, "Acos")
NXRT_FLOAT_UNARY(create_atan, "Atan")
NXRT_FLOAT_UNARY(create_sinh, "Sinh")
NXRT_FLOAT_UNARY(create_cosh, "Cosh")
NXRT_FLOAT_UNARY(create_asinh, "Asinh")
NXRT_FLOAT_UNARY(create_acosh, "Acosh")
NXRT_FLOAT_UNARY(create_atanh, "Atanh")
NXRT_FLOAT_UNARY(create_tanh, "Tanh")
NXRT_FLOAT_UNARY(create_erf, "Erf")
NXRT_FLOAT_UNARY(create_sigmoid, "Sigmoid")
NXRT_FLOAT_UNARY(create_softplus, "Softplus")
NXRT_FLOAT_UNARY(create_softsign, "Softsign")
NXRT_FLOAT_UNARY(create_mish, "Mish")
NXRT_FLOAT_UNARY(create_leaky_relu, "LeakyRelu")
NXRT_FLOAT_UNARY(create_elu, "Elu")
NXRT_FLOAT_UNARY(create_celu, "Celu")
NXRT_FLOAT_UNARY(create_selu, "Selu")
NXRT_FLOAT_UNARY(create_thresholded_relu, "ThresholdedRelu")
NXRT_FLOAT_UNARY(create_hard_sigmoid, "HardSigmoid")
NXRT_FLOAT_UNARY(create_hard_swish, "HardSwish")
NXRT_FLOAT_UNARY(create_gelu, "Gelu")
NXRT_FLOAT_UNARY(create_swish, "Swish")
NXRT_FLOAT_UNARY(create_quick_gelu, "QuickGelu")  // com.microsoft: x * sigmoid(alpha * x)
#undef NXRT_FLOAT_UNARY

Expected<KernelPtr> create_abs(KernelInit& init) { return create_signed(init, SignedOp::kAbs); }
Expected<KernelPtr> create_neg(KernelInit& init) { return create_signed(init, SignedOp::kNeg); }
Expected<KernelPtr> create_sign(KernelInit& init) { return create_signed(init, SignedOp::kSign); }
Expected<KernelPtr> create_relu(KernelInit& init) { return create_signed(init, SignedOp::kRelu); }
Expected<KernelPtr> create_is_nan(KernelInit& init) {
  return create_predicate(init, PredicateKernel::Kind::kIsNaN);
}
Expected<KernelPtr> create_is_inf(KernelInit& init) {
  return create_predicate(init, PredicateKernel::Kind::kIsInf);
}
Expected<KernelPtr> create_not(KernelInit& init) {
  return create_predicate(init, PredicateKernel::Kind::kNot);
}
Expected<KernelPtr> create_bitwise_not(KernelInit& init) {
  return create_predicate(init, PredicateKernel::Kind::kBitwiseNot);
}

}  // namespace nxrt::cpu
