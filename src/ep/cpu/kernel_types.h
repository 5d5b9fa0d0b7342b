// Which element types each kernel of the table accepts, asked of the kernels themselves:
// docs/OPERATORS.md lists them, and nothing keeps a hand-written list in step with the
// factories' type checks.
#pragma once

#include <optional>
#include <vector>

#include "core/dtype.h"
#include "ep/cpu/registry.h"

namespace nxrt::cpu {

// The element types of the op's main type parameter that the kernel's factory accepts when
// a session is planned. The parameter is the one the first output shares with an input
// (T of Add, Relu, Where), else the first input's (Cast's T1); for ops without an ONNX
// schema (com.microsoft, nxrt), the first input's type with every input alike. Every
// candidate type (those the schema allows; else the usual tensor types) is tried on a node
// whose inputs of that parameter have the type, the other inputs the first type their
// parameter allows (int64 preferred), and the schema's required attributes neutral values.
// nullopt when no candidate gets through (the factory needs constant inputs, attribute
// values or input counts the probe cannot guess), and for ops that take no input or hold
// subgraphs.
std::optional<std::vector<DataType>> accepted_input_types(const KernelEntry& entry);

}  // namespace nxrt::cpu
