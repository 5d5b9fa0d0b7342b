// Nodes whose outputs nothing reads (no node, subgraph or graph output): left over from
// fusions and exporters. Removing one can make its producers dead, so this sweeps
// backwards through the (topologically ordered) node list until nothing changes.
#include <algorithm>

#include "optimizer/graph_view.h"
#include "optimizer/passes/passes.h"

namespace nxrt::optimizer {

Status eliminate_dead_nodes(ir::Graph& graph, PassContext& ctx) {
  for (;;) {
    GraphView view(graph, ctx);
    GraphEditor edit(graph, view);
    std::unordered_map<std::string, size_t> dropped_reads;  // reads by nodes removed now
    for (size_t n = graph.nodes.size(); n-- > 0;) {
      const ir::Node& node = graph.nodes[n];
      // A node with no outputs at all is malformed: the planner names it, so it stays.
      bool read = std::all_of(node.outputs.begin(), node.outputs.end(),
                              [](const std::string& o) { return o.empty(); });
      for (const std::string& out : node.outputs) {
        if (out.empty()) continue;
        auto it = dropped_reads.find(out);
        const size_t gone = it == dropped_reads.end() ? 0 : it->second;
        read |= view.is_graph_output(out) || view.use_count(out) > gone;
      }
      if (read) continue;
      edit.remove(n);
      for (const std::string& in : node.inputs)
        if (!in.empty()) ++dropped_reads[in];
      for (const ir::Graph* sub : ir::subgraphs_of(node))
        for (const std::string& name : ir::outer_names(*sub)) ++dropped_reads[name];
    }
    if (edit.apply() == 0) return Status();
  }
}

}  // namespace nxrt::optimizer
