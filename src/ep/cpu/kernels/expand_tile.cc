// Expand and Tile. Both are a broadcast copy: Expand broadcasts the input to the target
// shape, and Tile is the broadcast of the input viewed as [1, d0, 1, d1, ...] to
// [r0, d0, r1, d1, ...], whose row-major layout is exactly the tiled output. The broadcast
// plan merges dims, so the copy runs as long fills or memcpys.
#include <vector>

#include "ep/cpu/kernels/element_copy.h"

namespace nxrt::cpu {
namespace {

// dst (laid out as `out_view`) = src (laid out as `in_view`) broadcast.
Status broadcast_copy(DataType dtype, const void* src, const Shape& in_view, void* dst,
                      const Shape& out_view) {
  const Shape* inputs[] = {&in_view};
  const BroadcastPlan plan = make_broadcast_plan(out_view, inputs);
  return visit_by_element_size(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* s = static_cast<const T*>(src);
    T* d = static_cast<T*>(dst);
    for_each_broadcast_run(
        plan, [&](const int64_t* off, int64_t out, int64_t count, const int64_t* step) {
          const T* from = s + off[0];
          T* to = d + out;
          if (step[0] == 1) {
            copy_run(from, to, count);
          } else if (step[0] == 0) {
            for (int64_t i = 0; i < count; ++i) to[i] = *from;
          } else {
            for (int64_t i = 0; i < count; ++i) to[i] = from[i * step[0]];
          }
        });
    return Status();
  });
}

class ExpandKernel final : public Kernel {
 public:
  explicit ExpandKernel(DataType dtype) : dtype_(dtype) {}
  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    SmallVec<int64_t> dims;  // per run: inline, no heap traffic
    NXRT_RETURN_IF_ERROR(read_int_list(*ctx.input(1), dims, "shape input"));
    const Shape target(std::span<const int64_t>(dims.data(), dims.size()));
    for (int64_t d : dims)
      if (d < 0) return invalid_argument("shape ", target.to_string(), " has a negative dim");
    const Shape* shapes[] = {&x.shape(), &target};
    Shape out_shape;
    if (!broadcast_shapes(shapes, out_shape))
      return invalid_argument("input shape ", x.shape().to_string(), " cannot be expanded to ",
                              target.to_string());
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, out_shape));
    if (y->numel() == 0) return Status();
    return broadcast_copy(dtype_, x.raw(), x.shape(), y->raw(), out_shape);
  }

 private:
  DataType dtype_;
};

class TileKernel final : public Kernel {
 public:
  explicit TileKernel(DataType dtype) : dtype_(dtype) {}
  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    SmallVec<int64_t> repeats;
    NXRT_RETURN_IF_ERROR(read_int_list(*ctx.input(1), repeats, "repeats input"));
    const size_t rank = x.rank();
    if (repeats.size() != rank)
      return invalid_argument("repeats has ", repeats.size(), " entries but the input has rank ",
                              rank);
    Shape out_shape, in_view, out_view;
    for (size_t d = 0; d < rank; ++d) {
      const int64_t r = repeats[d];
      if (r < 0) return invalid_argument("repeats[", d, "] is negative (", r, ")");
      const int64_t n = x.shape()[d];
      out_shape.push_back(n * r);
      if (checked_numel(out_shape.span()) < 0) return invalid_argument("tiled shape is too large");
      in_view.push_back(1);
      in_view.push_back(n);
      out_view.push_back(r);
      out_view.push_back(n);
    }
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, out_shape));
    if (y->numel() == 0) return Status();
    return broadcast_copy(dtype_, x.raw(), in_view, y->raw(), out_view);
  }

 private:
  DataType dtype_;
};

Status check_types(KernelInit& init, const char* what) {
  const DataType t = init.input_type(0);
  if (!movable_type(t)) return init.unsupported_type(0);
  const DataType s = init.input_type(1);
  if (s != DataType::kInt64 && s != DataType::kInt32)
    return init.error(StatusCode::kInvalidGraph, what, " input must be int64, got ",
                      tensor_type_name(s));
  init.set_all_outputs(t);
  return Status();
}

}  // namespace

Expected<KernelPtr> create_expand(KernelInit& init) {
  NXRT_RETURN_IF_ERROR(check_types(init, "shape"));
  return make_kernel<ExpandKernel>(init.input_type(0));
}

Expected<KernelPtr> create_tile(KernelInit& init) {
  NXRT_RETURN_IF_ERROR(check_types(init, "repeats"));
  return make_kernel<TileKernel>(init.input_type(0));
}

}  // namespace nxrt::cpu
