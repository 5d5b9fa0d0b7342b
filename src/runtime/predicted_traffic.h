// The memory plan of a static graph, made at session creation from shape inference.
//
// XNNPACK-style "reshape once": when every graph input declares fixed dims (or
// free_dimension_overrides fix them), shape inference on the optimized graph gives every
// intermediate its size, and the executor's pool traffic (which block each step acquires,
// and when each goes back) follows from the steps alone. The prediction replays
// execute_graph()'s bookkeeping: an output acquires a block unless it is a graph output, a
// string, or a reshape-like view of its input (Kernel::may_alias_input0()), and a block
// goes back when the last value on it is released. So a run state's first run already
// takes every intermediate from one arena. A wrong prediction costs only the plan: runs
// check each acquire and release against it (MemoryPlan) and use the pool from the first
// difference, and the plan is then learned from runs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "planner/plan.h"
#include "runtime/concat_placement.h"

namespace nxrt {

struct PredictedTraffic {
  std::vector<int64_t> signature;  // of the feeds it holds for (MemoryPlan::signature_of)
  std::vector<int32_t> events;     // k: acquire of block k; ~k: its release
  std::vector<size_t> bytes;       // by block
  // The Concat inputs the run writes in place, which the traffic above assumes: the
  // session puts them into the plan (ExecutableGraph::concat_placements).
  ConcatPlacements concats;
};

// The pool traffic of a run of `plan` (planned from `graph`, whose weights are still
// there) fed every required input at its declared shape and no optional one. nullopt,
// with the reason in `*why`, when an input's shape is not fixed or inference leaves an
// intermediate's size open.
std::optional<PredictedTraffic> predict_static_traffic(const ir::Graph& graph,
                                                       const std::map<std::string, int64_t>& opsets,
                                                       const ExecutableGraph& plan,
                                                       std::string* why);

}  // namespace nxrt
