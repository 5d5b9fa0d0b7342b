// What the ONNX spec says of each operator version in the ai.onnx and ai.onnx.ml domains
// (op_schema.inc, generated from onnx's schemas by tools/gen_op_schema.py): how many
// inputs and outputs a node may have, which inputs it must give, its attributes' names,
// types and whether they are required, and the element types each input and output takes. The
// planner checks every node against it before a kernel sees the node, so kernels never meet a
// malformed node of a known op.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "core/dtype.h"
#include "core/status.h"
#include "ir/graph.h"

namespace nxrt::ops {

using AttrType = ir::Attribute::Type;  // onnx's AttributeProto numbering

struct AttrSpec {
  const char* name;
  AttrType type;
  bool required;
};

// A type parameter ("T") and the element types it allows: bit e of `tensors` set when
// tensor(e) (or optional(tensor(e))) is allowed, of `sequences` for seq(tensor(e)). A
// formal with a fixed type ("tensor(int64)") has a constraint of its own, named by it.
// `maps`: some map type is allowed (DictVectorizer's map(string, float), ...).
struct TypeConstraint {
  const char* name;
  uint64_t tensors;
  uint64_t sequences;
  bool maps;
};

// A formal input or output: its name in the spec and its type parameter (an index into
// the schema's constraints). A heterogeneous variadic formal (Loop's v_initial) binds
// its parameter afresh for each value.
struct FormalSpec {
  const char* name;
  int constraint;
  bool heterogeneous;
};

struct OpSchema {
  const char* domain;  // "" for ai.onnx
  const char* op_type;
  int since_version;
  int min_inputs;
  int max_inputs;  // -1: no limit (variadic)
  int min_outputs;
  int max_outputs;  // -1: no limit
  // Bit i set: input position i is a single formal input (neither optional nor variadic).
  uint64_t required_inputs;
  std::span<const AttrSpec> attributes;
  std::span<const FormalSpec> inputs;  // the last one repeats for a variadic input
  std::span<const FormalSpec> outputs;
  std::span<const TypeConstraint> constraints;

  const AttrSpec* attribute(std::string_view name) const;
  // The formal input actual input `index` stands for (nullptr past the formals).
  const FormalSpec* formal_input(size_t index) const;
};

// The schema version in force at `opset` (the newest not after it); nullptr for ops outside
// ai.onnx / ai.onnx.ml or older than their first version.
const OpSchema* find_schema(std::string_view domain, std::string_view op_type, int64_t opset);
std::span<const OpSchema> all_schemas();

// ONNX's name of an attribute type ("INT", "FLOATS", ...).
const char* attr_type_name(AttrType type);

// Checks a node against its schema: input and output counts, required inputs present,
// required attributes given and every known attribute of the declared type. `context`
// names the node ("[Op] node 'n': ") and prefixes every message. OK for ops with no schema.
Status check_node(const ir::Node& node, int64_t opset, const std::string& context);

// What the planner knows of an input's type before choosing a kernel: a tensor's or a
// sequence's element type, or a map's value type; `known` false for omitted inputs,
// sequences of maps and types not settled.
struct InputType {
  DataType dtype = DataType::kUndefined;
  bool sequence = false;
  bool map = false;
  bool known = false;
};

// Checks the node's input types against its schema's type constraints: each type allowed
// by its parameter, and inputs sharing a parameter (Add's A and B: T) of one type, as
// onnxruntime checks a graph when it loads it. OK for ops with no schema.
Status check_types(const ir::Node& node, int64_t opset, std::span<const InputType> types,
                   const std::string& context);

}  // namespace nxrt::ops
