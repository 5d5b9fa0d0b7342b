// Added tokens (tokenizer.json "added_tokens": <|im_start|>, <|endoftext|>, ...) are
// found in the text before pre-tokenization and become their ids as they are: the
// leftmost match first, the longest one at its position (the Python port's regex
// alternation of the tokens, longest first). A byte trie finds them.
#pragma once

#include <bitset>
#include <cstdint>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace nxrt::genai {

class AddedTokenMatcher {
 public:
  AddedTokenMatcher();

  // Adds a token; an empty one is ignored and a repeated one keeps its first id.
  void add(std::string_view content, int32_t id);
  bool empty() const { return first_bytes_.none(); }

  struct Match {
    size_t begin, end;
    int32_t id;
  };
  // The leftmost match in text[pos:], the longest there; nullopt when there is none.
  std::optional<Match> find(std::string_view text, size_t pos) const;

 private:
  int32_t child(int32_t node, unsigned char byte) const;

  std::unordered_map<uint64_t, int32_t> edges_;  // (node << 8 | byte) -> node
  std::vector<int32_t> token_at_;                // per node: the id ending there, or -1
  std::bitset<256> first_bytes_;                 // bytes a token starts with
};

}  // namespace nxrt::genai
