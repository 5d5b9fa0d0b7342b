// Conv followed by an elementwise activation becomes one FusedConv node, whose kernel
// applies the activation to each block of output while it is still in cache instead of
// in a second pass over the whole tensor. Activations onnxruntime's FusedConv knows
// (Relu, LeakyRelu, Sigmoid, Tanh, HardSigmoid, Clip) use its com.microsoft op; the
// others (HardSwish, QuickGelu / SiLU) the same op in nxrt's domain "nxrt".
#include <limits>
#include <optional>

#include "optimizer/graph_view.h"
#include "optimizer/passes/passes.h"

namespace nxrt::optimizer {
namespace {

struct Activation {
  std::string name;
  std::vector<float> params;
  bool onnxruntime_has_it = true;  // one of com.microsoft FusedConv's activations
};

float attr_float(const ir::Node& node, const char* name, float fallback) {
  const ir::Attribute* a = node.find_attribute(name);
  return a && a->type == ir::Attribute::Type::kFloat ? a->f : fallback;
}

// A constant float32 scalar input, or `fallback` when the input is absent; nullopt when
// it is present but not a constant float scalar.
std::optional<float> scalar_input(const ir::Node& node, size_t i, const GraphView& view,
                                  float fallback) {
  if (node.inputs.size() <= i || node.inputs[i].empty()) return fallback;
  const Tensor* t = view.constant(node.inputs[i]);
  if (!t || t->dtype() != DataType::kFloat || t->numel() != 1) return std::nullopt;
  return t->data<float>()[0];
}

// The FusedConv activation that computes `node` on its first input, if there is one.
std::optional<Activation> as_activation(const ir::Node& node, const GraphView& view,
                                        int64_t opset) {
  if (node.outputs.size() != 1) return std::nullopt;
  if (is_onnx_op(node, {"Relu", "Sigmoid", "Tanh"})) return Activation{node.op_type, {}};
  if (is_onnx_op(node, "LeakyRelu"))
    return Activation{"LeakyRelu", {attr_float(node, "alpha", 0.01f)}};
  if (is_onnx_op(node, "HardSwish") || (node.domain == "nxrt" && node.op_type == "HardSwish"))
    return Activation{"HardSwish", {}, false};
  if (node.domain == "com.microsoft" && node.op_type == "QuickGelu")
    return Activation{"QuickGelu", {attr_float(node, "alpha", 1.702f)}, false};
  if (is_onnx_op(node, "HardSigmoid"))
    return Activation{"HardSigmoid",
                      {attr_float(node, "alpha", 0.2f), attr_float(node, "beta", 0.5f)}};
  if (is_onnx_op(node, "Clip")) {
    constexpr float kLow = std::numeric_limits<float>::lowest();
    constexpr float kHigh = std::numeric_limits<float>::max();
    if (opset < 11)
      return Activation{"Clip", {attr_float(node, "min", kLow), attr_float(node, "max", kHigh)}};
    // Clip 11+ takes its bounds as inputs: only constant float32 ones fuse (a float16
    // model's bounds are float16, and its Conv too, which FusedConv leaves to Conv).
    const auto lo = scalar_input(node, 1, view, kLow), hi = scalar_input(node, 2, view, kHigh);
    if (!lo || !hi) return std::nullopt;
    return Activation{"Clip", {*lo, *hi}};
  }
  return std::nullopt;
}

}  // namespace

Status fuse_conv_activation(ir::Graph& graph, PassContext& ctx) {
  GraphView view(graph, ctx);
  GraphEditor edit(graph, view);
  const int64_t opset = ctx.opset("");
  bool imported_ms = false, imported_nxrt = false;
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
    bool& imported = domain == "com.microsoft" ? imported_ms : imported_nxrt;
    if (!imported && !ctx.import_domain(domain, 1)) continue;
    imported = true;
    conv.domain = domain;
    conv.op_type = "FusedConv";
    ir::Attribute name_attr;
    name_attr.name = "activation";
    name_attr.type = ir::Attribute::Type::kString;
    name_attr.s = fused->name;
    conv.attributes.push_back(std::move(name_attr));
    if (!fused->params.empty()) {
      ir::Attribute params;
      params.name = "activation_params";
      params.type = ir::Attribute::Type::kFloats;
      params.floats = fused->params;
      conv.attributes.push_back(std::move(params));
    }
    conv.outputs[0] = act.outputs[0];
    edit.remove(size_t(a));
  }
  edit.apply();
  return Status();
}

}  // namespace nxrt::optimizer
