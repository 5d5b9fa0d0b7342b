// GPT-2's byte-level alphabet: each byte is written as one printable character so that
// BPE vocabularies hold no spaces or control characters ("Ġthe" is " the"). Printable
// Latin-1 bytes stand for themselves; the other 68 take U+0100 onwards, in byte order.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace nxrt::genai {

char32_t byte_level_char(unsigned char byte);
// Appends the UTF-8 of the byte-level form of `bytes`.
void append_byte_level(std::string_view bytes, std::string& out);
// The bytes a byte-level token stands for; nullopt when a character of it is outside the
// alphabet (or it is not UTF-8): such a token is literal text.
std::optional<std::string> byte_level_bytes(std::string_view token);

}  // namespace nxrt::genai
