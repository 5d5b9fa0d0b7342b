// TensorScatter: an update written into a past tensor along one axis (KV-cache writes,
// linear or circular).
#include <cstring>
#include <string>

#include "ep/cpu/kernels/common.h"
#include "ep/cpu/kernels/element_copy.h"

namespace nxrt::cpu {
namespace {

// present = past with update written along `axis` at write_indices[b] (per batch entry b,
// the leading dim), wrapping around in circular mode.
class TensorScatterKernel final : public Kernel {
 public:
  TensorScatterKernel(int64_t axis, bool circular) : axis_(axis), circular_(circular) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor& past = *ctx.input(0);
    const Tensor& update = *ctx.input(1);
    const Tensor* indices = ctx.input(2);
    const int64_t r = int64_t(past.rank());
    int64_t axis = axis_;
    if (!normalize_axis(axis, r) || axis == 0)
      return invalid_argument("axis ", axis_, " must name a non-batch dim of rank-", r,
                              " past_cache");
    if (update.rank() != past.rank())
      return invalid_argument("update ", update.shape().to_string(), " and past_cache ",
                              past.shape().to_string(), " differ in rank");
    for (int64_t d = 0; d < r; ++d) {
      const int64_t p = past.shape()[size_t(d)], u = update.shape()[size_t(d)];
      if (d == axis ? u > p : u != p)
        return invalid_argument("update ", update.shape().to_string(), " does not fit past_cache ",
                                past.shape().to_string(), " (dim ", d, ")");
    }
    const int64_t batch = past.shape()[0];
    const int64_t max_len = past.shape()[size_t(axis)];
    const int64_t seq = update.shape()[size_t(axis)];
    if (indices && (indices->rank() != 1 || indices->shape()[0] != batch))
      return invalid_argument("write_indices must have shape [", batch, "], got ",
                              indices->shape().to_string());
    const int64_t* idx = indices ? indices->data<int64_t>() : nullptr;
    for (int64_t b = 0; idx && b < batch; ++b) {
      if (idx[b] < 0 || (!circular_ && idx[b] + seq > max_len))
        return invalid_argument("write_indices[", b, "] = ", idx[b], " with ", seq,
                                " update steps does not fit a cache of ", max_len);
    }
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, past.shape()));
    copy_elements(past.dtype(), past.raw(), y->raw(), past.numel());
    const size_t bytes = element_bytes(past.dtype());
    const int64_t inner = past.shape().product(size_t(axis) + 1, size_t(r));
    const int64_t outer = past.shape().product(0, size_t(axis));
    const int64_t per_batch = batch > 0 ? outer / batch : 0;
    for (int64_t o = 0; o < outer; ++o) {
      const int64_t start = idx ? idx[o / per_batch] : 0;
      for (int64_t s = 0; s < seq; ++s) {
        int64_t pos = start + s;
        if (circular_) pos %= max_len;
        copy_run(past.dtype(), bytes, update.raw(), (o * seq + s) * inner, y->raw(),
                 (o * max_len + pos) * inner, inner);
      }
    }
    return Status();
  }

 private:
  int64_t axis_;
  bool circular_;
};

}  // namespace

Expected<KernelPtr> create_tensor_scatter(KernelInit& init) {
  AttrReader attrs(init.node);
  const int64_t axis = attrs.get_int("axis", -2);
  const std::string mode = attrs.get_string("mode", "linear");
  NXRT_RETURN_IF_ERROR(attrs.status());
  if (mode != "linear" && mode != "circular")
    return init.error(StatusCode::kInvalidGraph, "mode '", mode, "' is not linear or circular");
  const DataType t = init.input_type(0);
  if (!movable_type(t)) return init.unsupported_type(0);
  if (init.input_type(1) != t) return init.unsupported_type(1);
  if (init.has_input(2) && init.input_type(2) != DataType::kInt64) return init.unsupported_type(2);
  init.set_all_outputs(t);
  return make_kernel<TensorScatterKernel>(axis, mode == "circular");
}

}  // namespace nxrt::cpu
