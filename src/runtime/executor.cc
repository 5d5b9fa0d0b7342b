#include "runtime/executor.h"

#include <chrono>
#include <utility>

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

// One value's profile entry: {"float":[1,3,224,224]}, or {} when it is no tensor.
void append_type_shape(std::string& out, const Tensor* t) {
  if (!t || !t->defined()) {
    out += "{}";
    return;
  }
  out += "{\"";
  out += dtype_name(t->dtype());
  out += "\":[";
  for (size_t d = 0; d < t->rank(); ++d) {
    if (d) out += ',';
    out += std::to_string(t->shape()[d]);
  }
  out += "]}";
}

}  // namespace

// Subgraphs keep their own RunState caches, created on first use and owned by the graph,
// so runs of different sessions never contend for one lock and the states go away with
// their session.
RunStateCache& subgraph_cache(const ExecutableGraph& graph) {
  std::call_once(graph.subgraph_states_once,
                 [&] { graph.subgraph_states = std::make_shared<RunStateCache>(); });
  return *graph.subgraph_states;
}

namespace {

// Drops one reference to the block rooted at `r`; it returns when none is left.
void drop_block_ref(RunState& state, int r) {
  if (r < 0 || --state.refs[size_t(r)] != 0) return;
  const size_t bytes =
      state.memory.release(state.block_id[size_t(r)], state.block[size_t(r)], state.pool);
  if (state.meter) state.meter->credit(int64_t(bytes));
  state.block[size_t(r)] = nullptr;
}

// Drops a slot's value; its pool block returns when no alias of it is left.
void release_slot(RunState& state, size_t slot) {
  drop_block_ref(state, state.root[slot]);
  state.root[slot] = -1;
  state.values[slot].reset();
}

// A borrowed view of `t` (no ownership traffic on the hot path).
Tensor view_of(const Tensor& t) { return Tensor(t.dtype(), t.shape(), const_cast<void*>(t.raw())); }

class StepContext final : public KernelContext {
 public:
  StepContext(const ExecutableGraph& graph, const Step& step, RunState& state,
              const RunFlags& flags)
      : graph_(graph), step_(step), state_(state), flags_(flags) {
    inputs_ = std::span<const Tensor* const>(state.step_inputs.data(), step.inputs.size());
    sequences_ =
        std::span<const TensorSequence* const>(state.step_sequences.data(), step.inputs.size());
    implicit_ =
        std::span<const Tensor* const>(state.step_implicit.data(), step.implicit_inputs.size());
    num_outputs_ = step.outputs.size();
  }

  Expected<Tensor*> output(size_t i, const Shape& shape) override {
    if (i >= step_.outputs.size())
      return make_error(StatusCode::kEngineError, "output index ", i, " out of range");
    const size_t slot = size_t(step_.outputs[i]);
    const ValueSlot& info = graph_.slots[slot];
    Tensor& value = state_.values[slot];
    // A kernel asked twice: give the old block back first.
    if (state_.root[slot] >= 0 || value.defined()) release_slot(state_, slot);
    if (info.is_graph_output) {
      const int index = graph_.output_index_of_slot[slot];
      if (index >= 0 && size_t(index) < flags_.bound_outputs.size() &&
          flags_.bound_outputs[size_t(index)].defined()) {
        const Tensor& bound = flags_.bound_outputs[size_t(index)];
        if (bound.dtype() != info.dtype || !(bound.shape() == shape))
          return invalid_argument("output '", info.name, "' is bound to a ",
                                  tensor_type_name(bound.dtype()), " buffer of shape ",
                                  bound.shape().to_string(), " but the model produces ",
                                  tensor_type_name(info.dtype), " of shape ", shape.to_string());
        value = Tensor(bound.dtype(), bound.shape(), const_cast<void*>(bound.raw()));
        return &value;
      }
      if (index >= 0 && flags_.output_sink) {
        // The enclosing node's output buffer: the value stays a borrowed view (root -1),
        // so this run never hands the memory to its own pool.
        NXRT_ASSIGN_OR_RETURN(Tensor * out, flags_.output_sink->output(size_t(index), shape));
        if (out->dtype() != info.dtype)
          return make_error(StatusCode::kEngineError, "output '", info.name, "' is ",
                            tensor_type_name(info.dtype), " but the enclosing node planned ",
                            tensor_type_name(out->dtype()));
        value = view_of(*out);
        state_.sunk[size_t(index)] = out->raw();
        return &value;
      }
    }
    if (info.is_graph_output || info.dtype == DataType::kString) {
      auto t = Tensor::allocate_uninitialized(info.dtype, shape, graph_.limits);
      if (!t) return std::move(t).status();
      // Outputs leave the run: charged, never credited back within it.
      if (state_.meter && !state_.meter->charge(int64_t(t->nbytes())))
        return over_memory_limit(info, t->nbytes());
      value = std::move(t).value();
      return &value;
    }
    if (!graph_.placement_of_slot.empty()) {
      if (const int p = graph_.placement_of_slot[slot]; p >= 0) {
        const ConcatPlacement& placement = graph_.concat_placements[size_t(p)];
        if (shape == placement.shape) return place_in_concat(slot, info, placement, shape);
      }
      if (Tensor* taken = take_pending_concat(slot, info, shape)) return taken;
    }
    if (i == 0 && step_.overwritable_input >= 0)
      if (Tensor* taken = take_dying_input(slot, info, shape)) return taken;
    // The message names the output only on failure: building it would allocate per call.
    auto size = tensor_bytes(info.dtype, shape, std::string(), graph_.limits);
    if (!size)
      return tensor_bytes(info.dtype, shape, "output '" + info.name + "'", graph_.limits).status();
    const size_t bytes = size.value();
    size_t capacity = 0;
    int id = -1;
    void* data = state_.memory.acquire(bytes, state_.pool, &id, &capacity);
    if (!data)
      return runtime_error("out of memory allocating ", bytes, " bytes for '", info.name, "'");
    if (state_.meter && !state_.meter->charge(int64_t(capacity))) {
      state_.memory.release(id, data, state_.pool);
      return over_memory_limit(info, bytes);
    }
    value = Tensor(info.dtype, shape, data);
    state_.root[slot] = int(slot);
    state_.refs[slot] = 1;
    state_.block[slot] = data;
    state_.block_id[slot] = id;
    return &value;
  }

  Status alias_input(size_t i, size_t input_index, const Shape& shape) override {
    const Tensor* in = input(input_index);
    if (i >= step_.outputs.size() || !in)
      return make_error(StatusCode::kEngineError, "bad alias of input ", input_index);
    const size_t slot = size_t(step_.outputs[i]);
    const ValueSlot& info = graph_.slots[slot];
    // Graph outputs leave the run and must own their memory; strings need construction.
    if (info.is_graph_output || info.dtype == DataType::kString || in->dtype() != info.dtype ||
        shape.numel() != in->numel())
      return KernelContext::alias_input(i, input_index, shape);
    release_slot(state_, slot);
    state_.values[slot] = Tensor(info.dtype, shape, const_cast<void*>(in->raw()));
    const int source = step_.inputs[input_index];
    const int r = source >= 0 ? state_.root[size_t(source)] : -1;
    state_.root[slot] = r;
    if (r >= 0) ++state_.refs[size_t(r)];
    return Status();
  }

  Status set_output_sequence(size_t i, TensorSequence sequence) override {
    if (i >= step_.outputs.size())
      return make_error(StatusCode::kEngineError, "output index ", i, " out of range");
    const size_t slot = size_t(step_.outputs[i]);
    if (graph_.slots[slot].kind == ValueKind::kTensor)
      return make_error(StatusCode::kEngineError, "output ", i, " is not a sequence");
    state_.sequences[slot] = std::make_shared<const TensorSequence>(std::move(sequence));
    return Status();
  }

  Status run_subgraph_values(const CompiledSubgraph& subgraph, std::span<const Value> inputs,
                             std::vector<Value>& outputs) override {
    return run_body(subgraph, inputs, outputs, nullptr);
  }

  Status run_subgraph_into_outputs(const CompiledSubgraph& subgraph,
                                   std::span<const Value> inputs) override {
    for (ValueKind kind : subgraph.output_kinds)
      if (kind != ValueKind::kTensor)
        return KernelContext::run_subgraph_into_outputs(subgraph, inputs);
    return run_body(subgraph, inputs, state_.sub_results, this);
  }

  Status run_subgraph(const CompiledSubgraph& subgraph, std::span<const Tensor* const> inputs,
                      std::vector<Tensor>& outputs) override {
    // Scratch of this state: kernels call this sequentially, and a nested subgraph runs
    // on its own state, so the vectors are never in use twice at once.
    std::vector<Value>& feed_values = state_.sub_values;
    std::vector<Value>& results = state_.sub_results;
    feed_values.resize(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i)
      feed_values[i] = inputs[i] ? Value(view_of(*inputs[i])) : Value();
    Status status = run_body(subgraph, feed_values, results, nullptr);
    for (Value& v : feed_values) v = Value();
    NXRT_RETURN_IF_ERROR(status);
    outputs.clear();
    for (Value& v : results) {
      if (v.is_sequence()) {
        results.clear();
        return not_implemented("subgraph outputs that are sequences are not supported yet");
      }
      outputs.push_back(std::move(v.tensor));
    }
    results.clear();
    return Status();
  }

  bool terminate_requested() const override {
    return flags_.terminate && flags_.terminate->load(std::memory_order_relaxed);
  }

 private:
  // Output 0 written over the block of its input dying at this step
  // (Step::overwritable_input): when that input owns the block alone, is not a Concat
  // input placed in another block, and has output 0's shape and type. Null otherwise.
  Tensor* take_dying_input(size_t slot, const ValueSlot& info, const Shape& shape) {
    const int source = step_.inputs[size_t(step_.overwritable_input)];
    const size_t s = size_t(source);
    if (!graph_.placement_of_slot.empty() && graph_.placement_of_slot[s] >= 0) return nullptr;
    const Tensor& in = state_.values[s];
    if (state_.root[s] != source || state_.refs[s] != 1 || in.raw() != state_.block[s] ||
        in.dtype() != info.dtype || !(in.shape() == shape))
      return nullptr;
    state_.values[slot] = Tensor(info.dtype, shape, state_.block[s]);
    state_.root[slot] = source;
    ++state_.refs[s];
    return &state_.values[slot];
  }

  // Output `slot`, a Concat input placed in its output: a view at its offset of the
  // block the Concat's output will own, acquired by the first placed input to run. That
  // block's root is this slot, with one more reference held for the Concat.
  Expected<Tensor*> place_in_concat(size_t slot, const ValueSlot& info,
                                    const ConcatPlacement& placement, const Shape& shape) {
    int& pending = state_.pending_concat[size_t(placement.concat_slot)];
    if (pending < 0) {
      size_t capacity = 0;
      int id = -1;
      void* data = state_.memory.acquire(placement.concat_bytes, state_.pool, &id, &capacity);
      const ValueSlot& concat = graph_.slots[size_t(placement.concat_slot)];
      if (!data)
        return runtime_error("out of memory allocating ", placement.concat_bytes, " bytes for '",
                             concat.name, "'");
      if (state_.meter && !state_.meter->charge(int64_t(capacity))) {
        state_.memory.release(id, data, state_.pool);
        return over_memory_limit(concat, placement.concat_bytes);
      }
      state_.root[slot] = int(slot);
      state_.refs[slot] = 2;
      state_.block[slot] = data;
      state_.block_id[slot] = id;
      pending = int(slot);
    } else {
      state_.root[slot] = pending;
      ++state_.refs[size_t(pending)];
    }
    Tensor& value = state_.values[slot];
    value = Tensor(info.dtype, shape,
                   static_cast<std::byte*>(state_.block[size_t(pending)]) + placement.offset);
    return &value;
  }

  // Output `slot` of a Concat whose placed inputs hold its block: the Concat's output
  // takes that block over when its shape is the planned one. Otherwise the reference
  // held for it goes (the inputs keep the block while they live) and nullptr sends the
  // output the ordinary way; the kernel then copies every input.
  Tensor* take_pending_concat(size_t slot, const ValueSlot& info, const Shape& shape) {
    int& pending = state_.pending_concat[slot];
    if (pending < 0) return nullptr;
    const int r = std::exchange(pending, -1);
    const ConcatPlacement& placement =
        graph_.concat_placements[size_t(graph_.placement_of_slot[size_t(r)])];
    if (!(shape == placement.concat_shape)) {
      drop_block_ref(state_, r);
      return nullptr;
    }
    state_.root[slot] = r;
    Tensor& value = state_.values[slot];
    value = Tensor(info.dtype, shape, state_.block[size_t(r)]);
    return &value;
  }

  Status over_memory_limit(const ValueSlot& info, size_t bytes) const {
    const MemoryMeter& m = *state_.meter;
    return make_error(StatusCode::kFail, "output '", info.name, "' needs ", bytes,
                      " bytes while the run holds ", m.held, "; with the session's weights ",
                      "that is over ", limit_text(kLimitMaxSessionMemoryBytes, m.configured));
  }

  const ExecutableGraph& graph_;
  const Step& step_;
  RunState& state_;
  const RunFlags& flags_;

  Status run_body(const CompiledSubgraph& subgraph, std::span<const Value> inputs,
                  std::vector<Value>& outputs, KernelContext* sink) {
    const ExecutableGraph& graph = *subgraph.graph;
    std::vector<const Value*>& feeds = state_.sub_feeds;
    feeds.assign(inputs.size(), nullptr);
    for (size_t i = 0; i < inputs.size(); ++i)
      if (!inputs[i].is_none()) feeds[i] = &inputs[i];
    // The subgraph's outer slots were compiled from this node's implicit inputs, in order.
    std::vector<const TensorSequence*>& outer_sequences = state_.sub_outer_sequences;
    outer_sequences.resize(step_.implicit_inputs.size());
    for (size_t i = 0; i < outer_sequences.size(); ++i)
      outer_sequences[i] = state_.sequences[size_t(step_.implicit_inputs[i])].get();
    RunStateCache& cache = subgraph_cache(graph);
    auto state = cache.acquire();
    // Subgraph nodes are timed too; in the trace they nest inside the enclosing node.
    RunFlags sub_flags = flags_;
    sub_flags.bound_outputs = {};  // bindings belong to the top-level graph's outputs
    sub_flags.output_sink = sink;
    Status status =
        execute_graph(graph, *state, feeds, implicit_inputs(), outputs, sub_flags, outer_sequences);
    cache.release(std::move(state));
    return status;
  }
};

// With an output sink, outputs the steps did not write into it (inputs, constants or
// outer values passed through, a value listed twice) are copied there now.
Status finish_sink_outputs(const ExecutableGraph& graph, RunState& state, KernelContext& sink) {
  for (size_t i = 0; i < graph.output_slots.size(); ++i) {
    const Tensor& value = state.values[size_t(graph.output_slots[i])];
    if (!value.defined()) {
      if (graph.outputs[i].type.kind == ir::TypeInfo::Kind::kOptional) continue;
      return make_error(StatusCode::kEngineError, "output '", graph.outputs[i].name,
                        "' was not computed");
    }
    if (state.sunk[i] && state.sunk[i] == value.raw()) continue;
    NXRT_ASSIGN_OR_RETURN(Tensor * out, sink.output(i, value.shape()));
    if (out->dtype() != value.dtype())
      return make_error(StatusCode::kEngineError, "output '", graph.outputs[i].name, "' is ",
                        tensor_type_name(value.dtype()), " but the enclosing node planned ",
                        tensor_type_name(out->dtype()));
    copy_elements(value.dtype(), value.raw(), out->raw(), value.numel());
  }
  return Status();
}

// The profile's "input_type_shape" and "output_type_shape" args of a step just run.
std::string profile_type_shapes(const Step& step, const RunState& state) {
  std::string out = "\"input_type_shape\":[";
  for (size_t i = 0; i < step.inputs.size(); ++i) {
    if (i) out += ",";
    append_type_shape(out, state.step_inputs[i]);
  }
  out += "],\"output_type_shape\":[";
  for (size_t i = 0; i < step.outputs.size(); ++i) {
    if (i) out += ",";
    const int s = step.outputs[i];
    append_type_shape(out, s >= 0 ? &state.values[size_t(s)] : nullptr);
  }
  return out + "]";
}

// Clears what the run put in its slots (constants stay: prepare_state set them once).
void release_all(const ExecutableGraph& graph, RunState& state) {
  for (int s : state.run_slots) {
    // A run that failed between a Concat's placed inputs and the Concat.
    if (state.pending_concat[size_t(s)] >= 0)
      drop_block_ref(state, std::exchange(state.pending_concat[size_t(s)], -1));
    if (state.root[size_t(s)] >= 0 || state.values[size_t(s)].defined())
      release_slot(state, size_t(s));
    if (state.sequences[size_t(s)]) state.sequences[size_t(s)].reset();
  }
  for (int s : state.restore_slots) {
    state.values[size_t(s)] = view_of(graph.constants[size_t(s)]);
    state.sequences[size_t(s)].reset();
  }
}

// Sizes the state for `graph` and puts its constants' views in place, once per state: a
// subgraph of a few live nodes may have hundreds of slots (Silero's Constant nodes), and
// re-viewing them all every run cost more than its kernels.
void prepare_state(const ExecutableGraph& graph, RunState& state) {
  const size_t num_slots = graph.slots.size();
  if (state.prepared_for == &graph && state.values.size() == num_slots) return;
  state.values.assign(num_slots, Tensor());
  state.sequences.assign(num_slots, nullptr);
  // Every run leaves each slot's root at -1 (release_all), so these are set once here,
  // not per run: a subgraph's slots are mostly its constants (hundreds in Silero's).
  state.root.assign(num_slots, -1);
  state.refs.assign(num_slots, 0);
  state.block.assign(num_slots, nullptr);
  state.block_id.assign(num_slots, -1);
  state.pending_concat.assign(num_slots, -1);
  state.run_slots.clear();
  state.restore_slots.clear();
  for (size_t s = 0; s < num_slots; ++s) {
    if (graph.constants[s].defined())
      state.values[s] = view_of(graph.constants[s]);
    else
      state.run_slots.push_back(int(s));
  }
  for (const std::vector<int>* covered : {&graph.input_slots, &graph.outer_slots})
    for (int s : *covered)
      if (graph.constants[size_t(s)].defined()) state.restore_slots.push_back(s);
  state.prepared_for = &graph;
}

}  // namespace

Status execute_graph(const ExecutableGraph& graph, RunState& state,
                     std::span<const Value* const> feeds, std::span<const Tensor* const> outer,
                     std::vector<Value>& outputs, const RunFlags& flags,
                     std::span<const TensorSequence* const> outer_sequences) {
  prepare_state(graph, state);
  state.step_inputs.resize(graph.max_step_inputs);
  state.step_sequences.resize(graph.max_step_inputs);
  if (flags.output_sink) state.sunk.assign(graph.output_slots.size(), nullptr);
  state.meter = flags.meter;

  for (size_t i = 0; i < graph.outer_slots.size() && i < outer.size(); ++i)
    if (outer[i]) state.values[size_t(graph.outer_slots[i])] = view_of(*outer[i]);
  for (size_t i = 0; i < graph.outer_slots.size() && i < outer_sequences.size(); ++i) {
    // Borrowed: the enclosing run keeps the sequence alive while this subgraph runs.
    if (outer_sequences[i])
      state.sequences[size_t(graph.outer_slots[i])] =
          std::shared_ptr<const TensorSequence>(std::shared_ptr<void>(), outer_sequences[i]);
  }
  for (size_t i = 0; i < graph.input_slots.size() && i < feeds.size(); ++i) {
    if (!feeds[i]) continue;
    const size_t slot = size_t(graph.input_slots[i]);
    if (feeds[i]->is_sequence())
      state.sequences[slot] = feeds[i]->sequence;
    else if (feeds[i]->tensor.defined())
      state.values[slot] = view_of(feeds[i]->tensor);
  }

  state.memory.begin_run(feeds, outer);

  Status status;
  for (const Step& step : graph.steps) {
    if (flags.terminate && flags.terminate->load(std::memory_order_relaxed)) {
      status = Status(StatusCode::kFail, "Exiting due to terminate flag being set to true.");
      break;
    }
    for (size_t i = 0; i < step.inputs.size(); ++i) {
      const int s = step.inputs[i];
      const bool present = s >= 0 && state.values[size_t(s)].defined();
      state.step_inputs[i] = present ? &state.values[size_t(s)] : nullptr;
      state.step_sequences[i] = s >= 0 ? state.sequences[size_t(s)].get() : nullptr;
    }
    state.step_implicit.resize(step.implicit_inputs.size());
    for (size_t i = 0; i < step.implicit_inputs.size(); ++i)
      state.step_implicit[i] = &state.values[size_t(step.implicit_inputs[i])];
    StepContext ctx(graph, step, state, flags);
    if (flags.timings) {
      const auto start = std::chrono::steady_clock::now();
      status = step.kernel->compute(ctx);
      const auto end = std::chrono::steady_clock::now();
      flags.timings->push_back(
          {&step,
           std::chrono::duration_cast<std::chrono::nanoseconds>(start.time_since_epoch()).count(),
           std::chrono::duration_cast<std::chrono::nanoseconds>(end - start).count(),
           profile_type_shapes(step, state)});
    } else {
      status = step.kernel->compute(ctx);
    }
    if (!status.ok()) {
      if (status.message().rfind("[", 0) != 0)
        status = std::move(status).with_context(step.context);
      break;
    }
    for (int s : step.release_after) {
      release_slot(state, size_t(s));
      state.sequences[size_t(s)].reset();
    }
  }

  if (status.ok() && flags.output_sink) {
    outputs.clear();
    status = finish_sink_outputs(graph, state, *flags.output_sink);
  } else if (status.ok()) {
    outputs.clear();
    outputs.reserve(graph.output_slots.size());
    for (size_t i = 0; i < graph.output_slots.size(); ++i) {
      const size_t slot = size_t(graph.output_slots[i]);
      const bool optional = graph.outputs[i].type.kind == ir::TypeInfo::Kind::kOptional;
      if (graph.slots[slot].kind != ValueKind::kTensor ||
          (optional && !state.values[slot].defined())) {
        // Sequences are immutable once made, so they are shared, not copied; an output
        // with no value is an empty optional.
        outputs.push_back(state.sequences[slot] ? Value(state.sequences[slot]) : Value());
        outputs.back().maps = graph.slots[slot].kind == ValueKind::kMapSequence;
        continue;
      }
      Tensor& value = state.values[slot];
      if (!value.defined()) {
        status = make_error(StatusCode::kEngineError, "output '", graph.outputs[i].name,
                            "' was not computed");
        break;
      }
      const bool is_bound = i < flags.bound_outputs.size() && flags.bound_outputs[i].defined();
      if (is_bound && flags.bound_outputs[i].raw() != value.raw()) {
        // An input or constant passed straight through: copy it into the caller's buffer.
        const Tensor& b = flags.bound_outputs[i];
        if (b.dtype() != value.dtype() || !(b.shape() == value.shape())) {
          status = invalid_argument("output '", graph.outputs[i].name,
                                    "' is bound to a buffer of shape ", b.shape().to_string(),
                                    " but is ", value.shape().to_string());
          break;
        }
        copy_elements(b.dtype(), value.raw(), const_cast<void*>(b.raw()), b.numel());
        outputs.push_back(Tensor(b.dtype(), b.shape(), const_cast<void*>(b.raw())));
        continue;
      }
      if (is_bound || (value.owner() && state.root[slot] < 0)) {
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
  release_all(graph, state);
  state.memory.end_run(status.ok(), state.pool);
  state.meter = nullptr;
  return status;
}

}  // namespace nxrt
