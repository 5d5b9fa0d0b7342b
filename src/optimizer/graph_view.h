// A use-def view of one graph for passes: which node produces a value, who reads it, which
// values are constants. Built once per pass over a graph; a pass that rewrites marks
// nodes removed and compacts the graph at the end (GraphEditor), so indices stay valid
// while it matches.
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ir/graph.h"
#include "ops/shape_inference.h"
#include "optimizer/pass.h"

namespace nxrt::optimizer {

class GraphView {
 public:
  GraphView(const ir::Graph& graph, const PassContext& ctx);

  // Index of the node producing `value`, or -1 (graph input, initializer, outer value).
  int producer(const std::string& value) const;
  // Nodes that read `value` as a direct input (a node reading it twice is listed twice).
  const std::vector<size_t>& consumers(const std::string& value) const;
  // Direct reads plus reads from nested subgraphs.
  size_t use_count(const std::string& value) const;
  bool is_graph_output(const std::string& value) const { return outputs_.count(value) > 0; }
  // The value's tensor when it cannot change between runs: an initializer no caller can
  // override, or the `value` of a Constant node, of this graph or (for a name it does not
  // define) of the graphs around it. Null otherwise.
  const Tensor* constant(const std::string& value) const;
  // True when `name` is used in the graph or the graphs around it (for fresh names: a
  // subgraph's name must not hide an outer one).
  bool has_name(const std::string& name) const {
    return names_.count(name) > 0 || (outer_ && outer_->has_name(name));
  }

  // The single node reading `value` when nothing else (no graph output, no subgraph)
  // does; -1 otherwise. The node whose output this is can then be fused into that reader.
  int sole_consumer(const std::string& value) const;

 private:
  std::unordered_map<std::string, int> producer_;
  std::unordered_map<std::string, std::vector<size_t>> consumers_;
  std::unordered_map<std::string, size_t> subgraph_reads_;
  std::unordered_map<std::string, const Tensor*> constants_;
  std::unordered_set<std::string> outputs_;
  std::unordered_set<std::string> names_;
  const GraphView* outer_;
};

// True when node is op `op_type` of the ONNX domain ("" or "ai.onnx").
bool is_onnx_op(const ir::Node& node, std::string_view op_type);
bool is_onnx_op(const ir::Node& node, std::initializer_list<std::string_view> op_types);
// Input i's name, or "" when the node lists fewer inputs (an omitted optional input).
const std::string& input_or_empty(const ir::Node& node, size_t i);
// A tensor of 8-bit integers (uint8 or int8); false for null.
bool is_8bit(const Tensor* t);
// The input of a binary node other than `value` when the node reads `value` once; "" when
// it reads it twice or not at all.
std::string other_input(const ir::Node& node, const std::string& value);
// The element of a one-element constant of a float or integer type, as a double.
std::optional<double> scalar_value(const GraphView& view, const std::string& value);

// The shapes of a main graph's values as inference derives them from the graph inputs,
// for rewrites that hold only at some ranks or sizes. Inference runs once, on the first
// question. Subgraphs get no answers (nothing enforces their declared input shapes), nor
// do the model's own value_info declarations count.
class ShapeFacts {
 public:
  ShapeFacts(const ir::Graph& graph, const PassContext& ctx) : graph_(graph), ctx_(ctx) {}
  // Null when the value's rank is not known.
  const ops::SymShape* shape(const std::string& value);

 private:
  const ir::Graph& graph_;
  const PassContext& ctx_;
  std::optional<ops::ShapeInferenceResult> shapes_;
};

// Collects removals and fresh names while a pass matches; apply() drops removed nodes.
class GraphEditor {
 public:
  explicit GraphEditor(ir::Graph& graph, const GraphView& view) : graph_(graph), view_(view) {}

  void remove(size_t node) { removed_.insert(node); }
  bool removed(size_t node) const { return removed_.count(node) > 0; }
  // The node making `value` when `reader` alone reads it and the node is not removed:
  // a producer a fusion may take into `reader`; -1 otherwise.
  int fusable_producer(const std::string& value, size_t reader) const;
  // The one node reading `value` (once, or more than once as Mul(s, s) does) when nothing
  // else does (no graph output, no subgraph) and it is not removed; -1 otherwise.
  int only_reader(const std::string& value) const;
  // A name not used in the graph, derived from `base`.
  std::string fresh_name(const std::string& base);
  // Adds an initializer at apply() (the view points into the current list).
  void add_initializer(const std::string& name, Tensor tensor);
  // Adds the new initializers and drops removed nodes (keeping the order of the rest).
  // Returns how many nodes went.
  size_t apply();

 private:
  ir::Graph& graph_;
  const GraphView& view_;
  std::unordered_set<size_t> removed_;
  std::unordered_set<std::string> taken_;
  std::vector<ir::Initializer> added_;
};

}  // namespace nxrt::optimizer
