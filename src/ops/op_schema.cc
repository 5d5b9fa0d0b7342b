#include "ops/op_schema.h"

#include <array>
#include <vector>

namespace nxrt::ops {
namespace {

// Every type by its short name, whether or not op_schema.inc uses it today.
[[maybe_unused]] constexpr AttrType kFloat = AttrType::kFloat, kInt = AttrType::kInt,
                                    kString = AttrType::kString, kTensor = AttrType::kTensor,
                                    kGraph = AttrType::kGraph, kFloats = AttrType::kFloats,
                                    kInts = AttrType::kInts, kStrings = AttrType::kStrings,
                                    kTensors = AttrType::kTensors, kGraphs = AttrType::kGraphs,
                                    kSparseTensor = AttrType::kSparseTensor,
                                    kSparseTensors = AttrType::kSparseTensors,
                                    kTypeProto = AttrType::kTypeProto,
                                    kTypeProtos = AttrType::kTypeProtos;

// The four tables of op_schema.inc, each read by defining its row macro and leaving the
// others empty.
constexpr AttrSpec kAttributes[] = {
#define NXRT_SCHEMA(...)
#define NXRT_ATTR(name, type, required) {name, type, required},
#define NXRT_FORMAL(name, constraint, heterogeneous)
#define NXRT_CONSTRAINT(name, tensors, sequences, maps)
#include "ops/op_schema.inc"
#undef NXRT_CONSTRAINT
#undef NXRT_FORMAL
#undef NXRT_ATTR
#undef NXRT_SCHEMA
};

constexpr FormalSpec kFormals[] = {
#define NXRT_SCHEMA(...)
#define NXRT_ATTR(name, type, required)
#define NXRT_FORMAL(name, constraint, heterogeneous) {name, constraint, heterogeneous},
#define NXRT_CONSTRAINT(name, tensors, sequences, maps)
#include "ops/op_schema.inc"
#undef NXRT_CONSTRAINT
#undef NXRT_FORMAL
#undef NXRT_ATTR
#undef NXRT_SCHEMA
};

constexpr TypeConstraint kConstraints[] = {
#define NXRT_SCHEMA(...)
#define NXRT_ATTR(name, type, required)
#define NXRT_FORMAL(name, constraint, heterogeneous)
#define NXRT_CONSTRAINT(name, tensors, sequences, maps) {name, tensors, sequences, maps},
#include "ops/op_schema.inc"
#undef NXRT_CONSTRAINT
#undef NXRT_FORMAL
#undef NXRT_ATTR
#undef NXRT_SCHEMA
};

constexpr OpSchema kSchemas[] = {
#define NXRT_SCHEMA(domain, op, since, min_in, max_in, min_out, max_out, required, first, count, \
                    first_formal, formal_in, formal_out, first_constraint, constraints)          \
  {domain,                                                                                       \
   op,                                                                                           \
   since,                                                                                        \
   min_in,                                                                                       \
   max_in,                                                                                       \
   min_out,                                                                                      \
   max_out,                                                                                      \
   required,                                                                                     \
   std::span<const AttrSpec>(kAttributes + (first), (count)),                                    \
   std::span<const FormalSpec>(kFormals + (first_formal), (formal_in)),                          \
   std::span<const FormalSpec>(kFormals + (first_formal) + (formal_in), (formal_out)),           \
   std::span<const TypeConstraint>(kConstraints + (first_constraint), (constraints))},
#define NXRT_ATTR(name, type, required)
#define NXRT_FORMAL(name, constraint, heterogeneous)
#define NXRT_CONSTRAINT(name, tensors, sequences, maps)
#include "ops/op_schema.inc"
#undef NXRT_CONSTRAINT
#undef NXRT_FORMAL
#undef NXRT_ATTR
#undef NXRT_SCHEMA
};

}  // namespace

const AttrSpec* OpSchema::attribute(std::string_view name) const {
  for (const AttrSpec& a : attributes)
    if (name == a.name) return &a;
  return nullptr;
}

const FormalSpec* OpSchema::formal_input(size_t index) const {
  if (index < inputs.size()) return &inputs[index];
  // Inputs past the formals belong to a variadic last one (the arity check bounds them).
  if (inputs.empty() || (max_inputs >= 0 && size_t(max_inputs) <= inputs.size())) return nullptr;
  return &inputs.back();
}

const OpSchema* find_schema(std::string_view domain, std::string_view op_type, int64_t opset) {
  if (domain == "ai.onnx") domain = "";
  // Rows are sorted by (domain, op, since_version): the last match not after `opset`.
  const OpSchema* found = nullptr;
  for (const OpSchema& s : kSchemas)
    if (op_type == s.op_type && domain == s.domain && s.since_version <= opset) found = &s;
  return found;
}

std::span<const OpSchema> all_schemas() { return kSchemas; }

const char* attr_type_name(AttrType type) {
  static constexpr std::array<const char*, 15> kNames = {
      "UNDEFINED",      "FLOAT",      "INT",        "STRING",  "TENSOR", "GRAPH",
      "FLOATS",         "INTS",       "STRINGS",    "TENSORS", "GRAPHS", "SPARSE_TENSOR",
      "SPARSE_TENSORS", "TYPE_PROTO", "TYPE_PROTOS"};
  const size_t i = size_t(type);
  return i < kNames.size() ? kNames[i] : "UNKNOWN";
}

Status check_node(const ir::Node& node, int64_t opset, const std::string& context) {
  const OpSchema* schema = find_schema(node.domain, node.op_type, opset);
  if (!schema) return Status();
  // A count outside [min, max] (max < 0: no limit), as "has 3 inputs; opset 17 of Relu
  // takes at most 1".
  auto check_count = [&](size_t count, int min, int max, const char* what,
                         const char* most) -> Status {
    if (count < size_t(min))
      return invalid_graph(context, "has ", count, " ", what, "; opset ", opset, " of ",
                           node.op_type, " needs at least ", min);
    if (max >= 0 && count > size_t(max))
      return invalid_graph(context, "has ", count, " ", what, "; opset ", opset, " of ",
                           node.op_type, " ", most, " at most ", max);
    return Status();
  };
  const size_t inputs = node.inputs.size();
  NXRT_RETURN_IF_ERROR(
      check_count(inputs, schema->min_inputs, schema->max_inputs, "inputs", "takes"));
  NXRT_RETURN_IF_ERROR(check_count(node.outputs.size(), schema->min_outputs, schema->max_outputs,
                                   "outputs", "produces"));
  for (size_t i = 0; i < inputs && i < 64; ++i)
    if ((schema->required_inputs >> i & 1) && node.inputs[i].empty())
      return invalid_graph(context, "input ", i, " is required by ", node.op_type,
                           " but left empty");
  for (const ir::Attribute& attr : node.attributes) {
    const AttrSpec* spec = schema->attribute(attr.name);
    // Unknown attributes are left to the kernels (onnxruntime rejects them; converters
    // sometimes leave stale ones that change nothing). An undefined type carries no value.
    if (!spec || attr.type == AttrType::kUndefined || attr.type == spec->type) continue;
    return invalid_graph(context, "attribute '", attr.name, "' is ", attr_type_name(attr.type),
                         "; opset ", opset, " of ", node.op_type, " takes ",
                         attr_type_name(spec->type));
  }
  for (const AttrSpec& spec : schema->attributes) {
    if (!spec.required) continue;
    bool given = false;
    for (const ir::Attribute& attr : node.attributes) given = given || attr.name == spec.name;
    if (!given)
      return invalid_graph(context, "attribute '", spec.name, "' (", attr_type_name(spec.type),
                           ") is required by opset ", opset, " of ", node.op_type);
  }
  return Status();
}

}  // namespace nxrt::ops

namespace nxrt::ops {
namespace {

// "tensor(float)", "seq(tensor(int64))".
std::string type_text(const InputType& t) {
  const std::string tensor = tensor_type_name(t.dtype);
  if (t.map) return "map(..., " + tensor + ")";  // (the key type is the kernel's to check)
  return t.sequence ? "seq(" + tensor + ")" : tensor;
}

// The types a constraint allows, as "tensor(float), tensor(double), seq(tensor(float))".
std::string allowed_text(const TypeConstraint& c) {
  std::string out;
  auto list = [&](uint64_t mask, bool sequence) {
    for (int e = 1; e < 64; ++e)
      if (mask >> e & 1) {
        if (!out.empty()) out += ", ";
        out += type_text(InputType{.dtype = DataType(e), .sequence = sequence, .known = true});
      }
  };
  list(c.tensors, false);
  list(c.sequences, true);
  if (c.maps) out += out.empty() ? "maps" : ", maps";
  return out.empty() ? "no tensor or sequence type" : out;
}

}  // namespace

Status check_types(const ir::Node& node, int64_t opset, std::span<const InputType> types,
                   const std::string& context) {
  const OpSchema* schema = find_schema(node.domain, node.op_type, opset);
  if (!schema) return Status();
  // The first input that bound each parameter, or -1.
  std::vector<int> bound(schema->constraints.size(), -1);
  for (size_t i = 0; i < types.size() && i < node.inputs.size(); ++i) {
    const InputType& t = types[i];
    const FormalSpec* formal = schema->formal_input(i);
    if (!t.known || !formal || formal->constraint < 0 ||
        size_t(formal->constraint) >= schema->constraints.size())
      continue;
    const TypeConstraint& c = schema->constraints[size_t(formal->constraint)];
    const auto e = uint32_t(t.dtype);
    const uint64_t mask = t.sequence ? c.sequences : c.tensors;
    // Element types beyond the masks' 64 bits are none nxrt has. Map key and value types
    // are the kernels' to check.
    if (t.map ? !c.maps : e >= 64 || !(mask >> e & 1))
      return invalid_graph(context, "input ", i, " ('", node.inputs[i], "', formal ", formal->name,
                           ") has type ", type_text(t), "; opset ", opset, " of ", node.op_type,
                           " takes ", c.name, " in {", allowed_text(c), "}");
    if (formal->heterogeneous) continue;
    int& first = bound[size_t(formal->constraint)];
    if (first < 0) {
      first = int(i);
      continue;
    }
    const InputType& other = types[size_t(first)];
    if (other.dtype != t.dtype || other.sequence != t.sequence)
      return invalid_graph(context, "type parameter ", c.name, " of ", node.op_type,
                           " is bound to ", type_text(other), " by input ", first, " ('",
                           node.inputs[size_t(first)], "') and to ", type_text(t), " by input ", i,
                           " ('", node.inputs[i], "')");
  }
  return Status();
}

}  // namespace nxrt::ops
