// Shape inference: every value's shape from the graph inputs' shapes, before anything runs.
//
// Each op's rule (shape_rules_*.cc, listed in shape_rules.inc) derives its outputs' facts
// from its inputs' facts and attributes, symbolically where sizes are not numbers. The
// graph is walked once in topological order; values no rule reaches keep the shape the
// model declares for them (value_info), or stay unknown. Inference never fails a model:
// a rule that finds its inputs inconsistent records a conflict naming the node and leaves
// the outputs unknown, and the kernel reports the problem when the node runs.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "ir/graph.h"
#include "ops/attrs.h"
#include "ops/sym_shape.h"

namespace nxrt::ops {

// What a shape rule sees of its node.
class InferContext {
 public:
  InferContext(const ir::Node& node, int64_t opset, std::vector<const ValueFacts*> inputs,
               std::vector<const Tensor*> constants)
      : node_(node),
        opset_(opset),
        attrs_(node),
        inputs_(std::move(inputs)),
        constants_(std::move(constants)),
        outputs_(node.outputs.size()) {}

  const ir::Node& node() const { return node_; }
  int64_t opset() const { return opset_; }
  AttrReader& attrs() { return attrs_; }

  size_t num_inputs() const { return inputs_.size(); }
  bool has_input(size_t i) const { return i < inputs_.size() && inputs_[i] != nullptr; }
  // Facts of input i; unknown ones when it is omitted.
  const ValueFacts& input(size_t i) const;
  const SymShape& shape(size_t i) const { return input(i).shape; }
  // The input's data when it is an initializer or a Constant's output.
  const Tensor* constant(size_t i) const { return i < constants_.size() ? constants_[i] : nullptr; }
  // Input i's elements as numbers: tracked elements or an integer constant's data.
  std::optional<std::vector<int64_t>> ints(size_t i) const;
  // Input i's elements as doubles: any numeric constant, or known tracked elements.
  std::optional<std::vector<double>> numbers(size_t i) const;
  // Input i's elements, numbers or symbols.
  std::optional<std::vector<SymDim>> elements(size_t i) const;

  size_t num_outputs() const { return outputs_.size(); }
  // Output i's facts; a node with fewer outputs (a malformed one) writes to a scratch.
  ValueFacts& output(size_t i) { return i < outputs_.size() ? outputs_[i] : discarded_; }
  void set_shape(size_t i, SymShape shape) {
    if (i < outputs_.size()) outputs_[i].shape = std::move(shape);
  }
  std::vector<ValueFacts>& outputs() { return outputs_; }

  // A conflict between the node's inputs and what the op allows.
  template <typename... Args>
  Status conflict(const Args&... args) const {
    return invalid_argument(str_cat(args...));
  }

 private:
  const ir::Node& node_;
  int64_t opset_;
  AttrReader attrs_;
  std::vector<const ValueFacts*> inputs_;
  std::vector<const Tensor*> constants_;
  std::vector<ValueFacts> outputs_;
  ValueFacts discarded_;
};

// An op's rule: fills ctx's outputs (left unknown where it cannot tell) or reports a
// conflict.
using ShapeRule = Status (*)(InferContext& ctx);

// The rule of an op, or nullptr when nxrt has none for it.
ShapeRule find_shape_rule(std::string_view domain, std::string_view op_type);

struct ShapeInferenceResult {
  std::unordered_map<std::string, ValueFacts> values;  // by value name
  std::vector<std::string> conflicts;                  // "[MatMul] node 'mm': ..."
  std::set<std::string> ops_without_rule;              // "Einsum", "com.microsoft:Foo"

  // "[1,3,224,224]", or "?" for values it knows nothing of.
  std::string shape_text(const std::string& name) const;
};

struct ShapeInferenceOptions {
  // Shapes to use for graph inputs instead of the declared ones (a run's feed shapes).
  std::map<std::string, SymShape> input_shapes;
  // Values of enclosing scopes a subgraph reads, with their facts where known.
  const std::unordered_map<std::string, ValueFacts>* outer = nullptr;
  // Initializers that are also graph inputs may be fed (a session's main graph from IR
  // version 4): they count as inputs of their declared shape, not as constants.
  bool inputs_override_initializers = false;
  // Merge the shapes the model declares for intermediate values and graph outputs. Off
  // where a wrong declaration would do harm (folding shapes into constants).
  bool use_value_info = true;
};

// Infers the shapes of every value of `graph` (not of its subgraphs). `opsets` are the
// model's opset imports.
ShapeInferenceResult infer_shapes(const ir::Graph& graph,
                                  const std::map<std::string, int64_t>& opsets,
                                  const ShapeInferenceOptions& options = {});

// The facts of a constant: its shape, and its elements when small and integer.
ValueFacts constant_facts(const Tensor& t);

// The declared shape of a value (graph input, output or value_info).
SymShape declared_shape(const ir::TypeInfo& type);

}  // namespace nxrt::ops
