#include "genai/nfc.h"

#include <algorithm>
#include <cstdint>
#include <unordered_map>

#include "genai/utf8.h"

namespace nxrt::genai {
namespace {

struct CombiningClassRun {
  char32_t first;
  uint8_t ccc;
};

struct Decomposition {
  char32_t code, first, second;  // second is 0 for a one-code-point mapping
  bool composes;                 // first + second compose back to code under NFC
};

#include "genai/unicode_nfc.inc"

// Hangul syllables decompose and compose by arithmetic (Unicode chapter 3.12).
constexpr char32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr char32_t kLCount = 19, kVCount = 21, kTCount = 28;
constexpr char32_t kNCount = kVCount * kTCount, kSCount = kLCount * kNCount;

uint8_t combining_class(char32_t c) {
  if (c < kNfcStableBelow || is_raw_byte(c)) return 0;
  const auto* run =
      std::upper_bound(std::begin(kCombiningClassRuns), std::end(kCombiningClassRuns), c,
                       [](char32_t v, const CombiningClassRun& r) { return v < r.first; });
  return (run - 1)->ccc;
}

const Decomposition* find_decomposition(char32_t c) {
  const auto* d =
      std::lower_bound(std::begin(kDecompositions), std::end(kDecompositions), c,
                       [](const Decomposition& entry, char32_t v) { return entry.code < v; });
  return d != std::end(kDecompositions) && d->code == c ? d : nullptr;
}

void decompose(char32_t c, std::u32string& out) {
  if (c >= kSBase && c < kSBase + kSCount) {
    const char32_t s = c - kSBase;
    out.push_back(kLBase + s / kNCount);
    out.push_back(kVBase + (s % kNCount) / kTCount);
    if (s % kTCount != 0) out.push_back(kTBase + s % kTCount);
    return;
  }
  const Decomposition* d = is_raw_byte(c) ? nullptr : find_decomposition(c);
  if (d == nullptr) {
    out.push_back(c);
    return;
  }
  decompose(d->first, out);  // mappings nest a few levels at most
  if (d->second != 0) decompose(d->second, out);
}

uint64_t pair_key(char32_t first, char32_t second) { return (uint64_t{first} << 32) | second; }

// The primary composite of a pair, 0 if none.
char32_t compose(char32_t first, char32_t second) {
  if (first >= kLBase && first < kLBase + kLCount && second >= kVBase && second < kVBase + kVCount)
    return kSBase + ((first - kLBase) * kVCount + (second - kVBase)) * kTCount;
  if (first >= kSBase && first < kSBase + kSCount && (first - kSBase) % kTCount == 0 &&
      second > kTBase && second < kTBase + kTCount)
    return first + (second - kTBase);
  static const auto composites = [] {
    std::unordered_map<uint64_t, char32_t> map;
    for (const Decomposition& d : kDecompositions)
      if (d.composes) map.emplace(pair_key(d.first, d.second), d.code);
    return map;
  }();
  const auto it = composites.find(pair_key(first, second));
  return it == composites.end() ? 0 : it->second;
}

// Stable sort of every run of non-starters by combining class (canonical ordering).
void reorder(std::u32string& s) {
  for (size_t i = 1; i < s.size(); ++i) {
    const uint8_t ccc = combining_class(s[i]);
    if (ccc == 0) continue;
    size_t j = i;
    while (j > 0 && combining_class(s[j - 1]) > ccc) {
      std::swap(s[j], s[j - 1]);
      --j;
    }
  }
}

// Canonical composition: each character joins the last starter unless a character of the
// same or a higher class, or a starter, stands between them (is "blocked").
std::u32string recompose(const std::u32string& s) {
  std::u32string out;
  if (s.empty()) return out;
  out.push_back(s[0]);
  size_t starter = 0;
  // 256: a leading non-starter has no starter to join, so nothing may join it either.
  int last_class = combining_class(s[0]) == 0 ? 0 : 256;
  for (size_t i = 1; i < s.size(); ++i) {
    const char32_t c = s[i];
    const int ccc = combining_class(c);
    const bool blocked = last_class != 0 && last_class >= ccc;
    if (!blocked) {
      if (const char32_t composite = compose(out[starter], c)) {
        out[starter] = composite;
        continue;
      }
    }
    if (ccc == 0) starter = out.size();
    last_class = ccc;
    out.push_back(c);
  }
  return out;
}

}  // namespace

std::string nfc(std::string_view text) {
  DecodedText decoded;
  decode_utf8_lenient(text, decoded);
  const bool stable = std::all_of(decoded.chars.begin(), decoded.chars.end(),
                                  [](char32_t c) { return c < kNfcStableBelow || is_raw_byte(c); });
  if (stable) return std::string(text);
  std::u32string chars;
  chars.reserve(decoded.chars.size());
  for (char32_t c : decoded.chars) decompose(c, chars);
  reorder(chars);
  std::string out;
  out.reserve(text.size());
  for (char32_t c : recompose(chars)) append_utf8(c, out);
  return out;
}

}  // namespace nxrt::genai
