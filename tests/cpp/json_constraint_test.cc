#include "genai/json_constraint.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace nxrt::genai {
namespace {

std::shared_ptr<const JsonGrammar> grammar(std::string_view schema) {
  auto g = JsonGrammar::from_schema(schema);
  EXPECT_TRUE(g.ok()) << schema << ": " << g.status().message();
  return g.ok() ? *g : JsonGrammar::any_object();
}

// Feeds `text` byte by byte: the number of bytes accepted before the first refusal.
size_t accepted(std::string_view text, const JsonGrammar& g) {
  JsonState s(g);
  for (size_t i = 0; i < text.size(); ++i)
    if (!s.feed(static_cast<unsigned char>(text[i]))) return i;
  return text.size();
}
size_t accepted(std::string_view text) { return accepted(text, *JsonGrammar::any_object()); }

bool complete(std::string_view text, const JsonGrammar& g) {
  JsonState s(g);
  return s.feed(text) && s.complete();
}
bool complete(std::string_view text) { return complete(text, *JsonGrammar::any_object()); }

// Every prefix of `text` is accepted and the whole is complete.
void expect_matches(std::string_view text, const JsonGrammar& g) {
  EXPECT_TRUE(complete(text, g)) << text;
  for (size_t n = 0; n < text.size(); ++n) EXPECT_EQ(accepted(text.substr(0, n), g), n) << text;
}

TEST(JsonObject, AcceptsWholeObjectsAndTheirPrefixes) {
  const char* objects[] = {
      "{}",
      " { } ",
      R"({"a": 1, "b": [true, false, null], "c": {"d": -0.5e+3}})",
      R"({"s": "tab\t quote\" u\u00e9 slash\/", "n": [0, 12, 3.25, 1E9, -7]})",
      "{\"utf8\": \"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"}",
      "{\"nested\": [[[], {}], [{\"x\": [1]}]]}\n",
  };
  for (const char* text : objects) expect_matches(text, *JsonGrammar::any_object());
}

TEST(JsonObject, RefusesWhatNoObjectContinuesWith) {
  EXPECT_EQ(accepted("[1]"), 0u);  // the top level must be an object
  EXPECT_EQ(accepted("\"text\""), 0u);
  EXPECT_EQ(accepted("{a: 1}"), 1u);                     // keys are strings
  EXPECT_EQ(accepted("{\"a\" 1}"), 5u);                  // a colon after the key
  EXPECT_EQ(accepted("{\"a\": 01}"), 7u);                // no leading zeros
  EXPECT_EQ(accepted("{\"a\": 1.}"), 8u);                // digits after the dot
  EXPECT_EQ(accepted("{\"a\": tru}"), 9u);               // literals spelled out
  EXPECT_EQ(accepted("{\"a\": [1,]}"), 9u);              // no trailing comma
  EXPECT_EQ(accepted("{\"a\": 1]"), 7u);                 // brackets match
  EXPECT_EQ(accepted("{\"a\": \"\x01\"}"), 7u);          // control characters escaped
  EXPECT_EQ(accepted("{\"a\": \"\\x\"}"), 8u);           // only JSON escapes
  EXPECT_EQ(accepted("{\"a\": \"\xc0\x80\"}"), 7u);      // no overlong UTF-8
  EXPECT_EQ(accepted("{\"a\": \"\xed\xa0\x80\"}"), 8u);  // no surrogates
  EXPECT_EQ(accepted("{\"a\": \"\\ud83d\"}"), 10u);      // nor escaped ones
  EXPECT_EQ(accepted("{} x"), 3u);                       // nothing after the object
  EXPECT_FALSE(complete("{\"a\": 1"));
}

TEST(JsonObject, LimitsNesting) {
  std::string deep = "{\"a\": ";
  while (accepted(deep + "[") == deep.size() + 1) deep += "[";
  EXPECT_GE(deep.size(), 30u);  // 30 levels are fine
  EXPECT_EQ(accepted(deep + "["), deep.size());
}

TEST(JsonSchema, TypesAndMembersInOrder) {
  auto g = grammar(R"({"type": "object", "properties": {
      "name": {"type": "string"}, "age": {"type": "integer"},
      "tags": {"type": "array", "items": {"type": "string"}},
      "ok": {"type": "boolean"}, "none": {"type": "null"}, "x": {"type": "number"}},
      "required": ["name", "age"]})");
  expect_matches(R"({"name": "Tom", "age": 3})", *g);
  expect_matches(R"({"name":"","age":-12,"tags":["a","b"],"ok":false,"none":null,"x":1.5e3})", *g);
  expect_matches(R"({"name": "Tom", "age": 3, "x": 2})", *g);        // optional ones skipped
  EXPECT_EQ(accepted(R"({"age": 3})", *g), 2u);                      // a required member first
  EXPECT_EQ(accepted(R"({"name": "a", "age": 3.5})", *g), 22u);      // integer: no fraction
  EXPECT_EQ(accepted(R"({"name": "a", "age": 1e3})", *g), 22u);      // nor exponent
  EXPECT_EQ(accepted(R"({"name": 1})", *g), 9u);                     // the value's type
  EXPECT_EQ(accepted(R"({"name": "a"})", *g), 12u);                  // required age missing
  EXPECT_EQ(accepted(R"({"name": "a", "age": 1, "age")", *g), 25u);  // in order, once
  EXPECT_EQ(accepted(R"({"name": "a", "age": 1, "zzz")", *g), 25u);  // declared only
  EXPECT_EQ(accepted(R"({"name": "a", "age": 1, "tags": [1])", *g), 33u);
}

TEST(JsonSchema, EnumsConstsAnyOfAndReferences) {
  auto g = grammar(R"({"type": "object", "properties": {
      "color": {"enum": ["red", "green", 7, null]},
      "kind": {"const": "cat"},
      "owner": {"anyOf": [{"$ref": "#/$defs/person"}, {"type": "null"}]}},
      "required": ["color", "kind", "owner"],
      "additionalProperties": false,
      "$defs": {"person": {"type": "object", "properties": {
          "name": {"type": "string"}, "friend": {"$ref": "#/$defs/person"}},
          "required": ["name"]}}})");
  expect_matches(R"({"color": "green", "kind": "cat", "owner": null})", *g);
  expect_matches(R"({"color": 7, "kind": "cat", "owner": {"name": "A", "friend": {"name": "B"}}})",
                 *g);
  expect_matches(R"({"color": null, "kind": "cat", "owner": null})", *g);
  EXPECT_EQ(accepted(R"({"color": "blue")", *g), 11u);
  EXPECT_EQ(accepted(R"({"color": 7, "kind": "dog")", *g), 22u);
  EXPECT_EQ(accepted(R"({"color": 7, "kind": "cat", "owner": {"friend")", *g), 39u);
}

TEST(JsonSchema, LengthsAndItemCounts) {
  auto g = grammar(R"({"type": "object", "properties": {
      "code": {"type": "string", "minLength": 2, "maxLength": 3},
      "list": {"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 2}},
      "required": ["code", "list"]})");
  expect_matches("{\"code\": \"ab\", \"list\": [1]}", *g);
  expect_matches("{\"code\": \"\xc3\xa9\\n\\u00e9\", \"list\": [1, 2]}", *g);  // 3 characters
  EXPECT_EQ(accepted(R"({"code": "a")", *g), 11u);
  EXPECT_EQ(accepted(R"({"code": "abcd")", *g), 13u);
  EXPECT_EQ(accepted(R"({"code": "ab", "list": [])", *g), 24u);
  EXPECT_EQ(accepted(R"({"code": "ab", "list": [1, 2, 3])", *g), 28u);
}

TEST(JsonSchema, FreeMembersFollowAdditionalProperties) {
  auto g = grammar(R"({"type": "object", "additionalProperties": {"type": "integer"}})");
  expect_matches(R"({"a": 1, "b c": -2})", *g);
  EXPECT_EQ(accepted(R"({"a": "x"})", *g), 6u);
  auto none = grammar(R"({"type": "object", "additionalProperties": false})");
  expect_matches("{}", *none);
  EXPECT_EQ(accepted(R"({"a")", *none), 1u);
}

TEST(JsonSchema, RefusesWhatItCannotEnforceByName) {
  struct Case {
    const char* schema;
    const char* message;
  } cases[] = {
      {R"({"type": "object", "properties": {"zip": {"type": "string", "pattern": "^[0-9]+$"}}})",
       "#/properties/zip: keyword 'pattern' is not supported"},
      {R"({"type": "object", "properties": {"n": {"type": "integer", "minimum": 0}}})",
       "#/properties/n: keyword 'minimum'"},
      {R"({"type": "number"})", "#: the root schema allows a bare number"},
      {R"({"type": "object", "properties": {"a": {"$ref": "#/$defs/missing"}}})",
       "#/properties/a/$ref: reference '#/$defs/missing' names nothing"},
      {R"({"type": "object", "properties": {"a": false}})", "#/properties/a: the schema is false"},
      {R"({"type": "object", "required": ["a"]})", "required member \"a\" is not in"},
      {R"({"type": "wat"})", "#/type: unknown type \"wat\""},
      {R"({"type": "array", "minItems": 3, "maxItems": 2})", "'minItems' is above 'maxItems'"},
      {R"({"type": "object", "properties": {"a": {"type": "string", "enum": [1]}}})",
       "no value of 'enum' has the schema's type"},
      {"[1]", "#: a schema must be an object or a boolean"},
      {R"({"type": "object", "properties": {"a": {"$ref": "#/$defs/b"}},
           "$defs": {"b": {"anyOf": [{"$ref": "#/$defs/b"}, {"type": "null"}]}}})",
       "form a cycle that reads nothing"},
      {R"({"type": "object", "properties": {"a": {"$ref": "#/$defs/b"}},
           "$defs": {"b": {"$ref": "#/$defs/b"}}})",
       "form a cycle that reads nothing"},
      {R"({"type": "object", "properties": {"a": {"$ref": "#/$defs/x4"}}, "$defs": {
           "x0": {"anyOf": [{"type": "null"}, {"type": "string"}, {"type": "boolean"},
                            {"type": "integer"}, {"type": "array"}]},
           "x1": {"anyOf": [{"$ref": "#/$defs/x0"}, {"$ref": "#/$defs/x0"}, {"$ref": "#/$defs/x0"},
                            {"$ref": "#/$defs/x0"}, {"$ref": "#/$defs/x0"}]},
           "x2": {"anyOf": [{"$ref": "#/$defs/x1"}, {"$ref": "#/$defs/x1"}, {"$ref": "#/$defs/x1"},
                            {"$ref": "#/$defs/x1"}, {"$ref": "#/$defs/x1"}]},
           "x3": {"anyOf": [{"$ref": "#/$defs/x2"}, {"$ref": "#/$defs/x2"}, {"$ref": "#/$defs/x2"},
                            {"$ref": "#/$defs/x2"}, {"$ref": "#/$defs/x2"}]},
           "x4": {"anyOf": [{"$ref": "#/$defs/x3"}, {"$ref": "#/$defs/x3"}]}}})",
       "come to more than 256 alternatives"},
  };
  for (const Case& c : cases) {
    auto g = JsonGrammar::from_schema(c.schema);
    ASSERT_FALSE(g.ok()) << c.schema;
    EXPECT_NE(g.status().message().find(c.message), std::string::npos)
        << c.schema << " -> " << g.status().message();
  }
}

// Byte-level tokens ("Ġ" is the space, "Ċ" the newline) that share prefixes, as real
// vocabularies do, and a special token.
constexpr const char* kJsonVocab = R"({
  "version": "1.0",
  "added_tokens": [{"id": 31, "content": "<|end|>", "special": true}],
  "normalizer": null,
  "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "use_regex": true},
  "post_processor": null,
  "decoder": {"type": "ByteLevel"},
  "model": {"type": "BPE", "dropout": null, "unk_token": null, "merges": [], "vocab": {
    "{": 0, "}": 1, "\"": 2, ":": 3, ",": 4, "Ġ": 5, "name": 6, "\"name": 7, "\":": 8,
    "ĠĠ": 9, "1": 10, "12": 11, "Ġ\"": 12, "\"}": 13, "age": 14, "a": 15, "n": 16,
    "{\"": 17, "Ġ1": 18, "true": 19, "t": 20, "r": 21, "u": 22, "e": 23, "m": 24, "g": 25,
    "\"a": 26, ",Ġ\"": 27, "ĊĊ": 28, "\"Ġ": 29, "12}": 30}}
})";

// The vocabulary walk's allowed set equals feeding every token on its own, at each state
// along a text.
TEST(JsonConstraint, MaskEqualsTestingEveryTokenAlone) {
  auto tokenizer = Tokenizer::from_json(kJsonVocab, "");
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status().message();
  const Tokenizer& tok = **tokenizer;
  for (auto [schema, text] :
       {std::pair{R"({"type": "object", "properties": {"name": {"type": "string"},
                  "age": {"type": "integer"}}, "required": ["name"]})",
                  R"({"name": "na", "age": 12})"},
        std::pair{R"({"type": "object"})", R"({"a": [true, 1], "n": {"e": "t"}})"}}) {
    auto g = grammar(schema);
    JsonConstraint constraint(tok, g);
    JsonState state = constraint.start();
    for (size_t at = 0; at <= std::string_view(text).size(); ++at) {
      std::vector<float> logits(size_t(tok.vocab_size()), 0.0f);
      const size_t allowed = constraint.mask(state, logits);
      size_t expected = 0;
      for (int32_t id = 0; id < tok.vocab_size(); ++id) {
        JsonState alone = state;
        const std::string_view bytes = constraint.bytes(id);
        const bool ok = !bytes.empty() && alone.feed(bytes);
        expected += ok;
        EXPECT_EQ(std::isinf(logits[size_t(id)]), !ok)
            << "token " << id << " after " << std::string_view(text).substr(0, at);
      }
      EXPECT_EQ(allowed, expected);
      if (at < std::string_view(text).size()) {
        ASSERT_TRUE(state.feed(text[at]));
      }
    }
    EXPECT_TRUE(state.complete());
  }
}

}  // namespace
}  // namespace nxrt::genai
