// The filters chat templates may use, with Jinja2's semantics as the Python port's FILTERS
// implement them. The ones Jinja2 makes lazy (map, select, reject, unique, items, batch,
// reverse) give one-pass generators (ListData::generator), failures in them deferred to
// whoever reads that far, as a Python generator's would be.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>

#include "genai/template_eval.h"

namespace nxrt::genai::tmpl {
namespace {

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

bool is_alpha_cp(char32_t c) {
  if (c < 0x80) return std::isalpha(int(c)) != 0;
  return !is_space(c) && !(c >= 0x2000 && c <= 0x206f) && !(c >= 0x3000 && c <= 0x303f) &&
         !(c >= 0xff00 && c <= 0xff0f) && c != 0xa0 && !(c >= 0xa1 && c <= 0xbf) && c != 0xd7 &&
         c != 0xf7 && !(c >= 0x2190 && c <= 0x2bff) && !(c >= 0x1f000 && c <= 0x1faff) &&
         !(c >= 0x300 && c <= 0x36f);
}
bool is_digit_cp(char32_t c) { return c >= '0' && c <= '9'; }
bool is_word_cp(char32_t c) { return c == '_' || is_digit_cp(c) || is_alpha_cp(c); }

std::string capitalize(const std::string& s) {
  std::u32string u = lower_u32(to_u32(s));
  if (!u.empty()) u[0] = upper_u32(std::u32string(1, u[0]))[0];
  return from_u32(u);
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
  if (value.is_undefined()) fail("TypeError: Object of type Undefined is not JSON serializable");
  return Value::str(to_json(value, st));
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
      if (rounded > std::numeric_limits<int64_t>::max() ||
          rounded < std::numeric_limits<int64_t>::min())
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
  if (prec > 400 || prec < -400)
    fail("round: precision " + std::to_string(prec) + " is out of range");
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
    std::string s = from_u32(strip_u32(to_u32(v.s), nullptr, true, true)), t;
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
  std::string s = from_u32(strip_u32(to_u32(text), nullptr, true, true));
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
    if (v > (std::numeric_limits<int64_t>::max() - d) / base)
      fail("OverflowError: the integer " + text + " is too large for 64 bits");
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

// select / reject / selectattr / rejectattr.
Value select(State& state, const Value& value, List args, Kwargs& kwargs, bool keep, bool by_attr) {
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
  List no_args;
  Kwargs no_kwargs;
  List lines = call_method(state, Value::str(s), "splitlines", no_args, no_kwargs).list->items;
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

const char* const kFilterNames[] = {
    "abs",        "attr",   "batch",      "capitalize", "center",  "count",  "d",      "default",
    "dictsort",   "e",      "escape",     "first",      "float",   "format", "indent", "int",
    "items",      "join",   "last",       "length",     "list",    "lower",  "map",    "max",
    "min",        "reject", "rejectattr", "replace",    "reverse", "round",  "safe",   "select",
    "selectattr", "sort",   "string",     "sum",        "title",   "tojson", "trim",   "truncate",
    "unique",     "upper",  "wordcount"};

}  // namespace

int64_t as_int(const Value& v, const char* what) {
  if (v.kind == Kind::kInt) return v.i;
  if (v.kind == Kind::kBool) return v.b;
  if (v.is_undefined()) fail_undefined(v);
  fail(std::string("TypeError: '") + py_type(v) + "' object cannot be interpreted as " + what);
}

bool has_filter(std::string_view name) {
  for (const char* n : kFilterNames)
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
                  f == "selectattr" || f == "rejectattr");
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
      if (value.i == std::numeric_limits<int64_t>::min())
        fail("OverflowError: the integer is too large for 64 bits");
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
    List width{b.get(0, Value::integer(80))};
    Kwargs none;
    return call_method(state, Value::str(to_str(value)), "center", width, none);
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
      List comma{Value::str(",")};
      Kwargs none;
      Value parts = call_method(state, Value::str(to_str(b.at(2))), "split", comma, none);
      for (const Value& part : parts.list->items) getters.emplace_back(part, lower);
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
    return Value::str(
        from_u32(strip_u32(to_u32(to_str(value)), b.has(0) ? &b.at(0) : nullptr, true, true)));
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

}  // namespace nxrt::genai::tmpl
