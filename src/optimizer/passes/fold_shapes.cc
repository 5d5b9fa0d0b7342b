// Shape and Size nodes whose result shape inference knows as numbers (every dimension they
// read is fixed in the model or by the session) become int64 initializers, so the shape
// arithmetic after them (Gather, Concat, Reshape targets) folds in fold_constants instead of
// running on every run. A symbolic dimension ("batch") keeps its node. Only shapes
// that the graph inputs fix count: the model's value_info declarations are not trusted.
#include "ops/shape_inference.h"
#include "optimizer/graph_view.h"
#include "optimizer/passes/passes.h"

namespace nxrt::optimizer {

Status fold_shapes(ir::Graph& graph, PassContext& ctx) {
  // Subgraph inputs (Loop-carried values, Scan slices) declare shapes nothing enforces.
  if (&graph != &ctx.model.graph) return Status();
  bool any = false;
  for (const ir::Node& node : graph.nodes) any |= is_onnx_op(node, {"Shape", "Size"});
  if (!any) return Status();
  ops::ShapeInferenceOptions options;
  options.inputs_override_initializers = ctx.inputs_override_initializers;
  options.use_value_info = false;
  const ops::ShapeInferenceResult shapes =
      ops::infer_shapes(graph, ctx.model.opset_imports, options);
  GraphView view(graph, ctx);
  GraphEditor edit(graph, view);
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const ir::Node& node = graph.nodes[n];
    if (!is_onnx_op(node, {"Shape", "Size"}) || node.outputs.size() != 1) continue;
    const std::string& out = node.outputs[0];
    if (out.empty() || view.is_graph_output(out)) continue;
    auto it = shapes.values.find(out);
    if (it == shapes.values.end()) continue;
    std::optional<std::vector<int64_t>> values = it->second.int_elements();
    if (!values) continue;
    const bool scalar = node.op_type == "Size";
    Shape shape = scalar ? Shape{} : Shape{int64_t(values->size())};
    auto storage = std::make_shared<std::vector<int64_t>>(*values);
    edit.add_initializer(out, Tensor(DataType::kInt64, shape, storage->data(), storage));
    edit.remove(n);
  }
  edit.apply();
  return Status();
}

}  // namespace nxrt::optimizer
