// Ops that build tensors from shapes, scalars or patterns: ConstantOfShape, Range,
// EyeLike, OneHot and Trilu.
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "ep/cpu/kernels/common.h"

namespace nxrt::cpu {
namespace {

// Reads element 0 of a numeric tensor as double (and exactly as int64 for integers).
Status read_scalar(const Tensor& t, const char* what, double& as_double, int64_t& as_int) {
  if (t.numel() != 1)
    return invalid_argument(what, " must have exactly one element, got shape ",
                            t.shape().to_string());
  switch (t.dtype()) {
    NXRT_CASES_FLOAT({
      as_double = double(t.data<T>()[0]);
      as_int = 0;
      if (std::isfinite(as_double) && std::fabs(as_double) < 9.2e18) as_int = int64_t(as_double);
      return Status();
    })
    NXRT_CASES_INT({
      as_double = double(t.data<T>()[0]);
      as_int = int64_t(t.data<T>()[0]);
      return Status();
    })
    default:
      break;
  }
  return invalid_argument(what, " has unsupported type ", dtype_name(t.dtype()));
}

// ---- ConstantOfShape ----

class ConstantOfShapeKernel final : public Kernel {
 public:
  explicit ConstantOfShapeKernel(std::vector<unsigned char> value) : value_(std::move(value)) {}
  Status compute(KernelContext& ctx) const override {
    SmallVec<int64_t> dims;
    NXRT_RETURN_IF_ERROR(read_int_list(*ctx.input(0), dims, "shape input"));
    const Shape shape(std::span<const int64_t>(dims.data(), dims.size()));
    for (int64_t d : dims)
      if (d < 0) return invalid_argument("shape ", shape.to_string(), " has a negative dim");
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, shape));
    const int64_t n = y->numel();
    switch (value_.size()) {
      case 1:
        fill<uint8_t>(*y, n);
        break;
      case 2:
        fill<uint16_t>(*y, n);
        break;
      case 4:
        fill<uint32_t>(*y, n);
        break;
      case 8:
        fill<uint64_t>(*y, n);
        break;
      default:
        for (int64_t i = 0; i < n; ++i)
          std::memcpy(static_cast<unsigned char*>(y->raw()) + size_t(i) * value_.size(),
                      value_.data(), value_.size());
    }
    return Status();
  }

 private:
  // Fills by bit pattern so one path serves every fixed-size dtype.
  template <typename U>
  void fill(Tensor& y, int64_t n) const {
    U v;
    std::memcpy(&v, value_.data(), sizeof(U));
    U* p = static_cast<U*>(y.raw());
    for (int64_t i = 0; i < n; ++i) p[i] = v;
  }
  std::vector<unsigned char> value_;
};

// ---- Range ----

class RangeKernel final : public Kernel {
 public:
  explicit RangeKernel(DataType dtype) : dtype_(dtype) {}
  Status compute(KernelContext& ctx) const override {
    double start, limit, delta;
    int64_t istart, ilimit, idelta;
    NXRT_RETURN_IF_ERROR(read_scalar(*ctx.input(0), "start", start, istart));
    NXRT_RETURN_IF_ERROR(read_scalar(*ctx.input(1), "limit", limit, ilimit));
    // (com.microsoft's Range makes delta optional, 1 by default.)
    delta = 1.0;
    idelta = 1;
    if (ctx.input(2)) NXRT_RETURN_IF_ERROR(read_scalar(*ctx.input(2), "delta", delta, idelta));
    int64_t n = 0;
    if (is_integer_type(dtype_)) {
      if (idelta == 0) return invalid_argument("delta must not be zero");
      // Ceil division in 128 bits: limit - start can overflow int64.
      const __int128 span = __int128(ilimit) - __int128(istart);
      __int128 q = span / idelta;
      if (q * idelta != span && ((span < 0) == (idelta < 0))) ++q;
      n = q < 0 ? 0 : q > std::numeric_limits<int64_t>::max() ? -1 : int64_t(q);
    } else {
      if (delta == 0 || !std::isfinite(delta))
        return invalid_argument("delta must be finite and non-zero");
      const double q = std::ceil((limit - start) / delta);
      if (std::isnan(q)) return invalid_argument("start and limit must be finite");
      n = q <= 0 ? 0 : q >= 9.2e18 ? -1 : int64_t(q);
    }
    if (n < 0) return invalid_argument("range has too many elements");
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, Shape{n}));
    switch (dtype_) {
      NXRT_CASES_INT({
        T* p = y->data<T>();
        for (int64_t i = 0; i < n; ++i) p[i] = T(istart + i * idelta);
      })
      NXRT_CASES_FLOAT({
        T* p = y->data<T>();
        for (int64_t i = 0; i < n; ++i) p[i] = T(start + double(i) * delta);
      })
      default:
        return not_implemented("type ", tensor_type_name(dtype_), " is not supported");
    }
    return Status();
  }

 private:
  DataType dtype_;
};

// ---- EyeLike ----

class EyeLikeKernel final : public Kernel {
 public:
  EyeLikeKernel(DataType dtype, int64_t k) : dtype_(dtype), k_(k) {}
  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    if (x.rank() != 2)
      return invalid_argument("input must be 2-D, got shape ", x.shape().to_string());
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, x.shape()));
    const int64_t rows = x.shape()[0], cols = x.shape()[1];
    switch (dtype_) {
      NXRT_CASES_NUMERIC(fill<T>(*y, rows, cols, T(1.0f)))
      NXRT_CASE(kBool, fill<T>(*y, rows, cols, true))
      default:
        return not_implemented("type ", tensor_type_name(dtype_), " is not supported");
    }
    return Status();
  }

 private:
  template <typename T>
  void fill(Tensor& y, int64_t rows, int64_t cols, T one) const {
    T* p = y.data<T>();
    std::fill(p, p + rows * cols, T(0.0f));
    // Row i has its one at column i + k when that column exists.
    const int64_t first = std::max<int64_t>(0, -k_);
    for (int64_t i = first; i < rows; ++i) {
      const int64_t j = i + k_;
      if (j >= cols) break;
      p[i * cols + j] = one;
    }
  }
  DataType dtype_;
  int64_t k_;
};

// ---- OneHot ----

class OneHotKernel final : public Kernel {
 public:
  explicit OneHotKernel(int64_t axis) : axis_(axis) {}
  Status compute(KernelContext& ctx) const override {
    const Tensor& indices = *ctx.input(0);
    const Tensor& values = *ctx.input(2);
    double depth_d;
    int64_t depth;
    NXRT_RETURN_IF_ERROR(read_scalar(*ctx.input(1), "depth", depth_d, depth));
    if (depth < 1) return invalid_argument("depth must be at least 1, got ", depth_d);
    if (values.numel() != 2)
      return invalid_argument("values must have 2 elements [off, on], got shape ",
                              values.shape().to_string());
    const int64_t rank = int64_t(indices.rank()) + 1;
    int64_t axis = axis_;
    if (!normalize_axis(axis, rank))
      return invalid_argument("axis ", axis_, " is out of range for rank ", rank);
    const Shape& is = indices.shape();
    Shape out_shape;
    for (int64_t d = 0; d < rank; ++d)
      out_shape.push_back(d == axis ? depth : is[size_t(d < axis ? d : d - 1)]);
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, out_shape));
    const int64_t outer = is.product(0, size_t(axis));
    const int64_t inner = is.product(size_t(axis), is.size());
    std::vector<int64_t> idx(size_t(indices.numel()));
    switch (indices.dtype()) {
      NXRT_CASES_INT(for (size_t i = 0; i < idx.size(); ++i) idx[i] = int64_t(indices.data<T>()[i]))
      NXRT_CASES_FLOAT(for (size_t i = 0; i < idx.size(); ++i) {
        const double v = double(indices.data<T>()[i]);
        // Anything outside [-depth, depth) is "no hot"; map it to a value the check rejects.
        idx[i] = std::isfinite(v) && std::fabs(v) < 9.2e18 ? int64_t(v)
                                                           : std::numeric_limits<int64_t>::max();
      })
      default:
        return invalid_argument("indices have unsupported type ", dtype_name(indices.dtype()));
    }
    switch (values.dtype()) {
      NXRT_CASES_ALL(fill<T>(*y, values.data<T>(), idx, outer, depth, inner))
      default:
        return not_implemented("values type ", tensor_type_name(values.dtype()),
                               " is not supported");
    }
    return Status();
  }

 private:
  template <typename T>
  static void fill(Tensor& y, const T* values, const std::vector<int64_t>& idx, int64_t outer,
                   int64_t depth, int64_t inner) {
    T* p = y.data<T>();
    const int64_t n = outer * depth * inner;
    for (int64_t i = 0; i < n; ++i) p[i] = values[0];
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        int64_t v = idx[size_t(o * inner + i)];
        if (v < 0 && v >= -depth) v += depth;
        if (v < 0 || v >= depth) continue;
        p[(o * depth + v) * inner + i] = values[1];
      }
    }
  }
  int64_t axis_;
};

// ---- Trilu ----

class TriluKernel final : public Kernel {
 public:
  TriluKernel(DataType dtype, bool upper) : dtype_(dtype), upper_(upper) {}
  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    if (x.rank() < 2)
      return invalid_argument("input must have rank >= 2, got ", x.shape().to_string());
    int64_t k = 0;
    if (const Tensor* kt = ctx.input(1)) {
      std::vector<int64_t> kv;
      NXRT_RETURN_IF_ERROR(read_int_list(*kt, kv, "k"));
      if (kv.size() != 1) return invalid_argument("k must be a scalar");
      k = kv[0];
    }
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, x.shape()));
    const size_t r = x.rank();
    const int64_t rows = x.shape()[r - 2], cols = x.shape()[r - 1];
    const int64_t batch = x.shape().product(0, r - 2);
    switch (dtype_) {
      NXRT_CASES_ALL(run<T>(x.data<T>(), y->data<T>(), batch, rows, cols, k))
      default:
        return not_implemented("type ", tensor_type_name(dtype_), " is not supported");
    }
    return Status();
  }

 private:
  template <typename T>
  void run(const T* x, T* y, int64_t batch, int64_t rows, int64_t cols, int64_t k) const {
    // Clamping k keeps i + k inside int64 for extreme k values.
    k = std::clamp<int64_t>(k, -rows - 1, cols + 1);
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t i = 0; i < rows; ++i) {
        const T* xr = x + (b * rows + i) * cols;
        T* yr = y + (b * rows + i) * cols;
        // Upper keeps columns j >= i + k, lower keeps j <= i + k.
        const int64_t split = std::clamp<int64_t>(upper_ ? i + k : i + k + 1, 0, cols);
        const int64_t keep_begin = upper_ ? split : 0, keep_end = upper_ ? cols : split;
        for (int64_t j = 0; j < cols; ++j) yr[j] = (j >= keep_begin && j < keep_end) ? xr[j] : T{};
      }
    }
  }
  DataType dtype_;
  bool upper_;
};

bool is_numeric(DataType t) { return is_float_type(t) || is_integer_type(t); }

}  // namespace

Expected<KernelPtr> create_constant_of_shape(KernelInit& init) {
  AttrReader attrs(init.node);
  const Tensor* value = attrs.get_tensor("value");
  NXRT_RETURN_IF_ERROR(attrs.status());
  DataType dtype = DataType::kFloat;
  std::vector<unsigned char> bytes(sizeof(float), 0);
  if (value) {
    if (value->numel() != 1)
      return init.error(StatusCode::kInvalidGraph,
                        "value must have exactly one element, got shape ",
                        value->shape().to_string());
    dtype = value->dtype();
    const size_t size = dtype_size(dtype);
    if (size == 0 || dtype == DataType::kString)
      return init.error(StatusCode::kNotImplemented, "value of type ", tensor_type_name(dtype),
                        " is not supported");
    bytes.assign(static_cast<const unsigned char*>(value->raw()),
                 static_cast<const unsigned char*>(value->raw()) + size);
  }
  init.set_all_outputs(dtype);
  return make_kernel<ConstantOfShapeKernel>(std::move(bytes));
}

Expected<KernelPtr> create_range(KernelInit& init) {
  const DataType t = init.input_type(0);
  if (!is_numeric(t)) return init.unsupported_type(0);
  for (size_t i = 1; i < 3; ++i)
    if (init.input_type(i) != t && (i < 2 || init.has_input(i))) return init.unsupported_type(i);
  init.set_all_outputs(t);
  return make_kernel<RangeKernel>(t);
}

Expected<KernelPtr> create_eye_like(KernelInit& init) {
  AttrReader attrs(init.node);
  const int64_t k = attrs.get_int("k", 0);
  const bool has_dtype = attrs.has("dtype");
  const int64_t dtype_raw = attrs.get_int("dtype", 0);
  NXRT_RETURN_IF_ERROR(attrs.status());
  DataType t = init.input_type(0);
  if (has_dtype) {
    if (!dtype_is_known(int32_t(dtype_raw)))
      return init.error(StatusCode::kInvalidGraph, "dtype ", dtype_raw, " is not a known type");
    t = DataType(dtype_raw);
  }
  if (!is_numeric(t) && t != DataType::kBool)
    return init.error(StatusCode::kNotImplemented, "output type ", tensor_type_name(t),
                      " is not supported");
  init.set_all_outputs(t);
  return make_kernel<EyeLikeKernel>(t, k);
}

Expected<KernelPtr> create_one_hot(KernelInit& init) {
  AttrReader attrs(init.node);
  const int64_t axis = attrs.get_int("axis", -1);
  NXRT_RETURN_IF_ERROR(attrs.status());
  if (!is_numeric(init.input_type(0))) return init.unsupported_type(0);
  if (!is_numeric(init.input_type(1))) return init.unsupported_type(1);
  init.set_all_outputs(init.input_type(2));
  return make_kernel<OneHotKernel>(axis);
}

Expected<KernelPtr> create_trilu(KernelInit& init) {
  AttrReader attrs(init.node);
  const bool upper = attrs.get_int("upper", 1) != 0;
  NXRT_RETURN_IF_ERROR(attrs.status());
  const DataType t = init.input_type(0);
  if (!is_numeric(t) && t != DataType::kBool && t != DataType::kString)
    return init.unsupported_type(0);
  init.set_all_outputs(t);
  return make_kernel<TriluKernel>(t, upper);
}

}  // namespace nxrt::cpu
