// MatMul by a constant 2-D float weight whose result only an Add of a constant bias reads
// (a linear layer as PyTorch exports it for inputs of more than two dims, where Gemm does
// not apply) becomes one nxrt MatMulBias: the bias goes into the output before the
// product adds onto it, instead of a second pass reading and writing the whole output.
// The bias must be float with one value or one per column of the weight, and at most one
// dim, so the Add's broadcast leaves the product's shape as it is.
#include "optimizer/graph_view.h"
#include "optimizer/passes/passes.h"

namespace nxrt::optimizer {

Status fuse_matmul_add(ir::Graph& graph, PassContext& ctx) {
  GraphView view(graph, ctx);
  GraphEditor edit(graph, view);
  for (size_t m = 0; m < graph.nodes.size(); ++m) {
    const ir::Node& matmul = graph.nodes[m];
    if (!is_onnx_op(matmul, "MatMul") || matmul.inputs.size() != 2 || matmul.outputs.size() != 1)
      continue;
    const Tensor* w = view.constant(matmul.inputs[1]);
    if (!w || w->dtype() != DataType::kFloat || w->rank() != 2) continue;
    const int a = view.sole_consumer(matmul.outputs[0]);
    if (a < 0 || edit.removed(size_t(a))) continue;
    ir::Node& add = graph.nodes[size_t(a)];
    if (!is_onnx_op(add, "Add") || add.outputs.size() != 1) continue;
    const std::string bias_name = other_input(add, matmul.outputs[0]);
    const Tensor* bias = bias_name.empty() ? nullptr : view.constant(bias_name);
    if (!bias || bias->dtype() != DataType::kFloat || bias->rank() > 1 ||
        (bias->numel() != 1 && bias->numel() != w->shape()[1]))
      continue;
    if (!ctx.import_domain("nxrt", 1)) return Status();
    add.op_type = "MatMulBias";
    add.domain = "nxrt";
    add.inputs = {matmul.inputs[0], matmul.inputs[1], bias_name};
    edit.remove(m);
  }
  edit.apply();
  return Status();
}

}  // namespace nxrt::optimizer
