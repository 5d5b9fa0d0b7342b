// The CPU execution provider's kernel table (kernels.inc lists every entry once).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "ep/kernel.h"

namespace nxrt::cpu {

struct KernelEntry {
  const char* domain;  // "" for ai.onnx
  const char* op_type;
  int since_version;  // first opset this kernel implements
  int until_version;  // last opset it implements (inclusive)
  KernelFactory factory;
};

std::span<const KernelEntry> kernel_table();

// The entry for (domain, op_type) at `opset`, or nullptr.
const KernelEntry* find_kernel(std::string_view domain, std::string_view op_type, int64_t opset);
// True when some opset of (domain, op_type) has a kernel.
bool has_op(std::string_view domain, std::string_view op_type);

// What the ONNX schema of an op version demands of a node (op_arity.inc, generated from
// onnx.defs): at least min_inputs inputs and min_outputs outputs, and a non-empty name at
// every input position whose bit is set in required_inputs (formal inputs that are
// neither optional nor variadic).
struct OpArity {
  const char* domain;
  const char* op_type;
  int since_version;
  int min_inputs;
  int min_outputs;
  uint64_t required_inputs;
};
// The schema version in force at `opset`; nullptr for ops outside ai.onnx / ai.onnx.ml.
const OpArity* find_arity(std::string_view domain, std::string_view op_type, int64_t opset);

}  // namespace nxrt::cpu
