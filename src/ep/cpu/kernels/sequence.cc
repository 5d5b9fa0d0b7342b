// Sequence and optional ops. A sequence is an immutable vector of owned tensors; ops that
// "modify" one build a new vector (tensors inside are shared, not copied).
#include <algorithm>

#include "ep/cpu/kernels/common.h"

namespace nxrt::cpu {
namespace {

Expected<Tensor> owned_copy(const Tensor& t) { return t.clone(); }

Status position_of(const Tensor* pos, int64_t size, bool allow_end, int64_t& out) {
  std::vector<int64_t> v;
  NXRT_RETURN_IF_ERROR(read_int_list(*pos, v, "position"));
  if (v.size() != 1) return invalid_argument("position must hold one value");
  int64_t p = v[0];
  const int64_t limit = allow_end ? size : size - 1;
  if (p < -size || p > limit)
    return invalid_argument("position ", p, " is out of range for a sequence of length ", size);
  out = p < 0 ? p + size : p;
  return Status();
}

const TensorSequence& sequence_input(KernelContext& ctx, size_t i) {
  static const TensorSequence kEmpty;
  const TensorSequence* s = ctx.input_sequence(i);
  return s ? *s : kEmpty;
}

class SequenceEmptyKernel final : public Kernel {
 public:
  Status compute(KernelContext& ctx) const override { return ctx.set_output_sequence(0, {}); }
};

class SequenceConstructKernel final : public Kernel {
 public:
  Status compute(KernelContext& ctx) const override {
    TensorSequence seq;
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      NXRT_ASSIGN_OR_RETURN(Tensor t, owned_copy(*ctx.input(i)));
      seq.push_back(std::move(t));
    }
    return ctx.set_output_sequence(0, std::move(seq));
  }
};

class SequenceAtKernel final : public Kernel {
 public:
  Status compute(KernelContext& ctx) const override {
    const TensorSequence& seq = sequence_input(ctx, 0);
    int64_t p = 0;
    NXRT_RETURN_IF_ERROR(position_of(ctx.input(1), int64_t(seq.size()), false, p));
    const Tensor& t = seq[size_t(p)];
    NXRT_ASSIGN_OR_RETURN(Tensor * out, ctx.output(0, t.shape()));
    copy_elements(t.dtype(), t.raw(), out->raw(), t.numel());
    return Status();
  }
};

class SequenceInsertKernel final : public Kernel {
 public:
  Status compute(KernelContext& ctx) const override {
    TensorSequence seq = sequence_input(ctx, 0);
    int64_t p = int64_t(seq.size());
    if (ctx.input(2)) NXRT_RETURN_IF_ERROR(position_of(ctx.input(2), int64_t(seq.size()), true, p));
    NXRT_ASSIGN_OR_RETURN(Tensor t, owned_copy(*ctx.input(1)));
    seq.insert(seq.begin() + p, std::move(t));
    return ctx.set_output_sequence(0, std::move(seq));
  }
};

class SequenceEraseKernel final : public Kernel {
 public:
  Status compute(KernelContext& ctx) const override {
    TensorSequence seq = sequence_input(ctx, 0);
    if (seq.empty()) return invalid_argument("cannot erase from an empty sequence");
    int64_t p = int64_t(seq.size()) - 1;
    if (ctx.input(1))
      NXRT_RETURN_IF_ERROR(position_of(ctx.input(1), int64_t(seq.size()), false, p));
    seq.erase(seq.begin() + p);
    return ctx.set_output_sequence(0, std::move(seq));
  }
};

class SequenceLengthKernel final : public Kernel {
 public:
  Status compute(KernelContext& ctx) const override {
    NXRT_ASSIGN_OR_RETURN(Tensor * out, ctx.output(0, Shape{}));
    *out->data<int64_t>() = int64_t(sequence_input(ctx, 0).size());
    return Status();
  }
};

class SplitToSequenceKernel final : public Kernel {
 public:
  SplitToSequenceKernel(int64_t axis, bool keepdims) : axis_(axis), keepdims_(keepdims) {}
  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    int64_t axis = axis_;
    if (!normalize_axis(axis, int64_t(x.rank())))
      return invalid_argument("axis ", axis_, " is out of range for rank ", x.rank());
    const int64_t dim = x.shape()[size_t(axis)];
    std::vector<int64_t> lengths;
    bool squeeze = false;
    if (const Tensor* split = ctx.input(1)) {
      std::vector<int64_t> v;
      NXRT_RETURN_IF_ERROR(read_int_list(*split, v, "split"));
      if (split->rank() == 0) {
        if (v[0] <= 0) return invalid_argument("split must be positive");
        for (int64_t start = 0; start < dim; start += v[0])
          lengths.push_back(std::min(v[0], dim - start));
      } else {
        int64_t total = 0;
        for (int64_t l : v) {
          if (l < 0) return invalid_argument("split lengths must not be negative");
          total += l;
        }
        if (total != dim)
          return invalid_argument("split lengths sum to ", total, " but axis ", axis, " has ", dim);
        lengths = v;
      }
    } else {
      lengths.assign(size_t(dim), 1);
      squeeze = !keepdims_;
    }
    const int64_t outer = x.shape().product(0, size_t(axis));
    const int64_t inner = x.shape().product(size_t(axis) + 1, x.rank());
    TensorSequence seq;
    int64_t offset = 0;
    for (int64_t len : lengths) {
      Shape shape = x.shape();
      shape[size_t(axis)] = len;
      if (squeeze) {
        Shape s2;
        for (size_t d = 0; d < shape.size(); ++d)
          if (int64_t(d) != axis) s2.push_back(shape[d]);
        shape = s2;
      }
      NXRT_ASSIGN_OR_RETURN(Tensor part, Tensor::allocate(x.dtype(), shape));
      const size_t elem = x.dtype() == DataType::kString ? 0 : dtype_size(x.dtype());
      for (int64_t o = 0; o < outer; ++o) {
        const int64_t src = (o * dim + offset) * inner;
        const int64_t dst = o * len * inner;
        if (elem) {
          std::memcpy(static_cast<char*>(part.raw()) + dst * int64_t(elem),
                      static_cast<const char*>(x.raw()) + src * int64_t(elem),
                      size_t(len * inner) * elem);
        } else {
          copy_elements(x.dtype(), x.data<std::string>() + src, part.data<std::string>() + dst,
                        len * inner);
        }
      }
      offset += len;
      seq.push_back(std::move(part));
    }
    return ctx.set_output_sequence(0, std::move(seq));
  }

 private:
  int64_t axis_;
  bool keepdims_;
};

class ConcatFromSequenceKernel final : public Kernel {
 public:
  ConcatFromSequenceKernel(int64_t axis, bool new_axis) : axis_(axis), new_axis_(new_axis) {}
  Status compute(KernelContext& ctx) const override {
    const TensorSequence& seq = sequence_input(ctx, 0);
    if (seq.empty()) return invalid_argument("cannot concatenate an empty sequence");
    const Shape& first = seq[0].shape();
    const int64_t rank = int64_t(first.size()) + (new_axis_ ? 1 : 0);
    int64_t axis = axis_;
    if (!normalize_axis(axis, rank)) return invalid_argument("axis ", axis_, " out of range");
    Shape out_shape;
    int64_t total = 0;
    for (const Tensor& t : seq) {
      if (t.rank() != first.size() || t.dtype() != seq[0].dtype())
        return invalid_argument("sequence elements differ in rank or type");
      for (size_t d = 0; d < first.size(); ++d)
        if (d != size_t(axis) || new_axis_)
          if (t.shape()[d] != first[d]) return invalid_argument("sequence element shapes differ");
      total += new_axis_ ? 1 : t.shape()[size_t(axis)];
    }
    for (int64_t d = 0, src = 0; d < rank; ++d) {
      if (d == axis) {
        out_shape.push_back(total);
        if (!new_axis_) ++src;
      } else {
        out_shape.push_back(first[size_t(src++)]);
      }
    }
    NXRT_ASSIGN_OR_RETURN(Tensor * out, ctx.output(0, out_shape));
    const int64_t outer = out_shape.product(0, size_t(axis));
    const int64_t inner = out_shape.product(size_t(axis) + 1, out_shape.size());
    int64_t offset = 0;
    for (const Tensor& t : seq) {
      const int64_t len = new_axis_ ? 1 : t.shape()[size_t(axis)];
      for (int64_t o = 0; o < outer; ++o) {
        const int64_t n = len * inner;
        const int64_t dst = (o * total + offset) * inner;
        const int64_t src = o * n;
        if (t.dtype() == DataType::kString) {
          copy_elements(t.dtype(), t.data<std::string>() + src, out->data<std::string>() + dst, n);
        } else {
          const size_t e = dtype_size(t.dtype());
          std::memcpy(static_cast<char*>(out->raw()) + dst * int64_t(e),
                      static_cast<const char*>(t.raw()) + src * int64_t(e), size_t(n) * e);
        }
      }
      offset += len;
    }
    return Status();
  }

 private:
  int64_t axis_;
  bool new_axis_;
};

// Identity and Optional/OptionalGetElement on either kind: pass the value through.
class PassThroughKernel final : public Kernel {
 public:
  explicit PassThroughKernel(ValueKind kind) : kind_(kind) {}
  Status compute(KernelContext& ctx) const override {
    if (kind_ == ValueKind::kSequence) {
      const TensorSequence* s = ctx.input_sequence(0);
      if (!s) return invalid_argument("the optional input has no value");
      return ctx.set_output_sequence(0, *s);
    }
    const Tensor* t = ctx.input(0);
    if (!t) return Status();  // an empty optional stays empty
    NXRT_ASSIGN_OR_RETURN(Tensor * out, ctx.output(0, t->shape()));
    copy_elements(t->dtype(), t->raw(), out->raw(), t->numel());
    return Status();
  }

 private:
  ValueKind kind_;
};

class OptionalGetElementKernel final : public Kernel {
 public:
  explicit OptionalGetElementKernel(ValueKind kind) : pass_(kind), kind_(kind) {}
  Status compute(KernelContext& ctx) const override {
    if (kind_ == ValueKind::kTensor && !ctx.input(0))
      return invalid_argument("the optional input has no value");
    return pass_.compute(ctx);
  }

 private:
  PassThroughKernel pass_;
  ValueKind kind_;
};

class OptionalHasElementKernel final : public Kernel {
 public:
  Status compute(KernelContext& ctx) const override {
    NXRT_ASSIGN_OR_RETURN(Tensor * out, ctx.output(0, Shape{}));
    *out->data<bool>() = ctx.input(0) != nullptr || ctx.input_sequence(0) != nullptr;
    return Status();
  }
};

// SequenceMap: runs the body once per position; sequence inputs contribute their i-th
// element, tensor inputs themselves; each body output becomes one output sequence.
class SequenceMapKernel final : public Kernel {
 public:
  SequenceMapKernel(CompiledSubgraph body, std::vector<ValueKind> kinds)
      : body_(std::move(body)), kinds_(std::move(kinds)) {}
  Status compute(KernelContext& ctx) const override {
    const size_t length = sequence_input(ctx, 0).size();
    for (size_t k = 1; k < kinds_.size(); ++k)
      if (kinds_[k] == ValueKind::kSequence && sequence_input(ctx, k).size() != length)
        return invalid_argument("input sequences have different lengths (", length, " and ",
                                sequence_input(ctx, k).size(), ")");
    std::vector<TensorSequence> results(ctx.num_outputs());
    std::vector<const Tensor*> feeds(kinds_.size());
    std::vector<Tensor> outputs;
    for (size_t i = 0; i < length; ++i) {
      for (size_t k = 0; k < kinds_.size(); ++k)
        feeds[k] = kinds_[k] == ValueKind::kSequence ? &sequence_input(ctx, k)[i] : ctx.input(k);
      NXRT_RETURN_IF_ERROR(ctx.run_subgraph(body_, feeds, outputs));
      if (outputs.size() != results.size())
        return invalid_argument("body produced ", outputs.size(), " outputs, expected ",
                                results.size());
      for (size_t o = 0; o < outputs.size(); ++o) results[o].push_back(std::move(outputs[o]));
    }
    for (size_t o = 0; o < results.size(); ++o)
      NXRT_RETURN_IF_ERROR(ctx.set_output_sequence(o, std::move(results[o])));
    return Status();
  }

 private:
  CompiledSubgraph body_;
  std::vector<ValueKind> kinds_;
};

ValueKind kind_of(const KernelInit& init, size_t i) {
  return i < init.input_kinds.size() ? init.input_kinds[i] : ValueKind::kTensor;
}

Status require_sequence(const KernelInit& init, size_t i) {
  if (kind_of(init, i) != ValueKind::kSequence)
    return init.error(StatusCode::kInvalidGraph, "input ", i, " must be a sequence");
  return Status();
}

}  // namespace

Expected<KernelPtr> create_sequence_empty(KernelInit& init) {
  AttrReader attrs(init.node);
  const int64_t dtype = attrs.get_int("dtype", int64_t(DataType::kFloat));
  NXRT_RETURN_IF_ERROR(attrs.status());
  if (!dtype_is_known(int32_t(dtype)))
    return init.error(StatusCode::kInvalidGraph, "bad dtype ", dtype);
  init.output_types[0] = DataType(dtype);
  init.output_kinds[0] = ValueKind::kSequence;
  return make_kernel<SequenceEmptyKernel>();
}

Expected<KernelPtr> create_sequence_construct(KernelInit& init) {
  if (init.num_inputs() == 0)
    return init.error(StatusCode::kInvalidGraph, "needs at least one input");
  for (size_t i = 1; i < init.num_inputs(); ++i)
    if (init.input_type(i) != init.input_type(0))
      return init.error(StatusCode::kInvalidGraph, "inputs must share one element type");
  init.output_types[0] = init.input_type(0);
  init.output_kinds[0] = ValueKind::kSequence;
  return make_kernel<SequenceConstructKernel>();
}

Expected<KernelPtr> create_sequence_at(KernelInit& init) {
  NXRT_RETURN_IF_ERROR(require_sequence(init, 0));
  init.output_types[0] = init.input_type(0);
  return make_kernel<SequenceAtKernel>();
}

Expected<KernelPtr> create_sequence_insert(KernelInit& init) {
  NXRT_RETURN_IF_ERROR(require_sequence(init, 0));
  init.output_types[0] = init.input_type(0);
  init.output_kinds[0] = ValueKind::kSequence;
  return make_kernel<SequenceInsertKernel>();
}

Expected<KernelPtr> create_sequence_erase(KernelInit& init) {
  NXRT_RETURN_IF_ERROR(require_sequence(init, 0));
  init.output_types[0] = init.input_type(0);
  init.output_kinds[0] = ValueKind::kSequence;
  return make_kernel<SequenceEraseKernel>();
}

Expected<KernelPtr> create_sequence_length(KernelInit& init) {
  NXRT_RETURN_IF_ERROR(require_sequence(init, 0));
  init.output_types[0] = DataType::kInt64;
  return make_kernel<SequenceLengthKernel>();
}

Expected<KernelPtr> create_split_to_sequence(KernelInit& init) {
  AttrReader attrs(init.node);
  const int64_t axis = attrs.get_int("axis", 0);
  const bool keepdims = attrs.get_int("keepdims", 1) != 0;
  NXRT_RETURN_IF_ERROR(attrs.status());
  init.output_types[0] = init.input_type(0);
  init.output_kinds[0] = ValueKind::kSequence;
  return make_kernel<SplitToSequenceKernel>(axis, keepdims);
}

Expected<KernelPtr> create_concat_from_sequence(KernelInit& init) {
  NXRT_RETURN_IF_ERROR(require_sequence(init, 0));
  AttrReader attrs(init.node);
  const int64_t axis = attrs.require_int("axis");
  const bool new_axis = attrs.get_int("new_axis", 0) != 0;
  NXRT_RETURN_IF_ERROR(attrs.status());
  init.output_types[0] = init.input_type(0);
  return make_kernel<ConcatFromSequenceKernel>(axis, new_axis);
}

Expected<KernelPtr> create_optional(KernelInit& init) {
  if (init.has_input(0)) {
    init.output_types[0] = init.input_type(0);
    init.output_kinds[0] = kind_of(init, 0);
    return make_kernel<PassThroughKernel>(kind_of(init, 0));
  }
  // An empty optional: its element type comes from the 'type' attribute.
  const ir::Attribute* type = init.node.find_attribute("type");
  if (!type) return init.error(StatusCode::kInvalidGraph, "needs an input or a 'type' attribute");
  const ir::TypeInfo* t = &type->tp;
  ValueKind kind = ValueKind::kTensor;
  if (t->kind == ir::TypeInfo::Kind::kSequence && t->inner) {
    kind = ValueKind::kSequence;
    t = t->inner.get();
  }
  init.output_types[0] = t->elem_type == DataType::kUndefined ? DataType::kFloat : t->elem_type;
  init.output_kinds[0] = kind;
  return make_kernel<PassThroughKernel>(kind);
}

Expected<KernelPtr> create_optional_has_element(KernelInit& init) {
  init.output_types[0] = DataType::kBool;
  return make_kernel<OptionalHasElementKernel>();
}

Expected<KernelPtr> create_optional_get_element(KernelInit& init) {
  init.output_types[0] = init.input_type(0);
  init.output_kinds[0] = ValueKind::kTensor;
  if (kind_of(init, 0) == ValueKind::kSequence) init.output_kinds[0] = ValueKind::kSequence;
  return make_kernel<OptionalGetElementKernel>(kind_of(init, 0));
}

Expected<KernelPtr> create_sequence_map(KernelInit& init) {
  NXRT_RETURN_IF_ERROR(require_sequence(init, 0));
  AttrReader attrs(init.node);
  const ir::Graph* body = attrs.require_graph("body");
  NXRT_RETURN_IF_ERROR(attrs.status());
  if (body->inputs.size() != init.num_inputs() || body->outputs.size() != init.output_types.size())
    return init.error(StatusCode::kInvalidGraph, "body has ", body->inputs.size(), " inputs and ",
                      body->outputs.size(), " outputs; the node has ", init.num_inputs(), " and ",
                      init.output_types.size());
  std::vector<ValueKind> kinds;
  for (size_t i = 0; i < init.num_inputs(); ++i) kinds.push_back(kind_of(init, i));
  NXRT_ASSIGN_OR_RETURN(auto graph, init.subgraphs->compile(*body, init.implicit_inputs,
                                                            init.implicit_types, init.input_types));
  for (size_t o = 0; o < init.output_types.size(); ++o) {
    init.output_types[o] = graph.output_types[o];
    init.output_kinds[o] = ValueKind::kSequence;
  }
  return make_kernel<SequenceMapKernel>(std::move(graph), std::move(kinds));
}

// Identity of a sequence (the tensor case lives in reshape_ops.cc).
Expected<KernelPtr> create_sequence_identity(KernelInit& init) {
  init.output_types[0] = init.input_type(0);
  init.output_kinds[0] = ValueKind::kSequence;
  return make_kernel<PassThroughKernel>(ValueKind::kSequence);
}

}  // namespace nxrt::cpu
