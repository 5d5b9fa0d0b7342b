// Selection ops, most with data-dependent output shapes: Compress, NonZero, TopK, Unique.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <type_traits>

#include "ep/cpu/kernels/common.h"

namespace nxrt::cpu {
namespace {

// A strict total order on values: NaN sorts after everything and equals itself, so
// sorting and grouping stay well defined for floats.
template <typename W>
bool less_total(const W& a, const W& b) {
  if constexpr (std::is_floating_point_v<W>) {
    if (std::isnan(a)) return false;
    if (std::isnan(b)) return true;
  }
  return a < b;
}
template <typename W>
bool equal_total(const W& a, const W& b) {
  if constexpr (std::is_floating_point_v<W>) {
    if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  }
  return a == b;
}

bool all_types(DataType t) {
  return is_float_type(t) || is_integer_type(t) || t == DataType::kBool || t == DataType::kString;
}

// ---- Compress ----

class CompressKernel final : public Kernel {
 public:
  CompressKernel(DataType dtype, bool has_axis, int64_t axis)
      : dtype_(dtype), has_axis_(has_axis), axis_(axis) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    const Tensor& cond = *ctx.input(1);
    if (cond.rank() != 1)
      return invalid_argument("condition must be 1-D, got shape ", cond.shape().to_string());
    const Shape& s = x.shape();
    int64_t axis = axis_;
    int64_t outer = 1, len = x.numel(), inner = 1;
    if (has_axis_) {
      if (!normalize_axis(axis, int64_t(s.size())))
        return invalid_argument("axis ", axis_, " is out of range for rank ", s.size());
      outer = s.product(0, size_t(axis));
      len = s[size_t(axis)];
      inner = s.product(size_t(axis) + 1, s.size());
    }
    const int64_t clen = cond.numel();
    if (clen > len)
      return invalid_argument("condition has ", clen, " entries but the selected axis has ", len);
    const bool* c = cond.data<bool>();
    std::vector<int64_t> keep;
    for (int64_t i = 0; i < clen; ++i)
      if (c[i]) keep.push_back(i);
    Shape out_shape;
    if (has_axis_) {
      out_shape = s;
      out_shape[size_t(axis)] = int64_t(keep.size());
    } else {
      out_shape = Shape{int64_t(keep.size())};
    }
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, out_shape));
    switch (dtype_) {
      NXRT_CASES_ALL({
        const T* src = x.data<T>();
        T* dst = y->data<T>();
        for (int64_t o = 0; o < outer; ++o)
          for (int64_t k : keep) {
            const T* row = src + (o * len + k) * inner;
            dst = std::copy(row, row + inner, dst);
          }
      })
      default:
        return not_implemented("type ", tensor_type_name(dtype_), " is not supported");
    }
    return Status();
  }

 private:
  DataType dtype_;
  bool has_axis_;
  int64_t axis_;
};

// ---- NonZero ----

template <typename T>
bool is_nonzero(const T& v) {
  if constexpr (std::is_same_v<T, std::string>)
    return !v.empty();
  else
    return wide_t<T>(v) != wide_t<T>(0);
}

class NonZeroKernel final : public Kernel {
 public:
  explicit NonZeroKernel(DataType dtype) : dtype_(dtype) {}
  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    switch (dtype_) {
      NXRT_CASES_ALL(return run<T>(ctx, x))
      default:
        break;
    }
    return not_implemented("type ", tensor_type_name(dtype_), " is not supported");
  }

 private:
  template <typename T>
  static Status run(KernelContext& ctx, const Tensor& x) {
    const T* p = x.data<T>();
    const int64_t n = x.numel();
    int64_t count = 0;
    for (int64_t i = 0; i < n; ++i) count += is_nonzero(p[i]) ? 1 : 0;
    // A scalar reports like a one-element 1-D tensor (as onnxruntime does).
    const Shape& s = x.shape();
    const size_t rank = std::max<size_t>(1, s.size());
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, Shape{int64_t(rank), count}));
    int64_t* out = y->data<int64_t>();
    std::vector<int64_t> coord(rank, 0);
    int64_t col = 0;
    for (int64_t i = 0; i < n; ++i) {
      if (is_nonzero(p[i])) {
        for (size_t d = 0; d < rank; ++d) out[int64_t(d) * count + col] = coord[d];
        ++col;
      }
      for (size_t d = rank; d-- > 0;) {
        if (++coord[d] < (s.empty() ? 1 : s[d])) break;
        coord[d] = 0;
      }
    }
    return Status();
  }
  DataType dtype_;
};

// ---- TopK ----

class TopKKernel final : public Kernel {
 public:
  TopKKernel(DataType dtype, int64_t axis, bool largest, bool k_from_attr, int64_t k_attr)
      : dtype_(dtype), axis_(axis), largest_(largest), k_from_attr_(k_from_attr), k_attr_(k_attr) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    int64_t k = k_attr_;
    if (!k_from_attr_) {
      std::vector<int64_t> kv;
      NXRT_RETURN_IF_ERROR(read_int_list(*ctx.input(1), kv, "K input"));
      if (kv.size() != 1) return invalid_argument("K must have exactly one element");
      k = kv[0];
    }
    const Shape& s = x.shape();
    int64_t axis = axis_;
    if (!normalize_axis(axis, int64_t(s.size())))
      return invalid_argument("axis ", axis_, " is out of range for rank ", s.size());
    const int64_t len = s[size_t(axis)];
    if (k < 0 || k > len)
      return invalid_argument("K = ", k, " is outside [0, ", len, "] for axis ", axis);
    Shape out_shape = s;
    out_shape[size_t(axis)] = k;
    NXRT_ASSIGN_OR_RETURN(Tensor * values, ctx.output(0, out_shape));
    NXRT_ASSIGN_OR_RETURN(Tensor * indices, ctx.output(1, out_shape));
    const int64_t outer = s.product(0, size_t(axis));
    const int64_t inner = s.product(size_t(axis) + 1, s.size());
    switch (dtype_) {
      NXRT_CASES_NUMERIC(
          run<T>(x.data<T>(), values->data<T>(), indices->data<int64_t>(), outer, len, inner, k))
      default:
        return not_implemented("type ", tensor_type_name(dtype_), " is not supported");
    }
    return Status();
  }

 private:
  template <typename T>
  void run(const T* x, T* values, int64_t* indices, int64_t outer, int64_t len, int64_t inner,
           int64_t k) const {
    using W = wide_t<T>;
    if (k == 0) return;
    std::vector<W> vals(static_cast<size_t>(len));
    std::vector<int64_t> order(static_cast<size_t>(len));
    // Ties go to the lower index, which also makes the order total (stable results).
    auto before = [&](int64_t a, int64_t b) {
      const W& va = vals[size_t(a)];
      const W& vb = vals[size_t(b)];
      if (largest_ ? less_total(vb, va) : less_total(va, vb)) return true;
      if (largest_ ? less_total(va, vb) : less_total(vb, va)) return false;
      return a < b;
    };
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        const T* src = x + o * len * inner + i;
        for (int64_t j = 0; j < len; ++j) vals[size_t(j)] = W(src[j * inner]);
        std::iota(order.begin(), order.end(), int64_t(0));
        // Selection then a sort of only the k winners: O(len + k log k).
        if (k < len) std::nth_element(order.begin(), order.begin() + (k - 1), order.end(), before);
        std::sort(order.begin(), order.begin() + k, before);
        T* vout = values + o * k * inner + i;
        int64_t* iout = indices + o * k * inner + i;
        for (int64_t j = 0; j < k; ++j) {
          const int64_t idx = order[size_t(j)];
          vout[j * inner] = src[idx * inner];
          iout[j * inner] = idx;
        }
      }
    }
  }

  DataType dtype_;
  int64_t axis_;
  bool largest_, k_from_attr_;
  int64_t k_attr_;
};

// ---- Unique ----

class UniqueKernel final : public Kernel {
 public:
  UniqueKernel(DataType dtype, bool sorted, bool has_axis, int64_t axis)
      : dtype_(dtype), sorted_(sorted), has_axis_(has_axis), axis_(axis) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    switch (dtype_) {
      NXRT_CASES_ALL(return run<T>(ctx, x))
      default:
        break;
    }
    return not_implemented("type ", tensor_type_name(dtype_), " is not supported");
  }

 private:
  template <typename T>
  Status run(KernelContext& ctx, const Tensor& x) const {
    // Strings are compared in place; numbers widened (half types compare as float).
    using W = std::conditional_t<std::is_same_v<T, std::string>, const std::string&, wide_t<T>>;
    const Shape& s = x.shape();
    int64_t axis = axis_;
    // Without an axis the input is treated as one flat row of scalar "slices".
    int64_t outer = 1, len = x.numel(), inner = 1;
    if (has_axis_) {
      if (!normalize_axis(axis, int64_t(s.size())))
        return invalid_argument("axis ", axis_, " is out of range for rank ", s.size());
      outer = s.product(0, size_t(axis));
      len = s[size_t(axis)];
      inner = s.product(size_t(axis) + 1, s.size());
    }
    const T* p = x.data<T>();
    auto elem = [&](int64_t slice, int64_t o, int64_t i) -> W {
      return static_cast<W>(p[(o * len + slice) * inner + i]);
    };
    // Lexicographic comparison of two slices in row-major order of the other dims.
    auto cmp = [&](int64_t a, int64_t b) -> int {
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < inner; ++i) {
          W va = elem(a, o, i);
          W vb = elem(b, o, i);
          if (less_total(va, vb)) return -1;
          if (less_total(vb, va)) return 1;
        }
      return 0;
    };
    std::vector<int64_t> perm(static_cast<size_t>(len));
    std::iota(perm.begin(), perm.end(), int64_t(0));
    // Stable, so the first member of each run of equal slices is its first occurrence.
    std::stable_sort(perm.begin(), perm.end(), [&](int64_t a, int64_t b) { return cmp(a, b) < 0; });
    std::vector<int64_t> first, counts, inverse(static_cast<size_t>(len));
    for (int64_t j = 0; j < len; ++j) {
      if (j == 0 || cmp(perm[size_t(j - 1)], perm[size_t(j)]) != 0) {
        first.push_back(perm[size_t(j)]);
        counts.push_back(0);
      }
      ++counts.back();
      inverse[size_t(perm[size_t(j)])] = int64_t(first.size()) - 1;
    }
    const int64_t u = int64_t(first.size());
    if (!sorted_) {
      // Renumber groups by first occurrence.
      std::vector<int64_t> by_first(static_cast<size_t>(u));
      std::iota(by_first.begin(), by_first.end(), int64_t(0));
      std::sort(by_first.begin(), by_first.end(),
                [&](int64_t a, int64_t b) { return first[size_t(a)] < first[size_t(b)]; });
      std::vector<int64_t> rank_of(static_cast<size_t>(u)), f2(static_cast<size_t>(u)),
          c2(static_cast<size_t>(u));
      for (int64_t g = 0; g < u; ++g) {
        rank_of[size_t(by_first[size_t(g)])] = g;
        f2[size_t(g)] = first[size_t(by_first[size_t(g)])];
        c2[size_t(g)] = counts[size_t(by_first[size_t(g)])];
      }
      for (int64_t& v : inverse) v = rank_of[size_t(v)];
      first.swap(f2);
      counts.swap(c2);
    }
    Shape y_shape{u};
    if (has_axis_) {
      y_shape = s;
      y_shape[size_t(axis)] = u;
    }
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, y_shape));
    T* dst = y->data<T>();
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t g = 0; g < u; ++g) {
        const T* row = p + (o * len + first[size_t(g)]) * inner;
        dst = std::copy(row, row + inner, dst);
      }
    const std::vector<int64_t>* extra[] = {&first, &inverse, &counts};
    for (size_t k = 1; k < ctx.num_outputs() && k <= 3; ++k) {
      const std::vector<int64_t>& v = *extra[k - 1];
      NXRT_ASSIGN_OR_RETURN(Tensor * t, ctx.output(k, Shape{int64_t(v.size())}));
      std::copy(v.begin(), v.end(), t->data<int64_t>());
    }
    return Status();
  }

  DataType dtype_;
  bool sorted_, has_axis_;
  int64_t axis_;
};

}  // namespace

Expected<KernelPtr> create_compress(KernelInit& init) {
  AttrReader attrs(init.node);
  const bool has_axis = attrs.has("axis");
  const int64_t axis = attrs.get_int("axis", 0);
  NXRT_RETURN_IF_ERROR(attrs.status());
  if (!all_types(init.input_type(0))) return init.unsupported_type(0);
  if (init.input_type(1) != DataType::kBool) return init.unsupported_type(1);
  init.set_all_outputs(init.input_type(0));
  return make_kernel<CompressKernel>(init.input_type(0), has_axis, axis);
}

Expected<KernelPtr> create_non_zero(KernelInit& init) {
  if (!all_types(init.input_type(0))) return init.unsupported_type(0);
  init.set_all_outputs(DataType::kInt64);
  return make_kernel<NonZeroKernel>(init.input_type(0));
}

Expected<KernelPtr> create_top_k(KernelInit& init) {
  AttrReader attrs(init.node);
  const int64_t axis = attrs.get_int("axis", -1);
  const bool largest = attrs.get_int("largest", 1) != 0;
  const bool sorted = attrs.get_int("sorted", 1) != 0;
  const bool k_from_attr = init.opset < 10;
  const int64_t k = k_from_attr ? attrs.require_int("k") : 0;
  NXRT_RETURN_IF_ERROR(attrs.status());
  // sorted = 0 leaves the order unspecified; sorted output is one valid answer.
  (void)sorted;
  const DataType t = init.input_type(0);
  if (!is_float_type(t) && !is_integer_type(t)) return init.unsupported_type(0);
  if (!k_from_attr && init.input_type(1) != DataType::kInt64) return init.unsupported_type(1);
  init.output_types[0] = t;
  if (init.output_types.size() > 1) init.output_types[1] = DataType::kInt64;
  return make_kernel<TopKKernel>(t, axis, largest, k_from_attr, k);
}

Expected<KernelPtr> create_unique(KernelInit& init) {
  AttrReader attrs(init.node);
  const bool sorted = attrs.get_int("sorted", 1) != 0;
  const bool has_axis = attrs.has("axis");
  const int64_t axis = attrs.get_int("axis", 0);
  NXRT_RETURN_IF_ERROR(attrs.status());
  const DataType t = init.input_type(0);
  if (!all_types(t)) return init.unsupported_type(0);
  init.set_all_outputs(DataType::kInt64);
  init.output_types[0] = t;
  return make_kernel<UniqueKernel>(t, sorted, has_axis, axis);
}

}  // namespace nxrt::cpu
