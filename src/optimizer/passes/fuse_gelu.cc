// Gelu written out by exporters, x * 0.5 * (1 + Erf(x / sqrt(2))), as four or five nodes,
// becomes one Gelu node (ai.onnx Gelu from opset 20, else com.microsoft Gelu): one pass
// over the tensor with the vector erf instead of five. The forms matched, as onnxruntime's
// GeluFusion does:
//   Div(x, sqrt 2) or Mul(x, 1/sqrt 2) -> Erf -> Add(1) -> Mul(x) -> Mul(0.5)
//   Div(x, sqrt 2) or Mul(x, 1/sqrt 2) -> Erf -> Add(1) -> Mul(Mul(x, 0.5))
//   Div(x, sqrt 2) or Mul(x, 1/sqrt 2) -> Erf -> Add(1) -> Mul(0.5) -> Mul(x)
#include <cmath>

#include "optimizer/graph_view.h"
#include "optimizer/passes/passes.h"

namespace nxrt::optimizer {
namespace {

// True when `value` is a constant float32 scalar within 1e-4 (relative) of `want`.
bool is_scalar(const GraphView& view, const std::string& value, double want) {
  const Tensor* t = view.constant(value);
  if (!t || t->dtype() != DataType::kFloat || t->numel() != 1) return false;
  return std::fabs(double(t->data<float>()[0]) - want) <= 1e-4 * std::fabs(want);
}

// For a binary node reading `value` and a constant scalar `want` (either order): true.
bool binary_with_scalar(const ir::Node& node, const std::string& value, const GraphView& view,
                        double want) {
  if (node.inputs.size() != 2) return false;
  return (node.inputs[0] == value && is_scalar(view, node.inputs[1], want)) ||
         (node.inputs[1] == value && is_scalar(view, node.inputs[0], want));
}

}  // namespace

Status fuse_gelu(ir::Graph& graph, PassContext& ctx) {
  GraphView view(graph, ctx);
  GraphEditor edit(graph, view);
  const bool onnx_gelu = ctx.opset("") >= 20;
  for (size_t e = 0; e < graph.nodes.size(); ++e) {
    const ir::Node& erf = graph.nodes[e];
    if (!is_onnx_op(erf, "Erf") || erf.inputs.size() != 1 || erf.outputs.size() != 1) continue;
    // x / sqrt 2, read by nothing but the Erf.
    const int s = view.producer(erf.inputs[0]);
    if (s < 0 || edit.removed(size_t(s)) || view.sole_consumer(erf.inputs[0]) != int(e)) continue;
    const ir::Node& scale = graph.nodes[size_t(s)];
    std::string x;
    if (is_onnx_op(scale, "Div") && scale.inputs.size() == 2 &&
        is_scalar(view, scale.inputs[1], std::sqrt(2.0)))
      x = scale.inputs[0];
    else if (is_onnx_op(scale, "Mul") && scale.inputs.size() == 2) {
      if (is_scalar(view, scale.inputs[1], std::sqrt(0.5)))
        x = scale.inputs[0];
      else if (is_scalar(view, scale.inputs[0], std::sqrt(0.5)))
        x = scale.inputs[1];
    }
    if (x.empty()) continue;
    // 1 + erf
    const int a = view.sole_consumer(erf.outputs[0]);
    if (a < 0 || edit.removed(size_t(a))) continue;
    const ir::Node& add = graph.nodes[size_t(a)];
    if (!is_onnx_op(add, "Add") || add.outputs.size() != 1 ||
        !binary_with_scalar(add, erf.outputs[0], view, 1.0))
      continue;
    const int m = view.sole_consumer(add.outputs[0]);
    if (m < 0 || edit.removed(size_t(m))) continue;
    const ir::Node& mul = graph.nodes[size_t(m)];
    if (!is_onnx_op(mul, "Mul") || mul.outputs.size() != 1) continue;
    const std::string other = other_input(mul, add.outputs[0]);
    std::vector<size_t> gone = {size_t(s), e, size_t(a)};
    size_t last;  // the node whose output the Gelu takes over
    if (binary_with_scalar(mul, add.outputs[0], view, 0.5)) {
      // x * ((1 + erf) * 0.5)
      const int f = view.sole_consumer(mul.outputs[0]);
      if (f < 0 || edit.removed(size_t(f))) continue;
      const ir::Node& times_x = graph.nodes[size_t(f)];
      if (!is_onnx_op(times_x, "Mul") || other_input(times_x, mul.outputs[0]) != x) continue;
      gone.push_back(size_t(m));
      last = size_t(f);
    } else if (other == x) {
      // (x * (1 + erf)) * 0.5
      const int h = view.sole_consumer(mul.outputs[0]);
      if (h < 0 || edit.removed(size_t(h))) continue;
      const ir::Node& half = graph.nodes[size_t(h)];
      if (!is_onnx_op(half, "Mul") || !binary_with_scalar(half, mul.outputs[0], view, 0.5))
        continue;
      gone.push_back(size_t(m));
      last = size_t(h);
    } else {
      // (x * 0.5) * (1 + erf)
      const int h = view.producer(other);
      if (h < 0 || edit.removed(size_t(h)) || view.sole_consumer(other) != m) continue;
      const ir::Node& half = graph.nodes[size_t(h)];
      if (!is_onnx_op(half, "Mul") || !binary_with_scalar(half, x, view, 0.5)) continue;
      gone.push_back(size_t(h));
      last = size_t(m);
    }
    if (!onnx_gelu && !ctx.import_domain("com.microsoft", 1)) return Status();
    ir::Node& out = graph.nodes[last];
    out.op_type = "Gelu";
    out.domain = onnx_gelu ? "" : "com.microsoft";
    out.inputs = {x};
    out.attributes.clear();
    for (size_t n : gone) edit.remove(n);
  }
  edit.apply();
  return Status();
}

}  // namespace nxrt::optimizer
