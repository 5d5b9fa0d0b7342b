#include "genai/bpe_model.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>

#include "genai/byte_level.h"
#include "genai/utf8.h"

namespace nxrt::genai {
namespace {

constexpr int32_t kNoSymbol = -1;
constexpr int32_t kMergedAway = -2;

uint64_t pair_key(int32_t left, int32_t right) {
  return (uint64_t(uint32_t(left)) << 32) | uint32_t(right);
}

}  // namespace

BpeModel::BpeModel(StringMap<int32_t> vocab, int32_t vocab_size, Options options)
    : vocab_(std::move(vocab)), vocab_size_(vocab_size), options_(options) {
  byte_symbol_.fill(kNoSymbol);
  std::string ch;
  for (int b = 0; b < 256; ++b) {
    const char byte = static_cast<char>(b);
    ch.clear();
    append_byte_level(std::string_view(&byte, 1), ch);
    if (auto it = vocab_.find(ch); it != vocab_.end()) byte_symbol_[b] = it->second;
  }
  fallback_id_.fill(kNoSymbol);
  if (options_.byte_fallback) {
    char name[8];
    for (int b = 0; b < 256; ++b) {
      std::snprintf(name, sizeof name, "<0x%02X>", b);
      if (auto it = vocab_.find(std::string_view(name)); it != vocab_.end())
        fallback_id_[b] = it->second;
    }
  }
}

int32_t BpeModel::symbol_of(std::string_view token) {
  if (auto it = vocab_.find(token); it != vocab_.end()) return it->second;
  auto [it, added] =
      extra_symbols_.try_emplace(std::string(token), vocab_size_ + int32_t(extra_symbols_.size()));
  if (added) {
    // One character of the alphabet: the symbol a byte starts as.
    std::optional<std::string> bytes = byte_level_bytes(token);
    if (bytes && bytes->size() == 1)
      byte_symbol_[static_cast<unsigned char>((*bytes)[0])] = it->second;
  }
  return it->second;
}

void BpeModel::add_merge(std::string_view left, std::string_view right) {
  const int32_t rank = next_rank_++;
  std::string merged;
  merged.reserve(left.size() + right.size());
  merged.append(left).append(right);
  auto result = vocab_.find(merged);
  if (result == vocab_.end()) return;
  const int32_t l = symbol_of(left), r = symbol_of(right);
  merges_.try_emplace(pair_key(l, r), Merge{rank, result->second});
}

const BpeModel::Merge* BpeModel::find_merge(int32_t left, int32_t right) const {
  auto it = merges_.find(pair_key(left, right));
  return it == merges_.end() ? nullptr : &it->second;
}

void BpeModel::emit(int32_t symbol, std::vector<int32_t>& ids) const {
  if (symbol >= 0 && symbol < vocab_size_)
    ids.push_back(symbol);
  else if (options_.unk_id)  // no id and no unknown token: dropped, as Hugging Face does
    ids.push_back(*options_.unk_id);
}

void BpeModel::encode_piece(std::string_view bytes, std::vector<int32_t>& ids) const {
  const size_t n = bytes.size();
  if (n == 0) return;
  if (n == 1) return emit(byte_symbol_[static_cast<unsigned char>(bytes[0])], ids);
  if (options_.ignore_merges) {
    std::string token;
    append_byte_level(bytes, token);
    if (auto it = vocab_.find(token); it != vocab_.end()) return ids.push_back(it->second);
  }

  std::vector<int32_t> syms(n);
  for (size_t i = 0; i < n; ++i) syms[i] = byte_symbol_[static_cast<unsigned char>(bytes[i])];
  merge_and_emit(syms, ids);
}

void BpeModel::encode_chars(std::string_view piece, std::vector<int32_t>& ids) const {
  if (piece.empty()) return;
  if (options_.ignore_merges)
    if (auto it = vocab_.find(piece); it != vocab_.end()) return ids.push_back(it->second);
  std::vector<int32_t> syms;
  syms.reserve(piece.size());
  for (size_t pos = 0; pos < piece.size();) {
    const auto lead = static_cast<unsigned char>(piece[pos]);
    size_t len = lead < 0x80 ? 1 : utf8_lead(lead).length;
    if (len == 0 || pos + len > piece.size()) len = 1;  // a stray byte stands alone
    const std::string_view ch = piece.substr(pos, len);
    pos += len;
    if (auto it = vocab_.find(ch); it != vocab_.end()) {
      syms.push_back(it->second);
      continue;
    }
    bool all_bytes = options_.byte_fallback;
    for (char c : ch) all_bytes = all_bytes && fallback_id_[static_cast<unsigned char>(c)] >= 0;
    if (all_bytes) {
      for (char c : ch) syms.push_back(fallback_id_[static_cast<unsigned char>(c)]);
    } else if (!(options_.fuse_unk && !syms.empty() && syms.back() == kNoSymbol)) {
      syms.push_back(kNoSymbol);
    }
  }
  merge_and_emit(syms, ids);
}

void BpeModel::merge_and_emit(std::vector<int32_t>& syms, std::vector<int32_t>& ids) const {
  const size_t n = syms.size();
  if (n == 0) return;
  std::vector<int32_t> next(n), prev(n);
  using Candidate = std::pair<int32_t, int32_t>;  // (rank, left position): min-heap order
  std::vector<Candidate> heap;
  for (size_t i = 0; i < n; ++i) {
    next[i] = i + 1 < n ? int32_t(i + 1) : -1;
    prev[i] = int32_t(i) - 1;
  }
  for (size_t i = 0; i + 1 < n; ++i)
    if (const Merge* m = find_merge(syms[i], syms[i + 1])) heap.push_back({m->rank, int32_t(i)});
  const std::greater<Candidate> later;
  std::make_heap(heap.begin(), heap.end(), later);
  auto push_candidate = [&](int32_t a) {
    if (a < 0 || next[a] < 0) return;
    if (const Merge* m = find_merge(syms[a], syms[next[a]])) {
      heap.push_back({m->rank, a});
      std::push_heap(heap.begin(), heap.end(), later);
    }
  };
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), later);
    const auto [rank, i] = heap.back();
    heap.pop_back();
    const int32_t j = next[i];
    // Stale entries: i was merged away, or its pair changed (a rank names one pair).
    if (syms[i] == kMergedAway || j < 0) continue;
    const Merge* m = find_merge(syms[i], syms[j]);
    if (m == nullptr || m->rank != rank) continue;
    syms[i] = m->result;
    syms[j] = kMergedAway;
    next[i] = next[j];
    if (next[i] >= 0) prev[next[i]] = i;
    push_candidate(prev[i]);
    push_candidate(i);
  }
  for (int32_t i = 0; i >= 0; i = next[i]) emit(syms[i], ids);
}

}  // namespace nxrt::genai
