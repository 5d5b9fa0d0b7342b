// The activation a fused node applies to its result, named by the attributes
// "activation" and "activation_params" (onnxruntime's FusedConv convention; nxrt's
// FusedConv and ChannelAffine read them the same way).
#pragma once

#include <optional>
#include <string>

#include "ep/cpu/vmath/vmath.h"
#include "ep/kernel.h"

namespace nxrt::cpu {

struct FusedActivation {
  vmath::Unary fn;
  vmath::UnaryParams params;
};

// The vmath function of an activation name and how many parameters it takes; nullopt for
// a name none of the fused ops knows.
struct ActivationKind {
  vmath::Unary fn;
  size_t params;
};
std::optional<ActivationKind> activation_kind(const std::string& name);

// nullopt when the node names no activation; an error naming `op` for an unknown one or
// a wrong number of parameters.
Expected<std::optional<FusedActivation>> read_fused_activation(KernelInit& init, AttrReader& attrs,
                                                               const char* op);

}  // namespace nxrt::cpu
