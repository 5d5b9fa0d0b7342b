// x * Sigmoid(x) (SiLU / Swish, written out by exporters as two nodes) becomes one
// com.microsoft QuickGelu with alpha 1: one pass over the tensor instead of two, and an
// activation a following fusion can fold into a convolution.
#include "optimizer/graph_view.h"
#include "optimizer/passes/passes.h"

namespace nxrt::optimizer {

Status fuse_quick_gelu(ir::Graph& graph, PassContext& ctx) {
  GraphView view(graph, ctx);
  GraphEditor edit(graph, view);
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const ir::Node& sigmoid = graph.nodes[n];
    if (!is_onnx_op(sigmoid, "Sigmoid") || sigmoid.inputs.size() != 1 ||
        sigmoid.outputs.size() != 1 || sigmoid.inputs[0].empty())
      continue;
    const int m = view.sole_consumer(sigmoid.outputs[0]);
    if (m < 0 || edit.removed(size_t(m))) continue;
    ir::Node& mul = graph.nodes[size_t(m)];
    if (!is_onnx_op(mul, "Mul") || mul.inputs.size() != 2 || mul.outputs.size() != 1) continue;
    const std::string& x = sigmoid.inputs[0];
    const bool x_times_s = mul.inputs[0] == x && mul.inputs[1] == sigmoid.outputs[0];
    const bool s_times_x = mul.inputs[1] == x && mul.inputs[0] == sigmoid.outputs[0];
    if (!x_times_s && !s_times_x) continue;
    if (!ctx.import_domain("com.microsoft", 1)) return Status();
    mul.domain = "com.microsoft";
    mul.op_type = "QuickGelu";
    mul.inputs = {x};
    mul.attributes = {ir::Attribute::of_float("alpha", 1.0f)};
    edit.remove(n);
  }
  edit.apply();
  return Status();
}

}  // namespace nxrt::optimizer
