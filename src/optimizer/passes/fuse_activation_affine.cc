// A FusedConv with an activation, followed by Mul and/or Add by scalar constants (the
// learnable affine blocks of PP-LCNet after each activation): the map moves into nxrt's
// FusedConv as post_scale / post_shift, applied to each block after the activation.
#include "optimizer/graph_view.h"
#include "optimizer/passes/passes.h"

namespace nxrt::optimizer {
namespace {

// The other input of `node` as a constant float32 scalar, when it has one.
const Tensor* scalar_operand(const ir::Node& node, const std::string& value,
                             const GraphView& view) {
  if (node.inputs.size() != 2 || node.outputs.size() != 1) return nullptr;
  const std::string& other = node.inputs[0] == value ? node.inputs[1] : node.inputs[0];
  if (other == value || (node.inputs[0] != value && node.inputs[1] != value)) return nullptr;
  const Tensor* t = view.constant(other);
  return t && t->dtype() == DataType::kFloat && t->numel() == 1 ? t : nullptr;
}

float attr_or(const ir::Node& node, const char* name, float fallback) {
  const ir::Attribute* a = node.find_attribute(name);
  return a ? a->f : fallback;
}

void set_float(ir::Node& node, const char* name, float v) {
  for (ir::Attribute& a : node.attributes)
    if (a.name == name) {
      a.f = v;
      return;
    }
  node.attributes.push_back(ir::Attribute::of_float(name, v));
}

}  // namespace

Status fuse_activation_affine(ir::Graph& graph, PassContext& ctx) {
  GraphView view(graph, ctx);
  GraphEditor edit(graph, view);
  for (ir::Node& conv : graph.nodes) {
    const bool fused =
        conv.op_type == "FusedConv" && (conv.domain == "nxrt" || conv.domain == "com.microsoft");
    if (!fused || !conv.find_attribute("activation") || conv.outputs.size() != 1) continue;
    float scale = attr_or(conv, "post_scale", 1.0f), shift = attr_or(conv, "post_shift", 0.0f);
    bool changed = false;
    for (;;) {
      const int next = view.sole_consumer(conv.outputs[0]);
      if (next < 0 || edit.removed(size_t(next))) break;
      const ir::Node& op = graph.nodes[size_t(next)];
      const bool mul = is_onnx_op(op, "Mul"), add = is_onnx_op(op, "Add");
      const Tensor* c = (mul || add) ? scalar_operand(op, conv.outputs[0], view) : nullptr;
      if (!c) break;
      if (!changed && !ctx.import_domain("nxrt", 1)) return Status();
      const float v = c->data<float>()[0];
      if (mul) {
        scale *= v;
        shift *= v;
      } else {
        shift += v;
      }
      conv.outputs[0] = op.outputs[0];
      edit.remove(size_t(next));
      changed = true;
    }
    if (!changed) continue;
    conv.domain = "nxrt";
    set_float(conv, "post_scale", scale);
    set_float(conv, "post_shift", shift);
  }
  edit.apply();
  return Status();
}

}  // namespace nxrt::optimizer
