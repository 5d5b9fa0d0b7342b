// Hugging Face's tojson filter: Python's json.dumps over template values (no HTML
// escaping, non-ASCII kept unless ensure_ascii; indent, separators and sort_keys as there).
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "genai/template_eval.h"
#include "genai/utf8.h"

namespace nxrt::genai::tmpl {
namespace {

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

}  // namespace

std::string to_json(const Value& v, const JsonStyle& style) {
  std::string out;
  json_dump(v, style, 0, out);
  return out;
}

}  // namespace nxrt::genai::tmpl
