// Where: out = condition ? x : y with numpy broadcasting over all three inputs.
#include "ep/cpu/kernels/element_copy.h"

namespace nxrt::cpu {
namespace {

class WhereKernel final : public Kernel {
 public:
  explicit WhereKernel(DataType dtype) : dtype_(dtype) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor& c = *ctx.input(0);
    const Tensor& x = *ctx.input(1);
    const Tensor& y = *ctx.input(2);
    const Shape* shapes[] = {&c.shape(), &x.shape(), &y.shape()};
    Shape out_shape;
    if (!broadcast_shapes(shapes, out_shape))
      return invalid_argument("shapes ", c.shape().to_string(), ", ", x.shape().to_string(),
                              " and ", y.shape().to_string(), " cannot be broadcast together");
    NXRT_ASSIGN_OR_RETURN(Tensor * out, ctx.output(0, out_shape));
    if (out->numel() == 0) return Status();
    const BroadcastPlan plan = make_broadcast_plan(out_shape, shapes);
    const bool* pc = c.data<bool>();
    return visit_by_element_size(dtype_, [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* px = x.data<T>();
      const T* py = y.data<T>();
      T* po = out->data<T>();
      for_each_broadcast_run(
          plan, [&](const int64_t* off, int64_t o, int64_t count, const int64_t* step) {
            const bool* cc = pc + off[0];
            const T* xx = px + off[1];
            const T* yy = py + off[2];
            T* z = po + o;
            if (step[0] == 1 && step[1] == 1 && step[2] == 1) {
              for (int64_t i = 0; i < count; ++i) z[i] = cc[i] ? xx[i] : yy[i];
            } else {
              for (int64_t i = 0; i < count; ++i)
                z[i] = cc[i * step[0]] ? xx[i * step[1]] : yy[i * step[2]];
            }
          });
      return Status();
    });
  }

 private:
  DataType dtype_;
};

}  // namespace

Expected<KernelPtr> create_where(KernelInit& init) {
  if (init.input_type(0) != DataType::kBool) return init.unsupported_type(0);
  const DataType t = init.input_type(1);
  if (!movable_type(t)) return init.unsupported_type(1);
  if (init.input_type(2) != t)
    return init.error(StatusCode::kInvalidGraph, "x has type ", tensor_type_name(t), " but y has ",
                      tensor_type_name(init.input_type(2)));
  init.set_all_outputs(t);
  return make_kernel<WhereKernel>(t);
}

}  // namespace nxrt::cpu
