// Constrained decoding for response_format json_object and json_schema: a byte-level
// recognizer of the JSON texts a grammar (genai/json_schema.h) allows, which knows which
// bytes may extend what was generated, and from it which tokens of the vocabulary may
// come next. The output is then always the start of a matching JSON value, and the
// sequence ends as soon as that value is closed.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "genai/json_schema.h"
#include "genai/tokenizer.h"

namespace nxrt::genai {

// Where reading a JSON text stands: a set of branches (one per way the schema may still
// read the bytes so far: anyOf alternatives, enum values, optional members), each a stack
// of frames. The text is refused when no branch is left.
class JsonState {
 public:
  static constexpr int kMaxDepth = 40;        // frames per branch: nesting beyond is refused
  static constexpr size_t kMaxBranches = 64;  // ambiguity beyond this drops branches

  explicit JsonState(const JsonGrammar& grammar);

  // Reads one byte; false (and the state is then unspecified) when no text the grammar
  // allows starts with what was read plus this byte.
  bool feed(unsigned char c);
  bool feed(std::string_view bytes);
  // The state after one more byte, into `out` (its buffers reused); false when none.
  bool next(unsigned char c, JsonState& out) const;
  // A whole value has been read (what follows may only be whitespace).
  bool complete() const;
  // When every branch is inside a string, between characters: how many more characters
  // fit (INT64_MAX: any number); text without quotes, backslashes and control characters
  // keeps the branches there. -1 otherwise.
  int64_t string_room() const;
  // Everything that decides what may follow, as bytes: equal keys accept the same bytes.
  std::string key() const;

  enum class Kind : uint8_t { kValue, kObject, kKey, kArray, kString, kNumber, kLiteral };
  struct Frame {
    int32_t node = 0;   // the schema node (-1: an object key of any name)
    int32_t count = 0;  // members / elements / characters read, or a literal's position
    int32_t index = 0;  // the property or literal; a number: 1 when it must be integral
    Kind kind = Kind::kValue;
    uint8_t sub = 0;                  // the frame's own state
    uint8_t remaining = 0;            // \u hex digits or UTF-8 continuation bytes left
    uint8_t low = 0x80, high = 0xBF;  // the next UTF-8 continuation byte's range
    uint8_t pad[3] = {};              // keys compare frames as bytes: no stray padding
  };
  struct Branch;

 private:
  void step(Branch& b, unsigned char c, JsonState& out) const;
  void start(const Branch& b, int32_t node, unsigned char c, JsonState& out) const;
  void object(Branch& b, unsigned char c, JsonState& out) const;
  void keys(const Branch& b, JsonState& out) const;
  void array(Branch& b, unsigned char c, JsonState& out) const;
  void string(Branch& b, unsigned char c, JsonState& out) const;
  void number(Branch& b, unsigned char c, JsonState& out) const;
  void literal(Branch& b, unsigned char c, JsonState& out) const;
  void add(const Branch& b);  // keeps a successor, once

  const JsonGrammar* grammar_;
  std::vector<Frame> frames_;   // the branches' frames, one after another
  std::vector<uint32_t> ends_;  // where each branch's frames end
};

// Which tokens may come next under a JsonState. A generation passes through few distinct
// states (inside a string at the same depth, after a value, ...), so the allowed set of
// each state is kept: testing the whole vocabulary (tens of thousands of tokens) happens
// once per new state, not once per token generated, and walks the vocabulary in byte order
// so a shared prefix is read once and a refused one skips every token that starts with it.
class JsonConstraint {
 public:
  JsonConstraint(const Tokenizer& tokenizer, std::shared_ptr<const JsonGrammar> grammar);

  JsonState start() const { return JsonState(*grammar_); }
  // Sets logits[id] to -infinity for every token that cannot extend `state`: special
  // tokens (EOS included: the sequence ends when the value closes) and tokens whose
  // bytes no allowed text continues with. Returns how many tokens stay allowed.
  size_t mask(const JsonState& state, std::span<float> logits) const;
  // The bytes of token `id` ("" for special and unused ids).
  std::string_view bytes(int32_t id) const;

 private:
  static constexpr size_t kMaxCachedStates = 256;  // a bit per token each: 6 KB for 49k

  const std::vector<uint64_t>& allowed(const JsonState& state) const;

  const Tokenizer& tokenizer_;
  std::shared_ptr<const JsonGrammar> grammar_;
  const Tokenizer::ByteOrder& order_;    // the vocabulary in byte order
  mutable std::vector<JsonState> walk_;  // the state after each byte of the token walked
  mutable std::unordered_map<std::string, std::vector<uint64_t>> allowed_;  // by state key
};

}  // namespace nxrt::genai
