#include "genai/pre_tokenizer.h"

#include <algorithm>

#include "genai/char_class.h"

namespace nxrt::genai {
namespace {

constexpr std::string_view kGpt2Regex =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
constexpr std::string_view kLlama3Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3})"
    R"(| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kQwen2Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N})"
    R"(| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// A scanner: the end of the pattern's match at i, the piece's text ending at `end`.
using Matcher = size_t (*)(const char32_t* text, const uint8_t* cls, size_t i, size_t end);

size_t run_end(const uint8_t* cls, size_t i, size_t end, uint8_t kind) {
  while (i < end && cls[i] == kind) ++i;
  return i;
}

bool is_line_break(char32_t c) { return c == '\r' || c == '\n'; }

// (?i) in Oniguruma folds case per Unicode; of the letters the contractions use, only
// ASCII capitals and U+017F (long s, folding to 's') fold onto them.
char32_t fold(char32_t c) {
  if (c == 0x17F) return 's';
  return c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c;
}

// Length of the contraction ('s 't 're 've 'm 'll 'd) at i, 0 if none.
size_t contraction(const char32_t* text, size_t i, size_t end, bool ignore_case) {
  if (text[i] != '\'' || i + 1 == end) return 0;
  char32_t a = text[i + 1], b = i + 2 < end ? text[i + 2] : 0;
  if (ignore_case) {
    a = fold(a);
    b = fold(b);
  }
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
  return a == 's' || a == 't' || a == 'm' || a == 'd' ? 2 : 0;
}

// `\s+(?!\S)|\s+` at i: a run of white space that leaves its last character to the word
// after it, unless the run is that one character or ends the piece.
size_t whitespace_end(const uint8_t* cls, size_t i, size_t end) {
  const size_t j = run_end(cls, i, end, kSpace);
  return j < end && j - i > 1 ? j - 1 : j;
}

// 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
size_t match_gpt2(const char32_t* text, const uint8_t* cls, size_t i, size_t end) {
  if (size_t n = contraction(text, i, end, false)) return i + n;
  const uint8_t kind = cls[i];
  if (kind != kSpace) return run_end(cls, i, end, kind);
  // ` ?X+`: one plain space joins the letter, number or symbol run after it.
  if (text[i] == ' ' && i + 1 < end && cls[i + 1] != kSpace)
    return run_end(cls, i + 1, end, cls[i + 1]);
  return whitespace_end(cls, i, end);
}

// (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,max_digits}
// | ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
size_t match_llama3_family(const char32_t* text, const uint8_t* cls, size_t i, size_t end,
                           size_t max_digits) {
  if (size_t n = contraction(text, i, end, true)) return i + n;
  const uint8_t kind = cls[i];
  const char32_t c = text[i];
  if (kind == kLetter) return run_end(cls, i, end, kLetter);
  // One character that is neither a digit nor a line break joins the letters after it.
  if (kind != kNumber && !is_line_break(c) && i + 1 < end && cls[i + 1] == kLetter)
    return run_end(cls, i + 1, end, kLetter);
  if (kind == kNumber) return run_end(cls, i, std::min(end, i + max_digits), kNumber);
  if (kind == kOther || (c == ' ' && i + 1 < end && cls[i + 1] == kOther)) {
    size_t j = run_end(cls, i + (kind != kOther), end, kOther);
    while (j < end && is_line_break(text[j])) ++j;
    return j;
  }
  // `\s*[\r\n]+`: backtracking ends the match right after the run's last line break.
  const size_t j = run_end(cls, i, end, kSpace);
  for (size_t k = j; k > i; --k)
    if (is_line_break(text[k - 1])) return k;
  return whitespace_end(cls, i, end);
}

size_t match_llama3(const char32_t* text, const uint8_t* cls, size_t i, size_t end) {
  return match_llama3_family(text, cls, i, end, 3);
}

size_t match_qwen2(const char32_t* text, const uint8_t* cls, size_t i, size_t end) {
  return match_llama3_family(text, cls, i, end, 1);
}

Matcher matcher_of(SplitPattern pattern) {
  switch (pattern) {
    case SplitPattern::kLlama3:
      return match_llama3;
    case SplitPattern::kQwen2:
      return match_qwen2;
    case SplitPattern::kGpt2:
      break;
  }
  return match_gpt2;
}

struct Range {
  uint32_t begin, end;  // character indices
};

void scan(Matcher match, const char32_t* text, const uint8_t* cls, Range r,
          std::vector<Range>& out) {
  for (size_t i = r.begin; i < r.end;) {
    const size_t j = match(text, cls, i, r.end);
    out.push_back({uint32_t(i), uint32_t(j)});
    i = j;
  }
}

// Hugging Face's Digits: each number character alone, or each run of them, is a split.
void split_digits(const uint8_t* cls, Range r, bool individual, std::vector<Range>& out) {
  for (uint32_t i = r.begin; i < r.end;) {
    uint32_t j = i + 1;
    if (cls[i] == kNumber) {
      if (!individual) j = uint32_t(run_end(cls, i, r.end, kNumber));
    } else {
      while (j < r.end && cls[j] != kNumber) ++j;
    }
    out.push_back({i, j});
    i = j;
  }
}

}  // namespace

std::optional<SplitPattern> recognise_split_pattern(std::string_view regex) {
  if (regex == kGpt2Regex) return SplitPattern::kGpt2;
  if (regex == kLlama3Regex) return SplitPattern::kLlama3;
  if (regex == kQwen2Regex) return SplitPattern::kQwen2;
  return std::nullopt;
}

void PreTokenizer::split(const DecodedText& text, std::vector<Piece>& pieces) const {
  const char32_t* chars = text.chars.data();
  const size_t n = text.chars.size();
  if (n == 0) return;
  std::vector<uint8_t> cls(n);
  for (size_t i = 0; i < n; ++i) cls[i] = char_class(chars[i]);

  // Each step cuts every split of the step before it; the pattern of one split never
  // sees its neighbours (Hugging Face's Sequence does the same).
  std::vector<Range> splits{{0, uint32_t(n)}}, next;
  for (const PreTokenizerStep& step : spec_.steps) {
    next.clear();
    for (Range r : splits) {
      if (step.kind == PreTokenizerStep::Kind::kDigits)
        split_digits(cls.data(), r, step.individual_digits, next);
      else
        scan(matcher_of(step.pattern), chars, cls.data(), r, next);
    }
    splits.swap(next);
  }

  // ByteLevel: the optional space, then the GPT-2 pattern on each split.
  const auto& offsets = text.offsets;
  std::vector<char32_t> spaced_chars;
  std::vector<uint8_t> spaced_cls;
  for (Range r : splits) {
    const bool add_space = spec_.add_prefix_space && chars[r.begin] != ' ';
    if (!spec_.use_regex) {
      pieces.push_back({offsets[r.begin], offsets[r.end], add_space});
      continue;
    }
    if (!add_space) {
      next.clear();
      scan(match_gpt2, chars, cls.data(), r, next);
      for (Range p : next) pieces.push_back({offsets[p.begin], offsets[p.end], false});
      continue;
    }
    // Scanned as the pattern sees it: the space, then the split (index k + 1 is the
    // split's character r.begin + k).
    spaced_chars.assign(1, U' ');
    spaced_chars.insert(spaced_chars.end(), chars + r.begin, chars + r.end);
    spaced_cls.assign(1, kSpace);
    spaced_cls.insert(spaced_cls.end(), cls.begin() + r.begin, cls.begin() + r.end);
    next.clear();
    scan(match_gpt2, spaced_chars.data(), spaced_cls.data(), {0, uint32_t(spaced_chars.size())},
         next);
    for (Range p : next) {
      const uint32_t begin = p.begin == 0 ? r.begin : r.begin + p.begin - 1;
      pieces.push_back({offsets[begin], offsets[r.begin + p.end - 1], p.begin == 0});
    }
  }
}

}  // namespace nxrt::genai
