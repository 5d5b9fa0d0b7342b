// ReverseSequence: the first sequence_lens[b] time steps of each batch entry reversed.
#include <cstring>

#include "ep/cpu/kernels/common.h"
#include "ep/cpu/kernels/element_copy.h"

namespace nxrt::cpu {
namespace {

// Reverses the first sequence_lens[b] steps along time_axis for each batch entry b;
// later steps are copied unchanged.
class ReverseSequenceKernel final : public Kernel {
 public:
  ReverseSequenceKernel(int64_t batch_axis, int64_t time_axis)
      : batch_axis_(batch_axis), time_axis_(time_axis) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    const Tensor& lens = *ctx.input(1);
    if (x.rank() < 2)
      return invalid_argument("input must have rank >= 2, got ", x.shape().to_string());
    const int64_t batch = x.shape()[size_t(batch_axis_)];
    const int64_t steps = x.shape()[size_t(time_axis_)];
    if (lens.rank() != 1 || lens.shape()[0] != batch)
      return invalid_argument("sequence_lens must have shape [", batch, "], got ",
                              lens.shape().to_string());
    const int64_t* len = lens.data<int64_t>();
    for (int64_t b = 0; b < batch; ++b)
      if (len[b] < 0 || len[b] > steps)
        return invalid_argument("sequence_lens[", b, "] = ", len[b], " is outside [0, ", steps,
                                "]");
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, x.shape()));
    const int64_t inner = x.shape().product(2, x.rank());
    const size_t bytes = element_bytes(x.dtype());
    // Element offset of (batch b, time t) in units of `inner` blocks.
    auto block = [&](int64_t b, int64_t t) {
      return batch_axis_ == 0 ? b * steps + t : t * batch + b;
    };
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t t = 0; t < steps; ++t) {
        const int64_t from = t < len[b] ? len[b] - 1 - t : t;
        copy_run(x.dtype(), bytes, x.raw(), block(b, from) * inner, y->raw(), block(b, t) * inner,
                 inner);
      }
    return Status();
  }

 private:
  int64_t batch_axis_, time_axis_;
};

}  // namespace

Expected<KernelPtr> create_reverse_sequence(KernelInit& init) {
  AttrReader attrs(init.node);
  const int64_t batch_axis = attrs.get_int("batch_axis", 1);
  const int64_t time_axis = attrs.get_int("time_axis", 0);
  NXRT_RETURN_IF_ERROR(attrs.status());
  if (!((batch_axis == 0 && time_axis == 1) || (batch_axis == 1 && time_axis == 0)))
    return init.error(StatusCode::kInvalidGraph, "batch_axis (", batch_axis, ") and time_axis (",
                      time_axis, ") must be 0 and 1 in some order");
  if (!movable_type(init.input_type(0))) return init.unsupported_type(0);
  if (init.input_type(1) != DataType::kInt64) return init.unsupported_type(1);
  init.set_all_outputs(init.input_type(0));
  return make_kernel<ReverseSequenceKernel>(batch_axis, time_axis);
}

}  // namespace nxrt::cpu
