#include "genai/metaspace.h"

#include "genai/nfc.h"

namespace nxrt::genai {
namespace {

std::string replace_all(std::string_view text, std::string_view from, std::string_view to) {
  if (from.empty()) return std::string(text);
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  for (size_t hit; (hit = text.find(from, pos)) != std::string_view::npos; pos = hit + from.size())
    out.append(text.substr(pos, hit - pos)).append(to);
  out.append(text.substr(pos));
  return out;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

}  // namespace

std::string apply_edits(std::string_view text, std::span<const TextEdit> edits) {
  std::string out(text);
  for (const TextEdit& e : edits) {
    switch (e.kind) {
      case TextEdit::Kind::kNfc:
        out = nfc(out);
        break;
      case TextEdit::Kind::kPrepend:
        if (!out.empty()) out.insert(0, e.to);
        break;
      case TextEdit::Kind::kReplace:
        out = replace_all(out, e.from, e.to);
        break;
    }
  }
  return out;
}

void metaspace_split(std::string_view text, const MetaspaceSpec& spec, bool starts_text,
                     std::vector<std::string>& pieces) {
  std::string s = replace_all(text, " ", spec.replacement);
  const bool prepend = spec.prepend == MetaspaceSpec::Prepend::kAlways ||
                       (spec.prepend == MetaspaceSpec::Prepend::kFirst && starts_text);
  if (prepend && !s.empty() && s.compare(0, spec.replacement.size(), spec.replacement) != 0)
    s.insert(0, spec.replacement);
  if (!spec.split || spec.replacement.empty()) {
    if (!s.empty()) pieces.push_back(std::move(s));
    return;
  }
  // Each replacement starts a piece (Hugging Face's MergedWithNext).
  size_t start = 0;
  for (size_t hit = s.find(spec.replacement, 1); hit != std::string::npos;
       hit = s.find(spec.replacement, hit + spec.replacement.size())) {
    if (hit > start) pieces.push_back(s.substr(start, hit - start));
    start = hit;
  }
  if (start < s.size()) pieces.push_back(s.substr(start));
}

int byte_fallback_value(std::string_view token) {
  if (token.size() != 6 || token.substr(0, 3) != "<0x" || token[5] != '>') return -1;
  const int hi = hex_digit(token[3]), lo = hex_digit(token[4]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

std::string decode_char_token(std::string_view token, const CharDecoderSpec& spec, bool first) {
  if (spec.byte_fallback)
    if (int b = byte_fallback_value(token); b >= 0) return std::string(1, char(b));
  std::string out(token);
  if (first && !spec.first_token_drops.empty()) out = replace_all(out, spec.first_token_drops, "");
  for (const auto& [from, to] : spec.replacements) out = replace_all(out, from, to);
  return out;
}

}  // namespace nxrt::genai
