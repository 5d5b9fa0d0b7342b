#include "optimizer/inline_functions.h"

#include <unordered_map>

#include "core/limits.h"
#include "optimizer/passes/passes.h"

namespace nxrt::optimizer {
namespace {

constexpr int kMaxInlineDepth = 32;

using FunctionMap = std::unordered_map<std::string, const ir::Function*>;

std::string function_key(const std::string& domain, const std::string& name) {
  return domain + "::" + name;
}

// The attributes of a body node after resolving ref_attr_name against the call site.
std::vector<ir::Attribute> bind_attributes(const ir::Node& body_node, const ir::Node& call,
                                           const ir::Function& fn) {
  std::vector<ir::Attribute> out;
  for (const ir::Attribute& a : body_node.attributes) {
    if (a.ref_attr_name.empty()) {
      out.push_back(a);
      continue;
    }
    const ir::Attribute* given = call.find_attribute(a.ref_attr_name);
    if (!given) {
      for (const ir::Attribute& d : fn.attribute_defaults)
        if (d.name == a.ref_attr_name) given = &d;
    }
    if (!given) continue;  // unset optional attribute: the op's own default applies
    ir::Attribute bound = *given;
    bound.name = a.name;
    out.push_back(std::move(bound));
  }
  return out;
}

struct Budget {
  int64_t counter = 0;  // expansions so far, to name their internal values
  int64_t nodes = 0;    // nodes created by expansions so far
  int64_t max_nodes = 0;
};

Status inline_graph(ir::Graph& graph, const FunctionMap& functions, int depth, Budget& budget);

Status expand_call(const ir::Node& call, const ir::Function& fn, const FunctionMap& functions,
                   int depth, Budget& budget, std::vector<ir::Node>& out) {
  if (depth > kMaxInlineDepth)
    return invalid_graph("function '", fn.name, "' calls itself (or nests deeper than ",
                         kMaxInlineDepth, " levels)");
  budget.nodes += int64_t(fn.nodes.size());
  if (budget.nodes > budget.max_nodes)
    return invalid_argument("inlining function '", fn.name, "' creates more than ",
                            budget.max_nodes, " nodes, over the ",
                            limit_text(kLimitMaxNodes, budget.max_nodes));
  int64_t& counter = budget.counter;
  const std::string prefix = "__" + fn.name + "_" + std::to_string(counter++) + "/";
  std::unordered_map<std::string, std::string> names;
  for (size_t i = 0; i < fn.inputs.size(); ++i)
    names[fn.inputs[i]] = i < call.inputs.size() ? call.inputs[i] : "";
  for (size_t i = 0; i < fn.outputs.size(); ++i)
    if (i < call.outputs.size()) names[fn.outputs[i]] = call.outputs[i];
  auto mapped = [&](const std::string& name) -> std::string {
    if (name.empty()) return name;
    auto it = names.find(name);
    if (it != names.end()) return it->second;
    return names[name] = prefix + name;  // a value internal to this expansion
  };
  ir::Graph body;
  for (const ir::Node& node : fn.nodes) {
    ir::Node copy = node;
    copy.name = prefix + node.name;
    for (std::string& in : copy.inputs) in = mapped(in);
    for (std::string& o : copy.outputs) o = mapped(o);
    copy.attributes = bind_attributes(node, call, fn);
    for (ir::Attribute& a : copy.attributes) {
      if (a.g) {
        a.g = std::make_shared<ir::Graph>(*a.g);
        ir::rename_reads(*a.g, names);
      }
      for (auto& g : a.graphs) {
        g = std::make_shared<ir::Graph>(*g);
        ir::rename_reads(*g, names);
      }
    }
    body.nodes.push_back(std::move(copy));
  }
  NXRT_RETURN_IF_ERROR(inline_graph(body, functions, depth + 1, budget));
  for (ir::Node& n : body.nodes) out.push_back(std::move(n));
  return Status();
}

Status inline_graph(ir::Graph& graph, const FunctionMap& functions, int depth, Budget& budget) {
  std::vector<ir::Node> nodes;
  nodes.reserve(graph.nodes.size());
  for (ir::Node& node : graph.nodes) {
    for (ir::Attribute& a : node.attributes) {
      if (a.g) NXRT_RETURN_IF_ERROR(inline_graph(*a.g, functions, depth, budget));
      for (auto& g : a.graphs) NXRT_RETURN_IF_ERROR(inline_graph(*g, functions, depth, budget));
    }
    auto it = functions.find(function_key(node.domain, node.op_type));
    if (it == functions.end()) {
      nodes.push_back(std::move(node));
      continue;
    }
    NXRT_RETURN_IF_ERROR(expand_call(node, *it->second, functions, depth, budget, nodes));
  }
  graph.nodes = std::move(nodes);
  return Status();
}

}  // namespace

Status inline_functions(ir::Model& model, int64_t max_nodes) {
  if (model.functions.empty()) return Status();
  FunctionMap functions;
  for (const ir::Function& fn : model.functions) {
    functions[function_key(fn.domain, fn.name)] = &fn;
    // A function body may use domains the model does not import; adopt its versions.
    for (const auto& [domain, version] : fn.opset_imports)
      model.opset_imports.emplace(domain, version);
  }
  Budget budget;
  budget.max_nodes = max_nodes;
  return inline_graph(model.graph, functions, 0, budget);
}

Status inline_functions_pass(ir::Graph& graph, PassContext& ctx) {
  // Inlining walks nested subgraphs itself: the main graph's call covers them all.
  if (&graph != &ctx.model.graph) return Status();
  return inline_functions(ctx.model, ctx.limits.max_nodes);
}

}  // namespace nxrt::optimizer
