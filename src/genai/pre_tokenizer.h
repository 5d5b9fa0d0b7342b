// Pre-tokenization: text is cut into pieces that BPE then merges one at a time. The
// patterns are Hugging Face's regular expressions, implemented as hand-written scanners
// over character classes that follow the backtracking regex's first-alternative-wins
// rules; they port the scanners of nxrt.genai.tokenizer (python/nxrt/genai/tokenizer.py).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "genai/utf8.h"

namespace nxrt::genai {

enum class SplitPattern {
  kGpt2,    // GPT-2's, also ByteLevel's own (use_regex)
  kLlama3,  // Llama 3's: case-insensitive contractions, numbers of up to 3 digits
  kQwen2,   // Llama 3's with single digits
};

// The pattern a tokenizer.json Split regex spells, nullopt for any other.
std::optional<SplitPattern> recognise_split_pattern(std::string_view regex);

struct PreTokenizerStep {
  enum class Kind { kDigits, kSplit };
  Kind kind = Kind::kSplit;
  bool individual_digits = false;              // kDigits: each digit alone, else runs
  SplitPattern pattern = SplitPattern::kGpt2;  // kSplit (behavior Isolated)
};

// Steps in order, then the ByteLevel step every supported tokenizer ends with.
struct PreTokenizerSpec {
  std::vector<PreTokenizerStep> steps;
  bool add_prefix_space = false;  // ByteLevel: a space before each split not starting with one
  bool use_regex = true;          // ByteLevel: split with the GPT-2 pattern
};

// Bytes [begin, end) of the text, after a space the ByteLevel step put before them.
struct Piece {
  uint32_t begin = 0, end = 0;
  bool space_before = false;
};

class PreTokenizer {
 public:
  explicit PreTokenizer(PreTokenizerSpec spec) : spec_(std::move(spec)) {}

  // Appends the pieces of `text`, in order.
  void split(const DecodedText& text, std::vector<Piece>& pieces) const;

 private:
  PreTokenizerSpec spec_;
};

}  // namespace nxrt::genai
