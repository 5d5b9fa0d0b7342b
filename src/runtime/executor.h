// Runs an ExecutableGraph. Per-run mutable state lives in RunState objects that a graph
// keeps in a free list, so concurrent runs never share state and warm runs reuse both
// the value table and the pooled intermediate buffers.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "core/buffer_pool.h"
#include "planner/plan.h"
#include "runtime/memory_plan.h"

namespace nxrt {

// One node's execution, recorded when profiling is on.
struct NodeTiming {
  const Step* step = nullptr;
  int64_t start_ns = 0;  // steady clock
  int64_t duration_ns = 0;
  // onnxruntime's profile args: "input_type_shape":[{"float":[1,3,224,224]},...],
  // "output_type_shape":[...] (tensor inputs and outputs; {} for the others).
  std::string type_shapes;
};

// The bytes one run holds at once (pooled intermediates in use, in subgraphs too, and the
// outputs it allocates), checked against nxrt.limits.max_session_memory_bytes less the
// session's weights. Kernels' small per-thread scratch is not counted.
struct MemoryMeter {
  int64_t limit = 0;  // > 0
  int64_t held = 0;
  int64_t configured = 0;  // the limit as the user set it, for messages
  bool charge(int64_t bytes) {
    if (held + bytes > limit) return false;
    held += bytes;
    return true;
  }
  void credit(int64_t bytes) { held -= bytes; }
};

struct RunFlags {
  const std::atomic<bool>* terminate = nullptr;
  MemoryMeter* meter = nullptr;                // null: no memory limit
  std::vector<NodeTiming>* timings = nullptr;  // non-null: record every step, subgraphs too
  // Caller memory for graph outputs (IoBinding), aligned with the graph's outputs; an
  // undefined tensor leaves that output to the runtime. A bound output must match the
  // produced dtype and shape exactly; the run then writes into it and allocates nothing.
  std::span<const Tensor> bound_outputs;
  // Set when a subgraph's outputs are the enclosing node's outputs (If): the subgraph
  // asks this context for its graph outputs' buffers, so results land in the enclosing
  // run's memory (or the caller's bound buffers) with no copy and no allocation.
  KernelContext* output_sink = nullptr;
};

struct RunState {
  std::vector<Tensor> values;
  std::vector<std::shared_ptr<const TensorSequence>> sequences;  // by slot, for sequence slots
  // Pool blocks: root[slot] is the slot whose block `slot` uses (itself when it owns one,
  // the aliased slot for views, -1 for memory the pool does not manage); refs[root]
  // counts live slots on that block, which goes back to the pool when it drops to zero.
  std::vector<int> root;
  std::vector<int> refs;
  std::vector<void*> block;
  std::vector<int> block_id;  // by root slot: the MemoryPlan's name for its block
  // By Concat output slot: the root of the block its placed inputs were written into
  // (ExecutableGraph::concat_placements), held for the Concat until its step takes it
  // over; -1 when none is pending.
  std::vector<int> pending_concat;
  std::vector<const Tensor*> step_inputs;
  std::vector<const TensorSequence*> step_sequences;
  std::vector<const Tensor*> step_implicit;
  // Scratch kept across runs so a warm run does not allocate: Session::run's feeds and
  // results, and the feeds of the subgraphs the steps of this state run.
  std::vector<const Value*> feeds;
  std::vector<Value> results;
  std::vector<const Value*> sub_feeds;
  std::vector<const TensorSequence*> sub_outer_sequences;
  std::vector<Value> sub_values;
  std::vector<Value> sub_results;
  // With RunFlags::output_sink: by graph output, the data the sink handed out for it.
  std::vector<const void*> sunk;
  // The graph whose constants `values` holds as views (set once: constants never change
  // after planning), and that graph's other slots, the only ones a run fills and clears.
  // Constant slots that feeds or outer values may cover for a run (overridable
  // initializers, outer constants) get their constant back after it.
  const ExecutableGraph* prepared_for = nullptr;
  std::vector<int> run_slots;
  std::vector<int> restore_slots;
  BufferPool pool;
  // Once the graph proves static for the feed shapes, intermediates come from one arena.
  MemoryPlan memory;
  MemoryMeter* meter = nullptr;  // the current run's, while it runs
};

// Hands out RunStates for one graph; thread-safe.
class RunStateCache {
 public:
  std::unique_ptr<RunState> acquire();
  void release(std::unique_ptr<RunState> state);
  // Calls fn(const RunState&) for each state not in use by a run.
  template <typename Fn>
  void for_each_idle(Fn&& fn) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& state : free_) fn(*state);
  }

 private:
  std::mutex mutex_;
  std::vector<std::unique_ptr<RunState>> free_;
};

// The run states of `graph` when it runs as a subgraph (made on first use).
RunStateCache& subgraph_cache(const ExecutableGraph& graph);

// Executes `graph`. `feeds` align with graph.input_slots (nullptr: not fed, so the
// initializer or an empty optional), `outer` with graph.outer_slots. `outputs` receives
// one owning Value per graph output.
// `outer_sequences` (when given) holds the sequence-kind outer values, aligned with `outer`.
Status execute_graph(const ExecutableGraph& graph, RunState& state,
                     std::span<const Value* const> feeds, std::span<const Tensor* const> outer,
                     std::vector<Value>& outputs, const RunFlags& flags,
                     std::span<const TensorSequence* const> outer_sequences = {});

}  // namespace nxrt
