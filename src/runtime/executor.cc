#include "runtime/executor.h"

#include <map>

namespace nxrt {

std::unique_ptr<RunState> RunStateCache::acquire() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!free_.empty()) {
      auto state = std::move(free_.back());
      free_.pop_back();
      return state;
    }
  }
  return std::make_unique<RunState>();
}

void RunStateCache::release(std::unique_ptr<RunState> state) {
  std::lock_guard<std::mutex> lock(mutex_);
  free_.push_back(std::move(state));
}

namespace {

// Subgraphs keep their own RunState caches, created on first use.
RunStateCache& subgraph_cache(const ExecutableGraph& graph) {
  static std::mutex mutex;
  static std::map<const ExecutableGraph*, std::unique_ptr<RunStateCache>> caches;
  std::lock_guard<std::mutex> lock(mutex);
  auto& cache = caches[&graph];
  if (!cache) cache = std::make_unique<RunStateCache>();
  return *cache;
}

class StepContext final : public KernelContext {
 public:
  StepContext(const ExecutableGraph& graph, const Step& step, RunState& state,
              const RunFlags& flags)
      : graph_(graph), step_(step), state_(state), flags_(flags) {
    inputs_ = std::span<const Tensor* const>(state.step_inputs.data(), step.inputs.size());
    implicit_ = std::span<const Tensor* const>(state.step_implicit.data(),
                                               step.implicit_inputs.size());
    num_outputs_ = step.outputs.size();
  }

  Expected<Tensor*> output(size_t i, const Shape& shape) override {
    if (i >= step_.outputs.size())
      return make_error(StatusCode::kEngineError, "output index ", i, " out of range");
    const size_t slot = size_t(step_.outputs[i]);
    const ValueSlot& info = graph_.slots[slot];
    Tensor& value = state_.values[slot];
    if (state_.pooled[slot]) {  // a kernel asked twice; give the old block back first
      state_.pool.release(value.raw());
      state_.pooled[slot] = false;
    }
    if (info.is_graph_output || info.dtype == DataType::kString) {
      auto t = Tensor::allocate(info.dtype, shape);
      if (!t) return std::move(t).status();
      value = std::move(t).value();
      return &value;
    }
    NXRT_ASSIGN_OR_RETURN(size_t bytes, tensor_bytes(info.dtype, shape, "output '" + info.name + "'"));
    void* data = state_.pool.acquire(bytes);
    if (!data) return runtime_error("out of memory allocating ", bytes, " bytes for '", info.name, "'");
    value = Tensor(info.dtype, shape, data);
    state_.pooled[slot] = true;
    return &value;
  }

  Status run_subgraph(const ExecutableGraph& graph, std::span<const Tensor* const> inputs,
                      std::vector<Tensor>& outputs) override {
    // The subgraph's outer slots were compiled from this node's implicit inputs, in order.
    RunStateCache& cache = subgraph_cache(graph);
    auto state = cache.acquire();
    Status status = execute_graph(graph, *state, inputs, implicit_inputs(), outputs, flags_);
    cache.release(std::move(state));
    return status;
  }

  bool terminate_requested() const override {
    return flags_.terminate && flags_.terminate->load(std::memory_order_relaxed);
  }

 private:
  const ExecutableGraph& graph_;
  const Step& step_;
  RunState& state_;
  const RunFlags& flags_;
};

void release_all(RunState& state) {
  for (size_t s = 0; s < state.values.size(); ++s) {
    if (state.pooled[s]) state.pool.release(state.values[s].raw());
    state.pooled[s] = false;
    state.values[s] = Tensor();
  }
}

// A borrowed view of `t` (no ownership traffic on the hot path).
Tensor view_of(const Tensor& t) {
  return Tensor(t.dtype(), t.shape(), const_cast<void*>(t.raw()));
}

}  // namespace

Status execute_graph(const ExecutableGraph& graph, RunState& state,
                     std::span<const Tensor* const> feeds, std::span<const Tensor* const> outer,
                     std::vector<Tensor>& outputs, const RunFlags& flags) {
  const size_t num_slots = graph.slots.size();
  state.values.resize(num_slots);
  state.pooled.assign(num_slots, false);
  state.step_inputs.resize(graph.max_step_inputs);

  for (size_t s = 0; s < num_slots; ++s)
    if (graph.constants[s].defined()) state.values[s] = view_of(graph.constants[s]);
  for (size_t i = 0; i < graph.outer_slots.size() && i < outer.size(); ++i)
    if (outer[i]) state.values[size_t(graph.outer_slots[i])] = view_of(*outer[i]);
  for (size_t i = 0; i < graph.input_slots.size() && i < feeds.size(); ++i)
    if (feeds[i]) state.values[size_t(graph.input_slots[i])] = view_of(*feeds[i]);

  Status status;
  for (const Step& step : graph.steps) {
    if (flags.terminate && flags.terminate->load(std::memory_order_relaxed)) {
      status = Status(StatusCode::kFail, "Exiting due to terminate flag being set to true.");
      break;
    }
    for (size_t i = 0; i < step.inputs.size(); ++i) {
      const int s = step.inputs[i];
      state.step_inputs[i] = s >= 0 ? &state.values[size_t(s)] : nullptr;
    }
    state.step_implicit.resize(step.implicit_inputs.size());
    for (size_t i = 0; i < step.implicit_inputs.size(); ++i)
      state.step_implicit[i] = &state.values[size_t(step.implicit_inputs[i])];
    StepContext ctx(graph, step, state, flags);
    status = step.kernel->compute(ctx);
    if (!status.ok()) {
      if (status.message().rfind("[", 0) != 0) status = std::move(status).with_context(step.context);
      break;
    }
    for (int s : step.release_after) {
      if (state.pooled[size_t(s)]) state.pool.release(state.values[size_t(s)].raw());
      state.pooled[size_t(s)] = false;
      state.values[size_t(s)] = Tensor();
    }
  }

  if (status.ok()) {
    outputs.clear();
    outputs.reserve(graph.output_slots.size());
    for (size_t i = 0; i < graph.output_slots.size(); ++i) {
      Tensor& value = state.values[size_t(graph.output_slots[i])];
      if (!value.defined()) {
        status = make_error(StatusCode::kEngineError, "output '", graph.outputs[i].name,
                            "' was not computed");
        break;
      }
      if (value.owner() && !state.pooled[size_t(graph.output_slots[i])]) {
        outputs.push_back(value);  // produced for the caller: hand it over
      } else {
        auto copy = value.clone();  // an input, constant or outer value passed through
        if (!copy) {
          status = std::move(copy).status();
          break;
        }
        outputs.push_back(std::move(copy).value());
      }
    }
  }
  release_all(state);
  return status;
}

}  // namespace nxrt
