// Control flow: If, Loop and Scan (opset 8 and 9+). Bodies are compiled once at prepare
// against this node's implicit inputs; each run executes them through the context, and
// their owning outputs are copied into this node's planned output buffers.
#include <algorithm>
#include <cstring>
#include <limits>

#include "ep/cpu/kernels/common.h"

namespace nxrt::cpu {
namespace {

using GraphPtr = CompiledSubgraph;

// Bytes per element for byte-addressed copies; strings are stored as std::string.
size_t elem_bytes(DataType t) {
  return t == DataType::kString ? sizeof(std::string) : dtype_size(t);
}

const char* byte_ptr(const Tensor& t) { return static_cast<const char*>(t.raw()); }
char* byte_ptr(Tensor& t) { return static_cast<char*>(t.raw()); }

// A borrowed view of `count` elements starting at element `offset` of `t`.
Tensor sub_view(const Tensor& t, Shape shape, int64_t offset) {
  const char* base = byte_ptr(t) + size_t(offset) * elem_bytes(t.dtype());
  return Tensor(t.dtype(), std::move(shape), const_cast<char*>(base));
}

Status copy_out(KernelContext& ctx, size_t index, const Tensor& value) {
  NXRT_ASSIGN_OR_RETURN(Tensor * out, ctx.output(index, value.shape()));
  if (out->dtype() != value.dtype())
    return make_error(StatusCode::kEngineError, "output ", index, " has type ",
                      tensor_type_name(value.dtype()), " but was planned as ",
                      tensor_type_name(out->dtype()));
  copy_elements(value.dtype(), value.raw(), out->raw(), value.numel());
  return Status();
}

Status check_copyable(DataType t, const char* what, size_t index) {
  if (elem_bytes(t) == 0)
    return not_implemented(what, " ", index, " has type ", tensor_type_name(t),
                           ", which control-flow ops cannot copy");
  return Status();
}

// Declared dims of a body output with unknown dims read as 0; used for the shape of an
// output that collected no iterations, so it keeps the rank the model promises.
Shape declared_shape(const ir::ValueInfo& info) {
  Shape s;
  if (info.type.kind != ir::TypeInfo::Kind::kTensor || !info.type.has_shape) return s;
  for (const ir::Dim& d : info.type.dims) s.push_back(d.value > 0 ? d.value : 0);
  return s;
}

// Output dtype of a compiled body (the element type for sequences), refusing maps.
Expected<DataType> body_output_type(const KernelInit& init, const CompiledSubgraph& g, size_t i,
                                    const char* body) {
  if (i >= g.output_types.size())
    return init.error(StatusCode::kInvalidGraph, body, " has too few outputs");
  const ir::ValueInfo& info = g.outputs[i];
  const DataType t = g.output_types[i];
  if (t == DataType::kUndefined || info.type.kind == ir::TypeInfo::Kind::kMap ||
      info.type.kind == ir::TypeInfo::Kind::kSparseTensor)
    return init.error(StatusCode::kNotImplemented, body, " output '", info.name,
                      "' is a map or sparse tensor, which nxrt does not support yet");
  return t;
}

// Writes a body result to node output i: sequences are shared, tensors copied, and an
// empty optional leaves the output empty.
Status value_out(KernelContext& ctx, size_t i, const Value& v) {
  if (v.is_sequence()) return ctx.set_output_sequence(i, *v.sequence);
  if (v.is_none()) return Status();
  return copy_out(ctx, i, v.tensor);
}

// A node input as a Value (tensor view, shared sequence, or none).
Value input_value(KernelContext& ctx, size_t i) {
  if (const TensorSequence* s = ctx.input_sequence(i))
    return Value(std::make_shared<const TensorSequence>(*s));
  if (const Tensor* t = ctx.input(i))
    return Value(Tensor(t->dtype(), t->shape(), const_cast<void*>(t->raw())));
  return Value();
}

// ---------------------------------------------------------------------------------- If

class IfKernel final : public Kernel {
 public:
  IfKernel(GraphPtr then_g, GraphPtr else_g) : then_(std::move(then_g)), else_(std::move(else_g)) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor& cond = *ctx.input(0);
    if (cond.numel() != 1)
      return invalid_argument("condition must have exactly one element, got shape ",
                              cond.shape().to_string());
    const bool take_then = cond.data<bool>()[0];
    const CompiledSubgraph& branch = take_then ? then_ : else_;
    if (branch.outputs.size() != ctx.num_outputs())
      return invalid_argument(take_then ? "then" : "else", "_branch produced ",
                              branch.outputs.size(), " outputs, the node has ", ctx.num_outputs());
    // The branch writes its results straight into this node's outputs.
    return ctx.run_subgraph_into_outputs(branch, {});
  }

 private:
  GraphPtr then_, else_;
};

// ---------------------------------------------------------------------------------- Loop

class LoopKernel final : public Kernel {
 public:
  LoopKernel(GraphPtr body, size_t num_carried, size_t num_scan)
      : body_(std::move(body)), n_(num_carried), k_(num_scan) {}

  Status compute(KernelContext& ctx) const override {
    int64_t max_trips = std::numeric_limits<int64_t>::max();
    if (const Tensor* m = ctx.input(0)) {
      if (m->numel() != 1)
        return invalid_argument("max trip count M must have one element, got shape ",
                                m->shape().to_string());
      max_trips = m->data<int64_t>()[0];
    }
    const Tensor* cond_in = ctx.input(1);
    bool cond = true;
    if (cond_in) {
      if (cond_in->numel() != 1)
        return invalid_argument("cond must have one element, got shape ",
                                cond_in->shape().to_string());
      cond = cond_in->data<bool>()[0];
    }

    int64_t iter_value = 0;
    bool cond_value = cond;
    std::vector<Value> feeds(2 + n_);
    feeds[0] = Value(Tensor(DataType::kInt64, Shape{}, &iter_value));
    feeds[1] = Value(Tensor(DataType::kBool, Shape{}, &cond_value));
    for (size_t i = 0; i < n_; ++i) feeds[2 + i] = input_value(ctx, 2 + i);
    std::vector<std::vector<Tensor>> scans(k_);
    std::vector<Value> outs;

    int64_t iter = 0;
    for (; iter < max_trips && cond; ++iter) {
      if (ctx.terminate_requested())
        return Status(StatusCode::kFail, "Exiting due to terminate flag being set to true.");
      iter_value = iter;
      cond_value = cond;
      NXRT_RETURN_IF_ERROR(ctx.run_subgraph_values(body_, feeds, outs));
      if (outs.size() != 1 + n_ + k_)
        return invalid_argument("body produced ", outs.size(), " outputs, expected ", 1 + n_ + k_);
      // The spec text calls the body's cond ignored without a cond input, but onnxruntime
      // and the ONNX reference implementation both stop on it; models rely on that.
      const Tensor& cond_out = outs[0].tensor;
      if (cond_out.numel() != 1 || cond_out.dtype() != DataType::kBool)
        return invalid_argument("body cond output must be one bool, got shape ",
                                cond_out.shape().to_string());
      cond = cond_out.data<bool>()[0];
      for (size_t i = 0; i < n_; ++i) feeds[2 + i] = std::move(outs[1 + i]);
      for (size_t k = 0; k < k_; ++k) {
        if (outs[1 + n_ + k].is_sequence() || outs[1 + n_ + k].is_none())
          return not_implemented("scan output ", k, " is not a tensor");
        Tensor& v = outs[1 + n_ + k].tensor;
        if (!scans[k].empty() && !(scans[k][0].shape() == v.shape()))
          return invalid_argument("scan output ", k, " has shape ", v.shape().to_string(),
                                  " in iteration ", iter, " but ", scans[k][0].shape().to_string(),
                                  " in iteration 0");
        scans[k].push_back(std::move(v));
      }
    }

    for (size_t i = 0; i < n_; ++i) NXRT_RETURN_IF_ERROR(value_out(ctx, i, feeds[2 + i]));
    for (size_t k = 0; k < k_; ++k) {
      const std::vector<Tensor>& parts = scans[k];
      Shape item = parts.empty() ? declared_shape(body_.outputs[1 + n_ + k]) : parts[0].shape();
      Shape shape;
      shape.push_back(int64_t(parts.size()));
      for (int64_t d : item) shape.push_back(d);
      if (checked_numel(shape.span()) < 0)
        return invalid_argument("scan output ", k, " would be too large");
      NXRT_ASSIGN_OR_RETURN(Tensor * out, ctx.output(n_ + k, shape));
      NXRT_RETURN_IF_ERROR(check_copyable(out->dtype(), "scan output", k));
      const size_t bytes = size_t(item.numel()) * elem_bytes(out->dtype());
      char* dst = byte_ptr(*out);
      for (const Tensor& p : parts) {
        copy_elements(out->dtype(), p.raw(), dst, p.numel());
        dst += bytes;
      }
    }
    return Status();
  }

 private:
  GraphPtr body_;
  size_t n_, k_;
};

// ---------------------------------------------------------------------------------- Scan

// What one scan (over one batch item for opset 8) produced.
struct ScanResult {
  std::vector<Tensor> states;              // final state values (views or owned)
  std::vector<std::vector<Tensor>> scans;  // per scan output, per iteration
};

// Slices scan inputs along their axes, runs the body `length` times and collects the
// results. `inputs` are the scan inputs whose `axes[j]` dim is at least `length`.
Status run_scan(KernelContext& ctx, const CompiledSubgraph& body, std::vector<Tensor> states,
                const std::vector<Tensor>& inputs, const std::vector<int64_t>& axes,
                const std::vector<int64_t>& dirs, int64_t length, size_t num_scan_out,
                ScanResult& result) {
  const size_t n = states.size(), m = inputs.size();
  // Per scan input: dims around the axis and a reusable buffer when slices are strided.
  std::vector<Shape> slice_shape(m);
  std::vector<int64_t> outer(m), inner(m), dim(m);
  std::vector<Tensor> buffers(m);
  for (size_t j = 0; j < m; ++j) {
    const Shape& s = inputs[j].shape();
    const size_t a = size_t(axes[j]);
    dim[j] = s[a];
    outer[j] = s.product(0, a);
    inner[j] = s.product(a + 1, s.size());
    for (size_t d = 0; d < s.size(); ++d)
      if (d != a) slice_shape[j].push_back(s[d]);
    if (outer[j] != 1) {
      NXRT_ASSIGN_OR_RETURN(buffers[j], Tensor::allocate(inputs[j].dtype(), slice_shape[j]));
    }
  }
  result.scans.assign(num_scan_out, {});
  std::vector<Tensor> slices(m);
  std::vector<const Tensor*> feeds(n + m);
  std::vector<Tensor> outs;
  for (int64_t t = 0; t < length; ++t) {
    if (ctx.terminate_requested())
      return Status(StatusCode::kFail, "Exiting due to terminate flag being set to true.");
    for (size_t j = 0; j < m; ++j) {
      const int64_t pos = dirs[j] ? length - 1 - t : t;
      if (outer[j] == 1) {
        slices[j] = sub_view(inputs[j], slice_shape[j], pos * inner[j]);
      } else {
        const size_t eb = elem_bytes(inputs[j].dtype());
        for (int64_t o = 0; o < outer[j]; ++o)
          copy_elements(inputs[j].dtype(),
                        byte_ptr(inputs[j]) + size_t((o * dim[j] + pos) * inner[j]) * eb,
                        byte_ptr(buffers[j]) + size_t(o * inner[j]) * eb, inner[j]);
        slices[j] = buffers[j];
      }
    }
    for (size_t i = 0; i < n; ++i) feeds[i] = &states[i];
    for (size_t j = 0; j < m; ++j) feeds[n + j] = &slices[j];
    NXRT_RETURN_IF_ERROR(ctx.run_subgraph(body, feeds, outs));
    if (outs.size() != n + num_scan_out)
      return invalid_argument("body produced ", outs.size(), " outputs, expected ",
                              n + num_scan_out);
    for (size_t i = 0; i < n; ++i) {
      if (!(outs[i].shape() == states[i].shape()))
        return invalid_argument("body changed the shape of state ", i, " from ",
                                states[i].shape().to_string(), " to ", outs[i].shape().to_string());
      states[i] = std::move(outs[i]);
    }
    for (size_t k = 0; k < num_scan_out; ++k) {
      Tensor& v = outs[n + k];
      if (!result.scans[k].empty() && !(result.scans[k][0].shape() == v.shape()))
        return invalid_argument("scan output ", k, " has shape ", v.shape().to_string(),
                                " in iteration ", t, " but ",
                                result.scans[k][0].shape().to_string(), " in iteration 0");
      result.scans[k].push_back(std::move(v));
    }
  }
  result.states = std::move(states);
  return Status();
}

struct ScanAttrs {
  size_t num_state = 0, num_scan_in = 0, num_scan_out = 0;
  std::vector<int64_t> in_axes, in_dirs, out_axes, out_dirs;
};

class Scan9Kernel final : public Kernel {
 public:
  Scan9Kernel(GraphPtr body, ScanAttrs a) : body_(std::move(body)), a_(std::move(a)) {}

  Status compute(KernelContext& ctx) const override {
    const size_t n = a_.num_state, m = a_.num_scan_in;
    std::vector<Tensor> states(n), inputs(m);
    for (size_t i = 0; i < n; ++i) states[i] = *ctx.input(i);
    std::vector<int64_t> axes(m);
    int64_t length = -1;
    for (size_t j = 0; j < m; ++j) {
      inputs[j] = *ctx.input(n + j);
      NXRT_RETURN_IF_ERROR(check_copyable(inputs[j].dtype(), "scan input", j));
      int64_t axis = a_.in_axes[j];
      const int64_t rank = int64_t(inputs[j].rank());
      if (!normalize_axis(axis, rank))
        return invalid_argument("scan_input_axes[", j, "] = ", a_.in_axes[j],
                                " is out of range for scan input of rank ", rank);
      axes[j] = axis;
      const int64_t len = inputs[j].shape()[size_t(axis)];
      if (length >= 0 && len != length)
        return invalid_argument("scan inputs have different sequence lengths ", length, " and ",
                                len);
      length = len;
    }
    if (length < 0) length = 0;
    ScanResult r;
    NXRT_RETURN_IF_ERROR(run_scan(ctx, body_, std::move(states), inputs, axes, a_.in_dirs, length,
                                  a_.num_scan_out, r));
    for (size_t i = 0; i < n; ++i) NXRT_RETURN_IF_ERROR(copy_out(ctx, i, r.states[i]));

    for (size_t k = 0; k < a_.num_scan_out; ++k) {
      const std::vector<Tensor>& parts = r.scans[k];
      const Shape item = parts.empty() ? declared_shape(body_.outputs[n + k]) : parts[0].shape();
      const int64_t rank = int64_t(item.size());
      int64_t axis = a_.out_axes[k];
      if (axis < -(rank + 1) || axis > rank)
        return invalid_argument("scan_output_axes[", k, "] = ", axis,
                                " is out of range for scan output of rank ", rank + 1);
      if (axis < 0) axis += rank + 1;
      Shape shape;
      for (int64_t d = 0; d < axis; ++d) shape.push_back(item[size_t(d)]);
      shape.push_back(length);
      for (int64_t d = axis; d < rank; ++d) shape.push_back(item[size_t(d)]);
      if (checked_numel(shape.span()) < 0)
        return invalid_argument("scan output ", k, " would be too large");
      NXRT_ASSIGN_OR_RETURN(Tensor * out, ctx.output(n + k, shape));
      NXRT_RETURN_IF_ERROR(check_copyable(out->dtype(), "scan output", k));
      const int64_t outer = item.product(0, size_t(axis));
      const int64_t inner = item.product(size_t(axis), item.size());
      const size_t eb = elem_bytes(out->dtype());
      for (int64_t t = 0; t < int64_t(parts.size()); ++t) {
        const int64_t pos = a_.out_dirs[k] ? length - 1 - t : t;
        for (int64_t o = 0; o < outer; ++o)
          copy_elements(out->dtype(), byte_ptr(parts[size_t(t)]) + size_t(o * inner) * eb,
                        byte_ptr(*out) + size_t((o * length + pos) * inner) * eb, inner);
      }
    }
    return Status();
  }

 private:
  GraphPtr body_;
  ScanAttrs a_;
};

// Opset 8: inputs are batched (axis 0), scanned along axis 1, with optional per-batch
// sequence lengths; scan outputs past a batch item's length are zero.
class Scan8Kernel final : public Kernel {
 public:
  Scan8Kernel(GraphPtr body, ScanAttrs a) : body_(std::move(body)), a_(std::move(a)) {}

  Status compute(KernelContext& ctx) const override {
    const size_t n = a_.num_state, m = a_.num_scan_in;
    if (m == 0) return invalid_argument("Scan needs at least one scan input");
    const Tensor& first = *ctx.input(1 + n);
    if (first.rank() < 2)
      return invalid_argument("scan input 0 must have rank >= 2 ([batch, sequence, ...]), got ",
                              first.shape().to_string());
    const int64_t batch = first.shape()[0], seq = first.shape()[1];
    for (size_t i = 0; i < n + m; ++i) {
      const Tensor& x = *ctx.input(1 + i);
      NXRT_RETURN_IF_ERROR(check_copyable(x.dtype(), "input", 1 + i));
      const size_t need = i < n ? 1 : 2;
      if (x.rank() < need || x.shape()[0] != batch || (i >= n && x.shape()[1] != seq))
        return invalid_argument("input ", 1 + i, " has shape ", x.shape().to_string(),
                                ", expected batch ", batch, (i >= n ? " and sequence " : ""),
                                (i >= n ? std::to_string(seq) : std::string()));
    }
    std::vector<int64_t> lens(size_t(batch), seq);
    if (const Tensor* sl = ctx.input(0)) {
      NXRT_RETURN_IF_ERROR(read_int_list(*sl, lens, "sequence_lens"));
      if (int64_t(lens.size()) != batch)
        return invalid_argument("sequence_lens has ", lens.size(), " values for batch ", batch);
      for (int64_t l : lens)
        if (l < 0 || l > seq)
          return invalid_argument("sequence_lens value ", l, " is outside [0, ", seq, "]");
    }

    std::vector<Tensor*> state_out(n), scan_out(a_.num_scan_out);
    std::vector<Shape> scan_item(a_.num_scan_out);
    const std::vector<int64_t> axes(m, 0);
    for (int64_t b = 0; b < batch; ++b) {
      std::vector<Tensor> states(n), inputs(m);
      for (size_t i = 0; i < n + m; ++i) {
        const Tensor& x = *ctx.input(1 + i);
        const Shape item(x.shape().span().subspan(1));
        (i < n ? states[i] : inputs[i - n]) = sub_view(x, item, b * item.numel());
      }
      ScanResult r;
      NXRT_RETURN_IF_ERROR(run_scan(ctx, body_, std::move(states), inputs, axes, a_.in_dirs,
                                    lens[size_t(b)], a_.num_scan_out, r));
      for (size_t i = 0; i < n; ++i) {
        const Tensor& s = r.states[i];
        if (b == 0) {
          Shape shape{batch};
          for (int64_t d : s.shape()) shape.push_back(d);
          NXRT_ASSIGN_OR_RETURN(state_out[i], ctx.output(i, shape));
        }
        NXRT_RETURN_IF_ERROR(place(*state_out[i], s, b, "state", i));
      }
      for (size_t k = 0; k < a_.num_scan_out; ++k) {
        const std::vector<Tensor>& parts = r.scans[k];
        if (!scan_out[k]) {
          if (parts.empty() && b + 1 < batch) continue;  // a later item tells the shape
          scan_item[k] = parts.empty() ? declared_shape(body_.outputs[n + k]) : parts[0].shape();
          Shape shape{batch, seq};
          for (int64_t d : scan_item[k]) shape.push_back(d);
          if (checked_numel(shape.span()) < 0)
            return invalid_argument("scan output ", k, " would be too large");
          NXRT_ASSIGN_OR_RETURN(scan_out[k], ctx.output(n + k, shape));
          Tensor& out = *scan_out[k];
          if (out.dtype() != DataType::kString) std::memset(out.raw(), 0, out.nbytes());
        }
        for (size_t t = 0; t < parts.size(); ++t) {
          if (!(parts[t].shape() == scan_item[k]))
            return invalid_argument("scan output ", k, " has shape ", parts[t].shape().to_string(),
                                    " for batch item ", b, " but ", scan_item[k].to_string(),
                                    " before");
          const int64_t per = scan_item[k].numel();
          copy_elements(parts[t].dtype(), parts[t].raw(),
                        byte_ptr(*scan_out[k]) +
                            size_t((b * seq + int64_t(t)) * per) * elem_bytes(parts[t].dtype()),
                        per);
        }
      }
    }
    if (batch == 0) {
      for (size_t i = 0; i < n; ++i) NXRT_RETURN_IF_ERROR(copy_out(ctx, i, *ctx.input(1 + i)));
      for (size_t k = 0; k < a_.num_scan_out; ++k) {
        Shape shape{0, seq};
        for (int64_t d : declared_shape(body_.outputs[n + k])) shape.push_back(d);
        NXRT_RETURN_IF_ERROR(ctx.output(n + k, shape).status());
      }
    }
    return Status();
  }

 private:
  static Status place(Tensor& out, const Tensor& value, int64_t b, const char* what, size_t i) {
    const Shape item(out.shape().span().subspan(1));
    if (!(item == value.shape()))
      return invalid_argument(what, " ", i, " has shape ", value.shape().to_string(),
                              " for batch item ", b, " but ", item.to_string(), " before");
    copy_elements(value.dtype(), value.raw(),
                  byte_ptr(out) + size_t(b * item.numel()) * elem_bytes(value.dtype()),
                  value.numel());
    return Status();
  }

  GraphPtr body_;
  ScanAttrs a_;
};

Status check_direction_list(AttrReader& attrs, const char* name, std::vector<int64_t>& v,
                            size_t count) {
  v = attrs.get_ints(name, std::vector<int64_t>(count, 0));
  if (v.size() != count) return invalid_graph(name, " has ", v.size(), " values, expected ", count);
  for (int64_t d : v)
    if (d != 0 && d != 1) return invalid_graph(name, " values must be 0 or 1, got ", d);
  return Status();
}

}  // namespace

Expected<KernelPtr> create_if(KernelInit& init) {
  AttrReader attrs(init.node);
  const ir::Graph* then_g = attrs.require_graph("then_branch");
  const ir::Graph* else_g = attrs.require_graph("else_branch");
  NXRT_RETURN_IF_ERROR(attrs.status());
  if (init.input_type(0) != DataType::kBool)
    return init.error(StatusCode::kInvalidGraph, "condition has type ",
                      tensor_type_name(init.input_type(0)), ", expected tensor(bool)");
  NXRT_ASSIGN_OR_RETURN(GraphPtr then_c, init.subgraphs->compile(*then_g, init.implicit_inputs,
                                                                 init.implicit_types, {}));
  NXRT_ASSIGN_OR_RETURN(GraphPtr else_c, init.subgraphs->compile(*else_g, init.implicit_inputs,
                                                                 init.implicit_types, {}));
  const size_t outs = init.output_types.size();
  if (then_c.outputs.size() != outs || else_c.outputs.size() != outs)
    return init.error(StatusCode::kInvalidGraph, "the node has ", outs,
                      " outputs but then_branch has ", then_c.outputs.size(), " and else_branch ",
                      else_c.outputs.size());
  for (size_t i = 0; i < outs; ++i) {
    NXRT_ASSIGN_OR_RETURN(DataType a, body_output_type(init, then_c, i, "then_branch"));
    NXRT_ASSIGN_OR_RETURN(DataType b, body_output_type(init, else_c, i, "else_branch"));
    if (a != b || then_c.output_kinds[i] != else_c.output_kinds[i])
      return init.error(StatusCode::kInvalidGraph, "output ", i, " is ", tensor_type_name(a),
                        " in then_branch but ", tensor_type_name(b), " in else_branch");
    init.output_types[i] = a;
    init.output_kinds[i] = then_c.output_kinds[i];
  }
  return make_kernel<IfKernel>(std::move(then_c), std::move(else_c));
}

Expected<KernelPtr> create_loop(KernelInit& init) {
  AttrReader attrs(init.node);
  const ir::Graph* body = attrs.require_graph("body");
  NXRT_RETURN_IF_ERROR(attrs.status());
  if (init.num_inputs() < 2)
    return init.error(StatusCode::kInvalidGraph, "needs the M and cond inputs (possibly empty)");
  if (init.has_input(0) && init.input_type(0) != DataType::kInt64)
    return init.error(StatusCode::kInvalidGraph, "M must be int64, got ",
                      tensor_type_name(init.input_type(0)));
  if (init.has_input(1) && init.input_type(1) != DataType::kBool)
    return init.error(StatusCode::kInvalidGraph, "cond must be bool, got ",
                      tensor_type_name(init.input_type(1)));
  const size_t n = init.num_inputs() - 2;
  for (size_t i = 0; i < n; ++i)
    if (!init.has_input(2 + i))
      return init.error(StatusCode::kInvalidGraph, "loop-carried value ", i, " ('",
                        init.node.inputs[2 + i], "') is missing");
  if (init.output_types.size() < n)
    return init.error(StatusCode::kInvalidGraph, "has ", n, " loop-carried inputs but only ",
                      init.output_types.size(), " outputs");
  const size_t k = init.output_types.size() - n;
  if (body->inputs.size() != 2 + n)
    return init.error(StatusCode::kInvalidGraph, "body has ", body->inputs.size(),
                      " inputs, expected ", 2 + n);
  std::vector<DataType> types{DataType::kInt64, DataType::kBool};
  for (size_t i = 0; i < n; ++i) types.push_back(init.input_type(2 + i));
  NXRT_ASSIGN_OR_RETURN(
      GraphPtr g, init.subgraphs->compile(*body, init.implicit_inputs, init.implicit_types, types));
  if (g.outputs.size() != 1 + n + k)
    return init.error(StatusCode::kInvalidGraph, "body has ", g.outputs.size(),
                      " outputs, expected ", 1 + n + k, " (cond, ", n, " carried, ", k, " scan)");
  for (size_t i = 0; i < n + k; ++i) {
    NXRT_ASSIGN_OR_RETURN(DataType t, body_output_type(init, g, 1 + i, "body"));
    if (i < n && t != init.input_type(2 + i))
      return init.error(StatusCode::kInvalidGraph, "loop-carried value ", i, " enters as ",
                        tensor_type_name(init.input_type(2 + i)), " but the body returns ",
                        tensor_type_name(t));
    init.output_types[i] = t;
    if (i < n)
      init.output_kinds[i] = g.output_kinds[1 + i];
    else if (g.output_kinds[1 + i] != ValueKind::kTensor)
      return init.error(StatusCode::kNotImplemented, "scan output ", i - n, " is a sequence");
  }
  return make_kernel<LoopKernel>(std::move(g), n, k);
}

Expected<KernelPtr> create_scan(KernelInit& init) {
  AttrReader attrs(init.node);
  const ir::Graph* body = attrs.require_graph("body");
  const int64_t num_scan = attrs.require_int("num_scan_inputs");
  NXRT_RETURN_IF_ERROR(attrs.status());
  const bool v8 = init.opset < 9;
  const size_t lead = v8 ? 1 : 0;  // opset 8 starts with sequence_lens
  if (num_scan < 1 || size_t(num_scan) + lead > init.num_inputs())
    return init.error(StatusCode::kInvalidGraph, "num_scan_inputs = ", num_scan,
                      " does not fit the node's ", init.num_inputs(), " inputs");
  ScanAttrs a;
  a.num_scan_in = size_t(num_scan);
  a.num_state = init.num_inputs() - lead - a.num_scan_in;
  if (init.output_types.size() < a.num_state)
    return init.error(StatusCode::kInvalidGraph, "has ", a.num_state, " state inputs but only ",
                      init.output_types.size(), " outputs");
  a.num_scan_out = init.output_types.size() - a.num_state;
  if (v8 && init.has_input(0) && init.input_type(0) != DataType::kInt64)
    return init.error(StatusCode::kInvalidGraph, "sequence_lens must be int64");
  Status s;
  if (v8) {
    s = check_direction_list(attrs, "directions", a.in_dirs, a.num_scan_in);
  } else {
    s = check_direction_list(attrs, "scan_input_directions", a.in_dirs, a.num_scan_in);
    if (s.ok())
      s = check_direction_list(attrs, "scan_output_directions", a.out_dirs, a.num_scan_out);
    a.in_axes = attrs.get_ints("scan_input_axes", std::vector<int64_t>(a.num_scan_in, 0));
    a.out_axes = attrs.get_ints("scan_output_axes", std::vector<int64_t>(a.num_scan_out, 0));
    if (s.ok() && (a.in_axes.size() != a.num_scan_in || a.out_axes.size() != a.num_scan_out))
      s = invalid_graph("scan_input_axes/scan_output_axes have ", a.in_axes.size(), "/",
                        a.out_axes.size(), " values, expected ", a.num_scan_in, "/",
                        a.num_scan_out);
  }
  NXRT_RETURN_IF_ERROR(attrs.status());
  if (!s.ok()) return init.error(StatusCode::kInvalidGraph, s.message());

  std::vector<DataType> types;
  for (size_t i = lead; i < init.num_inputs(); ++i) {
    if (!init.has_input(i))
      return init.error(StatusCode::kNotImplemented, "input ", i, " ('", init.node.inputs[i],
                        "') is missing or not a tensor");
    types.push_back(init.input_type(i));
  }
  if (body->inputs.size() != types.size())
    return init.error(StatusCode::kInvalidGraph, "body has ", body->inputs.size(),
                      " inputs, expected ", types.size());
  NXRT_ASSIGN_OR_RETURN(
      GraphPtr g, init.subgraphs->compile(*body, init.implicit_inputs, init.implicit_types, types));
  if (g.outputs.size() != init.output_types.size())
    return init.error(StatusCode::kInvalidGraph, "body has ", g.outputs.size(),
                      " outputs, expected ", init.output_types.size());
  for (size_t i = 0; i < init.output_types.size(); ++i) {
    NXRT_ASSIGN_OR_RETURN(DataType t, body_output_type(init, g, i, "body"));
    if (i < a.num_state && t != types[i])
      return init.error(StatusCode::kInvalidGraph, "state ", i, " enters as ",
                        tensor_type_name(types[i]), " but the body returns ", tensor_type_name(t));
    init.output_types[i] = t;
  }
  if (v8) return make_kernel<Scan8Kernel>(std::move(g), std::move(a));
  return make_kernel<Scan9Kernel>(std::move(g), std::move(a));
}

}  // namespace nxrt::cpu
