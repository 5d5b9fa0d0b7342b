// Activations a fused node applies (activation.h).
#include "optimizer/passes/activation.h"

#include <limits>

namespace nxrt::optimizer {
namespace {

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

}  // namespace

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

void add_activation_attributes(ir::Node& node, const Activation& activation) {
  ir::Attribute name_attr;
  name_attr.name = "activation";
  name_attr.type = ir::Attribute::Type::kString;
  name_attr.s = activation.name;
  node.attributes.push_back(std::move(name_attr));
  if (!activation.params.empty()) {
    ir::Attribute params;
    params.name = "activation_params";
    params.type = ir::Attribute::Type::kFloats;
    params.floats = activation.params;
    node.attributes.push_back(std::move(params));
  }
}

}  // namespace nxrt::optimizer
