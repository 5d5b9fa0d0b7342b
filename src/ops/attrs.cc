#include "ops/attrs.h"

namespace nxrt {
namespace {

const char* attr_type_name(ir::Attribute::Type type) {
  using T = ir::Attribute::Type;
  switch (type) {
    case T::kFloat:
      return "float";
    case T::kInt:
      return "int";
    case T::kString:
      return "string";
    case T::kTensor:
      return "tensor";
    case T::kGraph:
      return "graph";
    case T::kFloats:
      return "floats";
    case T::kInts:
      return "ints";
    case T::kStrings:
      return "strings";
    case T::kTensors:
      return "tensors";
    case T::kGraphs:
      return "graphs";
    default:
      return "other";
  }
}

}  // namespace

std::string node_context(const ir::Node& node) { return node.describe() + ": "; }

const ir::Attribute* AttrReader::find(const char* name, ir::Attribute::Type type) {
  const ir::Attribute* a = node_.find_attribute(name);
  if (!a) return nullptr;
  if (a->type != type) {
    fail(str_cat("attribute '", name, "' must be of type ", attr_type_name(type), " but is ",
                 attr_type_name(a->type)));
    return nullptr;
  }
  return a;
}

void AttrReader::fail(const std::string& message) {
  if (status_.ok()) status_ = Status(StatusCode::kInvalidGraph, node_context(node_) + message);
}

void AttrReader::missing(const char* name) {
  fail(str_cat("required attribute '", name, "' is missing"));
}

int64_t AttrReader::get_int(const char* name, int64_t fallback) {
  const ir::Attribute* a = find(name, ir::Attribute::Type::kInt);
  return a ? a->i : fallback;
}
float AttrReader::get_float(const char* name, float fallback) {
  const ir::Attribute* a = find(name, ir::Attribute::Type::kFloat);
  return a ? a->f : fallback;
}
std::string AttrReader::get_string(const char* name, const std::string& fallback) {
  const ir::Attribute* a = find(name, ir::Attribute::Type::kString);
  return a ? a->s : fallback;
}
std::vector<int64_t> AttrReader::get_ints(const char* name, std::vector<int64_t> fallback) {
  const ir::Attribute* a = find(name, ir::Attribute::Type::kInts);
  return a ? a->ints : fallback;
}
std::vector<float> AttrReader::get_floats(const char* name, std::vector<float> fallback) {
  const ir::Attribute* a = find(name, ir::Attribute::Type::kFloats);
  return a ? a->floats : fallback;
}
std::vector<std::string> AttrReader::get_strings(const char* name,
                                                 std::vector<std::string> fallback) {
  const ir::Attribute* a = find(name, ir::Attribute::Type::kStrings);
  return a ? a->strings : fallback;
}
const Tensor* AttrReader::get_tensor(const char* name) {
  const ir::Attribute* a = find(name, ir::Attribute::Type::kTensor);
  return a ? &a->t : nullptr;
}
const ir::Graph* AttrReader::get_graph(const char* name) {
  const ir::Attribute* a = find(name, ir::Attribute::Type::kGraph);
  // A GRAPH-typed attribute whose g field is absent from the file.
  if (a && !a->g) fail(str_cat("attribute '", name, "' holds no graph"));
  return a ? a->g.get() : nullptr;
}

int64_t AttrReader::require_int(const char* name) {
  if (!has(name)) missing(name);
  return get_int(name, 0);
}
std::vector<int64_t> AttrReader::require_ints(const char* name) {
  if (!has(name)) missing(name);
  return get_ints(name);
}
const ir::Graph* AttrReader::require_graph(const char* name) {
  if (!has(name)) missing(name);
  return get_graph(name);
}

}  // namespace nxrt
