// A Transpose of a Transpose reads the first one's input with the two permutations
// composed; when the composition is the identity both go (readers take the original
// value). The first Transpose stays only while something else reads it
// (eliminate_dead_nodes drops it otherwise). Exporters leave such pairs behind when they
// convert between channel-last and channel-first layouts around ops that do not care.
#include <numeric>
#include <optional>

#include "optimizer/graph_view.h"
#include "optimizer/passes/passes.h"

namespace nxrt::optimizer {
namespace {

// The node's permutation when it is a valid one; {} for the default (reverse the dims,
// whose length the pass does not know); nullopt for one the kernel will reject.
std::optional<std::vector<int64_t>> permutation(const ir::Node& node) {
  const ir::Attribute* perm = node.find_attribute("perm");
  if (!perm) return std::vector<int64_t>{};
  if (perm->type != ir::Attribute::Type::kInts || perm->ints.empty()) return std::nullopt;
  std::vector<bool> seen(perm->ints.size(), false);
  for (int64_t axis : perm->ints) {
    if (axis < 0 || axis >= int64_t(seen.size()) || seen[size_t(axis)]) return std::nullopt;
    seen[size_t(axis)] = true;
  }
  return perm->ints;
}

bool is_identity(const std::vector<int64_t>& perm) {
  for (size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != int64_t(i)) return false;
  return true;
}

bool is_transpose(const ir::Node& node) {
  return is_onnx_op(node, "Transpose") && node.inputs.size() == 1 && !node.inputs[0].empty() &&
         node.outputs.size() == 1;
}

}  // namespace

Status cancel_transposes(ir::Graph& graph, PassContext& ctx) {
  GraphView view(graph, ctx);
  GraphEditor edit(graph, view);
  // Outputs of the Transposes found to be identities, by the value they pass on.
  std::unordered_map<std::string, std::string> renames;
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    ir::Node& second = graph.nodes[n];
    if (!is_transpose(second)) continue;
    auto passed = renames.find(second.inputs[0]);  // reading a Transpose already gone
    if (passed != renames.end()) second.inputs[0] = passed->second;
    const int p = view.producer(second.inputs[0]);
    if (p < 0 || edit.removed(size_t(p)) || !is_transpose(graph.nodes[size_t(p)])) continue;
    const ir::Node& first = graph.nodes[size_t(p)];
    const auto outer = permutation(second), inner = permutation(first);
    if (!outer || !inner) continue;
    // Lengths differ for permutations of different ranks, and for a default reversal
    // (empty) beside an explicit permutation, whose rank is unknown here.
    if (outer->size() != inner->size()) continue;
    // out[i] = first's input dim inner[outer[i]]; empty, the identity, for two default
    // reversals, which cancel whatever the rank.
    std::vector<int64_t> composed;
    for (int64_t axis : *outer) composed.push_back((*inner)[size_t(axis)]);
    const bool identity = is_identity(composed);
    second.inputs[0] = first.inputs[0];
    if (!identity) {
      for (ir::Attribute& a : second.attributes)
        if (a.name == "perm") a.ints = composed;
      continue;
    }
    // A graph output keeps its name: the node becomes an Identity there.
    if (view.is_graph_output(second.outputs[0])) {
      second.op_type = "Identity";
      second.attributes.clear();
      continue;
    }
    renames[second.outputs[0]] = second.inputs[0];
    edit.remove(n);
  }
  if (!renames.empty()) ir::rename_reads(graph, renames);
  edit.apply();
  return Status();
}

}  // namespace nxrt::optimizer
