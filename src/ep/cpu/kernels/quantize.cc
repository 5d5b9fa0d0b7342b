// Linear quantization: QuantizeLinear, DequantizeLinear (per-tensor, per-axis and
// blocked scales) and DynamicQuantizeLinear.
//
// Scale and zero point are indexed by viewing x as [outer, A, inner] around the
// quantization axis, so all three granularities share one loop. Quantized types are
// integers (int8/16, uint8/16 and the sub-byte int4/uint4/int2/uint2, stored one value per
// byte as int8/uint8, see core/dtype.h) or narrow floats (the float8 types and float4e2m1,
// stored as bit patterns). Scale and zero point are widened to float once per run; x is
// converted element by element.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "core/float8.h"
#include "ep/cpu/kernels/common.h"
#include "ep/cpu/kernels/dynamic_quant.h"
#include "ep/cpu/vmath/vmath.h"

namespace nxrt::cpu {
namespace {

// What a quantized element type is: its storage, its integer range or float encoding.
struct QuantType {
  enum class Kind { kInt, kFloat8, kFloat4 } kind = Kind::kInt;
  DataType storage = DataType::kUint8;  // C++ storage the kernels dispatch on
  double lo = 0, hi = 255;              // saturation range of the integer kinds
  F8Format f8{};
};

bool quant_type(DataType t, QuantType& q) {
  using K = QuantType::Kind;
  switch (t) {
    case DataType::kUint8:
      q = {K::kInt, DataType::kUint8, 0, 255, {}};
      return true;
    case DataType::kInt8:
      q = {K::kInt, DataType::kInt8, -128, 127, {}};
      return true;
    case DataType::kUint16:
      q = {K::kInt, DataType::kUint16, 0, 65535, {}};
      return true;
    case DataType::kInt16:
      q = {K::kInt, DataType::kInt16, -32768, 32767, {}};
      return true;
    case DataType::kUint4:
      q = {K::kInt, DataType::kUint8, 0, 15, {}};
      return true;
    case DataType::kInt4:
      q = {K::kInt, DataType::kInt8, -8, 7, {}};
      return true;
    case DataType::kUint2:
      q = {K::kInt, DataType::kUint8, 0, 3, {}};
      return true;
    case DataType::kInt2:
      q = {K::kInt, DataType::kInt8, -2, 1, {}};
      return true;
    case DataType::kFloat4E2M1:
      q = {K::kFloat4, DataType::kUint8, 0, 0, {}};
      return true;
    default:
      if (!is_float8(t)) return false;
      q = {K::kFloat8, DataType::kUint8, 0, 0, f8_format(t)};
      return true;
  }
}

// How the scale (and zero point) tensor maps onto x.
struct QuantLayout {
  int64_t outer = 1, axis_dim = 1, inner = 1;  // x viewed as [outer, axis_dim, inner]
  int64_t blocks = 1;                          // scale entries along the axis
  int64_t block = 0;                           // 0: per-tensor or per-axis
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
  // One-element scale and zero point of different ranks ([] and [1]) both mean per-tensor;
  // the ONNX reference and backend data mix them.
  if (zero_point && zero_point->shape() != scale.shape() &&
      !(zero_point->numel() == 1 && scale.numel() == 1))
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
    return invalid_argument("blocked scale shape ", scale.shape().to_string(),
                            " does not match input ", x.to_string(), " with block_size ",
                            block_size, " on axis ", axis);
  out.block = block_size;
  out.blocks = blocks;
  return Status();
}

// The values of a small tensor (scale, zero point) as floats; narrow floats decoded. `out`
// is this thread's scratch `slot` (a warm run does not allocate); empty for no tensor.
Status widen(const Tensor* tensor, DataType as, size_t slot, std::span<const float>& result) {
  result = {};
  if (!tensor) return Status();
  const Tensor& t = *tensor;
  const int64_t n = t.numel();
  float* out = thread_scratch<float>(size_t(n), slot);
  result = std::span<const float>(out, size_t(n));
  const auto* bytes = static_cast<const uint8_t*>(t.raw());
  switch (as) {
    case DataType::kFloat8E8M0:
      for (int64_t i = 0; i < n; ++i) out[size_t(i)] = e8m0_to_float(bytes[i]);
      return Status();
    case DataType::kFloat4E2M1:
      for (int64_t i = 0; i < n; ++i) out[size_t(i)] = f4e2m1_to_float(bytes[i]);
      return Status();
    case DataType::kInt4:
    case DataType::kInt2:
      as = DataType::kInt8;
      break;
    case DataType::kUint4:
    case DataType::kUint2:
      as = DataType::kUint8;
      break;
    default:
      if (is_float8(as)) {
        const F8Format f = f8_format(as);
        for (int64_t i = 0; i < n; ++i) out[size_t(i)] = f8_to_float(bytes[i], f);
        return Status();
      }
  }
  switch (as) {
    NXRT_CASES_NUMERIC({
      const T* p = t.data<T>();
      for (int64_t i = 0; i < n; ++i) out[size_t(i)] = float(p[i]);
      return Status();
    })
    default:
      break;
  }
  return not_implemented("element type ", dtype_name(as), " cannot be a scale or zero point");
}

// Calls fn(element index, scale index) over x in memory order.
template <typename Fn>
void for_each_element(int64_t numel, const QuantLayout& l, Fn&& fn) {
  if (l.per_tensor) {
    for (int64_t i = 0; i < numel; ++i) fn(i, 0);
    return;
  }
  int64_t e = 0;
  for (int64_t o = 0; o < l.outer; ++o)
    for (int64_t a = 0; a < l.axis_dim; ++a)
      for (int64_t i = 0; i < l.inner; ++i, ++e) fn(e, l.scale_index(o, a, i));
}

// Calls fn(first element, count, scale index) over runs of x sharing one scale, for
// per-tensor and per-axis layouts (not blocked ones); big per-tensor runs are split
// across the run's threads.
template <typename Fn>
void for_each_scale_run(int64_t numel, const QuantLayout& l, Fn&& fn) {
  if (l.per_tensor) {
    parallel_ranges(numel, double(1 << 16), [&](size_t, int64_t begin, int64_t end) {
      fn(begin, end - begin, int64_t(0));
    });
    return;
  }
  int64_t e = 0;
  for (int64_t o = 0; o < l.outer; ++o)
    for (int64_t a = 0; a < l.axis_dim; ++a, e += l.inner) fn(e, l.inner, a);
}

// QuantizeLinear-23's `precision`: the type x / scale is computed in.
enum class Precision { kFloat, kFloat16, kBFloat16, kDouble };

template <typename X>
double quotient(X v, float s, Precision p) {
  switch (p) {
    case Precision::kFloat16:
      return float(Float16(float(Float16(float(v))) / float(Float16(s))));
    case Precision::kBFloat16:
      return float(BFloat16(float(BFloat16(float(v))) / float(BFloat16(s))));
    case Precision::kDouble:
      return double(v) / double(s);
    default:
      return double(float(v) / s);
  }
}

class QuantizeKernel final : public Kernel {
 public:
  QuantizeKernel(int64_t axis, int64_t block, DataType out, QuantType q, bool saturate,
                 Precision precision)
      : axis_(axis), block_(block), out_(out), q_(q), saturate_(saturate), precision_(precision) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    const Tensor& scale = *ctx.input(1);
    const Tensor* zp = ctx.input(2);
    if (zp && zp->numel() == 0 && scale.numel() != 0) zp = nullptr;
    QuantLayout l;
    NXRT_RETURN_IF_ERROR(make_layout(x.shape(), scale, zp, axis_, block_, l));
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, x.shape()));
    if (x.numel() == 0) return Status();
    std::span<const float> scales, zps;
    NXRT_RETURN_IF_ERROR(widen(&scale, scale.dtype(), 2, scales));
    NXRT_RETURN_IF_ERROR(widen(zp, out_, 3, zps));
    switch (x.dtype()) {
      NXRT_CASE(kFloat, return run<T>(x, l, scales, zps, *y))
      NXRT_CASE(kFloat16, return run<T>(x, l, scales, zps, *y))
      NXRT_CASE(kBFloat16, return run<T>(x, l, scales, zps, *y))
      NXRT_CASE(kInt32, return run<T>(x, l, scales, zps, *y))
      default:
        break;
    }
    return not_implemented("QuantizeLinear from ", dtype_name(x.dtype()), " is not supported");
  }

 private:
  template <typename X>
  Status run(const Tensor& x, const QuantLayout& l, std::span<const float> scales,
             std::span<const float> zps, Tensor& y) const {
    const X* px = x.data<X>();
    const float* pz = zps.empty() ? nullptr : zps.data();
    const int64_t n = x.numel();
    auto q = [&](int64_t e, int64_t si) { return quotient(px[e], scales[size_t(si)], precision_); };
    const bool full_8bit = (q_.storage == DataType::kUint8 && q_.hi == 255) ||
                           (q_.storage == DataType::kInt8 && q_.hi == 127);
    if constexpr (std::is_same_v<X, float>) {
      if (q_.kind == QuantType::Kind::kInt && full_8bit && precision_ == Precision::kFloat &&
          l.block == 0) {
        const bool is_signed = q_.storage == DataType::kInt8;
        auto* py = static_cast<uint8_t*>(y.raw());
        for_each_scale_run(n, l, [&](int64_t e, int64_t count, int64_t si) {
          vmath::quantize_8bit(px + e, size_t(count), scales[size_t(si)], pz ? pz[si] : 0.0f,
                               is_signed, py + e);
        });
        return Status();
      }
    }
    if (q_.kind == QuantType::Kind::kInt) {
      // y = saturate(round_half_even(x / scale) + zero_point)
      auto store = [&](auto* py) {
        using Q = std::remove_pointer_t<decltype(py)>;
        for_each_element(n, l, [&](int64_t e, int64_t si) {
          double r = std::nearbyint(q(e, si)) + (pz ? double(pz[si]) : 0.0);
          if (std::isnan(r)) r = 0;  // as the reference's int cast of NaN leaves it unspecified
          py[e] = Q(std::clamp(r, q_.lo, q_.hi));
        });
      };
      switch (q_.storage) {
        case DataType::kUint8:
          store(y.data<uint8_t>());
          break;
        case DataType::kInt8:
          store(y.data<int8_t>());
          break;
        case DataType::kUint16:
          store(y.data<uint16_t>());
          break;
        default:
          store(y.data<int16_t>());
          break;
      }
      return Status();
    }
    // Narrow floats: y = encode(x / scale + zero_point), rounding to nearest even.
    uint8_t* py = y.data<uint8_t>();
    if (q_.kind == QuantType::Kind::kFloat4) {
      for_each_element(n, l, [&](int64_t e, int64_t si) {
        py[e] = float_to_f4e2m1(q(e, si) + (pz ? double(pz[si]) : 0.0));
      });
    } else {
      for_each_element(n, l, [&](int64_t e, int64_t si) {
        py[e] = float_to_f8(q(e, si) + (pz ? double(pz[si]) : 0.0), q_.f8, saturate_);
      });
    }
    return Status();
  }

  int64_t axis_, block_;
  DataType out_;
  QuantType q_;
  bool saturate_;
  Precision precision_;
};

class DequantizeKernel final : public Kernel {
 public:
  DequantizeKernel(int64_t axis, int64_t block, DataType out)
      : axis_(axis), block_(block), out_(out) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    const Tensor& scale = *ctx.input(1);
    const Tensor* zp = ctx.input(2);
    if (zp && zp->numel() == 0 && scale.numel() != 0) zp = nullptr;
    QuantLayout l;
    NXRT_RETURN_IF_ERROR(make_layout(x.shape(), scale, zp, axis_, block_, l));
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, x.shape()));
    if (x.numel() == 0) return Status();
    std::span<const float> scales, zps;
    NXRT_RETURN_IF_ERROR(widen(&scale, scale.dtype(), 2, scales));
    NXRT_RETURN_IF_ERROR(widen(zp, x.dtype(), 3, zps));
    switch (out_) {
      NXRT_CASE(kFloat, return run(x, l, scales, zps, y->data<T>()))
      NXRT_CASE(kFloat16, return run(x, l, scales, zps, y->data<T>()))
      NXRT_CASE(kBFloat16, return run(x, l, scales, zps, y->data<T>()))
      default:
        break;
    }
    return not_implemented("DequantizeLinear to ", dtype_name(out_), " is not supported");
  }

 private:
  // y = (x - zero_point) * scale, with x widened by `value(e)`.
  template <typename Y, typename Value>
  static void apply(int64_t n, const QuantLayout& l, std::span<const float> scales,
                    std::span<const float> zps, Value value, Y* y) {
    const float* pz = zps.empty() ? nullptr : zps.data();
    for_each_element(n, l, [&](int64_t e, int64_t si) {
      const float d = value(e) - (pz ? pz[si] : 0.0f);
      y[e] = Y(d * scales[size_t(si)]);
    });
  }

  template <typename Y>
  Status run(const Tensor& x, const QuantLayout& l, std::span<const float> scales,
             std::span<const float> zps, Y* y) const {
    const int64_t n = x.numel();
    const DataType xt = x.dtype();
    const auto* bytes = static_cast<const uint8_t*>(x.raw());
    if (xt == DataType::kFloat4E2M1) {
      apply(
          n, l, scales, zps, [bytes](int64_t e) { return f4e2m1_to_float(bytes[e]); }, y);
      return Status();
    }
    if (is_float8(xt)) {
      // 256 codes: decode once per run instead of per element.
      std::array<float, 256> table;
      const F8Format f = f8_format(xt);
      for (int c = 0; c < 256; ++c) table[size_t(c)] = f8_to_float(uint8_t(c), f);
      apply(
          n, l, scales, zps, [&table, bytes](int64_t e) { return table[bytes[e]]; }, y);
      return Status();
    }
    const DataType storage = xt == DataType::kInt4 || xt == DataType::kInt2     ? DataType::kInt8
                             : xt == DataType::kUint4 || xt == DataType::kUint2 ? DataType::kUint8
                                                                                : xt;
    if constexpr (std::is_same_v<Y, float>) {
      if ((xt == DataType::kUint8 || xt == DataType::kInt8) && l.block == 0) {
        const float* pz = zps.empty() ? nullptr : zps.data();
        for_each_scale_run(n, l, [&](int64_t e, int64_t count, int64_t si) {
          vmath::dequantize_8bit(bytes + e, xt == DataType::kInt8, size_t(count),
                                 scales[size_t(si)], pz ? pz[si] : 0.0f, y + e);
        });
        return Status();
      }
    }
    switch (storage) {
      NXRT_CASE(kUint8,
                apply(
                    n, l, scales, zps, [p = x.data<T>()](int64_t e) { return float(p[e]); }, y);
                return Status())
      NXRT_CASE(kInt8,
                apply(
                    n, l, scales, zps, [p = x.data<T>()](int64_t e) { return float(p[e]); }, y);
                return Status())
      NXRT_CASE(kUint16,
                apply(
                    n, l, scales, zps, [p = x.data<T>()](int64_t e) { return float(p[e]); }, y);
                return Status())
      NXRT_CASE(kInt16,
                apply(
                    n, l, scales, zps, [p = x.data<T>()](int64_t e) { return float(p[e]); }, y);
                return Status())
      NXRT_CASE(kInt32,
                apply(
                    n, l, scales, zps, [p = x.data<T>()](int64_t e) { return float(p[e]); }, y);
                return Status())
      default:
        break;
    }
    return not_implemented("DequantizeLinear from ", dtype_name(xt), " is not supported");
  }

  int64_t axis_, block_;
  DataType out_;
};

// Pieces of a DynamicQuantizeLinear input split across the run's threads: both passes
// (range, then quantization) stream it from memory.
constexpr double kDynamicQuantPiece = double(1 << 16);
constexpr size_t kMaxDynamicQuantPieces = 64;

// min(x, 0) and max(x, 0) over x[0..n), NaN skipped (std::max / std::min keep the running
// value). 16 partial extremes vectorize.
void range_with_zero(const float* x, int64_t n, float& minx, float& maxx) {
  float hi[16] = {}, lo[16] = {};
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    for (int j = 0; j < 16; ++j) {
      hi[j] = std::max(hi[j], x[i + j]);
      lo[j] = std::min(lo[j], x[i + j]);
    }
  maxx = 0, minx = 0;
  for (; i < n; ++i) {
    maxx = std::max(maxx, x[i]);
    minx = std::min(minx, x[i]);
  }
  for (int j = 0; j < 16; ++j) {
    maxx = std::max(maxx, hi[j]);
    minx = std::min(minx, lo[j]);
  }
}

class DynamicQuantizeKernel final : public Kernel {
 public:
  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    const float* px = x.data<float>();
    const int64_t n = x.numel();
    const DynamicQuantParams params = dynamic_quant_params(px, n);
    const float scale = params.scale, zp = params.zero_point;
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, x.shape()));
    uint8_t* py = y->data<uint8_t>();
    parallel_ranges(n, kDynamicQuantPiece, [&](size_t, int64_t begin, int64_t end) {
      vmath::quantize_8bit(px + begin, size_t(end - begin), scale, zp, false, py + begin);
    });
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

// float16/bfloat16 scales came with opset 19, int32 (QuantizeLinear only) with 23 and
// float8e8m0 (microscaling) with 24.
Status check_scale_type(const KernelInit& init, bool quantize) {
  const DataType s = init.input_type(1);
  if (s == DataType::kFloat ||
      ((s == DataType::kFloat16 || s == DataType::kBFloat16) && init.opset >= 19) ||
      (s == DataType::kInt32 && quantize && init.opset >= 23) ||
      (s == DataType::kFloat8E8M0 && init.opset >= 24))
    return Status();
  return init.unsupported_type(1);
}

}  // namespace

DynamicQuantParams dynamic_quant_params(const float* x, int64_t n) {
  // The range always includes 0 so that 0 is exactly representable.
  float piece_min[kMaxDynamicQuantPieces], piece_max[kMaxDynamicQuantPieces];
  const size_t pieces = parallel_ranges(
      n, kDynamicQuantPiece,
      [&](size_t p, int64_t begin, int64_t end) {
        range_with_zero(x + begin, end - begin, piece_min[p], piece_max[p]);
      },
      kMaxDynamicQuantPieces);
  float minx = 0, maxx = 0;
  for (size_t p = 0; p < pieces; ++p) {
    minx = std::min(minx, piece_min[p]);
    maxx = std::max(maxx, piece_max[p]);
  }
  DynamicQuantParams p;
  p.scale = (maxx == minx ? 1.0f : maxx - minx) / 255.0f;
  p.zero_point = std::nearbyint(std::clamp(0.0f - minx / p.scale, 0.0f, 255.0f));
  return p;
}

Expected<KernelPtr> create_quantize_linear(KernelInit& init) {
  AttrReader attrs(init.node);
  const int64_t axis = attrs.get_int("axis", 1);
  const int64_t block = attrs.get_int("block_size", 0);
  const int64_t out_attr = attrs.get_int("output_dtype", 0);
  const bool saturate = attrs.get_int("saturate", 1) != 0;
  const int64_t precision_attr = attrs.get_int("precision", 0);
  NXRT_RETURN_IF_ERROR(attrs.status());
  if (block < 0) return init.error(StatusCode::kInvalidGraph, "block_size must not be negative");
  const DataType xt = init.input_type(0);
  if (xt != DataType::kFloat && xt != DataType::kInt32 &&
      !((xt == DataType::kFloat16 || xt == DataType::kBFloat16) && init.opset >= 19))
    return init.unsupported_type(0);
  NXRT_RETURN_IF_ERROR(check_scale_type(init, true));
  Precision precision = Precision::kFloat;
  switch (precision_attr) {
    case 0:
    case int64_t(DataType::kFloat):
      break;
    case int64_t(DataType::kFloat16):
      precision = Precision::kFloat16;
      break;
    case int64_t(DataType::kBFloat16):
      precision = Precision::kBFloat16;
      break;
    case int64_t(DataType::kDouble):
      precision = Precision::kDouble;
      break;
    default:
      return init.error(StatusCode::kInvalidGraph, "precision ", precision_attr,
                        " is not float, float16, bfloat16 or double");
  }
  DataType out = DataType::kUint8;
  if (out_attr != 0) {
    if (out_attr < 0 || out_attr > std::numeric_limits<int32_t>::max() ||
        !dtype_is_known(int32_t(out_attr)))
      return init.error(StatusCode::kInvalidGraph, "output_dtype ", out_attr,
                        " is not a known type");
    out = DataType(out_attr);
  }
  if (init.has_input(2)) {
    const DataType z = init.input_type(2);
    if (out_attr != 0 && z != out)
      return init.error(StatusCode::kInvalidGraph, "output_dtype ", dtype_name(out),
                        " differs from the zero point type ", dtype_name(z));
    out = z;
  }
  QuantType q;
  if (!quant_type(out, q))
    return init.error(StatusCode::kInvalidGraph, dtype_name(out), " is not a quantized type");
  init.output_types[0] = out;
  return make_kernel<QuantizeKernel>(axis, block, out, q, saturate, precision);
}

Expected<KernelPtr> create_dequantize_linear(KernelInit& init) {
  AttrReader attrs(init.node);
  const int64_t axis = attrs.get_int("axis", 1);
  const int64_t block = attrs.get_int("block_size", 0);
  const int64_t out_attr = attrs.get_int("output_dtype", 0);
  NXRT_RETURN_IF_ERROR(attrs.status());
  if (block < 0) return init.error(StatusCode::kInvalidGraph, "block_size must not be negative");
  const DataType xt = init.input_type(0);
  QuantType q;
  if (!quant_type(xt, q) && xt != DataType::kInt32) return init.unsupported_type(0);
  if (init.has_input(2) && init.input_type(2) != xt)
    return init.error(StatusCode::kInvalidGraph, "zero point type ", dtype_name(init.input_type(2)),
                      " differs from the input type ", dtype_name(xt));
  NXRT_RETURN_IF_ERROR(check_scale_type(init, false));
  DataType out = init.input_type(1);
  if (out_attr != 0) {
    if (out_attr < 0 || out_attr > std::numeric_limits<int32_t>::max() ||
        !dtype_is_known(int32_t(out_attr)) || !is_float_type(DataType(out_attr)) ||
        DataType(out_attr) == DataType::kDouble)
      return init.error(StatusCode::kInvalidGraph, "output_dtype ", out_attr,
                        " is not float, float16 or bfloat16");
    out = DataType(out_attr);
  } else if (out == DataType::kFloat8E8M0) {
    out = DataType::kFloat;  // a power-of-two scale names no output precision
  }
  init.output_types[0] = out;
  return make_kernel<DequantizeKernel>(axis, block, out);
}

// com.microsoft QuantizeLinear and DequantizeLinear: the ai.onnx ops of opset 21 under
// onnxruntime's domain (axis only; int16/uint16/int4/uint4 codes and float16 scales), as
// its quantization tool wrote them before ai.onnx had those types.
Expected<KernelPtr> create_contrib_quantize_linear(KernelInit& init) {
  init.opset = 21;
  return create_quantize_linear(init);
}

Expected<KernelPtr> create_contrib_dequantize_linear(KernelInit& init) {
  init.opset = 21;
  return create_dequantize_linear(init);
}

Expected<KernelPtr> create_dynamic_quantize_linear(KernelInit& init) {
  if (init.input_type(0) != DataType::kFloat) return init.unsupported_type(0);
  if (init.output_types.size() > 0) init.output_types[0] = DataType::kUint8;
  if (init.output_types.size() > 1) init.output_types[1] = DataType::kFloat;
  if (init.output_types.size() > 2) init.output_types[2] = DataType::kUint8;
  return make_kernel<DynamicQuantizeKernel>();
}

}  // namespace nxrt::cpu
