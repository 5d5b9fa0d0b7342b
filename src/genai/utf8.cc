#include "genai/utf8.h"

namespace nxrt::genai {
namespace {

enum class SequenceKind { kValid, kInvalid, kTruncated };

// The sequence at bytes[i]: kValid with its length; kInvalid or kTruncated (the input
// ends inside it) with the length of its maximal subpart, the bytes one U+FFFD replaces.
struct Sequence {
  SequenceKind kind;
  size_t length;
};

Sequence scan_sequence(std::string_view bytes, size_t i) {
  const auto lead = static_cast<unsigned char>(bytes[i]);
  if (lead < 0x80) return {SequenceKind::kValid, 1};
  const Utf8Lead l = utf8_lead(lead);
  if (l.length == 0) return {SequenceKind::kInvalid, 1};
  const size_t need = l.length;
  unsigned char low = l.low, high = l.high;
  for (size_t k = 1; k < need; ++k) {
    if (i + k >= bytes.size()) return {SequenceKind::kTruncated, k};
    const auto c = static_cast<unsigned char>(bytes[i + k]);
    if (c < low || c > high) return {SequenceKind::kInvalid, k};
    low = 0x80;
    high = 0xBF;
  }
  return {SequenceKind::kValid, need};
}

char32_t code_point(std::string_view bytes, size_t i, size_t length) {
  static constexpr unsigned char kLeadMask[5] = {0, 0x7F, 0x1F, 0x0F, 0x07};
  char32_t c = static_cast<unsigned char>(bytes[i]) & kLeadMask[length];
  for (size_t k = 1; k < length; ++k)
    c = (c << 6) | (static_cast<unsigned char>(bytes[i + k]) & 0x3F);
  return c;
}

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

}  // namespace

Utf8Lead utf8_lead(unsigned char lead) {
  Utf8Lead l;
  if (lead >= 0xC2 && lead <= 0xDF) {
    l.length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    l.length = 3;
    if (lead == 0xE0) l.low = 0xA0;
    if (lead == 0xED) l.high = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    l.length = 4;
    if (lead == 0xF0) l.low = 0x90;
    if (lead == 0xF4) l.high = 0x8F;
  }
  return l;
}

uint16_t plain_text_chars(std::string_view bytes) {
  uint16_t chars = 0;
  for (size_t i = 0; i < bytes.size(); ++chars) {
    const auto c = static_cast<unsigned char>(bytes[i]);
    if (c < 0x20 || c == '"' || c == '\\' || chars == UINT16_MAX) return 0;
    if (c < 0x80) {
      ++i;
      continue;
    }
    const Utf8Lead lead = utf8_lead(c);
    if (lead.length == 0 || i + lead.length > bytes.size()) return 0;
    for (size_t k = 1; k < lead.length; ++k) {
      const auto next = static_cast<unsigned char>(bytes[i + k]);
      if (k == 1 ? (next < lead.low || next > lead.high) : (next < 0x80 || next > 0xBF)) return 0;
    }
    i += lead.length;
  }
  return chars;
}

void decode_utf8_lenient(std::string_view text, DecodedText& out) {
  out.chars.clear();
  out.offsets.clear();
  out.chars.reserve(text.size());
  out.offsets.reserve(text.size() + 1);
  size_t i = 0;
  while (i < text.size()) {
    out.offsets.push_back(static_cast<uint32_t>(i));
    const Sequence seq = scan_sequence(text, i);
    if (seq.kind == SequenceKind::kValid) {
      out.chars.push_back(code_point(text, i, seq.length));
      i += seq.length;
    } else {
      out.chars.push_back(kRawByteBase + static_cast<unsigned char>(text[i]));
      ++i;
    }
  }
  out.offsets.push_back(static_cast<uint32_t>(text.size()));
}

void append_utf8(char32_t c, std::string& out) {
  if (is_raw_byte(c)) {
    out.push_back(static_cast<char>(c - kRawByteBase));
  } else if (c < 0x80) {
    out.push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (c >> 6)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (c >> 12)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (c >> 18)));
    out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

std::string utf8_replace_invalid(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  size_t i = 0;
  while (i < bytes.size()) {
    const Sequence seq = scan_sequence(bytes, i);
    if (seq.kind == SequenceKind::kValid)
      out.append(bytes.substr(i, seq.length));
    else
      out.append(kReplacement);
    i += seq.length;
  }
  return out;
}

std::string Utf8Stream::push(std::string_view bytes) {
  pending_.append(bytes);
  // Everything up to a truncated sequence at the end is final; that one waits.
  size_t i = 0, complete = pending_.size();
  while (i < pending_.size()) {
    const Sequence seq = scan_sequence(pending_, i);
    if (seq.kind == SequenceKind::kTruncated) {
      complete = i;
      break;
    }
    i += seq.length;
  }
  std::string text = utf8_replace_invalid(std::string_view(pending_).substr(0, complete));
  pending_.erase(0, complete);
  return text;
}

std::string Utf8Stream::finish() {
  std::string text = utf8_replace_invalid(pending_);
  pending_.clear();
  return text;
}

}  // namespace nxrt::genai
