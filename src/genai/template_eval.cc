// The chat-template interpreter: Jinja2's scoping (a for loop's body and a macro call
// start fresh scopes, if does not), undefined values, Python's operators on the values,
// and the budgets. Written from the Python port's nodes' ev/render methods.
#include "genai/template_eval.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>

namespace nxrt::genai::tmpl {

void State::tick() {
  if (++iterations > max_iterations)
    fail("more than " + std::to_string(max_iterations) + " loop iterations and macro calls");
  if (max_seconds > 0 && std::chrono::steady_clock::now() > deadline) {
    fail("the template ran for more than " + float_repr(max_seconds) + " s");
  }
}

void State::write(std::string& out, std::string_view text) {
  written += char_count(text);
  if (written > max_output)
    fail("the template wrote more than " + std::to_string(max_output) + " characters");
  out += text;
}

void State::size(size_t n, const char* what) const {
  if (n > max_output)
    fail(std::string("the ") + what + " would have " + std::to_string(n) + " items (the limit is " +
         std::to_string(max_output) + ")");
}

Value Scope::lookup(const std::string& name) const {
  for (const Scope* s = this; s; s = s->parent.get()) {
    auto it = s->vars.find(name);
    if (it != s->vars.end()) return it->second;
  }
  return Value::undefined("'" + name + "' is undefined");
}

void fail_undefined(const Value& v) { fail(v.s.empty() ? "undefined value" : v.s); }

namespace {

// -- the loop object and macros

Value loop_field(const std::shared_ptr<LoopData>& loop, const std::string& name, bool* found) {
  *found = true;
  int64_t i = int64_t(loop->index0), n = int64_t(loop->items->items.size());
  if (name == "index") return Value::integer(i + 1);
  if (name == "index0") return Value::integer(i);
  if (name == "revindex") return Value::integer(n - i);
  if (name == "revindex0") return Value::integer(n - i - 1);
  if (name == "first") return Value::boolean(i == 0);
  if (name == "last") return Value::boolean(i == n - 1);
  if (name == "length") return Value::integer(n);
  if (name == "previtem")
    return i > 0 ? loop->items->items[size_t(i - 1)]
                 : Value::undefined("there is no previous item");
  if (name == "nextitem")
    return i + 1 < n ? loop->items->items[size_t(i + 1)]
                     : Value::undefined("there is no next item");
  if (name == "depth") return Value::integer(1);
  if (name == "depth0") return Value::integer(0);
  if (name == "cycle" || name == "changed") {
    Value v = Value::of(Kind::kCallable);
    v.fn = std::make_shared<Callable>();
    v.fn->name = "loop." + name;
    std::weak_ptr<LoopData> weak = loop;
    if (name == "cycle") {
      v.fn->fn = [weak](List& args, Kwargs&, State&) -> Value {
        auto l = weak.lock();
        if (args.empty()) fail("loop.cycle() needs at least one argument");
        return args[l->index0 % args.size()];
      };
    } else {
      v.fn->fn = [weak](List& args, Kwargs&, State&) -> Value {
        auto l = weak.lock();
        Value now = Value::make_list(args, true), before = Value::make_list(l->last_changed, true);
        if (!l->has_last_changed || !equal(now, before)) {
          l->has_last_changed = true;
          l->last_changed = args;
          return Value::boolean(true);
        }
        return Value::boolean(false);
      };
    }
    return v;
  }
  *found = false;
  return Value();
}

Value make_macro(const Node& def, const std::shared_ptr<Scope>& scope) {
  Value v = Value::of(Kind::kCallable);
  v.fn = std::make_shared<Callable>();
  v.fn->type = Callable::kMacro;
  v.fn->name = def.name;
  v.fn->macro = &def;
  v.fn->scope = scope;
  scope->state->macro_scopes.push_back(scope);
  return v;
}

Value call_macro(const Callable& macro, List& args, Kwargs& kwargs, State& state) {
  const Node& node = *macro.macro;
  const auto& params = node.ops;
  if (args.size() > params.size() && !node.uses_varargs)
    fail("macro '" + node.name + "' takes not more than " + std::to_string(params.size()) +
         " argument(s)");
  auto scope = Scope::child(macro.scope);
  auto take = [&](const std::string& key, Value* out) {
    for (auto it = kwargs.begin(); it != kwargs.end(); ++it)
      if (it->first == key) {
        if (out) *out = std::move(it->second);
        kwargs.erase(it);
        return true;
      }
    return false;
  };
  std::vector<size_t> missing;
  for (size_t i = 0; i < params.size(); ++i) {
    Value v;
    if (i < args.size()) {
      if (take(params[i], nullptr))
        fail("macro '" + node.name + "' got multiple values for argument '" + params[i] + "'");
      scope->vars[params[i]] = args[i];
    } else if (take(params[i], &v)) {
      scope->vars[params[i]] = std::move(v);
    } else {
      scope->vars[params[i]] = Value::undefined("parameter '" + params[i] + "' was not provided");
      if (node.args[i]) missing.push_back(i);
    }
  }
  // Defaults are computed in order inside the macro, as Jinja2 does: a default sees the
  // parameters (not the outer names they shadow), earlier ones with defaults.
  for (size_t i : missing) scope->vars[params[i]] = eval(*node.args[i], scope);
  Value caller;
  bool has_caller = take("caller", &caller);
  if (node.uses_caller)
    scope->vars["caller"] = has_caller ? caller : Value::undefined("no caller was given");
  else if (has_caller)
    fail("macro '" + node.name + "' takes no keyword argument 'caller'");
  if (node.uses_varargs) {
    List rest;
    for (size_t i = params.size(); i < args.size(); ++i) rest.push_back(args[i]);
    scope->vars["varargs"] = Value::make_list(std::move(rest), true);
  }
  if (node.uses_kwargs) {
    Value d = Value::make_dict();
    for (auto& [k, v] : kwargs) d.dict->set(Value::str(k), v);
    scope->vars["kwargs"] = d;
  } else if (!kwargs.empty()) {
    fail("macro '" + node.name + "' takes no keyword argument '" + kwargs.front().first + "'");
  }
  state.tick();
  if (++state.depth > state.max_depth) {
    --state.depth;
    fail("macro calls nested more than " + std::to_string(state.max_depth) + " deep");
  }
  std::string out;
  try {
    render_body(node.bodies[0], scope, out);
  } catch (...) {
    --state.depth;
    throw;
  }
  --state.depth;
  return Value::str(std::move(out));
}

// -- slices and indexes

int64_t as_index(const Value& v) {
  if (v.kind == Kind::kInt) return v.i;
  if (v.kind == Kind::kBool) return v.b;
  fail("TypeError: slice indices must be integers or None or have an __index__ method");
}

Value slice_value(const Value& obj, const Value* parts[3]) {
  if (obj.is_undefined()) fail_undefined(obj);
  bool is_str = obj.kind == Kind::kStr;
  if (!is_str && (obj.kind != Kind::kList || obj.list->generator)) {
    std::string desc = "slice(";
    for (int k = 0; k < 3; ++k) desc += (k ? ", " : "") + (parts[k] ? repr(*parts[k]) : "None");
    return Value::undefined(type_name(obj) + " object has no element " + desc + ")");
  }
  std::u32string chars;
  if (is_str) chars = to_u32(obj.s);
  int64_t n = is_str ? int64_t(chars.size()) : int64_t(obj.list->items.size());
  int64_t step = parts[2] && parts[2]->kind != Kind::kNone ? as_index(*parts[2]) : 1;
  if (step == 0) fail("ValueError: slice step cannot be zero");
  auto bound = [&](const Value* v, int64_t dflt) {
    if (!v || v->kind == Kind::kNone) return dflt;
    int64_t x = as_index(*v);
    if (x < 0) x += n;
    if (step > 0) return std::clamp<int64_t>(x, 0, n);
    return std::clamp<int64_t>(x, -1, n - 1);
  };
  int64_t start = bound(parts[0], step > 0 ? 0 : n - 1);
  int64_t stop = bound(parts[1], step > 0 ? n : -1);
  std::u32string s;
  List items;
  for (int64_t k = start; step > 0 ? k < stop : k > stop; k += step) {
    if (is_str)
      s += chars[size_t(k)];
    else
      items.push_back(obj.list->items[size_t(k)]);
  }
  if (is_str) return Value::str(from_u32(s));
  Value out = Value::make_list(std::move(items), obj.list->tuple);
  return out;
}

// obj[key] as Python's indexing: false when it fails with TypeError or LookupError.
bool index_value(const Value& obj, const Value& key, Value* out) {
  if (obj.kind == Kind::kDict) {
    const Value* v = obj.dict->find(key);
    if (v) *out = *v;
    return v != nullptr;
  }
  if (((obj.kind == Kind::kList && !obj.list->generator) || obj.kind == Kind::kStr) &&
      (key.kind == Kind::kInt || key.kind == Kind::kBool)) {
    int64_t i = key.kind == Kind::kInt ? key.i : key.b;
    if (obj.kind == Kind::kList) {
      int64_t n = int64_t(obj.list->items.size());
      if (i < 0) i += n;
      if (i < 0 || i >= n) return false;
      *out = obj.list->items[size_t(i)];
      return true;
    }
    std::u32string chars = to_u32(obj.s);
    int64_t n = int64_t(chars.size());
    if (i < 0) i += n;
    if (i < 0 || i >= n) return false;
    *out = Value::str(from_u32(chars.substr(size_t(i), 1)));
    return true;
  }
  return false;
}

bool special_object(const Value& v) {
  return v.kind == Kind::kNamespace || v.kind == Kind::kLoop ||
         (v.kind == Kind::kCallable && v.fn->type == Callable::kMacro);
}

// -- operators

double to_double(const Value& v) {
  return v.kind == Kind::kFloat ? v.f : v.kind == Kind::kInt ? double(v.i) : double(v.b);
}
int64_t to_int(const Value& v) { return v.kind == Kind::kInt ? v.i : int64_t(v.b); }
bool is_int_like(const Value& v) { return v.kind == Kind::kInt || v.kind == Kind::kBool; }

[[noreturn]] void unsupported(const std::string& op, const Value& a, const Value& b) {
  fail("TypeError: unsupported operand type(s) for " + op + ": '" + py_type(a) + "' and '" +
       py_type(b) + "'");
}

Value int_result(__int128 r) {
  if (r > std::numeric_limits<int64_t>::max() || r < std::numeric_limits<int64_t>::min())
    fail("OverflowError: the integer result is too large");
  return Value::integer(int64_t(r));
}

Value repeat(State& state, const Value& seq, int64_t n) {
  n = std::max<int64_t>(n, 0);
  if (n > 0 && size_t(n) > state.max_output) {  // len * n could wrap around size_t
    size_t len = seq.kind == Kind::kStr ? char_count(seq.s) : seq.list->items.size();
    if (len > 0) state.size(size_t(n) > SIZE_MAX / len ? SIZE_MAX : size_t(n) * len);
  }
  if (seq.kind == Kind::kStr) {
    state.size(char_count(seq.s) * size_t(n));
    std::string out;
    for (int64_t k = 0; k < n; ++k) out += seq.s;
    return Value::str(out);
  }
  state.size(seq.list->items.size() * size_t(n));
  List out;
  for (int64_t k = 0; k < n; ++k)
    out.insert(out.end(), seq.list->items.begin(), seq.list->items.end());
  return Value::make_list(std::move(out), seq.list->tuple);
}

int bit_length(int64_t a) {
  uint64_t x = a < 0 ? uint64_t(-(a + 1)) + 1 : uint64_t(a);
  int n = 0;
  while (x) {
    ++n;
    x >>= 1;
  }
  return n;
}

Value binop(State& state, const std::string& op, const Value& a, const Value& b) {
  if (a.is_undefined()) fail_undefined(a);
  // str % undefined formats it (as ""); every other operator fails on an undefined value.
  if (b.is_undefined() && !(op == "%" && a.kind == Kind::kStr)) fail_undefined(b);
  bool nums = a.is_number() && b.is_number();
  bool ints = nums && is_int_like(a) && is_int_like(b);
  if (op == "+") {
    if (ints) return int_result(__int128(to_int(a)) + to_int(b));
    if (nums) return Value::number(to_double(a) + to_double(b));
    if (a.kind == Kind::kStr && b.kind == Kind::kStr) {
      state.size(char_count(a.s) + char_count(b.s));
      return Value::str(a.s + b.s);
    }
    if (a.kind == Kind::kList && b.kind == Kind::kList && a.list->tuple == b.list->tuple &&
        !a.list->has_range && !b.list->has_range && !a.list->generator && !b.list->generator) {
      state.size(a.list->items.size() + b.list->items.size());
      List out = a.list->items;
      out.insert(out.end(), b.list->items.begin(), b.list->items.end());
      return Value::make_list(std::move(out), a.list->tuple);
    }
    if (a.kind == Kind::kStr)
      fail("TypeError: can only concatenate str (not \"" + py_type(b) + "\") to str");
    if (a.kind == Kind::kList && !a.list->has_range && !a.list->generator)
      fail("TypeError: can only concatenate " + type_name(a) + " (not \"" + py_type(b) + "\") to " +
           type_name(a));
    unsupported("+", a, b);
  }
  if (op == "-") {
    if (ints) return int_result(__int128(to_int(a)) - to_int(b));
    if (nums) return Value::number(to_double(a) - to_double(b));
    unsupported("-", a, b);
  }
  if (op == "*") {
    if (ints) return int_result(__int128(to_int(a)) * to_int(b));
    if (nums) return Value::number(to_double(a) * to_double(b));
    if ((a.kind == Kind::kStr ||
         (a.kind == Kind::kList && !a.list->has_range && !a.list->generator)) &&
        is_int_like(b))
      return repeat(state, a, to_int(b));
    if ((b.kind == Kind::kStr ||
         (b.kind == Kind::kList && !b.list->has_range && !b.list->generator)) &&
        is_int_like(a))
      return repeat(state, b, to_int(a));
    auto is_seq = [](const Value& v) {
      return v.kind == Kind::kStr ||
             (v.kind == Kind::kList && !v.list->has_range && !v.list->generator);
    };
    if (is_seq(a) || is_seq(b))
      fail("TypeError: can't multiply sequence by non-int of type '" + py_type(is_seq(a) ? b : a) +
           "'");
    unsupported("*", a, b);
  }
  if (op == "/") {
    if (!nums) unsupported("/", a, b);
    if (to_double(b) == 0)
      fail(ints ? "ZeroDivisionError: division by zero"
                : "ZeroDivisionError: float division by zero");
    return Value::number(to_double(a) / to_double(b));
  }
  if (op == "//" || (op == "%" && nums)) {
    if (!nums) unsupported(op, a, b);
    bool floor_div = op == "//";
    if (ints) {
      int64_t x = to_int(a), y = to_int(b);
      if (y == 0)
        fail(floor_div ? "ZeroDivisionError: integer division or modulo by zero"
                       : "ZeroDivisionError: integer modulo by zero");
      if (x == std::numeric_limits<int64_t>::min() && y == -1) return int_result(-__int128(x));
      int64_t q = x / y, r = x % y;
      if (r != 0 && ((r < 0) != (y < 0))) {
        --q;
        r += y;
      }
      return Value::integer(floor_div ? q : r);
    }
    double x = to_double(a), y = to_double(b);
    if (y == 0)
      fail(floor_div ? "ZeroDivisionError: float floor division by zero"
                     : "ZeroDivisionError: float modulo");
    double r = std::fmod(x, y);
    if (r != 0 && ((r < 0) != (y < 0))) r += y;
    if (!floor_div) return Value::number(r);
    return Value::number(std::floor(x / y));
  }
  if (op == "%") {
    if (a.kind == Kind::kStr) return Value::str(percent_format(state, a.s, b));
    unsupported("%", a, b);
  }
  if (op == "**") {
    if (!nums) unsupported("** or pow()", a, b);
    if (ints && to_int(b) >= 0) {
      int64_t base = to_int(a), e = to_int(b);
      if ((base > 1 || base < -1) && int64_t(bit_length(base)) * e > (int64_t(1) << 20))
        fail(std::to_string(base) + " ** " + std::to_string(e) + " is too large");
      __int128 r = 1;
      for (int64_t k = 0; k < e; ++k) {
        r *= base;
        if (r > std::numeric_limits<int64_t>::max() || r < std::numeric_limits<int64_t>::min())
          fail(std::to_string(base) + " ** " + std::to_string(e) + " is too large");
        if (r == 0 || r == 1) break;
      }
      if (r == 1 && base == -1 && (e % 2)) r = -1;
      return Value::integer(int64_t(r));
    }
    double x = to_double(a), y = to_double(b);
    if (x == 0 && y < 0) fail("ZeroDivisionError: 0.0 cannot be raised to a negative power");
    if (x < 0 && std::isfinite(y) && std::floor(y) != y)  // Python makes a complex number
      fail("ValueError: a negative number to a fractional power is complex (not supported)");
    return Value::number(std::pow(x, y));
  }
  fail("unknown operator " + op);
}

bool compare(const std::string& op, const Value& a, const Value& b) {
  if (op == "==") return equal(a, b);
  if (op == "!=") return !equal(a, b);
  if (op == "<" || op == ">" || op == "<=" || op == ">=") return ordered(op, a, b);
  if (op == "in") return contains(b, a);
  return !contains(b, a);  // not in
}

void assign(const std::shared_ptr<Scope>& scope, const Node& target, const Value& value) {
  if (target.kind == NodeKind::kName) {
    scope->vars[target.name] = value;
  } else if (target.kind == NodeKind::kNSRef) {
    Value ns = scope->lookup(target.name);
    if (ns.kind != Kind::kNamespace)
      fail("cannot assign an attribute of a value that is not a namespace()");
    ns.dict->set(Value::str(target.attr), value);
  } else {
    List values = iterate(value);
    if (values.size() != target.kids.size())
      fail("cannot unpack " + std::to_string(values.size()) + " values into " +
           std::to_string(target.kids.size()) + " names");
    for (size_t k = 0; k < values.size(); ++k) assign(scope, *target.kids[k], values[k]);
  }
}

void eval_args(const Node& node, const std::shared_ptr<Scope>& scope, List& args, Kwargs& kwargs) {
  for (const auto& a : node.args) args.push_back(eval(*a, scope));
  if (node.star) {
    List extra = iterate(eval(*node.star, scope));
    args.insert(args.end(), extra.begin(), extra.end());
  }
  for (const auto& [k, v] : node.kwargs) kwargs.emplace_back(k, eval(*v, scope));
  if (node.dstar) {
    Value extra = eval(*node.dstar, scope);
    if (extra.kind != Kind::kDict) fail("the ** argument is not a mapping");
    for (const auto& [k, v] : extra.dict->items) {
      std::string key = to_str(k);
      bool replaced = false;
      for (auto& kv : kwargs)
        if (kv.first == key) {
          kv.second = v;
          replaced = true;
        }
      if (!replaced) kwargs.emplace_back(key, v);
    }
  }
}

Value eval_call(const Node& node, const std::shared_ptr<Scope>& scope, const Value* caller) {
  Value fn = eval(*node.kids[0], scope);
  List args;
  Kwargs kwargs;
  eval_args(node, scope, args, kwargs);
  if (caller) {
    bool replaced = false;
    for (auto& kv : kwargs)
      if (kv.first == "caller") {
        kv.second = *caller;
        replaced = true;
      }
    if (!replaced) kwargs.emplace_back("caller", *caller);
  }
  return call_value(fn, std::move(args), std::move(kwargs), *scope->state);
}

Value apply_filter_node(const Node& f, const std::shared_ptr<Scope>& scope, Value value) {
  List args;
  Kwargs kwargs;
  eval_args(f, scope, args, kwargs);
  return apply_filter(f.name, *scope->state, std::move(value), std::move(args), std::move(kwargs));
}

Value apply_chain(const Node& node, size_t first, const std::shared_ptr<Scope>& scope,
                  Value value) {
  for (size_t k = first; k < node.kids.size(); ++k)
    value = apply_filter_node(*node.kids[k], scope, value);
  return value;
}

Flow render_node(const Node& node, const std::shared_ptr<Scope>& scope, std::string& out) {
  State& state = *scope->state;
  switch (node.kind) {
    case NodeKind::kData:
      state.write(out, node.name);
      return Flow::kNormal;
    case NodeKind::kOutput:
      state.write(out, to_str(eval(*node.kids[0], scope)));
      return Flow::kNormal;
    case NodeKind::kIf:
      for (size_t k = 0; k < node.kids.size(); ++k)
        if (truthy(eval(*node.kids[k], scope))) return render_body(node.bodies[k], scope, out);
      return render_body(node.bodies.back(), scope, out);
    case NodeKind::kFor: {
      List items = iterate(eval(*node.kids[1], scope));
      if (node.kids[2]) {
        List kept;
        for (const Value& item : items) {
          auto inner = Scope::child(scope);
          assign(inner, *node.kids[0], item);
          if (truthy(eval(*node.kids[2], inner))) kept.push_back(item);
        }
        items = std::move(kept);
      }
      if (items.empty()) {
        render_body(node.bodies[1], Scope::child(scope), out);
        return Flow::kNormal;
      }
      auto loop = std::make_shared<LoopData>();
      loop->items = std::make_shared<ListData>();
      loop->items->items = std::move(items);
      Value loop_value = Value::of(Kind::kLoop);
      loop_value.loop = loop;
      for (size_t i = 0; i < loop->items->items.size(); ++i) {
        state.tick();
        loop->index0 = i;
        // A fresh scope per iteration: what the body sets does not carry over to the next
        // iteration or out of the loop (Jinja2's scoping).
        auto inner = Scope::child(scope);
        assign(inner, *node.kids[0], loop->items->items[i]);
        inner->vars["loop"] = loop_value;
        if (render_body(node.bodies[0], inner, out) == Flow::kBreak) break;
      }
      return Flow::kNormal;
    }
    case NodeKind::kSet:
      assign(scope, *node.kids[0], eval(*node.kids[1], scope));
      return Flow::kNormal;
    case NodeKind::kSetBlock: {
      std::string buf;
      render_body(node.bodies[0], Scope::child(scope), buf);
      assign(scope, *node.kids[0], apply_chain(node, 1, scope, Value::str(buf)));
      return Flow::kNormal;
    }
    case NodeKind::kMacro:
      scope->vars[node.name] = make_macro(node, scope);
      return Flow::kNormal;
    case NodeKind::kCallBlock: {
      Value caller = make_macro(*node.kids[1], scope);
      state.write(out, to_str(eval_call(*node.kids[0], scope, &caller)));
      return Flow::kNormal;
    }
    case NodeKind::kFilterBlock: {
      std::string buf;
      render_body(node.bodies[0], Scope::child(scope), buf);
      state.write(out, to_str(apply_chain(node, 0, scope, Value::str(buf))));
      return Flow::kNormal;
    }
    case NodeKind::kScoped: {
      std::vector<Value> values;
      for (size_t k = 1; k < node.kids.size(); k += 2) values.push_back(eval(*node.kids[k], scope));
      auto inner = Scope::child(scope);
      for (size_t k = 0; k < values.size(); ++k) assign(inner, *node.kids[2 * k], values[k]);
      return render_body(node.bodies[0], inner, out);
    }
    case NodeKind::kBreak:
      return Flow::kBreak;
    case NodeKind::kContinue:
      return Flow::kContinue;
    default:
      fail("not a statement");
  }
}

}  // namespace

bool is_allowed_method(const Value& obj, const std::string& name);

Value attribute(const Value& obj, const std::string& name, State& /*state*/, bool* found) {
  *found = false;
  switch (obj.kind) {
    case Kind::kNamespace: {
      const Value* v = obj.dict->find(Value::str(name));
      if (v) *found = true;
      return v ? *v : Value();
    }
    case Kind::kLoop:
      return loop_field(obj.loop, name, found);
    case Kind::kCallable:
      if (obj.fn->type == Callable::kMacro && name == "name") {
        *found = true;
        return Value::str(obj.fn->name);
      }
      return Value();
    case Kind::kUndefined:
      return Value();
    default:
      break;
  }
  if (is_allowed_method(obj, name)) {
    *found = true;
    Value v = Value::of(Kind::kCallable);
    v.fn = std::make_shared<Callable>();
    v.fn->name = type_name(obj) + "." + name;
    Value self = obj;
    v.fn->fn = [self, name](List& args, Kwargs& kwargs, State& st) {
      return call_method(st, self, name, args, kwargs);
    };
    return v;
  }
  if (is_refused_method(obj, name)) {
    *found = true;
    Value v = Value::of(Kind::kCallable);
    v.fn = std::make_shared<Callable>();
    v.fn->type = Callable::kRefused;
    v.fn->name = name;
    v.fn->owner = type_name(obj);
    return v;
  }
  return Value();
}

void check_name(const Value& obj, const std::string& name) {
  if (!name.empty() && name[0] == '_')
    fail("access to attribute '" + name + "' of a " + type_name(obj) +
         " value is refused (names starting with '_' are not accessible)");
}

Value get_attr(const Value& obj, const std::string& name, State& state) {
  if (obj.is_undefined()) fail_undefined(obj);
  if (name.empty() || name[0] != '_') {
    bool found;
    Value v = attribute(obj, name, state, &found);
    if (found) return v;
  }
  if (!special_object(obj)) {
    Value v;
    if (index_value(obj, Value::str(name), &v)) return v;
  }
  check_name(obj, name);
  std::string hint = "'";  // built by appending: GCC 12 misreports "lit" + string (-Wrestrict)
  hint += type_name(obj);
  hint += " object' has no attribute '";
  hint += name;
  return Value::undefined(hint + "'");
}

Value get_item(const Value& obj, const Value& key, State& state) {
  if (obj.is_undefined()) fail_undefined(obj);
  if (!special_object(obj) && obj.kind != Kind::kCallable) {
    Value v;
    if (index_value(obj, key, &v)) return v;
  }
  if (key.kind == Kind::kStr) {
    check_name(obj, key.s);
    bool found;
    Value v = attribute(obj, key.s, state, &found);
    if (found) return v;
    return Value::undefined("'" + type_name(obj) + " object' has no attribute '" + key.s + "'");
  }
  return Value::undefined(type_name(obj) + " object has no element " + repr(key));
}

Value call_value(const Value& fn, List args, Kwargs kwargs, State& state) {
  if (fn.kind == Kind::kCallable) {
    if (fn.fn->type == Callable::kMacro) return call_macro(*fn.fn, args, kwargs, state);
    if (fn.fn->type == Callable::kBuiltin) return fn.fn->fn(args, kwargs, state);
    fail("the method '" + fn.fn->name + "' of a " + fn.fn->owner +
         " value cannot be called in a template");
  }
  if (fn.is_undefined()) fail_undefined(fn);
  std::string message = "'";
  message += type_name(fn);
  fail(message + "' object is not callable");
}

Value eval(const Node& node, const std::shared_ptr<Scope>& scope) {
  switch (node.kind) {
    case NodeKind::kConst:
      return node.value;
    case NodeKind::kName:
      return scope->lookup(node.name);
    case NodeKind::kSeq: {
      List items;
      for (const auto& k : node.kids) items.push_back(eval(*k, scope));
      return Value::make_list(std::move(items), node.flag);
    }
    case NodeKind::kDict: {
      Value d = Value::make_dict();
      for (size_t k = 0; k + 1 < node.kids.size(); k += 2) {
        Value key = eval(*node.kids[k], scope);
        if (key.kind == Kind::kList && !key.list->tuple) fail("TypeError: unhashable type: 'list'");
        if (key.kind == Kind::kDict) fail("TypeError: unhashable type: 'dict'");
        d.dict->set(key, eval(*node.kids[k + 1], scope));
      }
      return d;
    }
    case NodeKind::kGetAttr:
      return get_attr(eval(*node.kids[0], scope), node.name, *scope->state);
    case NodeKind::kGetItem: {
      Value obj = eval(*node.kids[0], scope);
      const Node& key = *node.kids[1];
      if (key.kind == NodeKind::kSlice) {
        Value parts[3];
        const Value* ptrs[3] = {nullptr, nullptr, nullptr};
        for (int k = 0; k < 3; ++k)
          if (key.kids[k]) {
            parts[k] = eval(*key.kids[k], scope);
            ptrs[k] = &parts[k];
          }
        return slice_value(obj, ptrs);
      }
      return get_item(obj, eval(key, scope), *scope->state);
    }
    case NodeKind::kCall:
      return eval_call(node, scope, nullptr);
    case NodeKind::kFilter:
      return apply_filter_node(node, scope, eval(*node.kids[0], scope));
    case NodeKind::kTest: {
      Value value = eval(*node.kids[0], scope);
      List args;
      Kwargs kwargs;
      eval_args(node, scope, args, kwargs);
      return Value::boolean(
          apply_test(node.name, *scope->state, value, std::move(args), std::move(kwargs)));
    }
    case NodeKind::kBinOp: {
      // Left before right, as Python: C++ leaves the order of arguments' evaluation open.
      Value left = eval(*node.kids[0], scope);
      Value right = eval(*node.kids[1], scope);
      return binop(*scope->state, node.name, left, right);
    }
    case NodeKind::kConcat: {
      std::string s;
      for (const auto& k : node.kids) {
        s += to_str(eval(*k, scope));
        scope->state->size(char_count(s));
      }
      return Value::str(std::move(s));
    }
    case NodeKind::kCompare: {
      // Chained like Python: a < b < c is a < b and b < c, stopping at the first false.
      Value left = eval(*node.kids[0], scope);
      for (size_t k = 0; k < node.ops.size(); ++k) {
        Value right = eval(*node.kids[k + 1], scope);
        if (!compare(node.ops[k], left, right)) return Value::boolean(false);
        left = std::move(right);
      }
      return Value::boolean(true);
    }
    case NodeKind::kAnd: {
      Value left = eval(*node.kids[0], scope);
      return truthy(left) ? eval(*node.kids[1], scope) : left;
    }
    case NodeKind::kOr: {
      Value left = eval(*node.kids[0], scope);
      return truthy(left) ? left : eval(*node.kids[1], scope);
    }
    case NodeKind::kNot:
      return Value::boolean(!truthy(eval(*node.kids[0], scope)));
    case NodeKind::kNeg:
    case NodeKind::kPos: {
      Value v = eval(*node.kids[0], scope);
      if (v.is_undefined()) fail_undefined(v);
      bool neg = node.kind == NodeKind::kNeg;
      if (v.kind == Kind::kFloat) return Value::number(neg ? -v.f : v.f);
      if (v.kind == Kind::kInt || v.kind == Kind::kBool) {
        int64_t x = v.kind == Kind::kInt ? v.i : v.b;
        return int_result(neg ? -__int128(x) : __int128(x));
      }
      fail(std::string("TypeError: bad operand type for unary ") + (neg ? "-" : "+") + ": '" +
           py_type(v) + "'");
    }
    case NodeKind::kCondExpr:
      if (truthy(eval(*node.kids[0], scope))) return eval(*node.kids[1], scope);
      if (!node.kids[2])
        return Value::undefined("the inline if's condition was false and it has no else");
      return eval(*node.kids[2], scope);
    default:
      fail("not an expression");
  }
}

Flow render_body(const Body& body, const std::shared_ptr<Scope>& scope, std::string& out) {
  for (const auto& node : body) {
    Flow flow;
    try {
      flow = render_node(*node, scope, out);
    } catch (TemplateException& e) {
      if (e.pos == std::string::npos) e.pos = node->pos;
      throw;
    }
    if (flow != Flow::kNormal) return flow;
  }
  return Flow::kNormal;
}

}  // namespace nxrt::genai::tmpl
