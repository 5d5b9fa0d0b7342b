// Slice: starts/ends/axes as attributes (opset 1-9) or inputs with steps (opset 10+).
// Trailing axes the slice leaves whole merge with the innermost step-1 axis into one
// contiguous run, so the copy is a few long runs whenever the layout allows.
#include <algorithm>
#include <limits>
#include <vector>

#include "ep/cpu/kernels/element_copy.h"

namespace nxrt::cpu {
namespace {

struct AxisSlice {
  int64_t start = 0;
  int64_t step = 1;
  int64_t count = 0;
};

// Clamps per the spec and counts the elements a start/end/step selects on a dim.
AxisSlice resolve(int64_t start, int64_t end, int64_t step, int64_t dim) {
  AxisSlice s;
  s.step = step;
  if (dim == 0) return s;
  if (start < 0) start += dim;
  if (end < 0) end += dim;  // INT64_MIN + dim cannot overflow for dim >= 0
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
    s.count = end > start ? int64_t(uint64_t(end - start - 1) / uint64_t(step)) + 1 : 0;
  } else {
    start = std::clamp<int64_t>(start, 0, dim - 1);
    end = std::clamp<int64_t>(end, -1, dim - 1);
    const uint64_t magnitude = uint64_t(0) - uint64_t(step);  // safe for INT64_MIN
    s.count = start > end ? int64_t(uint64_t(start - end - 1) / magnitude) + 1 : 0;
  }
  s.start = start;
  // With at most one element taken the step is never applied; normalizing it keeps
  // step * stride in range for hostile steps (with two or more, |step| < dim).
  if (s.count <= 1) s.step = 1;
  return s;
}

template <typename T>
void slice_copy(const T* src, T* dst, const Shape& in, const SmallVec<AxisSlice>& sl) {
  const size_t rank = in.size();
  SmallVec<int64_t> stride(rank, 1);
  for (size_t d = rank; d-- > 1;) stride[d - 1] = stride[d] * in[d];
  int64_t base = 0;
  for (size_t d = 0; d < rank; ++d) base += sl[d].start * stride[d];
  // Merge whole trailing axes, then the innermost step-1 axis, into one run.
  size_t k = rank;
  int64_t run = 1;
  while (k > 0 && sl[k - 1].step == 1 && sl[k - 1].count == in[k - 1]) run *= in[--k];
  if (k > 0 && sl[k - 1].step == 1) run *= sl[--k].count;
  // Otherwise, with no run to speak of, walk the innermost axis with its step.
  int64_t strided_len = 0, strided_step = 0;
  if (run == 1 && k > 0) {
    --k;
    strided_len = sl[k].count;
    strided_step = sl[k].step * stride[k];
  }
  const int64_t inner = strided_len > 0 ? strided_len : run;
  SmallVec<int64_t> index(k, 0);
  int64_t total = 1;
  for (size_t d = 0; d < rank; ++d) total *= sl[d].count;
  int64_t offset = base;
  for (int64_t out = 0; out < total; out += inner) {
    if (strided_len > 0) {
      const T* s = src + offset;
      T* o = dst + out;
      for (int64_t j = 0; j < strided_len; ++j) o[j] = s[j * strided_step];
    } else {
      copy_run(src + offset, dst + out, run);
    }
    for (size_t d = k; d-- > 0;) {
      offset += sl[d].step * stride[d];
      if (++index[d] < sl[d].count) break;
      offset -= sl[d].step * stride[d] * sl[d].count;
      index[d] = 0;
    }
  }
}

class SliceKernel final : public Kernel {
 public:
  // `from_inputs`: opset 10+; otherwise the attribute lists below are used.
  SliceKernel(DataType dtype, bool from_inputs, std::vector<int64_t> starts,
              std::vector<int64_t> ends, std::vector<int64_t> axes, bool has_axes)
      : dtype_(dtype),
        from_inputs_(from_inputs),
        starts_(std::move(starts)),
        ends_(std::move(ends)),
        axes_(std::move(axes)),
        has_axes_(has_axes) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    const int64_t rank = int64_t(x.rank());
    SmallVec<int64_t> starts = starts_, ends = ends_, axes = axes_, steps;
    bool has_axes = has_axes_;
    if (from_inputs_) {
      if (!ctx.input(1) || !ctx.input(2)) return invalid_argument("starts and ends are required");
      NXRT_RETURN_IF_ERROR(read_int_list(*ctx.input(1), starts, "starts"));
      NXRT_RETURN_IF_ERROR(read_int_list(*ctx.input(2), ends, "ends"));
      has_axes = ctx.input(3) != nullptr;
      if (has_axes) NXRT_RETURN_IF_ERROR(read_int_list(*ctx.input(3), axes, "axes"));
      if (const Tensor* s = ctx.input(4)) NXRT_RETURN_IF_ERROR(read_int_list(*s, steps, "steps"));
    }
    const size_t n = starts.size();
    if (ends.size() != n)
      return invalid_argument("starts has ", n, " entries but ends has ", ends.size());
    if (has_axes && axes.size() != n)
      return invalid_argument("axes has ", axes.size(), " entries, expected ", n);
    if (!steps.empty() && steps.size() != n)
      return invalid_argument("steps has ", steps.size(), " entries, expected ", n);
    if (!has_axes && int64_t(n) > rank)
      return invalid_argument("starts has ", n, " entries but the input has rank ", rank);
    SmallVec<AxisSlice> sl(static_cast<size_t>(rank));
    for (int64_t d = 0; d < rank; ++d) sl[size_t(d)].count = x.shape()[size_t(d)];
    SmallVec<bool> seen(size_t(rank), false);
    for (size_t i = 0; i < n; ++i) {
      int64_t axis = has_axes ? axes[i] : int64_t(i);
      if (!normalize_axis(axis, rank))
        return invalid_argument("axis ", axes[i], " is out of range for rank ", rank);
      if (seen[size_t(axis)]) return invalid_argument("axis ", axis, " appears more than once");
      seen[size_t(axis)] = true;
      const int64_t step = steps.empty() ? 1 : steps[i];
      if (step == 0) return invalid_argument("step for axis ", axis, " is 0");
      sl[size_t(axis)] = resolve(starts[i], ends[i], step, x.shape()[size_t(axis)]);
    }
    Shape out_shape;
    out_shape.resize(size_t(rank));
    for (int64_t d = 0; d < rank; ++d) out_shape[size_t(d)] = sl[size_t(d)].count;
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, out_shape));
    if (y->numel() == 0) return Status();
    return visit_by_element_size(dtype_, [&](auto tag) {
      using T = typename decltype(tag)::type;
      slice_copy(x.data<T>(), y->data<T>(), x.shape(), sl);
      return Status();
    });
  }

 private:
  DataType dtype_;
  bool from_inputs_;
  std::vector<int64_t> starts_, ends_, axes_;
  bool has_axes_;
};

}  // namespace

Expected<KernelPtr> create_slice(KernelInit& init) {
  const DataType t = init.input_type(0);
  if (!movable_type(t)) return init.unsupported_type(0);
  init.set_all_outputs(t);
  if (init.opset >= 10) {
    for (size_t i = 1; i < init.num_inputs(); ++i)
      if (init.has_input(i) && init.input_type(i) != DataType::kInt32 &&
          init.input_type(i) != DataType::kInt64)
        return init.unsupported_type(i);
    return make_kernel<SliceKernel>(t, true, std::vector<int64_t>{}, std::vector<int64_t>{},
                                    std::vector<int64_t>{}, false);
  }
  AttrReader attrs(init.node);
  std::vector<int64_t> starts = attrs.require_ints("starts");
  std::vector<int64_t> ends = attrs.require_ints("ends");
  const bool has_axes = attrs.has("axes");
  std::vector<int64_t> axes = attrs.get_ints("axes");
  NXRT_RETURN_IF_ERROR(attrs.status());
  return make_kernel<SliceKernel>(t, false, std::move(starts), std::move(ends), std::move(axes),
                                  has_axes);
}

}  // namespace nxrt::cpu
