// com.microsoft QLinearAveragePool(X, x_scale, x_zero_point, y_scale, y_zero_point):
// AveragePool on the dequantized input, requantized:
//   Y = saturate(round_half_even(mean over the window of (X - x_zero) * x_scale) / y_scale
//                + y_zero))
// with AveragePool's attributes (kernel_shape, strides, pads, auto_pad, ceil_mode,
// count_include_pad; no dilations) plus channels_last (X [N, spatial..., C] instead of
// [N, C, spatial...]). uint8 or int8, 1 to 3 spatial dims, per-tensor scales and zero
// points. The window geometry is the float pools' (conv_geometry.h). As in onnxruntime,
// the divisor with count_include_pad is the whole kernel size, also for a ceil_mode
// window that reaches past the end padding (the float AveragePool counts only the
// padded input there), and the zero point is added before rounding.
#include <algorithm>
#include <cmath>
#include <limits>

#include "ep/cpu/kernels/common.h"
#include "ep/cpu/kernels/conv_geometry.h"
#include "ops/attrs.h"

namespace nxrt::cpu {
namespace {

struct QuantScalar {
  float scale = 1.0f, zero = 0.0f;
};

Status read_scalar(const Tensor* scale, const Tensor* zero, const char* scale_name,
                   const char* zero_name, QuantScalar& out) {
  if (!scale) return invalid_argument(scale_name, " is required");
  if (scale->numel() != 1)
    return invalid_argument(scale_name, " has ", scale->numel(), " values; expected one float");
  out.scale = scale->data<float>()[0];
  out.zero = 0.0f;
  if (zero) {
    if (zero->numel() != 1)
      return invalid_argument(zero_name, " has ", zero->numel(), " values; expected one");
    out.zero = zero->dtype() == DataType::kUint8 ? float(zero->data<uint8_t>()[0])
                                                 : float(zero->data<int8_t>()[0]);
  }
  return Status();
}

// A window of at most 3 spatial dims as 3 (leading dims of size 1, kernel 1).
struct Geometry3 {
  int64_t in[3], out[3], kernel[3], stride[3], pad[3];
  int64_t in_size() const { return in[0] * in[1] * in[2]; }
  int64_t out_size() const { return out[0] * out[1] * out[2]; }
};

Geometry3 to_3d(const Window& w) {
  Geometry3 g{};
  const size_t lead = 3 - w.rank;
  for (size_t d = 0; d < 3; ++d) {
    const bool real = d >= lead;
    g.in[d] = real ? w.in[d - lead] : 1;
    g.out[d] = real ? w.out[d - lead] : 1;
    g.kernel[d] = real ? w.kernel[d - lead] : 1;
    g.stride[d] = real ? w.stride[d - lead] : 1;
    g.pad[d] = real ? w.pad_begin[d - lead] : 0;
  }
  return g;
}

class QLinearAveragePoolKernel final : public Kernel {
 public:
  QLinearAveragePoolKernel(WindowAttrs attrs, bool include_pad, bool channels_last)
      : attrs_(std::move(attrs)), include_pad_(include_pad), channels_last_(channels_last) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    QuantScalar qx, qy;
    NXRT_RETURN_IF_ERROR(read_scalar(ctx.input(1), ctx.input(2), "x_scale", "x_zero_point", qx));
    NXRT_RETURN_IF_ERROR(read_scalar(ctx.input(3), ctx.input(4), "y_scale", "y_zero_point", qy));
    if (x.rank() < 3 || x.rank() > 5)
      return invalid_argument("X must have 1 to 3 spatial dims (rank 3 to 5), got shape ",
                              x.shape().to_string());
    const size_t rank = x.rank() - 2;
    const std::span<const int64_t> spatial = x.shape().span().subspan(channels_last_ ? 1 : 2, rank);
    if (attrs_.kernel_shape.size() != rank)
      return invalid_argument("kernel_shape has ", attrs_.kernel_shape.size(), " values; X has ",
                              rank, " spatial dims");
    Window w;
    NXRT_RETURN_IF_ERROR(resolve_window(attrs_, spatial, attrs_.kernel_shape, w));
    const int64_t N = x.shape()[0], C = channels_last_ ? x.shape().back() : x.shape()[1];
    Shape out{N};
    if (!channels_last_) out.push_back(C);
    for (int64_t d : w.out) out.push_back(d);
    if (channels_last_) out.push_back(C);
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, out));
    if (y->numel() == 0) return Status();
    if (x.dtype() == DataType::kUint8)
      run<uint8_t>(x, *y, to_3d(w), N, C, qx, qy);
    else
      run<int8_t>(x, *y, to_3d(w), N, C, qx, qy);
    return Status();
  }

 private:
  template <typename T>
  void run(const Tensor& x, Tensor& y, const Geometry3& g, int64_t N, int64_t C,
           const QuantScalar& qx, const QuantScalar& qy) const {
    constexpr int kMin = std::numeric_limits<T>::min();
    // The dequantized value of every code.
    float table[256];
    for (int c = 0; c < 256; ++c) table[c] = (float(c + kMin) - qx.zero) * qx.scale;
    // The clipped window of every output coordinate, per dim.
    DimRange* ranges = thread_scratch<DimRange>(size_t(g.out[0] + g.out[1] + g.out[2]), 1);
    DimRange* range[3] = {ranges, ranges + g.out[0], ranges + g.out[0] + g.out[1]};
    for (int d = 0; d < 3; ++d)
      for (int64_t o = 0; o < g.out[d]; ++o)
        range[d][o] = window_range(o * g.stride[d] - g.pad[d], g.kernel[d], 1, g.in[d]);
    const int64_t full = g.kernel[0] * g.kernel[1] * g.kernel[2];
    auto divisor = [&](const DimRange& a, const DimRange& b, const DimRange& c) {
      return include_pad_ ? full : (a.k_hi - a.k_lo) * (b.k_hi - b.k_lo) * (c.k_hi - c.k_lo);
    };
    const float lo = float(std::numeric_limits<T>::min()),
                hi = float(std::numeric_limits<T>::max());
    auto quantize = [&](float sum, int64_t count) {
      const float v = std::nearbyint(sum / float(count) / qy.scale + qy.zero);
      return T(std::isnan(v) ? qy.zero : std::clamp(v, lo, hi));
    };
    const T* px = x.data<T>();
    T* py = y.data<T>();
    const int64_t in_size = g.in_size(), out_size = g.out_size();
    const int64_t window = std::max<int64_t>(full, 1);
    if (!channels_last_) {
      // One plane per unit: a float sum per output.
      const int64_t planes = N * C;
      const size_t pieces = std::min(
          parallel_pieces(double(planes * out_size * window), double(1 << 16)), size_t(planes));
      parallel_for(pieces, [&](size_t piece) {
        for (int64_t p = planes * int64_t(piece) / int64_t(pieces);
             p < planes * int64_t(piece + 1) / int64_t(pieces); ++p) {
          const T* src = px + p * in_size;
          T* dst = py + p * out_size;
          for (int64_t od = 0; od < g.out[0]; ++od)
            for (int64_t oh = 0; oh < g.out[1]; ++oh)
              for (int64_t ow = 0; ow < g.out[2]; ++ow) {
                const DimRange &rd = range[0][od], &rh = range[1][oh], &rw = range[2][ow];
                float sum = 0.0f;
                for (int64_t kd = rd.k_lo; kd < rd.k_hi; ++kd)
                  for (int64_t kh = rh.k_lo; kh < rh.k_hi; ++kh) {
                    const T* row =
                        src + ((rd.start + kd) * g.in[1] + rh.start + kh) * g.in[2] + rw.start;
                    for (int64_t kw = rw.k_lo; kw < rw.k_hi; ++kw)
                      sum += table[int(row[kw]) - kMin];
                  }
                dst[(od * g.out[1] + oh) * g.out[2] + ow] = quantize(sum, divisor(rd, rh, rw));
              }
        }
      });
      return;
    }
    // channels_last: one output position (all C channels) per unit, a float sum per channel.
    const int64_t units = N * out_size;
    const size_t pieces =
        std::min(parallel_pieces(double(units * C * window), double(1 << 16)), size_t(units));
    parallel_for(pieces, [&](size_t piece) {
      float* acc = thread_scratch<float>(size_t(C), 0);
      for (int64_t u = units * int64_t(piece) / int64_t(pieces);
           u < units * int64_t(piece + 1) / int64_t(pieces); ++u) {
        const int64_t n = u / out_size, o = u % out_size;
        const int64_t od = o / (g.out[1] * g.out[2]), oh = o / g.out[2] % g.out[1],
                      ow = o % g.out[2];
        const DimRange &rd = range[0][od], &rh = range[1][oh], &rw = range[2][ow];
        std::fill(acc, acc + C, 0.0f);
        const T* src = px + n * in_size * C;
        for (int64_t kd = rd.k_lo; kd < rd.k_hi; ++kd)
          for (int64_t kh = rh.k_lo; kh < rh.k_hi; ++kh)
            for (int64_t kw = rw.k_lo; kw < rw.k_hi; ++kw) {
              const T* pixel =
                  src + (((rd.start + kd) * g.in[1] + rh.start + kh) * g.in[2] + rw.start + kw) * C;
              for (int64_t c = 0; c < C; ++c) acc[c] += table[int(pixel[c]) - kMin];
            }
        const int64_t count = divisor(rd, rh, rw);
        T* dst = py + u * C;
        for (int64_t c = 0; c < C; ++c) dst[c] = quantize(acc[c], count);
      }
    });
  }

  WindowAttrs attrs_;
  bool include_pad_, channels_last_;
};

}  // namespace

Expected<KernelPtr> create_qlinear_average_pool(KernelInit& init) {
  const DataType t = init.input_type(0);
  if (t != DataType::kUint8 && t != DataType::kInt8) return init.unsupported_type(0);
  for (size_t i : {1, 3})
    if (init.input_type(i) != DataType::kFloat) return init.unsupported_type(i);
  for (size_t i : {2, 4})
    if (init.has_input(i) && init.input_type(i) != t)
      return init.error(StatusCode::kInvalidGraph, "input ", i, " (a zero point) has type ",
                        tensor_type_name(init.input_type(i)), "; expected X's ",
                        tensor_type_name(t));
  AttrReader attrs(init.node);
  WindowAttrs window;
  Status st = read_window_attrs(attrs, true, window);
  const bool include_pad = attrs.get_int("count_include_pad", 0) != 0;
  const bool channels_last = attrs.get_int("channels_last", 0) != 0;
  if (st.ok()) st = attrs.status();
  if (!st.ok()) return init.error(st.code(), st.message());
  if (!attrs.has("kernel_shape"))
    return init.error(StatusCode::kInvalidGraph, "kernel_shape is required");
  if (attrs.has("dilations"))
    return init.error(StatusCode::kInvalidGraph, "dilations is not an attribute of this op");
  const size_t r = window.kernel_shape.size();
  if (r < 1 || r > 3)
    return init.error(StatusCode::kNotImplemented, "kernel_shape has ", r,
                      " values; 1 to 3 spatial dims are supported");
  if (!window.pads.empty()) {
    if (window.pads.size() != 2 * r)
      return init.error(StatusCode::kInvalidGraph, "pads has ", window.pads.size(),
                        " values; expected ", 2 * r);
    for (size_t d = 0; d < 2 * r; ++d)
      if (window.pads[d] >= window.kernel_shape[d % r])
        return init.error(StatusCode::kInvalidGraph, "pads[", d, "] = ", window.pads[d],
                          " must be smaller than the kernel (", window.kernel_shape[d % r], ")");
  }
  init.set_all_outputs(t);
  return make_kernel<QLinearAveragePoolKernel>(std::move(window), include_pad, channels_last);
}

}  // namespace nxrt::cpu
