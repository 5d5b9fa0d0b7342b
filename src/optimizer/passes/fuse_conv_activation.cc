// Conv followed by an elementwise activation becomes one FusedConv node, whose kernel
// applies the activation to each block of output while it is still in cache instead of
// in a second pass over the whole tensor. Activations onnxruntime's FusedConv knows
// (Relu, LeakyRelu, Sigmoid, Tanh, HardSigmoid, Clip) use its com.microsoft op; the
// others (HardSwish, QuickGelu / SiLU) the same op in nxrt's domain "nxrt".
#include "optimizer/passes/activation.h"
#include "optimizer/passes/passes.h"

namespace nxrt::optimizer {

Status fuse_conv_activation(ir::Graph& graph, PassContext& ctx) {
  GraphView view(graph, ctx);
  GraphEditor edit(graph, view);
  const int64_t opset = ctx.opset("");
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    ir::Node& conv = graph.nodes[n];
    // A Conv, or nxrt's FusedConv of a run-time BatchNormalization (no activation yet).
    const bool nxrt_fused =
        conv.domain == "nxrt" && conv.op_type == "FusedConv" && !conv.find_attribute("activation");
    if ((!is_onnx_op(conv, "Conv") && !nxrt_fused) || conv.outputs.size() != 1 ||
        conv.inputs.size() < 2)
      continue;
    const int a = view.sole_consumer(conv.outputs[0]);
    if (a < 0 || edit.removed(size_t(a))) continue;
    const ir::Node& act = graph.nodes[size_t(a)];
    if (act.inputs.empty() || act.inputs[0] != conv.outputs[0]) continue;
    const std::optional<Activation> fused = as_activation(act, view, opset);
    if (!fused) continue;
    const std::string domain = fused->onnxruntime_has_it && !nxrt_fused ? "com.microsoft" : "nxrt";
    if (!ctx.import_domain(domain, 1)) continue;
    conv.domain = domain;
    conv.op_type = "FusedConv";
    add_activation_attributes(conv, *fused);
    conv.outputs[0] = act.outputs[0];
    edit.remove(size_t(a));
  }
  edit.apply();
  return Status();
}

}  // namespace nxrt::optimizer
