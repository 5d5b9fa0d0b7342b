// Concat and Split. Both view a tensor as [outer, axis, inner] and move whole
// axis-by-inner blocks, so each copy is one contiguous run per outer index.
#include <algorithm>
#include <vector>

#include "ep/cpu/kernels/element_copy.h"

namespace nxrt::cpu {
namespace {

class ConcatKernel final : public Kernel {
 public:
  ConcatKernel(DataType dtype, int64_t axis) : dtype_(dtype), axis_(axis) {}

  Status compute(KernelContext& ctx) const override {
    const size_t n = ctx.num_inputs();
    const Tensor& first = *ctx.input(0);
    const int64_t rank = int64_t(first.rank());
    if (rank == 0) return invalid_argument("cannot concatenate scalars");
    int64_t axis = axis_;
    if (!normalize_axis(axis, rank))
      return invalid_argument("axis ", axis_, " is out of range for rank ", rank);
    Shape out_shape = first.shape();
    int64_t total = 0;
    for (size_t i = 0; i < n; ++i) {
      const Tensor* t = ctx.input(i);
      if (!t) return invalid_argument("input ", i, " is missing");
      const Shape& s = t->shape();
      bool same = int64_t(s.size()) == rank;
      for (int64_t d = 0; same && d < rank; ++d)
        same = d == axis || s[size_t(d)] == out_shape[size_t(d)];
      if (!same)
        return invalid_argument("input ", i, " has shape ", s.to_string(),
                                ", which does not match input 0's ", first.shape().to_string(),
                                " outside axis ", axis);
      total += s[size_t(axis)];
    }
    out_shape[size_t(axis)] = total;
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, out_shape));
    if (y->numel() == 0) return Status();
    const int64_t outer = out_shape.product(0, size_t(axis));
    const int64_t inner = out_shape.product(size_t(axis) + 1, size_t(rank));
    const int64_t out_block = total * inner;
    // Inputs their producers wrote in place (runtime/concat_placement.h) are skipped:
    // with one outer block, input i's place starts at the elements of those before it.
    const auto in_place = [&](size_t i, int64_t column) {
      return outer == 1 &&
             static_cast<const std::byte*>(ctx.input(i)->raw()) ==
                 static_cast<const std::byte*>(y->raw()) + size_t(column) * dtype_size(dtype_);
    };
    int64_t copied = 0;
    for (int64_t i = 0, column = 0; i < int64_t(n); ++i) {
      const int64_t block = ctx.input(size_t(i))->shape()[size_t(axis)] * inner;
      if (!in_place(size_t(i), column)) copied += block;
      column += block;
    }
    if (copied == 0) return Status();
    return visit_by_element_size(dtype_, [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* dst = y->data<T>();
      // One copy per (input, outer index); large outputs hand whole copies to the threads.
      const size_t copies = n * size_t(outer);
      const size_t pieces = std::min(
          parallel_pieces(double(copied * outer) * double(sizeof(T)), double(1 << 18)), copies);
      const size_t per_piece = (copies + pieces - 1) / pieces;
      parallel_for(pieces, [&](size_t piece) {
        const size_t c1 = std::min(copies, (piece + 1) * per_piece);
        size_t i = piece * per_piece / size_t(outer);
        int64_t column = 0;  // where input i's block starts within an output block
        for (size_t k = 0; k < i; ++k) column += ctx.input(k)->shape()[size_t(axis)] * inner;
        for (size_t c = piece * per_piece; c < c1; ++c) {
          for (; c / size_t(outer) > i; ++i) column += ctx.input(i)->shape()[size_t(axis)] * inner;
          const int64_t o = int64_t(c % size_t(outer));
          const int64_t block = ctx.input(i)->shape()[size_t(axis)] * inner;
          if (in_place(i, column)) continue;
          copy_run(ctx.input(i)->data<T>() + o * block, dst + o * out_block + column, block);
        }
      });
      return Status();
    });
  }

  std::optional<int64_t> in_place_concat_axis() const override { return axis_; }

 private:
  DataType dtype_;
  int64_t axis_;
};

class SplitKernel final : public Kernel {
 public:
  // `sizes` from the attribute (empty: from input 1, or equal parts); `num_outputs` > 0
  // selects opset 18's ceil-sized chunks.
  SplitKernel(DataType dtype, int64_t axis, std::vector<int64_t> sizes, int64_t num_outputs)
      : dtype_(dtype), axis_(axis), sizes_(std::move(sizes)), num_outputs_(num_outputs) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    const int64_t rank = int64_t(x.rank());
    int64_t axis = axis_;
    if (!normalize_axis(axis, rank))
      return invalid_argument("axis ", axis_, " is out of range for rank ", rank);
    const int64_t dim = x.shape()[size_t(axis)];
    const int64_t n_out = int64_t(ctx.num_outputs());
    SmallVec<int64_t> sizes = sizes_;  // per run: inline, no heap traffic
    if (const Tensor* s = ctx.input(1))
      NXRT_RETURN_IF_ERROR(read_int_list(*s, sizes, "split input"));
    if (!sizes.empty()) {
      if (int64_t(sizes.size()) != n_out)
        return invalid_argument("split has ", sizes.size(), " entries but the node has ", n_out,
                                " outputs");
      int64_t sum = 0;
      for (int64_t v : sizes) {
        if (v < 0) return invalid_argument("split has a negative size ", v);
        // Checked before adding: hostile sizes must not overflow the sum.
        if (v > dim - sum)
          return invalid_argument("split sizes add up to more than axis ", axis, "'s size ", dim);
        sum += v;
      }
      if (sum != dim)
        return invalid_argument("split sizes add up to ", sum, " but axis ", axis, " has size ",
                                dim);
    } else if (num_outputs_ > 0) {
      // Every chunk has ceil(dim / n) elements except a smaller last one.
      const int64_t chunk = (dim + num_outputs_ - 1) / num_outputs_;
      int64_t left = dim;
      for (int64_t i = 0; i < n_out; ++i) {
        sizes.push_back(std::min(chunk, left));
        left -= sizes.back();
      }
    } else {
      if (n_out == 0 || dim % n_out != 0)
        return invalid_argument("axis ", axis, " of size ", dim, " cannot be split into ", n_out,
                                " equal parts");
      sizes.assign(size_t(n_out), dim / n_out);
    }
    const int64_t outer = x.shape().product(0, size_t(axis));
    const int64_t inner = x.shape().product(size_t(axis) + 1, size_t(rank));
    const int64_t in_block = dim * inner;
    return visit_by_element_size(dtype_, [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      const T* src = x.data<T>();
      int64_t column = 0;
      for (int64_t i = 0; i < n_out; ++i) {
        Shape shape = x.shape();
        shape[size_t(axis)] = sizes[size_t(i)];
        NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(size_t(i), shape));
        const int64_t block = sizes[size_t(i)] * inner;
        T* dst = y->data<T>();
        if (block > 0)
          for (int64_t o = 0; o < outer; ++o)
            copy_run(src + o * in_block + column, dst + o * block, block);
        column += block;
      }
      return Status();
    });
  }

 private:
  DataType dtype_;
  int64_t axis_;
  std::vector<int64_t> sizes_;
  int64_t num_outputs_;
};

}  // namespace

Expected<KernelPtr> create_concat(KernelInit& init) {
  AttrReader attrs(init.node);
  // Concat-1 defaulted the axis to 1; from opset 4 it is required.
  const int64_t axis = init.opset < 4 ? attrs.get_int("axis", 1) : attrs.require_int("axis");
  NXRT_RETURN_IF_ERROR(attrs.status());
  if (init.num_inputs() == 0)
    return init.error(StatusCode::kInvalidGraph, "needs at least one input");
  const DataType t = init.input_type(0);
  for (size_t i = 1; i < init.num_inputs(); ++i)
    if (init.input_type(i) != t)
      return init.error(StatusCode::kInvalidGraph, "input ", i, " has type ",
                        tensor_type_name(init.input_type(i)), ", expected ", tensor_type_name(t));
  if (!movable_type(t)) return init.unsupported_type(0);
  init.set_all_outputs(t);
  return make_kernel<ConcatKernel>(t, axis);
}

Expected<KernelPtr> create_split(KernelInit& init) {
  AttrReader attrs(init.node);
  const int64_t axis = attrs.get_int("axis", 0);
  std::vector<int64_t> sizes;
  if (init.opset < 13) sizes = attrs.get_ints("split");
  const int64_t num_outputs = init.opset >= 18 ? attrs.get_int("num_outputs", 0) : 0;
  NXRT_RETURN_IF_ERROR(attrs.status());
  const DataType t = init.input_type(0);
  if (!movable_type(t)) return init.unsupported_type(0);
  if (init.opset >= 18 && attrs.has("num_outputs")) {
    if (init.has_input(1))
      return init.error(StatusCode::kInvalidGraph, "has both a split input and num_outputs");
    if (num_outputs < 1 || size_t(num_outputs) != init.node.outputs.size())
      return init.error(StatusCode::kInvalidGraph, "num_outputs is ", num_outputs,
                        " but the node has ", init.node.outputs.size(), " outputs");
  }
  if (init.has_input(1) && !is_integer_type(init.input_type(1))) return init.unsupported_type(1);
  init.set_all_outputs(t);
  return make_kernel<SplitKernel>(t, axis, std::move(sizes), num_outputs);
}

}  // namespace nxrt::cpu
