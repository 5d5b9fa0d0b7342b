// com.microsoft NhwcMaxPool: MaxPool of an 8-bit [N, H, W, C] tensor (onnxruntime's
// quantization tool writes it for channels-last QOperator models), with MaxPool's window
// attributes. Each output pixel takes, channel by channel, the max over its window
// clipped to the image; channels are contiguous, so the inner loop runs over them.
#include <algorithm>
#include <cstdint>
#include <limits>

#include "ep/cpu/kernels/common.h"
#include "ep/cpu/kernels/conv_geometry.h"

namespace nxrt::cpu {
namespace {

class NhwcMaxPoolKernel final : public Kernel {
 public:
  NhwcMaxPoolKernel(WindowAttrs attrs, DataType t) : attrs_(std::move(attrs)), t_(t) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    if (x.rank() != 4)
      return invalid_argument("x must be [N, H, W, C], got ", x.shape().to_string());
    const Shape& s = x.shape();
    const int64_t in[2] = {s[1], s[2]};
    if (attrs_.kernel_shape.size() != 2)
      return invalid_argument("kernel_shape must have 2 values, got ", attrs_.kernel_shape.size());
    Window w;
    NXRT_RETURN_IF_ERROR(resolve_window(attrs_, in, attrs_.kernel_shape, w));
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, Shape{s[0], w.out[0], w.out[1], s[3]}));
    if (t_ == DataType::kUint8)
      run<uint8_t>(x, *y, w);
    else
      run<int8_t>(x, *y, w);
    return Status();
  }

 private:
  template <typename T>
  void run(const Tensor& x, Tensor& y, const Window& w) const {
    const int64_t n = x.shape()[0], h = x.shape()[1], wd = x.shape()[2], c = x.shape()[3];
    const T* px = x.data<T>();
    T* py = y.data<T>();
    for (int64_t b = 0; b < n; ++b)
      for (int64_t oh = 0; oh < w.out[0]; ++oh) {
        const DimRange vr =
            window_range(oh * w.stride[0] - w.pad_begin[0], w.kernel[0], w.dilation[0], h);
        for (int64_t ow = 0; ow < w.out[1]; ++ow) {
          const DimRange hr =
              window_range(ow * w.stride[1] - w.pad_begin[1], w.kernel[1], w.dilation[1], wd);
          T* out = py + ((b * w.out[0] + oh) * w.out[1] + ow) * c;
          std::fill(out, out + c, std::numeric_limits<T>::lowest());
          for (int64_t kh = vr.k_lo; kh < vr.k_hi; ++kh)
            for (int64_t kw = hr.k_lo; kw < hr.k_hi; ++kw) {
              const int64_t ih = vr.start + kh * w.dilation[0], iw = hr.start + kw * w.dilation[1];
              const T* in = px + ((b * h + ih) * wd + iw) * c;
              for (int64_t ch = 0; ch < c; ++ch) out[ch] = std::max(out[ch], in[ch]);
            }
        }
      }
  }

  WindowAttrs attrs_;
  DataType t_;
};

}  // namespace

Expected<KernelPtr> create_nhwc_max_pool(KernelInit& init) {
  const DataType t = init.input_type(0);
  if (t != DataType::kUint8 && t != DataType::kInt8) return init.unsupported_type(0);
  AttrReader attrs(init.node);
  WindowAttrs w;
  NXRT_RETURN_IF_ERROR(read_window_attrs(attrs, true, w));
  NXRT_RETURN_IF_ERROR(attrs.status());
  if (w.kernel_shape.size() != 2)
    return init.error(StatusCode::kInvalidGraph, "kernel_shape must have 2 values, got ",
                      w.kernel_shape.size());
  init.set_all_outputs(t);
  return make_kernel<NhwcMaxPoolKernel>(std::move(w), t);
}

}  // namespace nxrt::cpu
