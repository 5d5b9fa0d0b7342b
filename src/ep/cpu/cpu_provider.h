// The CPU execution provider: every kernel of kernels.inc, in host memory.
#pragma once

#include <memory>

#include "ep/provider.h"

namespace nxrt::cpu {

// The process's one CPU provider (stateless, shared by every session).
std::shared_ptr<const ExecutionProvider> cpu_provider();

}  // namespace nxrt::cpu
