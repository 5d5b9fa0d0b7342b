// The filters, tests and globals chat templates may use, with Jinja2's semantics as the
// Python port implements them (its FILTERS, TESTS and GLOBALS), plus Hugging Face's tojson
// (json.dumps: no HTML escaping, non-ASCII kept). Filters that Jinja2 makes lazy (map,
// select, unique, batch...) give lists here: templates only iterate them or pass them on.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <limits>
#include <optional>

#include "genai/template_eval.h"
#include "genai/utf8.h"

namespace nxrt::genai::tmpl {
namespace {

std::string py_type(const Value& v) { return v.kind == Kind::kNone ? "NoneType" : type_name(v); }

// Python's binding of call arguments to named parameters.
class Bound {
 public:
  Bound(const std::string& fname, std::initializer_list<const char*> names, List& args,
        Kwargs& kwargs)
      : values_(names.size()) {
    std::vector<const char*> n(names);
    if (args.size() > n.size())
      fail("TypeError: " + fname + "() takes at most " + std::to_string(n.size()) + " arguments (" +
           std::to_string(args.size()) + " given)");
    for (size_t k = 0; k < args.size(); ++k) values_[k] = args[k];
    for (auto& [key, v] : kwargs) {
      size_t k = 0;
      while (k < n.size() && key != n[k]) ++k;
      if (k == n.size())
        fail("TypeError: " + fname + "() got an unexpected keyword argument '" + key + "'");
      if (values_[k])
        fail("TypeError: " + fname + "() got multiple values for argument '" + key + "'");
      values_[k] = v;
    }
  }
  bool has(size_t k) const { return values_[k].has_value(); }
  // Absent, or given as None (Python's `x=None` defaults).
  bool none(size_t k) const { return !values_[k] || values_[k]->kind == Kind::kNone; }
  Value get(size_t k, Value dflt) const { return values_[k] ? *values_[k] : dflt; }
  const Value& at(size_t k) const { return *values_[k]; }

 private:
  std::vector<std::optional<Value>> values_;
};

void require(const Bound& b, size_t k, const std::string& fname, const char* name) {
  if (!b.has(k)) fail("TypeError: " + fname + "() missing required argument '" + name + "'");
}

int64_t as_int(const Value& v, const char* what = "an integer") {
  if (v.kind == Kind::kInt) return v.i;
  if (v.kind == Kind::kBool) return v.b;
  if (v.is_undefined()) fail_undefined(v);
  fail(std::string("TypeError: '") + py_type(v) + "' object cannot be interpreted as " + what);
}

void check_widths(const std::string& spec, State& state) {
  for (size_t p = 0; p < spec.size();) {
    if (!std::isdigit((unsigned char)spec[p])) {
      ++p;
      continue;
    }
    size_t q = p;
    while (q < spec.size() && std::isdigit((unsigned char)spec[q])) ++q;
    std::string digits = spec.substr(p, q - p);
    if (digits.size() > 9 || size_t(std::stoll(digits)) > state.max_output)
      fail("the width " + digits + " is over the output limit");
    p = q;
  }
}

std::u32string strip_chars(const std::u32string& s, const std::optional<std::u32string>& chars,
                           bool left, bool right) {
  auto strip = [&](char32_t c) {
    return chars ? chars->find(c) != std::u32string::npos : is_space(c);
  };
  size_t b = 0, e = s.size();
  if (left)
    while (b < e && strip(s[b])) ++b;
  if (right)
    while (e > b && strip(s[e - 1])) --e;
  return s.substr(b, e - b);
}

bool is_alpha_cp(char32_t c) {
  if (c < 0x80) return std::isalpha(int(c)) != 0;
  return !is_space(c) && !(c >= 0x2000 && c <= 0x206f) && !(c >= 0x3000 && c <= 0x303f) &&
         !(c >= 0xff00 && c <= 0xff0f) && c != 0xa0 && !(c >= 0xa1 && c <= 0xbf) && c != 0xd7 &&
         c != 0xf7 && !(c >= 0x2190 && c <= 0x2bff) && !(c >= 0x1f000 && c <= 0x1faff) &&
         !(c >= 0x300 && c <= 0x36f);
}
bool is_digit_cp(char32_t c) { return c >= '0' && c <= '9'; }
bool is_word_cp(char32_t c) { return c == '_' || is_digit_cp(c) || is_alpha_cp(c); }
bool is_cased_lower(char32_t c) { return upper_u32(std::u32string(1, c))[0] != c; }
bool is_cased_upper(char32_t c) { return lower_u32(std::u32string(1, c))[0] != c; }

std::string capitalize(const std::string& s) {
  std::u32string u = lower_u32(to_u32(s));
  if (!u.empty()) u[0] = upper_u32(std::u32string(1, u[0]))[0];
  return from_u32(u);
}

std::string pad(const std::string& s, int64_t width, char32_t fill, char align) {
  int64_t n = int64_t(char_count(s));
  if (width <= n) return s;
  int64_t marg = width - n, left = 0;
  if (align == '>')
    left = marg;
  else if (align == '^')
    left = marg / 2 + (marg & width & 1);
  std::string f = from_u32(std::u32string(1, fill)), out;
  for (int64_t k = 0; k < left; ++k) out += f;
  out += s;
  for (int64_t k = 0; k < marg - left; ++k) out += f;
  return out;
}

std::string replace_all(const std::string& s, const std::string& old, const std::string& with,
                        int64_t count, State& state) {
  size_t n = old.empty() ? char_count(s) + 1 : 0;
  if (!old.empty())
    for (size_t p = s.find(old); p != std::string::npos; p = s.find(old, p + old.size())) ++n;
  int64_t grow = int64_t(char_count(with)) - int64_t(char_count(old));
  state.size(size_t(std::max<int64_t>(0, int64_t(char_count(s)) + int64_t(n) * grow)));
  if (count < 0) count = std::numeric_limits<int64_t>::max();
  std::string out;
  if (old.empty()) {
    std::u32string u = to_u32(s);
    int64_t done = 0;
    for (size_t k = 0; k <= u.size(); ++k) {
      if (done < count) {
        out += with;
        ++done;
      }
      if (k < u.size()) out += from_u32(u.substr(k, 1));
    }
    return out;
  }
  size_t pos = 0;
  int64_t done = 0;
  while (done < count) {
    size_t p = s.find(old, pos);
    if (p == std::string::npos) break;
    out += s.substr(pos, p - pos) + with;
    pos = p + old.size();
    ++done;
  }
  return out + s.substr(pos);
}

List split(const std::string& s, const Value& sep, int64_t maxsplit, bool from_right) {
  List out;
  std::u32string u = to_u32(s);
  if (sep.kind == Kind::kNone || sep.is_undefined()) {
    std::vector<std::u32string> words;
    if (!from_right) {
      size_t k = 0;
      while (true) {
        while (k < u.size() && is_space(u[k])) ++k;
        if (k >= u.size()) break;
        if (maxsplit >= 0 && int64_t(words.size()) == maxsplit) {
          std::u32string rest = u.substr(k);
          while (!rest.empty() && is_space(rest.back())) rest.pop_back();
          words.push_back(rest);
          break;
        }
        size_t e = k;
        while (e < u.size() && !is_space(u[e])) ++e;
        words.push_back(u.substr(k, e - k));
        k = e;
      }
    } else {
      int64_t k = int64_t(u.size());
      while (true) {
        while (k > 0 && is_space(u[size_t(k - 1)])) --k;
        if (k <= 0) break;
        if (maxsplit >= 0 && int64_t(words.size()) == maxsplit) {
          size_t b = 0;
          while (b < size_t(k) && is_space(u[b])) ++b;
          words.push_back(u.substr(b, size_t(k) - b));
          break;
        }
        int64_t b = k;
        while (b > 0 && !is_space(u[size_t(b - 1)])) --b;
        words.push_back(u.substr(size_t(b), size_t(k - b)));
        k = b;
      }
      std::reverse(words.begin(), words.end());
    }
    for (auto& w : words) out.push_back(Value::str(from_u32(w)));
    return out;
  }
  if (!sep.is_str()) fail("TypeError: must be str or None, not " + py_type(sep));
  if (sep.s.empty()) fail("ValueError: empty separator");
  std::vector<std::string> parts;
  if (!from_right) {
    size_t pos = 0;
    while (true) {
      size_t p = s.find(sep.s, pos);
      if (p == std::string::npos || (maxsplit >= 0 && int64_t(parts.size()) == maxsplit)) break;
      parts.push_back(s.substr(pos, p - pos));
      pos = p + sep.s.size();
    }
    parts.push_back(s.substr(pos));
  } else {
    size_t end = s.size();
    std::vector<std::string> rev;
    while (true) {
      if (maxsplit >= 0 && int64_t(rev.size()) == maxsplit) break;
      if (end < sep.s.size()) break;
      size_t p = s.rfind(sep.s, end - sep.s.size());
      if (p == std::string::npos) break;
      rev.push_back(s.substr(p + sep.s.size(), end - p - sep.s.size()));
      end = p;
    }
    rev.push_back(s.substr(0, end));
    parts.assign(rev.rbegin(), rev.rend());
  }
  for (auto& p : parts) out.push_back(Value::str(p));
  return out;
}

List splitlines(const std::string& s, bool keepends) {
  List out;
  std::u32string u = to_u32(s);
  size_t start = 0;
  for (size_t k = 0; k < u.size(); ++k) {
    char32_t c = u[k];
    bool nl = c == '\n' || c == '\r' || c == 0x0b || c == 0x0c || c == 0x1c || c == 0x1d ||
              c == 0x1e || c == 0x85 || c == 0x2028 || c == 0x2029;
    if (!nl) continue;
    size_t end = k + 1;
    if (c == '\r' && k + 1 < u.size() && u[k + 1] == '\n') end = k + 2;
    out.push_back(Value::str(from_u32(u.substr(start, (keepends ? end : k) - start))));
    start = end;
    k = end - 1;
  }
  if (start < u.size()) out.push_back(Value::str(from_u32(u.substr(start))));
  return out;
}

// -- tojson: Python's json.dumps

void json_string(const std::string& s, bool ensure_ascii, std::string& out) {
  out += '"';
  for (char32_t c : to_u32(s)) {
    char buf[16];
    switch (c) {
      case '"':
        out += "\\\"";
        continue;
      case '\\':
        out += "\\\\";
        continue;
      case '\n':
        out += "\\n";
        continue;
      case '\r':
        out += "\\r";
        continue;
      case '\t':
        out += "\\t";
        continue;
      case '\b':
        out += "\\b";
        continue;
      case '\f':
        out += "\\f";
        continue;
      default:
        break;
    }
    if (c < 0x20 || (ensure_ascii && c >= 0x7f)) {
      if (c >= 0x10000 && c < 0x110000) {
        char32_t v = c - 0x10000;
        std::snprintf(buf, sizeof buf, "\\u%04x\\u%04x", unsigned(0xd800 + (v >> 10)),
                      unsigned(0xdc00 + (v & 0x3ff)));
      } else {
        std::snprintf(buf, sizeof buf, "\\u%04x", unsigned(c >= 0x110000 ? 0xfffd : c));
      }
      out += buf;
    } else {
      append_utf8(c, out);
    }
  }
  out += '"';
}

struct JsonStyle {
  bool ensure_ascii = false, sort_keys = false, has_indent = false;
  std::string indent, item_sep = ", ", key_sep = ": ";
};

void json_dump(const Value& v, const JsonStyle& st, int level, std::string& out) {
  if (level > 200) fail("tojson: the value is nested too deeply");
  auto newline = [&](int lvl) {
    out += '\n';
    for (int k = 0; k < lvl; ++k) out += st.indent;
  };
  switch (v.kind) {
    case Kind::kNone:
      out += "null";
      return;
    case Kind::kBool:
      out += v.b ? "true" : "false";
      return;
    case Kind::kInt:
      out += std::to_string(v.i);
      return;
    case Kind::kFloat:
      if (std::isnan(v.f))
        out += "NaN";
      else if (std::isinf(v.f))
        out += v.f < 0 ? "-Infinity" : "Infinity";
      else
        out += float_repr(v.f);
      return;
    case Kind::kStr:
      json_string(v.s, st.ensure_ascii, out);
      return;
    case Kind::kList: {
      if (v.list->has_range || v.list->generator)
        fail("TypeError: Object of type " + type_name(v) + " is not JSON serializable");
      if (v.list->items.empty()) {
        out += "[]";
        return;
      }
      out += '[';
      bool first = true;
      for (const Value& item : v.list->items) {
        if (!first) out += st.has_indent ? "," : st.item_sep;
        if (st.has_indent) newline(level + 1);
        first = false;
        json_dump(item, st, level + 1, out);
      }
      if (st.has_indent) newline(level);
      out += ']';
      return;
    }
    case Kind::kDict: {
      if (v.dict->items.empty()) {
        out += "{}";
        return;
      }
      std::vector<std::pair<std::string, const Value*>> items;
      for (const auto& [k, val] : v.dict->items) {
        std::string key;
        if (k.kind == Kind::kStr)
          key = k.s;
        else if (k.kind == Kind::kInt)
          key = std::to_string(k.i);
        else if (k.kind == Kind::kFloat)
          key = float_repr(k.f);
        else if (k.kind == Kind::kBool)
          key = k.b ? "true" : "false";
        else if (k.kind == Kind::kNone)
          key = "null";
        else
          fail("TypeError: keys must be str, int, float, bool or None, not " + py_type(k));
        items.emplace_back(key, &val);
      }
      if (st.sort_keys)
        std::stable_sort(items.begin(), items.end(),
                         [](const auto& a, const auto& b) { return a.first < b.first; });
      out += '{';
      bool first = true;
      for (const auto& [key, val] : items) {
        if (!first) out += st.has_indent ? "," : st.item_sep;
        if (st.has_indent) newline(level + 1);
        first = false;
        json_string(key, st.ensure_ascii, out);
        out += st.key_sep;
        json_dump(*val, st, level + 1, out);
      }
      if (st.has_indent) newline(level);
      out += '}';
      return;
    }
    default:
      fail("TypeError: Object of type " + type_name(v) + " is not JSON serializable");
  }
}

Value f_tojson(State& state, const Value& value, const Bound& b) {
  JsonStyle st;
  st.ensure_ascii = truthy(b.get(0, Value::boolean(false)));
  Value indent = b.get(1, Value::none());
  if (indent.kind == Kind::kInt) {
    state.size(size_t(std::max<int64_t>(indent.i, 0)), "indent");
    st.has_indent = true;
    st.indent = std::string(size_t(std::max<int64_t>(indent.i, 0)), ' ');
  } else if (indent.kind == Kind::kStr) {
    state.size(char_count(indent.s), "indent");
    st.has_indent = true;
    st.indent = indent.s;
  } else if (indent.kind != Kind::kNone) {
    fail("TypeError: tojson: indent must be an int or a str");
  }
  if (st.has_indent) st.item_sep = ",";
  Value seps = b.get(2, Value::none());
  if (seps.kind == Kind::kList && seps.list->items.size() == 2) {
    st.item_sep = to_str(seps.list->items[0]);
    st.key_sep = to_str(seps.list->items[1]);
  }
  st.sort_keys = truthy(b.get(3, Value::boolean(false)));
  if (st.has_indent && seps.kind == Kind::kList) {
    // with an indent, the item separator still ends the line
  }
  std::string out;
  if (value.is_undefined()) fail("TypeError: Object of type Undefined is not JSON serializable");
  json_dump(value, st, 0, out);
  return Value::str(std::move(out));
}

// A generator's item raised: what came before stays, the error waits for whoever reads on.
void defer(Value& gen, const TemplateException& e) {
  gen.list->has_deferred = true;
  gen.list->deferred = e.message;
}

// The getter of filters' attribute= arguments: a dotted path of keys (numbers index
// lists), each looked up like value[key].
struct AttrGetter {
  std::vector<Value> parts;
  bool lower = false;
  std::optional<Value> dflt;
  AttrGetter(const Value& attribute, bool lower_strings, std::optional<Value> d = std::nullopt)
      : lower(lower_strings), dflt(std::move(d)) {
    if (attribute.kind == Kind::kNone || attribute.is_undefined()) return;
    if (attribute.kind == Kind::kInt) {
      parts.push_back(attribute);
      return;
    }
    std::string s = to_str(attribute);
    size_t pos = 0;
    while (true) {
      size_t dot = s.find('.', pos);
      std::string p = s.substr(pos, dot == std::string::npos ? std::string::npos : dot - pos);
      bool digits = !p.empty() && std::all_of(p.begin(), p.end(), [](char c) {
        return std::isdigit((unsigned char)c);
      });
      parts.push_back(digits ? Value::integer(std::stoll(p)) : Value::str(p));
      if (dot == std::string::npos) break;
      pos = dot + 1;
    }
  }
  Value operator()(Value item, State& state) const {
    for (const Value& p : parts) {
      item = get_item(item, p, state);
      if (dflt && item.is_undefined()) item = *dflt;
    }
    if (lower && item.is_str()) item.s = from_u32(lower_u32(to_u32(item.s)));
    return item;
  }
};

Value f_round(const Value& value, const Bound& b) {
  Value precision = b.get(0, Value::integer(0));
  std::string method = to_str(b.get(1, Value::str("common")));
  int64_t prec = as_int(precision);
  if (!value.is_number())
    fail("TypeError: type " + py_type(value) + " doesn't define __round__ method");
  if (method == "common") {
    if (value.kind != Kind::kFloat) {
      int64_t v = value.kind == Kind::kInt ? value.i : value.b;
      if (prec >= 0) return Value::integer(v);
      if (prec < -18) return Value::integer(0);
      int64_t scale = 1;
      for (int64_t k = 0; k < -prec; ++k) scale *= 10;
      int64_t q = v / scale, r = v % scale;
      if (r < 0) {
        r += scale;
        --q;
      }
      if (2 * r > scale || (2 * r == scale && (q & 1))) ++q;
      __int128 rounded = __int128(q) * scale;
      if (rounded > std::numeric_limits<int64_t>::max() || rounded < std::numeric_limits<int64_t>::min())
        fail("OverflowError: the integer is too large for 64 bits");
      return Value::integer(int64_t(rounded));
    }
    double x = value.f;
    if (!std::isfinite(x)) return value;
    if (prec > 300) return value;
    if (prec >= 0) {
      char buf[512];
      std::snprintf(buf, sizeof buf, "%.*f", int(prec), x);  // correctly rounded, half-even
      return Value::number(std::strtod(buf, nullptr));
    }
    double scale = std::pow(10.0, double(-prec));
    return Value::number(std::nearbyint(x / scale) * scale);
  }
  if (method != "ceil" && method != "floor")
    fail("round: method must be 'common', 'ceil' or 'floor'");
  if (prec > 400 || prec < -400) fail("round: precision " + std::to_string(prec) + " is out of range");
  double x =
      value.kind == Kind::kFloat ? value.f : double(value.kind == Kind::kInt ? value.i : value.b);
  double scale = std::pow(10.0, double(prec));
  double r = method == "ceil" ? std::ceil(x * scale) : std::floor(x * scale);
  return Value::number(r / scale);
}

Value to_float(const Value& v, bool* ok) {
  *ok = true;
  if (v.kind == Kind::kFloat) return v;
  if (v.kind == Kind::kInt) return Value::number(double(v.i));
  if (v.kind == Kind::kBool) return Value::number(v.b);
  if (v.is_str()) {
    std::string s = from_u32(strip_chars(to_u32(v.s), std::nullopt, true, true)), t;
    for (size_t k = 0; k < s.size(); ++k) {
      if (s[k] == '_' && k > 0 && k + 1 < s.size() && std::isdigit((unsigned char)s[k - 1]) &&
          std::isdigit((unsigned char)s[k + 1]))
        continue;
      t += s[k];
    }
    if (!t.empty() && !(t.size() > 1 && (t[1] == 'x' || t[1] == 'X'))) {
      char* end = nullptr;
      double d = std::strtod(t.c_str(), &end);
      if (end && *end == 0) return Value::number(d);
    }
  }
  *ok = false;
  return Value();
}

bool parse_int(const std::string& text, int64_t base, int64_t* out) {
  std::string s = from_u32(strip_chars(to_u32(text), std::nullopt, true, true));
  bool neg = false;
  size_t k = 0;
  if (k < s.size() && (s[k] == '+' || s[k] == '-')) neg = s[k++] == '-';
  if (base == 0) {
    base = 10;
    if (k + 1 < s.size() && s[k] == '0') {
      char p = char(std::tolower(s[k + 1]));
      if (p == 'x')
        base = 16;
      else if (p == 'o')
        base = 8;
      else if (p == 'b')
        base = 2;
      if (base != 10) k += 2;
    }
  } else if (k + 1 < s.size() && s[k] == '0') {
    char p = char(std::tolower(s[k + 1]));
    if ((p == 'x' && base == 16) || (p == 'o' && base == 8) || (p == 'b' && base == 2)) k += 2;
  }
  if (k >= s.size()) return false;
  int64_t v = 0;
  bool prev_digit = false;
  for (; k < s.size(); ++k) {
    char c = s[k];
    if (c == '_' && prev_digit && k + 1 < s.size()) {
      prev_digit = false;
      continue;
    }
    int d = std::isdigit((unsigned char)c)   ? c - '0'
            : std::isalpha((unsigned char)c) ? std::tolower(c) - 'a' + 10
                                             : 99;
    if (d >= base) return false;
    if (v > (std::numeric_limits<int64_t>::max() - d) / base) return false;
    v = v * base + d;
    prev_digit = true;
  }
  *out = neg ? -v : v;
  return true;
}

Value f_int(const Value& value, const Bound& b) {
  Value dflt = b.get(0, Value::integer(0));
  int64_t base = as_int(b.get(1, Value::integer(10)));
  if (value.is_undefined()) fail_undefined(value);
  if (value.kind == Kind::kInt) return value;
  if (value.kind == Kind::kBool) return Value::integer(value.b);
  if (value.kind == Kind::kFloat) {
    if (!std::isfinite(value.f)) return dflt;
    return Value::integer(float_to_int(value.f));
  }
  if (value.is_str()) {
    int64_t v;
    if (parse_int(value.s, base, &v)) return Value::integer(v);
    bool ok;
    Value f = to_float(value, &ok);  // "3.7" -> 3, as Jinja2 does
    if (ok && std::isfinite(f.f) && std::fabs(f.f) < 9.2e18) return Value::integer(int64_t(f.f));
  }
  return dflt;
}

Value min_max(State& state, const Value& value, const Bound& b, bool want_max) {
  List items = iterate(value);
  if (items.empty()) return Value::undefined("no aggregated item, the sequence was empty");
  AttrGetter get(b.get(1, Value::none()), !truthy(b.get(0, Value::boolean(false))));
  size_t best = 0;
  Value best_key = get(items[0], state);
  for (size_t k = 1; k < items.size(); ++k) {
    Value key = get(items[k], state);
    if (ordered(want_max ? ">" : "<", key, best_key)) {  // what Python's max/min ask
      best = k;
      best_key = key;
    }
  }
  return items[best];
}

Value select(State& state, const Value& value, List args, Kwargs& kwargs, bool keep, bool by_attr,
             const std::string& fname) {
  std::optional<AttrGetter> get;
  size_t first = 0;
  if (by_attr) {
    if (args.empty()) fail("selectattr/rejectattr need an attribute name");
    get.emplace(args[0], false);
    first = 1;
  }
  std::string test;
  List test_args;
  if (args.size() > first) {
    test = to_str(args[first]);
    test_args.assign(args.begin() + long(first) + 1, args.end());
  }
  (void)fname;
  Value out = Value::make_generator({});
  if (!truthy(value)) return out;
  for (const Value& item : iterate(value)) {
    try {
      Value v = get ? (*get)(item, state) : item;
      bool ok = test.empty() ? truthy(v) : apply_test(test, state, v, test_args, kwargs);
      if (ok == keep) out.list->items.push_back(item);
    } catch (const TemplateException& e) {
      defer(out, e);
      break;
    }
  }
  return out;
}

std::string escape_html(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string indent_text(State& state, const Value& sv, const Bound& b) {
  Value width = b.get(0, Value::integer(4));
  bool first = truthy(b.get(1, Value::boolean(false)));
  bool blank = truthy(b.get(2, Value::boolean(false)));
  if (sv.is_undefined()) fail_undefined(sv);
  if (sv.kind == Kind::kList && !sv.list->has_range && !sv.list->generator)  // s + "\n"
    fail("TypeError: can only concatenate " + type_name(sv) + " (not \"str\") to " + type_name(sv));
  if (!sv.is_str())
    fail("TypeError: unsupported operand type(s) for +: '" + py_type(sv) + "' and 'str'");
  std::string indent =
      width.is_str() ? width.s : std::string(size_t(std::max<int64_t>(as_int(width), 0)), ' ');
  state.size(char_count(indent), "indent");
  std::string s = sv.s + "\n";  // so that a trailing newline stays one, as in Jinja2
  List lines = splitlines(s, false);
  state.size(char_count(s) + char_count(indent) * (lines.size() + 1));
  std::string text;
  if (blank) {
    for (size_t k = 0; k < lines.size(); ++k) text += (k ? "\n" + indent : "") + lines[k].s;
  } else {
    text = lines.empty() ? "" : lines[0].s;
    if (lines.size() > 1) {
      text += "\n";
      for (size_t k = 1; k < lines.size(); ++k)
        text += (k > 1 ? "\n" : "") + (lines[k].s.empty() ? "" : indent + lines[k].s);
    }
  }
  return first ? indent + text : text;
}

Value f_truncate(const Value& sv, const Bound& b) {
  int64_t length = as_int(b.get(0, Value::integer(255)));
  bool killwords = truthy(b.get(1, Value::boolean(false)));
  std::string end = to_str(b.get(2, Value::str("...")));
  int64_t leeway = b.none(3) ? 5 : as_int(b.at(3));
  if (!sv.is_str()) fail("TypeError: object of type '" + py_type(sv) + "' has no len()");
  std::u32string s = to_u32(sv.s), e = to_u32(end);
  if (length < int64_t(e.size()) || leeway < 0)
    fail("truncate: the length is shorter than the end marker, or the leeway is negative");
  if (int64_t(s.size()) <= length + leeway) return sv;
  std::u32string head = s.substr(0, size_t(length - int64_t(e.size())));
  if (!killwords) {
    size_t sp = head.rfind(U' ');
    if (sp != std::u32string::npos) head = head.substr(0, sp);
  }
  return Value::str(from_u32(head + e));
}

Value sum_values(const List& items, Value start) {
  Value acc = start;
  for (const Value& v : items) {
    if (acc.is_number() && v.is_number()) {
      if (acc.kind != Kind::kFloat && v.kind != Kind::kFloat)
        acc = Value::integer((acc.kind == Kind::kInt ? acc.i : acc.b) +
                             (v.kind == Kind::kInt ? v.i : v.b));
      else
        acc = Value::number(
            (acc.kind == Kind::kFloat ? acc.f : double(acc.kind == Kind::kInt ? acc.i : acc.b)) +
            (v.kind == Kind::kFloat ? v.f : double(v.kind == Kind::kInt ? v.i : v.b)));
    } else if (acc.kind == Kind::kList && v.kind == Kind::kList) {
      List joined = acc.list->items;
      joined.insert(joined.end(), v.list->items.begin(), v.list->items.end());
      acc = Value::make_list(std::move(joined), acc.list->tuple);
    } else {
      if (v.is_undefined()) fail_undefined(v);
      fail("TypeError: unsupported operand type(s) for +: '" + py_type(acc) + "' and '" +
           py_type(v) + "'");
    }
  }
  return acc;
}

bool has_upper_lower(const std::string& s, bool want_lower) {
  bool cased = false;
  for (char32_t c : to_u32(s)) {
    if (is_cased_lower(c)) {
      if (!want_lower) return false;
      cased = true;
    } else if (is_cased_upper(c)) {
      if (want_lower) return false;
      cased = true;
    }
  }
  return cased;
}

const char* const kFilterNames[] = {
    "abs",        "attr",   "batch",      "capitalize", "center",  "count",  "d",      "default",
    "dictsort",   "e",      "escape",     "first",      "float",   "format", "indent", "int",
    "items",      "join",   "last",       "length",     "list",    "lower",  "map",    "max",
    "min",        "reject", "rejectattr", "replace",    "reverse", "round",  "safe",   "select",
    "selectattr", "sort",   "string",     "sum",        "title",   "tojson", "trim",   "truncate",
    "unique",     "upper",  "wordcount"};

const char* const kTestNames[] = {
    "defined",     "undefined", "none",        "boolean", "true",     "false",    "integer",
    "float",       "number",    "string",      "mapping", "sequence", "iterable", "callable",
    "odd",         "even",      "divisibleby", "lower",   "upper",    "in",       "sameas",
    "escaped",     "filter",    "test",        "eq",      "equalto",  "==",       "ne",
    "!=",          "lt",        "lessthan",    "<",       "le",       "<=",       "gt",
    "greaterthan", ">",         "ge",          ">="};

Value mod2(State& state, const Value& v, const Value& n) {
  if (v.is_undefined()) fail_undefined(v);
  if (v.is_str()) return Value::str(percent_format(state, v.s, n));
  if (!v.is_number() || !n.is_number())
    fail("TypeError: unsupported operand type(s) for %: '" + py_type(v) + "' and '" + py_type(n) +
         "'");
  if (v.kind != Kind::kFloat && n.kind != Kind::kFloat) {
    int64_t x = v.kind == Kind::kInt ? v.i : v.b, y = n.kind == Kind::kInt ? n.i : n.b;
    if (y == 0) fail("ZeroDivisionError: integer modulo by zero");
    int64_t r = x % y;
    if (r != 0 && ((r < 0) != (y < 0))) r += y;
    return Value::integer(r);
  }
  double x = v.kind == Kind::kFloat ? v.f : double(v.kind == Kind::kInt ? v.i : v.b);
  double y = n.kind == Kind::kFloat ? n.f : double(n.kind == Kind::kInt ? n.i : n.b);
  if (y == 0) fail("ZeroDivisionError: float modulo");
  double r = std::fmod(x, y);
  if (r != 0 && ((r < 0) != (y < 0))) r += y;
  return Value::number(r);
}

}  // namespace

bool has_filter(std::string_view name) {
  for (const char* n : kFilterNames)
    if (name == n) return true;
  return false;
}

bool has_test(std::string_view name) {
  for (const char* n : kTestNames)
    if (name == n) return true;
  return false;
}

Value apply_filter(const std::string& name, State& state, Value value, List args, Kwargs kwargs) {
  const std::string& f = name;
  if (f == "map") {
    std::function<Value(const Value&)> fn;
    bool by_attr = args.empty() && std::any_of(kwargs.begin(), kwargs.end(), [](const auto& kv) {
                     return kv.first == "attribute";
                   });
    if (by_attr) {
      Value attribute, dflt;
      bool has_default = false;
      for (auto& [k, v] : kwargs) {
        if (k == "attribute")
          attribute = v;
        else if (k == "default") {
          dflt = v;
          has_default = v.kind != Kind::kNone;
        } else
          fail("map: unexpected keyword argument '" + k + "'");
      }
      AttrGetter get(attribute, false, has_default ? std::optional<Value>(dflt) : std::nullopt);
      fn = [get, &state](const Value& item) { return get(item, state); };
    } else {
      if (args.empty()) fail("map: needs a filter name or attribute=");
      std::string fname = to_str(args[0]);
      if (!has_filter(fname)) fail("no filter named '" + fname + "'");
      List rest(args.begin() + 1, args.end());
      fn = [fname, rest, kwargs, &state](const Value& item) {
        return apply_filter(fname, state, item, rest, kwargs);
      };
    }
    Value out = Value::make_generator({});
    if (truthy(value))
      for (const Value& item : iterate(value)) {
        try {
          out.list->items.push_back(fn(item));
        } catch (const TemplateException& e) {
          defer(out, e);
          break;
        }
      }
    return out;
  }
  if (f == "select" || f == "reject" || f == "selectattr" || f == "rejectattr")
    return select(state, value, std::move(args), kwargs, f == "select" || f == "selectattr",
                  f == "selectattr" || f == "rejectattr", f);
  if (f == "format") {
    if (!args.empty() && !kwargs.empty())
      fail("format: positional and keyword arguments cannot be mixed");
    Value a;
    if (!kwargs.empty()) {
      a = Value::make_dict();
      for (auto& [k, v] : kwargs) a.dict->set(Value::str(k), v);
    } else {
      a = Value::make_list(args, true);
    }
    return Value::str(percent_format(state, to_str(value), a));
  }

  if (f == "abs") {
    Bound b(f, {}, args, kwargs);
    if (value.kind == Kind::kInt) {
      if (value.i == std::numeric_limits<int64_t>::min()) fail("OverflowError: the integer is too large for 64 bits");
      return Value::integer(value.i < 0 ? -value.i : value.i);
    }
    if (value.kind == Kind::kBool) return Value::integer(value.b);
    if (value.kind == Kind::kFloat) return Value::number(std::fabs(value.f));
    fail("TypeError: bad operand type for abs(): '" + py_type(value) + "'");
  }
  if (f == "attr") {
    Bound b(f, {"name"}, args, kwargs);
    require(b, 0, f, "name");
    std::string n = to_str(b.at(0));
    check_name(value, n);
    bool found = false;
    Value v = value.is_undefined() ? Value() : attribute(value, n, state, &found);
    return found ? v : Value::undefined("no attribute '" + n + "'");
  }
  if (f == "batch") {
    Bound b(f, {"linecount", "fill_with"}, args, kwargs);
    require(b, 0, f, "linecount");
    int64_t n = as_int(b.at(0));
    state.size(size_t(std::max<int64_t>(n, 0)), "batch");
    List out, cur;
    for (const Value& item : iterate(value)) {
      if (int64_t(cur.size()) == n) {
        out.push_back(Value::make_list(cur));
        cur.clear();
      }
      cur.push_back(item);
    }
    if (!cur.empty()) {
      if (!b.none(1))
        while (int64_t(cur.size()) < n) cur.push_back(b.at(1));
      out.push_back(Value::make_list(cur));
    }
    return Value::make_generator(std::move(out));
  }
  if (f == "capitalize") return Value::str(capitalize(to_str(value)));
  if (f == "center") {
    Bound b(f, {"width"}, args, kwargs);
    Value w = b.get(0, Value::integer(80));
    check_widths(to_str(w), state);
    return Value::str(pad(to_str(value), as_int(w), U' ', '^'));
  }
  if (f == "count" || f == "length") return Value::integer(length(value));
  if (f == "d" || f == "default") {
    Bound b(f, {"default_value", "boolean"}, args, kwargs);
    if (value.is_undefined() || (truthy(b.get(1, Value::boolean(false))) && !truthy(value)))
      return b.get(0, Value::str(""));
    return value;
  }
  if (f == "dictsort") {
    Bound b(f, {"case_sensitive", "by", "reverse"}, args, kwargs);
    if (value.is_undefined()) fail_undefined(value);
    std::string by = to_str(b.get(1, Value::str("key")));
    if (by != "key" && by != "value") fail("dictsort: 'by' must be 'key' or 'value'");
    if (value.kind != Kind::kDict)
      fail("AttributeError: '" + py_type(value) + "' object has no attribute 'items'");
    bool cs = truthy(b.get(0, Value::boolean(false)));
    size_t pos = by == "key" ? 0 : 1;
    List items;
    for (const auto& [k, v] : value.dict->items) items.push_back(Value::make_list({k, v}, true));
    auto key = [&](const Value& item) {
      Value k = item.list->items[pos];
      if (!cs && k.is_str()) k.s = from_u32(lower_u32(to_u32(k.s)));
      return k;
    };
    bool rev = truthy(b.get(2, Value::boolean(false)));
    std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) {
      return rev ? less(key(y), key(x)) : less(key(x), key(y));
    });
    return Value::make_list(std::move(items));
  }
  if (f == "e" || f == "escape") return Value::str(escape_html(to_str(value)));
  if (f == "first") {
    if (value.is_generator() && !value.list->consumed && !value.list->items.empty()) {
      value.list->consumed = true;  // (Python's would go on from the second item)
      return value.list->items[0];
    }
    List items = iterate(value);
    return items.empty() ? Value::undefined("no first item, the sequence was empty") : items[0];
  }
  if (f == "last") {
    if ((value.kind != Kind::kList && value.kind != Kind::kStr && value.kind != Kind::kDict &&
         !value.is_undefined()) ||
        value.is_generator())
      fail("TypeError: '" + py_type(value) + "' object is not reversible");
    List items = iterate(value);
    return items.empty() ? Value::undefined("no last item, the sequence was empty") : items.back();
  }
  if (f == "float") {
    Bound b(f, {"default"}, args, kwargs);
    if (value.is_undefined()) fail_undefined(value);
    bool ok;
    Value v = to_float(value, &ok);
    return ok ? v : b.get(0, Value::number(0.0));
  }
  if (f == "indent") {
    Bound b(f, {"width", "first", "blank"}, args, kwargs);
    return Value::str(indent_text(state, value, b));
  }
  if (f == "int") {
    Bound b(f, {"default", "base"}, args, kwargs);
    return f_int(value, b);
  }
  if (f == "items") {
    if (value.is_undefined()) return Value::make_generator({});
    if (value.kind != Kind::kDict) fail("items: can only get item pairs from a mapping");
    List out;
    for (const auto& [k, v] : value.dict->items) out.push_back(Value::make_list({k, v}, true));
    return Value::make_generator(std::move(out));
  }
  if (f == "join") {
    Bound b(f, {"d", "attribute"}, args, kwargs);
    List items = iterate(value);
    if (!b.none(1)) {
      AttrGetter get(b.at(1), false);
      for (Value& v : items) v = get(v, state);
    }
    std::string sep = to_str(b.get(0, Value::str("")));
    size_t total = char_count(sep) * items.size();
    std::vector<std::string> parts;
    for (const Value& v : items) {
      parts.push_back(to_str(v));
      total += char_count(parts.back());
    }
    state.size(total);
    std::string out;
    for (size_t k = 0; k < parts.size(); ++k) out += (k ? sep : "") + parts[k];
    return Value::str(std::move(out));
  }
  if (f == "list") return Value::make_list(iterate(value));
  if (f == "lower") return Value::str(from_u32(lower_u32(to_u32(to_str(value)))));
  if (f == "upper") return Value::str(from_u32(upper_u32(to_u32(to_str(value)))));
  if (f == "max" || f == "min") {
    Bound b(f, {"case_sensitive", "attribute"}, args, kwargs);
    return min_max(state, value, b, f == "max");
  }
  if (f == "replace") {
    Bound b(f, {"old", "new", "count"}, args, kwargs);
    require(b, 0, f, "old");
    require(b, 1, f, "new");
    int64_t count = b.none(2) ? -1 : as_int(b.at(2));
    return Value::str(replace_all(to_str(value), to_str(b.at(0)), to_str(b.at(1)), count, state));
  }
  if (f == "reverse") {
    if (value.is_str()) {
      std::u32string u = to_u32(value.s);
      std::reverse(u.begin(), u.end());
      return Value::str(from_u32(u));
    }
    bool was_list = value.kind == Kind::kList && !value.list->generator;
    List items = iterate(value);
    std::reverse(items.begin(), items.end());
    // reversed() of a list is an iterator; of anything else Jinja2 builds a list.
    return was_list ? Value::make_generator(std::move(items)) : Value::make_list(std::move(items));
  }
  if (f == "round") {
    Bound b(f, {"precision", "method"}, args, kwargs);
    return f_round(value, b);
  }
  if (f == "safe" || f == "string") return Value::str(to_str(value));
  if (f == "sort") {
    Bound b(f, {"reverse", "case_sensitive", "attribute"}, args, kwargs);
    bool rev = truthy(b.get(0, Value::boolean(false)));
    bool lower = !truthy(b.get(1, Value::boolean(false)));
    std::vector<AttrGetter> getters;
    if (b.none(2)) {
      getters.emplace_back(Value::none(), lower);
    } else {
      for (const Value& part : split(to_str(b.at(2)), Value::str(","), -1, false))
        getters.emplace_back(part, lower);
    }
    List items = iterate(value);
    std::vector<std::pair<Value, Value>> keyed;
    for (const Value& item : items) {
      List key;
      for (const auto& g : getters) key.push_back(g(item, state));
      keyed.emplace_back(Value::make_list(std::move(key)), item);
    }
    std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
      return rev ? less(y.first, x.first) : less(x.first, y.first);
    });
    List out;
    for (auto& kv : keyed) out.push_back(kv.second);
    return Value::make_list(std::move(out));
  }
  if (f == "sum") {
    Bound b(f, {"attribute", "start"}, args, kwargs);
    List items = iterate(value);
    if (!b.none(0)) {
      AttrGetter get(b.at(0), false);
      for (Value& v : items) v = get(v, state);
    }
    return sum_values(items, b.get(1, Value::integer(0)));
  }
  if (f == "title") {
    // Not str.title: Jinja2 starts words after spaces, dashes and opening brackets only
    // ("o'neil" stays "O'neil").
    std::u32string u = to_u32(to_str(value)), out;
    bool start = true;
    auto sep = [](char32_t c) {
      return is_space(c) || c == '-' || c == '(' || c == '{' || c == '[' || c == '<';
    };
    for (char32_t c : u) {
      if (sep(c)) {
        out += c;
        start = true;
      } else {
        out += start ? upper_u32(std::u32string(1, c))[0] : lower_u32(std::u32string(1, c))[0];
        start = false;
      }
    }
    return Value::str(from_u32(out));
  }
  if (f == "tojson") {
    Bound b(f, {"ensure_ascii", "indent", "separators", "sort_keys"}, args, kwargs);
    return f_tojson(state, value, b);
  }
  if (f == "trim") {
    Bound b(f, {"chars"}, args, kwargs);
    std::optional<std::u32string> chars;
    if (!b.none(0)) chars = to_u32(to_str(b.at(0)));
    return Value::str(from_u32(strip_chars(to_u32(to_str(value)), chars, true, true)));
  }
  if (f == "truncate") {
    Bound b(f, {"length", "killwords", "end", "leeway"}, args, kwargs);
    return f_truncate(value, b);
  }
  if (f == "unique") {
    Bound b(f, {"case_sensitive", "attribute"}, args, kwargs);
    AttrGetter get(b.get(1, Value::none()), !truthy(b.get(0, Value::boolean(false))));
    List seen, out;
    for (const Value& item : iterate(value)) {
      Value key = get(item, state);
      if ((key.kind == Kind::kList && !key.list->tuple) || key.kind == Kind::kDict) {
        Value gen = Value::make_generator(std::move(out));  // a set refuses it when reached
        defer(gen, TemplateException{"TypeError: unhashable type: '" + type_name(key) + "'"});
        return gen;
      }
      bool dup = false;
      for (const Value& s : seen)
        if (equal(s, key)) dup = true;
      if (!dup) {
        seen.push_back(key);
        out.push_back(item);
      }
    }
    return Value::make_generator(std::move(out));
  }
  if (f == "wordcount") {
    int64_t n = 0;
    bool in_word = false;
    for (char32_t c : to_u32(to_str(value))) {
      bool w = is_word_cp(c);
      if (w && !in_word) ++n;
      in_word = w;
    }
    return Value::integer(n);
  }
  fail("no filter named '" + f + "'");
}

bool apply_test(const std::string& name, State& state, const Value& v, List args, Kwargs kwargs) {
  const std::string& t = name;
  // Python calls each test as a function of the value and its arguments: a wrong count
  // is a TypeError there (tests that take one argument: the comparisons, in, sameas and
  // divisibleby).
  static const char* const kOneArg[] = {"divisibleby", "in", "sameas", "eq", "equalto", "==", "ne", "!=",
                                        "lt", "lessthan", "<", "le", "<=", "gt", "greaterthan", ">",
                                        "ge", ">="};
  size_t want = std::any_of(std::begin(kOneArg), std::end(kOneArg), [&](const char* n) { return t == n; });
  std::string fname = t == "sequence" ? "_t_sequence" : t == "iterable" ? "_t_iterable" : "<lambda>";
  if (!kwargs.empty()) fail("TypeError: " + fname + "() got an unexpected keyword argument '" + kwargs[0].first + "'");
  if (args.size() > want)
    fail("TypeError: " + fname + "() takes " + std::to_string(want + 1) + " positional argument" +
         (want ? "s" : "") + " but " + std::to_string(args.size() + 1) + " were given");
  if (args.size() < want) fail("TypeError: " + fname + "() missing 1 required positional argument");
  auto arg = [&](size_t k) -> const Value& { return args[k]; };
  if (t == "defined") return !v.is_undefined();
  if (t == "undefined") return v.is_undefined();
  if (t == "none") return v.kind == Kind::kNone;
  if (t == "boolean") return v.kind == Kind::kBool;
  if (t == "true") return v.kind == Kind::kBool && v.b;
  if (t == "false") return v.kind == Kind::kBool && !v.b;
  if (t == "integer") return v.kind == Kind::kInt;
  if (t == "float") return v.kind == Kind::kFloat;
  if (t == "number") return v.is_number();
  if (t == "string") return v.is_str();
  if (t == "mapping") return v.kind == Kind::kDict;
  if (t == "sequence")
    return v.kind == Kind::kStr || (v.kind == Kind::kList && !v.list->generator) ||
           v.kind == Kind::kDict || v.is_undefined();
  if (t == "iterable")
    return v.kind == Kind::kStr || v.kind == Kind::kList || v.kind == Kind::kDict ||
           v.is_undefined();
  if (t == "callable")
    return v.is_undefined() || (v.kind == Kind::kCallable && v.fn->type != Callable::kRefused);
  if (t == "odd") return equal(mod2(state, v, Value::integer(2)), Value::integer(1));
  if (t == "even") return equal(mod2(state, v, Value::integer(2)), Value::integer(0));
  if (t == "divisibleby") return equal(mod2(state, v, arg(0)), Value::integer(0));
  if (t == "lower") return has_upper_lower(to_str(v), true);
  if (t == "upper") return has_upper_lower(to_str(v), false);
  if (t == "in") return contains(arg(0), v);
  if (t == "sameas") {
    const Value& o = arg(0);
    if (v.kind != o.kind) return false;
    switch (v.kind) {
      case Kind::kNone:
      case Kind::kUndefined:
        return v.kind == Kind::kNone;
      case Kind::kBool:
        return v.b == o.b;
      case Kind::kInt:
        return v.i == o.i && v.i >= -5 && v.i <= 256;  // CPython's small ints
      case Kind::kList:
        return v.list == o.list;
      case Kind::kDict:
      case Kind::kNamespace:
        return v.dict == o.dict;
      case Kind::kCallable:
        return v.fn == o.fn;
      default:
        return false;
    }
  }
  if (t == "escaped") return false;
  if (t == "filter") return v.is_str() && has_filter(v.s);
  if (t == "test") return v.is_str() && has_test(v.s);
  if (t == "eq" || t == "equalto" || t == "==") return equal(v, arg(0));
  if (t == "ne" || t == "!=") return !equal(v, arg(0));
  if (t == "lt" || t == "lessthan" || t == "<") return ordered("<", v, arg(0));
  if (t == "le" || t == "<=") return ordered("<=", v, arg(0));
  if (t == "gt" || t == "greaterthan" || t == ">") return ordered(">", v, arg(0));
  if (t == "ge" || t == ">=") return ordered(">=", v, arg(0));
  fail("no test named '" + t + "'");
}

// -- globals

namespace {

constexpr int64_t kMaxRange = 100000;  // Jinja2's sandbox refuses longer ranges too

Value builtin(const std::string& name, std::function<Value(List&, Kwargs&, State&)> fn) {
  Value v = Value::of(Kind::kCallable);
  v.fn = std::make_shared<Callable>();
  v.fn->name = name;
  v.fn->fn = std::move(fn);
  return v;
}

void fill_dict(DictData& d, List& args, Kwargs& kwargs, const char* fname) {
  if (args.size() > 1) fail(std::string("TypeError: ") + fname + " expected at most 1 argument");
  if (!args.empty()) {
    const Value& a = args[0];
    if (a.kind == Kind::kDict || a.kind == Kind::kNamespace) {
      for (const auto& kv : a.dict->items) d.set(kv.first, kv.second);
    } else {
      for (const Value& pair : iterate(a)) {
        List kv = iterate(pair);
        if (kv.size() != 2)
          fail("ValueError: dictionary update sequence element has length " +
               std::to_string(kv.size()) + "; 2 is required");
        d.set(kv[0], kv[1]);
      }
    }
  }
  for (auto& [k, v] : kwargs) d.set(Value::str(k), v);
}

}  // namespace

void add_globals(Scope& scope) {
  scope.vars["range"] = builtin("range", [](List& args, Kwargs& kwargs, State&) {
    if (!kwargs.empty()) fail("TypeError: range() takes no keyword arguments");
    if (args.empty() || args.size() > 3)
      fail("TypeError: range expected at least 1 argument, got " + std::to_string(args.size()));
    int64_t start = 0, stop, step = 1;
    if (args.size() == 1) {
      stop = as_int(args[0]);
    } else {
      start = as_int(args[0]);
      stop = as_int(args[1]);
      if (args.size() == 3) step = as_int(args[2]);
    }
    if (step == 0) fail("ValueError: range() arg 3 must not be zero");
    __int128 n = step > 0 ? (stop > start ? (__int128(stop) - start + step - 1) / step : 0)
                          : (start > stop ? (__int128(start) - stop - step - 1) / -step : 0);
    if (n > kMaxRange)
      fail("range() of " + std::to_string(int64_t(n)) + " items (the limit is " +
           std::to_string(kMaxRange) + ")");
    List items;
    for (int64_t k = 0; k < int64_t(n); ++k) items.push_back(Value::integer(start + k * step));
    Value v = Value::make_list(std::move(items));
    v.list->has_range = true;
    v.list->range[0] = start;
    v.list->range[1] = stop;
    v.list->range[2] = step;
    return v;
  });
  scope.vars["dict"] = builtin("dict", [](List& args, Kwargs& kwargs, State&) {
    Value d = Value::make_dict();
    fill_dict(*d.dict, args, kwargs, "dict");
    return d;
  });
  scope.vars["namespace"] = builtin("namespace", [](List& args, Kwargs& kwargs, State&) {
    Value d = Value::make_dict();
    fill_dict(*d.dict, args, kwargs, "namespace");
    d.kind = Kind::kNamespace;
    return d;
  });
  scope.vars["raise_exception"] =
      builtin("raise_exception", [](List& args, Kwargs& kwargs, State&) -> Value {
        if (args.size() == 1 && kwargs.empty()) fail(to_str(args[0]));
        if (args.empty() && kwargs.size() == 1 && kwargs[0].first == "message")
          fail(to_str(kwargs[0].second));
        fail("TypeError: raise_exception() takes one argument (message)");
      });
  scope.vars["strftime_now"] = builtin("strftime_now", [](List& args, Kwargs&, State&) {
    if (args.size() != 1 || !args[0].is_str())
      fail("TypeError: strftime_now() takes one str argument");
    std::time_t now = std::time(nullptr);
    std::tm tm{};
    localtime_r(&now, &tm);
    char buf[512];
    size_t n = std::strftime(buf, sizeof buf, args[0].s.c_str(), &tm);
    return Value::str(std::string(buf, n));
  });
}

}  // namespace nxrt::genai::tmpl
