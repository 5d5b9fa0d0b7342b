// ArgMax and ArgMin: int64 index of the extreme element along one axis. Ties go to the
// first index, or the last with select_last_index; a NaN counts as the extreme (as in
// numpy), so the first (last) NaN wins.
#include <cmath>
#include <type_traits>

#include "ep/cpu/kernels/common.h"

namespace nxrt::cpu {
namespace {

// Does candidate v replace the current best b?
template <bool kMax, bool kLast, typename A>
inline bool better(A v, A b) {
  if constexpr (std::is_floating_point_v<A>) {
    if (std::isnan(b)) return kLast && std::isnan(v);
    if (std::isnan(v)) return true;
  }
  if constexpr (kMax)
    return kLast ? v >= b : v > b;
  else
    return kLast ? v <= b : v < b;
}

template <bool kMax, bool kLast, typename T>
void arg_typed(const T* x, int64_t* y, int64_t outer, int64_t n, int64_t inner) {
  using A = typename Wide<T>::type;
  if (inner == 1) {
    for (int64_t o = 0; o < outer; ++o) {
      const T* r = x + o * n;
      A best = A(r[0]);
      int64_t at = 0;
      for (int64_t k = 1; k < n; ++k) {
        const A v = A(r[k]);
        if (better<kMax, kLast>(v, best)) {
          best = v;
          at = k;
        }
      }
      y[o] = at;
    }
    return;
  }
  // Strided axis: sweep whole rows of `inner` so memory is read in order.
  std::vector<A> best(static_cast<size_t>(inner));
  for (int64_t o = 0; o < outer; ++o) {
    const T* base = x + o * n * inner;
    int64_t* idx = y + o * inner;
    for (int64_t j = 0; j < inner; ++j) {
      best[size_t(j)] = A(base[j]);
      idx[j] = 0;
    }
    for (int64_t k = 1; k < n; ++k) {
      const T* r = base + k * inner;
      for (int64_t j = 0; j < inner; ++j) {
        const A v = A(r[j]);
        if (better<kMax, kLast>(v, best[size_t(j)])) {
          best[size_t(j)] = v;
          idx[j] = k;
        }
      }
    }
  }
}

template <bool kMax>
class ArgKernel final : public Kernel {
 public:
  ArgKernel(DataType dtype, int64_t axis, bool keepdims, bool last)
      : dtype_(dtype), axis_(axis), keepdims_(keepdims), last_(last) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    const int64_t rank = int64_t(x.rank());
    int64_t axis = axis_;
    // A scalar behaves as a one-element vector.
    if (!normalize_axis(axis, rank == 0 ? 1 : rank))
      return invalid_argument("axis ", axis_, " is out of range for an input of rank ", rank);
    const Shape& s = x.shape();
    const int64_t n = rank == 0 ? 1 : s[size_t(axis)];
    Shape out_shape;
    for (int64_t d = 0; d < rank; ++d) {
      if (d != axis)
        out_shape.push_back(s[size_t(d)]);
      else if (keepdims_)
        out_shape.push_back(1);
    }
    const int64_t outer = rank == 0 ? 1 : s.product(0, size_t(axis));
    const int64_t inner = rank == 0 ? 1 : s.product(size_t(axis) + 1, s.size());
    if (n == 0 && outer * inner != 0)
      return invalid_argument("cannot take the arg", kMax ? "max" : "min", " of an empty axis ",
                              axis);
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, out_shape));
    if (outer * inner == 0) return Status();
    int64_t* out = y->data<int64_t>();
    switch (dtype_) {
      NXRT_CASES_NUMERIC({
        if (last_)
          arg_typed<kMax, true>(x.data<T>(), out, outer, n, inner);
        else
          arg_typed<kMax, false>(x.data<T>(), out, outer, n, inner);
      })
      default:
        return not_implemented("type ", tensor_type_name(dtype_), " is not supported");
    }
    return Status();
  }

 private:
  DataType dtype_;
  int64_t axis_;
  bool keepdims_;
  bool last_;
};

template <bool kMax>
Expected<KernelPtr> create_arg(KernelInit& init) {
  const DataType t = init.input_type(0);
  if (!is_float_type(t) && !is_integer_type(t)) return init.unsupported_type(0);
  AttrReader attrs(init.node);
  const int64_t axis = attrs.get_int("axis", 0);
  const bool keepdims = attrs.get_int("keepdims", 1) != 0;
  const bool last = attrs.get_int("select_last_index", 0) != 0;
  NXRT_RETURN_IF_ERROR(attrs.status());
  init.set_all_outputs(DataType::kInt64);
  return make_kernel<ArgKernel<kMax>>(t, axis, keepdims, last);
}

}  // namespace

Expected<KernelPtr> create_arg_max(KernelInit& init) { return create_arg<true>(init); }
Expected<KernelPtr> create_arg_min(KernelInit& init) { return create_arg<false>(init); }

}  // namespace nxrt::cpu
