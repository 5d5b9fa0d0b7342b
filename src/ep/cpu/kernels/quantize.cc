// Linear quantization: QuantizeLinear, DequantizeLinear (per-tensor, per-axis and
// blocked scales) and DynamicQuantizeLinear.
//
// Scale and zero point are indexed by viewing x as [outer, A, inner] around the
// quantization axis, so all three granularities share one loop. Sub-byte and float8
// element types have no storage type here yet and are refused at prepare.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "ep/cpu/kernels/common.h"

namespace nxrt::cpu {
namespace {

bool is_quantized_int(DataType t) {
  return t == DataType::kUint8 || t == DataType::kInt8 || t == DataType::kUint16 ||
         t == DataType::kInt16;
}

bool is_unsupported_narrow(DataType t) {
  switch (t) {
    case DataType::kFloat8E4M3FN: case DataType::kFloat8E4M3FNUZ: case DataType::kFloat8E5M2:
    case DataType::kFloat8E5M2FNUZ: case DataType::kUint4: case DataType::kInt4:
    case DataType::kFloat4E2M1:
      return true;
    default:
      return false;
  }
}

// How the scale (and zero point) tensor maps onto x.
struct QuantLayout {
  int64_t outer = 1, axis_dim = 1, inner = 1;  // x viewed as [outer, axis_dim, inner]
  int64_t blocks = 1;                           // scale entries along the axis
  int64_t block = 0;                            // 0: per-tensor or per-axis
  bool per_tensor = true;

  int64_t scale_index(int64_t o, int64_t a, int64_t i) const {
    if (per_tensor) return 0;
    if (block == 0) return a;
    return (o * blocks + a / block) * inner + i;
  }
};

Status make_layout(const Shape& x, const Tensor& scale, const Tensor* zero_point, int64_t axis,
                   int64_t block_size, QuantLayout& out) {
  const int64_t rank = int64_t(x.size());
  if (zero_point && zero_point->shape() != scale.shape())
    return invalid_argument("zero point shape ", zero_point->shape().to_string(),
                            " differs from scale shape ", scale.shape().to_string());
  if (block_size <= 0 && scale.numel() == 1 && scale.rank() <= 1) return Status();
  if (!normalize_axis(axis, rank))
    return invalid_argument("axis ", axis, " is out of range for input rank ", rank);
  out.per_tensor = false;
  out.outer = x.product(0, size_t(axis));
  out.axis_dim = x[size_t(axis)];
  out.inner = x.product(size_t(axis) + 1, x.size());
  if (block_size <= 0) {
    if (scale.rank() != 1 || scale.numel() != out.axis_dim)
      return invalid_argument("per-axis scale must be 1-D of size ", out.axis_dim, " (axis ", axis,
                              "), got shape ", scale.shape().to_string());
    return Status();
  }
  const int64_t blocks = (out.axis_dim + block_size - 1) / block_size;
  bool ok = int64_t(scale.rank()) == rank;
  for (int64_t d = 0; ok && d < rank; ++d)
    ok = scale.shape()[size_t(d)] == (d == axis ? blocks : x[size_t(d)]);
  if (!ok)
    return invalid_argument("blocked scale shape ", scale.shape().to_string(), " does not match input ",
                            x.to_string(), " with block_size ", block_size, " on axis ", axis);
  out.block = block_size;
  out.blocks = blocks;
  return Status();
}

template <typename T>
float load_float(const T& v) { return float(v); }

template <typename T>
const T* opt_data(const Tensor* t) { return t ? t->data<T>() : nullptr; }

// y = saturate(round_half_even(x / scale) + zero_point)
template <typename X, typename S, typename Q>
void quantize(const Tensor& x, const Tensor& scale, const Tensor* zp, const QuantLayout& l, Q* y) {
  const X* px = x.data<X>();
  const S* ps = scale.data<S>();
  const Q* pz = opt_data<Q>(zp);
  constexpr double lo = double(std::numeric_limits<Q>::lowest());
  constexpr double hi = double(std::numeric_limits<Q>::max());
  auto one = [&](X v, int64_t si) {
    const float q = std::nearbyint(load_float(v) / load_float(ps[si]));
    double r = double(q) + (pz ? double(pz[si]) : 0.0);
    if (std::isnan(r)) r = 0;  // as the reference's int cast of NaN leaves it unspecified
    return Q(std::clamp(r, lo, hi));
  };
  if (l.per_tensor) {
    const int64_t n = x.numel();
    for (int64_t i = 0; i < n; ++i) y[i] = one(px[i], 0);
    return;
  }
  int64_t e = 0;
  for (int64_t o = 0; o < l.outer; ++o)
    for (int64_t a = 0; a < l.axis_dim; ++a)
      for (int64_t i = 0; i < l.inner; ++i, ++e) y[e] = one(px[e], l.scale_index(o, a, i));
}

// y = (x - zero_point) * scale
template <typename Q, typename S, typename Y>
void dequantize(const Tensor& x, const Tensor& scale, const Tensor* zp, const QuantLayout& l, Y* y) {
  const Q* px = x.data<Q>();
  const S* ps = scale.data<S>();
  const Q* pz = opt_data<Q>(zp);
  auto one = [&](Q v, int64_t si) {
    const float d = float(v) - (pz ? float(pz[si]) : 0.0f);
    return Y(d * load_float(ps[si]));
  };
  if (l.per_tensor) {
    const int64_t n = x.numel();
    for (int64_t i = 0; i < n; ++i) y[i] = one(px[i], 0);
    return;
  }
  int64_t e = 0;
  for (int64_t o = 0; o < l.outer; ++o)
    for (int64_t a = 0; a < l.axis_dim; ++a)
      for (int64_t i = 0; i < l.inner; ++i, ++e) y[e] = one(px[e], l.scale_index(o, a, i));
}

#define NXRT_SCALE_CASES(...)                                               \
  NXRT_CASE(kFloat, __VA_ARGS__) NXRT_CASE(kFloat16, __VA_ARGS__)           \
  NXRT_CASE(kBFloat16, __VA_ARGS__)
#define NXRT_QINT_CASES(...)                                                \
  NXRT_CASE(kUint8, __VA_ARGS__) NXRT_CASE(kInt8, __VA_ARGS__)              \
  NXRT_CASE(kUint16, __VA_ARGS__) NXRT_CASE(kInt16, __VA_ARGS__)

class QuantizeKernel final : public Kernel {
 public:
  QuantizeKernel(int64_t axis, int64_t block, DataType out) : axis_(axis), block_(block), out_(out) {}
  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    const Tensor& scale = *ctx.input(1);
    const Tensor* zp = ctx.input(2);
    if (zp && zp->numel() == 0 && scale.numel() != 0) zp = nullptr;
    QuantLayout l;
    NXRT_RETURN_IF_ERROR(make_layout(x.shape(), scale, zp, axis_, block_, l));
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, x.shape()));
    if (x.numel() == 0) return Status();
    const DataType xt = x.dtype();
    switch (out_) {
      NXRT_QINT_CASES({
        using Q = T;
        Q* py = y->data<Q>();
        switch (scale.dtype()) {
          NXRT_SCALE_CASES({
            using S = T;
            switch (xt) {
              NXRT_CASE(kFloat, quantize<T, S, Q>(x, scale, zp, l, py); return Status())
              NXRT_CASE(kFloat16, quantize<T, S, Q>(x, scale, zp, l, py); return Status())
              NXRT_CASE(kBFloat16, quantize<T, S, Q>(x, scale, zp, l, py); return Status())
              NXRT_CASE(kInt32, quantize<T, S, Q>(x, scale, zp, l, py); return Status())
              default: break;
            }
          })
          default: break;
        }
      })
      default: break;
    }
    return not_implemented("QuantizeLinear from ", dtype_name(xt), " with ", dtype_name(scale.dtype()),
                           " scale to ", dtype_name(out_), " is not supported");
  }

 private:
  int64_t axis_, block_;
  DataType out_;
};

class DequantizeKernel final : public Kernel {
 public:
  DequantizeKernel(int64_t axis, int64_t block, DataType out) : axis_(axis), block_(block), out_(out) {}
  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    const Tensor& scale = *ctx.input(1);
    const Tensor* zp = ctx.input(2);
    if (zp && zp->numel() == 0 && scale.numel() != 0) zp = nullptr;
    QuantLayout l;
    NXRT_RETURN_IF_ERROR(make_layout(x.shape(), scale, zp, axis_, block_, l));
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, x.shape()));
    if (x.numel() == 0) return Status();
    const DataType st = scale.dtype();
    switch (x.dtype()) {
      NXRT_QINT_CASES({
        using Q = T;
        switch (st) {
          NXRT_SCALE_CASES({
            using S = T;
            switch (out_) {
              NXRT_SCALE_CASES(dequantize<Q, S, T>(x, scale, zp, l, y->data<T>()); return Status())
              default: break;
            }
          })
          default: break;
        }
      })
      NXRT_CASE(kInt32, {
        using Q = T;
        switch (st) {
          NXRT_SCALE_CASES({
            using S = T;
            switch (out_) {
              NXRT_SCALE_CASES(dequantize<Q, S, T>(x, scale, zp, l, y->data<T>()); return Status())
              default: break;
            }
          })
          default: break;
        }
      })
      default: break;
    }
    return not_implemented("DequantizeLinear from ", dtype_name(x.dtype()), " with ", dtype_name(st),
                           " scale is not supported");
  }

 private:
  int64_t axis_, block_;
  DataType out_;
};

class DynamicQuantizeKernel final : public Kernel {
 public:
  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    const float* px = x.data<float>();
    const int64_t n = x.numel();
    // The range always includes 0 so that 0 is exactly representable.
    float maxx = 0, minx = 0;
    for (int64_t i = 0; i < n; ++i) {
      maxx = std::max(maxx, px[i]);
      minx = std::min(minx, px[i]);
    }
    const float scale = (maxx == minx ? 1.0f : maxx - minx) / 255.0f;
    const float zp = std::nearbyint(std::clamp(0.0f - minx / scale, 0.0f, 255.0f));
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, x.shape()));
    uint8_t* py = y->data<uint8_t>();
    for (int64_t i = 0; i < n; ++i) {
      const float q = std::nearbyint(px[i] / scale) + zp;
      py[i] = uint8_t(std::clamp(std::isnan(q) ? 0.0f : q, 0.0f, 255.0f));
    }
    if (ctx.num_outputs() > 1) {
      NXRT_ASSIGN_OR_RETURN(Tensor * s, ctx.output(1, Shape{}));
      *s->data<float>() = scale;
    }
    if (ctx.num_outputs() > 2) {
      NXRT_ASSIGN_OR_RETURN(Tensor * z, ctx.output(2, Shape{}));
      *z->data<uint8_t>() = uint8_t(zp);
    }
    return Status();
  }
};

Status check_scale_type(const KernelInit& init) {
  const DataType s = init.input_type(1);
  if (s == DataType::kFloat || ((s == DataType::kFloat16 || s == DataType::kBFloat16) && init.opset >= 19))
    return Status();
  return init.unsupported_type(1);
}

}  // namespace

Expected<KernelPtr> create_quantize_linear(KernelInit& init) {
  AttrReader attrs(init.node);
  const int64_t axis = attrs.get_int("axis", 1);
  const int64_t block = attrs.get_int("block_size", 0);
  const int64_t out_attr = attrs.get_int("output_dtype", 0);
  const bool saturate = attrs.get_int("saturate", 1) != 0;
  (void)saturate;  // only meaningful for float8 outputs, which are refused below
  NXRT_RETURN_IF_ERROR(attrs.status());
  if (block < 0) return init.error(StatusCode::kInvalidGraph, "block_size must not be negative");
  const DataType xt = init.input_type(0);
  if (xt != DataType::kFloat && xt != DataType::kInt32 &&
      !((xt == DataType::kFloat16 || xt == DataType::kBFloat16) && init.opset >= 19))
    return init.unsupported_type(0);
  NXRT_RETURN_IF_ERROR(check_scale_type(init));
  DataType out = DataType::kUint8;
  if (out_attr != 0) {
    if (!dtype_is_known(int32_t(out_attr)))
      return init.error(StatusCode::kInvalidGraph, "output_dtype ", out_attr, " is not a known type");
    out = DataType(out_attr);
  }
  if (init.has_input(2)) {
    const DataType z = init.input_type(2);
    if (out_attr != 0 && z != out)
      return init.error(StatusCode::kInvalidGraph, "output_dtype ", dtype_name(out),
                        " differs from the zero point type ", dtype_name(z));
    out = z;
  }
  if (is_unsupported_narrow(out))
    return init.error(StatusCode::kNotImplemented, "quantizing to ", dtype_name(out), " is not supported");
  if (!is_quantized_int(out))
    return init.error(StatusCode::kInvalidGraph, dtype_name(out), " is not a quantized type");
  init.output_types[0] = out;
  return make_kernel<QuantizeKernel>(axis, block, out);
}

Expected<KernelPtr> create_dequantize_linear(KernelInit& init) {
  AttrReader attrs(init.node);
  const int64_t axis = attrs.get_int("axis", 1);
  const int64_t block = attrs.get_int("block_size", 0);
  const int64_t out_attr = attrs.get_int("output_dtype", 0);
  NXRT_RETURN_IF_ERROR(attrs.status());
  if (block < 0) return init.error(StatusCode::kInvalidGraph, "block_size must not be negative");
  const DataType xt = init.input_type(0);
  if (is_unsupported_narrow(xt))
    return init.error(StatusCode::kNotImplemented, "dequantizing ", dtype_name(xt), " is not supported");
  if (!is_quantized_int(xt) && xt != DataType::kInt32) return init.unsupported_type(0);
  if (init.has_input(2) && init.input_type(2) != xt)
    return init.error(StatusCode::kInvalidGraph, "zero point type ", dtype_name(init.input_type(2)),
                      " differs from the input type ", dtype_name(xt));
  NXRT_RETURN_IF_ERROR(check_scale_type(init));
  DataType out = init.input_type(1);
  if (out_attr != 0) {
    if (!dtype_is_known(int32_t(out_attr)) || !is_float_type(DataType(out_attr)) ||
        DataType(out_attr) == DataType::kDouble)
      return init.error(StatusCode::kInvalidGraph, "output_dtype ", out_attr, " is not float, float16 or bfloat16");
    out = DataType(out_attr);
  }
  init.output_types[0] = out;
  return make_kernel<DequantizeKernel>(axis, block, out);
}

Expected<KernelPtr> create_dynamic_quantize_linear(KernelInit& init) {
  if (init.input_type(0) != DataType::kFloat) return init.unsupported_type(0);
  if (init.output_types.size() > 0) init.output_types[0] = DataType::kUint8;
  if (init.output_types.size() > 1) init.output_types[1] = DataType::kFloat;
  if (init.output_types.size() > 2) init.output_types[2] = DataType::kUint8;
  return make_kernel<DynamicQuantizeKernel>();
}

}  // namespace nxrt::cpu
