// Rendering a parsed chat template (nxrt::genai::tmpl): scopes, per-render budgets and the
// operations the filters share with the evaluator (attribute/item access, calls).
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <unordered_map>

#include "genai/template_ast.h"
#include "genai/template_value.h"

namespace nxrt::genai::tmpl {

// Per-render budgets: anything that runs long does many ticks, anything that grows large
// passes size() before it is built.
struct State {
  size_t max_output = 0, written = 0;
  size_t max_iterations = 0, iterations = 0;
  int max_depth = 0, depth = 0;
  double max_seconds = 0;  // <= 0: none
  std::chrono::steady_clock::time_point deadline;
  // Scopes that hold a macro (which holds its scope): emptied after the render so the
  // reference cycles do not outlive it.
  std::vector<std::shared_ptr<Scope>> macro_scopes;
  // The same for namespaces, which a template may make hold themselves (set ns.me = ns).
  std::vector<std::shared_ptr<DictData>> namespaces;

  void tick();
  void write(std::string& out, std::string_view text);
  void size(size_t n, const char* what = "result") const;
};

// Variables of one scope (the template, a loop iteration, a macro call, a with or filter
// block) over its parent's.
struct Scope {
  std::unordered_map<std::string, Value> vars;
  std::shared_ptr<Scope> parent;
  State* state = nullptr;

  static std::shared_ptr<Scope> child(const std::shared_ptr<Scope>& parent) {
    auto s = std::make_shared<Scope>();
    s->parent = parent;
    s->state = parent->state;
    return s;
  }
  Value lookup(const std::string& name) const;
};

enum class Flow { kNormal, kBreak, kContinue };

Flow render_body(const Body& body, const std::shared_ptr<Scope>& scope, std::string& out);
Value eval(const Node& node, const std::shared_ptr<Scope>& scope);

// obj.name (the attribute, else the item), obj[key] (the item, else the attribute), as
// Jinja2 does; undefined when neither exists; names starting with '_' are refused.
Value get_attr(const Value& obj, const std::string& name, State& state);
Value get_item(const Value& obj, const Value& key, State& state);
// obj.name as an attribute only: a bound allowed method, a refused method, a field;
// `found` false when there is none.
Value attribute(const Value& obj, const std::string& name, State& state, bool* found);
void check_name(const Value& obj, const std::string& name);
Value call_value(const Value& fn, List args, Kwargs kwargs, State& state);
[[noreturn]] void fail_undefined(const Value& v);

// json.dumps's options, as the tojson filter takes them (template_tojson.cc).
struct JsonStyle {
  bool ensure_ascii = false, sort_keys = false, has_indent = false;
  std::string indent, item_sep = ", ", key_sep = ": ";
};
std::string to_json(const Value& v, const JsonStyle& style);

// An int argument (bool counts), or a TypeError naming what was wanted.
int64_t as_int(const Value& v, const char* what = "an integer");

// Filters (template_filters.cc), tests (template_tests.cc), globals (template_globals.cc).
Value apply_filter(const std::string& name, State& state, Value value, List args, Kwargs kwargs);
bool apply_test(const std::string& name, State& state, const Value& value, List args,
                Kwargs kwargs);
void add_globals(Scope& scope);
// fmt % args with Python's printf-style rules (the widths checked against the limit).
std::string percent_format(State& state, const std::string& fmt, const Value& args);
// The allowed methods of str, dict and list values (the others are refused).
// Refuses a format width (any digit run in `spec`) over the output limit before it is used.
void check_widths(const std::string& spec, State& state);
// str.strip / lstrip / rstrip: `chars` null or None strips whitespace.
std::u32string strip_u32(const std::u32string& s, const Value* chars, bool left, bool right);
bool is_allowed_method(const Value& obj, const std::string& name);
bool is_refused_method(const Value& obj, const std::string& name);
Value call_method(State& state, const Value& obj, const std::string& name, List& args,
                  Kwargs& kwargs);

}  // namespace nxrt::genai::tmpl
