// The methods templates may call on values (the Python port's ALLOWED_METHODS: the
// non-mutating ones of str, dict and list), Python's printf-style `%` and str.format with
// their widths held to the output limit. Any other method of a value is refused.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>

#include "genai/template_eval.h"
#include "genai/utf8.h"

namespace nxrt::genai::tmpl {
namespace {

bool in_list(const std::string& name, std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (name == n) return true;
  return false;
}

std::string pad_to(const std::string& s, int64_t width, char32_t fill, char align) {
  int64_t n = int64_t(char_count(s));
  if (width <= n) return s;
  int64_t marg = width - n, left = 0;
  if (align == '>')
    left = marg;
  else if (align == '^')
    left = marg / 2;  // str.format centres with the extra on the right
  std::string f, out;
  f = from_u32(std::u32string(1, fill));
  for (int64_t k = 0; k < left; ++k) out += f;
  out += s;
  for (int64_t k = 0; k < marg - left; ++k) out += f;
  return out;
}

double as_double(const Value& v, const char* fmt) {
  if (v.kind == Kind::kFloat) return v.f;
  if (v.kind == Kind::kInt) return double(v.i);
  if (v.kind == Kind::kBool) return v.b;
  fail(std::string("TypeError: ") + fmt + " format: a real number is required, not " + py_type(v));
}

int64_t as_integer(const Value& v, const char* fmt, bool allow_float) {
  if (v.kind == Kind::kInt) return v.i;
  if (v.kind == Kind::kBool) return v.b;
  if (v.kind == Kind::kFloat && allow_float) return float_to_int(v.f);
  fail(std::string("TypeError: ") + fmt + " format: " +
       (allow_float ? "a real number" : "an integer") + " is required, not " + py_type(v));
}

const Value& need(List& args, size_t k, const std::string& name) {
  if (k >= args.size())
    fail("TypeError: " + name + "() takes at least " + std::to_string(k + 1) + " argument(s)");
  return args[k];
}

const std::string& need_str(List& args, size_t k, const std::string& name) {
  const Value& v = need(args, k, name);
  if (!v.is_str()) fail("TypeError: " + name + "() argument must be str, not " + py_type(v));
  return v.s;
}

bool is_alpha(char32_t c) {
  if (c < 0x80) return std::isalpha(int(c)) != 0;
  return upper_u32(std::u32string(1, c))[0] != c || lower_u32(std::u32string(1, c))[0] != c ||
         (c >= 0x4e00 && c <= 0x9fff) || (c >= 0x3040 && c <= 0x30ff) ||
         (c >= 0x600 && c <= 0x6ff) || (c >= 0xac00 && c <= 0xd7af);
}

// Python's str methods over code points.
Value str_method(State& state, const std::string& s, const std::string& name, List& args,
                 Kwargs& kwargs) {
  auto kw = [&](const char* key) -> const Value* {
    for (auto& [k, v] : kwargs)
      if (k == key) return &v;
    return nullptr;
  };
  auto arg = [&](size_t k, const char* key) -> const Value* {
    if (k < args.size()) return &args[k];
    return kw(key);
  };
  std::u32string u = to_u32(s);
  if (name == "strip" || name == "lstrip" || name == "rstrip")
    return Value::str(from_u32(strip_u32(u, arg(0, "chars"), name != "rstrip", name != "lstrip")));
  if (name == "upper") return Value::str(from_u32(upper_u32(u)));
  if (name == "lower" || name == "casefold") return Value::str(from_u32(lower_u32(u)));
  if (name == "startswith" || name == "endswith") {
    const Value& what = need(args, 0, name);
    List options = what.is_tuple() ? what.list->items : List{what};
    for (const Value& o : options) {
      if (!o.is_str())
        fail("TypeError: " + name + " first arg must be str or a tuple of str, not " + py_type(o));
      bool hit = name == "startswith" ? s.compare(0, o.s.size(), o.s) == 0 && s.size() >= o.s.size()
                                      : s.size() >= o.s.size() &&
                                            s.compare(s.size() - o.s.size(), o.s.size(), o.s) == 0;
      if (hit) return Value::boolean(true);
    }
    return Value::boolean(false);
  }
  if (name == "split" || name == "rsplit") {
    const Value* sep = arg(0, "sep");
    const Value* maxsplit = arg(1, "maxsplit");
    int64_t m = maxsplit ? maxsplit->i : -1;
    // reuse the filters' splitting through the public filter: str.split semantics
    List out;
    Value sepv = sep ? *sep : Value::none();
    if (sepv.kind == Kind::kNone) {
      std::vector<std::u32string> words;
      size_t k = 0;
      if (name == "split") {
        while (true) {
          while (k < u.size() && is_space(u[k])) ++k;
          if (k >= u.size()) break;
          if (m >= 0 && int64_t(words.size()) == m) {
            words.push_back(u.substr(k));  // the rest as it is, trailing spaces too
            break;
          }
          size_t e = k;
          while (e < u.size() && !is_space(u[e])) ++e;
          words.push_back(u.substr(k, e - k));
          k = e;
        }
      } else {
        int64_t e = int64_t(u.size());
        while (true) {
          while (e > 0 && is_space(u[size_t(e - 1)])) --e;
          if (e <= 0) break;
          if (m >= 0 && int64_t(words.size()) == m) {
            words.push_back(u.substr(0, size_t(e)));  // the rest, leading spaces too
            break;
          }
          int64_t b = e;
          while (b > 0 && !is_space(u[size_t(b - 1)])) --b;
          words.push_back(u.substr(size_t(b), size_t(e - b)));
          e = b;
        }
        std::reverse(words.begin(), words.end());
      }
      for (auto& w : words) out.push_back(Value::str(from_u32(w)));
      return Value::make_list(std::move(out));
    }
    if (!sepv.is_str()) fail("TypeError: must be str or None, not " + py_type(sepv));
    const std::string& sp = sepv.s;
    if (sp.empty()) fail("ValueError: empty separator");
    std::vector<std::string> parts;
    if (name == "split") {
      size_t pos = 0;
      while (!(m >= 0 && int64_t(parts.size()) == m)) {
        size_t p = s.find(sp, pos);
        if (p == std::string::npos) break;
        parts.push_back(s.substr(pos, p - pos));
        pos = p + sp.size();
      }
      parts.push_back(s.substr(pos));
    } else {
      size_t end = s.size();
      std::vector<std::string> rev;
      while (!(m >= 0 && int64_t(rev.size()) == m) && end >= sp.size()) {
        size_t p = s.rfind(sp, end - sp.size());
        if (p == std::string::npos) break;
        rev.push_back(s.substr(p + sp.size(), end - p - sp.size()));
        end = p;
      }
      rev.push_back(s.substr(0, end));
      parts.assign(rev.rbegin(), rev.rend());
    }
    for (auto& p : parts) out.push_back(Value::str(p));
    return Value::make_list(std::move(out));
  }
  if (name == "splitlines") {
    const Value* keep = arg(0, "keepends");
    bool keepends = keep && truthy(*keep);
    List out;
    size_t start = 0;
    for (size_t k = 0; k < u.size(); ++k) {
      char32_t c = u[k];
      bool nl = c == '\n' || c == '\r' || c == 0x0b || c == 0x0c || (c >= 0x1c && c <= 0x1e) ||
                c == 0x85 || c == 0x2028 || c == 0x2029;
      if (!nl) continue;
      size_t end = k + 1;
      if (c == '\r' && k + 1 < u.size() && u[k + 1] == '\n') end = k + 2;
      out.push_back(Value::str(from_u32(u.substr(start, (keepends ? end : k) - start))));
      start = end;
      k = end - 1;
    }
    if (start < u.size()) out.push_back(Value::str(from_u32(u.substr(start))));
    return Value::make_list(std::move(out));
  }
  if (name == "replace") {
    const std::string& old = need_str(args, 0, name);
    const std::string& with = need_str(args, 1, name);
    const Value* count = arg(2, "count");
    int64_t c = count ? count->i : -1;
    size_t n = 0;
    if (!old.empty())
      for (size_t p = s.find(old); p != std::string::npos; p = s.find(old, p + old.size())) ++n;
    else
      n = u.size() + 1;
    int64_t grow = int64_t(char_count(with)) - int64_t(char_count(old));
    state.size(size_t(std::max<int64_t>(0, int64_t(u.size()) + int64_t(n) * grow)));
    if (c < 0) c = std::numeric_limits<int64_t>::max();
    std::string out;
    if (old.empty()) {
      int64_t done = 0;
      for (size_t k = 0; k <= u.size(); ++k) {
        if (done++ < c) out += with;
        if (k < u.size()) out += from_u32(u.substr(k, 1));
      }
      return Value::str(out);
    }
    size_t pos = 0;
    for (int64_t done = 0; done < c; ++done) {
      size_t p = s.find(old, pos);
      if (p == std::string::npos) break;
      out += s.substr(pos, p - pos) + with;
      pos = p + old.size();
    }
    return Value::str(out + s.substr(pos));
  }
  if (name == "join") {
    List items = iterate(need(args, 0, name));
    size_t total = 0;
    for (const Value& i : items) {
      if (!i.is_str())
        fail("TypeError: sequence item: expected str instance, " + py_type(i) + " found");
      total += char_count(i.s);
    }
    state.size(total + u.size() * items.size());
    std::string out;
    for (size_t k = 0; k < items.size(); ++k) out += (k ? s : "") + items[k].s;
    return Value::str(out);
  }
  if (name == "title") {
    bool prev = false;
    for (char32_t& c : u) {
      bool cased =
          upper_u32(std::u32string(1, c))[0] != c || lower_u32(std::u32string(1, c))[0] != c;
      if (cased) c = prev ? lower_u32(std::u32string(1, c))[0] : upper_u32(std::u32string(1, c))[0];
      prev = cased;
    }
    return Value::str(from_u32(u));
  }
  if (name == "capitalize") {
    u = lower_u32(u);
    if (!u.empty()) u[0] = upper_u32(std::u32string(1, u[0]))[0];
    return Value::str(from_u32(u));
  }
  if (name == "swapcase") {
    for (char32_t& c : u) {
      char32_t up = upper_u32(std::u32string(1, c))[0];
      c = up != c ? up : lower_u32(std::u32string(1, c))[0];
    }
    return Value::str(from_u32(u));
  }
  if (name == "center" || name == "ljust" || name == "rjust" || name == "zfill") {
    const Value& w = need(args, 0, name);
    check_widths(to_str(w), state);
    if (w.kind != Kind::kInt)
      fail("TypeError: '" + py_type(w) + "' object cannot be interpreted as an integer");
    int64_t width = w.i;
    if (name == "zfill") {
      if (int64_t(u.size()) >= width) return Value::str(s);
      size_t sign = !u.empty() && (u[0] == '+' || u[0] == '-') ? 1 : 0;
      std::u32string out =
          u.substr(0, sign) + std::u32string(size_t(width) - u.size(), U'0') + u.substr(sign);
      return Value::str(from_u32(out));
    }
    char32_t fill = ' ';
    if (args.size() > 1) {
      std::u32string f = to_u32(to_str(args[1]));
      if (f.size() != 1) fail("TypeError: The fill character must be exactly one character long");
      fill = f[0];
    }
    int64_t marg = width - int64_t(u.size());
    if (marg <= 0) return Value::str(s);
    int64_t left = name == "rjust" ? marg : name == "ljust" ? 0 : marg / 2 + (marg & width & 1);
    std::u32string out =
        std::u32string(size_t(left), fill) + u + std::u32string(size_t(marg - left), fill);
    return Value::str(from_u32(out));
  }
  if (name == "find" || name == "rfind" || name == "index" || name == "rindex" || name == "count") {
    const std::string& sub = need_str(args, 0, name);
    std::u32string su = to_u32(sub);
    int64_t n = int64_t(u.size());
    auto bound = [&](size_t k, int64_t dflt) {
      if (k >= args.size() || args[k].kind == Kind::kNone) return dflt;
      int64_t x = args[k].i;
      if (x < 0) x = std::max<int64_t>(0, x + n);
      return std::min(x, n);
    };
    int64_t start = bound(1, 0), end = bound(2, n);
    if (name == "count") {
      if (end < start) return Value::integer(0);
      if (su.empty()) return Value::integer(end - start + 1);
      int64_t c = 0;
      for (int64_t p = start; p + int64_t(su.size()) <= end;) {
        if (u.compare(size_t(p), su.size(), su) == 0) {
          ++c;
          p += int64_t(su.size());
        } else {
          ++p;
        }
      }
      return Value::integer(c);
    }
    int64_t found = -1;
    if (end - start >= int64_t(su.size())) {
      if (name == "find" || name == "index") {
        for (int64_t p = start; p + int64_t(su.size()) <= end && found < 0; ++p)
          if (u.compare(size_t(p), su.size(), su) == 0) found = p;
      } else {
        for (int64_t p = end - int64_t(su.size()); p >= start && found < 0; --p)
          if (u.compare(size_t(p), su.size(), su) == 0) found = p;
      }
    }
    if (found < 0 && (name == "index" || name == "rindex")) fail("ValueError: substring not found");
    return Value::integer(found);
  }
  if (name == "partition" || name == "rpartition") {
    const std::string& sep = need_str(args, 0, name);
    if (sep.empty()) fail("ValueError: empty separator");
    size_t p = name == "partition" ? s.find(sep) : s.rfind(sep);
    if (p == std::string::npos)
      return name == "partition"
                 ? Value::make_list({Value::str(s), Value::str(""), Value::str("")}, true)
                 : Value::make_list({Value::str(""), Value::str(""), Value::str(s)}, true);
    return Value::make_list(
        {Value::str(s.substr(0, p)), Value::str(sep), Value::str(s.substr(p + sep.size()))}, true);
  }
  if (name == "removeprefix") {
    const std::string& p = need_str(args, 0, name);
    return Value::str(s.compare(0, p.size(), p) == 0 && s.size() >= p.size() ? s.substr(p.size())
                                                                             : s);
  }
  if (name == "removesuffix") {
    const std::string& p = need_str(args, 0, name);
    bool ends =
        !p.empty() && s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0;
    return Value::str(ends ? s.substr(0, s.size() - p.size()) : s);
  }
  if (name == "expandtabs") {
    const Value* t = arg(0, "tabsize");
    int64_t tab = t ? t->i : 8;
    state.size(u.size() * size_t(std::max<int64_t>(tab, 1)));
    std::u32string out;
    int64_t col = 0;
    for (char32_t c : u) {
      if (c == '\t') {
        if (tab > 0) {
          int64_t n = tab - col % tab;
          out.append(size_t(n), U' ');
          col += n;
        }
      } else {
        out += c;
        col = (c == '\n' || c == '\r') ? 0 : col + 1;
      }
    }
    return Value::str(from_u32(out));
  }
  auto all = [&](auto pred) {
    if (u.empty()) return Value::boolean(false);
    for (char32_t c : u)
      if (!pred(c)) return Value::boolean(false);
    return Value::boolean(true);
  };
  if (name == "isdigit" || name == "isdecimal" || name == "isnumeric")
    return all([](char32_t c) { return c >= '0' && c <= '9'; });
  if (name == "isalpha") return all(is_alpha);
  if (name == "isalnum")
    return all([](char32_t c) { return is_alpha(c) || (c >= '0' && c <= '9'); });
  if (name == "isspace") return all(is_space);
  if (name == "isascii")
    return Value::boolean(std::all_of(u.begin(), u.end(), [](char32_t c) { return c < 0x80; }));
  if (name == "isprintable")
    return Value::boolean(
        std::all_of(u.begin(), u.end(), [](char32_t c) { return c >= 0x20 && c != 0x7f; }));
  if (name == "isidentifier") {
    bool ok = !u.empty() && !(u[0] >= '0' && u[0] <= '9');
    for (char32_t c : u) ok = ok && (c == '_' || is_alpha(c) || (c >= '0' && c <= '9'));
    return Value::boolean(ok);
  }
  if (name == "islower" || name == "isupper") {
    bool cased = false;
    for (char32_t c : u) {
      bool lo = upper_u32(std::u32string(1, c))[0] != c,
           up = lower_u32(std::u32string(1, c))[0] != c;
      if ((name == "islower" && up) || (name == "isupper" && lo)) return Value::boolean(false);
      cased = cased || lo || up;
    }
    return Value::boolean(cased);
  }
  if (name == "istitle") {
    bool prev = false, any = false;
    for (char32_t c : u) {
      bool lo = upper_u32(std::u32string(1, c))[0] != c,
           up = lower_u32(std::u32string(1, c))[0] != c;
      if (up && prev) return Value::boolean(false);
      if (lo && !prev) return Value::boolean(false);
      prev = lo || up;
      any = any || up;
    }
    return Value::boolean(any);
  }
  fail("the method str." + name + " is not supported by the C++ chat template port");
}

// -- str.format

std::string format_number_spec(const Value& value, const std::string& spec);

std::string format_field(const Value& value, const std::string& spec, State& state) {
  check_widths(spec, state);
  if (spec.empty()) return to_str(value);
  return format_number_spec(value, spec);
}

// A format spec: [[fill]align][sign][#][0][width][,_][.precision][type].
std::string format_number_spec(const Value& value, const std::string& spec) {
  std::u32string sp = to_u32(spec);
  size_t k = 0;
  char32_t fill = ' ';
  char align = 0;
  auto is_align = [](char32_t c) { return c == '<' || c == '>' || c == '^' || c == '='; };
  if (sp.size() >= 2 && is_align(sp[1])) {
    fill = sp[0];
    align = char(sp[1]);
    k = 2;
  } else if (!sp.empty() && is_align(sp[0])) {
    align = char(sp[0]);
    k = 1;
  }
  char sign = 0;
  if (k < sp.size() && (sp[k] == '+' || sp[k] == '-' || sp[k] == ' ')) sign = char(sp[k++]);
  if (k < sp.size() && sp[k] == '#') ++k;
  if (k < sp.size() && sp[k] == '0') {
    if (!align) {
      fill = '0';
      align = '=';
    }
    ++k;
  }
  int64_t width = 0;
  while (k < sp.size() && sp[k] >= '0' && sp[k] <= '9') width = width * 10 + (sp[k++] - '0');
  char grouping = 0;
  if (k < sp.size() && (sp[k] == ',' || sp[k] == '_')) grouping = char(sp[k++]);
  int precision = -1;
  if (k < sp.size() && sp[k] == '.') {
    ++k;
    precision = 0;
    while (k < sp.size() && sp[k] >= '0' && sp[k] <= '9')
      precision = precision * 10 + int(sp[k++] - '0');
  }
  char type = k < sp.size() ? char(sp[k++]) : 0;
  if (k != sp.size()) fail("ValueError: Invalid format specifier");
  std::string body;
  bool numeric = value.is_number();
  if (value.is_str() || (!numeric && (type == 0 || type == 's'))) {
    if (type && type != 's')
      fail("ValueError: Unknown format code '" + std::string(1, type) +
           "' for object of type 'str'");
    std::u32string u = to_u32(to_str(value));
    if (precision >= 0 && size_t(precision) < u.size()) u.resize(size_t(precision));
    body = from_u32(u);
    if (!align) align = '<';
    return pad_to(body, width, fill, align);
  }
  if (!numeric)
    fail("TypeError: unsupported format string passed to " + py_type(value) + ".__format__");
  bool is_int = value.kind != Kind::kFloat;
  int64_t iv = value.kind == Kind::kInt ? value.i : value.b;
  double dv = value.kind == Kind::kFloat ? value.f : double(iv);
  bool neg = is_int ? iv < 0 : std::signbit(dv);
  char buf[512];
  if (is_int && (type == 0 || type == 'd' || type == 'n')) {
    if (precision >= 0) fail("ValueError: Precision not allowed in integer format specifier");
    std::snprintf(buf, sizeof buf, "%lld", (long long)(iv < 0 ? -iv : iv));
  } else if (is_int && (type == 'x' || type == 'X' || type == 'o' || type == 'b')) {
    unsigned long long a = (unsigned long long)(iv < 0 ? -iv : iv);
    if (type == 'b') {
      std::string bits;
      do {
        bits.insert(bits.begin(), char('0' + (a & 1)));
        a >>= 1;
      } while (a);
      std::snprintf(buf, sizeof buf, "%s", bits.c_str());
    } else {
      std::snprintf(buf, sizeof buf, type == 'x' ? "%llx" : type == 'X' ? "%llX" : "%llo", a);
    }
  } else if (type == 'f' || type == 'F' || type == 'e' || type == 'E' || type == 'g' ||
             type == 'G' || type == '%') {
    double a = std::fabs(dv) * (type == '%' ? 100 : 1);
    int p = precision < 0 ? 6 : precision;
    char t = type == '%' ? 'f' : type;
    char f[8] = {'%', '.', '*', t, 0};
    std::snprintf(buf, sizeof buf, f, p, a);
    if (type == '%') std::strncat(buf, "%", sizeof buf - std::strlen(buf) - 1);
  } else if (type == 0 && !is_int) {
    if (precision < 0) {
      std::snprintf(buf, sizeof buf, "%s", float_repr(std::fabs(dv)).c_str());
    } else {
      std::snprintf(buf, sizeof buf, "%.*g", precision == 0 ? 1 : precision, std::fabs(dv));
      if (!std::strpbrk(buf, ".en")) std::strncat(buf, ".0", sizeof buf - std::strlen(buf) - 1);
    }
  } else {
    fail(std::string("ValueError: Unknown format code '") + type + "' for object of type '" +
         py_type(value) + "'");
  }
  std::string sign_text = neg ? "-" : sign == '+' ? "+" : sign == ' ' ? " " : "";
  body = buf;
  if (grouping) {  // separators between the integer digits, every 3 (every 4 in x, o, b)
    size_t step = (type == 'x' || type == 'X' || type == 'o' || type == 'b') ? 4 : 3;
    size_t end = 0;
    while (end < body.size() && std::isxdigit((unsigned char)body[end]) &&
           !(body[end] == 'e' && type != 'x' && type != 'X'))
      ++end;
    std::string grouped;
    for (size_t i = 0; i < end; ++i) {
      if (i && (end - i) % step == 0) grouped += grouping;
      grouped += body[i];
    }
    body = grouped + body.substr(end);
  }
  if (!align) align = '>';
  if (align == '=') {
    int64_t n = int64_t(char_count(sign_text + body));
    std::string f = from_u32(std::u32string(1, fill)), padding;
    for (int64_t i = n; i < width; ++i) padding += f;
    return sign_text + padding + body;
  }
  return pad_to(sign_text + body, width, fill, align);
}

std::string str_format(State& state, const std::string& fmt, List& args, Kwargs& kwargs) {
  std::string out;
  size_t auto_index = 0;
  for (size_t p = 0; p < fmt.size();) {
    char c = fmt[p];
    if (c == '{' && p + 1 < fmt.size() && fmt[p + 1] == '{') {
      out += '{';
      p += 2;
      continue;
    }
    if (c == '}' && p + 1 < fmt.size() && fmt[p + 1] == '}') {
      out += '}';
      p += 2;
      continue;
    }
    if (c == '}') fail("ValueError: Single '}' encountered in format string");
    if (c != '{') {
      out += c;
      ++p;
      continue;
    }
    size_t end = p + 1;
    for (int depth = 1; end < fmt.size(); ++end) {  // a spec may hold {nested} fields
      if (fmt[end] == '{') ++depth;
      if (fmt[end] == '}' && --depth == 0) break;
    }
    if (end >= fmt.size())
      fail(p + 1 == fmt.size() ? "ValueError: Single '{' encountered in format string"
                               : "ValueError: expected '}' before end of string");
    std::string field = fmt.substr(p + 1, end - p - 1);
    p = end + 1;
    std::string spec, conversion;
    size_t colon = field.find(':');
    if (colon != std::string::npos) {
      spec = field.substr(colon + 1);
      field = field.substr(0, colon);
    }
    size_t bang = field.find('!');
    if (bang != std::string::npos) {
      conversion = field.substr(bang + 1);
      field = field.substr(0, bang);
    }
    auto lookup = [&](const std::string& name) -> Value {
      for (char ch : name)
        if (!(std::isalnum((unsigned char)ch) || ch == '_' || (unsigned char)ch >= 0x80))
          fail("format field '" + name +
               "': attribute and index access in format fields is not supported");
      if (name.empty()) {
        if (auto_index >= args.size())
          fail("IndexError: Replacement index " + std::to_string(auto_index) +
               " out of range for positional args tuple");
        return args[auto_index++];
      }
      if (std::all_of(name.begin(), name.end(),
                      [](char ch) { return std::isdigit((unsigned char)ch); })) {
        size_t i = size_t(std::stoul(name.substr(0, 9)));
        if (i >= args.size())
          fail("IndexError: Replacement index " + name + " out of range for positional args tuple");
        return args[i];
      }
      for (auto& [k, val] : kwargs)
        if (k == name) return val;
      fail("KeyError: " + repr_str(name));
    };
    Value v = lookup(field);
    std::string resolved;  // the spec with its nested fields filled in
    for (size_t q = 0; q < spec.size(); ++q) {
      if (spec[q] != '{') {
        resolved += spec[q];
        continue;
      }
      size_t close = spec.find('}', q);
      if (close == std::string::npos) fail("ValueError: unmatched '{' in format spec");
      resolved += to_str(lookup(spec.substr(q + 1, close - q - 1)));
      q = close;
    }
    spec = resolved;
    if (conversion == "r" || conversion == "a")
      v = Value::str(repr(v));
    else if (conversion == "s")
      v = Value::str(to_str(v));
    else if (!conversion.empty())
      fail("ValueError: Unknown conversion specifier " + conversion);
    out += format_field(v, spec, state);
  }
  state.size(char_count(out));
  return out;
}

}  // namespace

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

std::u32string strip_u32(const std::u32string& s, const Value* chars, bool left, bool right) {
  std::optional<std::u32string> set;
  if (chars && chars->kind != Kind::kNone) {
    if (!chars->is_str()) fail("TypeError: strip arg must be None or str");
    set = to_u32(chars->s);
  }
  auto strip = [&](char32_t c) { return set ? set->find(c) != std::u32string::npos : is_space(c); };
  size_t b = 0, e = s.size();
  if (left)
    while (b < e && strip(s[b])) ++b;
  if (right)
    while (e > b && strip(s[e - 1])) --e;
  return s.substr(b, e - b);
}

bool is_allowed_method(const Value& obj, const std::string& name) {
  switch (obj.kind) {
    case Kind::kStr:
      return in_list(name, {"capitalize", "casefold",     "center",       "count",   "endswith",
                            "expandtabs", "find",         "format",       "index",   "isalnum",
                            "isalpha",    "isascii",      "isdecimal",    "isdigit", "isidentifier",
                            "islower",    "isnumeric",    "isprintable",  "isspace", "istitle",
                            "isupper",    "join",         "ljust",        "lower",   "lstrip",
                            "partition",  "removeprefix", "removesuffix", "replace", "rfind",
                            "rindex",     "rjust",        "rpartition",   "rsplit",  "rstrip",
                            "split",      "splitlines",   "startswith",   "strip",   "swapcase",
                            "title",      "upper",        "zfill"});
    case Kind::kDict:
      return in_list(name, {"items", "keys", "values", "get", "copy"});
    case Kind::kList:
      if (obj.list->generator) return false;
      if (obj.list->has_range) return in_list(name, {"count", "index"});
      return obj.list->tuple ? in_list(name, {"count", "index"})
                             : in_list(name, {"count", "index", "copy"});
    default:
      return false;
  }
}

bool is_refused_method(const Value& obj, const std::string& name) {
  switch (obj.kind) {
    case Kind::kStr:
      return in_list(name, {"encode", "format_map", "maketrans", "translate"});
    case Kind::kDict:
      return in_list(name, {"clear", "fromkeys", "pop", "popitem", "setdefault", "update"});
    case Kind::kList:
      if (obj.list->generator) return in_list(name, {"send", "throw", "close"});
      return !obj.list->tuple && !obj.list->has_range &&
             in_list(name,
                     {"append", "clear", "extend", "insert", "pop", "remove", "reverse", "sort"});
    case Kind::kInt:
    case Kind::kBool:
      return in_list(name, {"as_integer_ratio", "bit_count", "bit_length", "conjugate",
                            "from_bytes", "to_bytes", "is_integer"});
    case Kind::kFloat:
      return in_list(name, {"as_integer_ratio", "conjugate", "fromhex", "hex", "is_integer"});
    default:
      return false;
  }
}

Value call_method(State& state, const Value& obj, const std::string& name, List& args,
                  Kwargs& kwargs) {
  if (obj.kind == Kind::kStr) {
    if (name == "format") return Value::str(str_format(state, obj.s, args, kwargs));
    return str_method(state, obj.s, name, args, kwargs);
  }
  if (obj.kind == Kind::kDict) {
    if (name == "get") {
      const Value& key = need(args, 0, name);
      const Value* v = obj.dict->find(key);
      return v ? *v : (args.size() > 1 ? args[1] : Value::none());
    }
    List out;
    for (const auto& [k, v] : obj.dict->items) {
      if (name == "items")
        out.push_back(Value::make_list({k, v}, true));
      else if (name == "keys")
        out.push_back(k);
      else if (name == "values")
        out.push_back(v);
    }
    if (name == "copy") {
      Value d = Value::make_dict();
      d.dict->items = obj.dict->items;
      return d;
    }
    return Value::make_list(std::move(out));
  }
  if (obj.kind == Kind::kList) {
    const List& items = obj.list->items;
    if (name == "copy") return Value::make_list(items);
    const Value& x = need(args, 0, name);
    if (name == "count")
      return Value::integer(
          std::count_if(items.begin(), items.end(), [&](const Value& v) { return equal(v, x); }));
    for (size_t k = 0; k < items.size(); ++k)
      if (equal(items[k], x)) return Value::integer(int64_t(k));
    fail("ValueError: " + repr(x) + " is not in list");
  }
  fail("the method '" + name + "' of a " + type_name(obj) +
       " value cannot be called in a template");
}

// Python's printf-style formatting: fmt % args.
std::string percent_format(State& state, const std::string& fmt, const Value& args) {
  // Python: a tuple gives the arguments; anything else is the one argument, and one with
  // __getitem__ (dict, list, range, undefined; not str) may also serve %(key)s and may go
  // unused without "not all arguments converted".
  bool is_tuple = args.is_tuple();
  List positional = is_tuple ? args.list->items : List{args};
  bool mapping_like = !is_tuple && (args.kind == Kind::kDict || args.is_undefined() ||
                                    (args.kind == Kind::kList && !args.list->generator));
  size_t next = 0;
  std::string out;
  for (size_t p = 0; p < fmt.size();) {
    if (fmt[p] != '%') {
      out += fmt[p++];
      continue;
    }
    size_t start = p++;
    if (p >= fmt.size()) fail("ValueError: incomplete format");
    const Value* value = nullptr;
    Value keyed;
    if (fmt[p] == '(') {
      size_t close = fmt.find(')', p);
      if (close == std::string::npos) fail("ValueError: incomplete format key");
      if (!mapping_like) fail("TypeError: format requires a mapping");
      std::string key = fmt.substr(p + 1, close - p - 1);
      if (args.is_undefined()) fail_undefined(args);
      if (args.kind != Kind::kDict)
        fail("TypeError: " + type_name(args) + " indices must be integers or slices, not str");
      const Value* v = args.dict->find(Value::str(key));
      if (!v) fail("KeyError: " + repr_str(key));
      keyed = *v;
      value = &keyed;
      p = close + 1;
    }
    std::string flags;
    while (p < fmt.size() && std::strchr("-#0 +", fmt[p]) && fmt[p]) flags += fmt[p++];
    std::string width, prec;
    bool has_prec = false;
    while (p < fmt.size() && (std::isdigit((unsigned char)fmt[p]) || fmt[p] == '*'))
      width += fmt[p++];
    if (p < fmt.size() && fmt[p] == '.') {
      has_prec = true;
      ++p;
      while (p < fmt.size() && (std::isdigit((unsigned char)fmt[p]) || fmt[p] == '*'))
        prec += fmt[p++];
    }
    if (width.find('*') != std::string::npos || prec.find('*') != std::string::npos)
      fail("'*' widths in % formatting are not supported");
    check_widths(width + "." + prec, state);
    while (p < fmt.size() && std::strchr("hlL", fmt[p]) && fmt[p]) ++p;
    if (p >= fmt.size()) fail("ValueError: incomplete format");
    char type = fmt[p++];
    if (type == '%' && p - start == 2) {
      out += '%';
      continue;
    }
    if (!value) {
      if (next >= positional.size()) fail("TypeError: not enough arguments for format string");
      value = &positional[next++];
    }
    std::string body;
    char buf[512];
    std::string cflags = flags;
    // Numbers are laid out by snprintf (flags, width, precision); strings padded below.
    std::string cfmt = "%";
    cfmt += cflags;
    cfmt += width;
    if (has_prec) {
      cfmt += '.';
      cfmt += prec.empty() ? std::string("0") : prec;
    }
    bool padded = true;
    switch (type) {
      case 's':
      case 'r':
      case 'a': {
        std::u32string u = to_u32(type == 's' ? to_str(*value) : repr(*value));
        if (has_prec) {
          size_t n = prec.empty() ? 0 : size_t(std::stoul(prec));
          if (u.size() > n) u.resize(n);
        }
        body = from_u32(u);
        padded = false;
        break;
      }
      case 'd':
      case 'i':
      case 'u': {
        if (value->is_str() || !value->is_number())
          fail(std::string("TypeError: %") + type + " format: a real number is required, not " +
               py_type(*value));
        int64_t v = as_integer(*value, "%d", true);
        std::snprintf(buf, sizeof buf, (cfmt + "lld").c_str(), (long long)v);
        body = buf;
        break;
      }
      case 'x':
      case 'X':
      case 'o': {
        int64_t v = as_integer(*value, (std::string("%") + type).c_str(), false);
        std::string f = cfmt + "ll" + type;
        unsigned long long a = (unsigned long long)(v < 0 ? -v : v);
        std::snprintf(buf, sizeof buf, f.c_str(), a);
        body = (v < 0 ? "-" : "") + std::string(buf);
        break;
      }
      case 'f':
      case 'F':
      case 'e':
      case 'E':
      case 'g':
      case 'G': {
        double v = as_double(*value, (std::string("%") + type).c_str());
        std::snprintf(buf, sizeof buf, (cfmt + type).c_str(), v);
        body = buf;
        break;
      }
      case 'c': {
        if (value->is_str() && char_count(value->s) == 1)
          body = value->s;
        else if (value->kind == Kind::kInt && (value->i < 0 || value->i > 0x10FFFF))
          fail("OverflowError: %c arg not in range(0x110000)");
        else if (value->kind == Kind::kInt)
          body = from_u32(std::u32string(1, char32_t(value->i)));
        else
          fail("TypeError: %c requires an int or a unicode character");
        padded = false;
        break;
      }
      default:
        fail(std::string("ValueError: unsupported format character '") + type + "'");
    }
    int64_t w = width.empty() || padded ? 0 : std::stoll(width);
    out += pad_to(body, w, ' ', flags.find('-') != std::string::npos ? '<' : '>');
  }
  if (!mapping_like && next < positional.size())
    fail("TypeError: not all arguments converted during string formatting");
  state.size(char_count(out));
  return out;
}

}  // namespace nxrt::genai::tmpl
