// Byte-level BPE: a piece's bytes, written in the byte-level alphabet, start as one
// symbol per byte, and adjacent pairs merge in rank order (lowest rank first, the
// leftmost among equals) until no ranked pair is left; the symbols' ids are the result.
// The algorithm of nxrt.genai.tokenizer's _bpe: a heap of candidate pairs over a linked
// list, so that long pieces (a CJK sentence) stay O(n log n).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "genai/string_hash.h"

namespace nxrt::genai {

class BpeModel {
 public:
  struct Options {
    std::optional<int32_t> unk_id;  // for symbols without an id; none: they are dropped
    bool ignore_merges = false;     // a piece that is a whole token is that token
    // Character-level models (encode_chars): a character without an id becomes the
    // "<0xAB>" tokens of its bytes when the vocabulary has them all.
    bool byte_fallback = false;
    bool fuse_unk = false;  // consecutive unknown characters give one unk_id
  };

  // vocab: byte-level token -> id (a repeated token keeps its first id); every id is
  // below vocab_size.
  BpeModel(StringMap<int32_t> vocab, int32_t vocab_size, Options options);

  // Adds the merge of the next rank (the first call has rank 0). A merge whose result
  // has no id could never be emitted and is left out; a repeated pair keeps its first rank.
  void add_merge(std::string_view left, std::string_view right);

  const StringMap<int32_t>& vocab() const { return vocab_; }

  // Appends the ids of one pre-tokenized piece, given as its bytes (byte-level models:
  // each byte starts as its byte-level character).
  void encode_piece(std::string_view bytes, std::vector<int32_t>& ids) const;
  // The same for character-level models (SentencePiece style): each UTF-8 character of
  // the piece starts as its own token, or its byte-fallback tokens, or unknown.
  void encode_chars(std::string_view piece, std::vector<int32_t>& ids) const;

 private:
  struct Merge {
    int32_t rank;
    int32_t result;  // the merged symbol (a vocabulary id)
  };

  int32_t symbol_of(std::string_view token);
  const Merge* find_merge(int32_t left, int32_t right) const;
  void emit(int32_t symbol, std::vector<int32_t>& ids) const;
  // Merges `syms` (a piece's starting symbols; -1 for unknown) and appends the result.
  void merge_and_emit(std::vector<int32_t>& syms, std::vector<int32_t>& ids) const;

  StringMap<int32_t> vocab_;
  int32_t vocab_size_;
  Options options_;
  // Symbols are vocabulary ids, plus ids from vocab_size_ on for strings that merges name
  // but the vocabulary lacks (a byte whose character has no id can still merge).
  StringMap<int32_t> extra_symbols_;
  std::array<int32_t, 256> byte_symbol_{};  // -1: a byte no token or merge knows
  std::array<int32_t, 256> fallback_id_{};  // id of "<0xAB>", -1 when absent
  std::unordered_map<uint64_t, Merge> merges_;
  int32_t next_rank_ = 0;
};

}  // namespace nxrt::genai
