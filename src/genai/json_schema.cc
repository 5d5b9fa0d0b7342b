#include "genai/json_schema.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

namespace nxrt::genai {

namespace {

// Member order matters: the output writes properties in the schema's order.
using Json = nlohmann::ordered_json;

constexpr int kMaxNesting = 64;       // schema objects inside one another
constexpr size_t kMaxNodes = 10000;   // a request's schema is small; this bounds the work
constexpr int64_t kMaxChoices = 256;  // alternatives one value may start as

// Keywords that describe and never constrain: read past.
const std::set<std::string_view> kAnnotations = {
    "title",    "description", "default",  "examples",  "$schema", "$id",
    "$comment", "deprecated",  "readOnly", "writeOnly", "$defs",   "definitions"};
// The constraining keywords nxrt enforces.
const std::set<std::string_view> kSupported = {
    "type",      "properties", "required", "additionalProperties",
    "items",     "minItems",   "maxItems", "enum",
    "const",     "anyOf",      "allOf",    "$ref",
    "minLength", "maxLength"};

uint8_t type_bit(std::string_view name) {
  using N = JsonSchemaNode;
  if (name == "object") return N::kObject;
  if (name == "array") return N::kArray;
  if (name == "string") return N::kString;
  if (name == "number") return N::kNumber;
  if (name == "integer") return N::kInteger;
  if (name == "boolean") return N::kBoolean;
  if (name == "null") return N::kNull;
  return 0;
}

// The type bits a JSON value has (an integral number is also a number).
uint8_t value_types(const Json& v) {
  using N = JsonSchemaNode;
  if (v.is_object()) return N::kObject;
  if (v.is_array()) return N::kArray;
  if (v.is_string()) return N::kString;
  if (v.is_boolean()) return N::kBoolean;
  if (v.is_null()) return N::kNull;
  if (v.is_number_integer() || v.is_number_unsigned()) return N::kNumber | N::kInteger;
  const double d = v.get<double>();
  if (std::isfinite(d) && std::floor(d) == d) return N::kNumber | N::kInteger;
  return N::kNumber;
}

std::string pointer_escape(std::string_view name) {
  std::string out;
  for (char c : name) {
    if (c == '~')
      out += "~0";
    else if (c == '/')
      out += "~1";
    else
      out += c;
  }
  return out;
}

}  // namespace

class SchemaCompiler {
 public:
  explicit SchemaCompiler(const Json& root) : root_(root) {}

  Expected<int32_t> compile(const Json& s, const std::string& at, int nesting) {
    if (nesting > kMaxNesting) return error(at, "the schema nests deeper than ", kMaxNesting);
    if (s.is_boolean()) {
      if (s.get<bool>()) return any();
      return error(at, "the schema is false: no value matches it");
    }
    if (!s.is_object()) return error(at, "a schema must be an object or a boolean");
    size_t constraining = 0;
    for (const auto& [key, value] : s.items()) {
      if (kAnnotations.count(key)) continue;
      if (!kSupported.count(key))
        return error(at, "keyword '", key,
                     "' is not supported by nxrt's constrained decoding (it supports type, "
                     "properties, required, additionalProperties, items, minItems, maxItems, "
                     "enum, const, anyOf, allOf of one schema, $ref, minLength, maxLength)");
      ++constraining;
    }
    if (auto ref = s.find("$ref"); ref != s.end()) {
      if (constraining > 1) return error(at, "'$ref' beside other constraining keywords");
      if (!ref->is_string()) return error(at + "/$ref", "must be a string");
      return resolve(ref->get<std::string>(), at + "/$ref", nesting);
    }
    if (auto all = s.find("allOf"); all != s.end()) {
      if (constraining > 1 || !all->is_array() || all->size() != 1)
        return error(at + "/allOf", "only an allOf of one schema, alone, is supported");
      return compile((*all)[0], at + "/allOf/0", nesting + 1);
    }
    const int32_t id = new_node(at);
    if (id < 0) return error(at, "the schema has more than ", kMaxNodes, " parts");
    if (auto any_of = s.find("anyOf"); any_of != s.end()) {
      if (constraining > 1) return error(at, "'anyOf' beside other constraining keywords");
      if (!any_of->is_array() || any_of->empty())
        return error(at + "/anyOf", "must be a non-empty array of schemas");
      for (size_t i = 0; i < any_of->size(); ++i) {
        NXRT_ASSIGN_OR_RETURN(
            int32_t alt, compile((*any_of)[i], at + "/anyOf/" + std::to_string(i), nesting + 1));
        nodes_[size_t(id)].any_of.push_back(alt);
      }
      return id;
    }
    if (auto type = s.find("type"); type != s.end()) {
      uint8_t bits = 0;
      const Json names = type->is_array() ? *type : Json::array({*type});
      for (const Json& name : names) {
        const uint8_t bit = name.is_string() ? type_bit(name.get<std::string>()) : 0;
        if (bit == 0) return error(at + "/type", "unknown type ", name.dump());
        bits |= bit;
      }
      if (bits == 0) return error(at + "/type", "names no type");
      if (bits & JsonSchemaNode::kNumber) bits |= JsonSchemaNode::kInteger;
      nodes_[size_t(id)].types = bits;
    }
    if (s.contains("enum") || s.contains("const")) {
      NXRT_RETURN_IF_ERROR(literals(s, id, at));
      return id;
    }
    NXRT_RETURN_IF_ERROR(object(s, id, at, nesting));
    NXRT_RETURN_IF_ERROR(array(s, id, at, nesting));
    NXRT_RETURN_IF_ERROR(bounds(s, "minLength", "maxLength", at, nodes_[size_t(id)].min_length,
                                nodes_[size_t(id)].max_length));
    return id;
  }

  // The choices are finite and few; the root is no bare number (its end cannot be told
  // from a longer one).
  Status check(int32_t root) const {
    std::vector<int64_t> leaves(nodes_.size(), -1);
    for (size_t id = 0; id < nodes_.size(); ++id)
      NXRT_RETURN_IF_ERROR(count_choices(int32_t(id), leaves));
    std::vector<int32_t> todo = {root};
    std::set<int32_t> seen;
    while (!todo.empty()) {
      const int32_t id = todo.back();
      todo.pop_back();
      if (!seen.insert(id).second) continue;
      const JsonSchemaNode& n = nodes_[size_t(id)];
      todo.insert(todo.end(), n.any_of.begin(), n.any_of.end());
      if (n.any_of.empty() && n.literals.empty() &&
          (n.types & (JsonSchemaNode::kNumber | JsonSchemaNode::kInteger)))
        return invalid_argument(
            "#: the root schema allows a bare number, whose end no token can mark; make the "
            "root an object (as OpenAI's structured outputs require)");
    }
    return Status();
  }

  std::vector<JsonSchemaNode> nodes_;

 private:
  template <typename... Args>
  static Status error(const std::string& at, Args&&... args) {
    return invalid_argument(at, ": ", std::forward<Args>(args)...);
  }

  int32_t new_node(const std::string& at) {
    if (nodes_.size() >= kMaxNodes) return -1;
    nodes_.emplace_back();
    paths_.push_back(at);
    return int32_t(nodes_.size() - 1);
  }

  // The unconstrained value: any type, members and elements of any value.
  int32_t any() {
    if (any_ < 0) {
      any_ = new_node("#");
      nodes_[size_t(any_)].additional = any_;
      nodes_[size_t(any_)].items = any_;
    }
    return any_;
  }

  Expected<int32_t> resolve(const std::string& target, const std::string& at, int nesting) {
    if (auto it = refs_.find(target); it != refs_.end()) return it->second;
    if (target.empty() || target[0] != '#')
      return error(at, "only references inside the schema ('#/$defs/...') are supported");
    const Json* found = nullptr;
    try {
      found = &root_.at(Json::json_pointer(target.substr(1)));
    } catch (const std::exception&) {
      return error(at, "reference '", target, "' names nothing in the schema");
    }
    // The node exists before its target compiles, so a recursive reference finds it.
    const int32_t id = new_node(at);
    if (id < 0) return error(at, "the schema has more than ", kMaxNodes, " parts");
    refs_[target] = id;
    NXRT_ASSIGN_OR_RETURN(int32_t body, compile(*found, target, nesting + 1));
    nodes_[size_t(id)].any_of = {body};
    return id;
  }

  Status literals(const Json& s, int32_t id, const std::string& at) {
    if (s.contains("enum") && s.contains("const")) return error(at, "both 'enum' and 'const'");
    for (const auto& [key, value] : s.items())
      if (kSupported.count(key) && key != "enum" && key != "const" && key != "type")
        return error(at, "'", key, "' beside 'enum' or 'const'");
    const bool is_enum = s.contains("enum");
    const Json values = is_enum ? s["enum"] : Json::array({s["const"]});
    if (!values.is_array() || values.empty())
      return error(at + "/enum", "must be a non-empty array");
    JsonSchemaNode& n = nodes_[size_t(id)];
    for (const Json& v : values)
      if (value_types(v) & n.types) n.literals.push_back(v.dump());
    if (n.literals.empty())
      return error(at, "no value of '", is_enum ? "enum" : "const", "' has the schema's type");
    return Status();
  }

  Status object(const Json& s, int32_t id, const std::string& at, int nesting) {
    std::vector<JsonSchemaNode::Property> properties;
    if (auto p = s.find("properties"); p != s.end()) {
      if (!p->is_object()) return error(at + "/properties", "must be an object");
      for (const auto& [name, schema] : p->items()) {
        NXRT_ASSIGN_OR_RETURN(
            int32_t node, compile(schema, at + "/properties/" + pointer_escape(name), nesting + 1));
        properties.push_back({Json(name).dump(), node, false});
      }
    }
    if (auto r = s.find("required"); r != s.end()) {
      if (!r->is_array()) return error(at + "/required", "must be an array of names");
      for (const Json& name : *r) {
        const std::string key = name.is_string() ? Json(name).dump() : std::string();
        auto it = std::find_if(properties.begin(), properties.end(),
                               [&](const auto& p) { return p.key == key; });
        if (it == properties.end())
          return error(at + "/required", "required member ", name.dump(),
                       " is not in 'properties' (nxrt writes declared members only)");
        it->required = true;
      }
    }
    int32_t additional = -1;
    if (properties.empty()) {  // members of any name: their values follow additionalProperties
      auto a = s.find("additionalProperties");
      if (a == s.end()) {
        additional = any();
      } else if (!(a->is_boolean() && !a->get<bool>())) {
        NXRT_ASSIGN_OR_RETURN(additional, compile(*a, at + "/additionalProperties", nesting + 1));
      }
    }
    JsonSchemaNode& n = nodes_[size_t(id)];
    n.properties = std::move(properties);
    for (size_t i = 0; i < n.properties.size(); ++i)
      if (n.properties[i].required) n.last_required = int32_t(i);
    n.additional = additional;
    return Status();
  }

  Status array(const Json& s, int32_t id, const std::string& at, int nesting) {
    int32_t items = -1;
    if (auto i = s.find("items"); i != s.end()) {
      if (i->is_array())
        return error(at + "/items", "an array of schemas (tuple form) is not supported");
      NXRT_ASSIGN_OR_RETURN(items, compile(*i, at + "/items", nesting + 1));
    } else {
      items = any();
    }
    JsonSchemaNode& n = nodes_[size_t(id)];
    n.items = items;
    return bounds(s, "minItems", "maxItems", at, n.min_items, n.max_items);
  }

  Status bounds(const Json& s, const char* min_key, const char* max_key, const std::string& at,
                int32_t& min, int32_t& max) {
    for (auto [key, out] : {std::pair{min_key, &min}, std::pair{max_key, &max}}) {
      auto it = s.find(key);
      if (it == s.end()) continue;
      if (!it->is_number_integer() && !it->is_number_unsigned())
        return error(at + "/" + key, "must be a non-negative integer");
      const int64_t v = it->get<int64_t>();
      if (v < 0) return error(at + "/" + key, "must be a non-negative integer");
      *out = int32_t(std::min<int64_t>(v, JsonSchemaNode::kUnbounded));
    }
    if (min > max) return error(at, "'", min_key, "' is above '", max_key, "'");
    return Status();
  }

  // anyOf and $ref choose without reading a byte: a cycle of them would never end, and
  // nested choices multiply the branches a byte is tried on. `leaves`: per node, the
  // choices it comes to (-1: not counted yet, -2: being counted).
  Status count_choices(int32_t id, std::vector<int64_t>& leaves) const {
    int64_t& n = leaves[size_t(id)];
    if (n == -2)
      return error(paths_[size_t(id)],
                   "anyOf and $ref form a cycle that reads nothing (it would never end)");
    if (n >= 0) return Status();
    if (nodes_[size_t(id)].any_of.empty()) {
      n = 1;
      return Status();
    }
    n = -2;
    int64_t total = 0;
    for (int32_t alternative : nodes_[size_t(id)].any_of) {
      NXRT_RETURN_IF_ERROR(count_choices(alternative, leaves));
      total += leaves[size_t(alternative)];
      if (total > kMaxChoices)
        return error(paths_[size_t(id)], "nested anyOf come to more than ", kMaxChoices,
                     " alternatives");
    }
    leaves[size_t(id)] = total;
    return Status();
  }

  const Json& root_;
  std::vector<std::string> paths_;  // per node: where in the schema (for errors)
  std::map<std::string, int32_t> refs_;
  int32_t any_ = -1;
};

Expected<std::shared_ptr<const JsonGrammar>> JsonGrammar::from_schema(std::string_view schema) {
  Json root = Json::parse(schema.begin(), schema.end(), nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) return invalid_argument("the schema is not valid JSON");
  SchemaCompiler compiler(root);
  NXRT_ASSIGN_OR_RETURN(int32_t id, compiler.compile(root, "#", 0));
  NXRT_RETURN_IF_ERROR(compiler.check(id));
  auto grammar = std::make_shared<JsonGrammar>();
  grammar->nodes_ = std::move(compiler.nodes_);
  grammar->root_ = id;
  return std::shared_ptr<const JsonGrammar>(std::move(grammar));
}

std::shared_ptr<const JsonGrammar> JsonGrammar::any_object() {
  static const std::shared_ptr<const JsonGrammar> grammar = [] {
    auto g = from_schema(R"({"type": "object"})");
    return *g;
  }();
  return grammar;
}

}  // namespace nxrt::genai
