// HardSwish written out, x * Clip(x + 3, 0, 6) / 6 (exports from opsets before 14, where
// the op did not exist), becomes one HardSwish node: ai.onnx's from opset 14, else the
// same op in nxrt's domain. One pass instead of four, and an activation the conv fusion
// then takes into the convolution. Matched:
//   Add(x, 3) -> Clip(0, 6) -> Mul(x) -> Div(6) or Mul(1/6)
#include <cmath>
#include <limits>

#include "optimizer/graph_view.h"
#include "optimizer/passes/passes.h"

namespace nxrt::optimizer {
namespace {

bool is_scalar(const GraphView& view, const std::string& value, double want) {
  const Tensor* t = value.empty() ? nullptr : view.constant(value);
  if (!t || t->dtype() != DataType::kFloat || t->numel() != 1) return false;
  return std::fabs(double(t->data<float>()[0]) - want) <= 1e-6 * std::max(1.0, std::fabs(want));
}

// Clip to [0, 6], from attributes (opset < 11) or constant inputs.
bool clips_0_6(const ir::Node& clip, const GraphView& view, int64_t opset) {
  if (opset < 11) {
    const ir::Attribute* lo = clip.find_attribute("min");
    const ir::Attribute* hi = clip.find_attribute("max");
    return lo && hi && lo->f == 0.0f && hi->f == 6.0f;
  }
  return clip.inputs.size() == 3 && is_scalar(view, clip.inputs[1], 0.0) &&
         is_scalar(view, clip.inputs[2], 6.0);
}

}  // namespace

Status fuse_hard_swish(ir::Graph& graph, PassContext& ctx) {
  GraphView view(graph, ctx);
  GraphEditor edit(graph, view);
  const int64_t opset = ctx.opset("");
  const bool onnx_op = opset >= 14;
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const ir::Node& add = graph.nodes[n];
    if (!is_onnx_op(add, "Add") || add.inputs.size() != 2 || add.outputs.size() != 1) continue;
    std::string x;
    if (is_scalar(view, add.inputs[1], 3.0))
      x = add.inputs[0];
    else if (is_scalar(view, add.inputs[0], 3.0))
      x = add.inputs[1];
    if (x.empty() || edit.removed(n)) continue;
    const int c = view.sole_consumer(add.outputs[0]);
    if (c < 0 || edit.removed(size_t(c))) continue;
    const ir::Node& clip = graph.nodes[size_t(c)];
    if (!is_onnx_op(clip, "Clip") || clip.outputs.size() != 1 || clip.inputs[0] != add.outputs[0] ||
        !clips_0_6(clip, view, opset))
      continue;
    const int m = view.sole_consumer(clip.outputs[0]);
    if (m < 0 || edit.removed(size_t(m))) continue;
    const ir::Node& mul = graph.nodes[size_t(m)];
    if (!is_onnx_op(mul, "Mul") || mul.outputs.size() != 1 ||
        other_input(mul, clip.outputs[0]) != x)
      continue;
    const int d = view.sole_consumer(mul.outputs[0]);
    if (d < 0 || edit.removed(size_t(d))) continue;
    ir::Node& div = graph.nodes[size_t(d)];
    const bool by_six = is_onnx_op(div, "Div") && div.inputs.size() == 2 &&
                        div.inputs[0] == mul.outputs[0] && is_scalar(view, div.inputs[1], 6.0);
    const bool by_sixth =
        is_onnx_op(div, "Mul") && is_scalar(view, other_input(div, mul.outputs[0]), 1.0 / 6.0);
    if (!by_six && !by_sixth) continue;
    if (!onnx_op && !ctx.import_domain("nxrt", 1)) return Status();
    div.op_type = "HardSwish";
    div.domain = onnx_op ? "" : "nxrt";
    div.inputs = {x};
    div.attributes.clear();
    edit.remove(n);
    edit.remove(size_t(c));
    edit.remove(size_t(m));
  }
  edit.apply();
  return Status();
}

}  // namespace nxrt::optimizer
