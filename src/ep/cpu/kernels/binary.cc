// Elementwise binary and variadic ops with numpy broadcasting: arithmetic, comparison,
// logic and bitwise families. float16/bfloat16 compute in float.
#include <cmath>
#include <type_traits>

#include "ep/cpu/kernels/common.h"

namespace nxrt::cpu {
namespace {

enum class Family { kArith, kCompare, kLogic, kBitwise };

struct AddOp {
  static constexpr Family family = Family::kArith;
  template <typename T>
  static T apply(T a, T b) {
    return a + b;
  }
};
struct SubOp {
  static constexpr Family family = Family::kArith;
  template <typename T>
  static T apply(T a, T b) {
    return a - b;
  }
};
struct MulOp {
  static constexpr Family family = Family::kArith;
  template <typename T>
  static T apply(T a, T b) {
    return a * b;
  }
};
struct DivOp {
  static constexpr Family family = Family::kArith;
  template <typename T>
  static T apply(T a, T b) {
    if constexpr (std::is_integral_v<T>)
      return b == 0 ? T(0) : T(a / b);  // checked earlier
    else
      return a / b;
  }
};
struct MaxOp {
  static constexpr Family family = Family::kArith;
  template <typename T>
  static T apply(T a, T b) {
    if constexpr (std::is_floating_point_v<T>) {
      if (std::isnan(a) || std::isnan(b)) return a + b;
    }
    return a > b ? a : b;
  }
};
struct MinOp {
  static constexpr Family family = Family::kArith;
  template <typename T>
  static T apply(T a, T b) {
    if constexpr (std::is_floating_point_v<T>) {
      if (std::isnan(a) || std::isnan(b)) return a + b;
    }
    return a < b ? a : b;
  }
};
struct EqualOp {
  static constexpr Family family = Family::kCompare;
  template <typename T>
  static bool apply(const T& a, const T& b) {
    return a == b;
  }
};
struct LessOp {
  static constexpr Family family = Family::kCompare;
  template <typename T>
  static bool apply(const T& a, const T& b) {
    return a < b;
  }
};
struct GreaterOp {
  static constexpr Family family = Family::kCompare;
  template <typename T>
  static bool apply(const T& a, const T& b) {
    return a > b;
  }
};
struct LessEqOp {
  static constexpr Family family = Family::kCompare;
  template <typename T>
  static bool apply(const T& a, const T& b) {
    return a <= b;
  }
};
struct GreaterEqOp {
  static constexpr Family family = Family::kCompare;
  template <typename T>
  static bool apply(const T& a, const T& b) {
    return a >= b;
  }
};
struct AndOp {
  static constexpr Family family = Family::kLogic;
  static bool apply(bool a, bool b) { return a && b; }
};
struct OrOp {
  static constexpr Family family = Family::kLogic;
  static bool apply(bool a, bool b) { return a || b; }
};
struct XorOp {
  static constexpr Family family = Family::kLogic;
  static bool apply(bool a, bool b) { return a != b; }
};
struct BitAndOp {
  static constexpr Family family = Family::kBitwise;
  template <typename T>
  static T apply(T a, T b) {
    return T(a & b);
  }
};
struct BitOrOp {
  static constexpr Family family = Family::kBitwise;
  template <typename T>
  static T apply(T a, T b) {
    return T(a | b);
  }
};
struct BitXorOp {
  static constexpr Family family = Family::kBitwise;
  template <typename T>
  static T apply(T a, T b) {
    return T(a ^ b);
  }
};

template <typename Op>
class BinaryKernel final : public Kernel {
 public:
  explicit BinaryKernel(DataType dtype) : dtype_(dtype) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor& a = *ctx.input(0);
    const Tensor& b = *ctx.input(1);
    return dispatch(ctx, a, b);
  }

  // Shared with the variadic kernel: out = op(a, b).
  Status dispatch(KernelContext& ctx, const Tensor& a, const Tensor& b) const {
    if constexpr (Op::family == Family::kLogic) {
      return broadcast_binary<bool, bool, bool>(ctx, a, b,
                                                [](bool x, bool y) { return Op::apply(x, y); });
    } else if constexpr (Op::family == Family::kBitwise) {
      switch (dtype_) {
        NXRT_CASES_INT(
            return broadcast_binary<T, T, T>(ctx, a, b, [](T x, T y) { return Op::apply(x, y); }))
        default:
          break;
      }
    } else if constexpr (Op::family == Family::kCompare) {
      switch (dtype_) {
        NXRT_CASES_NUMERIC(return broadcast_binary<T, T, bool>(
            ctx, a, b, [](T x, T y) { return Op::apply(wide_t<T>(x), wide_t<T>(y)); }))
        NXRT_CASE(kBool, return broadcast_binary<T, T, bool>(
                             ctx, a, b, [](T x, T y) { return Op::apply(x, y); }))
        NXRT_CASE(kString, return broadcast_binary<T, T, bool>(
                               ctx, a, b, [](const T& x, const T& y) { return Op::apply(x, y); }))
        default:
          break;
      }
    } else {
      if constexpr (std::is_same_v<Op, DivOp>) {
        if (is_integer_type(dtype_)) NXRT_RETURN_IF_ERROR(check_no_zero(b));
      }
      switch (dtype_) {
        NXRT_CASES_NUMERIC(return broadcast_binary<T, T, T>(
            ctx, a, b, [](T x, T y) { return narrow<T>(Op::apply(wide_t<T>(x), wide_t<T>(y))); }))
        default:
          break;
      }
    }
    return not_implemented("type ", tensor_type_name(dtype_), " is not supported");
  }

 private:
  static Status check_no_zero(const Tensor& b) {
    bool zero = false;
    switch (b.dtype()) {
      NXRT_CASES_INT(for (int64_t i = 0; i < b.numel(); ++i) zero |= b.data<T>()[i] == T(0))
      default:
        break;
    }
    return zero ? invalid_argument("integer division by zero") : Status();
  }
  DataType dtype_;
};

bool type_ok(Family family, DataType t) {
  switch (family) {
    case Family::kLogic:
      return t == DataType::kBool;
    case Family::kBitwise:
      return is_integer_type(t);
    case Family::kCompare:
      return is_float_type(t) || is_integer_type(t) || t == DataType::kBool ||
             t == DataType::kString;
    case Family::kArith:
      return is_float_type(t) || is_integer_type(t);
  }
  return false;
}

template <typename Op>
Expected<KernelPtr> create_binary(KernelInit& init) {
  const DataType t = init.input_type(0);
  if (init.input_type(1) != t)
    return init.error(StatusCode::kInvalidGraph, "inputs have different types ",
                      tensor_type_name(t), " and ", tensor_type_name(init.input_type(1)));
  if (!type_ok(Op::family, t)) return init.unsupported_type(0);
  init.set_all_outputs(Op::family == Family::kCompare ? DataType::kBool : t);
  return make_kernel<BinaryKernel<Op>>(t);
}

// Max, Min, Sum, Mean: fold the inputs pairwise left to right.
template <typename Op, bool kMean>
class VariadicKernel final : public Kernel {
 public:
  explicit VariadicKernel(DataType dtype) : binary_(dtype), dtype_(dtype) {}
  Status compute(KernelContext& ctx) const override {
    const size_t n = ctx.num_inputs();
    // Accumulate into owned temporaries; the last fold writes the real output.
    Tensor acc = *ctx.input(0);
    Tensor owned;
    for (size_t i = 1; i < n; ++i) {
      FoldContext fold(ctx, i + 1 == n && !kMean);
      NXRT_RETURN_IF_ERROR(binary_.dispatch(fold, acc, *ctx.input(i)));
      if (fold.result) {
        owned = std::move(fold.owned);
        acc = owned;
      }
    }
    if (n == 1 || kMean) {
      NXRT_ASSIGN_OR_RETURN(Tensor * out, ctx.output(0, acc.shape()));
      switch (dtype_) {
        NXRT_CASES_NUMERIC({
          const T* src = acc.data<T>();
          T* dst = out->data<T>();
          const int64_t m = acc.numel();
          for (int64_t j = 0; j < m; ++j)
            dst[j] = kMean ? narrow<T>(wide_t<T>(src[j]) / wide_t<T>(n)) : src[j];
        })
        default:
          return not_implemented("type ", tensor_type_name(dtype_), " is not supported");
      }
    }
    return Status();
  }

 private:
  // Routes intermediate results to owned tensors, the final one to the real output.
  class FoldContext final : public KernelContext {
   public:
    FoldContext(KernelContext& outer, bool final_step) : outer_(outer), final_(final_step) {
      num_outputs_ = 1;
    }
    Expected<Tensor*> output(size_t i, const Shape& shape) override {
      if (final_) return outer_.output(i, shape);
      NXRT_ASSIGN_OR_RETURN(owned, Tensor::allocate(outer_.input(0)->dtype(), shape));
      result = true;
      return &owned;
    }
    Status run_subgraph(const CompiledSubgraph&, std::span<const Tensor* const>,
                        std::vector<Tensor>&) override {
      return not_implemented("no subgraphs here");
    }
    bool terminate_requested() const override { return outer_.terminate_requested(); }
    Tensor owned;
    bool result = false;

   private:
    KernelContext& outer_;
    bool final_;
  };

  BinaryKernel<Op> binary_;
  DataType dtype_;
};

template <typename Op, bool kMean>
Expected<KernelPtr> create_variadic(KernelInit& init) {
  const DataType t = init.input_type(0);
  if (init.num_inputs() == 0)
    return init.error(StatusCode::kInvalidGraph, "needs at least one input");
  for (size_t i = 1; i < init.num_inputs(); ++i)
    if (init.input_type(i) != t)
      return init.error(StatusCode::kInvalidGraph, "input ", i, " has type ",
                        tensor_type_name(init.input_type(i)), ", expected ", tensor_type_name(t));
  if (!is_float_type(t) && !is_integer_type(t)) return init.unsupported_type(0);
  init.set_all_outputs(t);
  return make_kernel<VariadicKernel<Op, kMean>>(t);
}

}  // namespace

Expected<KernelPtr> create_add(KernelInit& init) { return create_binary<AddOp>(init); }
Expected<KernelPtr> create_sub(KernelInit& init) { return create_binary<SubOp>(init); }
Expected<KernelPtr> create_mul(KernelInit& init) { return create_binary<MulOp>(init); }
Expected<KernelPtr> create_div(KernelInit& init) { return create_binary<DivOp>(init); }
Expected<KernelPtr> create_equal(KernelInit& init) { return create_binary<EqualOp>(init); }
Expected<KernelPtr> create_less(KernelInit& init) { return create_binary<LessOp>(init); }
Expected<KernelPtr> create_greater(KernelInit& init) { return create_binary<GreaterOp>(init); }
Expected<KernelPtr> create_less_or_equal(KernelInit& init) { return create_binary<LessEqOp>(init); }
Expected<KernelPtr> create_greater_or_equal(KernelInit& init) {
  return create_binary<GreaterEqOp>(init);
}
Expected<KernelPtr> create_and(KernelInit& init) { return create_binary<AndOp>(init); }
Expected<KernelPtr> create_or(KernelInit& init) { return create_binary<OrOp>(init); }
Expected<KernelPtr> create_xor(KernelInit& init) { return create_binary<XorOp>(init); }
Expected<KernelPtr> create_bitwise_and(KernelInit& init) { return create_binary<BitAndOp>(init); }
Expected<KernelPtr> create_bitwise_or(KernelInit& init) { return create_binary<BitOrOp>(init); }
Expected<KernelPtr> create_bitwise_xor(KernelInit& init) { return create_binary<BitXorOp>(init); }
Expected<KernelPtr> create_max(KernelInit& init) { return create_variadic<MaxOp, false>(init); }
Expected<KernelPtr> create_min(KernelInit& init) { return create_variadic<MinOp, false>(init); }
Expected<KernelPtr> create_sum(KernelInit& init) { return create_variadic<AddOp, false>(init); }
Expected<KernelPtr> create_mean(KernelInit& init) { return create_variadic<AddOp, true>(init); }

}  // namespace nxrt::cpu
