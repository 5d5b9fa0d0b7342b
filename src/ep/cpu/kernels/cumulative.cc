// Running sums and products along one axis: CumSum and CumProd (exclusive/reverse).
#include <type_traits>

#include "ep/cpu/kernels/common.h"

namespace nxrt::cpu {
namespace {

template <typename T>
struct Acc {
  using type = T;
};
template <>
struct Acc<Float16> {
  using type = float;
};
template <>
struct Acc<BFloat16> {
  using type = float;
};

template <bool kProduct>
class CumulativeKernel final : public Kernel {
 public:
  CumulativeKernel(DataType dtype, bool exclusive, bool reverse)
      : dtype_(dtype), exclusive_(exclusive), reverse_(reverse) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    SmallVec<int64_t> axes;
    NXRT_RETURN_IF_ERROR(read_int_list(*ctx.input(1), axes, "axis input"));
    if (axes.size() != 1) return invalid_argument("axis must be a scalar");
    const int64_t rank = std::max<int64_t>(1, int64_t(x.rank()));
    int64_t axis = axes[0];
    if (!normalize_axis(axis, rank))
      return invalid_argument("axis ", axes[0], " is out of range for rank ", rank);
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, x.shape()));
    const Shape& s = x.shape();
    const int64_t len = s.empty() ? 1 : s[size_t(axis)];
    const int64_t outer = s.empty() ? 1 : s.product(0, size_t(axis));
    const int64_t inner = s.empty() ? 1 : s.product(size_t(axis) + 1, s.size());
    switch (dtype_) {
      NXRT_CASES_NUMERIC(run<T>(x.data<T>(), y->data<T>(), outer, len, inner))
      default:
        return not_implemented("type ", tensor_type_name(dtype_), " is not supported");
    }
    return Status();
  }

 private:
  template <typename T>
  void run(const T* x, T* y, int64_t outer, int64_t len, int64_t inner) const {
    using A = typename Acc<T>::type;
    const A identity = kProduct ? A(1) : A(0);
    // One accumulator per inner position so the inner loop walks memory contiguously.
    std::vector<A> acc(static_cast<size_t>(inner));
    for (int64_t o = 0; o < outer; ++o) {
      std::fill(acc.begin(), acc.end(), identity);
      const T* xb = x + o * len * inner;
      T* yb = y + o * len * inner;
      for (int64_t step = 0; step < len; ++step) {
        const int64_t k = reverse_ ? len - 1 - step : step;
        const T* xr = xb + k * inner;
        T* yr = yb + k * inner;
        for (int64_t i = 0; i < inner; ++i) {
          A& a = acc[size_t(i)];
          const A v = A(xr[i]);
          if (exclusive_) yr[i] = T(a);
          if constexpr (kProduct)
            a = A(a * v);
          else
            a = A(a + v);
          if (!exclusive_) yr[i] = T(a);
        }
      }
    }
  }

  DataType dtype_;
  bool exclusive_, reverse_;
};

template <bool kProduct>
Expected<KernelPtr> create_cumulative(KernelInit& init) {
  AttrReader attrs(init.node);
  const bool exclusive = attrs.get_int("exclusive", 0) != 0;
  const bool reverse = attrs.get_int("reverse", 0) != 0;
  NXRT_RETURN_IF_ERROR(attrs.status());
  const DataType t = init.input_type(0);
  if (!is_float_type(t) && !is_integer_type(t)) return init.unsupported_type(0);
  const DataType at = init.input_type(1);
  if (at != DataType::kInt32 && at != DataType::kInt64) return init.unsupported_type(1);
  init.set_all_outputs(t);
  return make_kernel<CumulativeKernel<kProduct>>(t, exclusive, reverse);
}

}  // namespace

Expected<KernelPtr> create_cum_sum(KernelInit& init) { return create_cumulative<false>(init); }
Expected<KernelPtr> create_cum_prod(KernelInit& init) { return create_cumulative<true>(init); }

}  // namespace nxrt::cpu
