#include "ops/op_schema.h"

#include <array>
#include <vector>

namespace nxrt::ops {
namespace {

constexpr AttrType kFloat = AttrType::kFloat, kInt = AttrType::kInt, kString = AttrType::kString,
                   kTensor = AttrType::kTensor, kGraph = AttrType::kGraph,
                   kFloats = AttrType::kFloats, kInts = AttrType::kInts,
                   kStrings = AttrType::kStrings, kTensors = AttrType::kTensors,
                   kGraphs = AttrType::kGraphs, kSparseTensor = AttrType::kSparseTensor,
                   kSparseTensors = AttrType::kSparseTensors, kTypeProto = AttrType::kTypeProto,
                   kTypeProtos = AttrType::kTypeProtos;

constexpr AttrSpec kAttributes[] = {
#define NXRT_SCHEMA(domain, op, since, min_in, max_in, min_out, max_out, required, first, count)
#define NXRT_ATTR(name, type, required) {name, type, required},
#include "ops/op_schema.inc"
#undef NXRT_ATTR
#undef NXRT_SCHEMA
};

constexpr OpSchema kSchemas[] = {
#define NXRT_SCHEMA(domain, op, since, min_in, max_in, min_out, max_out, required, first, count) \
  {domain,  op,       since,                                                                     \
   min_in,  max_in,   min_out,                                                                   \
   max_out, required, std::span<const AttrSpec>(kAttributes + (first), (count))},
#define NXRT_ATTR(name, type, required)
#include "ops/op_schema.inc"
#undef NXRT_ATTR
#undef NXRT_SCHEMA
};

}  // namespace

const AttrSpec* OpSchema::attribute(std::string_view name) const {
  for (const AttrSpec& a : attributes)
    if (name == a.name) return &a;
  return nullptr;
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
