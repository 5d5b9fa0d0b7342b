// The character classes the pre-tokenizers' patterns ask about: \p{L} (categories L*),
// \p{N} (N*), \s (the Unicode White_Space property, as Oniguruma and so Hugging Face
// tokenizers read it), and everything else. The tables come from Python's unicodedata
// (tools/gen_unicode_classes.py), the source the Python port classifies with.
#pragma once

#include <cstdint>

namespace nxrt::genai {

// Values fixed by the generated table (unicode_classes.inc).
enum CharClass : uint8_t { kOther = 0, kLetter = 1, kNumber = 2, kSpace = 3 };

// The class of a code point; raw-byte stand-ins (utf8.h) and unassigned ones are kOther.
CharClass char_class(char32_t c);

// The Unicode version of the tables ("14.0.0").
const char* unicode_tables_version();

}  // namespace nxrt::genai
