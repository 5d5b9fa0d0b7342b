// nxrt Snake(X, alpha, r): y = x + r * sin(alpha * x)^2, alpha and r of one shape (one
// value per channel, [1, C, 1]) broadcast against X ([N, C, L]) as Mul and Add broadcast:
// what fuse_snake makes of the vocoders' five exported nodes. Each step rounds as its unfused node
// does (the product, vmath's sine as the Sin kernel takes it, the square, the product, the sum: no
// contraction into FMAs), so the result is the same bits, in one pass over memory instead of five:
// each row goes through in chunks that stay in L1.
#include <algorithm>

#include "ep/cpu/kernels/common.h"
#include "ep/cpu/vmath/vmath.h"

namespace nxrt::cpu {
namespace {

constexpr int64_t kChunk = 1024;  // floats of sine per step (4 KiB, in L1)

// n outputs of one broadcast run: x and the per-channel values `xs` and `cs` elements
// apart (a channel's row: 1 and 0).
void snake_run(const float* x, int64_t xs, const float* alpha, const float* r, int64_t cs,
               int64_t n, float* y, float* sine) {
  for (int64_t j0 = 0; j0 < n; j0 += kChunk) {
    const int64_t m = std::min(kChunk, n - j0);
    const float* xc = x + j0 * xs;
    float* yc = y + j0;
    if (xs == 1 && cs == 0) {  // a channel's row: the loops vectorize
      const float a = alpha[0], w = r[0];
      for (int64_t j = 0; j < m; ++j) sine[j] = a * xc[j];
      vmath::unary(vmath::Unary::kSin, {}, sine, sine, size_t(m));
      for (int64_t j = 0; j < m; ++j) {
        const float square = sine[j] * sine[j];
        const float weighted = w * square;
        yc[j] = xc[j] + weighted;
      }
    } else {
      const float* ac = alpha + j0 * cs;
      const float* rc = r + j0 * cs;
      for (int64_t j = 0; j < m; ++j) sine[j] = ac[j * cs] * xc[j * xs];
      vmath::unary(vmath::Unary::kSin, {}, sine, sine, size_t(m));
      for (int64_t j = 0; j < m; ++j) {
        const float square = sine[j] * sine[j];
        const float weighted = rc[j * cs] * square;
        yc[j] = xc[j * xs] + weighted;
      }
    }
  }
}

class SnakeKernel final : public Kernel {
 public:
  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    const Tensor& alpha = *ctx.input(1);
    const Tensor& r = *ctx.input(2);
    if (alpha.shape() != r.shape())
      return invalid_argument("alpha ", alpha.shape().to_string(), " and r ", r.shape().to_string(),
                              " must have one shape");
    const Shape* shapes[] = {&x.shape(), &alpha.shape()};
    Shape out_shape;
    if (!broadcast_shapes(shapes, out_shape))
      return invalid_argument("input ", x.shape().to_string(), " and alpha ",
                              alpha.shape().to_string(), " cannot be broadcast together");
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, out_shape));
    const BroadcastPlan plan = make_broadcast_plan(out_shape, shapes);
    const int64_t inner = plan.dims.back();
    if (plan.numel == 0 || inner == 0) return Status();
    const float* xp = x.data<float>();
    const float* ap = alpha.data<float>();
    const float* rp = r.data<float>();
    float* yp = y->data<float>();
    // Runs (channel rows) split across threads by element count, the sine's cost.
    parallel_ranges(
        plan.numel / inner, std::max(1.0, double(1 << 15) / double(inner)),
        [&](size_t, int64_t begin, int64_t end) {
          float* sine = scratch<float>(ScratchSlot::kKernel0, size_t(kChunk));
          for_each_broadcast_run(
              plan, begin, end,
              [&](const int64_t* offsets, int64_t out, int64_t count, const int64_t* steps) {
                snake_run(xp + offsets[0], steps[0], ap + offsets[1], rp + offsets[1], steps[1],
                          count, yp + out, sine);
              });
        });
    return Status();
  }
};

}  // namespace

Expected<KernelPtr> create_snake(KernelInit& init) {
  for (size_t i = 0; i < 3; ++i)
    if (init.input_type(i) != DataType::kFloat) return init.unsupported_type(i);
  init.set_all_outputs(DataType::kFloat);
  return make_kernel<SnakeKernel>();
}

}  // namespace nxrt::cpu
