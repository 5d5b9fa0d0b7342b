#include "ep/cpu/cpu_provider.h"

#include "core/status.h"
#include "ep/cpu/registry.h"

namespace nxrt::cpu {
namespace {

class CpuProvider final : public ExecutionProvider {
 public:
  std::string_view name() const override { return "CPUExecutionProvider"; }

  // Input types are the kernels' own business: each factory refuses the ones it lacks
  // with an error naming the input and type, clearer than "no provider".
  bool supports(const ir::Node& node, int64_t opset, std::span<const DataType>) const override {
    return find_kernel(node.domain, node.op_type, opset) != nullptr;
  }

  Expected<KernelPtr> create_kernel(KernelInit& init) const override {
    const KernelEntry* entry = find_kernel(init.node.domain, init.node.op_type, init.opset);
    if (!entry) return Status(StatusCode::kNotImplemented, "no CPU kernel");
    return entry->factory(init);
  }

  std::string unsupported_reason(const ir::Node& node, int64_t opset) const override {
    const std::string domain = node.domain.empty() ? "ai.onnx" : node.domain;
    if (has_op(node.domain, node.op_type))
      return str_cat("nxrt implements op '", node.op_type, "' but not for opset ", opset,
                     " of domain '", domain, "'");
    return str_cat("op '", node.op_type, "' (domain '", domain, "', opset ", opset,
                   ") is not implemented by nxrt");
  }
};

}  // namespace

std::shared_ptr<const ExecutionProvider> cpu_provider() {
  static const auto provider = std::make_shared<const CpuProvider>();
  return provider;
}

}  // namespace nxrt::cpu
