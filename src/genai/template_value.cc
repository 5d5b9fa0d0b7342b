// Python's printing, truth, equality and ordering for template values (template_value.h).
#include "genai/template_value.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "genai/utf8.h"

namespace nxrt::genai::tmpl {

void fail(std::string message) { throw TemplateException{std::move(message)}; }

const Value* DictData::find(const Value& key) const {
  for (const auto& [k, v] : items)
    if (equal(k, key)) return &v;
  return nullptr;
}

void DictData::set(const Value& key, Value value) {
  for (auto& [k, v] : items)
    if (equal(k, key)) {
      v = std::move(value);
      return;
    }
  items.emplace_back(key, std::move(value));
}

int64_t float_to_int(double x) {
  if (!(x > -9223372036854775808.0 && x < 9223372036854775808.0))
    fail(std::isfinite(x) ? "OverflowError: the integer is too large for 64 bits"
                          : "OverflowError: cannot convert float infinity or NaN to integer");
  return int64_t(x);
}

std::string type_name(const Value& v) {
  switch (v.kind) {
    case Kind::kUndefined:
      return "Undefined";
    case Kind::kNone:
      return "None";
    case Kind::kBool:
      return "bool";
    case Kind::kInt:
      return "int";
    case Kind::kFloat:
      return "float";
    case Kind::kStr:
      return "str";
    case Kind::kList:
      return v.list->generator   ? "generator"
             : v.list->has_range ? "range"
             : v.list->tuple     ? "tuple"
                                 : "list";
    case Kind::kDict:
      return "dict";
    case Kind::kNamespace:
      return "Namespace";
    case Kind::kCallable:
      return v.fn->type == Callable::kMacro     ? "Macro"
             : v.fn->type == Callable::kRefused ? "_Refused"
                                                : "_Builtin";
    case Kind::kLoop:
      return "_Loop";
  }
  return "object";
}

std::u32string to_u32(std::string_view s) {
  DecodedText d;
  decode_utf8_lenient(s, d);
  return std::u32string(d.chars.begin(), d.chars.end());
}

std::string from_u32(std::u32string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char32_t c : s) append_utf8(c, out);
  return out;
}

size_t char_count(std::string_view s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

bool is_space(char32_t c) {
  return (c >= 9 && c <= 13) || (c >= 0x1c && c <= 0x20) || c == 0x85 || c == 0xa0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 || c == 0x202f || c == 0x205f ||
         c == 0x3000;
}

// Case mapping for ASCII, Latin-1, Greek and Cyrillic: what chat text needs; other
// scripts have no case or are left as they are.
// Latin Extended-A pairs its letters (upper, lower) from an even code point in
// 0x100-0x137 and 0x14A-0x177, from an odd one in 0x139-0x148 and 0x179-0x17E.
static bool latin_a_pair(char32_t c, bool* upper) {
  if ((c >= 0x100 && c <= 0x12F) || (c >= 0x132 && c <= 0x137) || (c >= 0x14A && c <= 0x177)) {
    *upper = c % 2 == 0;
    return true;
  }
  if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E)) {
    *upper = c % 2 == 1;
    return true;
  }
  return false;
}
static char32_t lower_cp(char32_t c) {
  bool upper;
  if ((c >= 'A' && c <= 'Z') || (c >= 0xC0 && c <= 0xDE && c != 0xD7) ||
      (c >= 0x391 && c <= 0x3AB && c != 0x3A2) || (c >= 0x410 && c <= 0x42F))
    return c + 0x20;
  if (c >= 0x400 && c <= 0x40F) return c + 0x50;
  if (latin_a_pair(c, &upper)) return upper ? c + 1 : c;
  if (c == 0x178) return 0xFF;
  return c;
}
static char32_t upper_cp(char32_t c) {
  bool upper;
  if ((c >= 'a' && c <= 'z') || (c >= 0xE0 && c <= 0xFE && c != 0xF7) ||
      (c >= 0x3B1 && c <= 0x3CB && c != 0x3C2) || (c >= 0x430 && c <= 0x44F))
    return c - 0x20;
  if (c >= 0x450 && c <= 0x45F) return c - 0x50;
  if (latin_a_pair(c, &upper)) return upper ? c : c - 1;
  if (c == 0xFF) return 0x178;
  return c;
}
std::u32string lower_u32(std::u32string s) {
  for (char32_t& c : s) c = lower_cp(c);
  return s;
}
std::u32string upper_u32(std::u32string s) {
  std::u32string out;
  out.reserve(s.size());
  for (char32_t c : s) {
    if (c == 0xDF)
      out += U"SS";  // the one common letter whose capital is two
    else
      out += upper_cp(c);
  }
  return out;
}

// str.isprintable, closely enough for repr: controls, separators other than the space
// and format characters are escaped.
static bool printable(char32_t c) {
  if (c < 0x20 || (c >= 0x7f && c <= 0xa0) || c == 0xad) return false;
  if (c == 0x1680 || (c >= 0x2000 && c <= 0x200f) || (c >= 0x2028 && c <= 0x202f)) return false;
  if ((c >= 0x205f && c <= 0x206f) || c == 0x3000 || c == 0xfeff) return false;
  if ((c >= 0xd800 && c <= 0xdfff) || c >= 0x110000) return false;
  return true;
}

std::string repr_str(std::string_view s) {
  bool has_single = s.find('\'') != std::string_view::npos;
  bool has_double = s.find('"') != std::string_view::npos;
  char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  for (char32_t c : to_u32(s)) {
    if (c == '\\')
      out += "\\\\";
    else if (c == char32_t(quote))
      out += std::string("\\") + quote;
    else if (c == '\n')
      out += "\\n";
    else if (c == '\r')
      out += "\\r";
    else if (c == '\t')
      out += "\\t";
    else if (!printable(c)) {
      char buf[16];
      if (c >= 0x110000)
        std::snprintf(buf, sizeof buf, "\\x%02x", unsigned(c - 0x110000));
      else if (c < 0x100)
        std::snprintf(buf, sizeof buf, "\\x%02x", unsigned(c));
      else if (c < 0x10000)
        std::snprintf(buf, sizeof buf, "\\u%04x", unsigned(c));
      else
        std::snprintf(buf, sizeof buf, "\\U%08x", unsigned(c));
      out += buf;
    } else {
      append_utf8(c, out);
    }
  }
  out += quote;
  return out;
}

std::string float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string sci(buf, r.ptr);
  std::string sign;
  if (sci[0] == '-') {
    sign = "-";
    sci.erase(0, 1);
  }
  size_t e = sci.find('e');
  int exp = std::atoi(sci.c_str() + e + 1);
  std::string digits;
  for (size_t k = 0; k < e; ++k)
    if (sci[k] != '.') digits += sci[k];
  if (exp >= -4 && exp < 16) {
    std::string out;
    if (exp >= 0) {
      if (int(digits.size()) <= exp + 1) {
        out = digits + std::string(exp + 1 - digits.size(), '0') + ".0";
      } else {
        out = digits.substr(0, exp + 1) + "." + digits.substr(exp + 1);
      }
    } else {
      out = "0." + std::string(-exp - 1, '0') + digits;
    }
    return sign + out;
  }
  std::string mant = digits.substr(0, 1);
  if (digits.size() > 1) {
    mant += '.';
    mant.append(digits, 1);
  }
  char eb[16];
  std::snprintf(eb, sizeof eb, "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
  return sign + mant + eb;
}

static std::string join_items(const List& items, const char* open, const char* close,
                              bool one_comma) {
  std::string out = open;
  for (size_t k = 0; k < items.size(); ++k) {
    if (k) out += ", ";
    out += repr(items[k]);
  }
  if (one_comma && items.size() == 1) out += ",";
  return out + close;
}

static std::string dict_repr(const DictData& d) {
  std::string out = "{";
  bool first = true;
  for (const auto& [k, v] : d.items) {
    if (!first) out += ", ";
    first = false;
    out += repr(k) + ": " + repr(v);
  }
  return out + "}";
}

std::string to_str(const Value& v) {
  switch (v.kind) {
    case Kind::kUndefined:
      return "";
    case Kind::kNone:
      return "None";
    case Kind::kBool:
      return v.b ? "True" : "False";
    case Kind::kInt:
      return std::to_string(v.i);
    case Kind::kFloat:
      return float_repr(v.f);
    case Kind::kStr:
      return v.s;
    case Kind::kList:
      if (v.list->generator) return "<generator object>";
      if (v.list->has_range) {
        std::string out =
            "range(" + std::to_string(v.list->range[0]) + ", " + std::to_string(v.list->range[1]);
        if (v.list->range[2] != 1) out += ", " + std::to_string(v.list->range[2]);
        return out + ")";
      }
      return v.list->tuple ? join_items(v.list->items, "(", ")", true)
                           : join_items(v.list->items, "[", "]", false);
    case Kind::kDict:
      return dict_repr(*v.dict);
    case Kind::kNamespace:
      return "<Namespace " + dict_repr(*v.dict) + ">";
    case Kind::kCallable:
      if (v.fn->type == Callable::kMacro) return "<Macro " + repr_str(v.fn->name) + ">";
      if (v.fn->type == Callable::kRefused)
        return "<method " + v.fn->name + " of " + v.fn->owner + " (not available)>";
      return "<built-in " + v.fn->name + ">";
    case Kind::kLoop:
      return "<LoopContext " + std::to_string(v.loop->index0 + 1) + "/" +
             std::to_string(v.loop->items->items.size()) + ">";
  }
  return "";
}

std::string repr(const Value& v) {
  if (v.kind == Kind::kStr) return repr_str(v.s);
  if (v.kind == Kind::kUndefined) return "Undefined";
  return to_str(v);
}

bool truthy(const Value& v) {
  switch (v.kind) {
    case Kind::kUndefined:
    case Kind::kNone:
      return false;
    case Kind::kBool:
      return v.b;
    case Kind::kInt:
      return v.i != 0;
    case Kind::kFloat:
      return v.f != 0;
    case Kind::kStr:
      return !v.s.empty();
    case Kind::kList:
      return v.list->generator || !v.list->items.empty();
    case Kind::kDict:
      return !v.dict->items.empty();
    default:
      return true;
  }
}

static double num(const Value& v) {
  return v.kind == Kind::kFloat ? v.f : v.kind == Kind::kInt ? double(v.i) : double(v.b);
}
static int64_t inum(const Value& v) { return v.kind == Kind::kInt ? v.i : int64_t(v.b); }

bool equal(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.kind != Kind::kFloat && b.kind != Kind::kFloat) return inum(a) == inum(b);
    return num(a) == num(b);
  }
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case Kind::kUndefined:
    case Kind::kNone:
      return true;
    case Kind::kStr:
      return a.s == b.s;
    case Kind::kList: {
      const ListData &x = *a.list, &y = *b.list;
      if (x.generator || y.generator) return a.list == b.list;
      if (x.tuple != y.tuple || x.has_range != y.has_range || x.items.size() != y.items.size())
        return false;
      for (size_t k = 0; k < x.items.size(); ++k)
        if (!equal(x.items[k], y.items[k])) return false;
      return true;
    }
    case Kind::kDict: {
      if (a.dict->items.size() != b.dict->items.size()) return false;
      for (const auto& [k, v] : a.dict->items) {
        const Value* other = b.dict->find(k);
        if (!other || !equal(v, *other)) return false;
      }
      return true;
    }
    case Kind::kNamespace:
      return a.dict == b.dict;
    case Kind::kCallable:
      return a.fn == b.fn;
    case Kind::kLoop:
      return a.loop == b.loop;
    default:
      return false;
  }
}

std::string py_type(const Value& v) { return v.kind == Kind::kNone ? "NoneType" : type_name(v); }

template <typename T>
static bool apply_order(std::string_view op, const T& x, const T& y) {
  if (op == "<") return x < y;
  if (op == "<=") return x <= y;
  if (op == ">") return x > y;
  return x >= y;
}

bool ordered(std::string_view op, const Value& a, const Value& b) {
  if (a.is_undefined()) fail(a.s.empty() ? "undefined value" : a.s);
  if (b.is_undefined()) fail(b.s.empty() ? "undefined value" : b.s);
  if (a.is_number() && b.is_number()) {
    if (a.kind != Kind::kFloat && b.kind != Kind::kFloat) return apply_order(op, inum(a), inum(b));
    return apply_order(op, num(a), num(b));
  }
  // UTF-8 byte order is code point order.
  if (a.kind == Kind::kStr && b.kind == Kind::kStr) return apply_order(op, a.s, b.s);
  if (a.kind == Kind::kList && b.kind == Kind::kList && a.list->tuple == b.list->tuple &&
      !a.list->has_range && !b.list->has_range && !a.list->generator && !b.list->generator) {
    const List &x = a.list->items, &y = b.list->items;
    for (size_t k = 0; k < x.size() && k < y.size(); ++k)
      if (!equal(x[k], y[k])) return ordered(op, x[k], y[k]);
    return apply_order(op, x.size(), y.size());
  }
  std::string message = "TypeError: '";
  message += op;
  fail(message + "' not supported between instances of '" + py_type(a) + "' and '" + py_type(b) +
       "'");
}

static bool unhashable(const Value& v) {
  return (v.kind == Kind::kList && !v.list->tuple && !v.list->has_range && !v.list->generator) ||
         v.kind == Kind::kDict;
}

bool contains(const Value& container, const Value& item) {
  switch (container.kind) {
    case Kind::kStr:
      if (!item.is_str())
        fail("TypeError: 'in <string>' requires string as left operand, not " + py_type(item));
      return container.s.find(item.s) != std::string::npos;
    case Kind::kList:
      for (const Value& v : iterate(container))
        if (equal(v, item)) return true;
      return false;
    case Kind::kDict:
      if (unhashable(item)) fail("TypeError: unhashable type: '" + type_name(item) + "'");
      return container.dict->find(item) != nullptr;
    case Kind::kUndefined:
      return false;  // iterates as empty
    default:
      fail("TypeError: argument of type '" + py_type(container) + "' is not iterable");
  }
}

List iterate(const Value& v) {
  switch (v.kind) {
    case Kind::kList:
      if (v.list->generator) {
        if (v.list->consumed) return {};
        v.list->consumed = true;
        if (v.list->has_deferred) fail(v.list->deferred);
      }
      return v.list->items;
    case Kind::kDict: {
      List keys;
      for (const auto& kv : v.dict->items) keys.push_back(kv.first);
      return keys;
    }
    case Kind::kStr: {
      List chars;
      for (char32_t c : to_u32(v.s)) chars.push_back(Value::str(from_u32(std::u32string(1, c))));
      return chars;
    }
    case Kind::kUndefined:
      return {};
    default:
      fail("TypeError: '" + py_type(v) + "' object is not iterable");
  }
}

int64_t length(const Value& v) {
  switch (v.kind) {
    case Kind::kStr:
      return int64_t(char_count(v.s));
    case Kind::kList:
      if (v.list->generator) break;
      return int64_t(v.list->items.size());
    case Kind::kDict:
      return int64_t(v.dict->items.size());
    case Kind::kUndefined:
      return 0;
    default:
      break;
  }
  fail("TypeError: object of type '" + py_type(v) + "' has no len()");
}

}  // namespace nxrt::genai::tmpl
