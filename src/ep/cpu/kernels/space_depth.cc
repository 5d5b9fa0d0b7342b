// DepthToSpace (DCR and CRD channel orders) and SpaceToDepth on NCHW tensors. Both are
// fixed 6-D transposes; the loops below walk the output contiguously and copy rows of
// one element at a time from the matching input position.
#include "ep/cpu/kernels/common.h"

namespace nxrt::cpu {
namespace {

// Both ops relate a "depth" tensor [N, C*b*b, H, W] to a "space" tensor [N, C, H*b, W*b].
// The depth channel of space element (c, h*b+bh, w*b+bw) is
//   DCR: (bh*b + bw)*C + c      CRD: c*b*b + bh*b + bw
// `to_space` chooses the copy direction.
template <typename T>
void relayout(const T* src, T* dst, int64_t n, int64_t c, int64_t h, int64_t w, int64_t b, bool crd,
              bool to_space) {
  const int64_t space_w = w * b;
  for (int64_t in = 0; in < n; ++in) {
    for (int64_t ic = 0; ic < c; ++ic) {
      for (int64_t ih = 0; ih < h; ++ih) {
        for (int64_t bh = 0; bh < b; ++bh) {
          // One row of the space tensor: (in, ic, ih*b + bh, :).
          const int64_t space_row = ((in * c + ic) * h * b + ih * b + bh) * space_w;
          for (int64_t bw = 0; bw < b; ++bw) {
            const int64_t depth_c = crd ? (ic * b + bh) * b + bw : (bh * b + bw) * c + ic;
            const int64_t depth_row = ((in * c * b * b + depth_c) * h + ih) * w;
            for (int64_t iw = 0; iw < w; ++iw) {
              const int64_t s = space_row + iw * b + bw;
              const int64_t d = depth_row + iw;
              if (to_space)
                dst[s] = src[d];
              else
                dst[d] = src[s];
            }
          }
        }
      }
    }
  }
}

class SpaceDepthKernel final : public Kernel {
 public:
  SpaceDepthKernel(DataType dtype, int64_t block, bool crd, bool to_space)
      : dtype_(dtype), block_(block), crd_(crd), to_space_(to_space) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    if (x.rank() != 4)
      return invalid_argument("input must be 4-D (NCHW), got shape ", x.shape().to_string());
    const Shape& s = x.shape();
    const int64_t b = block_;
    int64_t n = s[0], c, h, w;
    Shape out;
    if (to_space_) {
      if (s[1] % (b * b) != 0)
        return invalid_argument("channels ", s[1], " are not divisible by blocksize^2 = ", b * b);
      c = s[1] / (b * b);
      h = s[2];
      w = s[3];
      out = Shape{n, c, h * b, w * b};
    } else {
      if (s[2] % b != 0 || s[3] % b != 0)
        return invalid_argument("spatial dims ", s.to_string(), " are not divisible by blocksize ",
                                b);
      c = s[1];
      h = s[2] / b;
      w = s[3] / b;
      out = Shape{n, c * b * b, h, w};
    }
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, out));
    switch (dtype_) {
      NXRT_CASES_ALL(relayout<T>(x.data<T>(), y->data<T>(), n, c, h, w, b, crd_, to_space_))
      default:
        return not_implemented("type ", tensor_type_name(dtype_), " is not supported");
    }
    return Status();
  }

 private:
  DataType dtype_;
  int64_t block_;
  bool crd_, to_space_;
};

// Keeps blocksize^2 times a channel count far from int64 overflow.
constexpr int64_t kMaxBlock = int64_t(1) << 20;

bool supported(DataType t) {
  return is_float_type(t) || is_integer_type(t) || t == DataType::kBool || t == DataType::kString;
}

}  // namespace

Expected<KernelPtr> create_depth_to_space(KernelInit& init) {
  AttrReader attrs(init.node);
  const int64_t block = attrs.require_int("blocksize");
  const std::string mode = attrs.get_string("mode", "DCR");
  NXRT_RETURN_IF_ERROR(attrs.status());
  if (block < 1 || block > kMaxBlock)
    return init.error(StatusCode::kInvalidGraph, "blocksize must be in [1, ", kMaxBlock, "], got ",
                      block);
  if (mode != "DCR" && mode != "CRD")
    return init.error(StatusCode::kInvalidGraph, "mode must be DCR or CRD, got '", mode, "'");
  if (!supported(init.input_type(0))) return init.unsupported_type(0);
  init.set_all_outputs(init.input_type(0));
  return make_kernel<SpaceDepthKernel>(init.input_type(0), block, mode == "CRD", true);
}

Expected<KernelPtr> create_space_to_depth(KernelInit& init) {
  AttrReader attrs(init.node);
  const int64_t block = attrs.require_int("blocksize");
  NXRT_RETURN_IF_ERROR(attrs.status());
  if (block < 1 || block > kMaxBlock)
    return init.error(StatusCode::kInvalidGraph, "blocksize must be in [1, ", kMaxBlock, "], got ",
                      block);
  if (!supported(init.input_type(0))) return init.unsupported_type(0);
  init.set_all_outputs(init.input_type(0));
  // SpaceToDepth has no mode; its channel order is DCR's.
  return make_kernel<SpaceDepthKernel>(init.input_type(0), block, false, false);
}

}  // namespace nxrt::cpu
