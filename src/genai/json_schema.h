// JSON Schema for constrained decoding (response_format json_schema): the subset that
// OpenAI's structured outputs take, compiled into a graph of nodes that the recognizer of
// genai/json_constraint.h walks byte by byte. Keywords outside the subset are refused by
// name at compile time, never ignored: an output that merely parses is not one that
// matches.
//
// The generated language is a subset of what the schema accepts, chosen so a recognizer
// with a small state can enforce it: an object's members come in the order of
// `properties`, only declared members are written when there are any, \u escapes of
// surrogates are not written.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace nxrt::genai {

struct JsonSchemaNode {
  enum Type : uint8_t {
    kObject = 1,
    kArray = 2,
    kString = 4,
    kNumber = 8,
    kInteger = 16,
    kBoolean = 32,
    kNull = 64,
    kAnyType = 127,
  };
  static constexpr int32_t kUnbounded = INT32_MAX;

  struct Property {
    std::string key;  // the name as the output spells it: a JSON string, quotes included
    int32_t node = -1;
    bool required = false;
  };

  uint8_t types = kAnyType;
  // Not empty: the node is a choice, a value of any one of these nodes (anyOf, $ref).
  std::vector<int32_t> any_of;
  // Not empty (enum, const): the value is one of these, as compact JSON texts.
  std::vector<std::string> literals;
  // An object's declared members, written in this order; required ones are never skipped.
  std::vector<Property> properties;
  int32_t last_required = -1;  // index of the last required property
  int32_t additional = -1;     // no properties: every member's value node (-1: no members)
  int32_t items = -1;          // an array's element node
  int32_t min_items = 0, max_items = kUnbounded;
  int32_t min_length = 0, max_length = kUnbounded;  // a string's characters (code points)
};

class JsonGrammar {
 public:
  // Compiles a JSON Schema (a JSON text). Errors name the keyword and its place in the
  // schema as a JSON pointer ("#/properties/age: keyword 'minimum' is not supported").
  static Expected<std::shared_ptr<const JsonGrammar>> from_schema(std::string_view schema);
  // Any JSON object (response_format json_object).
  static std::shared_ptr<const JsonGrammar> any_object();

  const JsonSchemaNode& node(int32_t id) const { return nodes_[size_t(id)]; }
  int32_t root() const { return root_; }

 private:
  friend class SchemaCompiler;
  std::vector<JsonSchemaNode> nodes_;
  int32_t root_ = 0;
};

}  // namespace nxrt::genai
