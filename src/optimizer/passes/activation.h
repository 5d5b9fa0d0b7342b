// The elementwise activations a fused node (FusedConv, ChannelAffine) applies to its
// result: which nodes are one, and how the fused node names it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "optimizer/graph_view.h"

namespace nxrt::optimizer {

struct Activation {
  std::string name;
  std::vector<float> params;
  bool onnxruntime_has_it = true;  // one of com.microsoft FusedConv's activations
};

// The activation that computes `node` on its first input, if it is one (Relu, LeakyRelu,
// Sigmoid, Tanh, HardSigmoid, Clip with constant bounds, HardSwish, QuickGelu).
std::optional<Activation> as_activation(const ir::Node& node, const GraphView& view, int64_t opset);

// Sets the "activation" and, when it has parameters, "activation_params" attributes.
void add_activation_attributes(ir::Node& node, const Activation& activation);

}  // namespace nxrt::optimizer
