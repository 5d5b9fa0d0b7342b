// Conv (or nxrt's FusedConv of a run-time BatchNormalization) whose only reader is an Add
// or a two-input Sum: the other addend becomes the FusedConv's sum input Z, added to each
// block of output while it is in cache (ResNet's residual connections), instead of in a
// second pass over both tensors. An activation after the Add then fuses too
// (fuse_conv_activation runs next). The shapes are not known here, so this uses nxrt's
// FusedConv, whose Z may broadcast against the conv's output (the kernel then falls back
// to a plain conv and a broadcasting add).
#include "optimizer/graph_view.h"
#include "optimizer/passes/passes.h"

namespace nxrt::optimizer {

Status fuse_conv_add(ir::Graph& graph, PassContext& ctx) {
  GraphView view(graph, ctx);
  GraphEditor edit(graph, view);
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    ir::Node& conv = graph.nodes[n];
    const bool nxrt_fused = conv.domain == "nxrt" && conv.op_type == "FusedConv" &&
                            !conv.find_attribute("activation") &&
                            (conv.inputs.size() < 4 || conv.inputs[3].empty());
    if ((!is_onnx_op(conv, "Conv") && !nxrt_fused) || conv.outputs.size() != 1 ||
        conv.inputs.size() < 2 || edit.removed(n))
      continue;
    const int a = view.sole_consumer(conv.outputs[0]);
    if (a < 0 || edit.removed(size_t(a))) continue;
    const ir::Node& add = graph.nodes[size_t(a)];
    if (!is_onnx_op(add, {"Add", "Sum"}) || add.inputs.size() != 2 || add.outputs.size() != 1)
      continue;
    const std::string& z = add.inputs[0] == conv.outputs[0] ? add.inputs[1] : add.inputs[0];
    if (z.empty() || z == conv.outputs[0]) continue;
    // The conv must not be the producer of Z through this same Add (a cycle): Z's
    // producer runs before the fused node, which the planner's order guarantees as long
    // as Z does not depend on the conv's output, whose only reader is the Add.
    if (!ctx.import_domain("nxrt", 1)) break;
    conv.domain = "nxrt";
    conv.op_type = "FusedConv";
    if (conv.inputs.size() < 4) conv.inputs.resize(4);
    conv.inputs[3] = z;
    conv.outputs[0] = add.outputs[0];
    edit.remove(size_t(a));
  }
  edit.apply();
  return Status();
}

}  // namespace nxrt::optimizer
