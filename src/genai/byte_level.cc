#include "genai/byte_level.h"

#include <array>

#include "genai/utf8.h"

namespace nxrt::genai {
namespace {

bool printable_latin1(unsigned b) {
  return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

struct Tables {
  std::array<char32_t, 256> byte_to_char{};
  std::array<int16_t, 0x200> char_to_byte{};  // the alphabet ends below U+0144
};

const Tables& tables() {
  static const Tables t = [] {
    Tables t;
    t.char_to_byte.fill(-1);
    char32_t extra = 0x100;
    for (unsigned b = 0; b < 256; ++b) {
      t.byte_to_char[b] = printable_latin1(b) ? char32_t(b) : extra++;
      t.char_to_byte[t.byte_to_char[b]] = static_cast<int16_t>(b);
    }
    return t;
  }();
  return t;
}

}  // namespace

char32_t byte_level_char(unsigned char byte) { return tables().byte_to_char[byte]; }

void append_byte_level(std::string_view bytes, std::string& out) {
  const Tables& t = tables();
  for (char b : bytes) append_utf8(t.byte_to_char[static_cast<unsigned char>(b)], out);
}

std::optional<std::string> byte_level_bytes(std::string_view token) {
  const Tables& t = tables();
  DecodedText decoded;
  decode_utf8_lenient(token, decoded);
  std::string out;
  out.reserve(decoded.chars.size());
  for (char32_t c : decoded.chars) {
    if (c >= t.char_to_byte.size() || t.char_to_byte[c] < 0) return std::nullopt;
    out.push_back(static_cast<char>(t.char_to_byte[c]));
  }
  return out;
}

}  // namespace nxrt::genai
