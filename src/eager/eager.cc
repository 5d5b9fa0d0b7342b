#include "eager/eager.h"

#include <array>

#include "ep/cpu/cpu_provider.h"

namespace nxrt::eager {
namespace {

template <typename T>
void append_pod(std::string& key, const T& value) {
  key.append(reinterpret_cast<const char*>(&value), sizeof(T));
}

void append_bytes(std::string& key, const std::string& s) {
  append_pod(key, uint64_t(s.size()));
  key.append(s);
}

void append_tensor(std::string& key, const Tensor& t) {
  append_pod(key, uint8_t(t.dtype()));
  append_pod(key, uint8_t(t.rank()));
  for (int64_t d : t.shape()) append_pod(key, d);
  if (t.dtype() == DataType::kString) {
    for (int64_t i = 0; i < t.numel(); ++i) append_bytes(key, t.data<std::string>()[i]);
  } else {
    key.append(static_cast<const char*>(t.raw()), t.nbytes());
  }
}

}  // namespace

Expected<std::shared_ptr<PreparedOp>> PreparedOp::create(OpSpec spec) {
  if (spec.domain == "ai.onnx") spec.domain.clear();
  if (spec.op_type.empty()) return invalid_argument("eager op: the op type is empty");
  if (spec.num_outputs == 0)
    return invalid_argument("[", spec.op_type, "] an op must have at least one output");
  auto op = std::shared_ptr<PreparedOp>(new PreparedOp());
  op->graph_ = std::make_unique<ir::Graph>();
  ir::Graph& graph = *op->graph_;
  graph.name = "eager " + spec.op_type;
  ir::Node node;
  node.name = "eager";
  node.op_type = spec.op_type;
  node.domain = spec.domain;
  node.attributes = std::move(spec.attributes);
  size_t used_inputs = spec.input_types.size();
  // Trailing omitted inputs are left off the node, as ONNX writers do.
  while (used_inputs > 0 && spec.input_types[used_inputs - 1] == DataType::kUndefined)
    --used_inputs;
  op->input_index_.assign(spec.input_types.size(), -1);
  std::vector<DataType> input_types;
  for (size_t i = 0; i < used_inputs; ++i) {
    const DataType type = spec.input_types[i];
    if (type == DataType::kUndefined) {
      node.inputs.emplace_back();
      continue;
    }
    ir::ValueInfo info;
    info.name = "input_" + std::to_string(i);
    const bool is_sequence =
        i < spec.input_kinds.size() && spec.input_kinds[i] == ValueKind::kSequence;
    ir::TypeInfo tensor_type;
    tensor_type.kind = ir::TypeInfo::Kind::kTensor;
    tensor_type.elem_type = type;
    if (is_sequence) {
      info.type.kind = ir::TypeInfo::Kind::kSequence;
      info.type.inner = std::make_shared<ir::TypeInfo>(tensor_type);
    } else {
      info.type = tensor_type;
    }
    node.inputs.push_back(info.name);
    op->input_index_[i] = int(graph.inputs.size());
    graph.inputs.push_back(std::move(info));
    input_types.push_back(type);
  }
  for (size_t o = 0; o < spec.num_outputs; ++o) {
    ir::ValueInfo info;
    info.name = "output_" + std::to_string(o);
    // Optional-typed, so an op that legitimately produces no value (Optional with no
    // input) returns an empty optional instead of failing.
    info.type.kind = ir::TypeInfo::Kind::kOptional;
    node.outputs.push_back(info.name);
    graph.outputs.push_back(std::move(info));
  }
  graph.nodes.push_back(std::move(node));

  PlanOptions options;
  options.opset_imports[spec.domain] = spec.opset;
  options.inputs_override_initializers = false;
  options.fold_constants = false;  // nothing may run at prepare time
  options.providers = {cpu::cpu_provider()};
  auto plan = plan_graph(graph, options, {}, {}, input_types);
  if (!plan) {
    Status status = std::move(plan).status();
    // The "graph" is the caller's op call, so a bad attribute is a bad argument here.
    if (status.code() == StatusCode::kInvalidGraph)
      return Status(StatusCode::kInvalidArgument, status.message());
    // With one node, the only engine error of planning is an output the kernel did not
    // declare: the caller asked for more outputs than the op has.
    if (status.code() == StatusCode::kEngineError)
      return invalid_argument("[", graph.nodes[0].op_type, "] asked for ", graph.outputs.size(),
                              " outputs, more than the op produces (", status.message(), ")");
    return status;
  }
  op->plan_ = std::move(plan).value();
  return op;
}

Status PreparedOp::run(std::span<const Value> inputs, std::vector<Value>& outputs) const {
  if (inputs.size() != input_index_.size())
    return invalid_argument("[", op_type(), "] expected ", input_index_.size(), " inputs, got ",
                            inputs.size());
  const size_t n = plan_->input_slots.size();
  std::array<const Value*, 16> small{};
  std::vector<const Value*> large;
  const Value** feeds = small.data();
  if (n > small.size()) {
    large.assign(n, nullptr);
    feeds = large.data();
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const int index = input_index_[i];
    if (index < 0) continue;
    if (inputs[i].is_none())
      return invalid_argument("[", op_type(), "] input ", i, " has no value");
    feeds[index] = &inputs[i];
  }
  auto state = states_.acquire();
  Status status = execute_graph(*plan_, *state, std::span<const Value* const>(feeds, n), {},
                                outputs, RunFlags{});
  states_.release(std::move(state));
  return status;
}

std::shared_ptr<const PreparedOp> OpCache::find(const std::string& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = index_.find(key);
  if (it == index_.end()) {
    ++misses_;
    return nullptr;
  }
  ++hits_;
  if (it->second != lru_.begin()) lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->second;
}

std::shared_ptr<const PreparedOp> OpCache::insert(const std::string& key,
                                                  std::shared_ptr<const PreparedOp> op) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = index_.find(key);
  if (it != index_.end()) return it->second->second;  // another thread prepared it first
  lru_.emplace_front(key, std::move(op));
  index_.emplace(key, lru_.begin());
  evict_locked();
  return lru_.front().second;
}

void OpCache::evict_locked() {
  while (lru_.size() > capacity_ && !lru_.empty()) {
    index_.erase(lru_.back().first);
    lru_.pop_back();  // runs in flight keep their op alive through their shared_ptr
  }
}

CacheStats OpCache::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return {lru_.size(), hits_, misses_};
}

void OpCache::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  index_.clear();
  lru_.clear();
  hits_ = misses_ = 0;
}

void OpCache::set_capacity(size_t capacity) {
  std::lock_guard<std::mutex> lock(mutex_);
  capacity_ = capacity;
  evict_locked();
}

OpCache& global_cache() {
  static OpCache* cache = new OpCache();  // never destroyed: outlives late callers at exit
  return *cache;
}

void append_key(std::string& key, const OpSpec& spec, std::span<const int> input_ranks) {
  key.push_back('C');  // C++ callers' key format (other formats use other first bytes)
  append_bytes(key, spec.domain == "ai.onnx" ? std::string() : spec.domain);
  append_bytes(key, spec.op_type);
  append_pod(key, spec.opset);
  append_pod(key, uint64_t(spec.num_outputs));
  append_pod(key, uint64_t(spec.attributes.size()));
  for (const ir::Attribute& a : spec.attributes) {
    append_bytes(key, a.name);
    append_pod(key, uint8_t(a.type));
    switch (a.type) {
      case ir::Attribute::Type::kFloat:
        append_pod(key, a.f);
        break;
      case ir::Attribute::Type::kInt:
        append_pod(key, a.i);
        break;
      case ir::Attribute::Type::kString:
        append_bytes(key, a.s);
        break;
      case ir::Attribute::Type::kTensor:
        append_tensor(key, a.t);
        break;
      case ir::Attribute::Type::kFloats:
        append_pod(key, uint64_t(a.floats.size()));
        for (float f : a.floats) append_pod(key, f);
        break;
      case ir::Attribute::Type::kInts:
        append_pod(key, uint64_t(a.ints.size()));
        for (int64_t i : a.ints) append_pod(key, i);
        break;
      case ir::Attribute::Type::kStrings:
        append_pod(key, uint64_t(a.strings.size()));
        for (const std::string& s : a.strings) append_bytes(key, s);
        break;
      case ir::Attribute::Type::kTensors:
        append_pod(key, uint64_t(a.tensors.size()));
        for (const Tensor& t : a.tensors) append_tensor(key, t);
        break;
      default:
        // Graphs and type protos have no cheap canonical form: make the key unique.
        append_pod(key, reinterpret_cast<uintptr_t>(&a));
        break;
    }
  }
  append_pod(key, uint64_t(spec.input_types.size()));
  for (size_t i = 0; i < spec.input_types.size(); ++i) {
    append_pod(key, uint8_t(spec.input_types[i]));
    append_pod(key,
               uint8_t(i < spec.input_kinds.size() ? spec.input_kinds[i] : ValueKind::kTensor));
    append_pod(key, int32_t(i < input_ranks.size() ? input_ranks[i] : -1));
  }
}

Status run(const OpSpec& spec, std::span<const Value> inputs, std::vector<Value>& outputs) {
  std::vector<int> ranks;
  for (const Value& v : inputs)
    ranks.push_back(v.is_sequence() || v.is_none() ? -1 : int(v.tensor.rank()));
  std::string key;
  append_key(key, spec, ranks);
  OpCache& cache = global_cache();
  std::shared_ptr<const PreparedOp> op = cache.find(key);
  if (!op) {
    NXRT_ASSIGN_OR_RETURN(std::shared_ptr<PreparedOp> created, PreparedOp::create(spec));
    op = cache.insert(key, std::move(created));
  }
  return op->run(inputs, outputs);
}

}  // namespace nxrt::eager
