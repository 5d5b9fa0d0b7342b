// Scatter family: ScatterElements (and its old name Scatter) and ScatterND, with the
// none/add/mul/max/min reductions. The output starts as a copy of data; updates are
// applied in index order, so with reduction none a duplicate index keeps the last update.
#include <optional>
#include <string>
#include <type_traits>

#include "ep/cpu/kernels/common.h"

namespace nxrt::cpu {
namespace {

enum class Reduction { kNone, kAdd, kMul, kMax, kMin };

Expected<Reduction> parse_reduction(const std::string& s) {
  if (s == "none") return Reduction::kNone;
  if (s == "add") return Reduction::kAdd;
  if (s == "mul") return Reduction::kMul;
  if (s == "max") return Reduction::kMax;
  if (s == "min") return Reduction::kMin;
  return invalid_graph("unknown reduction '", s, "'");
}

template <typename T>
void apply(T& dst, const T& src, Reduction r) {
  if constexpr (std::is_same_v<T, std::string>) {
    dst = src;  // reductions on strings are refused at prepare
    (void)r;
  } else if constexpr (std::is_same_v<T, bool>) {
    switch (r) {
      case Reduction::kNone:
        dst = src;
        break;
      case Reduction::kAdd:
      case Reduction::kMax:
        dst = dst || src;
        break;
      case Reduction::kMul:
      case Reduction::kMin:
        dst = dst && src;
        break;
    }
  } else {
    using W = typename Wide<T>::type;
    const W a = W(dst), b = W(src);
    switch (r) {
      case Reduction::kNone:
        dst = src;
        break;
      case Reduction::kAdd:
        dst = T(W(a + b));
        break;
      case Reduction::kMul:
        dst = T(W(a * b));
        break;
      case Reduction::kMax:
        if (b > a) dst = src;
        break;
      case Reduction::kMin:
        if (b < a) dst = src;
        break;
    }
  }
}

// Reads an int32/int64 index tensor into int64 values.
template <typename Out>
Status read_indices(const Tensor& t, Out& out) {
  if (!copy_int_values(t, out))
    return invalid_argument("indices must be int32 or int64, got ", dtype_name(t.dtype()));
  return Status();
}

Status check_index(int64_t& v, int64_t dim, int64_t axis) {
  if (v < -dim || v >= dim)
    return invalid_argument("index ", v, " is out of bounds for axis ", axis, " of size ", dim);
  if (v < 0) v += dim;
  return Status();
}

bool supported_type(DataType t) {
  return is_float_type(t) || is_integer_type(t) || t == DataType::kBool || t == DataType::kString;
}

// ---- ScatterElements ----

class ScatterElementsKernel final : public Kernel {
 public:
  ScatterElementsKernel(DataType dtype, int64_t axis, Reduction r)
      : dtype_(dtype), axis_(axis), reduction_(r) {}

  // The output may take over data's block where data dies here (a state buffer updated
  // step by step): the copy below is then skipped (copy_elements of a block onto itself),
  // and the scatter writes in place, reading each element only where it writes it.
  std::optional<size_t> output0_overwrites_input() const override { return 0; }

  Status compute(KernelContext& ctx) const override {
    const Tensor& data = *ctx.input(0);
    const Tensor& indices = *ctx.input(1);
    const Tensor& updates = *ctx.input(2);
    const int64_t rank = int64_t(data.rank());
    int64_t axis = axis_;
    if (!normalize_axis(axis, rank))
      return invalid_argument("axis ", axis_, " is out of range for rank ", rank);
    if (indices.rank() != data.rank())
      return invalid_argument("indices rank ", indices.rank(), " differs from data rank ",
                              data.rank());
    if (!(indices.shape() == updates.shape()))
      return invalid_argument("updates shape ", updates.shape().to_string(),
                              " differs from indices shape ", indices.shape().to_string());
    for (int64_t d = 0; d < rank; ++d)
      if (d != axis && indices.shape()[size_t(d)] > data.shape()[size_t(d)])
        return invalid_argument("indices shape ", indices.shape().to_string(),
                                " exceeds data shape ", data.shape().to_string(), " on axis ", d);
    std::vector<int64_t> idx;
    NXRT_RETURN_IF_ERROR(read_indices(indices, idx));
    const int64_t axis_dim = data.shape()[size_t(axis)];
    for (int64_t& v : idx) NXRT_RETURN_IF_ERROR(check_index(v, axis_dim, axis));
    NXRT_ASSIGN_OR_RETURN(Tensor * out, ctx.output(0, data.shape()));
    copy_elements(dtype_, data.raw(), out->raw(), data.numel());
    switch (dtype_) {
      NXRT_CASES_ALL(run<T>(*out, updates, idx, size_t(axis)))
      default:
        return not_implemented("type ", tensor_type_name(dtype_), " is not supported");
    }
    return Status();
  }

 private:
  template <typename T>
  void run(Tensor& out, const Tensor& updates, const std::vector<int64_t>& idx, size_t axis) const {
    const Shape& ds = out.shape();
    const Shape& is = updates.shape();
    const size_t rank = ds.size();
    const int64_t n = updates.numel();
    if (n == 0) return;
    std::vector<int64_t> stride(rank, 1);
    for (size_t d = rank - 1; d-- > 0;) stride[d] = stride[d + 1] * ds[d + 1];
    T* dst = out.data<T>();
    const T* src = updates.data<T>();
    // Odometer over the indices shape; `base` is the data offset of the current
    // coordinates with the axis term left out (the index value supplies it).
    std::vector<int64_t> coord(rank, 0);
    int64_t base = 0;
    for (int64_t i = 0; i < n; ++i) {
      apply(dst[base + idx[size_t(i)] * stride[axis]], src[i], reduction_);
      for (size_t d = rank; d-- > 0;) {
        if (++coord[d] < is[d]) {
          if (d != axis) base += stride[d];
          break;
        }
        if (d != axis) base -= stride[d] * (is[d] - 1);
        coord[d] = 0;
      }
    }
  }

  DataType dtype_;
  int64_t axis_;
  Reduction reduction_;
};

// ---- ScatterND ----

class ScatterNDKernel final : public Kernel {
 public:
  ScatterNDKernel(DataType dtype, Reduction r) : dtype_(dtype), reduction_(r) {}

  // The output may take over data's block where data dies here (a state buffer updated
  // step by step): the copy below is then skipped (copy_elements of a block onto itself),
  // and the scatter writes in place, reading each element only where it writes it.
  std::optional<size_t> output0_overwrites_input() const override { return 0; }

  Status compute(KernelContext& ctx) const override {
    const Tensor& data = *ctx.input(0);
    const Tensor& indices = *ctx.input(1);
    const Tensor& updates = *ctx.input(2);
    const Shape& ds = data.shape();
    const Shape& is = indices.shape();
    if (is.empty()) return invalid_argument("indices must have rank >= 1");
    const int64_t k = is.back();
    if (k < 0 || k > int64_t(ds.size()))
      return invalid_argument("indices last dim ", k, " exceeds data rank ", ds.size());
    // updates must be indices.shape[:-1] + data.shape[k:].
    Shape expect;
    for (size_t d = 0; d + 1 < is.size(); ++d) expect.push_back(is[d]);
    for (size_t d = size_t(k); d < ds.size(); ++d) expect.push_back(ds[d]);
    if (!(updates.shape() == expect))
      return invalid_argument("updates shape ", updates.shape().to_string(), " should be ",
                              expect.to_string());
    // Inline for the few indices of the scatters real models run per step (state
    // updates): a warm run does not allocate.
    SmallVec<int64_t, 64> idx;
    NXRT_RETURN_IF_ERROR(read_indices(indices, idx));
    const int64_t slice = ds.product(size_t(k), ds.size());
    SmallVec<int64_t> stride(size_t(k), 0);
    for (int64_t j = 0; j < k; ++j) stride[size_t(j)] = ds.product(size_t(j) + 1, ds.size());
    const int64_t m = k == 0 ? is.product(0, is.size() - 1) : int64_t(idx.size()) / k;
    SmallVec<int64_t, 64> offsets(size_t(m), 0);
    for (int64_t i = 0; i < m; ++i) {
      int64_t off = 0;
      for (int64_t j = 0; j < k; ++j) {
        int64_t v = idx[size_t(i * k + j)];
        NXRT_RETURN_IF_ERROR(check_index(v, ds[size_t(j)], j));
        off += v * stride[size_t(j)];
      }
      offsets[size_t(i)] = off;
    }
    NXRT_ASSIGN_OR_RETURN(Tensor * out, ctx.output(0, ds));
    copy_elements(dtype_, data.raw(), out->raw(), data.numel());
    switch (dtype_) {
      NXRT_CASES_ALL({
        T* dst = out->data<T>();
        const T* src = updates.data<T>();
        for (int64_t i = 0; i < m; ++i)
          for (int64_t e = 0; e < slice; ++e)
            apply(dst[offsets[size_t(i)] + e], src[i * slice + e], reduction_);
      })
      default:
        return not_implemented("type ", tensor_type_name(dtype_), " is not supported");
    }
    return Status();
  }

 private:
  DataType dtype_;
  Reduction reduction_;
};

Expected<Reduction> read_reduction(KernelInit& init, AttrReader& attrs) {
  const std::string name = attrs.get_string("reduction", "none");
  Expected<Reduction> r = parse_reduction(name);
  if (!r) return init.error(StatusCode::kInvalidGraph, "unknown reduction '", name, "'");
  if (*r != Reduction::kNone && init.input_type(0) == DataType::kString)
    return init.error(StatusCode::kInvalidGraph, "reduction '", name,
                      "' is not defined for strings");
  return r;
}

Status check_types(KernelInit& init) {
  if (!supported_type(init.input_type(0))) return init.unsupported_type(0);
  const DataType it = init.input_type(1);
  if (it != DataType::kInt32 && it != DataType::kInt64) return init.unsupported_type(1);
  if (init.input_type(2) != init.input_type(0)) return init.unsupported_type(2);
  return Status();
}

}  // namespace

Expected<KernelPtr> create_scatter_elements(KernelInit& init) {
  AttrReader attrs(init.node);
  const int64_t axis = attrs.get_int("axis", 0);
  NXRT_ASSIGN_OR_RETURN(Reduction r, read_reduction(init, attrs));
  NXRT_RETURN_IF_ERROR(attrs.status());
  NXRT_RETURN_IF_ERROR(check_types(init));
  init.set_all_outputs(init.input_type(0));
  return make_kernel<ScatterElementsKernel>(init.input_type(0), axis, r);
}

Expected<KernelPtr> create_scatter_nd(KernelInit& init) {
  AttrReader attrs(init.node);
  NXRT_ASSIGN_OR_RETURN(Reduction r, read_reduction(init, attrs));
  NXRT_RETURN_IF_ERROR(attrs.status());
  NXRT_RETURN_IF_ERROR(check_types(init));
  init.set_all_outputs(init.input_type(0));
  return make_kernel<ScatterNDKernel>(init.input_type(0), r);
}

}  // namespace nxrt::cpu
