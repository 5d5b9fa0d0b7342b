// Unicode Normalization Form C, for tokenizer.json files whose normalizer is NFC (Qwen2).
// Tables from Python's unicodedata (tools/gen_unicode_classes.py), so the result equals
// the Python port's unicodedata.normalize("NFC", text).
#pragma once

#include <string>
#include <string_view>

namespace nxrt::genai {

// NFC of UTF-8 text; bytes that are not valid UTF-8 pass through unchanged.
std::string nfc(std::string_view text);

}  // namespace nxrt::genai
