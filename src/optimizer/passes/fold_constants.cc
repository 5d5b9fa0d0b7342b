// Nodes whose inputs are all constants run once now and become initializers, so the
// passes after this one see constants where the model computes them: weights made by
// ConstantOfShape or Unsqueeze'd per-channel scales can then be folded into convolutions
// (fuse_conv_batchnorm, fuse_conv_affine) instead of being applied on every run. The
// planner still folds what is left (the passes' own rewrites) at plan time. Like
// onnxruntime's, it leaves DequantizeLinear alone.
#include <cstring>
#include <unordered_map>
#include <unordered_set>

#include "optimizer/graph_view.h"
#include "optimizer/passes/passes.h"
#include "planner/plan.h"

namespace nxrt::optimizer {
namespace {

// Initializers among `candidates` that nothing reads any more (no node, subgraph or graph
// output; graph inputs stay, a caller may feed them): dropped, so a session does not hold
// the weights both before and after folding, nor does planning touch their pages.
void drop_unread_initializers(ir::Graph& graph, const std::unordered_set<std::string>& candidates) {
  std::unordered_set<std::string> read;
  for (const ir::Node& node : graph.nodes) {
    for (const std::string& in : node.inputs) read.insert(in);
    for (const ir::Graph* sub : ir::subgraphs_of(node))
      for (const std::string& name : ir::outer_names(*sub)) read.insert(name);
  }
  for (const ir::ValueInfo& v : graph.outputs) read.insert(v.name);
  for (const ir::ValueInfo& v : graph.inputs) read.insert(v.name);
  std::erase_if(graph.initializers, [&](const ir::Initializer& init) {
    return candidates.count(init.name) > 0 && read.count(init.name) == 0;
  });
}

// `t`, or an equal tensor folded earlier in the model (sharing its memory): exported If
// branches often slice and reorder the same weights, and each branch folds them.
Tensor shared_copy(Tensor t, std::vector<Tensor>* folded) {
  constexpr size_t kWorthSharing = 4096;  // bytes; smaller results are not looked up
  if (!folded || t.nbytes() < kWorthSharing || t.dtype() == DataType::kString) return t;
  for (const Tensor& earlier : *folded)
    if (earlier.dtype() == t.dtype() && earlier.shape() == t.shape() &&
        std::memcmp(earlier.raw(), t.raw(), t.nbytes()) == 0)
      return earlier;
  folded->push_back(t);
  return t;
}

}  // namespace

Status fold_constants(ir::Graph& graph, PassContext& ctx) {
  GraphView view(graph, ctx);
  GraphEditor edit(graph, view);
  // Outputs folded by this pass, readable by the nodes after them.
  std::unordered_map<std::string, Tensor> folded;
  auto constant = [&](const std::string& name) -> const Tensor* {
    auto it = folded.find(name);
    return it != folded.end() ? &it->second : view.constant(name);
  };
  std::vector<const Tensor*> inputs;
  std::unordered_set<std::string> fed_folding;  // initializers read by folded nodes
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const ir::Node& node = graph.nodes[n];
    // Constant nodes are constants already; outputs the caller receives stay produced.
    // DequantizeLinear of a constant weight stays for the QDQ fusions, which run the
    // 8-bit weight on integer kernels (the planner folds it if none takes it).
    if (is_onnx_op(node, "Constant") || node.op_type == "DequantizeLinear" || node.outputs.empty())
      continue;
    const int64_t opset = ctx.opset(node.domain);
    if (opset <= 0) continue;
    bool all_constant = true, keeps_output = false;
    inputs.clear();
    for (const std::string& in : node.inputs) {
      const Tensor* t = in.empty() ? nullptr : constant(in);
      all_constant &= in.empty() || t != nullptr;
      inputs.push_back(t);
    }
    for (const std::string& out : node.outputs)
      keeps_output |= out.empty() || view.is_graph_output(out);
    if (!all_constant || keeps_output) continue;
    // A node the kernels cannot fold now (unknown op, bad input) is left for the planner
    // and the run to report.
    auto outputs = fold_node(node, opset, inputs, ctx.limits);
    if (!outputs) continue;
    for (size_t o = 0; o < node.outputs.size(); ++o) {
      Tensor t = shared_copy(std::move((*outputs)[o]), ctx.folded);
      folded[node.outputs[o]] = t;
      edit.add_initializer(node.outputs[o], std::move(t));
    }
    for (const std::string& in : node.inputs)
      if (!in.empty()) fed_folding.insert(in);
    edit.remove(n);
  }
  if (edit.apply() == 0) return Status();
  drop_unread_initializers(graph, fed_folding);
  return Status();
}

}  // namespace nxrt::optimizer
