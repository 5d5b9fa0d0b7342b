#include "genai/json_constraint.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <limits>

#include "genai/utf8.h"

namespace nxrt::genai {

namespace {

using Node = JsonSchemaNode;
using Kind = JsonState::Kind;
using Frame = JsonState::Frame;

bool digit(unsigned char c) { return c >= '0' && c <= '9'; }
bool hex(unsigned char c) { return digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
bool space(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// Frame::sub of each kind.
enum ObjectAt : uint8_t { kObjectOpen, kObjectNext, kObjectColon, kObjectAfter };
enum ArrayAt : uint8_t { kArrayOpen, kArrayNext, kArrayAfter };
enum StringAt : uint8_t { kChars, kEscape, kUnicode, kUtf8 };
enum NumberAt : uint8_t { kMinus, kZero, kInt, kDot, kFrac, kE, kESign, kExp };
// Frame::index of the literals every JSON value may be.
constexpr int32_t kTrue = -1, kFalse = -2, kNull = -3;

Frame frame(int32_t node, Kind kind, uint8_t sub = 0) {
  Frame f;
  f.node = node;
  f.kind = kind;
  f.sub = sub;
  return f;
}

// A count that only matters up to `min` when nothing bounds it above: kept small, so
// states that accept the same bytes have the same key.
int32_t counted(int32_t count, int32_t min, int32_t max) {
  return max == Node::kUnbounded ? std::min(count + 1, min) : count + 1;
}

}  // namespace

struct JsonState::Branch {
  int depth = 0;
  Frame f[kMaxDepth];

  Branch() = default;
  Branch(const Branch& o) : depth(o.depth) { std::copy_n(o.f, depth, f); }
  Branch& operator=(const Branch& o) {
    depth = o.depth;
    std::copy_n(o.f, depth, f);
    return *this;
  }
  Frame& top() { return f[depth - 1]; }
  bool push(const Frame& frame) {
    if (depth >= kMaxDepth) return false;
    f[depth++] = frame;
    return true;
  }
  void pop() { --depth; }
};

JsonState::JsonState(const JsonGrammar& grammar) : grammar_(&grammar) {
  frames_.push_back(frame(grammar.root(), Kind::kValue));
  ends_.push_back(1);
}

bool JsonState::feed(unsigned char c) {
  JsonState out(*grammar_);
  if (!next(c, out)) return false;
  *this = std::move(out);
  return true;
}

bool JsonState::feed(std::string_view bytes) {
  for (char c : bytes)
    if (!feed(static_cast<unsigned char>(c))) return false;
  return true;
}

bool JsonState::next(unsigned char c, JsonState& out) const {
  out.grammar_ = grammar_;
  out.frames_.clear();
  out.ends_.clear();
  Branch b;
  uint32_t begin = 0;
  for (uint32_t end : ends_) {
    b.depth = int(end - begin);
    std::copy(frames_.begin() + begin, frames_.begin() + end, b.f);
    step(b, c, out);
    begin = end;
  }
  return !out.ends_.empty();
}

bool JsonState::complete() const {
  uint32_t begin = 0;
  for (uint32_t end : ends_) {
    if (end == begin) return true;
    begin = end;
  }
  return false;
}

int64_t JsonState::string_room() const {
  int64_t room = INT64_MAX;
  uint32_t begin = 0;
  for (uint32_t end : ends_) {
    if (end == begin) return -1;
    const Frame& top = frames_[end - 1];
    if (top.kind != Kind::kString || top.sub != kChars) return -1;
    if (top.node >= 0 && grammar_->node(top.node).max_length != Node::kUnbounded)
      room = std::min<int64_t>(room, grammar_->node(top.node).max_length - top.count);
    begin = end;
  }
  return room;
}

std::string JsonState::key() const {
  std::string k(reinterpret_cast<const char*>(ends_.data()), ends_.size() * sizeof(uint32_t));
  k.append(reinterpret_cast<const char*>(frames_.data()), frames_.size() * sizeof(Frame));
  return k;
}

void JsonState::add(const Branch& b) {
  static_assert(sizeof(Frame) == 20, "frames compare as bytes: no padding");
  uint32_t begin = 0;
  for (uint32_t end : ends_) {
    if (end - begin == uint32_t(b.depth) &&
        std::memcmp(frames_.data() + begin, b.f, sizeof(Frame) * size_t(b.depth)) == 0)
      return;
    begin = end;
  }
  if (ends_.size() >= kMaxBranches) return;
  frames_.insert(frames_.end(), b.f, b.f + b.depth);
  ends_.push_back(uint32_t(frames_.size()));
}

void JsonState::step(Branch& b, unsigned char c, JsonState& out) const {
  if (b.depth == 0) {  // the value is complete: only whitespace may follow
    if (space(c)) out.add(b);
    return;
  }
  Frame& f = b.top();
  switch (f.kind) {
    case Kind::kValue: {
      if (space(c)) {
        out.add(b);
        return;
      }
      const int32_t node = f.node;
      b.pop();
      start(b, node, c, out);
      return;
    }
    case Kind::kObject:
      return object(b, c, out);
    case Kind::kKey:
    case Kind::kLiteral:
      return literal(b, c, out);
    case Kind::kArray:
      return array(b, c, out);
    case Kind::kString:
      return string(b, c, out);
    case Kind::kNumber:
      return number(b, c, out);
  }
}

// A value of `node` starts with byte c, on top of the frames of `base`.
void JsonState::start(const Branch& base, int32_t node, unsigned char c, JsonState& out) const {
  const Node& n = grammar_->node(node);
  if (!n.any_of.empty()) {
    for (int32_t alternative : n.any_of) start(base, alternative, c, out);
    return;
  }
  if (base.depth >= kMaxDepth) return;
  Branch b = base;
  if (!n.literals.empty()) {
    for (size_t i = 0; i < n.literals.size() && out.ends_.size() < kMaxBranches; ++i) {
      const std::string& text = n.literals[i];
      if (static_cast<unsigned char>(text[0]) != c) continue;
      Frame f = frame(node, Kind::kLiteral);
      f.index = int32_t(i);
      f.count = 1;
      b = base;
      b.push(f);
      if (text.size() == 1) b.pop();
      out.add(b);
    }
    return;
  }
  Frame f = frame(node, Kind::kValue);
  if (c == '{' && (n.types & Node::kObject)) {
    f = frame(node, Kind::kObject, kObjectOpen);
  } else if (c == '[' && (n.types & Node::kArray)) {
    f = frame(node, Kind::kArray, kArrayOpen);
  } else if (c == '"' && (n.types & Node::kString)) {
    f = frame(node, Kind::kString, kChars);
  } else if ((c == '-' || digit(c)) && (n.types & (Node::kNumber | Node::kInteger))) {
    f = frame(node, Kind::kNumber, c == '-' ? kMinus : c == '0' ? kZero : kInt);
    f.index = (n.types & Node::kNumber) ? 0 : 1;
  } else if ((c == 't' || c == 'f') && (n.types & Node::kBoolean)) {
    f = frame(node, Kind::kLiteral);
    f.index = c == 't' ? kTrue : kFalse;
    f.count = 1;
  } else if (c == 'n' && (n.types & Node::kNull)) {
    f = frame(node, Kind::kLiteral);
    f.index = kNull;
    f.count = 1;
  } else {
    return;
  }
  b.push(f);
  out.add(b);
}

void JsonState::object(Branch& b, unsigned char c, JsonState& out) const {
  Frame& f = b.top();
  const Node& n = grammar_->node(f.node);
  if (space(c)) {
    out.add(b);
    return;
  }
  const bool more =
      n.properties.empty() ? n.additional >= 0 : f.count < int32_t(n.properties.size());
  switch (f.sub) {
    case kObjectOpen:
    case kObjectAfter:
      if (c == '}' && f.count > n.last_required) {  // no required member left out
        b.pop();
        out.add(b);
      } else if (c == ',' && f.sub == kObjectAfter && more) {
        f.sub = kObjectNext;
        out.add(b);
      } else if (c == '"' && f.sub == kObjectOpen) {
        keys(b, out);
      }
      return;
    case kObjectNext:
      if (c == '"') keys(b, out);
      return;
    case kObjectColon: {
      if (c != ':') return;
      const int32_t value = f.index >= 0 ? n.properties[size_t(f.index)].node : n.additional;
      f.sub = kObjectAfter;
      if (b.push(frame(value, Kind::kValue))) out.add(b);
      return;
    }
  }
}

// An object member's key has begun (its opening quote read): one branch per name that
// may come next, in the schema's order, up to the first required one.
void JsonState::keys(const Branch& b, JsonState& out) const {
  if (b.depth < 1) return;
  const size_t at = size_t(b.depth - 1);  // the object's frame
  const Frame& f = b.f[at];
  const Node& n = grammar_->node(f.node);
  if (n.properties.empty()) {
    if (n.additional < 0) return;
    Branch k = b;
    k.f[at].sub = kObjectColon;
    k.f[at].index = -1;
    if (k.push(frame(-1, Kind::kString, kChars))) out.add(k);
    return;
  }
  for (int32_t j = f.count; j < int32_t(n.properties.size()); ++j) {
    if (out.ends_.size() >= kMaxBranches) return;
    Branch k = b;
    k.f[at].sub = kObjectColon;
    k.f[at].index = j;
    k.f[at].count = j + 1;
    Frame key = frame(f.node, Kind::kKey);
    key.index = j;
    key.count = 1;
    if (k.push(key)) out.add(k);
    if (n.properties[size_t(j)].required) break;
  }
}

void JsonState::literal(Branch& b, unsigned char c, JsonState& out) const {
  Frame& f = b.top();
  std::string_view text;
  if (f.kind == Kind::kKey)
    text = grammar_->node(f.node).properties[size_t(f.index)].key;
  else if (f.index < 0)
    text = f.index == kTrue ? "true" : f.index == kFalse ? "false" : "null";
  else
    text = grammar_->node(f.node).literals[size_t(f.index)];
  if (c != static_cast<unsigned char>(text[size_t(f.count)])) return;
  if (++f.count == int32_t(text.size())) b.pop();
  out.add(b);
}

void JsonState::array(Branch& b, unsigned char c, JsonState& out) const {
  Frame& f = b.top();
  const Node& n = grammar_->node(f.node);
  if (space(c)) {
    out.add(b);
    return;
  }
  if (f.sub != kArrayNext) {
    if (c == ']' && f.count >= n.min_items) {
      b.pop();
      out.add(b);
      return;
    }
    if (f.sub == kArrayAfter) {
      if (c == ',' && f.count < n.max_items) {
        f.sub = kArrayNext;
        out.add(b);
      }
      return;
    }
    if (n.max_items == 0) return;
  }
  // An element starts with c.
  f.sub = kArrayAfter;
  f.count = counted(f.count, n.min_items, n.max_items);
  start(b, n.items, c, out);
}

void JsonState::string(Branch& b, unsigned char c, JsonState& out) const {
  Frame& f = b.top();
  int32_t min = 0, max = Node::kUnbounded;  // a key's name has no bounds
  if (f.node >= 0) {
    min = grammar_->node(f.node).min_length;
    max = grammar_->node(f.node).max_length;
  }
  switch (f.sub) {
    case kChars: {
      if (c == '"') {
        if (f.count < min) return;
        b.pop();
        break;
      }
      if (f.count >= max || c < 0x20) return;  // control characters must be escaped
      if (c == '\\') {
        f.sub = kEscape;
      } else if (c < 0x80) {
        f.count = counted(f.count, min, max);
      } else {  // a UTF-8 lead byte: valid continuation bytes must follow (genai/utf8.h)
        const Utf8Lead lead = utf8_lead(c);
        if (lead.length == 0) return;
        f.sub = kUtf8;
        f.remaining = uint8_t(lead.length - 1);
        f.low = lead.low;
        f.high = lead.high;
      }
      break;
    }
    case kUtf8:
      if (c < f.low || c > f.high) return;
      f.low = 0x80;
      f.high = 0xBF;
      if (--f.remaining == 0) {
        f.sub = kChars;
        f.count = counted(f.count, min, max);
      }
      break;
    case kEscape:
      if (c == 'u') {
        f.sub = kUnicode;
        f.remaining = 4;
        f.low = 0;
      } else if (c == '"' || c == '\\' || c == '/' || c == 'b' || c == 'f' || c == 'n' ||
                 c == 'r' || c == 't') {
        f.sub = kChars;
        f.count = counted(f.count, min, max);
      } else {
        return;
      }
      break;
    case kUnicode:
      // No \uD800-\uDFFF: a surrogate pair is two escapes for one character, which would
      // break the character count; such characters are written as UTF-8 instead.
      if (!hex(c)) return;
      if (f.remaining == 3 && f.low && (c >= '8' || !digit(c))) return;
      f.low = f.remaining == 4 && (c == 'd' || c == 'D');
      if (--f.remaining == 0) {
        f.sub = kChars;
        f.low = 0x80;
        f.count = counted(f.count, min, max);
      }
      break;
  }
  out.add(b);
}

void JsonState::number(Branch& b, unsigned char c, JsonState& out) const {
  Frame& f = b.top();
  const bool integral = f.index == 1;
  const bool exponent = (c == 'e' || c == 'E') && !integral;
  switch (f.sub) {
    case kMinus:
      if (!digit(c)) return;
      f.sub = c == '0' ? kZero : kInt;
      out.add(b);
      return;
    case kZero:
    case kInt:
      if (digit(c) && f.sub == kInt) {
        out.add(b);
        return;
      }
      if (c == '.' && !integral) {
        f.sub = kDot;
        out.add(b);
        return;
      }
      if (exponent) {
        f.sub = kE;
        out.add(b);
        return;
      }
      break;
    case kDot:
      if (!digit(c)) return;
      f.sub = kFrac;
      out.add(b);
      return;
    case kFrac:
      if (digit(c) || exponent) {
        f.sub = digit(c) ? uint8_t(kFrac) : uint8_t(kE);
        out.add(b);
        return;
      }
      break;
    case kE:
    case kESign:
      if (f.sub == kE && (c == '+' || c == '-')) {
        f.sub = kESign;
      } else if (digit(c)) {
        f.sub = kExp;
      } else {
        return;
      }
      out.add(b);
      return;
    case kExp:
      if (digit(c)) {
        out.add(b);
        return;
      }
      break;
  }
  b.pop();  // the number ended before c: what holds it reads c
  step(b, c, out);
}

JsonConstraint::JsonConstraint(const Tokenizer& tokenizer,
                               std::shared_ptr<const JsonGrammar> grammar)
    : tokenizer_(tokenizer), grammar_(std::move(grammar)), order_(tokenizer.byte_order()) {}

std::string_view JsonConstraint::bytes(int32_t id) const {
  auto b = tokenizer_.token_bytes(id, /*skip_special_tokens=*/true);
  return b.ok() ? *b : std::string_view();
}

const std::vector<uint64_t>& JsonConstraint::allowed(const JsonState& state) const {
  std::string key = state.key();
  if (auto it = allowed_.find(key); it != allowed_.end()) return it->second;
  if (allowed_.size() >= kMaxCachedStates) allowed_.clear();
  std::vector<uint64_t> bits((size_t(tokenizer_.vocab_size()) + 63) / 64);
  // Inside strings, a plain text token is allowed when its characters fit: no walk.
  const int64_t room = state.string_room();
  if (walk_.empty()) walk_.push_back(state);
  walk_[0] = state;
  // Tokens in byte order: walk_[d] is the state after d bytes of the last token walked,
  // valid for d <= `valid`; its first `refused` bytes lead nowhere (SIZE_MAX: it was
  // allowed). `shared`: the bytes the current token shares with it.
  size_t valid = 0, refused = SIZE_MAX, shared = 0;
  for (size_t i = 0; i < order_.ids.size(); ++i) {
    const int32_t id = order_.ids[i];
    shared = std::min<size_t>(shared, order_.common[i]);
    if (refused <= shared) continue;  // begins with the refused bytes
    bool ok = true;
    if (room >= 0 && order_.plain_chars[size_t(id)] > 0) {
      ok = order_.plain_chars[size_t(id)] <= room;
    } else {
      const std::string_view b = bytes(id);
      refused = SIZE_MAX;
      if (walk_.size() <= b.size()) walk_.resize(b.size() + 1, state);
      for (size_t d = std::min(shared, valid); d < b.size(); ++d)
        if (!walk_[d].next(static_cast<unsigned char>(b[d]), walk_[d + 1])) {
          refused = d + 1;
          break;
        }
      valid = refused == SIZE_MAX ? b.size() : refused - 1;
      shared = SIZE_MAX;  // the next token's common entry is with this one
      ok = refused == SIZE_MAX;
    }
    if (ok) bits[size_t(id) / 64] |= uint64_t{1} << (id % 64);
  }
  return allowed_.emplace(std::move(key), std::move(bits)).first->second;
}

size_t JsonConstraint::mask(const JsonState& state, std::span<float> logits) const {
  const std::vector<uint64_t>& bits = allowed(state);
  size_t count = 0;
  for (size_t id = 0; id < logits.size(); ++id) {
    if (id / 64 < bits.size() && (bits[id / 64] >> (id % 64) & 1))
      ++count;
    else
      logits[id] = -std::numeric_limits<float>::infinity();
  }
  return count;
}

}  // namespace nxrt::genai
