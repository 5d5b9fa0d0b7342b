// The Reduce family: ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd, ReduceL1,
// ReduceL2, ReduceLogSum, ReduceLogSumExp, ReduceSumSquare.
//
// Every op is map -> fold -> finish: each element is mapped (square, abs, exp), folded
// into its output with an associative op (add, mul, max, min), and the fold result is
// finished (mean, sqrt, log). Floats accumulate in float (double in double, halves via
// float); integers accumulate in their own type with wrap-around, except where the
// finish step needs a real number (L2, LogSum, LogSumExp) and they use double.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "ep/cpu/kernels/common.h"
#include "ep/cpu/kernels/reduce_plan.h"
#include "ep/cpu/vmath/vmath.h"

namespace nxrt::cpu {
namespace {

enum class ReduceOp { kSum, kMean, kMax, kMin, kProd, kL1, kL2, kLogSum, kLogSumExp, kSumSquare };

// Accumulator type of op Op over elements T.
template <ReduceOp Op, typename T>
struct AccOf {
  static constexpr bool kNeedsReal =
      Op == ReduceOp::kL2 || Op == ReduceOp::kLogSum || Op == ReduceOp::kLogSumExp;
  using type = std::conditional_t<
      std::is_same_v<T, double>, double,
      std::conditional_t<std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16> ||
                             std::is_same_v<T, float>,
                         float, std::conditional_t<kNeedsReal, double, T>>>;
};

// Signed overflow is undefined in C++, and small unsigned types promote to (signed) int;
// integer reductions wrap like numpy's instead.
template <typename A>
A wrap_add(A a, A b) {
  if constexpr (std::is_integral_v<A> && std::is_signed_v<A>)
    return A(std::make_unsigned_t<A>(a) + std::make_unsigned_t<A>(b));
  else if constexpr (std::is_integral_v<A>)
    return A(a + b);
  else
    return a + b;
}
template <typename A>
A wrap_mul(A a, A b) {
  if constexpr (std::is_integral_v<A> && std::is_signed_v<A>) {
    using U = std::make_unsigned_t<A>;
    return A(U(uint64_t(U(a)) * uint64_t(U(b))));
  } else if constexpr (std::is_integral_v<A>) {
    return A(uint64_t(a) * uint64_t(b));
  } else {
    return a * b;
  }
}

template <ReduceOp Op, typename A>
struct Fold {
  static constexpr bool kMax = Op == ReduceOp::kMax;
  static constexpr bool kMin = Op == ReduceOp::kMin;
  static constexpr bool kProd = Op == ReduceOp::kProd;

  static A identity() {
    if constexpr (kMax) {
      if constexpr (std::numeric_limits<A>::has_infinity)
        return -std::numeric_limits<A>::infinity();
      else
        return std::numeric_limits<A>::lowest();
    } else if constexpr (kMin) {
      if constexpr (std::numeric_limits<A>::has_infinity)
        return std::numeric_limits<A>::infinity();
      else
        return std::numeric_limits<A>::max();
    } else if constexpr (kProd) {
      return A(1);
    } else {
      return A(0);
    }
  }
  // NaN wins max and min, as in numpy.
  static A combine(A a, A b) {
    if constexpr (kMax) {
      if constexpr (std::is_floating_point_v<A>)
        return (b > a || std::isnan(b)) && !std::isnan(a) ? b : a;
      else
        return b > a ? b : a;
    } else if constexpr (kMin) {
      if constexpr (std::is_floating_point_v<A>)
        return (b < a || std::isnan(b)) && !std::isnan(a) ? b : a;
      else
        return b < a ? b : a;
    } else if constexpr (kProd) {
      return wrap_mul(a, b);
    } else {
      return wrap_add(a, b);
    }
  }
};

template <ReduceOp Op, typename A>
A map_element(A x) {
  if constexpr (Op == ReduceOp::kSumSquare || Op == ReduceOp::kL2) {
    return wrap_mul(x, x);
  } else if constexpr (Op == ReduceOp::kL1) {
    if constexpr (std::is_unsigned_v<A>)
      return x;
    else if constexpr (std::is_integral_v<A>)
      return x < 0 ? A(std::make_unsigned_t<A>(0) - std::make_unsigned_t<A>(x)) : x;
    else
      return std::fabs(x);
  } else {
    return x;
  }
}

template <ReduceOp Op, typename A>
A finish(A a, int64_t count) {
  if constexpr (Op == ReduceOp::kMean) {
    if constexpr (std::is_integral_v<A>)
      return count == 0 ? A(0) : A(a / A(count));
    else
      return a / A(count);
  } else if constexpr (Op == ReduceOp::kL2) {
    return std::sqrt(a);
  } else if constexpr (Op == ReduceOp::kLogSum) {
    return std::log(a);
  } else {
    (void)count;
    return a;
  }
}

template <typename T, typename A>
T store(A v) {
  if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>)
    return T(float(v));
  else if constexpr (std::is_same_v<T, bool>)
    return bool(v);
  else
    return T(v);
}

// acc[o] = fold over the elements mapped to o of map(x, o), starting from acc's contents.
template <typename FoldT, typename A, typename T, typename Map>
void fold_into(const ReducePlan& p, const T* x, A* acc, Map map) {
  const int64_t n = p.inner;
  for_each_reduce_run(p, [&](int64_t in, int64_t out) {
    const T* r = x + in;
    if (p.inner_reduced) {
      // Four independent chains: shorter dependency chains vectorize and, for sums,
      // round off less than one long chain.
      A a0 = FoldT::identity(), a1 = a0, a2 = a0, a3 = a0;
      int64_t i = 0;
      for (; i + 4 <= n; i += 4) {
        a0 = FoldT::combine(a0, map(A(r[i]), out));
        a1 = FoldT::combine(a1, map(A(r[i + 1]), out));
        a2 = FoldT::combine(a2, map(A(r[i + 2]), out));
        a3 = FoldT::combine(a3, map(A(r[i + 3]), out));
      }
      for (; i < n; ++i) a0 = FoldT::combine(a0, map(A(r[i]), out));
      a0 = FoldT::combine(FoldT::combine(a0, a1), FoldT::combine(a2, a3));
      acc[out] = FoldT::combine(acc[out], a0);
    } else {
      A* o = acc + out;
      for (int64_t i = 0; i < n; ++i) o[i] = FoldT::combine(o[i], map(A(r[i]), out + i));
    }
  });
}

// Folds x (laid out by p) into acc (p.out_numel outputs, already holding the identity).
template <ReduceOp Op, typename T, typename A>
void fold_slice(const ReducePlan& p, const T* x, A* acc) {
  using F = Fold<Op, A>;
  constexpr bool kVector = std::is_same_v<T, float> &&
                           (Op == ReduceOp::kSum || Op == ReduceOp::kMean || Op == ReduceOp::kMax);
  if (kVector && p.inner_reduced && p.inner > 0) {
    // Contiguous runs of float: eight partial sums the compiler vectorizes, or the
    // vector max that keeps NaN (the scalar chains ran at a fifth of memory speed).
    for_each_reduce_run(p, [&](int64_t in, int64_t out) {
      const float* r = reinterpret_cast<const float*>(x + in);
      const float v =
          Op == ReduceOp::kMax ? vmath::max_value(r, size_t(p.inner)) : partial_sum(r, p.inner);
      acc[out] = F::combine(acc[out], A(v));
    });
  } else {
    fold_into<F>(p, x, acc, [](A v, int64_t) { return map_element<Op>(v); });
  }
}

template <ReduceOp Op, typename T>
void reduce_typed(const ReducePlan& p, const T* x, T* y) {
  using A = typename AccOf<Op, T>::type;
  A* acc;
  if constexpr (std::is_same_v<A, T>) {
    acc = y;  // accumulate in place
  } else {
    acc = thread_scratch<A>(size_t(p.out_numel), 0);
  }
  if constexpr (Op == ReduceOp::kLogSumExp) {
    // log(sum(exp(x - m))) + m with m the max of each output's inputs: no overflow.
    A* shift = thread_scratch<A>(size_t(p.out_numel), 1);
    std::fill(shift, shift + p.out_numel, Fold<ReduceOp::kMax, A>::identity());
    fold_into<Fold<ReduceOp::kMax, A>>(p, x, shift, [](A v, int64_t) { return v; });
    for (int64_t o = 0; o < p.out_numel; ++o)
      if (!std::isfinite(shift[o])) shift[o] = A(0);  // all -inf (or empty), or +inf: no shift
    std::fill(acc, acc + p.out_numel, A(0));
    const A* m = shift;
    fold_into<Fold<ReduceOp::kSum, A>>(p, x, acc,
                                       [m](A v, int64_t o) { return std::exp(v - m[o]); });
    for (int64_t o = 0; o < p.out_numel; ++o) y[o] = store<T>(std::log(acc[o]) + m[o]);
  } else {
    std::fill(acc, acc + p.out_numel, Fold<Op, A>::identity());
    // A kept outermost dim splits the work across the run's threads: its slices fold into
    // disjoint outputs (a normalization's mean per channel, a pooled row per batch).
    const int64_t slices = p.dims.size() > 1 && p.out_strides[0] != 0 ? p.dims[0] : 1;
    const int64_t pieces =
        std::min(slices, int64_t(parallel_pieces(double(p.in_numel), double(1 << 15))));
    if (pieces > 1) {
      ReducePlan slice = p;
      slice.dims.assign(p.dims.begin() + 1, p.dims.end());
      slice.out_strides.assign(p.out_strides.begin() + 1, p.out_strides.end());
      slice.in_numel /= slices;
      slice.out_numel /= slices;
      const int64_t per_piece = (slices + pieces - 1) / pieces;
      parallel_for(size_t(pieces), [&](size_t piece) {
        const int64_t end = std::min(slices, (int64_t(piece) + 1) * per_piece);
        for (int64_t i = int64_t(piece) * per_piece; i < end; ++i)
          fold_slice<Op>(slice, x + i * slice.in_numel, acc + i * p.out_strides[0]);
      });
    } else {
      fold_slice<Op>(p, x, acc);
    }
    for (int64_t o = 0; o < p.out_numel; ++o) y[o] = store<T>(finish<Op>(acc[o], p.reduce_count));
  }
}

template <ReduceOp Op>
class ReduceKernel final : public Kernel {
 public:
  ReduceKernel(DataType dtype, std::vector<int64_t> axes, bool keepdims, bool noop, bool axes_input)
      : dtype_(dtype),
        axes_(std::move(axes)),
        keepdims_(keepdims),
        noop_(noop),
        axes_input_(axes_input) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    SmallVec<int64_t> axes = axes_;
    if (axes_input_) {
      if (const Tensor* a = ctx.input(1))
        NXRT_RETURN_IF_ERROR(read_int_list(*a, axes, "axes input"));
    }
    const int64_t rank = int64_t(x.rank());
    SmallVec<bool> reduced;
    if (axes.empty()) {
      reduced.assign(size_t(rank), !noop_);
    } else {
      NXRT_RETURN_IF_ERROR(mark_axes(axes, rank, reduced));
    }
    Shape out_shape;
    for (size_t d = 0; d < size_t(rank); ++d) {
      if (!reduced[d])
        out_shape.push_back(x.shape()[d]);
      else if (keepdims_)
        out_shape.push_back(1);
    }
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, out_shape));
    const ReducePlan plan = make_reduce_plan(x.shape(), reduced);
    if constexpr (Op == ReduceOp::kMax || Op == ReduceOp::kMin) {
      if (dtype_ == DataType::kBool) {
        reduce_typed<Op>(plan, x.data<bool>(), y->data<bool>());
        return Status();
      }
    }
    switch (dtype_) {
      NXRT_CASES_NUMERIC(reduce_typed<Op>(plan, x.data<T>(), y->data<T>()))
      default:
        return not_implemented("type ", tensor_type_name(dtype_), " is not supported");
    }
    return Status();
  }

 private:
  DataType dtype_;
  std::vector<int64_t> axes_;
  bool keepdims_;
  bool noop_;
  bool axes_input_;
};

template <ReduceOp Op>
Expected<KernelPtr> create_reduce(KernelInit& init) {
  const DataType t = init.input_type(0);
  const bool bool_ok = (Op == ReduceOp::kMax || Op == ReduceOp::kMin) && t == DataType::kBool;
  if (!is_float_type(t) && !is_integer_type(t) && !bool_ok) return init.unsupported_type(0);
  // Axes moved from an attribute to an optional input: ReduceSum at 13, the rest at 18.
  const int64_t input_since = Op == ReduceOp::kSum ? 13 : 18;
  const bool axes_input = init.opset >= input_since;
  AttrReader attrs(init.node);
  const bool keepdims = attrs.get_int("keepdims", 1) != 0;
  const bool noop = axes_input && attrs.get_int("noop_with_empty_axes", 0) != 0;
  std::vector<int64_t> axes;
  if (!axes_input) axes = attrs.get_ints("axes");
  NXRT_RETURN_IF_ERROR(attrs.status());
  if (axes_input && init.has_input(1) && init.input_type(1) != DataType::kInt64)
    return init.error(StatusCode::kInvalidGraph, "axes input must be int64, got ",
                      tensor_type_name(init.input_type(1)));
  init.set_all_outputs(t);
  return make_kernel<ReduceKernel<Op>>(t, std::move(axes), keepdims, noop, axes_input);
}

}  // namespace

Expected<KernelPtr> create_reduce_sum(KernelInit& init) {
  return create_reduce<ReduceOp::kSum>(init);
}
Expected<KernelPtr> create_reduce_mean(KernelInit& init) {
  return create_reduce<ReduceOp::kMean>(init);
}
Expected<KernelPtr> create_reduce_max(KernelInit& init) {
  return create_reduce<ReduceOp::kMax>(init);
}
Expected<KernelPtr> create_reduce_min(KernelInit& init) {
  return create_reduce<ReduceOp::kMin>(init);
}
Expected<KernelPtr> create_reduce_prod(KernelInit& init) {
  return create_reduce<ReduceOp::kProd>(init);
}
Expected<KernelPtr> create_reduce_l1(KernelInit& init) {
  return create_reduce<ReduceOp::kL1>(init);
}
Expected<KernelPtr> create_reduce_l2(KernelInit& init) {
  return create_reduce<ReduceOp::kL2>(init);
}
Expected<KernelPtr> create_reduce_log_sum(KernelInit& init) {
  return create_reduce<ReduceOp::kLogSum>(init);
}
Expected<KernelPtr> create_reduce_log_sum_exp(KernelInit& init) {
  return create_reduce<ReduceOp::kLogSumExp>(init);
}
Expected<KernelPtr> create_reduce_sum_square(KernelInit& init) {
  return create_reduce<ReduceOp::kSumSquare>(init);
}

}  // namespace nxrt::cpu
