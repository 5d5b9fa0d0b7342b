// Identity nodes, and Dropout nodes that run as identity (no training_mode input, mask
// unread), cost a copy or an alias step each; their readers take the input instead.
#include "optimizer/graph_view.h"
#include "optimizer/passes/passes.h"

namespace nxrt::optimizer {
namespace {

bool passes_input_through(const ir::Node& node, const GraphView& view) {
  if (node.inputs.empty() || node.inputs[0].empty() || node.outputs.empty()) return false;
  if (is_onnx_op(node, "Identity")) return node.outputs.size() == 1;
  if (!is_onnx_op(node, "Dropout")) return false;
  // A training_mode input (opset 12+) could turn it on; a mask someone reads needs computing.
  if (node.inputs.size() > 2 && !node.inputs[2].empty()) return false;
  for (size_t o = 1; o < node.outputs.size(); ++o)
    if (!node.outputs[o].empty() && view.use_count(node.outputs[o]) > 0) return false;
  for (size_t o = 1; o < node.outputs.size(); ++o)
    if (view.is_graph_output(node.outputs[o])) return false;
  return true;
}

}  // namespace

Status eliminate_identity(ir::Graph& graph, PassContext& ctx) {
  GraphView view(graph, ctx);
  GraphEditor edit(graph, view);
  std::unordered_map<std::string, std::string> renames;
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const ir::Node& node = graph.nodes[n];
    if (!passes_input_through(node, view)) continue;
    // A graph output keeps its name: the node stays (a sequence Identity too, which
    // this pass cannot tell from a tensor one, is harmless to skip as an output).
    if (view.is_graph_output(node.outputs[0])) continue;
    std::string source = node.inputs[0];
    auto chained = renames.find(source);  // Identity of an Identity already removed
    if (chained != renames.end()) source = chained->second;
    renames[node.outputs[0]] = source;
    edit.remove(n);
  }
  if (renames.empty()) return Status();
  ir::rename_reads(graph, renames);
  edit.apply();
  return Status();
}

}  // namespace nxrt::optimizer
