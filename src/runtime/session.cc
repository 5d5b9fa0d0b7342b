#include "runtime/session.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <set>
#include <unordered_set>

#include "ep/cpu/cpu_provider.h"
#include "onnx/decoder.h"
#include "onnx/encoder.h"
#include "optimizer/pass.h"

namespace nxrt {

namespace {

// Fixes the named symbolic dims of the main graph's inputs and outputs (sessions check
// feeds against declared numbers, so the passes may rely on them). The name stays beside
// the size (a decoded dim never has both), for the error message of a wrong feed.
void apply_free_dimension_overrides(ir::Graph& graph, const std::map<std::string, int64_t>& sizes) {
  if (sizes.empty()) return;
  for (auto* values : {&graph.inputs, &graph.outputs})
    for (ir::ValueInfo& v : *values) {
      ir::TypeInfo& t =
          v.type.kind == ir::TypeInfo::Kind::kOptional && v.type.inner ? *v.type.inner : v.type;
      for (ir::Dim& d : t.dims)
        if (auto it = d.param.empty() ? sizes.end() : sizes.find(d.param); it != sizes.end()) {
          d.value = it->second;
        }
    }
}

void collect_nxrt_ops(const ir::Graph& graph, std::set<std::string>& ops) {
  for (const ir::Node& node : graph.nodes) {
    if (node.domain == "nxrt") ops.insert(node.op_type);
    for (const ir::Graph* g : ir::subgraphs_of(node)) collect_nxrt_ops(*g, ops);
  }
}

// The ops of nxrt's own domain in a graph and its subgraphs, sorted.
std::vector<std::string> nxrt_domain_ops(const ir::Graph& graph) {
  std::set<std::string> ops;
  collect_nxrt_ops(graph, ops);
  return {ops.begin(), ops.end()};
}

// After planning, the plan holds every tensor it needs (shared, not copied); the IR's own
// references to initializers and Constant/attribute tensors only keep dead data alive,
// such as weights that were sliced or transposed by constant folding. Node structure and
// other attributes stay: steps point at their nodes for names and error messages.
// Tensors that share memory (constants folded alike in several subgraphs) count once.
uint64_t count_weight_bytes(const ir::Graph& graph, std::unordered_set<const void*>& seen) {
  uint64_t total = 0;
  auto count = [&](const Tensor& t) {
    if (t.defined() && (t.nbytes() == 0 || seen.insert(t.raw()).second)) total += t.nbytes();
  };
  for (const ir::Initializer& init : graph.initializers) count(init.tensor);
  for (const ir::Node& node : graph.nodes) {
    for (const ir::Attribute& a : node.attributes) {
      count(a.t);
      for (const Tensor& t : a.tensors) count(t);
      if (a.g) total += count_weight_bytes(*a.g, seen);
      for (const auto& g : a.graphs) total += count_weight_bytes(*g, seen);
    }
  }
  return total;
}

uint64_t count_weight_bytes(const ir::Graph& graph) {
  std::unordered_set<const void*> seen;
  return count_weight_bytes(graph, seen);
}

void release_weights(ir::Graph& graph) {
  for (ir::Initializer& init : graph.initializers) init.tensor = Tensor();
  for (ir::Node& node : graph.nodes) {
    for (ir::Attribute& a : node.attributes) {
      if (a.type == ir::Attribute::Type::kTensor) a.t = Tensor();
      if (a.g) release_weights(*a.g);
      for (auto& g : a.graphs) release_weights(*g);
    }
  }
}

}  // namespace

Expected<std::unique_ptr<Session>> Session::create_from_file(const std::string& path,
                                                             const SessionConfig& config) {
  NXRT_ASSIGN_OR_RETURN(Limits limits, parse_limits(config.config_entries));
  NXRT_ASSIGN_OR_RETURN(auto model, onnx::load_model_file(path, limits));
  return create(std::move(model), config, limits);
}

Expected<std::unique_ptr<Session>> Session::create_from_bytes(const void* data, size_t size,
                                                              const SessionConfig& config) {
  NXRT_ASSIGN_OR_RETURN(Limits limits, parse_limits(config.config_entries));
  // Checked before the copy, which would otherwise take the memory first.
  if (size > uint64_t(limits.max_model_bytes))
    return invalid_argument("model is ", size, " bytes, over the ",
                            limit_text(kLimitMaxModelBytes, limits.max_model_bytes));
  auto copy = std::shared_ptr<char[]>(new char[size ? size : 1]);
  if (size) std::memcpy(copy.get(), data, size);
  const char* bytes = copy.get();
  NXRT_ASSIGN_OR_RETURN(
      auto model,
      onnx::decode_model(bytes, size, std::shared_ptr<void>(copy, copy.get()), "", limits));
  return create(std::move(model), config, limits);
}

Expected<std::unique_ptr<Session>> Session::create(std::shared_ptr<ir::Model> model,
                                                   const SessionConfig& config,
                                                   const Limits& limits) {
  apply_free_dimension_overrides(model->graph, config.free_dimension_overrides);
  optimizer::OptimizerOptions passes;
  passes.level = config.graph_optimization_level;
  passes.disabled = config.disabled_optimizers;
  NXRT_RETURN_IF_ERROR(optimizer::optimize(*model, passes, limits));
  std::vector<std::string> written_nxrt_ops;
  if (!config.optimized_model_filepath.empty()) {
    NXRT_RETURN_IF_ERROR(onnx::write_model_file(*model, config.optimized_model_filepath));
    written_nxrt_ops = nxrt_domain_ops(model->graph);
  }
  // Decoding touched every page of the file; planning reads back only the weights, so
  // dropping the pages now lowers the peak as well as the steady state.
  if (model->mapped_file) model->mapped_file->release_resident_pages();
#ifdef __GLIBC__
  // The passes' temporaries (folded copies, use-def maps) are freed now: handing their
  // pages back before planning keeps them out of the peak planning reaches.
  malloc_trim(0);
#endif
  auto session = std::unique_ptr<Session>(new Session());
  session->model_ = model;
  session->config_ = config;
  session->written_nxrt_ops_ = std::move(written_nxrt_ops);
  session->limits_ = limits;
  if (config.parallel)
    session->parallel_ = config.parallel;
  else if (config.intra_op_num_threads > 1)
    session->parallel_ = make_worker_pool(size_t(config.intra_op_num_threads));
  session->profile_origin_ns_ = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                    std::chrono::steady_clock::now().time_since_epoch())
                                    .count();
  PlanOptions options;
  options.opset_imports = model->opset_imports;
  options.providers = config.providers;
  options.providers.push_back(cpu::cpu_provider());  // takes whatever the others leave
  options.inputs_override_initializers = model->ir_version >= 4;
  options.fold_constants = config.graph_optimization_level > 0;
  options.limits = limits;
  auto graph = plan_graph(model->graph, options, {}, {}, {});
  if (!graph) return std::move(graph).status();
  session->graph_ = std::move(graph).value();
  session->weight_bytes_ = count_weight_bytes(session->model_->graph);
  // Before the weights go: shape inference reads the shape tensors among them.
  session->predicted_traffic_ = predict_static_traffic(
      model->graph, model->opset_imports, *session->graph_, &session->not_predicted_why_);
  if (session->predicted_traffic_) {
    // The predicted traffic assumes these placements: they go into the plan together.
    ConcatPlacements& concats = session->predicted_traffic_->concats;
    session->graph_->placement_of_slot = std::move(concats.placement_of_slot);
    session->graph_->concat_placements = std::move(concats.placements);
  }
  if (limits.max_session_memory_bytes > 0 &&
      session->weight_bytes_ > uint64_t(limits.max_session_memory_bytes))
    return make_error(StatusCode::kFail, "the model's weights take ", session->weight_bytes_,
                      " bytes, over the ",
                      limit_text(kLimitMaxSessionMemoryBytes, limits.max_session_memory_bytes));
  release_weights(session->model_->graph);
  // Packed kernels and folded constants no longer read most of the file's weights.
  if (model->mapped_file) model->mapped_file->release_resident_pages();
#ifdef __GLIBC__
  // Planning and folding leave freed temporaries in the heap; hand them back to the OS
  // so a long-lived session's resident memory is what it holds, not its peak.
  malloc_trim(0);
#endif
  // Outputs the model leaves untyped get the planned type, so get_outputs() is complete.
  ExecutableGraph& planned = *session->graph_;
  for (size_t i = 0; i < planned.outputs.size(); ++i) {
    ir::TypeInfo& type = planned.outputs[i].type;
    const ValueSlot& slot = planned.slots[size_t(planned.output_slots[i])];
    if (type.kind == ir::TypeInfo::Kind::kUnknown) {
      type.kind = slot.kind == ValueKind::kTensor ? ir::TypeInfo::Kind::kTensor
                                                  : ir::TypeInfo::Kind::kSequence;
      if (slot.kind != ValueKind::kTensor) {
        auto element = std::make_shared<ir::TypeInfo>();
        element->kind = ir::TypeInfo::Kind::kTensor;
        element->elem_type = slot.dtype;
        type.inner = element;
        if (slot.kind == ValueKind::kMapSequence) {
          // (The key type is the kernel's; an undeclared output leaves it unknown.)
          type.inner = std::make_shared<ir::TypeInfo>();
          type.inner->kind = ir::TypeInfo::Kind::kMap;
          type.inner->inner = element;
        }
      }
    }
    if (type.kind == ir::TypeInfo::Kind::kTensor && type.elem_type == DataType::kUndefined)
      type.elem_type = slot.dtype;
  }
  const ExecutableGraph& g = *session->graph_;
  for (size_t i = 0; i < g.inputs.size(); ++i)
    (g.input_overridable[i] ? session->overridable_ : session->inputs_).push_back(g.inputs[i]);
  return session;
}

namespace {
std::string json_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) continue;
    out += c;
  }
  return out;
}
}  // namespace

void Session::record_profile(const std::vector<NodeTiming>& timings) const {
  std::string events;
  for (const NodeTiming& t : timings) {
    const ir::Node& node = *t.step->node;
    const std::string name =
        node.name.empty() ? node.outputs.empty() ? node.op_type : node.outputs[0] : node.name;
    events += str_cat(events.empty() ? "" : ",", "{\"cat\":\"Node\",\"ph\":\"X\",\"pid\":0,",
                      "\"tid\":0,\"name\":\"", json_escape(name),
                      "_kernel_time\",\"ts\":", (t.start_ns - profile_origin_ns_) / 1000,
                      ",\"dur\":", t.duration_ns / 1000, ",\"args\":{\"op_name\":\"",
                      json_escape(node.op_type), "\",\"provider\":\"",
                      t.step->provider ? t.step->provider->name() : "", "\"",
                      t.type_shapes.empty() ? "" : ",", t.type_shapes, "}}");
  }
  std::lock_guard<std::mutex> lock(profile_mutex_);
  if (!events.empty()) profile_events_ += (profile_events_.empty() ? "" : ",") + events;
}

std::string Session::take_profile_json() {
  std::lock_guard<std::mutex> lock(profile_mutex_);
  std::string out = "[" + profile_events_ + "]";
  profile_events_.clear();
  return out;
}

Status Session::check_feed(size_t index, const Value& fed) const {
  const ir::ValueInfo& info = graph_->inputs[index];
  const ValueSlot& slot = graph_->slots[size_t(graph_->input_slots[index])];
  const DataType expected = slot.dtype;
  if (fed.is_none()) {
    if (info.type.kind == ir::TypeInfo::Kind::kOptional) return Status();
    return invalid_argument("input '", info.name, "' is not optional but was fed no value");
  }
  // What the input declares (an optional's element).
  const ir::TypeInfo& declared = info.type.kind == ir::TypeInfo::Kind::kOptional && info.type.inner
                                     ? *info.type.inner
                                     : info.type;
  if (slot.kind == ValueKind::kMap) {
    if (!fed.is_sequence() || !fed.maps || fed.sequence->size() != 2)
      return invalid_argument("input '", info.name, "' expects a map (",
                              dtype_name(declared.elem_type), " keys, ", dtype_name(expected),
                              " values)");
    const Tensor& keys = (*fed.sequence)[0];
    const Tensor& values = (*fed.sequence)[1];
    if (keys.dtype() != declared.elem_type || values.dtype() != expected)
      return invalid_argument("input '", info.name, "' expects a map of ",
                              dtype_name(declared.elem_type), " to ", dtype_name(expected),
                              ", got ", dtype_name(keys.dtype()), " to ",
                              dtype_name(values.dtype()));
    if (keys.rank() != 1 || values.rank() != 1 || keys.numel() != values.numel())
      return invalid_argument("input '", info.name, "': a map's keys and values must be 1-D and ",
                              "as many, got ", keys.shape().to_string(), " and ",
                              values.shape().to_string());
    return Status();
  }
  if (fed.is_sequence() && fed.maps)
    return invalid_argument("input '", info.name, "' expects a ",
                            slot.kind == ValueKind::kSequence ? "sequence of tensors" : "tensor",
                            " but was fed a map");
  if ((slot.kind == ValueKind::kSequence) != fed.is_sequence())
    return invalid_argument("input '", info.name, "' expects a ",
                            slot.kind == ValueKind::kSequence ? "sequence of tensors" : "tensor",
                            " but was fed a ", fed.is_sequence() ? "sequence" : "tensor");
  if (fed.is_sequence()) {
    for (const Tensor& t : *fed.sequence)
      if (expected != DataType::kUndefined && t.dtype() != expected)
        return invalid_argument("input '", info.name, "' expects a sequence of ",
                                tensor_type_name(expected), " but an element is ",
                                tensor_type_name(t.dtype()));
    return Status();
  }
  const Tensor& value = fed.tensor;
  if (expected != DataType::kUndefined && value.dtype() != expected)
    return invalid_argument("Unexpected input data type. Actual: (",
                            tensor_type_name(value.dtype()), ") , expected: (",
                            tensor_type_name(expected), ") for input '", info.name, "'");
  // onnxruntime does not check inputs declared as scalars (rank 0); neither do we, so
  // feeding [1] where the model says [] keeps working.
  if (!declared.has_shape || declared.dims.empty()) return Status();
  const auto& dims = declared.dims;
  if (dims.size() != value.rank())
    return invalid_argument("Invalid rank for input: ", info.name, " Got: ", value.rank(),
                            " Expected: ", dims.size(),
                            " Please fix either the inputs/outputs or the model.");
  std::string bad;
  for (size_t d = 0; d < dims.size(); ++d)
    if (dims[d].value >= 0 && dims[d].value != value.shape()[d])
      bad += str_cat(" index: ", d, " Got: ", value.shape()[d], " Expected: ", dims[d].value,
                     dims[d].param.empty() ? ""
                                           : " (dimension '" + dims[d].param +
                                                 "', fixed by a free dimension override)");
  if (!bad.empty())
    return invalid_argument("Got invalid dimensions for input: ", info.name,
                            " for the following indices\n", bad,
                            "\n Please fix either the inputs/outputs or the model.");
  return Status();
}

Status Session::run(std::span<const std::string> input_names, std::span<const Value> input_values,
                    std::span<const std::string> output_names, std::vector<Value>& outputs,
                    const RunFlags& flags) const {
  const ExecutableGraph& g = *graph_;
  // The state's scratch vectors keep their capacity, so a warm run allocates nothing here.
  auto state = states_.acquire();
  struct Release {
    RunStateCache& cache;
    std::unique_ptr<RunState>& state;
    ~Release() {
      state->feeds.clear();
      state->results.clear();
      cache.release(std::move(state));
    }
  } release{states_, state};
  std::vector<const Value*>& feeds = state->feeds;
  feeds.assign(g.input_slots.size(), nullptr);
  for (size_t i = 0; i < input_names.size(); ++i) {
    size_t index = g.inputs.size();
    for (size_t k = 0; k < g.inputs.size(); ++k)
      if (g.inputs[k].name == input_names[i]) index = k;
    if (index == g.inputs.size()) return invalid_argument("Invalid input name: ", input_names[i]);
    if (feeds[index]) return invalid_argument("input '", input_names[i], "' is fed twice");
    NXRT_RETURN_IF_ERROR(check_feed(index, input_values[i]));
    feeds[index] = &input_values[i];
  }
  std::string missing;
  for (size_t k = 0; k < g.inputs.size(); ++k)
    if (!feeds[k] && g.input_required[k])
      missing += (missing.empty() ? "'" : ", '") + g.inputs[k].name + "'";
  if (!missing.empty())
    return invalid_argument("Required inputs (", missing, ") are missing from the feed");
  for (const std::string& name : output_names) {
    bool known = false;
    for (size_t k = 0; k < g.outputs.size() && !known; ++k) known = g.outputs[k].name == name;
    if (!known) return invalid_argument("Invalid output name: ", name);
  }

  std::vector<Value>& all = state->results;
  std::vector<NodeTiming> timings;
  RunFlags run_flags = flags;
  if (config_.enable_profiling) run_flags.timings = &timings;
  MemoryMeter meter;
  if (limits_.max_session_memory_bytes > 0) {
    meter.configured = limits_.max_session_memory_bytes;
    meter.limit = limits_.max_session_memory_bytes - int64_t(weight_bytes_);
    run_flags.meter = &meter;
  }
  ParallelScope parallel(parallel_.get());
  if (predicted_traffic_ && !state->memory.offered())
    state->memory.adopt(predicted_traffic_->signature, predicted_traffic_->events,
                        predicted_traffic_->bytes, state->pool);
  Status status = execute_graph(g, *state, feeds, {}, all, run_flags);
  if (config_.enable_profiling) record_profile(timings);
  NXRT_RETURN_IF_ERROR(status);
  outputs.clear();
  if (output_names.empty()) {
    for (Value& v : all) outputs.push_back(std::move(v));
  } else {
    for (const std::string& name : output_names)
      for (size_t k = 0; k < g.outputs.size(); ++k)
        if (g.outputs[k].name == name) {
          outputs.push_back(all[k]);
          break;
        }
  }
  return Status();
}

namespace {

void add_subgraph_plan_stats(const ExecutableGraph& graph, Session::MemoryPlanStats& stats) {
  for (const auto& sub : graph.subgraphs) {
    size_t arena = 0, states = 0;
    bool planned = false;
    subgraph_cache(*sub).for_each_idle([&](const RunState& state) {
      ++states;  // a subgraph's states exist once it ran
      arena = std::max(arena, state.memory.arena_bytes());
      planned = planned || state.memory.has_plan();
    });
    stats.subgraphs_run += states > 0;
    stats.subgraphs_planned += planned;
    stats.subgraph_arena_bytes += arena;
    add_subgraph_plan_stats(*sub, stats);
  }
}

}  // namespace

Session::MemoryPlanStats Session::memory_plan_stats() const {
  MemoryPlanStats stats;
  states_.for_each_idle([&](const RunState& state) {
    stats.arena_bytes = std::max(stats.arena_bytes, state.memory.arena_bytes());
    stats.planned_runs += state.memory.planned_runs();
    stats.predicted = stats.predicted || state.memory.predicted();
  });
  stats.not_predicted_why = not_predicted_why_;
  add_subgraph_plan_stats(*graph_, stats);
  return stats;
}

}  // namespace nxrt
