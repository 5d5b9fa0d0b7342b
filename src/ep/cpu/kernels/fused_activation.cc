#include "ep/cpu/kernels/fused_activation.h"

#include <string>
#include <vector>

namespace nxrt::cpu {

std::optional<ActivationKind> activation_kind(const std::string& name) {
  struct Known {
    const char* name;
    ActivationKind kind;
  };
  // QuickGelu is x * sigmoid(alpha x), vmath's Swish.
  static constexpr Known kKnown[] = {
      {"Relu", {vmath::Unary::kRelu, 0}},
      {"Sigmoid", {vmath::Unary::kSigmoid, 0}},
      {"Tanh", {vmath::Unary::kTanh, 0}},
      {"LeakyRelu", {vmath::Unary::kLeakyRelu, 1}},
      {"QuickGelu", {vmath::Unary::kSwish, 1}},
      {"HardSwish", {vmath::Unary::kHardSwish, 0}},
      {"HardSigmoid", {vmath::Unary::kHardSigmoid, 2}},
      {"Clip", {vmath::Unary::kClip, 2}},
  };
  for (const Known& k : kKnown)
    if (name == k.name) return k.kind;
  return std::nullopt;
}

Expected<std::optional<FusedActivation>> read_fused_activation(KernelInit& init, AttrReader& attrs,
                                                               const char* op) {
  const std::string name = attrs.get_string("activation");
  const std::vector<float> p = attrs.get_floats("activation_params");
  NXRT_RETURN_IF_ERROR(attrs.status());
  if (name.empty()) return std::optional<FusedActivation>();
  const std::optional<ActivationKind> kind = activation_kind(name);
  if (!kind)
    return init.error(StatusCode::kNotImplemented, "activation '", name, "' is not one ", op,
                      " supports (Relu, LeakyRelu, Sigmoid, Tanh, HardSigmoid, Clip, HardSwish, "
                      "QuickGelu)");
  if (p.size() != kind->params)
    return init.error(StatusCode::kInvalidGraph, "activation ", name, " takes ", kind->params,
                      " activation_params, got ", p.size());
  vmath::UnaryParams params;
  if (kind->params > 0) params.alpha = p[0];
  if (kind->params > 1) params.beta = p[1];
  return std::optional<FusedActivation>(FusedActivation{kind->fn, params});
}

}  // namespace nxrt::cpu
