#include "genai/json_constraint.h"

#include <limits>

#include "genai/utf8.h"

namespace nxrt::genai {

namespace {

bool digit(unsigned char c) { return c >= '0' && c <= '9'; }
bool hex(unsigned char c) { return digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

}  // namespace

void JsonPrefix::end_value() { mode_ = depth_ == 0 ? Mode::kDone : Mode::kAfterValue; }

bool JsonPrefix::value_start(unsigned char c) {
  if (depth_ == 0 && object_only_ && c != '{') return false;
  switch (c) {
    case '{':
    case '[':
      if (depth_ >= kMaxDepth) return false;
      stack_[size_t(depth_++)] = char(c);
      mode_ = c == '{' ? Mode::kKeyOrEnd : Mode::kArrayStart;
      return true;
    case '"':
      mode_ = Mode::kString;
      key_ = false;
      return true;
    case '-':
      mode_ = Mode::kNumber;
      number_ = Number::kMinus;
      return true;
    case 't':
    case 'f':
    case 'n':
      literal_ = c == 't' ? "rue" : c == 'f' ? "alse" : "ull";
      remaining_ = uint8_t(c == 'f' ? 4 : 3);
      mode_ = Mode::kLiteral;
      return true;
    default:
      if (!digit(c)) return false;
      mode_ = Mode::kNumber;
      number_ = c == '0' ? Number::kZero : Number::kInt;
      return true;
  }
}

bool JsonPrefix::number(unsigned char c) {
  const bool exponent = c == 'e' || c == 'E';
  switch (number_) {
    case Number::kMinus:
      if (!digit(c)) return false;
      number_ = c == '0' ? Number::kZero : Number::kInt;
      return true;
    case Number::kZero:
    case Number::kInt:
      if (digit(c) && number_ == Number::kInt) return true;
      if (c == '.') {
        number_ = Number::kDot;
        return true;
      }
      if (exponent) {
        number_ = Number::kE;
        return true;
      }
      break;  // the number ends before c
    case Number::kDot:
      if (!digit(c)) return false;
      number_ = Number::kFrac;
      return true;
    case Number::kFrac:
      if (digit(c)) return true;
      if (exponent) {
        number_ = Number::kE;
        return true;
      }
      break;
    case Number::kE:
      if (c == '+' || c == '-') {
        number_ = Number::kESign;
        return true;
      }
      if (!digit(c)) return false;
      number_ = Number::kExp;
      return true;
    case Number::kESign:
      if (!digit(c)) return false;
      number_ = Number::kExp;
      return true;
    case Number::kExp:
      if (digit(c)) return true;
      break;
  }
  end_value();  // a delimiter ends the number; it is read in the state that follows
  return feed(c);
}

bool JsonPrefix::feed(unsigned char c) {
  switch (mode_) {
    case Mode::kValue:
      return space(c) || value_start(c);
    case Mode::kArrayStart:
      if (space(c)) return true;
      if (c == ']') {
        --depth_;
        end_value();
        return true;
      }
      return value_start(c);
    case Mode::kKeyOrEnd:
      if (space(c)) return true;
      if (c == '}') {
        --depth_;
        end_value();
        return true;
      }
      [[fallthrough]];
    case Mode::kKey:
      if (space(c)) return true;
      if (c != '"') return false;
      mode_ = Mode::kString;
      key_ = true;
      return true;
    case Mode::kColon:
      if (space(c)) return true;
      if (c != ':') return false;
      mode_ = Mode::kValue;
      return true;
    case Mode::kAfterValue: {
      if (space(c)) return true;
      const char open = stack_[size_t(depth_ - 1)];
      if (c == ',') {
        mode_ = open == '{' ? Mode::kKey : Mode::kValue;
        return true;
      }
      if ((c == '}' && open == '{') || (c == ']' && open == '[')) {
        --depth_;
        end_value();
        return true;
      }
      return false;
    }
    case Mode::kString: {
      if (c == '"') {
        if (key_) {
          key_ = false;
          mode_ = Mode::kColon;
        } else {
          end_value();
        }
        return true;
      }
      if (c == '\\') {
        mode_ = Mode::kEscape;
        return true;
      }
      if (c < 0x20) return false;  // control characters must be escaped
      if (c < 0x80) return true;
      // A UTF-8 lead byte: the continuation bytes must follow, valid (genai/utf8.h).
      const Utf8Lead lead = utf8_lead(c);
      if (lead.length == 0) return false;
      remaining_ = uint8_t(lead.length - 1);
      utf8_min_ = lead.low;
      utf8_max_ = lead.high;
      mode_ = Mode::kUtf8;
      return true;
    }
    case Mode::kUtf8:
      if (c < utf8_min_ || c > utf8_max_) return false;
      utf8_min_ = 0x80;
      utf8_max_ = 0xBF;
      if (--remaining_ == 0) mode_ = Mode::kString;
      return true;
    case Mode::kEscape:
      if (c == 'u') {
        mode_ = Mode::kUnicode;
        remaining_ = 4;
        return true;
      }
      if (c != '"' && c != '\\' && c != '/' && c != 'b' && c != 'f' && c != 'n' && c != 'r' &&
          c != 't')
        return false;
      mode_ = Mode::kString;
      return true;
    case Mode::kUnicode:
      if (!hex(c)) return false;
      if (--remaining_ == 0) mode_ = Mode::kString;
      return true;
    case Mode::kNumber:
      return number(c);
    case Mode::kLiteral:
      if (c != static_cast<unsigned char>(*literal_)) return false;
      ++literal_;
      if (--remaining_ == 0) end_value();
      return true;
    case Mode::kDone:
      return space(c);
  }
  return false;
}

std::string_view JsonConstraint::bytes(int32_t id) const {
  auto b = tokenizer_.token_bytes(id, /*skip_special_tokens=*/true);
  return b.ok() ? *b : std::string_view();
}

std::string JsonPrefix::key() const {
  std::string k;
  k.reserve(16 + size_t(depth_));
  for (int v : {int(object_only_), int(mode_), int(number_), int(key_), int(remaining_),
                int(utf8_min_), int(utf8_max_)})
    k.push_back(char(v));
  const auto literal = reinterpret_cast<uintptr_t>(literal_);  // a static string's address
  k.append(reinterpret_cast<const char*>(&literal), sizeof(literal));
  k.append(stack_.data(), size_t(depth_));
  return k;
}

size_t JsonConstraint::mask(const JsonPrefix& state, std::span<float> logits) const {
  std::string key = state.key();
  auto it = allowed_.find(key);
  if (it == allowed_.end()) {
    if (allowed_.size() >= kMaxCachedStates) allowed_.clear();
    std::vector<uint8_t> ok(logits.size());
    for (size_t id = 0; id < ok.size(); ++id) {
      const std::string_view b = bytes(int32_t(id));
      JsonPrefix next = state;
      ok[id] = !b.empty() && next.feed(b);
    }
    it = allowed_.emplace(std::move(key), std::move(ok)).first;
  }
  const std::vector<uint8_t>& ok = it->second;
  size_t allowed = 0;
  for (size_t id = 0; id < logits.size(); ++id) {
    if (id < ok.size() && ok[id])
      ++allowed;
    else
      logits[id] = -std::numeric_limits<float>::infinity();
  }
  return allowed;
}

}  // namespace nxrt::genai
