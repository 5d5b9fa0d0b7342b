// Constrained decoding for response_format {"type": "json_object"}: a byte-level JSON
// recognizer that knows which bytes may extend what was generated, and from it which
// tokens of the vocabulary may come next. The output is then always the start of one JSON
// object, and the sequence ends as soon as that object is closed.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "genai/tokenizer.h"

namespace nxrt::genai {

// The state of reading one JSON text (RFC 8259) byte by byte; small and trivially
// copyable, so testing a token is a copy and a few feed() calls.
class JsonPrefix {
 public:
  static constexpr int kMaxDepth = 32;  // nesting beyond this is refused

  // `object_only`: the top-level value must be an object (json_object).
  explicit JsonPrefix(bool object_only = true) : object_only_(object_only) {}

  // Reads one byte; false (and the state is then unspecified) when no JSON text of the
  // required form starts with what was read plus this byte.
  bool feed(unsigned char c);
  bool feed(std::string_view bytes) {
    for (char c : bytes)
      if (!feed(static_cast<unsigned char>(c))) return false;
    return true;
  }
  // A whole value has been read (what follows may only be whitespace).
  bool complete() const { return mode_ == Mode::kDone; }
  // Everything that decides what may follow, as bytes: equal keys accept the same bytes.
  std::string key() const;

 private:
  enum class Mode : uint8_t {
    kValue,       // a value must start (whitespace allowed)
    kKeyOrEnd,    // after '{': a key or '}'
    kArrayStart,  // after '[': a value or ']'
    kKey,         // after ',' in an object: a key
    kColon,       // after a key
    kAfterValue,  // after a value in a container: ',' or the closing bracket
    kString,      // inside a string (key_ tells which)
    kEscape,      // after a backslash
    kUnicode,     // \u and 4 hex digits (remaining_ left)
    kUtf8,        // inside a multi-byte UTF-8 character (remaining_ continuation bytes)
    kNumber,      // a number (number_ tells where)
    kLiteral,     // true / false / null (literal_ and remaining_)
    kDone,        // the top-level value is complete
  };
  enum class Number : uint8_t { kMinus, kZero, kInt, kDot, kFrac, kE, kESign, kExp };

  bool value_start(unsigned char c);
  bool after_value(unsigned char c);  // a value just ended; c is the next byte, if any
  void end_value();
  bool number(unsigned char c);
  static bool space(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

  bool object_only_;
  Mode mode_ = Mode::kValue;
  Number number_ = Number::kZero;
  bool key_ = false;       // the string being read is an object key
  uint8_t remaining_ = 0;  // hex digits, UTF-8 continuation bytes or literal letters left
  const char* literal_ = nullptr;
  uint8_t utf8_min_ = 0x80;  // the first continuation byte's range (overlongs, surrogates)
  uint8_t utf8_max_ = 0xBF;
  int depth_ = 0;
  std::array<char, kMaxDepth> stack_{};  // '{' or '[' per open container
};

// Which tokens may come next under a JsonPrefix. A generation passes through few distinct
// states (inside a string at the same depth, after a value, ...), so the allowed set of
// each state is kept: testing the whole vocabulary (tens of thousands of tokens) happens
// once per new state, not once per token generated.
class JsonConstraint {
 public:
  explicit JsonConstraint(const Tokenizer& tokenizer) : tokenizer_(tokenizer) {}

  // Sets logits[id] to -infinity for every token that cannot extend `state`: special
  // tokens (EOS included: the sequence ends when the object closes) and tokens whose
  // bytes no JSON object continues with. Returns how many tokens stay allowed.
  size_t mask(const JsonPrefix& state, std::span<float> logits) const;
  // The bytes of token `id` ("" for special and unused ids).
  std::string_view bytes(int32_t id) const;

 private:
  static constexpr size_t kMaxCachedStates = 64;  // about 50 KB each for a 49k vocabulary

  const Tokenizer& tokenizer_;
  mutable std::unordered_map<std::string, std::vector<uint8_t>> allowed_;  // by state key
};

}  // namespace nxrt::genai
