// Shape and Size nodes whose result shape inference knows as numbers (every dimension they
// read is fixed in the model or by the session) become int64 initializers, so the shape
// arithmetic after them (Gather, Concat, Reshape targets) folds in fold_constants instead of
// running on every run. A symbolic dimension ("batch") keeps its node, but the shape
// arithmetic on it (Gather, Slice, Concat, Squeeze, Unsqueeze of int64 shape values) folds
// where it only picks the known dims: the head size an attention export reads as
// Shape(q)[-1] under a dynamic batch and sequence. Only shapes that the graph inputs fix
// count: the model's value_info declarations are not trusted.
#include <algorithm>
#include <unordered_set>

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
  // Values known to be int64: Shape and Size outputs, int64 constants, and what the
  // shape-arithmetic ops make of them.
  std::unordered_set<std::string> int64_values;
  auto is_int64 = [&](const std::string& v) {
    if (int64_values.count(v)) return true;
    const Tensor* t = view.constant(v);
    return t && t->dtype() == DataType::kInt64;
  };
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const ir::Node& node = graph.nodes[n];
    if (node.outputs.size() != 1 || node.inputs.empty()) continue;
    const std::string& out = node.outputs[0];
    if (is_onnx_op(node, {"Shape", "Size"})) {
      int64_values.insert(out);
    } else if (is_onnx_op(node, {"Gather", "Slice", "Squeeze", "Unsqueeze"})) {
      if (!is_int64(node.inputs[0])) continue;
      int64_values.insert(out);
    } else if (is_onnx_op(node, "Concat")) {
      if (!std::all_of(node.inputs.begin(), node.inputs.end(), is_int64)) continue;
      int64_values.insert(out);
    } else {
      continue;
    }
    if (out.empty() || view.is_graph_output(out)) continue;
    auto it = shapes.values.find(out);
    if (it == shapes.values.end() || !it->second.shape.rank_known) continue;
    std::optional<std::vector<int64_t>> values = it->second.int_elements();
    if (!values) continue;
    if (it->second.shape.rank() > 1) continue;  // shape arithmetic is scalars and vectors
    Shape shape = it->second.shape.rank() == 0 ? Shape{} : Shape{int64_t(values->size())};
    auto storage = std::make_shared<std::vector<int64_t>>(*values);
    edit.add_initializer(out, Tensor(DataType::kInt64, shape, storage->data(), storage));
    edit.remove(n);
  }
  edit.apply();
  return Status();
}

}  // namespace nxrt::optimizer
