// Quantized linear algebra: QLinearMatMul and QLinearConv. Products accumulate exactly in
// int32 on zero-point-shifted operands; the result is requantized once per output
// element: y = saturate(round_half_even(acc * a_scale * b_scale / y_scale) + y_zero_point).
#include <cmath>
#include <limits>
#include <type_traits>

#include "ep/cpu/kernels/common.h"
#include "ep/cpu/kernels/conv_geometry.h"

namespace nxrt::cpu {
namespace {

bool is_quant_type(DataType t) { return t == DataType::kInt8 || t == DataType::kUint8; }

int32_t int_at(const Tensor& t, int64_t i) {
  return t.dtype() == DataType::kUint8 ? int32_t(t.data<uint8_t>()[i])
                                       : int32_t(t.data<int8_t>()[i]);
}

// The values of a scale input, widened to float.
std::vector<float> scale_values(const Tensor& t) {
  std::vector<float> v(size_t(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) {
    switch (t.dtype()) {
      case DataType::kFloat:
        v[size_t(i)] = t.data<float>()[i];
        break;
      case DataType::kFloat16:
        v[size_t(i)] = float(t.data<Float16>()[i]);
        break;
      case DataType::kBFloat16:
        v[size_t(i)] = float(t.data<BFloat16>()[i]);
        break;
      default:
        v[size_t(i)] = float(t.data<double>()[i]);
        break;
    }
  }
  return v;
}

// a * b / c computed in the scales' own precision (as the reference does for float16
// scales), returned as float.
float combine_scales(DataType t, float a, float b, float c) {
  switch (t) {
    case DataType::kFloat16:
      return float(Float16(float(Float16(a * b)) / c));
    case DataType::kBFloat16:
      return float(BFloat16(float(BFloat16(a * b)) / c));
    default:
      return a * b / c;
  }
}

// A per-tensor or per-channel (scale, zero point) pair along a dim of size `n`.
struct QParam {
  std::vector<float> scale;
  std::vector<int32_t> zero;
  float s(int64_t i) const { return scale.size() == 1 ? scale[0] : scale[size_t(i)]; }
  int32_t z(int64_t i) const { return zero.size() == 1 ? zero[0] : zero[size_t(i)]; }
};

Status read_qparam(const Tensor* scale, const Tensor* zero, int64_t n, const char* what,
                   QParam& q) {
  if (!scale) return invalid_argument(what, "_scale is missing");
  if (scale->rank() > 1 || (scale->numel() != 1 && scale->numel() != n))
    return invalid_argument(what, "_scale must be a scalar or have ", n, " values, got shape ",
                            scale->shape().to_string());
  q.scale = scale_values(*scale);
  for (float s : q.scale)
    if (!(s > 0.0f) || !std::isfinite(s))
      return invalid_argument(what, "_scale values must be positive and finite, got ", s);
  if (zero) {
    if (zero->numel() != 1 && zero->numel() != scale->numel())
      return invalid_argument(what, "_zero_point has ", zero->numel(), " values but ", what,
                              "_scale has ", scale->numel());
    q.zero.resize(size_t(zero->numel()));
    for (int64_t i = 0; i < zero->numel(); ++i) q.zero[size_t(i)] = int_at(*zero, i);
  } else {
    q.zero.assign(1, 0);
  }
  return Status();
}

template <typename Y>
Y requantize(int32_t acc, float multiplier, int32_t zero) {
  // nearbyint rounds half to even in the default rounding mode, as the spec asks.
  double v = std::nearbyint(double(acc) * double(multiplier)) + double(zero);
  // Extreme scales make the multiplier infinite and 0 * inf NaN: a zero product stays 0.
  if (std::isnan(v)) v = double(zero);
  const double lo = double(std::numeric_limits<Y>::min()),
               hi = double(std::numeric_limits<Y>::max());
  return Y(v < lo ? lo : (v > hi ? hi : v));
}

void store_quantized(Tensor& y, int64_t i, int32_t acc, float multiplier, int32_t zero) {
  if (y.dtype() == DataType::kUint8)
    y.data<uint8_t>()[i] = requantize<uint8_t>(acc, multiplier, zero);
  else
    y.data<int8_t>()[i] = requantize<int8_t>(acc, multiplier, zero);
}

// numpy matmul over [..., M, K] x [..., K, N] with 1-D operands promoted and batch dims
// broadcast.
class QLinearMatMulKernel final : public Kernel {
 public:
  Status compute(KernelContext& ctx) const override {
    const Tensor& a = *ctx.input(0);
    const Tensor& b = *ctx.input(3);
    if (a.rank() == 0 || b.rank() == 0)
      return invalid_argument("a and b must have rank >= 1, got ", a.shape().to_string(), " and ",
                              b.shape().to_string());
    const bool a_vec = a.rank() == 1, b_vec = b.rank() == 1;
    Shape as = a.shape(), bs = b.shape();
    if (a_vec) as = Shape{1, as[0]};
    if (b_vec) bs = Shape{bs[0], 1};
    const size_t ar = as.size(), br = bs.size();
    const int64_t M = as[ar - 2], K = as[ar - 1], N = bs[br - 1];
    if (bs[br - 2] != K)
      return invalid_argument("a ", a.shape().to_string(), " and b ", b.shape().to_string(),
                              " have mismatched inner dims");
    const Shape a_batch(std::span<const int64_t>(as.begin(), ar - 2));
    const Shape b_batch(std::span<const int64_t>(bs.begin(), br - 2));
    const Shape* batch_shapes[] = {&a_batch, &b_batch};
    Shape batch;
    if (!broadcast_shapes(batch_shapes, batch))
      return invalid_argument("batch dims of a ", a.shape().to_string(), " and b ",
                              b.shape().to_string(), " do not broadcast");
    QParam qa, qb, qy;
    NXRT_RETURN_IF_ERROR(read_qparam(ctx.input(1), ctx.input(2), M, "a", qa));
    NXRT_RETURN_IF_ERROR(read_qparam(ctx.input(4), ctx.input(5), N, "b", qb));
    NXRT_RETURN_IF_ERROR(read_qparam(ctx.input(6), ctx.input(7), M, "y", qy));
    Shape out = batch;
    if (!a_vec) out.push_back(M);
    if (!b_vec) out.push_back(N);
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, out));
    if (y->numel() == 0) return Status();

    const DataType st = ctx.input(1)->dtype();
    std::vector<float> mult(size_t(M * N));
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j)
        mult[size_t(i * N + j)] = combine_scales(st, qa.s(i), qb.s(j), qy.s(i));

    // Per-batch element strides of a and b (0 along broadcast dims).
    const size_t rank = batch.size();
    std::vector<int64_t> a_stride(rank, 0), b_stride(rank, 0);
    auto fill_strides = [&](const Shape& own, int64_t matrix, std::vector<int64_t>& stride) {
      const size_t skip = rank - own.size();  // leading broadcast dims own lacks
      int64_t step = matrix;
      for (size_t d = own.size(); d-- > 0;) {
        if (own[d] != 1) stride[d + skip] = step;
        step *= own[d];
      }
    };
    fill_strides(a_batch, M * K, a_stride);
    fill_strides(b_batch, K * N, b_stride);
    std::vector<int32_t> bz(size_t(K * N)), acc(static_cast<size_t>(N));
    std::vector<int64_t> index(rank, 0);
    const int64_t batches = batch.numel();
    int64_t prev_b = -1;
    for (int64_t t = 0; t < batches; ++t) {
      int64_t ao = 0, bo = 0;
      for (size_t d = 0; d < rank; ++d) {
        ao += index[d] * a_stride[d];
        bo += index[d] * b_stride[d];
      }
      if (bo != prev_b) {  // shift b by its zero points once per distinct b matrix
        for (int64_t k = 0; k < K; ++k)
          for (int64_t j = 0; j < N; ++j)
            bz[size_t(k * N + j)] = int_at(b, bo + k * N + j) - qb.z(j);
        prev_b = bo;
      }
      for (int64_t i = 0; i < M; ++i) {
        std::fill(acc.begin(), acc.end(), 0);
        const int32_t za = qa.z(i);
        for (int64_t k = 0; k < K; ++k) {
          const int32_t av = int_at(a, ao + i * K + k) - za;
          if (av == 0) continue;
          const int32_t* brow = bz.data() + k * N;
          for (int64_t j = 0; j < N; ++j) acc[size_t(j)] += av * brow[j];
        }
        const int64_t yo = (t * M + i) * N;
        for (int64_t j = 0; j < N; ++j)
          store_quantized(*y, yo + j, acc[size_t(j)], mult[size_t(i * N + j)], qy.z(i));
      }
      for (size_t d = rank; d-- > 0;) {
        if (++index[d] < batch[d]) break;
        index[d] = 0;
      }
    }
    return Status();
  }
};

// Grouped N-D convolution: per (image, group) the shifted input is unfolded into
// columns [Cg * kernel, out_size] and every output channel accumulates rows of it.
class QLinearConvKernel final : public Kernel {
 public:
  QLinearConvKernel(WindowAttrs attrs, int64_t group) : attrs_(std::move(attrs)), group_(group) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    const Tensor& w = *ctx.input(3);
    const Tensor* bias = ctx.input(8);
    if (x.rank() < 3 || w.rank() != x.rank())
      return invalid_argument("x must be [N, C, spatial...] and w of the same rank, got ",
                              x.shape().to_string(), " and ", w.shape().to_string());
    const int64_t N = x.shape()[0], C = x.shape()[1], M = w.shape()[0];
    if (C % group_ != 0 || M % group_ != 0 || w.shape()[1] * group_ != C)
      return invalid_argument("x ", x.shape().to_string(), " and w ", w.shape().to_string(),
                              " do not match group=", group_);
    std::vector<int64_t> in(x.shape().begin() + 2, x.shape().end());
    std::vector<int64_t> kernel(w.shape().begin() + 2, w.shape().end());
    if (!attrs_.kernel_shape.empty() && attrs_.kernel_shape != kernel)
      return invalid_argument("kernel_shape does not match w ", w.shape().to_string());
    Window win;
    NXRT_RETURN_IF_ERROR(resolve_window(attrs_, in, kernel, win));
    if (bias && (bias->rank() != 1 || bias->shape()[0] != M))
      return invalid_argument("B must have shape [", M, "], got ", bias->shape().to_string());
    QParam qx, qw, qy;
    NXRT_RETURN_IF_ERROR(read_qparam(ctx.input(1), ctx.input(2), 1, "x", qx));
    NXRT_RETURN_IF_ERROR(read_qparam(ctx.input(4), ctx.input(5), M, "w", qw));
    NXRT_RETURN_IF_ERROR(read_qparam(ctx.input(6), ctx.input(7), 1, "y", qy));
    Shape out{N, M};
    for (int64_t d : win.out) out.push_back(d);
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, out));
    if (y->numel() == 0) return Status();

    const DataType st = ctx.input(1)->dtype();
    std::vector<float> mult(static_cast<size_t>(M));
    for (int64_t m = 0; m < M; ++m) mult[size_t(m)] = combine_scales(st, qx.s(0), qw.s(m), qy.s(0));
    const int64_t G = group_, Cg = C / G, Mg = M / G;
    const int64_t ksize = win.kernel_size(), in_size = win.in_size(), out_size = win.out_size();
    const int64_t rows = Cg * ksize;
    std::vector<int32_t> wz(size_t(w.numel()));
    for (int64_t m = 0; m < M; ++m)
      for (int64_t i = 0; i < rows; ++i)
        wz[size_t(m * rows + i)] = int_at(w, m * rows + i) - qw.z(m);
    // For each kernel offset and output position: the input offset, or -1 in the padding.
    std::vector<int64_t> gather(size_t(ksize * out_size));
    build_gather(win, gather);
    std::vector<int32_t> col(size_t(rows * out_size)), acc(static_cast<size_t>(out_size));
    std::vector<int32_t> xs(size_t(x.numel()));
    const int32_t zx = qx.z(0);
    for (int64_t i = 0; i < x.numel(); ++i) xs[size_t(i)] = int_at(x, i) - zx;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t g = 0; g < G; ++g) {
        for (int64_t c = 0; c < Cg; ++c) {
          const int64_t base = (n * C + g * Cg + c) * in_size;
          for (int64_t k = 0; k < ksize; ++k) {
            const int64_t* src = gather.data() + k * out_size;
            int32_t* dst = col.data() + (c * ksize + k) * out_size;
            for (int64_t p = 0; p < out_size; ++p)
              dst[p] = src[p] < 0 ? 0 : xs[size_t(base + src[p])];
          }
        }
        for (int64_t mg = 0; mg < Mg; ++mg) {
          const int64_t m = g * Mg + mg;
          std::fill(acc.begin(), acc.end(), bias ? bias->data<int32_t>()[m] : 0);
          const int32_t* wrow = wz.data() + m * rows;
          for (int64_t i = 0; i < rows; ++i) {
            const int32_t wv = wrow[i];
            if (wv == 0) continue;
            const int32_t* crow = col.data() + i * out_size;
            for (int64_t p = 0; p < out_size; ++p) acc[size_t(p)] += wv * crow[p];
          }
          const int64_t yo = (n * M + m) * out_size;
          for (int64_t p = 0; p < out_size; ++p)
            store_quantized(*y, yo + p, acc[size_t(p)], mult[size_t(m)], qy.z(0));
        }
      }
    return Status();
  }

 private:
  static void build_gather(const Window& win, std::vector<int64_t>& gather) {
    const size_t r = win.rank;
    const int64_t out_size = win.out_size();
    std::vector<int64_t> kidx(r, 0), oidx(r, 0);
    for (int64_t k = 0; k < win.kernel_size(); ++k) {
      std::fill(oidx.begin(), oidx.end(), 0);
      for (int64_t p = 0; p < out_size; ++p) {
        int64_t offset = 0;
        bool inside = true;
        for (size_t d = 0; d < r; ++d) {
          const int64_t pos =
              oidx[d] * win.stride[d] - win.pad_begin[d] + kidx[d] * win.dilation[d];
          if (pos < 0 || pos >= win.in[d]) inside = false;
          offset = offset * win.in[d] + pos;
        }
        gather[size_t(k * out_size + p)] = inside ? offset : -1;
        for (size_t d = r; d-- > 0;) {
          if (++oidx[d] < win.out[d]) break;
          oidx[d] = 0;
        }
      }
      for (size_t d = r; d-- > 0;) {
        if (++kidx[d] < win.kernel[d]) break;
        kidx[d] = 0;
      }
    }
  }

  WindowAttrs attrs_;
  int64_t group_;
};

// Scales are float (opset 10) or float/float16/bfloat16 (opset 21); every scale of a
// node shares one type.
Status check_scales(KernelInit& init, std::initializer_list<size_t> which) {
  const DataType t = init.input_type(*which.begin());
  for (size_t i : which) {
    const DataType s = init.input_type(i);
    if (s != DataType::kFloat && s != DataType::kFloat16 && s != DataType::kBFloat16)
      return init.unsupported_type(i);
    if (s != t)
      return init.error(StatusCode::kInvalidGraph, "scales have different types (", dtype_name(t),
                        " and ", dtype_name(s), ")");
  }
  return Status();
}

// Zero point i must be present and match its quantized tensor's type.
Status check_zero_point(KernelInit& init, size_t i, DataType expected) {
  if (init.input_type(i) != expected)
    return init.error(StatusCode::kInvalidGraph, "input ", i, " (zero point) has type ",
                      tensor_type_name(init.input_type(i)), ", expected ",
                      tensor_type_name(expected));
  return Status();
}

}  // namespace

Expected<KernelPtr> create_qlinear_matmul(KernelInit& init) {
  if (!is_quant_type(init.input_type(0))) return init.unsupported_type(0);
  if (!is_quant_type(init.input_type(3))) return init.unsupported_type(3);
  if (!is_quant_type(init.input_type(7))) return init.unsupported_type(7);
  NXRT_RETURN_IF_ERROR(check_scales(init, {1, 4, 6}));
  NXRT_RETURN_IF_ERROR(check_zero_point(init, 2, init.input_type(0)));
  NXRT_RETURN_IF_ERROR(check_zero_point(init, 5, init.input_type(3)));
  init.set_all_outputs(init.input_type(7));
  return make_kernel<QLinearMatMulKernel>();
}

Expected<KernelPtr> create_qlinear_conv(KernelInit& init) {
  AttrReader attrs(init.node);
  WindowAttrs w;
  int64_t group = 1;
  NXRT_RETURN_IF_ERROR(read_conv_attrs(init, attrs, w, group));
  if (!is_quant_type(init.input_type(0))) return init.unsupported_type(0);
  if (!is_quant_type(init.input_type(3))) return init.unsupported_type(3);
  if (!is_quant_type(init.input_type(7))) return init.unsupported_type(7);
  NXRT_RETURN_IF_ERROR(check_scales(init, {1, 4, 6}));
  NXRT_RETURN_IF_ERROR(check_zero_point(init, 2, init.input_type(0)));
  NXRT_RETURN_IF_ERROR(check_zero_point(init, 5, init.input_type(3)));
  if (init.has_input(8) && init.input_type(8) != DataType::kInt32) return init.unsupported_type(8);
  init.set_all_outputs(init.input_type(7));
  return make_kernel<QLinearConvKernel>(std::move(w), group);
}

}  // namespace nxrt::cpu
