// Execution providers: the backends that run a plan's nodes. The planner knows them only
// through this interface (it never names a backend): a session lists providers in order
// of preference, each node goes to the first that supports it, and where a value crosses
// from one device to another the planner puts a copy step between them.
//
// The CPU provider (ep/cpu/cpu_provider.h) takes every op nxrt has a CPU kernel for and is
// always last in a session's list. A device backend (CUDA, later) implements the same
// interface with its device name, its kernels and its copies to and from the host.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ep/kernel.h"
#include "ir/graph.h"

namespace nxrt {

// The device name of host memory.
inline constexpr std::string_view kHostDevice = "cpu";

// The data layout a provider's convolution kernels prefer (for layout passes).
enum class PreferredLayout { kNchw, kNhwc, kNchwBlocked };

class ExecutionProvider {
 public:
  virtual ~ExecutionProvider() = default;

  // onnxruntime's spelling: "CPUExecutionProvider". Shown in profiles and plans.
  virtual std::string_view name() const = 0;
  // Where the tensors its kernels read and write live. Values pass between providers of
  // one device as they are; between devices the planner inserts copy steps.
  virtual std::string_view device() const { return kHostDevice; }
  virtual PreferredLayout preferred_layout() const { return PreferredLayout::kNchw; }

  // True when it can run `node` at `opset` of its domain with these input types
  // (kUndefined for omitted inputs). Asked before create_kernel; a node no provider
  // supports fails planning.
  virtual bool supports(const ir::Node& node, int64_t opset,
                        std::span<const DataType> input_types) const = 0;
  // The prepared kernel for init.node (supports() said yes). Sets init's output types.
  virtual Expected<KernelPtr> create_kernel(KernelInit& init) const = 0;
  // A kernel copying its one input (a tensor) between host memory and this provider's
  // device: to the host when `to_host`, else from it. Only providers whose device is not
  // the host are asked.
  virtual Expected<KernelPtr> create_copy_kernel(bool to_host) const {
    (void)to_host;
    return Status(StatusCode::kNotImplemented, std::string(name()) + " has no copy kernel");
  }
  // Why it cannot run `node` (for the planner's error when no provider can), or "".
  virtual std::string unsupported_reason(const ir::Node& node, int64_t opset) const {
    (void)node;
    (void)opset;
    return "";
  }
};

using ProviderList = std::vector<std::shared_ptr<const ExecutionProvider>>;

}  // namespace nxrt
