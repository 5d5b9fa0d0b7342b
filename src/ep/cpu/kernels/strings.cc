// String ops: StringNormalizer, StringConcat, StringSplit, RegexFullMatch.
// Strings are UTF-8; the ops work on code points where the spec's semantics need it (case
// mapping, whitespace, regex '.'), and pass malformed bytes through untouched.
#include <regex>
#include <unordered_set>

#include "ep/cpu/kernels/common.h"
#include "ep/cpu/kernels/utf8.h"

namespace nxrt::cpu {
namespace {

// ---------------------------------------------------------------- StringNormalizer

enum class CaseChange { kNone, kLower, kUpper };

class StringNormalizerKernel final : public Kernel {
 public:
  StringNormalizerKernel(CaseChange change, bool case_sensitive, bool turkic,
                         std::unordered_set<std::string> stopwords)
      : change_(change),
        case_sensitive_(case_sensitive),
        turkic_(turkic),
        stopwords_(std::move(stopwords)) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    const Shape& s = x.shape();
    // The spec allows [C] and [1, C] only: the stopword filter changes C, which would
    // leave rows of different lengths for a batch.
    const bool two_dim = s.size() == 2;
    if (!(s.size() == 1 || (two_dim && s[0] == 1)))
      return invalid_argument("input must have shape [C] or [1, C], got ", s.to_string());
    const std::string* in = x.data<std::string>();
    const int64_t n = x.numel();
    std::vector<int64_t> kept;
    kept.reserve(size_t(n));
    std::string folded;
    for (int64_t i = 0; i < n; ++i) {
      if (!stopwords_.empty()) {
        const std::string* key = &in[i];
        if (!case_sensitive_) {
          folded = utf8_change_case(in[i], /*upper=*/false, turkic_);
          key = &folded;
        }
        if (stopwords_.count(*key)) continue;
      }
      kept.push_back(i);
    }
    // Everything filtered out: the spec asks for one empty string, not an empty tensor.
    const int64_t c = kept.empty() ? 1 : int64_t(kept.size());
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, two_dim ? Shape{1, c} : Shape{c}));
    std::string* out = y->data<std::string>();
    if (kept.empty()) {
      out[0].clear();
      return Status();
    }
    for (size_t k = 0; k < kept.size(); ++k) {
      const std::string& src = in[kept[k]];
      switch (change_) {
        case CaseChange::kNone:
          out[k] = src;
          break;
        case CaseChange::kLower:
          out[k] = utf8_change_case(src, false, turkic_);
          break;
        case CaseChange::kUpper:
          out[k] = utf8_change_case(src, true, turkic_);
          break;
      }
    }
    return Status();
  }

 private:
  CaseChange change_;
  bool case_sensitive_;
  bool turkic_;
  std::unordered_set<std::string> stopwords_;  // lowercased when matching ignores case
};

// ---------------------------------------------------------------- StringConcat

class StringConcatKernel final : public Kernel {
 public:
  Status compute(KernelContext& ctx) const override {
    const Tensor& a = *ctx.input(0);
    const Tensor& b = *ctx.input(1);
    const Shape* shapes[] = {&a.shape(), &b.shape()};
    Shape out_shape;
    if (!broadcast_shapes(shapes, out_shape))
      return invalid_argument("shapes ", a.shape().to_string(), " and ", b.shape().to_string(),
                              " do not broadcast");
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, out_shape));
    const BroadcastPlan plan = make_broadcast_plan(out_shape, shapes);
    const std::string* pa = a.data<std::string>();
    const std::string* pb = b.data<std::string>();
    std::string* out = y->data<std::string>();
    for_each_broadcast_run(plan,
                           [&](const int64_t* off, int64_t o, int64_t count, const int64_t* step) {
                             for (int64_t i = 0; i < count; ++i) {
                               const std::string& l = pa[off[0] + i * step[0]];
                               const std::string& r = pb[off[1] + i * step[1]];
                               std::string& dst = out[o + i];
                               dst.reserve(l.size() + r.size());
                               dst.assign(l).append(r);
                             }
                           });
    return Status();
  }
};

// ---------------------------------------------------------------- StringSplit

// Splits like Python's str.split(sep, maxsplit), which the spec follows: an empty
// separator splits on runs of whitespace and drops leading/trailing whitespace.
void split_on_separator(const std::string& s, const std::string& sep, int64_t maxsplit,
                        std::vector<std::string_view>& parts) {
  std::string_view rest(s);
  while (maxsplit < 0 || int64_t(parts.size()) < maxsplit) {
    const size_t at = rest.find(sep);
    if (at == std::string_view::npos) break;
    parts.push_back(rest.substr(0, at));
    rest.remove_prefix(at + sep.size());
  }
  parts.push_back(rest);
}

void split_on_whitespace(const std::string& s, int64_t maxsplit,
                         std::vector<std::string_view>& parts) {
  const size_t n = s.size();
  size_t i = 0;
  while (true) {
    while (i < n) {
      const size_t w = utf8_whitespace_len(s, i);
      if (w == 0) break;
      i += w;
    }
    if (i >= n) return;
    if (maxsplit >= 0 && int64_t(parts.size()) == maxsplit) {
      // the remainder keeps its inner and trailing whitespace, as in Python
      parts.emplace_back(s.data() + i, n - i);
      return;
    }
    const size_t start = i;
    while (i < n && utf8_whitespace_len(s, i) == 0) ++i;
    parts.emplace_back(s.data() + start, i - start);
  }
}

class StringSplitKernel final : public Kernel {
 public:
  StringSplitKernel(std::string delimiter, int64_t maxsplit)
      : delimiter_(std::move(delimiter)), maxsplit_(maxsplit) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    const int64_t n = x.numel();
    const std::string* in = x.data<std::string>();
    // Pieces are views into the input; the counts come first because the output's last
    // dim is the longest split.
    std::vector<std::vector<std::string_view>> pieces(static_cast<size_t>(n));
    int64_t widest = 0;
    for (int64_t i = 0; i < n; ++i) {
      if (delimiter_.empty())
        split_on_whitespace(in[i], maxsplit_, pieces[size_t(i)]);
      else
        split_on_separator(in[i], delimiter_, maxsplit_, pieces[size_t(i)]);
      widest = std::max(widest, int64_t(pieces[size_t(i)].size()));
    }
    Shape y_shape = x.shape();
    y_shape.push_back(widest);
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, y_shape));
    NXRT_ASSIGN_OR_RETURN(Tensor * z, ctx.output(1, x.shape()));
    std::string* out = y->data<std::string>();
    int64_t* counts = z->data<int64_t>();
    for (int64_t i = 0; i < n; ++i) {
      const auto& p = pieces[size_t(i)];
      counts[i] = int64_t(p.size());
      std::string* row = out + i * widest;
      for (int64_t k = 0; k < widest; ++k) {
        if (k < int64_t(p.size()))
          row[k].assign(p[size_t(k)]);
        else
          row[k].clear();
      }
    }
    return Status();
  }

 private:
  std::string delimiter_;
  int64_t maxsplit_;  // -1: no limit
};

// ---------------------------------------------------------------- RegexFullMatch

// RE2 semantics on std::wregex: both pattern and text are decoded to code points so '.'
// and repetition count characters, not bytes. RE2's \d \w \s are ASCII-only, so they are
// spelled out instead of trusting the locale's classification. Constructs with no
// ECMAScript equivalent are refused at prepare rather than silently changed.
struct RegexTranslation {
  std::wstring pattern;
  std::regex_constants::syntax_option_type flags = std::regex_constants::ECMAScript;
  std::string error;       // non-empty: unsupported or malformed
  bool malformed = false;  // the error is a pattern RE2 itself rejects
};

void append_escaped(std::wstring& out, char32_t c) {
  static const std::wstring kSpecial = L"\\^$.|?*+()[]{}-/";
  if (c < 128 && kSpecial.find(wchar_t(c)) != std::wstring::npos) out += L'\\';
  out += wchar_t(c);
}

RegexTranslation translate_re2(const std::string& re2) {
  RegexTranslation r;
  const std::u32string p = utf8_decode(re2);
  const size_t n = p.size();
  bool dotall = false;
  size_t i = 0;
  // Leading flag groups such as (?i) or (?is) apply to the whole pattern.
  while (i + 2 < n && p[i] == U'(' && p[i + 1] == U'?') {
    size_t j = i + 2;
    bool ok = true, any = false;
    for (; j < n && p[j] != U')'; ++j) {
      if (p[j] == U'i')
        r.flags |= std::regex_constants::icase;
      else if (p[j] == U's')
        dotall = true;
      else {
        ok = false;
        break;
      }
      any = true;
    }
    if (!ok || !any || j >= n) break;
    i = j + 1;
  }
  bool in_class = false;
  auto fail = [&](const std::string& what, bool malformed = false) {
    r.error = what;
    r.malformed = malformed;
    return r;
  };
  for (; i < n; ++i) {
    const char32_t c = p[i];
    if (c == U'\\') {
      if (i + 1 >= n) return fail("trailing backslash", true);
      const char32_t e = p[++i];
      switch (e) {
        case U'd':
          r.pattern += in_class ? L"0-9" : L"[0-9]";
          break;
        case U'w':
          r.pattern += in_class ? L"0-9A-Za-z_" : L"[0-9A-Za-z_]";
          break;
        case U's':
          r.pattern += in_class ? L"\\t\\n\\f\\r " : L"[\\t\\n\\f\\r ]";
          break;
        case U'D':
          if (in_class)
            r.pattern += L"\\D";
          else
            r.pattern += L"[^0-9]";
          break;
        case U'W':
          if (in_class)
            r.pattern += L"\\W";
          else
            r.pattern += L"[^0-9A-Za-z_]";
          break;
        case U'S':
          if (in_class)
            r.pattern += L"\\S";
          else
            r.pattern += L"[^\\t\\n\\f\\r ]";
          break;
        case U'A':
          if (in_class) return fail("\\A inside a character class");
          r.pattern += L"^";
          break;
        case U'z':
          if (in_class) return fail("\\z inside a character class");
          r.pattern += L"$";
          break;
        case U'Q': {
          // literal text up to \E
          ++i;
          for (; i < n; ++i) {
            if (p[i] == U'\\' && i + 1 < n && p[i + 1] == U'E') {
              ++i;
              break;
            }
            append_escaped(r.pattern, p[i]);
          }
          break;
        }
        case U'E':
          break;  // stray \E is ignored by RE2
        case U'x': {
          if (i + 1 < n && p[i + 1] == U'{') {
            size_t j = i + 2;
            uint32_t v = 0;
            for (; j < n && p[j] != U'}'; ++j) {
              const char32_t h = p[j];
              int d = h >= U'0' && h <= U'9'   ? int(h - U'0')
                      : h >= U'a' && h <= U'f' ? int(h - U'a' + 10)
                      : h >= U'A' && h <= U'F' ? int(h - U'A' + 10)
                                               : -1;
              if (d < 0 || v > 0x10FFFF) return fail("bad \\x{...} escape", true);
              v = v * 16 + uint32_t(d);
            }
            if (j >= n || v > 0x10FFFF) return fail("bad \\x{...} escape", true);
            append_escaped(r.pattern, char32_t(v));
            i = j;
          } else {
            r.pattern += L"\\x";
          }
          break;
        }
        case U'p':
        case U'P':
          return fail("Unicode character classes (\\p, \\P) are not supported");
        case U'C':
          return fail("\\C (any byte) is not supported");
        case U'b':
        case U'B':
          if (in_class) return fail("\\b inside a character class");
          r.pattern += L'\\';
          r.pattern += wchar_t(e);
          break;
        default:
          if (e >= U'1' && e <= U'9') return fail("backreferences are not RE2 syntax", true);
          r.pattern += L'\\';
          r.pattern += wchar_t(e);
      }
      continue;
    }
    if (in_class) {
      if (c == U'[' && i + 1 < n && p[i + 1] == U':') {
        // POSIX class [:alpha:]; std::regex knows the names but not the negated form
        const size_t close = p.find(U":]", i + 2);
        if (close == std::u32string::npos) return fail("unterminated [: :] class", true);
        if (p[i + 2] == U'^') return fail("negated POSIX classes [[:^name:]] are not supported");
        for (size_t k = i; k < close + 2; ++k) r.pattern += wchar_t(p[k]);
        i = close + 1;
        continue;
      }
      if (c == U']') in_class = false;
      r.pattern += wchar_t(c);
      continue;
    }
    switch (c) {
      case U'[':
        in_class = true;
        r.pattern += L'[';
        // a leading ']' (after an optional '^') is a literal in RE2
        if (i + 1 < n && p[i + 1] == U'^') {
          r.pattern += L'^';
          ++i;
        }
        if (i + 1 < n && p[i + 1] == U']') {
          r.pattern += L"\\]";
          ++i;
        }
        break;
      case U'.':
        r.pattern += dotall ? L"[\\s\\S]" : L".";
        break;
      case U'(':
        if (i + 1 < n && p[i + 1] == U'?') {
          if (i + 2 < n && p[i + 2] == U':') {
            r.pattern += L"(?:";
            i += 2;
          } else if (i + 2 < n && (p[i + 2] == U'P' || p[i + 2] == U'<') &&
                     !(p[i + 2] == U'<' && i + 3 < n && (p[i + 3] == U'=' || p[i + 3] == U'!'))) {
            // named group: std::regex has no names, the group itself is what matters
            const size_t close = p.find(U'>', i);
            if (close == std::u32string::npos) return fail("unterminated group name", true);
            r.pattern += L'(';
            i = close;
          } else if (i + 2 < n && (p[i + 2] == U'=' || p[i + 2] == U'!' || p[i + 2] == U'<')) {
            return fail("lookaround assertions are not RE2 syntax", true);
          } else {
            return fail("inline flags are only supported at the start of the pattern");
          }
        } else {
          r.pattern += L'(';
        }
        break;
      default:
        r.pattern += wchar_t(c);
    }
  }
  if (in_class) return fail("missing ']'", true);
#ifdef __GLIBCXX__
  // libstdc++'s breadth-first matcher: linear in the text like RE2, and no recursion per
  // character (the default backtracking one can overflow the stack on long inputs).
  r.flags |= std::regex_constants::__polynomial;
#endif
  return r;
}

class RegexFullMatchKernel final : public Kernel {
 public:
  explicit RegexFullMatchKernel(std::wregex re) : re_(std::move(re)) {}
  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, x.shape()));
    const std::string* in = x.data<std::string>();
    bool* out = y->data<bool>();
    std::wstring text;
    for (int64_t i = 0; i < x.numel(); ++i) {
      utf8_decode_to(in[i], text);
      try {
        out[i] = std::regex_match(text, re_);
      } catch (const std::regex_error& e) {
        return runtime_error("regex match failed on element ", i, ": ", e.what());
      }
    }
    return Status();
  }

 private:
  std::wregex re_;
};

Status require_string_input(const KernelInit& init, size_t i) {
  if (init.input_type(i) != DataType::kString) return init.unsupported_type(i);
  return Status();
}

}  // namespace

Expected<KernelPtr> create_string_normalizer(KernelInit& init) {
  NXRT_RETURN_IF_ERROR(require_string_input(init, 0));
  AttrReader attrs(init.node);
  const std::string action = attrs.get_string("case_change_action", "NONE");
  const bool case_sensitive = attrs.get_int("is_case_sensitive", 0) != 0;
  const std::string locale = attrs.get_string("locale", "");
  std::vector<std::string> stopwords = attrs.get_strings("stopwords");
  NXRT_RETURN_IF_ERROR(attrs.status());
  CaseChange change;
  if (action == "NONE")
    change = CaseChange::kNone;
  else if (action == "LOWER")
    change = CaseChange::kLower;
  else if (action == "UPPER")
    change = CaseChange::kUpper;
  else
    return init.error(StatusCode::kInvalidGraph,
                      "case_change_action must be LOWER, UPPER or NONE, got '", action, "'");
  // Only the language part of the locale changes case mapping, and only for the Turkic
  // dotted/dotless i; other locales map like the root locale.
  const std::string lang = locale.substr(0, locale.find_first_of("_-.@"));
  const bool turkic = lang == "tr" || lang == "az";
  std::unordered_set<std::string> stops;
  for (const std::string& w : stopwords)
    stops.insert(case_sensitive ? w : utf8_change_case(w, false, turkic));
  init.output_types[0] = DataType::kString;
  return make_kernel<StringNormalizerKernel>(change, case_sensitive, turkic, std::move(stops));
}

Expected<KernelPtr> create_string_concat(KernelInit& init) {
  NXRT_RETURN_IF_ERROR(require_string_input(init, 0));
  NXRT_RETURN_IF_ERROR(require_string_input(init, 1));
  init.output_types[0] = DataType::kString;
  return make_kernel<StringConcatKernel>();
}

Expected<KernelPtr> create_string_split(KernelInit& init) {
  NXRT_RETURN_IF_ERROR(require_string_input(init, 0));
  AttrReader attrs(init.node);
  std::string delimiter = attrs.get_string("delimiter", "");
  const bool has_max = attrs.has("maxsplit");
  int64_t maxsplit = attrs.get_int("maxsplit", -1);
  NXRT_RETURN_IF_ERROR(attrs.status());
  // Python treats a negative maxsplit as no limit; so do we.
  if (!has_max || maxsplit < 0) maxsplit = -1;
  init.output_types[0] = DataType::kString;
  if (init.output_types.size() > 1) init.output_types[1] = DataType::kInt64;
  return make_kernel<StringSplitKernel>(std::move(delimiter), maxsplit);
}

Expected<KernelPtr> create_regex_full_match(KernelInit& init) {
  NXRT_RETURN_IF_ERROR(require_string_input(init, 0));
  AttrReader attrs(init.node);
  const std::string pattern = attrs.get_string("pattern", "");
  NXRT_RETURN_IF_ERROR(attrs.status());
  if (!attrs.has("pattern"))
    return init.error(StatusCode::kInvalidGraph, "attribute 'pattern' is required");
  RegexTranslation t = translate_re2(pattern);
  if (!t.error.empty())
    return init.error(t.malformed ? StatusCode::kInvalidGraph : StatusCode::kNotImplemented,
                      "pattern '", pattern, "': ", t.error);
  std::wregex re;
  try {
    re.assign(t.pattern, t.flags);
  } catch (const std::regex_error& e) {
    return init.error(StatusCode::kInvalidGraph, "invalid pattern '", pattern, "': ", e.what());
  }
  init.output_types[0] = DataType::kBool;
  return make_kernel<RegexFullMatchKernel>(std::move(re));
}

}  // namespace nxrt::cpu
