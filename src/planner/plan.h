// ExecutableGraph: a graph after planning. Values are numbered slots; steps run in a
// topological order, each with its prepared kernel, input/output slots and the slots
// whose last use it is (released to the buffer pool right after it runs).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "core/limits.h"
#include "ep/kernel.h"
#include "ep/provider.h"
#include "ir/graph.h"

namespace nxrt {

class RunStateCache;  // runtime/executor.h

struct ValueSlot {
  std::string name;
  DataType dtype = DataType::kUndefined;  // element type for sequences
  ValueKind kind = ValueKind::kTensor;
  bool is_graph_output = false;
  // The device holding it: the host for inputs, initializers and outer values, else the
  // device of the provider whose step writes it.
  std::string device{kHostDevice};
};

struct Step {
  const ir::Node* node = nullptr;
  KernelPtr kernel;
  const ExecutionProvider* provider = nullptr;  // the one that made the kernel
  std::vector<int> inputs;                      // explicit inputs; -1 where omitted
  std::vector<int> implicit_inputs;
  std::vector<int> outputs;  // scratch slots stand in for omitted outputs
  std::vector<int> release_after;
  // The input index whose block output 0 takes over where the run finds it dead here and
  // held by nothing else (Kernel::output0_overwrites_input, planner.cc); -1: none.
  int overwritable_input = -1;
  std::string context;  // "[Conv] node 'c1': " for error messages
};

// A Concat input that its producer writes straight into the Concat's output (found at
// session creation, runtime/concat_placement.h): the producer's output is a view at
// `offset` bytes into the block the Concat's output will own, which the first of its
// placed inputs to run acquires. Both shapes are checked when the run makes them; a
// value of another shape takes the ordinary path and the Concat copies it.
struct ConcatPlacement {
  int concat_slot = -1;
  size_t offset = 0;
  Shape shape;         // the input's
  Shape concat_shape;  // the Concat output's
  size_t concat_bytes = 0;
};

class ExecutableGraph {
 public:
  std::vector<ValueSlot> slots;
  std::vector<Tensor> constants;      // by slot; undefined where the slot is not constant
  std::vector<int> outer_slots;       // bound to the enclosing node's implicit inputs
  std::vector<bool> outer_data_read;  // by outer slot: some step reads the value's data
  std::vector<ir::ValueInfo> inputs;  // feeds, graph order (incl. overridable initializers)
  std::vector<int> input_slots;
  std::vector<bool> input_required;     // false for optional inputs and overridable initializers
  std::vector<bool> input_overridable;  // true for inputs that have an initializer
  std::vector<ir::ValueInfo> outputs;
  std::vector<int> output_slots;
  std::vector<int> output_index_of_slot;  // by slot: index into outputs, -1 if none
  std::vector<Step> steps;
  size_t max_step_inputs = 0;
  // By slot: index into concat_placements, -1 for slots produced the ordinary way. Empty
  // when no Concat input is placed (the graph's shapes are not static, or none qualifies).
  std::vector<int> placement_of_slot;
  std::vector<ConcatPlacement> concat_placements;
  // The providers its steps use (kept alive with the plan), and the nodes of the copy
  // steps the planner added between devices ("MemcpyFromHost" / "MemcpyToHost", as
  // onnxruntime names them).
  ProviderList providers;
  std::vector<std::unique_ptr<ir::Node>> copy_nodes;
  // The session's limits: run-time allocations (tensor size, session memory) check them.
  Limits limits;
  // The plans of the subgraphs its steps' kernels compiled (If branches, Loop and Scan
  // bodies), for reports that cover the whole model.
  std::vector<std::shared_ptr<const ExecutableGraph>> subgraphs;
  // Run states for this graph when it runs as a subgraph (If branch, Loop body), made by
  // the executor on first use and freed with the graph.
  mutable std::once_flag subgraph_states_once;
  mutable std::shared_ptr<RunStateCache> subgraph_states;
};

struct PlanOptions {
  std::map<std::string, int64_t> opset_imports;
  // In order of preference: each node goes to the first that supports it. Required (a
  // session lists the CPU provider last).
  ProviderList providers;
  // Initializers that are also graph inputs may be fed (IR >= 4, top level only).
  bool inputs_override_initializers = true;
  // Run nodes whose inputs are all constant once at plan time.
  bool fold_constants = true;
  // max_nodes per graph; tensor limits for folded constants; copied to the plan.
  Limits limits;
};

// Plans `graph`. `outer_names`/`outer_types` are values of enclosing scopes;
// `outer_constants` (aligned with them, null where not constant) are treated as constants.
Expected<std::shared_ptr<ExecutableGraph>> plan_graph(
    const ir::Graph& graph, const PlanOptions& options, const std::vector<std::string>& outer_names,
    const std::vector<DataType>& outer_types, const std::vector<DataType>& input_types,
    const std::vector<const Tensor*>& outer_constants = {},
    const std::vector<ValueKind>& outer_kinds = {});

// One line per step: its index, op, node name, provider, and its input and output values
// ("x@device" names a copy on another device). What `nxrt info --plan` prints.
std::string describe_plan(const ExecutableGraph& graph);

// Constant folding of one node outside a plan (the optimizer's fold_constants pass): runs
// `node` (opset `opset` of its domain) once on `inputs` (null where an optional input is
// omitted) with the CPU kernel and returns its outputs. An error when the op is unknown,
// has subgraphs, is not deterministic, or its kernel fails on these inputs.
Expected<std::vector<Tensor>> fold_node(const ir::Node& node, int64_t opset,
                                        std::span<const Tensor* const> inputs,
                                        const Limits& limits);

}  // namespace nxrt
