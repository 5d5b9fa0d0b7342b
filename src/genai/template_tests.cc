// The tests of `value is name`: Jinja2's builtin tests with the semantics of the Python
// port's TESTS, called with Python's argument rules (a wrong count is a TypeError there).
#include <algorithm>
#include <cmath>
#include <iterator>

#include "genai/template_eval.h"

namespace nxrt::genai::tmpl {
namespace {

bool is_cased_lower(char32_t c) { return upper_u32(std::u32string(1, c))[0] != c; }
bool is_cased_upper(char32_t c) { return lower_u32(std::u32string(1, c))[0] != c; }

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

bool has_test(std::string_view name) {
  for (const char* n : kTestNames)
    if (name == n) return true;
  return false;
}

bool apply_test(const std::string& name, State& state, const Value& v, List args, Kwargs kwargs) {
  const std::string& t = name;
  // Python calls each test as a function of the value and its arguments: a wrong count
  // is a TypeError there (tests that take one argument: the comparisons, in, sameas and
  // divisibleby).
  static const char* const kOneArg[] = {
      "divisibleby", "in", "sameas", "eq", "equalto", "==",          "ne", "!=", "lt",
      "lessthan",    "<",  "le",     "<=", "gt",      "greaterthan", ">",  "ge", ">="};
  size_t want =
      std::any_of(std::begin(kOneArg), std::end(kOneArg), [&](const char* n) { return t == n; });
  std::string fname = t == "sequence"   ? "_t_sequence"
                      : t == "iterable" ? "_t_iterable"
                                        : "<lambda>";
  if (!kwargs.empty())
    fail("TypeError: " + fname + "() got an unexpected keyword argument '" + kwargs[0].first + "'");
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

}  // namespace nxrt::genai::tmpl
