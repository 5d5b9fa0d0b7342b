#include "genai/char_class.h"

#include <algorithm>
#include <array>

namespace nxrt::genai {
namespace {

struct ClassRun {
  char32_t first;
  uint8_t cls;
};

#include "genai/unicode_classes.inc"

CharClass lookup_runs(char32_t c) {
  // The last run that starts at or before c.
  const auto* run = std::upper_bound(std::begin(kClassRuns), std::end(kClassRuns), c,
                                     [](char32_t v, const ClassRun& r) { return v < r.first; });
  return static_cast<CharClass>((run - 1)->cls);
}

// The Basic Multilingual Plane, where nearly all text lives, as a direct table (64 KiB,
// built on first use) so that classifying a character is one load.
const std::array<uint8_t, 0x10000>& bmp_table() {
  static const auto table = [] {
    std::array<uint8_t, 0x10000> t{};
    const size_t runs = std::size(kClassRuns);
    for (size_t r = 0; r < runs && kClassRuns[r].first < 0x10000; ++r) {
      const char32_t end =
          r + 1 < runs ? std::min<char32_t>(kClassRuns[r + 1].first, 0x10000) : char32_t{0x10000};
      std::fill(t.begin() + kClassRuns[r].first, t.begin() + end, kClassRuns[r].cls);
    }
    return t;
  }();
  return table;
}

}  // namespace

CharClass char_class(char32_t c) {
  if (c < 0x10000) return static_cast<CharClass>(bmp_table()[c]);
  if (c > 0x10FFFF) return kOther;
  return lookup_runs(c);
}

const char* unicode_tables_version() { return kUnicodeVersion; }

}  // namespace nxrt::genai
