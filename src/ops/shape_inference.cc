#include "ops/shape_inference.h"

#include <deque>
#include <unordered_set>

#include "core/half.h"
#include "ops/shape_rules.h"

namespace nxrt::ops {
namespace {

const ValueFacts& unknown_facts() {
  static const ValueFacts kUnknown;
  return kUnknown;
}

// A constant's elements as doubles (numeric types only); nullopt for large tensors.
std::optional<std::vector<double>> constant_numbers(const Tensor& t) {
  constexpr int64_t kMaxRead = 1 << 16;
  if (t.numel() > kMaxRead) return std::nullopt;
  const size_t n = size_t(t.numel());
  std::vector<double> out(n);
  switch (t.dtype()) {
    case DataType::kInt64:
      for (size_t i = 0; i < n; ++i) out[i] = double(t.data<int64_t>()[i]);
      return out;
    case DataType::kInt32:
      for (size_t i = 0; i < n; ++i) out[i] = double(t.data<int32_t>()[i]);
      return out;
    case DataType::kFloat:
      for (size_t i = 0; i < n; ++i) out[i] = double(t.data<float>()[i]);
      return out;
    case DataType::kDouble:
      for (size_t i = 0; i < n; ++i) out[i] = t.data<double>()[i];
      return out;
    case DataType::kFloat16:
      for (size_t i = 0; i < n; ++i) out[i] = double(float(t.data<Float16>()[i]));
      return out;
    default:
      return std::nullopt;
  }
}

// Read as integers, not through doubles: INT64_MAX ("to the end") must stay exact.
std::optional<std::vector<int64_t>> constant_ints(const Tensor& t) {
  constexpr int64_t kMaxRead = 1 << 16;
  if (t.numel() > kMaxRead) return std::nullopt;
  const size_t n = size_t(t.numel());
  if (t.dtype() == DataType::kInt64)
    return std::vector<int64_t>(t.data<int64_t>(), t.data<int64_t>() + n);
  if (t.dtype() == DataType::kInt32)
    return std::vector<int64_t>(t.data<int32_t>(), t.data<int32_t>() + n);
  return std::nullopt;
}

// Nodes in an order where every producer comes before its consumers (Kahn); nodes on a
// cycle or fed by a missing producer come last, in graph order.
std::vector<size_t> topological_order(const ir::Graph& graph) {
  std::unordered_map<std::string_view, size_t> producer;
  for (size_t i = 0; i < graph.nodes.size(); ++i)
    for (const std::string& out : graph.nodes[i].outputs)
      if (!out.empty()) producer.emplace(out, i);
  std::vector<std::vector<size_t>> consumers(graph.nodes.size());
  std::vector<size_t> waiting(graph.nodes.size(), 0);
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    std::unordered_set<size_t> seen;
    // Values a subgraph reads from this scope are inputs too (an If branch's outer reads).
    std::vector<std::string> reads = graph.nodes[i].inputs;
    for (const ir::Graph* sub : ir::subgraphs_of(graph.nodes[i]))
      for (const std::string& name : ir::outer_names(*sub)) reads.push_back(name);
    for (const std::string& in : reads) {
      auto it = in.empty() ? producer.end() : producer.find(in);
      if (it == producer.end() || it->second == i || !seen.insert(it->second).second) continue;
      consumers[it->second].push_back(i);
      ++waiting[i];
    }
  }
  std::vector<size_t> order;
  std::deque<size_t> ready;
  for (size_t i = 0; i < graph.nodes.size(); ++i)
    if (waiting[i] == 0) ready.push_back(i);
  std::vector<bool> done(graph.nodes.size(), false);
  while (!ready.empty()) {
    const size_t i = ready.front();
    ready.pop_front();
    order.push_back(i);
    done[i] = true;
    for (size_t c : consumers[i])
      if (--waiting[c] == 0) ready.push_back(c);
  }
  for (size_t i = 0; i < graph.nodes.size(); ++i)
    if (!done[i]) order.push_back(i);
  return order;
}

// If: each output gets what both branches agree on (a dim both give as the same number
// or symbol; otherwise unknown), or the taken branch's shapes when the condition is known.
Status infer_if(InferContext& ctx, const std::unordered_map<std::string, ValueFacts>& scope,
                const std::map<std::string, int64_t>& opsets, ShapeInferenceResult& parent) {
  const ir::Attribute* then_branch = ctx.node().find_attribute("then_branch");
  const ir::Attribute* else_branch = ctx.node().find_attribute("else_branch");
  if (!then_branch || !else_branch || !then_branch->g || !else_branch->g) return Status();
  ShapeInferenceOptions options;
  options.outer = &scope;
  auto branch_outputs = [&](const ir::Graph& g) {
    ShapeInferenceResult r = infer_shapes(g, opsets, options);
    parent.conflicts.insert(parent.conflicts.end(), r.conflicts.begin(), r.conflicts.end());
    parent.ops_without_rule.insert(r.ops_without_rule.begin(), r.ops_without_rule.end());
    std::vector<SymShape> outs;
    for (const ir::ValueInfo& v : g.outputs) {
      auto it = r.values.find(v.name);
      outs.push_back(it == r.values.end() ? declared_shape(v.type) : it->second.shape);
    }
    return outs;
  };
  std::optional<std::vector<int64_t>> cond = ctx.ints(0);
  if (cond && cond->size() == 1) {
    const ir::Graph& taken = (*cond)[0] ? *then_branch->g : *else_branch->g;
    std::vector<SymShape> outs = branch_outputs(taken);
    for (size_t i = 0; i < outs.size(); ++i) ctx.set_shape(i, std::move(outs[i]));
    return Status();
  }
  std::vector<SymShape> a = branch_outputs(*then_branch->g), b = branch_outputs(*else_branch->g);
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    if (!a[i].rank_known || !b[i].rank_known || a[i].rank() != b[i].rank()) continue;
    SymShape agreed = SymShape::of_rank(a[i].rank());
    for (size_t d = 0; d < a[i].rank(); ++d)
      if (a[i].dims[d].same_as(b[i].dims[d])) agreed.dims[d] = a[i].dims[d];
    ctx.set_shape(i, std::move(agreed));
  }
  return Status();
}

}  // namespace

ValueFacts constant_facts(const Tensor& t) {
  ValueFacts f;
  f.shape = SymShape::of_ints(std::span<const int64_t>(t.shape().begin(), t.shape().end()));
  if (size_t(t.numel()) <= kMaxTrackedElements) {
    if (std::optional<std::vector<int64_t>> ints = constant_ints(t)) {
      f.elements.emplace();
      for (int64_t v : *ints) f.elements->push_back(SymDim::of(v));
    }
  }
  return f;
}

const ValueFacts& InferContext::input(size_t i) const {
  return has_input(i) ? *inputs_[i] : unknown_facts();
}

std::optional<std::vector<int64_t>> InferContext::ints(size_t i) const {
  if (std::optional<std::vector<int64_t>> v = input(i).int_elements()) return v;
  if (const Tensor* t = constant(i)) return constant_ints(*t);
  return std::nullopt;
}

std::optional<std::vector<double>> InferContext::numbers(size_t i) const {
  if (const Tensor* t = constant(i)) return constant_numbers(*t);
  if (std::optional<std::vector<int64_t>> v = input(i).int_elements())
    return std::vector<double>(v->begin(), v->end());
  return std::nullopt;
}

std::optional<std::vector<SymDim>> InferContext::elements(size_t i) const {
  if (input(i).elements) return input(i).elements;
  if (const Tensor* t = constant(i); t && size_t(t->numel()) > kMaxTrackedElements)
    return std::nullopt;
  if (std::optional<std::vector<int64_t>> v = ints(i)) {
    std::vector<SymDim> out;
    for (int64_t x : *v) out.push_back(SymDim::of(x));
    return out;
  }
  return std::nullopt;
}

ShapeRule find_shape_rule(std::string_view domain, std::string_view op_type) {
  struct Key {
    std::string_view domain, op;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      return std::hash<std::string_view>()(k.op) * 31 + std::hash<std::string_view>()(k.domain);
    }
  };
  static const std::unordered_map<Key, ShapeRule, KeyHash> kRules = {
#define NXRT_SHAPE_RULE(domain, op, rule) {Key{domain, op}, &rules::rule},
#include "ops/shape_rules.inc"
#undef NXRT_SHAPE_RULE
  };
  if (domain == "ai.onnx") domain = "";
  auto it = kRules.find(Key{domain, op_type});
  return it == kRules.end() ? nullptr : it->second;
}

std::string ShapeInferenceResult::shape_text(const std::string& name) const {
  auto it = values.find(name);
  return it == values.end() ? "?" : it->second.shape.text();
}

SymShape declared_shape(const ir::TypeInfo& type) {
  if (type.kind != ir::TypeInfo::Kind::kTensor || !type.has_shape) return SymShape::unknown();
  SymShape s = SymShape::of_rank(type.dims.size());
  for (size_t i = 0; i < type.dims.size(); ++i) {
    const ir::Dim& d = type.dims[i];
    if (d.value >= 0)
      s.dims[i] = SymDim::of(d.value);
    else if (!d.param.empty())
      s.dims[i] = SymDim::named(d.param);
  }
  return s;
}

ShapeInferenceResult infer_shapes(const ir::Graph& graph,
                                  const std::map<std::string, int64_t>& opsets,
                                  const ShapeInferenceOptions& options) {
  ShapeInferenceResult result;
  auto& facts = result.values;
  std::unordered_map<std::string, const Tensor*> constants;

  if (options.outer)
    for (const auto& [name, f] : *options.outer) facts[name] = f;
  // A symbol a given input shape fixes ("batch" of a declared [batch, 512] fed as
  // [1, 512]) has that size in every other declaration too.
  std::unordered_map<std::string, int64_t> bound;
  for (const ir::ValueInfo& in : graph.inputs) {
    auto given = options.input_shapes.find(in.name);
    if (given == options.input_shapes.end()) continue;
    const SymShape declared = declared_shape(in.type);
    if (!declared.rank_known || declared.rank() != given->second.rank()) continue;
    for (size_t i = 0; i < declared.rank(); ++i)
      if (!declared.dims[i].symbol.empty() && given->second.dims[i].known())
        bound.emplace(declared.dims[i].symbol, given->second.dims[i].value);
  }
  auto declared_with_bound = [&bound](const ir::TypeInfo& type) {
    SymShape shape = declared_shape(type);
    for (SymDim& d : shape.dims)
      if (auto it = d.symbol.empty() ? bound.end() : bound.find(d.symbol); it != bound.end())
        d = SymDim::of(it->second);
    return shape;
  };
  for (const ir::Initializer& init : graph.initializers) {
    facts[init.name] = constant_facts(init.tensor);
    constants[init.name] = &init.tensor;
  }
  for (const ir::ValueInfo& in : graph.inputs) {
    auto given = options.input_shapes.find(in.name);
    const bool constant = constants.count(in.name) > 0;
    if (given != options.input_shapes.end()) {
      constants.erase(in.name);  // a fed value replaces the initializer's data
      facts[in.name] = ValueFacts{given->second, std::nullopt};
    } else if (!constant || options.inputs_override_initializers) {
      constants.erase(in.name);
      facts[in.name] = ValueFacts{declared_with_bound(in.type), std::nullopt};
    }
  }
  std::unordered_map<std::string_view, const ir::TypeInfo*> declared;
  if (options.use_value_info) {
    for (const ir::ValueInfo& v : graph.value_info) declared.emplace(v.name, &v.type);
    for (const ir::ValueInfo& v : graph.outputs) declared.emplace(v.name, &v.type);
  }

  for (size_t index : topological_order(graph)) {
    const ir::Node& node = graph.nodes[index];
    std::vector<const ValueFacts*> inputs;
    std::vector<const Tensor*> node_constants;
    for (const std::string& name : node.inputs) {
      auto f = name.empty() ? facts.end() : facts.find(name);
      inputs.push_back(f == facts.end() ? (name.empty() ? nullptr : &unknown_facts()) : &f->second);
      auto c = name.empty() ? constants.end() : constants.find(name);
      node_constants.push_back(c == constants.end() ? nullptr : c->second);
    }
    std::string domain = node.domain == "ai.onnx" ? "" : node.domain;
    auto opset_it = opsets.find(domain);
    const int64_t opset = opset_it == opsets.end() ? 0 : opset_it->second;
    InferContext ctx(node, opset, std::move(inputs), std::move(node_constants));

    if (domain.empty() && node.op_type == "If") {
      Status st = infer_if(ctx, facts, opsets, result);
      if (!st.ok()) result.conflicts.push_back(node_context(node) + st.message());
    } else if (ShapeRule rule = find_shape_rule(domain, node.op_type)) {
      Status st = rule(ctx);
      if (!st.ok()) {
        result.conflicts.push_back(node_context(node) + st.message());
        for (ValueFacts& out : ctx.outputs()) out = ValueFacts{};
      }
    } else {
      result.ops_without_rule.insert(domain.empty() ? node.op_type : domain + ":" + node.op_type);
    }
    if (node.op_type == "Constant" && domain.empty() && !node.outputs.empty())
      if (const ir::Attribute* value = node.find_attribute("value"))
        constants[node.outputs[0]] = &value->t;

    for (size_t i = 0; i < node.outputs.size(); ++i) {
      const std::string& name = node.outputs[i];
      if (name.empty()) continue;
      ValueFacts out = std::move(ctx.output(i));
      auto d = declared.find(name);
      if (d != declared.end()) {
        Expected<SymShape> merged = merge_shapes(out.shape, declared_with_bound(*d->second));
        if (merged.ok())
          out.shape = std::move(*merged);
        else
          result.conflicts.push_back(
              node_context(node) + "output '" + name +
              "' is declared with another shape: " + merged.status().message());
      }
      facts[name] = std::move(out);
    }
  }
  return result;
}

}  // namespace nxrt::ops
