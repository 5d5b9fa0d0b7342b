// The globals a chat template may call: range (bounded as Jinja2's sandbox bounds it),
// dict, namespace, and Hugging Face's raise_exception and strftime_now.
#include <ctime>
#include <limits>

#include "genai/template_eval.h"

namespace nxrt::genai::tmpl {

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
  scope.vars["namespace"] = builtin("namespace", [](List& args, Kwargs& kwargs, State& state) {
    Value d = Value::make_dict();
    state.namespaces.push_back(d.dict);
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
