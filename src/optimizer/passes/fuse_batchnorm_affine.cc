// BatchNormalization (inference, constant float32 parameters) that no Conv absorbed, e.g.
// after a Concat in DenseNet's pre-activation blocks, followed by Mul and/or Add by
// per-channel or scalar constants and an activation: one nxrt ChannelAffine node,
//   y = activation(x * a[c] + b[c]),  a = scale / sqrt(var + eps) * (Mul constants),
//   b = (bias - mean * scale / sqrt(var + eps)) * (Mul constants) + (Add constants),
// computed in double. Exports write BN -> Mul -> Add -> Relu as four passes over the
// tensor; the fused node makes one.
#include <cmath>
#include <unordered_map>

#include "optimizer/passes/activation.h"
#include "optimizer/passes/batchnorm.h"
#include "optimizer/passes/passes.h"

namespace nxrt::optimizer {
namespace {

// The rank of `value` where the graph fixes it without shape inference: declared
// shapes, constants, and the outputs of ops whose rank follows from their inputs'
// (convolutions and pools from their weights or windows, elementwise ops, Concat).
// -1 when unknown.
class RankOracle {
 public:
  RankOracle(const ir::Graph& graph, const GraphView& view) : graph_(graph), view_(view) {
    for (const auto* infos : {&graph.inputs, &graph.value_info, &graph.outputs})
      for (const ir::ValueInfo& vi : *infos)
        if (vi.type.kind == ir::TypeInfo::Kind::kTensor && vi.type.has_shape)
          declared_[vi.name] = int64_t(vi.type.dims.size());
  }

  int64_t rank(const std::string& value, int depth = 0) {
    if (const Tensor* t = view_.constant(value)) return int64_t(t->rank());
    if (auto it = declared_.find(value); it != declared_.end()) return it->second;
    if (auto it = memo_.find(value); it != memo_.end()) return it->second;
    const int p = view_.producer(value);
    // Deep chains stay unknown rather than recursing without bound.
    const int64_t r = p < 0 || depth > 64 ? -1 : from_producer(graph_.nodes[size_t(p)], depth);
    memo_[value] = r;
    return r;
  }

 private:
  int64_t from_producer(const ir::Node& node, int depth) {
    if (node.outputs.size() != 1 || node.inputs.empty()) return -1;
    const bool fused_conv =
        node.op_type == "FusedConv" && (node.domain == "nxrt" || node.domain == "com.microsoft");
    if ((is_onnx_op(node, {"Conv", "ConvTranspose"}) || fused_conv) && node.inputs.size() > 1) {
      const Tensor* w = view_.constant(node.inputs[1]);
      return w ? int64_t(w->rank()) : -1;
    }
    if (is_onnx_op(node, {"MaxPool", "AveragePool", "LpPool"})) {
      const ir::Attribute* k = node.find_attribute("kernel_shape");
      return k ? int64_t(k->ints.size()) + 2 : -1;
    }
    if (is_onnx_op(node, {"BatchNormalization", "Relu", "LeakyRelu", "Clip", "Sigmoid", "Tanh",
                          "GlobalAveragePool", "GlobalMaxPool", "Concat"}) ||
        (node.domain == "nxrt" && node.op_type == "ChannelAffine"))
      return rank(node.inputs[0], depth + 1);
    if (is_onnx_op(node, {"Add", "Mul", "Sub", "Div"}) && node.inputs.size() == 2) {
      const int64_t a = rank(node.inputs[0], depth + 1), b = rank(node.inputs[1], depth + 1);
      return a < 0 || b < 0 ? -1 : std::max(a, b);
    }
    return -1;
  }

  const ir::Graph& graph_;
  const GraphView& view_;
  std::unordered_map<std::string, int64_t> declared_, memo_;
};

// A constant float32 tensor of `count` values, as a BN parameter (rank 1), or null.
const Tensor* parameter(const GraphView& view, const std::string& name, int64_t count) {
  const Tensor* t = name.empty() ? nullptr : view.constant(name);
  if (!t || t->dtype() != DataType::kFloat || t->rank() != 1 || t->shape()[0] != count)
    return nullptr;
  return t;
}

// The other operand of binary `op` (which reads `value`) when it is a float32 constant
// that broadcasts against a rank-`rank` tensor of `channels` channels per channel or as
// one value, without changing its shape; null otherwise.
const Tensor* channel_operand(const ir::Node& op, const std::string& value, int64_t rank,
                              int64_t channels, const GraphView& view) {
  if (op.inputs.size() != 2 || op.outputs.size() != 1) return nullptr;
  if ((op.inputs[0] == value) == (op.inputs[1] == value)) return nullptr;
  const Tensor* c = view.constant(op.inputs[0] == value ? op.inputs[1] : op.inputs[0]);
  if (!c || c->dtype() != DataType::kFloat || rank < 2 || int64_t(c->rank()) > rank) return nullptr;
  if (c->numel() == 1) return c;
  // Aligned from the right, the constant's channel dimension is the tensor's axis 1.
  const int64_t channel_axis = int64_t(c->rank()) - (rank - 1);
  if (channel_axis < 0 || c->numel() != channels) return nullptr;
  return c->shape()[size_t(channel_axis)] == channels ? c : nullptr;
}

}  // namespace

Status fuse_batchnorm_affine(ir::Graph& graph, PassContext& ctx) {
  GraphView view(graph, ctx);
  GraphEditor edit(graph, view);
  RankOracle ranks(graph, view);
  const int64_t opset = ctx.opset("");
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    ir::Node& bn = graph.nodes[n];
    if (edit.removed(n) || !is_inference_batchnorm(bn, view)) continue;
    const Tensor* scale = view.constant(bn.inputs[1]);
    if (!scale || scale->rank() != 1) continue;
    const int64_t C = scale->shape()[0];
    const Tensor* bias = parameter(view, bn.inputs[2], C);
    const Tensor* mean = parameter(view, bn.inputs[3], C);
    const Tensor* var = parameter(view, bn.inputs[4], C);
    if (!parameter(view, bn.inputs[1], C) || !bias || !mean || !var) continue;
    const ir::Attribute* eps_attr = bn.find_attribute("epsilon");
    const double eps = eps_attr ? double(eps_attr->f) : 1e-5;
    std::vector<double> a(static_cast<size_t>(C)), b(static_cast<size_t>(C));
    for (int64_t c = 0; c < C; ++c) {
      a[size_t(c)] =
          double(scale->data<float>()[c]) / std::sqrt(double(var->data<float>()[c]) + eps);
      b[size_t(c)] = double(bias->data<float>()[c]) - double(mean->data<float>()[c]) * a[size_t(c)];
    }
    // Absorb the Mul/Add chain, then one activation.
    std::string out = bn.outputs[0];
    std::vector<size_t> absorbed;
    const int64_t rank = ranks.rank(bn.inputs[0]);
    std::optional<Activation> activation;
    for (;;) {
      const int next = view.sole_consumer(out);
      if (next < 0 || edit.removed(size_t(next))) break;
      const ir::Node& op = graph.nodes[size_t(next)];
      const bool mul = is_onnx_op(op, "Mul"), add = is_onnx_op(op, "Add");
      if (mul || add) {
        const Tensor* k = channel_operand(op, out, rank, C, view);
        if (!k) break;
        for (int64_t c = 0; c < C; ++c) {
          const double v = double(k->data<float>()[k->numel() == 1 ? 0 : c]);
          if (mul) {
            a[size_t(c)] *= v;
            b[size_t(c)] *= v;
          } else {
            b[size_t(c)] += v;
          }
        }
      } else if (!op.inputs.empty() && op.inputs[0] == out &&
                 (activation = as_activation(op, view, opset))) {
        // The chain ends with its activation.
      } else {
        break;
      }
      absorbed.push_back(size_t(next));
      out = op.outputs[0];
      if (activation) break;
    }
    if (absorbed.empty()) continue;  // a lone BatchNormalization stays as it is
    if (!ctx.import_domain("nxrt", 1)) return Status();
    auto a_tensor = Tensor::allocate_uninitialized(DataType::kFloat, Shape{C}, ctx.limits);
    auto b_tensor = Tensor::allocate_uninitialized(DataType::kFloat, Shape{C}, ctx.limits);
    if (!a_tensor || !b_tensor) continue;
    for (int64_t c = 0; c < C; ++c) {
      a_tensor->data<float>()[c] = float(a[size_t(c)]);
      b_tensor->data<float>()[c] = float(b[size_t(c)]);
    }
    const std::string a_name = edit.fresh_name(bn.inputs[1] + "_affine_scale");
    const std::string b_name = edit.fresh_name(bn.inputs[2] + "_affine_shift");
    edit.add_initializer(a_name, std::move(a_tensor).value());
    edit.add_initializer(b_name, std::move(b_tensor).value());
    bn.domain = "nxrt";
    bn.op_type = "ChannelAffine";
    bn.inputs = {bn.inputs[0], a_name, b_name};
    bn.outputs = {out};
    bn.attributes.clear();
    if (activation) add_activation_attributes(bn, *activation);
    for (size_t r : absorbed) edit.remove(r);
  }
  edit.apply();
  return Status();
}

}  // namespace nxrt::optimizer
