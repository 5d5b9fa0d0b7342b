// Gather, GatherElements and GatherND. Indices are int32 or int64, may be negative
// (counted from the end), and are all checked before anything is written: an index out of
// range is an error, never a read outside the tensor.
#include <algorithm>
#include <vector>

#include "ep/cpu/kernels/element_copy.h"

namespace nxrt::cpu {
namespace {

// Visits the index type: fn(TypeTag<int32_t>) or fn(TypeTag<int64_t>).
template <typename Fn>
Status visit_index_type(DataType t, Fn&& fn) {
  if (t == DataType::kInt32) return fn(TypeTag<int32_t>{});
  if (t == DataType::kInt64) return fn(TypeTag<int64_t>{});
  return invalid_argument("indices must be int32 or int64, got ", dtype_name(t));
}

// Normalizes every index into [0, dim); the first bad one is an error.
template <typename I, typename Out>
Status normalize_indices(const I* idx, int64_t n, int64_t dim, const char* what, Out& out) {
  out.resize(size_t(n));
  for (int64_t i = 0; i < n; ++i) {
    int64_t v = int64_t(idx[i]);
    if (v < -dim || v >= dim)
      return invalid_argument("index ", v, " at position ", i, " is out of range for ", what,
                              " of size ", dim);
    out[size_t(i)] = v < 0 ? v + dim : v;
  }
  return Status();
}

class GatherKernel final : public Kernel {
 public:
  GatherKernel(DataType dtype, int64_t axis) : dtype_(dtype), axis_(axis) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor& data = *ctx.input(0);
    const Tensor& indices = *ctx.input(1);
    const int64_t rank = int64_t(data.rank());
    int64_t axis = axis_;
    if (!normalize_axis(axis, rank))
      return invalid_argument("axis ", axis_, " is out of range for rank ", rank);
    const Shape& ds = data.shape();
    const int64_t dim = ds[size_t(axis)];
    const int64_t n_idx = indices.numel();
    SmallVec<int64_t, 16> idx;
    NXRT_RETURN_IF_ERROR(visit_index_type(indices.dtype(), [&](auto tag) {
      using I = typename decltype(tag)::type;
      return normalize_indices(indices.data<I>(), n_idx, dim, "the gathered axis", idx);
    }));
    Shape out_shape;
    for (int64_t d = 0; d < axis; ++d) out_shape.push_back(ds[size_t(d)]);
    for (int64_t d : indices.shape()) out_shape.push_back(d);
    for (int64_t d = axis + 1; d < rank; ++d) out_shape.push_back(ds[size_t(d)]);
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, out_shape));
    if (y->numel() == 0) return Status();
    const int64_t outer = ds.product(0, size_t(axis));
    const int64_t inner = ds.product(size_t(axis) + 1, size_t(rank));
    return visit_by_element_size(dtype_, [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* src = data.data<T>();
      T* dst = y->data<T>();
      for (int64_t o = 0; o < outer; ++o) {
        const T* block = src + o * dim * inner;
        T* out = dst + o * n_idx * inner;
        if (inner == 1) {
          for (int64_t j = 0; j < n_idx; ++j) out[j] = block[idx[size_t(j)]];
        } else {
          for (int64_t j = 0; j < n_idx; ++j)
            copy_run(block + idx[size_t(j)] * inner, out + j * inner, inner);
        }
      }
      return Status();
    });
  }

 private:
  DataType dtype_;
  int64_t axis_;
};

class GatherElementsKernel final : public Kernel {
 public:
  GatherElementsKernel(DataType dtype, int64_t axis) : dtype_(dtype), axis_(axis) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor& data = *ctx.input(0);
    const Tensor& indices = *ctx.input(1);
    const int64_t rank = int64_t(data.rank());
    if (rank == 0) return invalid_argument("data must have rank >= 1");
    if (int64_t(indices.rank()) != rank)
      return invalid_argument("indices have rank ", indices.rank(), " but data has rank ", rank);
    int64_t axis = axis_;
    if (!normalize_axis(axis, rank))
      return invalid_argument("axis ", axis_, " is out of range for rank ", rank);
    const Shape& ds = data.shape();
    const Shape& is = indices.shape();
    for (int64_t d = 0; d < rank; ++d)
      if (d != axis && is[size_t(d)] > ds[size_t(d)])
        return invalid_argument("indices shape ", is.to_string(), " exceeds data shape ",
                                ds.to_string(), " on axis ", d);
    std::vector<int64_t> idx;
    NXRT_RETURN_IF_ERROR(visit_index_type(indices.dtype(), [&](auto tag) {
      using I = typename decltype(tag)::type;
      return normalize_indices(indices.data<I>(), indices.numel(), ds[size_t(axis)],
                               "the gathered axis", idx);
    }));
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, is));
    const int64_t total = y->numel();
    if (total == 0) return Status();
    std::vector<int64_t> stride(size_t(rank), 1);
    for (size_t d = size_t(rank); d-- > 1;) stride[d - 1] = stride[d] * ds[d];
    const size_t last = size_t(rank) - 1;
    const int64_t inner = is[last];
    const int64_t axis_stride = stride[size_t(axis)];
    // Along the last dim the data offset moves by 1, except on the gathered axis itself.
    const int64_t step = size_t(axis) == last ? 0 : 1;
    return visit_by_element_size(dtype_, [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* src = data.data<T>();
      T* dst = y->data<T>();
      std::vector<int64_t> index(last, 0);
      int64_t base = 0;  // data offset of the row, without the gathered axis' contribution
      for (int64_t out = 0; out < total; out += inner) {
        for (int64_t j = 0; j < inner; ++j)
          dst[out + j] = src[base + j * step + idx[size_t(out + j)] * axis_stride];
        for (size_t d = last; d-- > 0;) {
          const int64_t s = d == size_t(axis) ? 0 : stride[d];
          base += s;
          if (++index[d] < is[d]) break;
          base -= s * is[d];
          index[d] = 0;
        }
      }
      return Status();
    });
  }

 private:
  DataType dtype_;
  int64_t axis_;
};

class GatherNDKernel final : public Kernel {
 public:
  GatherNDKernel(DataType dtype, int64_t batch_dims) : dtype_(dtype), batch_dims_(batch_dims) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor& data = *ctx.input(0);
    const Tensor& indices = *ctx.input(1);
    const Shape& ds = data.shape();
    const Shape& is = indices.shape();
    const size_t r = ds.size(), q = is.size(), b = size_t(batch_dims_);
    if (r < 1 || q < 1) return invalid_argument("data and indices must have rank >= 1");
    if (b >= std::min(r, q))
      return invalid_argument("batch_dims ", b, " must be less than both ranks (", r, ", ", q, ")");
    for (size_t d = 0; d < b; ++d)
      if (ds[d] != is[d])
        return invalid_argument("batch dim ", d, " differs: data ", ds.to_string(), ", indices ",
                                is.to_string());
    const int64_t k = is[q - 1];
    if (k < 1 || size_t(k) > r - b)
      return invalid_argument("indices' last dim is ", k, ", must be in [1, ", r - b, "]");
    Shape out_shape;
    for (size_t d = 0; d + 1 < q; ++d) out_shape.push_back(is[d]);
    for (size_t d = b + size_t(k); d < r; ++d) out_shape.push_back(ds[d]);
    const int64_t batches = ds.product(0, b);
    const int64_t tuples = is.product(b, q - 1);  // index tuples per batch
    const int64_t slice = ds.product(b + size_t(k), r);
    const int64_t batch_stride = ds.product(b, r);
    // Element offset of each index tuple within its batch.
    std::vector<int64_t> offsets(size_t(batches * tuples));
    NXRT_RETURN_IF_ERROR(visit_index_type(indices.dtype(), [&](auto tag) -> Status {
      using I = typename decltype(tag)::type;
      const I* idx = indices.data<I>();
      for (int64_t t = 0; t < batches * tuples; ++t) {
        int64_t off = 0;
        for (int64_t j = 0; j < k; ++j) {
          const int64_t dim = ds[b + size_t(j)];
          int64_t v = int64_t(idx[t * k + j]);
          if (v < -dim || v >= dim)
            return invalid_argument("index ", v, " is out of range for data dim ", b + size_t(j),
                                    " of size ", dim);
          if (v < 0) v += dim;
          off = off * dim + v;
        }
        offsets[size_t(t)] = off * slice;
      }
      return Status();
    }));
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, out_shape));
    if (y->numel() == 0) return Status();
    return visit_by_element_size(dtype_, [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* src = data.data<T>();
      T* dst = y->data<T>();
      for (int64_t bi = 0; bi < batches; ++bi)
        for (int64_t t = 0; t < tuples; ++t) {
          const int64_t i = bi * tuples + t;
          copy_run(src + bi * batch_stride + offsets[size_t(i)], dst + i * slice, slice);
        }
      return Status();
    });
  }

 private:
  DataType dtype_;
  int64_t batch_dims_;
};

Expected<DataType> check_types(KernelInit& init) {
  const DataType t = init.input_type(0);
  if (!movable_type(t)) return init.unsupported_type(0);
  const DataType it = init.input_type(1);
  if (it != DataType::kInt32 && it != DataType::kInt64) return init.unsupported_type(1);
  init.set_all_outputs(t);
  return t;
}

}  // namespace

Expected<KernelPtr> create_gather(KernelInit& init) {
  AttrReader attrs(init.node);
  const int64_t axis = attrs.get_int("axis", 0);
  NXRT_RETURN_IF_ERROR(attrs.status());
  NXRT_ASSIGN_OR_RETURN(DataType t, check_types(init));
  return make_kernel<GatherKernel>(t, axis);
}

Expected<KernelPtr> create_gather_elements(KernelInit& init) {
  AttrReader attrs(init.node);
  const int64_t axis = attrs.get_int("axis", 0);
  NXRT_RETURN_IF_ERROR(attrs.status());
  NXRT_ASSIGN_OR_RETURN(DataType t, check_types(init));
  return make_kernel<GatherElementsKernel>(t, axis);
}

Expected<KernelPtr> create_gather_nd(KernelInit& init) {
  AttrReader attrs(init.node);
  const int64_t batch_dims = attrs.get_int("batch_dims", 0);
  NXRT_RETURN_IF_ERROR(attrs.status());
  if (batch_dims < 0)
    return init.error(StatusCode::kInvalidGraph, "batch_dims is ", batch_dims, ", must be >= 0");
  NXRT_ASSIGN_OR_RETURN(DataType t, check_types(init));
  return make_kernel<GatherNDKernel>(t, batch_dims);
}

}  // namespace nxrt::cpu
