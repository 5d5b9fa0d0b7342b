// Replaces calls to model-local functions (ModelProto.functions) with the function body,
// so the planner only ever sees ops that have kernels.
#pragma once

#include "core/status.h"
#include "ir/graph.h"

namespace nxrt::optimizer {

// Inlines every call in the main graph and its subgraphs, recursively (a function may
// call another); recursion deeper than a fixed limit is an error, and so is an expansion
// that creates more than `max_nodes` nodes (functions calling functions several times
// each grow exponentially).
Status inline_functions(ir::Model& model, int64_t max_nodes = int64_t(1) << 20);

}  // namespace nxrt::optimizer
