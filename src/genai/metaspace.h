// The pieces of SentencePiece-style BPE tokenizers in Hugging Face's tokenizer.json form
// (Llama 2, Mistral, TinyLlama, Gemma): spaces become "▁" (by the normalizer's Prepend and
// Replace steps, or by the Metaspace pre-tokenizer), BPE merges characters rather than
// bytes, a character the vocabulary lacks falls back to "<0xAB>" byte tokens, and the
// decoder turns "▁" back into spaces, byte tokens into bytes and drops the first space.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace nxrt::genai {

inline constexpr std::string_view kMetaspace = "\xE2\x96\x81";  // U+2581 "▁"

// One normalizer step: NFC, Prepend(to) (when the text is not empty), Replace(from, to).
struct TextEdit {
  enum class Kind { kNfc, kPrepend, kReplace };
  Kind kind = Kind::kNfc;
  std::string from, to;
};

std::string apply_edits(std::string_view text, std::span<const TextEdit> edits);

// The Metaspace pre-tokenizer: spaces to `replacement`, that prepended (always, or only
// to the segment the text starts with, or never) unless there already, and with `split`
// a new piece before each replacement.
struct MetaspaceSpec {
  enum class Prepend { kAlways, kFirst, kNever };
  std::string replacement{kMetaspace};
  Prepend prepend = Prepend::kAlways;
  bool split = true;
};

// Appends the pieces of one segment of text (`starts_text`: it begins the whole text).
void metaspace_split(std::string_view text, const MetaspaceSpec& spec, bool starts_text,
                     std::vector<std::string>& pieces);

// The decoder of a character-level BPE: Replace steps (in order) on each token's text,
// ByteFallback ("<0x0A>" is the byte 0x0A), then at most `strip_leading_spaces` spaces
// off the start of the decoded text (Strip). A Metaspace decoder whose prepend scheme is
// not "never" deletes its replacement from the first token instead of making it a space
// (`first_token_drops`), as Hugging Face's does.
struct CharDecoderSpec {
  std::vector<std::pair<std::string, std::string>> replacements;
  bool byte_fallback = false;
  int strip_leading_spaces = 0;
  std::string first_token_drops;
};

// What one token stands for under `spec`, before the leading spaces are stripped;
// `first`: it is the first token decoded.
std::string decode_char_token(std::string_view token, const CharDecoderSpec& spec,
                              bool first = false);

// The byte a "<0xAB>" token names, or -1.
int byte_fallback_value(std::string_view token);

}  // namespace nxrt::genai
