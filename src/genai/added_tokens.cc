#include "genai/added_tokens.h"

namespace nxrt::genai {
namespace {

uint64_t edge_key(int32_t node, unsigned char byte) { return (uint64_t(node) << 8) | byte; }

}  // namespace

AddedTokenMatcher::AddedTokenMatcher() : token_at_{-1} {}

int32_t AddedTokenMatcher::child(int32_t node, unsigned char byte) const {
  auto it = edges_.find(edge_key(node, byte));
  return it == edges_.end() ? -1 : it->second;
}

void AddedTokenMatcher::add(std::string_view content, int32_t id) {
  if (content.empty()) return;
  int32_t node = 0;
  for (char c : content) {
    const auto byte = static_cast<unsigned char>(c);
    auto [it, added] = edges_.try_emplace(edge_key(node, byte), int32_t(token_at_.size()));
    if (added) token_at_.push_back(-1);
    node = it->second;
  }
  if (token_at_[node] < 0) token_at_[node] = id;
  first_bytes_.set(static_cast<unsigned char>(content[0]));
}

std::optional<AddedTokenMatcher::Match> AddedTokenMatcher::find(std::string_view text,
                                                                size_t pos) const {
  for (size_t begin = pos; begin < text.size(); ++begin) {
    if (!first_bytes_.test(static_cast<unsigned char>(text[begin]))) continue;
    std::optional<Match> longest;
    int32_t node = 0;
    for (size_t i = begin; i < text.size(); ++i) {
      node = child(node, static_cast<unsigned char>(text[i]));
      if (node < 0) break;
      if (token_at_[node] >= 0) longest = Match{begin, i + 1, token_at_[node]};
    }
    if (longest) return longest;
  }
  return std::nullopt;
}

}  // namespace nxrt::genai
