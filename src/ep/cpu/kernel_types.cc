#include "ep/cpu/kernel_types.h"

#include <algorithm>
#include <string>

#include "ops/op_schema.h"

namespace nxrt::cpu {
namespace {

// Tensor types tried for ops that have no ONNX schema (com.microsoft, nxrt's own).
constexpr DataType kCommonTypes[] = {
    DataType::kFloat, DataType::kDouble, DataType::kFloat16, DataType::kBFloat16, DataType::kInt8,
    DataType::kUint8, DataType::kInt16,  DataType::kUint16,  DataType::kInt32,    DataType::kUint32,
    DataType::kInt64, DataType::kUint64, DataType::kBool,    DataType::kString};

bool allows(uint64_t mask, DataType t) { return (mask >> uint32_t(t)) & 1u; }

// A type the parameter allows, for inputs other than the probed one: int64 first (shapes,
// axes, indices), then float, then the lowest-numbered allowed type.
DataType representative(uint64_t mask) {
  if (allows(mask, DataType::kInt64)) return DataType::kInt64;
  if (allows(mask, DataType::kFloat)) return DataType::kFloat;
  for (uint32_t e = 1; e < 64; ++e)
    if (allows(mask, DataType(e))) return DataType(e);
  return DataType::kUndefined;
}

// A value a required attribute can take whatever the op: 1, 1.0, [1], an empty string
// (Cast's `to` = 1 makes it a cast to float).
ir::Attribute neutral_attribute(const ops::AttrSpec& spec) {
  ir::Attribute a;
  a.name = spec.name;
  a.type = spec.type;
  a.i = 1;
  a.f = 1.0f;
  if (spec.type == ir::Attribute::Type::kInts) a.ints = {1};
  if (spec.type == ir::Attribute::Type::kFloats) a.floats = {1.0f};
  return a;
}

bool holds_graphs(const ops::OpSchema& schema) {
  for (const ops::AttrSpec& a : schema.attributes)
    if (a.type == ir::Attribute::Type::kGraph || a.type == ir::Attribute::Type::kGraphs)
      return true;
  return false;
}

// Runs the factory on a node with these input types; true when it makes a kernel.
bool factory_accepts(const KernelEntry& entry, const ir::Node& node, int64_t opset,
                     const std::vector<DataType>& input_types,
                     const std::vector<ValueKind>& input_kinds, size_t outputs) {
  KernelInit init(node);
  init.opset = opset;
  init.input_types = input_types;
  init.input_kinds = input_kinds;
  init.constant_inputs.assign(input_types.size(), nullptr);
  init.output_types.assign(outputs, DataType::kUndefined);
  init.output_kinds.assign(outputs, ValueKind::kTensor);
  return entry.factory(init).ok();
}

ir::Node probe_node(const KernelEntry& entry, size_t inputs, size_t outputs) {
  ir::Node node;
  node.name = "type_probe";
  node.op_type = entry.op_type;
  node.domain = entry.domain;
  // Appended, not "x" + to_string(i): GCC 12 warns (-Wrestrict) on that temporary.
  for (size_t i = 0; i < inputs; ++i) node.inputs.emplace_back("x").append(std::to_string(i));
  for (size_t o = 0; o < outputs; ++o) node.outputs.emplace_back("y").append(std::to_string(o));
  return node;
}

std::optional<std::vector<DataType>> probe_with_schema(const KernelEntry& entry,
                                                       const ops::OpSchema& schema, int64_t opset) {
  if (schema.min_inputs < 1 || schema.inputs.empty() || holds_graphs(schema)) return std::nullopt;
  const size_t inputs = size_t(schema.min_inputs);
  const size_t outputs = size_t(std::max(schema.min_outputs, 1));
  ir::Node node = probe_node(entry, inputs, outputs);
  for (const ops::AttrSpec& a : schema.attributes)
    if (a.required) node.attributes.push_back(neutral_attribute(a));
  // The parameter the first output shares with an input (Where's T, not its bool
  // condition), else the first input's (Cast's T1, Shape's T).
  int probed = schema.inputs[0].constraint;
  if (!schema.outputs.empty()) {
    const int out = schema.outputs[0].constraint;
    for (size_t i = 0; i < inputs; ++i) {
      const ops::FormalSpec* formal = schema.formal_input(i);
      if (formal && formal->constraint == out) probed = out;
    }
  }
  if (probed < 0 || size_t(probed) >= schema.constraints.size()) return std::nullopt;
  // A parameter that allows sequences but no tensors (SequenceAt's S) binds sequences.
  auto sequence_only = [&](int c) {
    const ops::TypeConstraint& tc = schema.constraints[size_t(c)];
    return tc.tensors == 0 && tc.sequences != 0;
  };
  std::vector<DataType> types(inputs);
  std::vector<ValueKind> kinds(inputs, ValueKind::kTensor);
  for (size_t i = 0; i < inputs; ++i) {
    const ops::FormalSpec* formal = schema.formal_input(i);
    const int c = formal ? formal->constraint : -1;
    if (c < 0 || size_t(c) >= schema.constraints.size()) {
      types[i] = DataType::kFloat;
      continue;
    }
    if (sequence_only(c)) kinds[i] = ValueKind::kSequence;
    const ops::TypeConstraint& tc = schema.constraints[size_t(c)];
    types[i] = representative(sequence_only(c) ? tc.sequences : tc.tensors);
  }
  std::vector<DataType> accepted;
  const ops::TypeConstraint& probed_constraint = schema.constraints[size_t(probed)];
  const uint64_t candidates =
      sequence_only(probed) ? probed_constraint.sequences : probed_constraint.tensors;
  for (uint32_t e = 1; e < 64; ++e) {
    if (!allows(candidates, DataType(e))) continue;
    for (size_t i = 0; i < inputs; ++i) {
      const ops::FormalSpec* formal = schema.formal_input(i);
      if (formal && formal->constraint == probed) types[i] = DataType(e);
    }
    if (factory_accepts(entry, node, opset, types, kinds, outputs)) accepted.push_back(DataType(e));
  }
  if (accepted.empty()) return std::nullopt;
  return accepted;
}

// Without a schema the arity is unknown: the smallest input count (up to 8) at which
// some type gets through, every input of the probed type.
std::optional<std::vector<DataType>> probe_without_schema(const KernelEntry& entry, int64_t opset) {
  constexpr size_t kMostInputs = 8;
  for (size_t inputs = 1; inputs <= kMostInputs; ++inputs) {
    const ir::Node node = probe_node(entry, inputs, 1);
    std::vector<DataType> accepted;
    for (DataType t : kCommonTypes)
      if (factory_accepts(entry, node, opset, std::vector<DataType>(inputs, t),
                          std::vector<ValueKind>(inputs, ValueKind::kTensor), 1))
        accepted.push_back(t);
    if (!accepted.empty()) return accepted;
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::vector<DataType>> accepted_input_types(const KernelEntry& entry) {
  // The newest opset the kernel implements that has a schema version: what the table's
  // "and later" row describes.
  const bool open_ended = entry.until_version >= kEveryLaterOpset;
  int64_t opset = entry.until_version;
  const ops::OpSchema* schema = ops::find_schema(entry.domain, entry.op_type, opset);
  if (schema && open_ended) opset = std::max<int64_t>(schema->since_version, entry.since_version);
  if (schema) return probe_with_schema(entry, *schema, opset);
  return probe_without_schema(entry, open_ended ? entry.since_version : entry.until_version);
}

}  // namespace nxrt::cpu
