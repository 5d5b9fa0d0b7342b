// The values a chat template computes with (nxrt::genai::tmpl), modelled on the Python
// values the Python port works on: None, bool, int, float, str, list/tuple, dict (keys in
// insertion order), Jinja2's Undefined, namespace(), the loop object and callables.
// Printing (str/repr), truth, equality and ordering follow Python, since Jinja2 prints and
// compares Python objects and the outputs must be identical.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace nxrt::genai::tmpl {

struct Value;
struct Node;
struct Scope;
struct State;
using List = std::vector<Value>;
using Kwargs = std::vector<std::pair<std::string, Value>>;

// A failure while parsing or rendering: `pos` is the byte offset in the template (npos
// until a statement claims it), turned into line/column at the top.
struct TemplateException {
  std::string message;
  size_t pos = std::string::npos;
};
[[noreturn]] void fail(std::string message);

enum class Kind {
  kUndefined,
  kNone,
  kBool,
  kInt,
  kFloat,
  kStr,
  kList,
  kDict,
  kNamespace,
  kCallable,
  kLoop
};

struct ListData {
  List items;
  bool tuple = false;      // prints as (a, b)
  bool has_range = false;  // made by range(): prints as range(start, stop[, step])
  int64_t range[3] = {0, 0, 1};
  // A one-pass iterator, as Jinja2's select/map/unique/items/batch/reverse give: always
  // true, no len(), no indexing, and empty once iterated. `deferred` is the error the
  // item after `items` raised: only a consumer that goes that far sees it (first does not).
  bool generator = false;
  bool consumed = false;
  bool has_deferred = false;
  std::string deferred;
};
struct DictData {
  std::vector<std::pair<Value, Value>> items;  // insertion order, as Python's dict
  const Value* find(const Value& key) const;
  void set(const Value& key, Value value);
};
struct Callable;
struct LoopData;

struct Value {
  Kind kind = Kind::kUndefined;
  bool b = false;
  int64_t i = 0;
  double f = 0;
  std::string s;  // kStr: the text; kUndefined: the hint (what was undefined)
  std::shared_ptr<ListData> list;
  std::shared_ptr<DictData> dict;  // kDict, kNamespace (a namespace's attributes)
  std::shared_ptr<Callable> fn;
  std::shared_ptr<LoopData> loop;

  static Value undefined(std::string hint = "") {
    Value v;
    v.s = std::move(hint);
    return v;
  }
  static Value none() { return of(Kind::kNone); }
  static Value boolean(bool x) {
    Value v = of(Kind::kBool);
    v.b = x;
    return v;
  }
  static Value integer(int64_t x) {
    Value v = of(Kind::kInt);
    v.i = x;
    return v;
  }
  static Value number(double x) {
    Value v = of(Kind::kFloat);
    v.f = x;
    return v;
  }
  static Value str(std::string x) {
    Value v = of(Kind::kStr);
    v.s = std::move(x);
    return v;
  }
  static Value make_list(List items, bool tuple = false) {
    Value v = of(Kind::kList);
    v.list = std::make_shared<ListData>();
    v.list->items = std::move(items);
    v.list->tuple = tuple;
    return v;
  }
  static Value make_dict() {
    Value v = of(Kind::kDict);
    v.dict = std::make_shared<DictData>();
    return v;
  }
  static Value of(Kind k) {
    Value v;
    v.kind = k;
    return v;
  }

  bool is_undefined() const { return kind == Kind::kUndefined; }
  bool is_str() const { return kind == Kind::kStr; }
  bool is_number() const {
    return kind == Kind::kInt || kind == Kind::kFloat || kind == Kind::kBool;
  }
  bool is_tuple() const { return kind == Kind::kList && list->tuple; }
  bool is_generator() const { return kind == Kind::kList && list->generator; }
  static Value make_generator(List items) {
    Value v = make_list(std::move(items));
    v.list->generator = true;
    return v;
  }
};

// A callable a template may call: a global, an allowed method bound to its value, a loop
// method, a macro; or a method it may not call (kRefused: calling it fails, naming it).
struct Callable {
  enum Type { kBuiltin, kMacro, kRefused } type = kBuiltin;
  std::string name;
  std::string owner;  // kRefused: the type name of the value it belongs to
  std::function<Value(List&, Kwargs&, State&)> fn;
  const Node* macro = nullptr;   // kMacro: the macro's definition (or a call block's caller)
  std::shared_ptr<Scope> scope;  // kMacro: the scope it was defined in
};

struct LoopData {
  std::shared_ptr<ListData> items;
  size_t index0 = 0;
  bool has_last_changed = false;
  List last_changed;
};

// Python's type(value).__name__, as error messages name it.
std::string type_name(const Value& v);
// The same with None as NoneType, as Python's own TypeErrors name it.
std::string py_type(const Value& v);
// str(value) and repr(value), as Python prints them.
std::string to_str(const Value& v);
std::string repr(const Value& v);
std::string repr_str(std::string_view s);
std::string float_repr(double d);
bool truthy(const Value& v);
bool equal(const Value& a, const Value& b);
// a <op> b for op one of < <= > >=, Python's rules (a TypeError naming op for values that
// do not order; lists compare their first differing items with the same op).
bool ordered(std::string_view op, const Value& a, const Value& b);
inline bool less(const Value& a, const Value& b) { return ordered("<", a, b); }
// Python's hash-based membership would refuse unhashable keys; equality is enough here.
bool contains(const Value& container, const Value& item);
// Items of an iterable value: a list, a dict's keys, a string's characters; undefined is
// empty; anything else fails ("'int' object is not iterable").
List iterate(const Value& v);
// len(value), or a TypeError.
int64_t length(const Value& v);

// int(x) of a float: Python's ints are unbounded, these are 64-bit (an error past that).
int64_t float_to_int(double x);

// UTF-8 strings as Python's code point sequences.
std::u32string to_u32(std::string_view s);
std::string from_u32(std::u32string_view s);
size_t char_count(std::string_view s);
bool is_space(char32_t c);  // str.isspace
std::u32string lower_u32(std::u32string s);
std::u32string upper_u32(std::u32string s);

}  // namespace nxrt::genai::tmpl
