#include "optimizer/graph_view.h"

namespace nxrt::optimizer {

GraphView::GraphView(const ir::Graph& graph, const PassContext& ctx) : outer_(ctx.outer) {
  std::unordered_set<std::string> overridable;
  for (const ir::ValueInfo& in : graph.inputs) {
    names_.insert(in.name);
    if (ctx.inputs_override_initializers) overridable.insert(in.name);
  }
  for (const ir::Initializer& init : graph.initializers) {
    names_.insert(init.name);
    if (!overridable.count(init.name) && init.tensor.defined())
      constants_[init.name] = &init.tensor;
  }
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const ir::Node& node = graph.nodes[n];
    for (const std::string& out : node.outputs) {
      if (out.empty()) continue;
      names_.insert(out);
      producer_.emplace(out, int(n));
    }
    for (const std::string& in : node.inputs)
      if (!in.empty()) consumers_[in].push_back(n);
    for (const ir::Graph* sub : ir::subgraphs_of(node))
      for (const std::string& name : ir::outer_names(*sub)) ++subgraph_reads_[name];
    if (is_onnx_op(node, "Constant") && node.outputs.size() == 1) {
      const ir::Attribute* value = node.find_attribute("value");
      if (value && value->type == ir::Attribute::Type::kTensor && value->t.defined())
        constants_[node.outputs[0]] = &value->t;
    }
  }
  for (const ir::ValueInfo& out : graph.outputs) outputs_.insert(out.name);
}

int GraphView::producer(const std::string& value) const {
  auto it = producer_.find(value);
  return it == producer_.end() ? -1 : it->second;
}

const std::vector<size_t>& GraphView::consumers(const std::string& value) const {
  static const std::vector<size_t> kNone;
  auto it = consumers_.find(value);
  return it == consumers_.end() ? kNone : it->second;
}

size_t GraphView::use_count(const std::string& value) const {
  auto it = subgraph_reads_.find(value);
  return consumers(value).size() + (it == subgraph_reads_.end() ? 0 : it->second);
}

const Tensor* GraphView::constant(const std::string& value) const {
  auto it = constants_.find(value);
  if (it != constants_.end()) return it->second;
  return names_.count(value) == 0 && outer_ ? outer_->constant(value) : nullptr;
}

int GraphView::sole_consumer(const std::string& value) const {
  if (value.empty() || is_graph_output(value) || use_count(value) != 1) return -1;
  return int(consumers(value)[0]);
}

const std::string& input_or_empty(const ir::Node& node, size_t i) {
  static const std::string kNone;
  return i < node.inputs.size() ? node.inputs[i] : kNone;
}

bool is_8bit(const Tensor* t) {
  return t && (t->dtype() == DataType::kUint8 || t->dtype() == DataType::kInt8);
}

std::string other_input(const ir::Node& node, const std::string& value) {
  if (node.inputs.size() != 2) return "";
  if (node.inputs[0] == value && node.inputs[1] != value) return node.inputs[1];
  if (node.inputs[1] == value && node.inputs[0] != value) return node.inputs[0];
  return "";
}

std::optional<double> scalar_value(const GraphView& view, const std::string& value) {
  const Tensor* t = value.empty() ? nullptr : view.constant(value);
  if (!t || t->numel() != 1) return std::nullopt;
  switch (t->dtype()) {
    NXRT_CASES_FLOAT(return double(float(t->data<T>()[0])))
    NXRT_CASES_INT(return double(t->data<T>()[0]))
    default:
      return std::nullopt;
  }
}

bool is_onnx_op(const ir::Node& node, std::string_view op_type) {
  return (node.domain.empty() || node.domain == "ai.onnx") && node.op_type == op_type;
}

bool is_onnx_op(const ir::Node& node, std::initializer_list<std::string_view> op_types) {
  for (std::string_view op : op_types)
    if (is_onnx_op(node, op)) return true;
  return false;
}

std::string GraphEditor::fresh_name(const std::string& base) {
  std::string name = base;
  for (int i = 1; view_.has_name(name) || taken_.count(name); ++i)
    name = base + "_" + std::to_string(i);
  taken_.insert(name);
  return name;
}

void GraphEditor::add_initializer(const std::string& name, Tensor tensor) {
  added_.push_back({name, std::move(tensor)});
}

size_t GraphEditor::apply() {
  for (ir::Initializer& init : added_) graph_.initializers.push_back(std::move(init));
  added_.clear();
  if (removed_.empty()) return 0;
  std::vector<ir::Node> kept;
  kept.reserve(graph_.nodes.size() - removed_.size());
  for (size_t n = 0; n < graph_.nodes.size(); ++n)
    if (!removed_.count(n)) kept.push_back(std::move(graph_.nodes[n]));
  graph_.nodes = std::move(kept);
  const size_t count = removed_.size();
  removed_.clear();
  return count;
}

int GraphEditor::fusable_producer(const std::string& value, size_t reader) const {
  const int p = view_.producer(value);
  return p >= 0 && !removed(size_t(p)) && view_.sole_consumer(value) == int(reader) ? p : -1;
}

int GraphEditor::only_reader(const std::string& value) const {
  const std::vector<size_t>& readers = view_.consumers(value);
  if (readers.empty() || view_.is_graph_output(value) || view_.use_count(value) != readers.size() ||
      removed(readers[0]))
    return -1;
  for (size_t r : readers)
    if (r != readers[0]) return -1;
  return int(readers[0]);
}

const ops::SymShape* ShapeFacts::shape(const std::string& value) {
  if (&graph_ != &ctx_.model.graph) return nullptr;
  if (!shapes_) {
    ops::ShapeInferenceOptions options;
    options.inputs_override_initializers = ctx_.inputs_override_initializers;
    options.use_value_info = false;
    shapes_ = ops::infer_shapes(graph_, ctx_.model.opset_imports, options);
  }
  auto it = shapes_->values.find(value);
  if (it == shapes_->values.end() || !it->second.shape.rank_known) return nullptr;
  return &it->second.shape;
}

}  // namespace nxrt::optimizer
