// In-memory model: what the decoder produces and the planner consumes. Plain structs;
// validation lives in the decoder (structure) and the planner (semantics).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/dtype.h"
#include "core/mapped_file.h"
#include "core/tensor.h"

namespace nxrt::ir {

struct Graph;

// One dimension of a declared shape: a number, a symbol ("batch"), or unknown.
struct Dim {
  int64_t value = -1;  // -1 when not a number
  std::string param;   // symbolic name, empty when none
};

struct TypeInfo {
  enum class Kind { kUnknown, kTensor, kSequence, kOptional, kMap, kSparseTensor };
  Kind kind = Kind::kUnknown;
  DataType elem_type = DataType::kUndefined;  // for tensors (and map keys)
  bool has_shape = false;
  std::vector<Dim> dims;
  std::shared_ptr<TypeInfo> inner;  // element of sequence/optional, value of map
};

struct ValueInfo {
  std::string name;
  TypeInfo type;
};

struct Attribute {
  enum class Type {
    kUndefined = 0,
    kFloat = 1,
    kInt = 2,
    kString = 3,
    kTensor = 4,
    kGraph = 5,
    kFloats = 6,
    kInts = 7,
    kStrings = 8,
    kTensors = 9,
    kGraphs = 10,
    kSparseTensor = 11,
    kSparseTensors = 12,
    kTypeProto = 13,
    kTypeProtos = 14,
  };
  std::string name;
  Type type = Type::kUndefined;
  float f = 0;
  int64_t i = 0;
  std::string s;
  Tensor t;
  std::shared_ptr<Graph> g;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  std::vector<Tensor> tensors;
  std::vector<std::shared_ptr<Graph>> graphs;
  TypeInfo tp;
  std::string ref_attr_name;  // inside functions: refers to the caller's attribute

  // The attributes graph passes write into the nodes they make.
  static Attribute of_int(std::string attr_name, int64_t v) {
    Attribute a;
    a.name = std::move(attr_name);
    a.type = Type::kInt;
    a.i = v;
    return a;
  }
  static Attribute of_float(std::string attr_name, float v) {
    Attribute a;
    a.name = std::move(attr_name);
    a.type = Type::kFloat;
    a.f = v;
    return a;
  }
  static Attribute of_string(std::string attr_name, std::string v) {
    Attribute a;
    a.name = std::move(attr_name);
    a.type = Type::kString;
    a.s = std::move(v);
    return a;
  }
};

struct Node {
  std::string name;
  std::string op_type;
  std::string domain;               // "" for the default ONNX domain
  std::vector<std::string> inputs;  // "" marks an omitted optional input
  std::vector<std::string> outputs;
  std::vector<Attribute> attributes;

  const Attribute* find_attribute(const std::string& attr_name) const {
    for (const Attribute& a : attributes)
      if (a.name == attr_name) return &a;
    return nullptr;
  }
  // How every error message names a node: "[Conv] node 'conv_3'", or
  // "[Conv] node '' (output 'y')" when it has no name.
  std::string describe() const;
};

struct Initializer {
  std::string name;
  Tensor tensor;
};

struct Graph {
  std::string name;
  std::vector<Node> nodes;
  std::vector<ValueInfo> inputs;
  std::vector<ValueInfo> outputs;
  std::vector<ValueInfo> value_info;
  std::vector<Initializer> initializers;
};

// A model-local function (FunctionProto); inlined by the planner where called.
struct Function {
  std::string name;
  std::string domain;
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
  std::vector<std::string> attribute_names;
  std::vector<Attribute> attribute_defaults;
  std::vector<Node> nodes;
  std::map<std::string, int64_t> opset_imports;
};

struct Model {
  int64_t ir_version = 0;
  std::map<std::string, int64_t> opset_imports;  // domain ("" = ai.onnx) -> version
  std::string producer_name;
  std::string producer_version;
  std::string domain;
  int64_t model_version = 0;
  std::string doc_string;
  std::vector<std::pair<std::string, std::string>> metadata_props;
  Graph graph;
  std::vector<Function> functions;
  std::string model_dir;          // folder of the model file, for external data; empty for bytes
  std::shared_ptr<void> storage;  // keeps mapped bytes alive while tensors view them
  std::shared_ptr<const MappedFile> mapped_file;  // the model file when loaded from a path
};

// Names `graph` (and its nested subgraphs) reads without defining them: the values a
// subgraph takes from its enclosing scopes.
std::vector<std::string> outer_names(const Graph& graph);

// Subgraphs held by a node's attributes (If branches, Loop/Scan bodies).
std::vector<Graph*> subgraphs_of(Node& node);
std::vector<const Graph*> subgraphs_of(const Node& node);

// Replaces every read of a renamed value: node inputs, graph outputs, and reads from
// inside nested subgraphs.
void rename_reads(Graph& graph, const std::unordered_map<std::string, std::string>& names);

}  // namespace nxrt::ir
