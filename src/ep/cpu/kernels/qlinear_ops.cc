// onnxruntime's QOperator-format ops (com.microsoft), as its older quantization tool
// writes them: each dequantizes its 8-bit inputs (x - zero_point) * scale, computes in
// float, and quantizes the result with the output's scale and zero point, rounding half
// to even and saturating. QLinearAdd and QLinearMul broadcast like Add; QLinearSigmoid and
// QLinearLeakyRelu map each of the 256 codes through a table; QLinearSoftmax runs in
// float along its axis; QLinearGlobalAveragePool
// averages each plane (NCHW, or NHWC with channels_last); QLinearConcat requantizes each
// input into its slice of the output. Scales are float scalars, zero points scalars of the
// data's type (0 when omitted).
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "ep/cpu/kernels/common.h"
#include "ep/cpu/vmath/vmath.h"

namespace nxrt::cpu {
namespace {

struct Quant {
  float scale = 1.0f;
  float zero = 0.0f;
};

// The scale at input `s` and zero point at input `z` (optional) as scalars.
Expected<Quant> read_quant(KernelContext& ctx, size_t s, size_t z, const char* what) {
  const Tensor* scale = ctx.input(s);
  const Tensor* zero = ctx.input(z);
  if (!scale || scale->numel() != 1 || scale->dtype() != DataType::kFloat)
    return invalid_argument(what, "'s scale must be one float");
  Quant q{scale->data<float>()[0], 0.0f};
  if (zero) {
    if (zero->numel() != 1) return invalid_argument(what, "'s zero point must be one value");
    if (zero->dtype() == DataType::kUint8)
      q.zero = float(zero->data<uint8_t>()[0]);
    else if (zero->dtype() == DataType::kInt8)
      q.zero = float(zero->data<int8_t>()[0]);
    else
      return invalid_argument(what, "'s zero point must be uint8 or int8");
  }
  return q;
}

template <typename T>
T quantize(float v, const Quant& q) {
  const float r = std::nearbyint(v / q.scale) + q.zero;
  const float lo = float(std::numeric_limits<T>::min()), hi = float(std::numeric_limits<T>::max());
  return T(std::isnan(r) ? q.zero : std::min(hi, std::max(lo, r)));
}

template <typename T>
float dequantize(T v, const Quant& q) {
  return (float(v) - q.zero) * q.scale;
}

// QLinearAdd / QLinearMul: (A, A_scale, A_zp, B, B_scale, B_zp, C_scale, C_zp).
class QLinearBinaryKernel final : public Kernel {
 public:
  QLinearBinaryKernel(DataType t, bool mul) : t_(t), mul_(mul) {}
  Status compute(KernelContext& ctx) const override {
    NXRT_ASSIGN_OR_RETURN(Quant qa, read_quant(ctx, 1, 2, "A"));
    NXRT_ASSIGN_OR_RETURN(Quant qb, read_quant(ctx, 4, 5, "B"));
    NXRT_ASSIGN_OR_RETURN(Quant qc, read_quant(ctx, 6, 7, "C"));
    const Tensor& a = *ctx.input(0);
    const Tensor& b = *ctx.input(3);
    if (t_ == DataType::kUint8) return run<uint8_t>(ctx, a, b, qa, qb, qc);
    return run<int8_t>(ctx, a, b, qa, qb, qc);
  }

 private:
  template <typename T>
  Status run(KernelContext& ctx, const Tensor& a, const Tensor& b, const Quant& qa, const Quant& qb,
             const Quant& qc) const {
    // The scale ratios as onnxruntime's MLAS folds them (so ties round the same way):
    // Add: (a - za) sa/sc + (b - zb) sb/sc; Mul: (a - za)(b - zb) sa sb/sc; then + zc.
    const float ra = qa.scale / qc.scale, rb = qb.scale / qc.scale;
    const float rm = qa.scale * qb.scale / qc.scale;
    const Quant unit{1.0f, qc.zero};
    if (mul_)
      return broadcast_binary<T, T, T>(ctx, a, b, [&qa, &qb, &unit, rm](T x, T y) {
        return quantize<T>((float(x) - qa.zero) * (float(y) - qb.zero) * rm, unit);
      });
    return broadcast_binary<T, T, T>(ctx, a, b, [&qa, &qb, &unit, ra, rb](T x, T y) {
      return quantize<T>((float(x) - qa.zero) * ra + (float(y) - qb.zero) * rb, unit);
    });
  }

  DataType t_;
  bool mul_;
};

// QLinearSigmoid / QLinearLeakyRelu: (X, X_scale, X_zp, Y_scale, Y_zp), through a table.
class QLinearUnaryKernel final : public Kernel {
 public:
  QLinearUnaryKernel(DataType t, vmath::Unary fn, float alpha) : t_(t), fn_(fn), alpha_(alpha) {}
  Status compute(KernelContext& ctx) const override {
    NXRT_ASSIGN_OR_RETURN(Quant qx, read_quant(ctx, 1, 2, "X"));
    NXRT_ASSIGN_OR_RETURN(Quant qy, read_quant(ctx, 3, 4, "Y"));
    const Tensor& x = *ctx.input(0);
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, x.shape()));
    if (t_ == DataType::kUint8)
      run<uint8_t>(x, *y, qx, qy);
    else
      run<int8_t>(x, *y, qx, qy);
    return Status();
  }

 private:
  template <typename T>
  void run(const Tensor& x, Tensor& y, const Quant& qx, const Quant& qy) const {
    float in[256], out[256];
    for (int c = 0; c < 256; ++c) in[c] = dequantize(T(c + int(std::numeric_limits<T>::min())), qx);
    vmath::unary(fn_, {alpha_, 0, 0}, in, out, 256);
    T table[256];
    for (int c = 0; c < 256; ++c) table[c] = quantize<T>(out[c], qy);
    const T* px = x.data<T>();
    T* py = y.data<T>();
    for (int64_t i = 0; i < x.numel(); ++i)
      py[i] = table[int(px[i]) - int(std::numeric_limits<T>::min())];
  }

  DataType t_;
  vmath::Unary fn_;
  float alpha_;
};

// QLinearGlobalAveragePool: (X, x_scale, x_zp, y_scale, y_zp); X [N, C, spatial...] or,
// with channels_last, [N, spatial..., C].
class QLinearGlobalAveragePoolKernel final : public Kernel {
 public:
  QLinearGlobalAveragePoolKernel(DataType t, bool channels_last)
      : t_(t), channels_last_(channels_last) {}
  Status compute(KernelContext& ctx) const override {
    NXRT_ASSIGN_OR_RETURN(Quant qx, read_quant(ctx, 1, 2, "X"));
    NXRT_ASSIGN_OR_RETURN(Quant qy, read_quant(ctx, 3, 4, "Y"));
    const Tensor& x = *ctx.input(0);
    if (x.rank() < 3) return invalid_argument("X must have rank >= 3, got ", x.shape().to_string());
    const Shape& s = x.shape();
    const int64_t n = s[0], c = channels_last_ ? s.back() : s[1];
    const int64_t spatial = x.numel() / std::max<int64_t>(n * c, 1);
    Shape out = s;
    for (size_t d = 0; d < out.size(); ++d) out[d] = 1;
    out[0] = n;
    out[channels_last_ ? s.size() - 1 : 1] = c;
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, out));
    if (t_ == DataType::kUint8)
      run<uint8_t>(x, *y, n, c, spatial, qx, qy);
    else
      run<int8_t>(x, *y, n, c, spatial, qx, qy);
    return Status();
  }

 private:
  template <typename T>
  void run(const Tensor& x, Tensor& y, int64_t n, int64_t c, int64_t spatial, const Quant& qx,
           const Quant& qy) const {
    const T* px = x.data<T>();
    T* py = y.data<T>();
    for (int64_t b = 0; b < n; ++b)
      for (int64_t ch = 0; ch < c; ++ch) {
        int64_t sum = 0;
        for (int64_t i = 0; i < spatial; ++i)
          sum += px[channels_last_ ? (b * spatial + i) * c + ch : (b * c + ch) * spatial + i];
        const float mean = (float(sum) / float(spatial) - qx.zero) * qx.scale;
        py[b * c + ch] = quantize<T>(mean, qy);
      }
  }

  DataType t_;
  bool channels_last_;
};

// QLinearConcat: (Y_scale, Y_zp, then X_i, X_i_scale, X_i_zp for each input).
class QLinearConcatKernel final : public Kernel {
 public:
  QLinearConcatKernel(DataType t, int64_t axis) : t_(t), axis_(axis) {}
  Status compute(KernelContext& ctx) const override {
    NXRT_ASSIGN_OR_RETURN(Quant qy, read_quant(ctx, 0, 1, "Y"));
    const size_t inputs = (ctx.num_inputs() - 2) / 3;
    const Tensor& first = *ctx.input(2);
    const int64_t rank = int64_t(first.rank());
    int64_t axis = axis_;
    if (!normalize_axis(axis, rank))
      return invalid_argument("axis ", axis_, " is out of range for rank ", rank);
    Shape out = first.shape();
    out[size_t(axis)] = 0;
    for (size_t i = 0; i < inputs; ++i) {
      const Tensor& x = *ctx.input(2 + 3 * i);
      bool same = x.rank() == first.rank();
      for (int64_t d = 0; same && d < rank; ++d)
        same = d == axis || x.shape()[size_t(d)] == first.shape()[size_t(d)];
      if (!same)
        return invalid_argument("input ", i, " has shape ", x.shape().to_string(),
                                "; it must match input 0's ", first.shape().to_string(),
                                " off axis ", axis);
      out[size_t(axis)] += x.shape()[size_t(axis)];
    }
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, out));
    const int64_t outer = out.product(0, size_t(axis)),
                  inner = out.product(size_t(axis) + 1, out.size());
    int64_t offset = 0;
    for (size_t i = 0; i < inputs; ++i) {
      const Tensor& x = *ctx.input(2 + 3 * i);
      NXRT_ASSIGN_OR_RETURN(Quant qx, read_quant(ctx, 3 + 3 * i, 4 + 3 * i, "an input"));
      const int64_t block = x.shape()[size_t(axis)] * inner;
      if (t_ == DataType::kUint8)
        copy<uint8_t>(x, *y, outer, block, out[size_t(axis)] * inner, offset, qx, qy);
      else
        copy<int8_t>(x, *y, outer, block, out[size_t(axis)] * inner, offset, qx, qy);
      offset += block;
    }
    return Status();
  }

 private:
  template <typename T>
  static void copy(const Tensor& x, Tensor& y, int64_t outer, int64_t block, int64_t stride,
                   int64_t offset, const Quant& qx, const Quant& qy) {
    const T* px = x.data<T>();
    T* py = y.data<T>();
    const bool same = qx.scale == qy.scale && qx.zero == qy.zero;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < block; ++j) {
        const T v = px[o * block + j];
        py[o * stride + offset + j] = same ? v : quantize<T>(dequantize(v, qx), qy);
      }
  }

  DataType t_;
  int64_t axis_;
};

// QLinearSoftmax: (X, X_scale, X_zp, Y_scale, Y_zp); attributes axis and opset (the
// Softmax version it follows: below 13 the input is flattened to 2-D at axis, from 13 the
// softmax runs along the axis alone).
class QLinearSoftmaxKernel final : public Kernel {
 public:
  QLinearSoftmaxKernel(DataType t, int64_t axis, int64_t opset)
      : t_(t), axis_(axis), opset_(opset) {}
  Status compute(KernelContext& ctx) const override {
    NXRT_ASSIGN_OR_RETURN(Quant qx, read_quant(ctx, 1, 2, "X"));
    NXRT_ASSIGN_OR_RETURN(Quant qy, read_quant(ctx, 3, 4, "Y"));
    const Tensor& x = *ctx.input(0);
    const Shape& s = x.shape();
    int64_t axis = axis_;
    if (!normalize_axis(axis, int64_t(s.size())))
      return invalid_argument("axis ", axis_, " is out of range for rank ", s.size());
    // Rows of `len` values, `inner` apart (inner is 1 for the flattened form).
    const bool flat = opset_ < 13;
    const int64_t len = flat ? s.product(size_t(axis), s.size()) : s[size_t(axis)];
    const int64_t inner = flat ? 1 : s.product(size_t(axis) + 1, s.size());
    const int64_t outer = s.product(0, size_t(axis));
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, s));
    if (t_ == DataType::kUint8)
      run<uint8_t>(x, *y, outer, len, inner, qx, qy);
    else
      run<int8_t>(x, *y, outer, len, inner, qx, qy);
    return Status();
  }

 private:
  template <typename T>
  void run(const Tensor& x, Tensor& y, int64_t outer, int64_t len, int64_t inner, const Quant& qx,
           const Quant& qy) const {
    const T* px = x.data<T>();
    T* py = y.data<T>();
    std::vector<float> e(static_cast<size_t>(len));
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t base = o * len * inner + i;
        T top = px[base];
        for (int64_t k = 1; k < len; ++k) top = std::max(top, px[base + k * inner]);
        float sum = 0;
        for (int64_t k = 0; k < len; ++k)
          sum += e[size_t(k)] = std::exp((float(px[base + k * inner]) - float(top)) * qx.scale);
        for (int64_t k = 0; k < len; ++k)
          py[base + k * inner] = quantize<T>(e[size_t(k)] / sum, qy);
      }
  }

  DataType t_;
  int64_t axis_, opset_;
};

// The 8-bit type of input `data`; the others at `scales` must be float, at `zeros` the same
// 8-bit type (when given).
Expected<DataType> check_types(KernelInit& init, const std::vector<size_t>& data,
                               const std::vector<size_t>& scales,
                               const std::vector<size_t>& zeros) {
  const DataType t = init.input_type(data[0]);
  if (t != DataType::kUint8 && t != DataType::kInt8) return init.unsupported_type(data[0]);
  for (size_t i : data)
    if (init.input_type(i) != t) return init.unsupported_type(i);
  for (size_t i : scales)
    if (init.input_type(i) != DataType::kFloat) return init.unsupported_type(i);
  for (size_t i : zeros)
    if (init.has_input(i) && init.input_type(i) != t) return init.unsupported_type(i);
  init.set_all_outputs(t);
  return t;
}

}  // namespace

Expected<KernelPtr> create_qlinear_add(KernelInit& init) {
  NXRT_ASSIGN_OR_RETURN(DataType t, check_types(init, {0, 3}, {1, 4, 6}, {2, 5, 7}));
  return make_kernel<QLinearBinaryKernel>(t, false);
}

Expected<KernelPtr> create_qlinear_mul(KernelInit& init) {
  NXRT_ASSIGN_OR_RETURN(DataType t, check_types(init, {0, 3}, {1, 4, 6}, {2, 5, 7}));
  return make_kernel<QLinearBinaryKernel>(t, true);
}

Expected<KernelPtr> create_qlinear_sigmoid(KernelInit& init) {
  NXRT_ASSIGN_OR_RETURN(DataType t, check_types(init, {0}, {1, 3}, {2, 4}));
  return make_kernel<QLinearUnaryKernel>(t, vmath::Unary::kSigmoid, 0.0f);
}

Expected<KernelPtr> create_qlinear_leaky_relu(KernelInit& init) {
  NXRT_ASSIGN_OR_RETURN(DataType t, check_types(init, {0}, {1, 3}, {2, 4}));
  AttrReader attrs(init.node);
  const float alpha = attrs.get_float("alpha", 0.01f);
  NXRT_RETURN_IF_ERROR(attrs.status());
  return make_kernel<QLinearUnaryKernel>(t, vmath::Unary::kLeakyRelu, alpha);
}

Expected<KernelPtr> create_qlinear_global_average_pool(KernelInit& init) {
  NXRT_ASSIGN_OR_RETURN(DataType t, check_types(init, {0}, {1, 3}, {2, 4}));
  AttrReader attrs(init.node);
  const bool channels_last = attrs.get_int("channels_last", 0) != 0;
  NXRT_RETURN_IF_ERROR(attrs.status());
  return make_kernel<QLinearGlobalAveragePoolKernel>(t, channels_last);
}

Expected<KernelPtr> create_qlinear_softmax(KernelInit& init) {
  NXRT_ASSIGN_OR_RETURN(DataType t, check_types(init, {0}, {1, 3}, {2, 4}));
  AttrReader attrs(init.node);
  const int64_t axis = attrs.get_int("axis", -1);
  const int64_t opset = attrs.require_int("opset");
  NXRT_RETURN_IF_ERROR(attrs.status());
  return make_kernel<QLinearSoftmaxKernel>(t, axis, opset);
}

Expected<KernelPtr> create_qlinear_concat(KernelInit& init) {
  if (init.num_inputs() < 5 || (init.num_inputs() - 2) % 3 != 0)
    return init.error(StatusCode::kInvalidGraph,
                      "takes Y_scale, Y_zero_point and triples of "
                      "(X, X_scale, X_zero_point); got ",
                      init.num_inputs(), " inputs");
  std::vector<size_t> data, scales{0}, zeros{1};
  for (size_t i = 2; i < init.num_inputs(); i += 3) {
    data.push_back(i);
    scales.push_back(i + 1);
    zeros.push_back(i + 2);
  }
  NXRT_ASSIGN_OR_RETURN(DataType t, check_types(init, data, scales, zeros));
  AttrReader attrs(init.node);
  const int64_t axis = attrs.require_int("axis");
  NXRT_RETURN_IF_ERROR(attrs.status());
  return make_kernel<QLinearConcatKernel>(t, axis);
}

}  // namespace nxrt::cpu
