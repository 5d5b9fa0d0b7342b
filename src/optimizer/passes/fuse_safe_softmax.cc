// PyTorch exports its attention's softmax as Where(IsNaN(p), 0, p) with p = Softmax(x)
// (a fully masked row, every score -inf, gives NaN, which it turns into zeros). The three
// nodes, two extra passes over the scores, become one nxrt SafeSoftmax, which zeroes the
// NaNs in the softmax's own last pass. Softmax must have opset 13 semantics
// (one axis, no 2-D coercion); the 0 must be a float32 +0.0 of at most one dim, so the
// Where's broadcast keeps the softmax's shape and the type is float.
#include <cstring>

#include "optimizer/graph_view.h"
#include "optimizer/passes/passes.h"

namespace nxrt::optimizer {
namespace {

bool is_positive_zero_scalar(const GraphView& view, const std::string& value) {
  const Tensor* t = view.constant(value);
  if (!t || t->dtype() != DataType::kFloat || t->numel() != 1 || t->rank() > 1) return false;
  uint32_t bits;
  std::memcpy(&bits, t->data<float>(), sizeof(bits));
  return bits == 0;
}

}  // namespace

Status fuse_safe_softmax(ir::Graph& graph, PassContext& ctx) {
  if (ctx.opset("") < 13) return Status();
  GraphView view(graph, ctx);
  GraphEditor edit(graph, view);
  for (size_t s = 0; s < graph.nodes.size(); ++s) {
    const ir::Node& softmax = graph.nodes[s];
    if (!is_onnx_op(softmax, "Softmax") || softmax.inputs.size() != 1 ||
        softmax.outputs.size() != 1)
      continue;
    const std::string& p = softmax.outputs[0];
    // p is read by exactly an IsNaN and the Where that IsNaN feeds.
    if (view.is_graph_output(p) || view.use_count(p) != 2) continue;
    const std::vector<size_t>& readers = view.consumers(p);
    if (readers.size() != 2) continue;
    int isnan = -1, where = -1;
    for (size_t r : readers) {
      const ir::Node& n = graph.nodes[r];
      if (is_onnx_op(n, "IsNaN") && n.outputs.size() == 1) isnan = int(r);
      if (is_onnx_op(n, "Where") && n.inputs.size() == 3) where = int(r);
    }
    if (isnan < 0 || where < 0 || edit.removed(size_t(isnan)) || edit.removed(size_t(where)))
      continue;
    const std::string& mask = graph.nodes[size_t(isnan)].outputs[0];
    if (view.sole_consumer(mask) != where) continue;
    ir::Node& select = graph.nodes[size_t(where)];
    if (select.inputs[0] != mask || select.inputs[2] != p ||
        !is_positive_zero_scalar(view, select.inputs[1]))
      continue;
    if (!ctx.import_domain("nxrt", 1)) return Status();
    select.op_type = "SafeSoftmax";
    select.domain = "nxrt";
    select.inputs = {softmax.inputs[0]};
    select.attributes.clear();
    const ir::Attribute* axis = softmax.find_attribute("axis");
    select.attributes.push_back(ir::Attribute::of_int("axis", axis ? axis->i : -1));
    edit.remove(s);
    edit.remove(size_t(isnan));
  }
  edit.apply();
  return Status();
}

}  // namespace nxrt::optimizer
