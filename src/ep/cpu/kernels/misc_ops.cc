// Assorted ops: BitCast, ReverseSequence, TensorScatter (KV-cache writes) and Det.
#include <cmath>
#include <cstring>
#include <string>
#include <type_traits>

#include "ep/cpu/kernels/common.h"
#include "ep/cpu/kernels/element_copy.h"

namespace nxrt::cpu {
namespace {

// Reinterprets each element's bits as `to`; widths were matched at prepare. Sub-byte
// types live unpacked, one per byte (int4/int2 sign-extended), so between them only the
// low `packed_bits` travel, sign-extended again when the target is a signed type.
class BitCastKernel final : public Kernel {
 public:
  BitCastKernel(int packed_bits, bool signed_target)
      : packed_bits_(packed_bits), signed_target_(signed_target) {}
  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, x.shape()));
    if (packed_bits_ == 0) {
      if (x.nbytes() > 0) std::memcpy(y->raw(), x.raw(), x.nbytes());
      return Status();
    }
    const auto* src = static_cast<const uint8_t*>(x.raw());
    auto* dst = static_cast<uint8_t*>(y->raw());
    const unsigned mask = (1u << packed_bits_) - 1;
    const unsigned sign = 1u << (packed_bits_ - 1);
    for (int64_t i = 0; i < x.numel(); ++i) {
      unsigned v = src[i] & mask;
      if (signed_target_ && (v & sign)) v |= ~mask;
      dst[i] = uint8_t(v);
    }
    return Status();
  }

 private:
  int packed_bits_;
  bool signed_target_;
};

// Copies `count` elements of `bytes` each; strings are copied as objects.
void copy_run(DataType t, size_t bytes, const void* src, int64_t src_index, void* dst,
              int64_t dst_index, int64_t count) {
  copy_elements(t, static_cast<const char*>(src) + size_t(src_index) * bytes,
                static_cast<char*>(dst) + size_t(dst_index) * bytes, count);
}

// Reverses the first sequence_lens[b] steps along time_axis for each batch entry b;
// later steps are copied unchanged.
class ReverseSequenceKernel final : public Kernel {
 public:
  ReverseSequenceKernel(int64_t batch_axis, int64_t time_axis)
      : batch_axis_(batch_axis), time_axis_(time_axis) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    const Tensor& lens = *ctx.input(1);
    if (x.rank() < 2)
      return invalid_argument("input must have rank >= 2, got ", x.shape().to_string());
    const int64_t batch = x.shape()[size_t(batch_axis_)];
    const int64_t steps = x.shape()[size_t(time_axis_)];
    if (lens.rank() != 1 || lens.shape()[0] != batch)
      return invalid_argument("sequence_lens must have shape [", batch, "], got ",
                              lens.shape().to_string());
    const int64_t* len = lens.data<int64_t>();
    for (int64_t b = 0; b < batch; ++b)
      if (len[b] < 0 || len[b] > steps)
        return invalid_argument("sequence_lens[", b, "] = ", len[b], " is outside [0, ", steps,
                                "]");
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, x.shape()));
    const int64_t inner = x.shape().product(2, x.rank());
    const size_t bytes = element_bytes(x.dtype());
    // Element offset of (batch b, time t) in units of `inner` blocks.
    auto block = [&](int64_t b, int64_t t) {
      return batch_axis_ == 0 ? b * steps + t : t * batch + b;
    };
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t t = 0; t < steps; ++t) {
        const int64_t from = t < len[b] ? len[b] - 1 - t : t;
        copy_run(x.dtype(), bytes, x.raw(), block(b, from) * inner, y->raw(), block(b, t) * inner,
                 inner);
      }
    return Status();
  }

 private:
  int64_t batch_axis_, time_axis_;
};

// present = past with update written along `axis` at write_indices[b] (per batch entry b,
// the leading dim), wrapping around in circular mode.
class TensorScatterKernel final : public Kernel {
 public:
  TensorScatterKernel(int64_t axis, bool circular) : axis_(axis), circular_(circular) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor& past = *ctx.input(0);
    const Tensor& update = *ctx.input(1);
    const Tensor* indices = ctx.input(2);
    const int64_t r = int64_t(past.rank());
    int64_t axis = axis_;
    if (!normalize_axis(axis, r) || axis == 0)
      return invalid_argument("axis ", axis_, " must name a non-batch dim of rank-", r,
                              " past_cache");
    if (update.rank() != past.rank())
      return invalid_argument("update ", update.shape().to_string(), " and past_cache ",
                              past.shape().to_string(), " differ in rank");
    for (int64_t d = 0; d < r; ++d) {
      const int64_t p = past.shape()[size_t(d)], u = update.shape()[size_t(d)];
      if (d == axis ? u > p : u != p)
        return invalid_argument("update ", update.shape().to_string(), " does not fit past_cache ",
                                past.shape().to_string(), " (dim ", d, ")");
    }
    const int64_t batch = past.shape()[0];
    const int64_t max_len = past.shape()[size_t(axis)];
    const int64_t seq = update.shape()[size_t(axis)];
    if (indices && (indices->rank() != 1 || indices->shape()[0] != batch))
      return invalid_argument("write_indices must have shape [", batch, "], got ",
                              indices->shape().to_string());
    const int64_t* idx = indices ? indices->data<int64_t>() : nullptr;
    for (int64_t b = 0; idx && b < batch; ++b) {
      if (idx[b] < 0 || (!circular_ && idx[b] + seq > max_len))
        return invalid_argument("write_indices[", b, "] = ", idx[b], " with ", seq,
                                " update steps does not fit a cache of ", max_len);
    }
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, past.shape()));
    copy_elements(past.dtype(), past.raw(), y->raw(), past.numel());
    const size_t bytes = element_bytes(past.dtype());
    const int64_t inner = past.shape().product(size_t(axis) + 1, size_t(r));
    const int64_t outer = past.shape().product(0, size_t(axis));
    const int64_t per_batch = batch > 0 ? outer / batch : 0;
    for (int64_t o = 0; o < outer; ++o) {
      const int64_t start = idx ? idx[o / per_batch] : 0;
      for (int64_t s = 0; s < seq; ++s) {
        int64_t pos = start + s;
        if (circular_) pos %= max_len;
        copy_run(past.dtype(), bytes, update.raw(), (o * seq + s) * inner, y->raw(),
                 (o * max_len + pos) * inner, inner);
      }
    }
    return Status();
  }

 private:
  int64_t axis_;
  bool circular_;
};

template <typename T>
double widen(T v) {
  if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>)
    return double(float(v));
  else
    return double(v);
}

template <typename T>
T narrow_to(double v) {
  if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>)
    return T(float(v));
  else
    return T(v);
}

// Determinant of each trailing [n, n] matrix by LU factorisation with partial pivoting,
// in double.
template <typename T>
void determinants(const T* x, int64_t count, int64_t n, T* y) {
  std::vector<double> a(size_t(n * n));
  for (int64_t m = 0; m < count; ++m) {
    const T* src = x + m * n * n;
    for (int64_t i = 0; i < n * n; ++i) a[size_t(i)] = widen(src[i]);
    double det = 1.0;
    for (int64_t k = 0; k < n && det != 0.0; ++k) {
      int64_t p = k;
      for (int64_t i = k + 1; i < n; ++i)
        if (std::abs(a[size_t(i * n + k)]) > std::abs(a[size_t(p * n + k)])) p = i;
      const double pivot = a[size_t(p * n + k)];
      if (pivot == 0.0) {
        det = 0.0;
        break;
      }
      if (p != k) {
        for (int64_t j = 0; j < n; ++j) std::swap(a[size_t(k * n + j)], a[size_t(p * n + j)]);
        det = -det;
      }
      det *= pivot;
      for (int64_t i = k + 1; i < n; ++i) {
        const double f = a[size_t(i * n + k)] / pivot;
        if (f == 0.0) continue;
        for (int64_t j = k + 1; j < n; ++j) a[size_t(i * n + j)] -= f * a[size_t(k * n + j)];
      }
    }
    y[m] = narrow_to<T>(det);
  }
}

class DetKernel final : public Kernel {
 public:
  explicit DetKernel(DataType dtype) : dtype_(dtype) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    const size_t r = x.rank();
    if (r < 2 || x.shape()[r - 1] != x.shape()[r - 2])
      return invalid_argument("input must be [..., M, M], got ", x.shape().to_string());
    const int64_t n = x.shape()[r - 1];
    Shape out(std::span<const int64_t>(x.shape().begin(), r - 2));
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, out));
    switch (dtype_) {
      NXRT_CASES_FLOAT(determinants<T>(x.data<T>(), y->numel(), n, y->data<T>()))
      default:
        return not_implemented("type ", dtype_name(dtype_), " is not supported");
    }
    return Status();
  }

 private:
  DataType dtype_;
};

// x * sigmoid(alpha * x).

}  // namespace

Expected<KernelPtr> create_bit_cast(KernelInit& init) {
  AttrReader attrs(init.node);
  const int64_t to = attrs.require_int("to");
  NXRT_RETURN_IF_ERROR(attrs.status());
  const DataType from = init.input_type(0);
  if (!dtype_is_known(int32_t(to)) || DataType(to) == DataType::kUndefined)
    return init.error(StatusCode::kInvalidGraph, "'to' = ", to, " is not a tensor element type");
  const DataType target = DataType(to);
  if (from == DataType::kString || target == DataType::kString)
    return init.error(StatusCode::kInvalidGraph, "BitCast does not apply to strings");
  if (dtype_size(from) == 0 || dtype_size(target) == 0)
    return init.error(StatusCode::kNotImplemented, "BitCast between ", dtype_name(from), " and ",
                      dtype_name(target), " is not supported");
  auto bits = [](DataType t) {
    return dtype_packed_bits(t) ? size_t(dtype_packed_bits(t)) : dtype_size(t) * 8;
  };
  if (bits(from) != bits(target))
    return init.error(StatusCode::kInvalidGraph, "BitCast needs types of the same width; ",
                      dtype_name(from), " has ", bits(from), " bits and ", dtype_name(target), " ",
                      bits(target));
  init.set_all_outputs(target);
  const bool signed_target = target == DataType::kInt4 || target == DataType::kInt2;
  return make_kernel<BitCastKernel>(dtype_packed_bits(target), signed_target);
}

Expected<KernelPtr> create_reverse_sequence(KernelInit& init) {
  AttrReader attrs(init.node);
  const int64_t batch_axis = attrs.get_int("batch_axis", 1);
  const int64_t time_axis = attrs.get_int("time_axis", 0);
  NXRT_RETURN_IF_ERROR(attrs.status());
  if (!((batch_axis == 0 && time_axis == 1) || (batch_axis == 1 && time_axis == 0)))
    return init.error(StatusCode::kInvalidGraph, "batch_axis (", batch_axis, ") and time_axis (",
                      time_axis, ") must be 0 and 1 in some order");
  if (!movable_type(init.input_type(0))) return init.unsupported_type(0);
  if (init.input_type(1) != DataType::kInt64) return init.unsupported_type(1);
  init.set_all_outputs(init.input_type(0));
  return make_kernel<ReverseSequenceKernel>(batch_axis, time_axis);
}

Expected<KernelPtr> create_tensor_scatter(KernelInit& init) {
  AttrReader attrs(init.node);
  const int64_t axis = attrs.get_int("axis", -2);
  const std::string mode = attrs.get_string("mode", "linear");
  NXRT_RETURN_IF_ERROR(attrs.status());
  if (mode != "linear" && mode != "circular")
    return init.error(StatusCode::kInvalidGraph, "mode '", mode, "' is not linear or circular");
  const DataType t = init.input_type(0);
  if (!movable_type(t)) return init.unsupported_type(0);
  if (init.input_type(1) != t) return init.unsupported_type(1);
  if (init.has_input(2) && init.input_type(2) != DataType::kInt64) return init.unsupported_type(2);
  init.set_all_outputs(t);
  return make_kernel<TensorScatterKernel>(axis, mode == "circular");
}

Expected<KernelPtr> create_det(KernelInit& init) {
  const DataType t = init.input_type(0);
  if (!is_float_type(t)) return init.unsupported_type(0);
  init.set_all_outputs(t);
  return make_kernel<DetKernel>(t);
}

}  // namespace nxrt::cpu
