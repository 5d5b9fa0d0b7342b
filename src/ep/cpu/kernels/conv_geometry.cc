#include "ep/cpu/kernels/conv_geometry.h"

#include <algorithm>

namespace nxrt::cpu {

Status read_conv_attrs(KernelInit& init, AttrReader& attrs, WindowAttrs& out, int64_t& group) {
  group = attrs.get_int("group", 1);
  Status st = read_window_attrs(attrs, false, out);
  if (!st.ok()) return init.error(st.code(), st.message());
  if (group <= 0) return init.error(StatusCode::kInvalidGraph, "group must be positive");
  return Status();
}

Status read_window_attrs(AttrReader& attrs, bool with_ceil_mode, WindowAttrs& out) {
  const std::string pad = attrs.get_string("auto_pad", "NOTSET");
  out.kernel_shape = attrs.get_ints("kernel_shape");
  out.strides = attrs.get_ints("strides");
  out.dilations = attrs.get_ints("dilations");
  out.pads = attrs.get_ints("pads");
  if (with_ceil_mode) out.ceil_mode = attrs.get_int("ceil_mode", 0) != 0;
  NXRT_RETURN_IF_ERROR(attrs.status());
  if (pad == "NOTSET" || pad.empty())
    out.auto_pad = AutoPad::kNotSet;
  else if (pad == "VALID")
    out.auto_pad = AutoPad::kValid;
  else if (pad == "SAME_UPPER")
    out.auto_pad = AutoPad::kSameUpper;
  else if (pad == "SAME_LOWER")
    out.auto_pad = AutoPad::kSameLower;
  else
    return invalid_graph("auto_pad '", pad,
                         "' is not one of NOTSET, VALID, SAME_UPPER, SAME_LOWER");
  for (int64_t v : out.kernel_shape)
    if (v <= 0) return invalid_graph("kernel_shape values must be positive");
  for (int64_t v : out.strides)
    if (v <= 0) return invalid_graph("strides must be positive");
  for (int64_t v : out.dilations)
    if (v <= 0) return invalid_graph("dilations must be positive");
  for (int64_t v : out.pads)
    if (v < 0) return invalid_graph("pads must not be negative");
  return Status();
}

Status resolve_window(const WindowAttrs& a, std::span<const int64_t> in,
                      std::span<const int64_t> kernel, Window& w) {
  const size_t r = in.size();
  auto check = [&](std::span<const int64_t> v, size_t n, const char* what) -> Status {
    if (!v.empty() && v.size() != n)
      return invalid_argument(what, " has ", v.size(), " values; the input has ", r,
                              " spatial dims");
    return Status();
  };
  NXRT_RETURN_IF_ERROR(check(kernel, r, "kernel_shape"));
  NXRT_RETURN_IF_ERROR(check(a.strides, r, "strides"));
  NXRT_RETURN_IF_ERROR(check(a.dilations, r, "dilations"));
  NXRT_RETURN_IF_ERROR(check(a.pads, 2 * r, "pads"));
  w.rank = r;
  w.in.assign(in.begin(), in.end());
  w.kernel.assign(kernel.begin(), kernel.end());
  if (a.strides.empty())
    w.stride.assign(r, 1);
  else
    w.stride = a.strides;
  if (a.dilations.empty())
    w.dilation.assign(r, 1);
  else
    w.dilation = a.dilations;
  w.pad_begin.assign(r, 0);
  w.pad_end.assign(r, 0);
  w.out.assign(r, 0);
  for (size_t d = 0; d < r; ++d) {
    const int64_t span = (w.kernel[d] - 1) * w.dilation[d] + 1;  // extent of one window
    const int64_t s = w.stride[d];
    switch (a.auto_pad) {
      case AutoPad::kNotSet: {
        if (!a.pads.empty()) {
          w.pad_begin[d] = a.pads[d];
          w.pad_end[d] = a.pads[d + r];
        }
        const int64_t room = in[d] + w.pad_begin[d] + w.pad_end[d] - span;
        if (room < 0)
          return invalid_argument("window of extent ", span, " does not fit input dim ", d,
                                  " of size ", in[d], " with its pads");
        int64_t out = (a.ceil_mode ? (room + s - 1) / s : room / s) + 1;
        // A last window that would start entirely in the end padding is dropped.
        if (a.ceil_mode && (out - 1) * s >= in[d] + w.pad_begin[d]) --out;
        w.out[d] = out;
        break;
      }
      case AutoPad::kValid:
        if (in[d] < span)
          return invalid_argument("window of extent ", span, " does not fit input dim ", d,
                                  " of size ", in[d]);
        w.out[d] = (in[d] - span) / s + 1;
        break;
      case AutoPad::kSameUpper:
      case AutoPad::kSameLower: {
        w.out[d] = (in[d] + s - 1) / s;
        const int64_t total = std::max<int64_t>(0, (w.out[d] - 1) * s + span - in[d]);
        const int64_t small = total / 2;
        w.pad_begin[d] = a.auto_pad == AutoPad::kSameUpper ? small : total - small;
        w.pad_end[d] = total - w.pad_begin[d];
        break;
      }
    }
  }
  return Status();
}

std::vector<DimRange> dim_ranges(const Window& w, size_t d) {
  std::vector<DimRange> r(size_t(w.out[d]));
  for (int64_t o = 0; o < w.out[d]; ++o)
    r[size_t(o)] =
        window_range(o * w.stride[d] - w.pad_begin[d], w.kernel[d], w.dilation[d], w.in[d]);
  return r;
}

DimRange window_range(int64_t start, int64_t kernel, int64_t dilation, int64_t in) {
  // smallest k with start + k*dil >= 0, and one past the largest with start + k*dil < in
  int64_t lo = start >= 0 ? 0 : (-start + dilation - 1) / dilation;
  int64_t hi = start >= in ? 0 : (in - start + dilation - 1) / dilation;
  lo = std::min(lo, kernel);
  hi = std::clamp<int64_t>(hi, lo, kernel);
  return {start, lo, hi};
}

void inner_outputs(int64_t out, int64_t stride, int64_t pad_begin, int64_t kernel, int64_t dilation,
                   int64_t in, int64_t& lo, int64_t& hi) {
  // first o with o*stride >= pad_begin; last with o*stride - pad_begin + span < in
  const int64_t span = (kernel - 1) * dilation;
  lo = std::min(out, (pad_begin + stride - 1) / stride);
  const int64_t room = in - 1 - span + pad_begin;  // o*stride <= room
  hi = room < 0 ? 0 : std::min(out, room / stride + 1);
  if (hi < lo) hi = lo;
}

}  // namespace nxrt::cpu
