// Ops that change only the shape (data copied as is): Identity, Reshape, Flatten,
// Squeeze, Unsqueeze; plus Constant, Shape and Size.
#include <algorithm>

#include "ep/cpu/kernels/common.h"

namespace nxrt::cpu {
namespace {

// Reshape-like ops share the input's buffer when the executor allows it (see
// KernelContext::alias_input); input 0 is always the data.
Status copy_to_output(KernelContext& ctx, const Tensor& x, const Shape& shape) {
  if (&x == ctx.input(0)) return ctx.alias_input(0, 0, shape);
  NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, shape));
  copy_elements(x.dtype(), x.raw(), y->raw(), x.numel());
  return Status();
}

class IdentityKernel final : public Kernel {
 public:
  bool may_alias_input0() const override { return true; }
  Status compute(KernelContext& ctx) const override {
    return copy_to_output(ctx, *ctx.input(0), ctx.input(0)->shape());
  }
};

class ReshapeKernel final : public Kernel {
 public:
  bool may_alias_input0() const override { return true; }
  explicit ReshapeKernel(bool allow_zero) : allow_zero_(allow_zero) {}
  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    SmallVec<int64_t> target;
    NXRT_RETURN_IF_ERROR(read_int_list(*ctx.input(1), target, "shape input"));
    Shape out;
    out.resize(target.size());
    int infer = -1;
    int64_t known = 1;
    for (size_t i = 0; i < target.size(); ++i) {
      int64_t d = target[i];
      if (d == 0 && !allow_zero_) {
        if (i >= x.rank())
          return invalid_argument("shape dim ", i, " is 0 (copy) but the input has rank ",
                                  x.rank());
        d = x.shape()[i];
      }
      if (d == -1) {
        if (infer >= 0)
          return invalid_argument("shape ", Shape(std::span<const int64_t>(target)).to_string(),
                                  " has more than one -1");
        infer = int(i);
        out[i] = 1;
        continue;
      }
      if (d < 0)
        return invalid_argument("shape ", Shape(std::span<const int64_t>(target)).to_string(),
                                " has a negative dim");
      out[i] = d;
      if (checked_numel(out.span().subspan(i, 1)) < 0) return invalid_argument("bad dim");
      known = checked_numel(std::span<const int64_t>(&d, 1)) < 0 ? -1 : known * d;
    }
    const int64_t total = x.numel();
    if (checked_numel(out.span()) < 0)
      return invalid_argument("shape ", Shape(std::span<const int64_t>(target)).to_string(),
                              " is too large");
    if (infer >= 0) {
      if (known == 0 || total % known != 0)
        return invalid_argument("cannot reshape ", x.shape().to_string(), " to ",
                                Shape(std::span<const int64_t>(target)).to_string());
      out[size_t(infer)] = total / known;
    }
    if (out.numel() != total)
      return invalid_argument("cannot reshape input of shape ", x.shape().to_string(), " (", total,
                              " elements) to ", out.to_string());
    return copy_to_output(ctx, x, out);
  }

 private:
  bool allow_zero_;
};

class FlattenKernel final : public Kernel {
 public:
  bool may_alias_input0() const override { return true; }
  explicit FlattenKernel(int64_t axis) : axis_(axis) {}
  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    int64_t axis = axis_;
    const int64_t rank = int64_t(x.rank());
    if (axis < 0) axis += rank;
    if (axis < 0 || axis > rank)
      return invalid_argument("axis ", axis_, " is out of range for rank ", rank);
    const Shape& s = x.shape();
    return copy_to_output(ctx, x,
                          Shape{s.product(0, size_t(axis)), s.product(size_t(axis), s.size())});
  }

 private:
  int64_t axis_;
};

// Squeeze (remove=true) and Unsqueeze; axes from the attribute (old opsets) or input 1.
class AxesKernel final : public Kernel {
 public:
  bool may_alias_input0() const override { return true; }
  AxesKernel(bool squeeze, std::vector<int64_t> axes, bool has_axes)
      : squeeze_(squeeze), axes_(std::move(axes)), has_axes_(has_axes) {}
  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    SmallVec<int64_t> axes = axes_;
    bool has_axes = has_axes_;
    if (const Tensor* a = ctx.input(1)) {
      NXRT_RETURN_IF_ERROR(read_int_list(*a, axes, "axes input"));
      has_axes = true;
    }
    const Shape& in = x.shape();
    Shape out;
    if (squeeze_) {
      const int64_t rank = int64_t(in.size());
      SmallVec<bool> drop(in.size(), false);
      if (!has_axes) {
        for (size_t d = 0; d < in.size(); ++d) drop[d] = in[d] == 1;
      }
      for (int64_t a : axes) {
        if (!normalize_axis(a, rank))
          return invalid_argument("axis ", a, " out of range for rank ", rank);
        if (in[size_t(a)] != 1)
          return invalid_argument("cannot squeeze axis ", a, " of size ", in[size_t(a)]);
        drop[size_t(a)] = true;
      }
      for (size_t d = 0; d < in.size(); ++d)
        if (!drop[d]) out.push_back(in[d]);
    } else {
      const int64_t rank = int64_t(in.size() + axes.size());
      SmallVec<bool> insert(size_t(rank), false);
      for (int64_t a : axes) {
        if (!normalize_axis(a, rank))
          return invalid_argument("axis ", a, " out of range for rank ", rank);
        if (insert[size_t(a)]) return invalid_argument("axis ", a, " appears twice");
        insert[size_t(a)] = true;
      }
      size_t next = 0;
      for (int64_t d = 0; d < rank; ++d) out.push_back(insert[size_t(d)] ? 1 : in[next++]);
    }
    return copy_to_output(ctx, x, out);
  }

 private:
  bool squeeze_;
  std::vector<int64_t> axes_;
  bool has_axes_;
};

class ConstantKernel final : public Kernel {
 public:
  explicit ConstantKernel(Tensor value) : value_(std::move(value)) {}
  Status compute(KernelContext& ctx) const override {
    return copy_to_output(ctx, value_, value_.shape());
  }

 private:
  Tensor value_;
};

class ShapeKernel final : public Kernel {
 public:
  ShapeKernel(int64_t start, int64_t end, bool has_end)
      : start_(start), end_(end), has_end_(has_end) {}
  Status compute(KernelContext& ctx) const override {
    const Shape& s = ctx.input(0)->shape();
    const int64_t rank = int64_t(s.size());
    auto clamp = [&](int64_t v) { return std::clamp(v < 0 ? v + rank : v, int64_t(0), rank); };
    const int64_t start = clamp(start_);
    const int64_t end = has_end_ ? clamp(end_) : rank;
    const int64_t n = std::max<int64_t>(0, end - start);
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, Shape{n}));
    for (int64_t i = 0; i < n; ++i) y->data<int64_t>()[i] = s[size_t(start + i)];
    return Status();
  }

 private:
  int64_t start_, end_;
  bool has_end_;
};

class SizeKernel final : public Kernel {
 public:
  Status compute(KernelContext& ctx) const override {
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, Shape{}));
    *y->data<int64_t>() = ctx.input(0)->numel();
    return Status();
  }
};

Expected<Tensor> constant_value(KernelInit& init) {
  AttrReader attrs(init.node);
  const ir::Node& node = init.node;
  if (const Tensor* t = attrs.get_tensor("value")) return *t;
  auto make = [](DataType dtype, Shape shape, auto fill) -> Expected<Tensor> {
    NXRT_ASSIGN_OR_RETURN(Tensor t, Tensor::allocate(dtype, shape));
    fill(t);
    return t;
  };
  if (const ir::Attribute* a = node.find_attribute("value_float"))
    return make(DataType::kFloat, Shape{}, [&](Tensor& t) { *t.data<float>() = a->f; });
  if (const ir::Attribute* a = node.find_attribute("value_int"))
    return make(DataType::kInt64, Shape{}, [&](Tensor& t) { *t.data<int64_t>() = a->i; });
  if (const ir::Attribute* a = node.find_attribute("value_string"))
    return make(DataType::kString, Shape{}, [&](Tensor& t) { *t.data<std::string>() = a->s; });
  if (const ir::Attribute* a = node.find_attribute("value_floats"))
    return make(DataType::kFloat, Shape{int64_t(a->floats.size())},
                [&](Tensor& t) { std::copy(a->floats.begin(), a->floats.end(), t.data<float>()); });
  if (const ir::Attribute* a = node.find_attribute("value_ints"))
    return make(DataType::kInt64, Shape{int64_t(a->ints.size())},
                [&](Tensor& t) { std::copy(a->ints.begin(), a->ints.end(), t.data<int64_t>()); });
  if (const ir::Attribute* a = node.find_attribute("value_strings"))
    return make(DataType::kString, Shape{int64_t(a->strings.size())}, [&](Tensor& t) {
      std::copy(a->strings.begin(), a->strings.end(), t.data<std::string>());
    });
  if (node.find_attribute("sparse_value"))
    return init.error(StatusCode::kNotImplemented, "sparse_value is not supported yet");
  return init.error(StatusCode::kInvalidGraph, "has no value attribute");
}

}  // namespace

Expected<KernelPtr> create_sequence_identity(KernelInit& init);  // sequence.cc

Expected<KernelPtr> create_identity(KernelInit& init) {
  if (!init.input_kinds.empty() && init.input_kinds[0] == ValueKind::kSequence)
    return create_sequence_identity(init);
  if (init.input_type(0) == DataType::kUndefined) return init.unsupported_type(0);
  init.set_all_outputs(init.input_type(0));
  return make_kernel<IdentityKernel>();
}

Expected<KernelPtr> create_reshape(KernelInit& init) {
  AttrReader attrs(init.node);
  const bool allow_zero = attrs.get_int("allowzero", 0) != 0;
  NXRT_RETURN_IF_ERROR(attrs.status());
  if (init.opset < 5)
    return init.error(StatusCode::kNotImplemented, "Reshape-1 (shape attribute) is not supported");
  init.set_all_outputs(init.input_type(0));
  return make_kernel<ReshapeKernel>(allow_zero);
}

Expected<KernelPtr> create_flatten(KernelInit& init) {
  AttrReader attrs(init.node);
  const int64_t axis = attrs.get_int("axis", 1);
  NXRT_RETURN_IF_ERROR(attrs.status());
  init.set_all_outputs(init.input_type(0));
  return make_kernel<FlattenKernel>(axis);
}

Expected<KernelPtr> create_squeeze(KernelInit& init) {
  AttrReader attrs(init.node);
  const bool has = attrs.has("axes");
  auto axes = attrs.get_ints("axes");
  NXRT_RETURN_IF_ERROR(attrs.status());
  init.set_all_outputs(init.input_type(0));
  return make_kernel<AxesKernel>(true, axes, has);
}

Expected<KernelPtr> create_unsqueeze(KernelInit& init) {
  AttrReader attrs(init.node);
  const bool has = attrs.has("axes");
  auto axes = attrs.get_ints("axes");
  NXRT_RETURN_IF_ERROR(attrs.status());
  if (!has && !init.has_input(1)) return init.error(StatusCode::kInvalidGraph, "needs axes");
  init.set_all_outputs(init.input_type(0));
  return make_kernel<AxesKernel>(false, axes, has);
}

Expected<KernelPtr> create_constant(KernelInit& init) {
  NXRT_ASSIGN_OR_RETURN(Tensor value, constant_value(init));
  init.set_all_outputs(value.dtype());
  return make_kernel<ConstantKernel>(std::move(value));
}

Expected<KernelPtr> create_shape(KernelInit& init) {
  AttrReader attrs(init.node);
  const int64_t start = attrs.get_int("start", 0);
  const bool has_end = attrs.has("end");
  const int64_t end = attrs.get_int("end", 0);
  NXRT_RETURN_IF_ERROR(attrs.status());
  init.set_all_outputs(DataType::kInt64);
  return make_kernel<ShapeKernel>(start, end, has_end);
}

Expected<KernelPtr> create_size(KernelInit& init) {
  init.set_all_outputs(DataType::kInt64);
  return make_kernel<SizeKernel>();
}

}  // namespace nxrt::cpu
