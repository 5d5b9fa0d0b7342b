#include <algorithm>
#include <cassert>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "ep/cpu/registry.h"
#include "ops/op_schema.h"
#include "planner/plan.h"

namespace nxrt {
namespace {

// The input types the spec's constraints are checked against: tensors, sequences and maps
// of a settled element type (sequences of maps and omitted inputs are not checked).
std::vector<ops::InputType> spec_types(const std::vector<DataType>& types,
                                       const std::vector<ValueKind>& kinds) {
  std::vector<ops::InputType> out(types.size());
  for (size_t i = 0; i < types.size(); ++i) {
    const ValueKind kind = i < kinds.size() ? kinds[i] : ValueKind::kTensor;
    out[i].dtype = types[i];
    out[i].sequence = kind == ValueKind::kSequence;
    out[i].map = kind == ValueKind::kMap;
    out[i].known = types[i] != DataType::kUndefined && kind != ValueKind::kMapSequence;
  }
  return out;
}

// Ops whose result must not be computed once at plan time.
bool is_nondeterministic(const ir::Node& node) {
  static const char* kOps[] = {
      "RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike",
      "Multinomial",  "Bernoulli",        "Dropout"};
  for (const char* op : kOps)
    if (node.op_type == op) return true;
  return false;
}

// The input of `step` whose block its output 0 may take over (Step::overwritable_input):
// one the kernel allows, produced by an earlier step (not a feed, constant or outer
// value), read for the last time here and by this one input only, of output 0's type;
// output 0 a pooled tensor (not a graph output). -1 when there is none.
int overwritable_input(const ExecutableGraph& g, const Step& step) {
  const std::optional<size_t> allowed =
      step.kernel ? step.kernel->output0_overwrites_input() : std::nullopt;
  if (!allowed || *allowed >= step.inputs.size() || step.outputs.empty()) return -1;
  const int source = step.inputs[*allowed];
  const ValueSlot& out = g.slots[size_t(step.outputs[0])];
  if (source < 0 || out.is_graph_output || out.kind != ValueKind::kTensor ||
      out.dtype == DataType::kString || g.slots[size_t(source)].dtype != out.dtype)
    return -1;
  if (std::count(step.release_after.begin(), step.release_after.end(), source) != 1) return -1;
  const auto reads = std::count(step.inputs.begin(), step.inputs.end(), source) +
                     std::count(step.implicit_inputs.begin(), step.implicit_inputs.end(), source);
  return reads == 1 ? int(*allowed) : -1;
}

// Runs a kernel at plan time on constant inputs; outputs become owned constants.
class FoldContext final : public KernelContext {
 public:
  FoldContext(std::span<const Tensor* const> inputs, const std::vector<DataType>& output_types,
              const Limits& limits)
      : types_(output_types), limits_(limits), results_(output_types.size()) {
    inputs_ = inputs;
    num_outputs_ = output_types.size();
  }
  Expected<Tensor*> output(size_t i, const Shape& shape) override {
    if (i >= results_.size()) return make_error(StatusCode::kEngineError, "bad output index");
    NXRT_ASSIGN_OR_RETURN(results_[i], Tensor::allocate(types_[i], shape, limits_));
    return &results_[i];
  }
  // Reshape-like ops on a constant share its storage: an Unsqueeze of a weight must not
  // hold a second copy of it for the session's lifetime.
  Status alias_input(size_t i, size_t input_index, const Shape& shape) override {
    const Tensor* in = input(input_index);
    if (in && in->owner() && i < results_.size() && in->dtype() == types_[i] &&
        shape.numel() == in->numel()) {
      results_[i] = Tensor(in->dtype(), shape, const_cast<void*>(in->raw()), in->owner());
      return Status();
    }
    return KernelContext::alias_input(i, input_index, shape);
  }
  Status run_subgraph(const CompiledSubgraph&, std::span<const Tensor* const>,
                      std::vector<Tensor>&) override {
    return not_implemented("subgraphs are not folded");
  }
  bool terminate_requested() const override { return false; }
  std::vector<Tensor>& results() { return results_; }

 private:
  const std::vector<DataType>& types_;
  const Limits& limits_;
  std::vector<Tensor> results_;
};

class Planner : public SubgraphCompiler {
 public:
  explicit Planner(const PlanOptions& options) : options_(options) {}

  Expected<CompiledSubgraph> compile(const ir::Graph& graph,
                                     const std::vector<std::string>& outer_names,
                                     const std::vector<DataType>& outer_types,
                                     const std::vector<DataType>& input_types) override {
    PlanOptions sub = options_;
    sub.inputs_override_initializers = false;
    // Outer values that are constants in this graph stay constants in the subgraph, so
    // it can fold work on them (weights sliced per run) and kernels can pre-pack them.
    std::vector<const Tensor*> outer_constants;
    for (const std::string& name : outer_names) {
      auto it = outer_constants_.find(name);
      outer_constants.push_back(it == outer_constants_.end() ? nullptr : it->second);
    }
    std::vector<ValueKind> outer_kinds;
    for (const std::string& name : outer_names) {
      auto it = outer_kinds_.find(name);
      outer_kinds.push_back(it == outer_kinds_.end() ? ValueKind::kTensor : it->second);
    }
    NXRT_ASSIGN_OR_RETURN(auto plan, plan_graph(graph, sub, outer_names, outer_types, input_types,
                                                outer_constants, outer_kinds));
    compiled_subgraph_ = true;
    for (size_t i = 0; i < outer_names.size() && i < plan->outer_data_read.size(); ++i)
      if (plan->outer_data_read[i]) implicit_data_read_.insert(outer_names[i]);
    CompiledSubgraph out;
    out.inputs = plan->inputs;
    out.outputs = plan->outputs;
    for (int slot : plan->output_slots) {
      out.output_types.push_back(plan->slots[size_t(slot)].dtype);
      out.output_kinds.push_back(plan->slots[size_t(slot)].kind);
    }
    compiled_.push_back(plan);
    out.graph = std::move(plan);
    return out;
  }

  Expected<std::shared_ptr<ExecutableGraph>> plan(const ir::Graph& graph,
                                                  const std::vector<std::string>& outer_names,
                                                  const std::vector<DataType>& outer_types,
                                                  const std::vector<DataType>& input_types,
                                                  const std::vector<const Tensor*>& outer_constants,
                                                  const std::vector<ValueKind>& outer_kinds);

 private:
  int add_slot(ExecutableGraph& g, const std::string& name, DataType dtype,
               ValueKind kind = ValueKind::kTensor) {
    assert(g.constants.size() < g.constants.capacity() && "slots must be reserved");
    g.slots.push_back({name, dtype, kind, false, std::string(kHostDevice)});
    g.constants.emplace_back();
    return int(g.slots.size()) - 1;
  }

  // The first provider (in the session's order) that supports the node.
  Expected<const ExecutionProvider*> choose_provider(const ir::Node& node, int64_t opset,
                                                     std::span<const DataType> input_types,
                                                     const std::string& context) const {
    std::string reason;
    for (const auto& p : options_.providers) {
      if (p->supports(node, opset, input_types)) return p.get();
      if (reason.empty()) reason = p->unsupported_reason(node, opset);
    }
    if (reason.empty())
      reason = str_cat("no execution provider of this session runs op '", node.op_type, "'");
    return not_implemented(context, reason);
  }

  const ExecutionProvider* provider_of_device(std::string_view device) const {
    for (const auto& p : options_.providers)
      if (p->device() == device) return p.get();
    return nullptr;
  }

  // The slot holding `slot`'s value on `device`: itself, or a copy a new step makes
  // (through the host when neither end is the host), made once per (value, device).
  Expected<int> on_device(ExecutableGraph& g, int slot, const std::string& device) {
    const std::string from = g.slots[size_t(slot)].device;
    if (from == device) return slot;
    if (auto it = copies_.find({slot, device}); it != copies_.end()) return it->second;
    const std::string& name = g.slots[size_t(slot)].name;
    if (g.slots[size_t(slot)].kind != ValueKind::kTensor)
      return not_implemented("value '", name, "' is a sequence on device '", from, "', needed on '",
                             device, "': only tensors are copied between devices");
    int source = slot;
    if (from != kHostDevice && device != kHostDevice) {
      NXRT_ASSIGN_OR_RETURN(source, on_device(g, slot, std::string(kHostDevice)));
    }
    const bool to_host = device == kHostDevice;
    const ExecutionProvider* copier = provider_of_device(to_host ? from : device);
    if (!copier)
      return make_error(StatusCode::kEngineError, "no provider of device '",
                        to_host ? from : device, "' to copy value '", name, "'");
    auto node = std::make_unique<ir::Node>();
    node->op_type = to_host ? "MemcpyToHost" : "MemcpyFromHost";
    node->name = name + (to_host ? "_to_host" : "_to_" + device);
    node->inputs = {g.slots[size_t(source)].name};
    node->outputs = {name + "@" + device};
    Step step;
    step.context = node_context(*node);
    NXRT_ASSIGN_OR_RETURN(step.kernel, copier->create_copy_kernel(to_host));
    step.provider = copier;
    step.node = node.get();
    step.inputs = {source};
    const int copy = add_slot(g, node->outputs[0], g.slots[size_t(slot)].dtype);
    g.slots[size_t(copy)].device = device;
    step.outputs = {copy};
    g.copy_nodes.push_back(std::move(node));
    g.steps.push_back(std::move(step));
    copies_[{slot, device}] = copy;
    return copy;
  }

  PlanOptions options_;
  // Copies made so far: (slot, device) -> the slot holding it there.
  std::map<std::pair<int, std::string>, int> copies_;
  // Constant implicit inputs of the node being prepared, by name (for compile()).
  std::unordered_map<std::string, const Tensor*> outer_constants_;
  std::unordered_map<std::string, ValueKind> outer_kinds_;
  // Implicit inputs of the node being prepared whose data a compiled subgraph reads.
  std::unordered_set<std::string> implicit_data_read_;
  bool compiled_subgraph_ = false;  // the node's factory compiled at least one subgraph
  std::vector<std::shared_ptr<const ExecutableGraph>> compiled_;  // every subgraph, in order
};

Expected<std::shared_ptr<ExecutableGraph>> Planner::plan(
    const ir::Graph& graph, const std::vector<std::string>& outer_names,
    const std::vector<DataType>& outer_types, const std::vector<DataType>& input_types,
    const std::vector<const Tensor*>& outer_constants, const std::vector<ValueKind>& outer_kinds) {
  const std::string graph_label = graph.name.empty() ? "graph" : "graph '" + graph.name + "'";
  if (int64_t(graph.nodes.size()) > options_.limits.max_nodes)
    return invalid_argument(graph_label, " has ", graph.nodes.size(), " nodes, over the ",
                            limit_text(kLimitMaxNodes, options_.limits.max_nodes));
  auto exe = std::make_shared<ExecutableGraph>();
  ExecutableGraph& g = *exe;
  g.limits = options_.limits;
  // Kernel prepare receives pointers into g.constants: reserve every slot up front so
  // adding slots never moves them.
  size_t slot_count = outer_names.size() + graph.inputs.size() + graph.initializers.size();
  for (const ir::Node& node : graph.nodes) slot_count += node.outputs.size();
  g.slots.reserve(slot_count);
  g.constants.reserve(slot_count);
  std::vector<bool> data_read(slot_count, false);  // by slot: some step reads its data
  std::unordered_map<std::string, int> slot_of;

  for (size_t i = 0; i < outer_names.size(); ++i) {
    const int s = add_slot(g, outer_names[i], outer_types[i],
                           i < outer_kinds.size() ? outer_kinds[i] : ValueKind::kTensor);
    slot_of[outer_names[i]] = s;
    g.outer_slots.push_back(s);
    if (i < outer_constants.size() && outer_constants[i])
      g.constants[size_t(s)] = *outer_constants[i];
  }

  std::unordered_map<std::string, const Tensor*> initializer_of;
  for (const auto& init : graph.initializers) {
    if (!initializer_of.emplace(init.name, &init.tensor).second)
      return invalid_graph(graph_label, ": duplicate initializer name '", init.name, "'");
  }

  std::unordered_set<std::string> input_names;
  for (size_t i = 0; i < graph.inputs.size(); ++i) {
    const ir::ValueInfo& in = graph.inputs[i];
    if (!input_names.insert(in.name).second)
      return invalid_graph(graph_label, ": duplicate graph input name '", in.name, "'");
    // Optional inputs take the kind of their element; sequences hold tensors.
    const ir::TypeInfo* type = &in.type;
    if (type->kind == ir::TypeInfo::Kind::kOptional && type->inner) type = type->inner.get();
    ValueKind kind = ValueKind::kTensor;
    if (type->kind == ir::TypeInfo::Kind::kSequence && type->inner) {
      kind = ValueKind::kSequence;
      type = type->inner.get();
    } else if (type->kind == ir::TypeInfo::Kind::kMap && type->inner &&
               type->inner->kind == ir::TypeInfo::Kind::kTensor) {
      kind = ValueKind::kMap;  // the slot's dtype is the value type; check_feed reads the key
      type = type->inner.get();
    }
    DataType dtype =
        type->kind == ir::TypeInfo::Kind::kTensor ? type->elem_type : DataType::kUndefined;
    if (i < input_types.size() && input_types[i] != DataType::kUndefined) dtype = input_types[i];
    auto init = initializer_of.find(in.name);
    if (init != initializer_of.end()) {
      if (!options_.inputs_override_initializers) continue;  // a plain initializer
      dtype = init->second->dtype();
    }
    if (type->kind != ir::TypeInfo::Kind::kTensor && type->kind != ir::TypeInfo::Kind::kUnknown)
      return not_implemented(graph_label, ": input '", in.name,
                             "' is a map, sparse tensor or nested sequence, which nxrt does not "
                             "support yet");
    const int s = add_slot(g, in.name, dtype, kind);
    slot_of[in.name] = s;  // shadows an outer value of the same name
    g.inputs.push_back(in);
    g.input_slots.push_back(s);
    g.input_overridable.push_back(init != initializer_of.end());
    g.input_required.push_back(init == initializer_of.end() &&
                               in.type.kind != ir::TypeInfo::Kind::kOptional);
    if (init != initializer_of.end()) g.constants[size_t(s)] = *init->second;
  }
  for (const auto& init : graph.initializers) {
    if (slot_of.count(init.name) && input_names.count(init.name)) continue;
    const int s = add_slot(g, init.name, init.tensor.dtype());
    slot_of[init.name] = s;
    g.constants[size_t(s)] = init.tensor;
  }

  // Producers, with duplicate checks.
  std::unordered_map<std::string, size_t> producer;
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    for (const auto& out : graph.nodes[n].outputs) {
      if (out.empty()) continue;
      if (input_names.count(out) || initializer_of.count(out) || !producer.emplace(out, n).second)
        return invalid_graph(graph.nodes[n].describe(), ": output '", out,
                             "' is already defined elsewhere in the ", graph_label,
                             " (duplicate value name)");
    }
  }

  // Implicit inputs of nodes with subgraphs, then a topological order (Kahn).
  std::vector<std::vector<std::string>> implicit(graph.nodes.size());
  std::vector<std::vector<size_t>> consumers(graph.nodes.size());
  std::vector<size_t> pending(graph.nodes.size(), 0);
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const ir::Node& node = graph.nodes[n];
    std::unordered_set<std::string> seen;
    for (const auto& attr : node.attributes) {
      std::vector<const ir::Graph*> subs;
      if (attr.g) subs.push_back(attr.g.get());
      for (const auto& sg : attr.graphs) subs.push_back(sg.get());
      for (const ir::Graph* sub : subs)
        for (const auto& name : ir::outer_names(*sub))
          if (seen.insert(name).second) implicit[n].push_back(name);
    }
    std::set<size_t> deps;
    auto depend = [&](const std::string& name, bool is_implicit) -> Status {
      if (name.empty()) return Status();
      auto p = producer.find(name);
      if (p != producer.end()) {
        if (p->second == n)
          return invalid_graph(node_context(node), "consumes its own output '", name, "'");
        deps.insert(p->second);
        return Status();
      }
      if (slot_of.count(name)) return Status();
      return invalid_graph(node_context(node), (is_implicit ? "a subgraph reads '" : "input '"),
                           name,
                           "', which is not produced by any node, nor a graph input, "
                           "initializer or outer-scope value of the ",
                           graph_label);
    };
    for (const auto& in : node.inputs) NXRT_RETURN_IF_ERROR(depend(in, false));
    for (const auto& in : implicit[n]) NXRT_RETURN_IF_ERROR(depend(in, true));
    pending[n] = deps.size();
    for (size_t d : deps) consumers[d].push_back(n);
  }
  std::vector<size_t> order;
  order.reserve(graph.nodes.size());
  for (size_t n = 0; n < graph.nodes.size(); ++n)
    if (pending[n] == 0) order.push_back(n);
  for (size_t head = 0; head < order.size(); ++head)
    for (size_t c : consumers[order[head]])
      if (--pending[c] == 0) order.push_back(c);
  if (order.size() != graph.nodes.size()) {
    for (size_t n = 0; n < graph.nodes.size(); ++n)
      if (pending[n] != 0)
        return invalid_graph(graph_label, " has a cycle: ", graph.nodes[n].describe(),
                             " depends (indirectly) on its own output");
  }

  // Room for copy steps between devices (one per input read, one per graph output): no
  // kernel holds a pointer into the slots yet, so growing them now is safe.
  if (options_.providers.empty())
    return invalid_argument(graph_label, ": no execution provider to plan it for");
  g.providers = options_.providers;
  size_t copy_room = graph.outputs.size();
  for (size_t n = 0; n < graph.nodes.size(); ++n)
    copy_room += graph.nodes[n].inputs.size() + implicit[n].size();
  g.slots.reserve(g.slots.capacity() + copy_room);
  g.constants.reserve(g.constants.capacity() + copy_room);
  data_read.resize(g.constants.capacity(), false);

  // Kernels, in order; output dtypes flow forward.
  for (size_t n : order) {
    const ir::Node& node = graph.nodes[n];
    Step step;
    step.node = &node;
    step.context = node_context(node);
    auto opset_it = options_.opset_imports.find(node.domain);
    if (opset_it == options_.opset_imports.end())
      return invalid_graph(step.context, "domain '", node.domain,
                           "' is not imported by the model (no opset_import for it)");
    // Every ONNX op has at least one output, and kernels rely on output 0 existing.
    if (node.outputs.empty())
      return invalid_graph(step.context, "has no outputs (every ONNX op has at least one)");
    KernelInit init(node);
    init.opset = opset_it->second;
    init.subgraphs = this;
    for (const auto& in : node.inputs) {
      if (in.empty()) {
        step.inputs.push_back(-1);
        init.input_types.push_back(DataType::kUndefined);
        init.input_kinds.push_back(ValueKind::kTensor);
        init.constant_inputs.push_back(nullptr);
        continue;
      }
      const int s = slot_of.at(in);
      step.inputs.push_back(s);
      init.input_types.push_back(g.slots[size_t(s)].dtype);
      init.input_kinds.push_back(g.slots[size_t(s)].kind);
      const Tensor& c = g.constants[size_t(s)];
      const bool fixed = c.defined() && std::find(g.input_slots.begin(), g.input_slots.end(), s) ==
                                            g.input_slots.end();
      init.constant_inputs.push_back(fixed ? &c : nullptr);
    }
    outer_constants_.clear();
    outer_kinds_.clear();
    implicit_data_read_.clear();
    compiled_subgraph_ = false;
    for (const auto& name : implicit[n]) {
      const int s = slot_of.at(name);
      outer_kinds_[name] = g.slots[size_t(s)].kind;
      init.implicit_kinds.push_back(g.slots[size_t(s)].kind);
      const Tensor& c = g.constants[size_t(s)];
      if (c.defined() &&
          std::find(g.input_slots.begin(), g.input_slots.end(), s) == g.input_slots.end())
        outer_constants_[name] = &c;
      step.implicit_inputs.push_back(s);
      init.implicit_inputs.push_back(name);
      init.implicit_types.push_back(g.slots[size_t(s)].dtype);
    }
    init.output_types.assign(node.outputs.size(), DataType::kUndefined);
    init.output_kinds.assign(node.outputs.size(), ValueKind::kTensor);

    // The spec first (arity, attributes, types: onnxruntime's load-time checks), then
    // which provider runs it.
    NXRT_RETURN_IF_ERROR(ops::check_node(node, init.opset, step.context));
    NXRT_RETURN_IF_ERROR(ops::check_types(
        node, init.opset, spec_types(init.input_types, init.input_kinds), step.context));
    NXRT_ASSIGN_OR_RETURN(step.provider,
                          choose_provider(node, init.opset, init.input_types, step.context));
    // Inputs on another device come through copy steps (placed before this one); the
    // kernel then sees them as run-time values, not constants.
    const std::string device(step.provider->device());
    for (size_t i = 0; i < step.inputs.size(); ++i) {
      if (step.inputs[i] < 0 || g.slots[size_t(step.inputs[i])].device == device) continue;
      NXRT_ASSIGN_OR_RETURN(step.inputs[i], on_device(g, step.inputs[i], device));
      init.constant_inputs[i] = nullptr;
    }
    for (int& s : step.implicit_inputs) {
      if (g.slots[size_t(s)].device == device) continue;
      NXRT_ASSIGN_OR_RETURN(s, on_device(g, s, device));
    }
    auto kernel = step.provider->create_kernel(init);
    if (!kernel) return std::move(kernel).status();
    step.kernel = std::move(kernel).value();

    for (size_t o = 0; o < node.outputs.size(); ++o) {
      if (init.output_types[o] == DataType::kUndefined)
        return make_error(StatusCode::kEngineError, step.context, "output ", o,
                          " has no type after prepare (kernel bug)");
      const int s = add_slot(g, node.outputs[o], init.output_types[o], init.output_kinds[o]);
      g.slots[size_t(s)].device = device;
      if (!node.outputs[o].empty()) slot_of[node.outputs[o]] = s;
      step.outputs.push_back(s);
    }

    // A Constant node's tensor attribute becomes the slot's value as is: it already views
    // the mapped model (or owns its decoded copy), so folding it would copy the weights.
    if (node.op_type == "Constant" && node.domain.empty() && step.outputs.size() == 1) {
      const ir::Attribute* value = node.find_attribute("value");
      if (value && value->type == ir::Attribute::Type::kTensor && value->t.defined()) {
        g.constants[size_t(step.outputs[0])] = value->t;
        continue;
      }
    }

    // Constant folding: a deterministic node whose inputs are all constants runs now,
    // once, and its outputs become constants (Constant nodes, shape arithmetic on
    // initializers, weight transposes). A failure here is left for run time to report.
    bool foldable = options_.fold_constants && device == kHostDevice &&
                    step.implicit_inputs.empty() && !is_nondeterministic(node);
    for (ValueKind k : init.output_kinds) foldable &= k == ValueKind::kTensor;
    std::vector<const Tensor*> fold_inputs;
    for (size_t i = 0; foldable && i < step.inputs.size(); ++i) {
      const Tensor* c = step.inputs[i] < 0 ? nullptr : init.constant_inputs[i];
      if (step.inputs[i] >= 0 && !c) foldable = false;
      fold_inputs.push_back(c);
    }
    if (foldable) {
      FoldContext fold(fold_inputs, init.output_types, options_.limits);
      if (step.kernel->compute(fold).ok()) {
        bool complete = true;
        for (const Tensor& t : fold.results()) complete &= t.defined();
        if (complete) {
          for (size_t o = 0; o < step.outputs.size(); ++o)
            g.constants[size_t(step.outputs[o])] = std::move(fold.results()[o]);
          continue;
        }
      }
    }
    g.max_step_inputs = std::max(g.max_step_inputs, step.inputs.size());
    for (size_t i = 0; i < step.inputs.size(); ++i)
      if (step.inputs[i] >= 0 && !init.absorbed(i)) data_read[size_t(step.inputs[i])] = true;
    for (size_t i = 0; i < step.implicit_inputs.size(); ++i)
      if (!compiled_subgraph_ || implicit_data_read_.count(init.implicit_inputs[i]))
        data_read[size_t(step.implicit_inputs[i])] = true;
    g.steps.push_back(std::move(step));
  }

  for (const auto& out : graph.outputs) {
    auto it = slot_of.find(out.name);
    if (it == slot_of.end())
      return invalid_graph(graph_label, ": output '", out.name, "' is never produced");
    int s = it->second;
    if (g.slots[size_t(s)].device != kHostDevice) {  // callers get host tensors
      NXRT_ASSIGN_OR_RETURN(s, on_device(g, s, std::string(kHostDevice)));
    }
    g.outputs.push_back(out);
    g.output_slots.push_back(s);
    g.slots[size_t(s)].is_graph_output = true;
  }
  // Constants that only fed folded nodes are dead now: drop them so a session holds one
  // copy of its weights, not every intermediate of their folding.
  // Constants that steps read only through kernels that absorbed them (packed weights),
  // or only through subgraphs that folded them, keep their dtype and shape (which compute
  // still checks) but not their data. An enclosing graph learns through outer_data_read
  // which of its values this graph reads, so it can do the same.
  std::vector<bool> live(g.slots.size(), false);
  for (const Step& step : g.steps) {
    for (int s : step.inputs)
      if (s >= 0) live[size_t(s)] = true;
    for (int s : step.implicit_inputs) live[size_t(s)] = true;
  }
  for (const std::vector<int>* pinned : {&g.output_slots, &g.input_slots})
    for (int s : *pinned) live[size_t(s)] = data_read[size_t(s)] = true;
  for (int s : g.outer_slots) {
    live[size_t(s)] = true;
    g.outer_data_read.push_back(data_read[size_t(s)]);
  }
  for (size_t s = 0; s < g.slots.size(); ++s) {
    Tensor& c = g.constants[s];
    if (!live[s])
      c = Tensor();
    else if (!data_read[s] && c.defined())
      c = Tensor(c.dtype(), c.shape(), nullptr);
  }

  g.output_index_of_slot.assign(g.slots.size(), -1);
  for (size_t i = g.output_slots.size(); i-- > 0;)
    g.output_index_of_slot[size_t(g.output_slots[i])] = int(i);

  // Lifetimes: release each produced, non-output value after its last reader.
  std::vector<int> last_use(g.slots.size(), -1);
  for (size_t i = 0; i < g.steps.size(); ++i) {
    const Step& step = g.steps[i];
    for (int s : step.outputs) last_use[size_t(s)] = int(i);
    for (int s : step.inputs)
      if (s >= 0) last_use[size_t(s)] = int(i);
    for (int s : step.implicit_inputs) last_use[size_t(s)] = int(i);
  }
  for (size_t i = 0; i < g.steps.size(); ++i) {
    for (int s : g.steps[i].outputs) {
      if (g.slots[size_t(s)].is_graph_output || g.constants[size_t(s)].defined()) continue;
      g.steps[size_t(last_use[size_t(s)])].release_after.push_back(s);
    }
  }
  for (Step& step : g.steps) step.overwritable_input = overwritable_input(g, step);
  g.subgraphs = std::move(compiled_);
  return exe;
}

}  // namespace

Expected<std::vector<Tensor>> fold_node(const ir::Node& node, int64_t opset,
                                        std::span<const Tensor* const> inputs,
                                        const Limits& limits) {
  const std::string context = node_context(node);
  if (is_nondeterministic(node)) return invalid_argument(context, "is not deterministic");
  for (const auto& attr : node.attributes)
    if (attr.g || !attr.graphs.empty()) return invalid_argument(context, "has subgraphs");
  if (node.outputs.empty() || inputs.size() != node.inputs.size())
    return invalid_argument(context, "is not a foldable node");
  const cpu::KernelEntry* entry = cpu::find_kernel(node.domain, node.op_type, opset);
  if (!entry) return not_implemented(context, "has no kernel for opset ", opset);
  NXRT_RETURN_IF_ERROR(ops::check_node(node, opset, context));
  KernelInit init(node);
  init.opset = opset;
  for (const Tensor* t : inputs) {
    init.input_types.push_back(t ? t->dtype() : DataType::kUndefined);
    init.input_kinds.push_back(ValueKind::kTensor);
    init.constant_inputs.push_back(t);
  }
  init.output_types.assign(node.outputs.size(), DataType::kUndefined);
  init.output_kinds.assign(node.outputs.size(), ValueKind::kTensor);
  NXRT_ASSIGN_OR_RETURN(KernelPtr kernel, entry->factory(init));
  for (size_t o = 0; o < node.outputs.size(); ++o)
    if (init.output_types[o] == DataType::kUndefined || init.output_kinds[o] != ValueKind::kTensor)
      return invalid_argument(context, "output ", o, " is not a tensor of a known type");
  FoldContext fold(inputs, init.output_types, limits);
  NXRT_RETURN_IF_ERROR(kernel->compute(fold));
  for (const Tensor& t : fold.results())
    if (!t.defined()) return invalid_argument(context, "left an output unset");
  return std::move(fold.results());
}

std::string describe_plan(const ExecutableGraph& graph) {
  std::string out;
  auto names = [&](const std::vector<int>& slots) {
    std::string list;
    for (int s : slots)
      list += str_cat(list.empty() ? "" : ", ", s < 0 ? "(none)" : graph.slots[size_t(s)].name);
    return list;
  };
  for (size_t i = 0; i < graph.steps.size(); ++i) {
    const Step& step = graph.steps[i];
    const ir::Node& node = *step.node;
    const std::string op = node.domain.empty() ? node.op_type : node.domain + ":" + node.op_type;
    out +=
        str_cat(i, "  ", op, " '", node.name, "'  [", step.provider ? step.provider->name() : "?",
                "]  ", names(step.inputs), " -> ", names(step.outputs), "\n");
  }
  return out;
}

Expected<std::shared_ptr<ExecutableGraph>> plan_graph(
    const ir::Graph& graph, const PlanOptions& options, const std::vector<std::string>& outer_names,
    const std::vector<DataType>& outer_types, const std::vector<DataType>& input_types,
    const std::vector<const Tensor*>& outer_constants, const std::vector<ValueKind>& outer_kinds) {
  Planner planner(options);
  return planner.plan(graph, outer_names, outer_types, input_types, outer_constants, outer_kinds);
}

}  // namespace nxrt
