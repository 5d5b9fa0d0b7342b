// The activation a fused node applies to its result, named by the attributes
// "activation" and "activation_params" (onnxruntime's FusedConv convention; nxrt's
// FusedConv and ChannelAffine read them the same way).
#pragma once

#include <optional>

#include "ep/cpu/vmath/vmath.h"
#include "ep/kernel.h"

namespace nxrt::cpu {

struct FusedActivation {
  vmath::Unary fn;
  vmath::UnaryParams params;
};

// nullopt when the node names no activation; an error naming `op` for an unknown one or
// a wrong number of parameters.
Expected<std::optional<FusedActivation>> read_fused_activation(KernelInit& init, AttrReader& attrs,
                                                               const char* op);

}  // namespace nxrt::cpu
