// nxrt ChannelAffine: y = activation(x * scale[c] + shift[c]) over an [N, C, ...] tensor,
// the form fuse_batchnorm_affine gives a BatchNormalization with the Mul/Add/activation
// nodes after it. One pass over the tensor instead of one per node; float32 planes run
// vectorized (vmath::unary_affine), other float types element by element.
#include <optional>

#include "core/parallel.h"
#include "ep/cpu/kernels/common.h"
#include "ep/cpu/kernels/fused_activation.h"

namespace nxrt::cpu {
namespace {

class ChannelAffineKernel final : public Kernel {
 public:
  explicit ChannelAffineKernel(std::optional<FusedActivation> activation)
      : fn_(activation ? activation->fn : vmath::Unary::kIdentity),
        params_(activation ? activation->params : vmath::UnaryParams{}) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    const Shape& s = x.shape();
    if (s.size() < 2) return invalid_argument("input X must be [N, C, ...], got ", s.to_string());
    const int64_t channels = s[1];
    const Tensor* coefficients[2] = {ctx.input(1), ctx.input(2)};
    const char* names[2] = {"scale", "shift"};
    for (int i = 0; i < 2; ++i)
      if (coefficients[i]->dtype() != DataType::kFloat || coefficients[i]->numel() != channels)
        return invalid_argument("input ", names[i], " must hold ", channels,
                                " float values (one per channel of ", s.to_string(), "), got ",
                                tensor_type_name(coefficients[i]->dtype()), " ",
                                coefficients[i]->shape().to_string());
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, s));
    const int64_t planes = s[0] * channels, plane = s.product(2, s.size());
    if (planes == 0 || plane == 0) return Status();
    const float* scale = coefficients[0]->data<float>();
    const float* shift = coefficients[1]->data<float>();
    // Planes in blocks over the run's threads (memory-bound: blocks of at least 64K values).
    const int64_t pieces = std::min<int64_t>(
        int64_t(parallel_pieces(double(planes * plane), double(1 << 16))), planes);
    const int64_t per_piece = (planes + pieces - 1) / pieces;
    switch (x.dtype()) {
      NXRT_CASES_FLOAT({
        const T* px = x.data<T>();
        T* py = y->data<T>();
        parallel_for(size_t(pieces), [&](size_t piece) {
          const int64_t q1 = std::min(planes, int64_t(piece + 1) * per_piece);
          for (int64_t q = int64_t(piece) * per_piece; q < q1; ++q)
            apply(scale[q % channels], shift[q % channels], px + q * plane, py + q * plane, plane);
        });
      })
      default:
        return not_implemented("ChannelAffine of ", tensor_type_name(x.dtype()), " input X");
    }
    return Status();
  }

 private:
  void apply(float a, float b, const float* x, float* y, int64_t n) const {
    vmath::unary_affine(fn_, params_, a, b, x, y, size_t(n));
  }
  template <typename T>
  void apply(float a, float b, const T* x, T* y, int64_t n) const {
    for (int64_t i = 0; i < n; ++i) {
      const double v = double(wide_t<T>(x[i])) * a + b;
      y[i] = narrow<T>(fn_ == vmath::Unary::kIdentity ? v : vmath::reference(fn_, params_, v));
    }
  }

  vmath::Unary fn_;
  vmath::UnaryParams params_;
};

}  // namespace

Expected<KernelPtr> create_channel_affine(KernelInit& init) {
  if (!is_float_type(init.input_type(0))) return init.unsupported_type(0);
  for (size_t i = 1; i < 3; ++i)
    if (init.input_type(i) != DataType::kFloat) return init.unsupported_type(i);
  AttrReader attrs(init.node);
  NXRT_ASSIGN_OR_RETURN(std::optional<FusedActivation> activation,
                        read_fused_activation(init, attrs, "ChannelAffine"));
  init.set_all_outputs(init.input_type(0));
  return make_kernel<ChannelAffineKernel>(activation);
}

}  // namespace nxrt::cpu
