#include "ep/cpu/kernels/utf8.h"

#include <cstdint>

namespace nxrt::cpu {
namespace {

constexpr char32_t kInvalid = 0xFFFFFFFF;

// Decodes the code point at s[i] and sets `len` to its byte length; kInvalid (len 1)
// for a byte that does not start a well-formed, shortest-form sequence.
char32_t decode_one(const std::string& s, size_t i, size_t& len) {
  const auto b0 = uint8_t(s[i]);
  len = 1;
  if (b0 < 0x80) return b0;
  size_t need;
  char32_t cp, min;
  if ((b0 & 0xE0) == 0xC0) {
    need = 1;
    cp = b0 & 0x1F;
    min = 0x80;
  } else if ((b0 & 0xF0) == 0xE0) {
    need = 2;
    cp = b0 & 0x0F;
    min = 0x800;
  } else if ((b0 & 0xF8) == 0xF0) {
    need = 3;
    cp = b0 & 0x07;
    min = 0x10000;
  } else
    return kInvalid;
  if (i + need >= s.size()) return kInvalid;
  for (size_t k = 1; k <= need; ++k) {
    const auto b = uint8_t(s[i + k]);
    if ((b & 0xC0) != 0x80) return kInvalid;
    cp = (cp << 6) | (b & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return kInvalid;
  len = need + 1;
  return cp;
}

void encode_one(char32_t cp, std::string& out) {
  if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += char(0xC0 | (cp >> 6));
    out += char(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += char(0xE0 | (cp >> 12));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  } else {
    out += char(0xF0 | (cp >> 18));
    out += char(0x80 | ((cp >> 12) & 0x3F));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  }
}

// Blocks where case pairs sit at adjacent code points: [first, last] with the uppercase
// letter at the even (upper_even) or odd position.
struct PairRange {
  char32_t first, last;
  bool upper_even;
};
constexpr PairRange kPairs[] = {
    {0x0100, 0x012F, true}, {0x0132, 0x0137, true},  {0x0139, 0x0148, false},
    {0x014A, 0x0177, true}, {0x0179, 0x017E, false}, {0x0460, 0x0481, true},
    {0x048A, 0x04BF, true}, {0x04D0, 0x04FF, true},  {0x1E00, 0x1E95, true},
    {0x1EA0, 0x1EFF, true},
};

// Blocks where lowercase = uppercase + offset.
struct ShiftRange {
  char32_t first, last;  // uppercase range
  char32_t offset;
};
constexpr ShiftRange kShifts[] = {
    {0x00C0, 0x00D6, 0x20}, {0x00D8, 0x00DE, 0x20}, {0x0391, 0x03A1, 0x20},
    {0x03A3, 0x03AB, 0x20}, {0x0388, 0x038A, 0x25}, {0x038E, 0x038F, 0x3F},
    {0x0410, 0x042F, 0x20}, {0x0400, 0x040F, 0x50}, {0xFF21, 0xFF3A, 0x20},
};

char32_t to_lower(char32_t c, bool turkic) {
  if (c < 0x80) {
    if (turkic && c == U'I') return 0x0131;
    return c >= U'A' && c <= U'Z' ? c + 0x20 : c;
  }
  if (c == 0x0130) return U'i';
  if (c == 0x0178) return 0x00FF;
  if (c == 0x0386) return 0x03AC;
  if (c == 0x038C) return 0x03CC;
  for (const ShiftRange& r : kShifts)
    if (c >= r.first && c <= r.last) return c + r.offset;
  for (const PairRange& r : kPairs)
    if (c >= r.first && c <= r.last && ((c % 2 == 0) == r.upper_even)) return c + 1;
  return c;
}

char32_t to_upper(char32_t c, bool turkic) {
  if (c < 0x80) {
    if (turkic && c == U'i') return 0x0130;
    return c >= U'a' && c <= U'z' ? c - 0x20 : c;
  }
  if (c == 0x0131) return U'I';
  if (c == 0x00FF) return 0x0178;
  if (c == 0x00B5) return 0x039C;
  if (c == 0x017F) return U'S';
  if (c == 0x03C2) return 0x03A3;
  if (c == 0x03AC) return 0x0386;
  if (c == 0x03CC) return 0x038C;
  for (const ShiftRange& r : kShifts)
    if (c >= r.first + r.offset && c <= r.last + r.offset) return c - r.offset;
  for (const PairRange& r : kPairs)
    if (c >= r.first && c <= r.last && ((c % 2 == 0) != r.upper_even)) return c - 1;
  return c;
}

}  // namespace

std::u32string utf8_decode(const std::string& s) {
  std::u32string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    size_t len;
    const char32_t cp = decode_one(s, i, len);
    out += cp == kInvalid ? char32_t(0xDC00 + uint8_t(s[i])) : cp;
    i += len;
  }
  return out;
}

void utf8_decode_to(const std::string& s, std::wstring& out) {
  out.clear();
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    size_t len;
    char32_t cp = decode_one(s, i, len);
    if (cp == kInvalid) cp = 0xDC00 + uint8_t(s[i]);
    if constexpr (sizeof(wchar_t) == 2) {
      if (cp >= 0x10000) cp = 0xFFFD;  // no room for astral code points
    }
    out += wchar_t(cp);
    i += len;
  }
}

std::string utf8_change_case(const std::string& s, bool upper, bool turkic) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    size_t len;
    const char32_t cp = decode_one(s, i, len);
    if (cp == kInvalid) {
      out += s[i];  // malformed bytes pass through
    } else {
      encode_one(upper ? to_upper(cp, turkic) : to_lower(cp, turkic), out);
    }
    i += len;
  }
  return out;
}

size_t utf8_whitespace_len(const std::string& s, size_t i) {
  const auto b = uint8_t(s[i]);
  if (b < 0x80) return (b == ' ' || (b >= 0x09 && b <= 0x0D) || (b >= 0x1C && b <= 0x1F)) ? 1 : 0;
  size_t len;
  const char32_t cp = decode_one(s, i, len);
  const bool space = cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) ||
                     cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
  return space ? len : 0;
}

}  // namespace nxrt::cpu
