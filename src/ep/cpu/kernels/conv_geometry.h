// Window geometry shared by Conv, ConvTranspose and the pooling ops: attribute parsing,
// auto_pad resolution and output sizes.
#pragma once

#include <string>
#include <vector>

#include "ep/cpu/kernels/common.h"

namespace nxrt::cpu {

enum class AutoPad { kNotSet, kValid, kSameUpper, kSameLower };

struct WindowAttrs {
  AutoPad auto_pad = AutoPad::kNotSet;
  std::vector<int64_t> kernel_shape;              // empty: taken from the weights (Conv)
  std::vector<int64_t> strides, dilations, pads;  // empty: defaults for the rank
  bool ceil_mode = false;
};

// Reads auto_pad, kernel_shape, strides, dilations, pads (and ceil_mode when asked).
Status read_window_attrs(AttrReader& attrs, bool with_ceil_mode, WindowAttrs& out);
// The window attributes and `group` of a convolution node (Conv, FusedConv, ConvInteger,
// ConvTranspose, QLinearConv); errors name the node.
Status read_conv_attrs(KernelInit& init, AttrReader& attrs, WindowAttrs& out, int64_t& group);

// Resolved geometry for one input: per spatial dim kernel, stride, dilation, pads and
// output size. Inline lists: resolving a window per run does not allocate.
struct Window {
  size_t rank = 0;
  SmallVec<int64_t> in, kernel, stride, dilation, pad_begin, pad_end, out;
  int64_t in_size() const { return product(in); }
  int64_t out_size() const { return product(out); }
  int64_t kernel_size() const { return product(kernel); }
  static int64_t product(std::span<const int64_t> v) {
    int64_t n = 1;
    for (int64_t d : v) n *= d;
    return n;
  }
};

// Forward windows (Conv, pools): `in` are the input's spatial dims.
Status resolve_window(const WindowAttrs& a, std::span<const int64_t> in,
                      std::span<const int64_t> kernel, Window& w);

// Fills each output position's valid kernel index range along one dim: the k with
// 0 <= o*stride - pad_begin + k*dilation < in.
struct DimRange {
  int64_t start;  // input index of k = 0 (may be negative)
  int64_t k_lo, k_hi;
};
std::vector<DimRange> dim_ranges(const Window& w, size_t d);
// One window's range: the taps k < kernel with 0 <= start + k*dilation < in.
DimRange window_range(int64_t start, int64_t kernel, int64_t dilation, int64_t in);

// Output positions [lo, hi) along one dim whose whole window lies inside the input: the
// interior a kernel can run without clipping (lo == hi when there is none).
void inner_outputs(int64_t out, int64_t stride, int64_t pad_begin, int64_t kernel, int64_t dilation,
                   int64_t in, int64_t& lo, int64_t& hi);

}  // namespace nxrt::cpu
