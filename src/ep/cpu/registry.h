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
  int until_version;  // last opset it implements (inclusive); kEveryLaterOpset: no end
  KernelFactory factory;
};

// kernels.inc's `until` for a kernel that implements every later opset too.
constexpr int kEveryLaterOpset = 99;

std::span<const KernelEntry> kernel_table();

// The entry for (domain, op_type) at `opset`, or nullptr.
const KernelEntry* find_kernel(std::string_view domain, std::string_view op_type, int64_t opset);
// True when some opset of (domain, op_type) has a kernel.
bool has_op(std::string_view domain, std::string_view op_type);

}  // namespace nxrt::cpu
