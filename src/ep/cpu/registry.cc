#include "ep/cpu/registry.h"

namespace nxrt::cpu {

// Declarations of every factory named in kernels.inc.
#define NXRT_KERNEL(domain, op, since, until, factory) Expected<KernelPtr> factory(KernelInit&);
#include "ep/cpu/kernels.inc"
#undef NXRT_KERNEL

namespace {
constexpr KernelEntry kTable[] = {
#define NXRT_KERNEL(domain, op, since, until, factory) {domain, #op, since, until, &factory},
#include "ep/cpu/kernels.inc"
#undef NXRT_KERNEL
};
}  // namespace

std::span<const KernelEntry> kernel_table() { return kTable; }

const KernelEntry* find_kernel(std::string_view domain, std::string_view op_type, int64_t opset) {
  for (const KernelEntry& e : kTable)
    if (op_type == e.op_type && domain == e.domain && opset >= e.since_version &&
        opset <= e.until_version)
      return &e;
  return nullptr;
}

bool has_op(std::string_view domain, std::string_view op_type) {
  for (const KernelEntry& e : kTable)
    if (op_type == e.op_type && domain == e.domain) return true;
  return false;
}

}  // namespace nxrt::cpu
