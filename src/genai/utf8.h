// UTF-8 for the tokenizer: lenient decoding of input text (invalid bytes survive as
// stand-in characters, so encode never fails and decode gives the bytes back), decoding
// with U+FFFD for invalid bytes as Python's errors="replace" does, and a stream that holds
// back a character whose bytes are split across tokens.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace nxrt::genai {

// Code points from here on stand for one byte of invalid UTF-8 (kRawByteBase + byte):
// they are no Unicode character, so no table matches them.
constexpr char32_t kRawByteBase = 0x110000;
inline bool is_raw_byte(char32_t c) { return c >= kRawByteBase; }

// Text as code points, with each one's byte offset (offsets has one more entry: the end).
struct DecodedText {
  std::vector<char32_t> chars;
  std::vector<uint32_t> offsets;
};

// What a lead byte >= 0x80 says of its sequence: its length in bytes (0: no lead byte)
// and the range of the byte after it, which excludes overlong forms, surrogates and code
// points above U+10FFFF (the bytes after that one are 0x80-0xBF).
struct Utf8Lead {
  uint8_t length = 0;
  uint8_t low = 0x80, high = 0xBF;
};
Utf8Lead utf8_lead(unsigned char lead);

// The characters of `bytes` when it is whole, valid UTF-8 characters none of which is a
// control character, a quote or a backslash (text a JSON string holds as it is); 0 when
// it is not, or holds 65535 characters or more.
uint16_t plain_text_chars(std::string_view bytes);

// Decodes `text`; every byte that is not part of a valid sequence becomes a raw-byte char.
void decode_utf8_lenient(std::string_view text, DecodedText& out);
// Appends the UTF-8 of `c` (a raw-byte char appends its byte).
void append_utf8(char32_t c, std::string& out);
// Valid UTF-8: each maximal invalid or truncated subpart of `bytes` becomes one U+FFFD,
// the replacement practice of the Unicode standard that CPython's decoder follows.
std::string utf8_replace_invalid(std::string_view bytes);

// Turns a byte stream into complete UTF-8 text: push() returns what the bytes so far
// complete and keeps a trailing incomplete character for the next push; finish() returns
// the rest (an incomplete character there becomes U+FFFD).
class Utf8Stream {
 public:
  std::string push(std::string_view bytes);
  std::string finish();

 private:
  std::string pending_;
};

}  // namespace nxrt::genai
