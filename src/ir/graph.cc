#include "ir/graph.h"

#include <unordered_set>

namespace nxrt::ir {

std::string Node::describe() const {
  std::string out = "[" + op_type + "] node '" + name + "'";
  if (name.empty() && !outputs.empty()) out += " (output '" + outputs[0] + "')";
  return out;
}

namespace {

void outer_names_into(const Graph& graph, std::vector<std::string>& out,
                      std::unordered_set<std::string>& seen) {
  std::unordered_set<std::string> defined;
  for (const auto& v : graph.inputs) defined.insert(v.name);
  for (const auto& init : graph.initializers) defined.insert(init.name);
  for (const auto& node : graph.nodes)
    for (const auto& o : node.outputs) defined.insert(o);
  auto use = [&](const std::string& name) {
    if (!name.empty() && !defined.count(name) && seen.insert(name).second) out.push_back(name);
  };
  for (const auto& node : graph.nodes) {
    for (const auto& i : node.inputs) use(i);
    for (const Graph* sub : subgraphs_of(node))
      for (const auto& name : outer_names(*sub)) use(name);
  }
  for (const auto& o : graph.outputs) use(o.name);
}

}  // namespace

std::vector<std::string> outer_names(const Graph& graph) {
  std::vector<std::string> out;
  std::unordered_set<std::string> seen;
  outer_names_into(graph, out, seen);
  return out;
}

std::vector<Graph*> subgraphs_of(Node& node) {
  std::vector<Graph*> out;
  for (Attribute& a : node.attributes) {
    if (a.g) out.push_back(a.g.get());
    for (auto& g : a.graphs) out.push_back(g.get());
  }
  return out;
}

std::vector<const Graph*> subgraphs_of(const Node& node) {
  std::vector<const Graph*> out;
  for (const Attribute& a : node.attributes) {
    if (a.g) out.push_back(a.g.get());
    for (const auto& g : a.graphs) out.push_back(g.get());
  }
  return out;
}

void rename_reads(Graph& graph, const std::unordered_map<std::string, std::string>& names) {
  auto rename = [&](std::string& name) {
    auto it = names.find(name);
    if (it != names.end()) name = it->second;
  };
  for (Node& node : graph.nodes) {
    for (std::string& in : node.inputs) rename(in);
    for (Graph* sub : subgraphs_of(node)) rename_reads(*sub, names);
  }
  for (ValueInfo& out : graph.outputs) rename(out.name);
}

}  // namespace nxrt::ir
