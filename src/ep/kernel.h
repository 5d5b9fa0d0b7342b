// The contract between the planner/executor and every kernel of every execution provider.
//
// Lifecycle: a KernelFactory runs once per node when the session is planned ("prepare":
// read and validate attributes, declare output dtypes, pre-pack constant weights). Then
// compute() runs once per Run: it derives output shapes from input shapes, asks the
// context for output buffers (the executor hands out planned, pooled memory) and fills
// them. compute() is const: one kernel object serves concurrent runs.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "core/value.h"
#include "ir/graph.h"
#include "ops/attrs.h"

namespace nxrt {

class ExecutableGraph;  // a planned (sub)graph; defined by the planner

// What a value slot holds. Optional values use the kind of their element; an empty
// optional is a slot with no value (ctx.input() and input_sequence() return nullptr).
// kMapSequence is a sequence of maps sharing one key set (ai.onnx.ml ZipMap's output),
// stored as a TensorSequence of two tensors: the keys [C] and the values [N, C], map i
// being keys[j] -> values[i, j]. kMap is one map (a graph input of type map(K, V), read by
// ai.onnx.ml DictVectorizer and CastMap), stored the same way: keys [K] and values [K];
// the slot's dtype is V's. No kernel reads either as a sequence of tensors.
enum class ValueKind : uint8_t { kTensor, kSequence, kMapSequence, kMap };

// A subgraph compiled for a kernel: the opaque plan plus the interface kernels need.
struct CompiledSubgraph {
  std::shared_ptr<ExecutableGraph> graph;
  std::vector<ir::ValueInfo> inputs;   // as declared, graph order
  std::vector<ir::ValueInfo> outputs;  // as declared, graph order
  std::vector<DataType> output_types;  // planned element types
  std::vector<ValueKind> output_kinds;
};

// Compiles subgraph attributes (If branches, Loop and Scan bodies) during prepare.
class SubgraphCompiler {
 public:
  virtual ~SubgraphCompiler() = default;
  // `outer_names`/`outer_types`: the values of enclosing scopes the subgraph may read,
  // in the order the node's implicit inputs list them. `input_types` fills in graph
  // input types the subgraph leaves undeclared (kUndefined keeps the declared type).
  virtual Expected<CompiledSubgraph> compile(const ir::Graph& graph,
                                             const std::vector<std::string>& outer_names,
                                             const std::vector<DataType>& outer_types,
                                             const std::vector<DataType>& input_types) = 0;
};

// What a kernel factory sees of its node.
struct KernelInit {
  explicit KernelInit(const ir::Node& n) : node(n) {}
  const ir::Node& node;
  int64_t opset = 0;                           // version of the node's domain in the model
  std::vector<DataType> input_types;           // kUndefined for omitted optional inputs
  std::vector<const Tensor*> constant_inputs;  // non-null where the input is a constant
  std::vector<DataType> output_types;          // the factory fills one per node output
  std::vector<ValueKind> input_kinds;          // tensor unless the input is a sequence
  std::vector<ValueKind> output_kinds;         // defaults to tensor; sequence ops set it
  std::vector<std::string> implicit_inputs;    // outer-scope values read by subgraphs
  std::vector<DataType> implicit_types;
  std::vector<ValueKind> implicit_kinds;
  SubgraphCompiler* subgraphs = nullptr;
  // Constant inputs the kernel copied into its own form (packed weights) and whose data it
  // never reads at run time, only the shape: the planner may then free the data. Set
  // through absorb_constant().
  std::vector<bool> absorbed_inputs;

  void absorb_constant(size_t i) {
    if (absorbed_inputs.size() <= i) absorbed_inputs.resize(i + 1, false);
    absorbed_inputs[i] = true;
  }
  bool absorbed(size_t i) const { return i < absorbed_inputs.size() && absorbed_inputs[i]; }

  size_t num_inputs() const { return input_types.size(); }
  bool has_input(size_t i) const {
    return i < input_types.size() && input_types[i] != DataType::kUndefined;
  }
  DataType input_type(size_t i) const {
    return i < input_types.size() ? input_types[i] : DataType::kUndefined;
  }
  const Tensor* constant_input(size_t i) const {
    return i < constant_inputs.size() ? constant_inputs[i] : nullptr;
  }
  // Sets every output's dtype to `type`.
  void set_all_outputs(DataType type) {
    for (DataType& t : output_types) t = type;
  }
  // Error helpers whose messages name the node: "[Conv] node 'c1': ...".
  template <typename... Args>
  Status error(StatusCode code, const Args&... args) const {
    return Status(code, node_context(node) + str_cat(args...));
  }
  Status unsupported_type(size_t input_index) const {
    return error(StatusCode::kNotImplemented, "input ", input_index, " has type ",
                 tensor_type_name(input_type(input_index)), ", which this op does not support");
  }
};

class KernelContext {
 public:
  virtual ~KernelContext() = default;

  size_t num_inputs() const { return inputs_.size(); }
  // nullptr when an optional input was omitted, is an empty optional, or is a sequence.
  const Tensor* input(size_t i) const { return i < inputs_.size() ? inputs_[i] : nullptr; }
  // The sequence bound to input i, or nullptr when it is not a (present) sequence.
  const TensorSequence* input_sequence(size_t i) const {
    return i < sequences_.size() ? sequences_[i] : nullptr;
  }
  std::span<const Tensor* const> implicit_inputs() const { return implicit_; }
  size_t num_outputs() const { return num_outputs_; }

  // Buffer for output i with this shape (dtype fixed at prepare); valid until the
  // executor releases the value. Errors when the shape is absurd.
  virtual Expected<Tensor*> output(size_t i, const Shape& shape) = 0;

  // Makes output i a view of input `input_index` with a new shape of the same element
  // count (reshape-like ops), when the executor can; otherwise allocates and copies.
  // Kernels must not write to an aliased output.
  virtual Status alias_input(size_t i, size_t input_index, const Shape& shape) {
    const Tensor* in = input(input_index);
    if (!in) return invalid_argument("input ", input_index, " is missing");
    NXRT_ASSIGN_OR_RETURN(Tensor * out, output(i, shape));
    copy_elements(in->dtype(), in->raw(), out->raw(), in->numel());
    return Status();
  }

  // Sets output i (declared kSequence at prepare) to a sequence of owned tensors.
  virtual Status set_output_sequence(size_t i, TensorSequence sequence) {
    (void)i;
    (void)sequence;
    return not_implemented("this context does not produce sequences");
  }

  // Runs a compiled subgraph; this node's implicit inputs are bound to its outer names.
  // `outputs` receives owning tensors.
  virtual Status run_subgraph(const CompiledSubgraph& graph, std::span<const Tensor* const> inputs,
                              std::vector<Tensor>& outputs) = 0;

  // run_subgraph for bodies whose inputs or outputs may be sequences or empty optionals.
  virtual Status run_subgraph_values(const CompiledSubgraph& graph, std::span<const Value> inputs,
                                     std::vector<Value>& outputs) {
    (void)graph;
    (void)inputs;
    (void)outputs;
    return not_implemented("this context cannot run subgraphs");
  }

  // Runs a subgraph whose outputs become this node's outputs, in order (If branches).
  // The executor has the subgraph write its tensor outputs straight into this node's
  // output buffers, so a warm run neither copies nor allocates; this fallback runs the
  // subgraph and copies. Sequences are shared and an empty optional leaves the output
  // unset.
  virtual Status run_subgraph_into_outputs(const CompiledSubgraph& graph,
                                           std::span<const Value> inputs) {
    std::vector<Value> outs;
    NXRT_RETURN_IF_ERROR(run_subgraph_values(graph, inputs, outs));
    for (size_t i = 0; i < outs.size() && i < num_outputs_; ++i) {
      if (outs[i].is_sequence()) {
        NXRT_RETURN_IF_ERROR(set_output_sequence(i, *outs[i].sequence));
      } else if (!outs[i].is_none()) {
        const Tensor& value = outs[i].tensor;
        NXRT_ASSIGN_OR_RETURN(Tensor * out, output(i, value.shape()));
        if (out->dtype() != value.dtype())
          return make_error(StatusCode::kEngineError, "output ", i, " has type ",
                            tensor_type_name(value.dtype()), " but was planned as ",
                            tensor_type_name(out->dtype()));
        copy_elements(value.dtype(), value.raw(), out->raw(), value.numel());
      }
    }
    return Status();
  }

  // True when the caller asked the run to stop (RunOptions.terminate).
  virtual bool terminate_requested() const = 0;

 protected:
  std::span<const Tensor* const> inputs_;
  std::span<const TensorSequence* const> sequences_;
  std::span<const Tensor* const> implicit_;
  size_t num_outputs_ = 0;
};

class Kernel {
 public:
  virtual ~Kernel() = default;
  virtual Status compute(KernelContext& ctx) const = 0;
  // True when compute() may make output 0 a view of input 0 (KernelContext::alias_input):
  // a memory plan made before any run keeps input 0's block alive as long as output 0.
  virtual bool may_alias_input0() const { return false; }
  // The axis (as the node gives it) along which compute() lays its inputs end to end in
  // output 0 when it skips an input whose data already sits at its place there (Concat):
  // the executor may then have that input's producer write into output 0 directly.
  virtual std::optional<int64_t> in_place_concat_axis() const { return std::nullopt; }
  // An input whose block output 0 may take over when that input dies at this node (the
  // executor then hands out the same memory, runtime/executor.cc): compute() reads each
  // element of it before writing output 0's element at the same place, and nothing else
  // of it after (an elementwise sum input of the same shape and type as output 0).
  virtual std::optional<size_t> output0_overwrites_input() const { return std::nullopt; }
};

using KernelPtr = std::unique_ptr<Kernel>;
using KernelFactory = Expected<KernelPtr> (*)(KernelInit& init);

}  // namespace nxrt
