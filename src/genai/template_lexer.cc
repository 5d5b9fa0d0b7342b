// The chat-template lexer: text and tags, with Jinja2's whitespace control as Hugging Face
// configures it (trim_blocks: a block tag eats the newline after it; lstrip_blocks: the
// spaces before a block or comment tag that starts its line go; '-' strips all whitespace
// on its side, '+' keeps it). Written from the Python port's _Lexer.
#include <cstdlib>
#include <cstring>

#include "genai/template_ast.h"
#include "genai/utf8.h"

namespace nxrt::genai::tmpl {
namespace {

[[noreturn]] void fail_at(std::string message, size_t pos) {
  throw TemplateException{std::move(message), pos};
}

bool all_space(std::string_view s) {
  for (char32_t c : to_u32(s))
    if (!is_space(c)) return false;
  return true;
}

std::string rstrip_space(std::string_view s) {
  std::u32string u = to_u32(s);
  while (!u.empty() && is_space(u.back())) u.pop_back();
  return from_u32(u);
}

// Length of the whitespace (Python's \s) starting at pos.
size_t skip_space(const std::string& src, size_t pos) {
  while (pos < src.size()) {
    unsigned char c = src[pos];
    if (c < 0x80) {
      if (!is_space(c)) break;
      ++pos;
      continue;
    }
    DecodedText d;
    size_t len = (c >= 0xF0) ? 4 : (c >= 0xE0) ? 3 : 2;
    decode_utf8_lenient(std::string_view(src).substr(pos, len), d);
    if (d.chars.empty() || !is_space(d.chars[0])) break;
    pos += d.offsets[1];
  }
  return pos;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_word_start(unsigned char c) { return c == '_' || std::isalpha(c) || c >= 0x80; }
bool is_word(unsigned char c) { return is_word_start(c) || is_digit(c); }

// \d(?:_?\d)* with `ok` the digit class: the end, or npos when no digit is at pos.
template <typename Ok>
size_t digits_us(const std::string& s, size_t pos, Ok ok) {
  if (pos >= s.size() || !ok(s[pos])) return std::string::npos;
  ++pos;
  while (pos < s.size()) {
    if (ok(s[pos]))
      ++pos;
    else if (s[pos] == '_' && pos + 1 < s.size() && ok(s[pos + 1]))
      pos += 2;
    else
      break;
  }
  return pos;
}

size_t match_exponent(const std::string& s, size_t pos) {
  if (pos >= s.size() || (s[pos] != 'e' && s[pos] != 'E')) return std::string::npos;
  ++pos;
  if (pos < s.size() && (s[pos] == '+' || s[pos] == '-')) ++pos;
  return digits_us(s, pos, is_digit);
}

// (?:0|[1-9](?:_?\d)*)(?:\.\d(?:_?\d)*(?:exponent)?|exponent)
size_t match_float(const std::string& s, size_t pos) {
  size_t p = s[pos] == '0' ? pos + 1 : digits_us(s, pos, is_digit);
  if (p == std::string::npos) return p;
  if (p < s.size() && s[p] == '.') {
    size_t q = digits_us(s, p + 1, is_digit);
    if (q == std::string::npos) return q;
    size_t e = match_exponent(s, q);
    return e == std::string::npos ? q : e;
  }
  return match_exponent(s, p);
}

// Integer literals: 0b.., 0o.., 0x.., decimal, or zeros; returns the end and the value.
size_t match_int(const std::string& s, size_t pos, int64_t* value) {
  auto prefixed = [&](char lo, int base, auto ok) -> size_t {
    if (s[pos] != '0' || pos + 1 >= s.size() || std::tolower(s[pos + 1]) != lo)
      return std::string::npos;
    size_t p = pos + 2;
    if (p < s.size() && s[p] == '_') ++p;
    size_t end = digits_us(s, p, ok);
    if (end == std::string::npos) return end;
    std::string digits;
    for (size_t k = pos + 2; k < end; ++k)
      if (s[k] != '_') digits += s[k];
    *value = std::strtoll(digits.c_str(), nullptr, base);
    return end;
  };
  size_t end;
  if ((end = prefixed('b', 2, [](char c) { return c == '0' || c == '1'; })) != std::string::npos)
    return end;
  if ((end = prefixed('o', 8, [](char c) { return c >= '0' && c <= '7'; })) != std::string::npos)
    return end;
  if ((end = prefixed('x', 16, [](char c) { return std::isxdigit((unsigned char)c) != 0; })) !=
      std::string::npos)
    return end;
  if (s[pos] == '0') {
    end = digits_us(s, pos, [](char c) { return c == '0'; });
    *value = 0;
    return end;
  }
  end = digits_us(s, pos, is_digit);
  if (end == std::string::npos) return end;
  std::string digits;
  for (size_t k = pos; k < end; ++k)
    if (s[k] != '_') digits += s[k];
  errno = 0;
  *value = std::strtoll(digits.c_str(), nullptr, 10);
  if (errno == ERANGE) fail_at("the integer literal " + digits + " is too large", pos);
  return end;
}

// The few \N{...} names templates use; Python's full name table is not carried here.
char32_t lookup_char_name(const std::string& name) {
  static const std::pair<const char*, char32_t> kNames[] = {
      {"BULLET", 0x2022},
      {"EM DASH", 0x2014},
      {"EN DASH", 0x2013},
      {"NO-BREAK SPACE", 0xa0},
      {"HORIZONTAL ELLIPSIS", 0x2026},
      {"LEFT-POINTING DOUBLE ANGLE QUOTATION MARK", 0xab},
      {"RIGHT-POINTING DOUBLE ANGLE QUOTATION MARK", 0xbb},
      {"DEGREE SIGN", 0xb0},
      {"CHECK MARK", 0x2713},
      {"ZERO WIDTH SPACE", 0x200b},
      {"SPACE", 0x20},
      {"LINE FEED", 0x0a},
      {"REPLACEMENT CHARACTER", 0xfffd}};
  for (const auto& [n, c] : kNames)
    if (name == n) return c;
  return 0;
}

// A string literal's escapes as Jinja2 reads them (Python's unicode-escape codec):
// unknown escapes stay as written. Returns false with *error set on a bad escape.
bool unescape(std::string_view body, std::string* out, std::string* error) {
  std::u32string in = to_u32(body), res;
  size_t n = in.size(), i = 0;
  auto hexval = [](char32_t c) -> int {
    if (c >= '0' && c <= '9') return int(c - '0');
    if (c >= 'a' && c <= 'f') return int(c - 'a' + 10);
    if (c >= 'A' && c <= 'F') return int(c - 'A' + 10);
    return -1;
  };
  while (i < n) {
    char32_t c = in[i];
    if (c != '\\' || i + 1 == n) {
      res += c;
      ++i;
      continue;
    }
    char32_t e = in[i + 1];
    i += 2;
    switch (e) {
      case '\n':
        continue;
      case '\\':
        res += U'\\';
        continue;
      case '\'':
        res += U'\'';
        continue;
      case '"':
        res += U'"';
        continue;
      case 'a':
        res += U'\a';
        continue;
      case 'b':
        res += U'\b';
        continue;
      case 'f':
        res += U'\f';
        continue;
      case 'n':
        res += U'\n';
        continue;
      case 'r':
        res += U'\r';
        continue;
      case 't':
        res += U'\t';
        continue;
      case 'v':
        res += U'\v';
        continue;
      default:
        break;
    }
    if (e == 'x' || e == 'u' || e == 'U') {
      size_t len = e == 'x' ? 2 : e == 'u' ? 4 : 8;
      uint32_t code = 0;
      bool ok = i + len <= n;
      for (size_t k = 0; ok && k < len; ++k) {
        int h = hexval(in[i + k]);
        if (h < 0)
          ok = false;
        else
          code = code * 16 + uint32_t(h);
      }
      if (!ok) {
        *error = std::string("truncated \\") + char(e) + " escape";
        return false;
      }
      if (code > 0x10FFFF) {
        *error = "illegal Unicode character";
        return false;
      }
      res += char32_t(code);
      i += len;
    } else if (e >= '0' && e <= '7') {
      uint32_t code = uint32_t(e - '0');
      size_t j = i;
      while (j < n && j < i + 2 && in[j] >= '0' && in[j] <= '7')
        code = code * 8 + uint32_t(in[j++] - '0');
      res += char32_t(code);
      i = j;
    } else if (e == 'N') {
      size_t end = i;
      while (end < n && in[end] != '}') ++end;
      if (i >= n || in[i] != '{' || end >= n) {
        *error = "malformed \\N character escape";
        return false;
      }
      char32_t code = lookup_char_name(from_u32(in.substr(i + 1, end - i - 1)));
      if (!code) {
        *error = "unknown Unicode character name";
        return false;
      }
      res += code;
      i = end + 1;
    } else if (e > 127) {
      // The codec sees the character's own escape after a literal backslash.
      char buf[16];
      if (e < 0x100)
        std::snprintf(buf, sizeof buf, "\\x%02x", unsigned(e));
      else if (e < 0x10000)
        std::snprintf(buf, sizeof buf, "\\u%04x", unsigned(e));
      else
        std::snprintf(buf, sizeof buf, "\\U%08x", unsigned(e));
      for (const char* p = buf; *p; ++p) res += char32_t(*p);
    } else {
      res += U'\\';
      res += e;
    }
  }
  *out = from_u32(res);
  return true;
}

class Lexer {
 public:
  explicit Lexer(const std::string& src) : src_(src) {}

  std::vector<Token> tokens() {
    size_t n = src_.size(), pos = 0;
    while (pos < n) {
      size_t start = find_tag_start(pos);
      if (start == std::string::npos) {
        push(TokKind::kData, src_.substr(pos), pos);
        break;
      }
      char kind = src_[start + 1];
      std::string sign;
      size_t after = start + 2;
      if (after < n && (src_[after] == '-' || src_[after] == '+')) sign = src_[after++];
      size_t raw_end = kind == '%' ? match_raw_begin(after) : std::string::npos;
      std::string text = strip_before(src_.substr(pos, start - pos), sign, kind != '{', pos);
      if (!text.empty()) push(TokKind::kData, text, pos);
      if (raw_end != std::string::npos)
        pos = raw(raw_end);
      else if (kind == '#')
        pos = comment(start, after);
      else
        pos = tag(start, after, kind == '%');
    }
    push(TokKind::kEof, "", n);
    return std::move(toks_);
  }

 private:
  void push(TokKind kind, std::string text, size_t pos) {
    toks_.push_back(Token{kind, std::move(text), Value(), pos});
  }

  size_t find_tag_start(size_t pos) const {
    for (size_t p = src_.find('{', pos); p != std::string::npos; p = src_.find('{', p + 1))
      if (p + 1 < src_.size() && std::strchr("{%#", src_[p + 1]) && src_[p + 1]) return p;
    return std::string::npos;
  }

  // \s*raw\s*(-%\}\s*|%\}) at pos: the end of the match, or npos.
  size_t match_raw_begin(size_t pos) const {
    size_t p = skip_space(src_, pos);
    if (src_.compare(p, 3, "raw") != 0) return std::string::npos;
    p = skip_space(src_, p + 3);
    if (src_.compare(p, 3, "-%}") == 0) return skip_space(src_, p + 3);
    if (src_.compare(p, 2, "%}") == 0) return p + 2;
    return std::string::npos;
  }

  std::string strip_before(std::string text, const std::string& sign, bool is_block,
                           size_t start) const {
    if (sign == "-") return rstrip_space(text);
    if (sign == "+" || !is_block) return text;
    size_t nl = text.rfind('\n');
    size_t line_start = nl == std::string::npos ? 0 : nl + 1;
    bool starts_line = line_start > 0 || start == 0 || src_[start - 1] == '\n';
    std::string_view rest = std::string_view(text).substr(line_start);
    if (starts_line && !rest.empty() && all_space(rest)) return text.substr(0, line_start);
    return text;
  }

  size_t after_end(size_t pos, char sign) const {
    if (sign == '-') return skip_space(src_, pos);
    if (sign == 0 && pos < src_.size() && src_[pos] == '\n') return pos + 1;
    return pos;
  }

  size_t comment(size_t start, size_t body) {
    size_t end = src_.find("#}", body);
    if (end == std::string::npos) fail_at("the comment is not closed (expected '#}')", start);
    char sign = end > body && (src_[end - 1] == '+' || src_[end - 1] == '-') ? src_[end - 1] : 0;
    return after_end(end + 2, sign);
  }

  // {%([-+]?)\s*endraw\s*(\+%\}|-%\}\s*|%\}\n?) searched from body.
  size_t raw(size_t body) {
    for (size_t p = src_.find("{%", body); p != std::string::npos; p = src_.find("{%", p + 1)) {
      size_t q = p + 2;
      std::string sign;
      if (q < src_.size() && (src_[q] == '-' || src_[q] == '+')) sign = src_[q++];
      q = skip_space(src_, q);
      if (src_.compare(q, 6, "endraw") != 0) continue;
      q = skip_space(src_, q + 6);
      size_t end;
      if (src_.compare(q, 3, "+%}") == 0)
        end = q + 3;
      else if (src_.compare(q, 3, "-%}") == 0)
        end = skip_space(src_, q + 3);
      else if (src_.compare(q, 2, "%}") == 0)
        end = q + 2 < src_.size() && src_[q + 2] == '\n' ? q + 3 : q + 2;
      else
        continue;
      std::string text = strip_before(src_.substr(body, p - body), sign, true, body);
      if (!text.empty()) push(TokKind::kData, text, body);
      return end;
    }
    fail_at("the raw block is not closed (expected '{% endraw %}')", body);
  }

  size_t tag(size_t start, size_t pos, bool block) {
    size_t n = src_.size();
    std::string close = block ? "%}" : "}}";
    push(block ? TokKind::kBlockBegin : TokKind::kVarBegin, src_.substr(start, 2), start);
    std::string brackets;
    TokKind end_kind = block ? TokKind::kBlockEnd : TokKind::kVarEnd;
    while (true) {
      pos = skip_space(src_, pos);
      if (pos >= n)
        fail_at(std::string("unexpected end of template: the ") +
                    (block ? "statement" : "print statement") + " is not closed (expected '" +
                    close + "')",
                start);
      if (brackets.empty()) {  // end markers count only outside brackets, as in Jinja2
        if (src_.compare(pos, 3, "-" + close) == 0) {
          push(end_kind, close, pos);
          return after_end(pos + 3, '-');
        }
        if (block && src_.compare(pos, 3, "+%}") == 0) {
          push(end_kind, close, pos);
          return pos + 3;
        }
        if (src_.compare(pos, 2, close) == 0) {
          push(end_kind, close, pos);
          return after_end(pos + 2, block ? 0 : '+');
        }
      }
      pos = expr_token(pos, brackets);
    }
  }

  size_t expr_token(size_t pos, std::string& brackets) {
    const std::string& s = src_;
    if (is_digit(s[pos])) {
      size_t end = match_float(s, pos);
      if (end != std::string::npos && !(pos > 0 && s[pos - 1] == '.')) {
        std::string text;
        for (size_t k = pos; k < end; ++k)
          if (s[k] != '_') text += s[k];
        push(TokKind::kFloat, text, pos);
        toks_.back().number = Value::number(std::strtod(text.c_str(), nullptr));
        return end;
      }
      int64_t value = 0;
      end = match_int(s, pos, &value);
      if (end != std::string::npos) {
        push(TokKind::kInt, s.substr(pos, end - pos), pos);
        toks_.back().number = Value::integer(value);
        return end;
      }
    }
    if (is_word_start((unsigned char)s[pos])) {
      size_t end = pos + 1;
      while (end < s.size() && is_word((unsigned char)s[end])) ++end;
      push(TokKind::kName, s.substr(pos, end - pos), pos);
      return end;
    }
    if (s[pos] == '\'' || s[pos] == '"') {
      char q = s[pos];
      size_t p = pos + 1;
      while (p < s.size() && s[p] != q) p += s[p] == '\\' ? 2 : 1;
      if (p >= s.size()) fail_at("the string literal is not closed", pos);
      std::string value, error;
      if (!unescape(std::string_view(s).substr(pos + 1, p - pos - 1), &value, &error))
        fail_at("bad string literal: " + error, pos);
      push(TokKind::kString, value, pos);
      return p + 1;
    }
    static const char* const kOps[] = {"//", "**", "==", "!=", ">=", "<=", "+", "-", "/",
                                       "*",  "%",  "~",  "[",  "]",  "(",  ")", "{", "}",
                                       ">",  "<",  "=",  ".",  ":",  "|",  ",", ";"};
    static const std::string kOpen = "([{", kClose = ")]}";
    for (const char* op : kOps) {
      size_t len = std::strlen(op);
      if (s.compare(pos, len, op) != 0) continue;
      if (len == 1 && kOpen.find(op[0]) != std::string::npos) {
        brackets += op[0];
      } else if (len == 1 && kClose.find(op[0]) != std::string::npos) {
        if (brackets.empty()) fail_at(std::string("unexpected '") + op + "'", pos);
        char want = kClose[kOpen.find(brackets.back())];
        brackets.pop_back();
        if (op[0] != want)
          fail_at(std::string("unexpected '") + op + "', expected '" + want + "'", pos);
      }
      push(TokKind::kOp, op, pos);
      return pos + len;
    }
    DecodedText d;
    decode_utf8_lenient(std::string_view(s).substr(pos, 4), d);
    fail_at("unexpected character " + repr_str(from_u32(std::u32string(1, d.chars[0]))), pos);
  }

  const std::string& src_;
  std::vector<Token> toks_;
};

}  // namespace

std::string Token::describe() const {
  switch (kind) {
    case TokKind::kEof:
      return "end of template";
    case TokKind::kString:
      return "string literal";
    default:
      return repr_str(text);
  }
}

std::vector<Token> lex(const std::string& src) { return Lexer(src).tokens(); }

}  // namespace nxrt::genai::tmpl
