// BPE tokenizer read from a Hugging Face tokenizer.json: the C++ port of
// nxrt.genai.tokenizer (python/nxrt/genai/tokenizer.py), giving the same ids as it and as
// Hugging Face tokenizers for what it supports. Two families:
// byte-level BPE (GPT-2, SmolLM, Llama 3, Qwen)
//   model        BPE (merges as "a b" strings or [a, b] pairs, ignore_merges, unk_token)
//   normalizer   none or NFC
//   pre-tokenizer a Sequence of Digits and Split (the GPT-2, Llama 3 and Qwen2 patterns,
//                behavior Isolated) ending with ByteLevel (add_prefix_space, use_regex)
//   decoder      ByteLevel
// SentencePiece-style BPE (Llama 2, Mistral, TinyLlama; metaspace.h)
//   model        BPE over characters, byte_fallback, unk_token, fuse_unk
//   normalizer   Sequence of NFC, Prepend and Replace (String patterns)
//   pre-tokenizer none, or Metaspace (replacement, prepend_scheme, split)
//   decoder      Sequence of Replace, ByteFallback, Fuse and Strip (leading), or Metaspace
// and for both:
//   added tokens special or not, matched before pre-tokenization, longest first
//                ("normalized" is ignored, as by the Python port)
//   post-processor TemplateProcessing (BOS/EOS around a single sequence), ByteLevel
// Anything else (Unigram, WordPiece, other normalizers or patterns, lstrip/rstrip added
// tokens, byte fallback) is refused with an error naming it, never tokenized differently.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "genai/added_tokens.h"
#include "genai/bpe_model.h"
#include "genai/metaspace.h"
#include "genai/pre_tokenizer.h"
#include "genai/utf8.h"

namespace nxrt::genai {

class StreamDecoder;

// What tokenizer_json.cc reads from the files; a Tokenizer is built from it.
struct TokenizerParts {
  std::vector<std::string> tokens;  // by id: byte-level form, added tokens as text
  std::vector<uint8_t> present;     // per id: 0 for an id the files leave unused
  std::vector<std::pair<std::string, int32_t>> added;  // added tokens in file order
  std::vector<int32_t> special_ids;                    // added tokens marked special
  std::unique_ptr<BpeModel> bpe;
  PreTokenizerSpec pre_tokenizer;  // byte-level models
  std::vector<TextEdit> normalizer;
  bool char_level = false;                 // SentencePiece style: the three below apply
  std::optional<MetaspaceSpec> metaspace;  // none: each text segment is one piece
  CharDecoderSpec char_decoder;
  std::vector<int32_t> prefix_ids, suffix_ids;  // what add_special_tokens puts around
  std::optional<int32_t> bos_id, eos_id;        // from tokenizer_config.json
};

class Tokenizer {
 public:
  // Reads tokenizer.json; bos/eos and add_bos_token/add_eos_token come from
  // config_path, or when that is empty from a tokenizer_config.json next to `path` if
  // there is one. Errors name the file and the field at fault.
  static Expected<std::unique_ptr<Tokenizer>> from_json_file(const std::string& path,
                                                             const std::string& config_path = "");
  // The same from the files' contents (config_json may be empty).
  static Expected<std::unique_ptr<Tokenizer>> from_json(std::string_view json,
                                                        std::string_view config_json = "");

  explicit Tokenizer(TokenizerParts parts);
  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;

  // Token ids of UTF-8 text; with add_special_tokens, the post-processor's BOS/EOS around
  // them. Bytes that are not valid UTF-8 are tokenized as bytes (decode gives them back).
  std::vector<int32_t> encode(std::string_view text, bool add_special_tokens = false) const;
  // The text of the ids; bytes that do not form UTF-8 become U+FFFD. An id outside the
  // vocabulary is an error.
  Expected<std::string> decode(std::span<const int32_t> ids,
                               bool skip_special_tokens = false) const;
  // The bytes one id stands for ("" for a special token when skipping them).
  Expected<std::string_view> token_bytes(int32_t id, bool skip_special_tokens = false) const;
  // The same for the first token of a decoded text (a Metaspace decoder drops its "▁"
  // there); `counted` is set false for a skipped special token, which is not first.
  Expected<std::string_view> first_token_bytes(int32_t id, bool skip_special_tokens,
                                               bool* counted) const;

  // Vocabulary strings are in byte-level form ("Ġthe"), added tokens as written.
  std::optional<int32_t> token_to_id(std::string_view token) const;
  std::optional<std::string> id_to_token(int32_t id) const;
  int32_t vocab_size() const { return int32_t(tokens_.size()); }
  std::optional<int32_t> bos_id() const { return bos_id_; }
  std::optional<int32_t> eos_id() const { return eos_id_; }
  // The ids that stand for bytes (special and unused ids left out) sorted by their bytes,
  // and how many bytes each shares with the one before it: the vocabulary as a trie, for
  // constrained decoding's walks. With it, by id, each token's plain_text_chars (utf8.h;
  // 0 for special and unused ids), which JSON string constraints test tokens by. Built on
  // first use, once per tokenizer (not per constrained request).
  struct ByteOrder {
    std::vector<int32_t> ids;
    std::vector<uint32_t> common;
    std::vector<uint16_t> plain_chars;
  };
  const ByteOrder& byte_order() const;
  // Spaces decode drops from the start of a text (SentencePiece's leading "▁").
  int strip_leading_spaces() const { return strip_leading_spaces_; }

 private:
  using WordCache = StringMap<std::vector<int32_t>>;
  // `starts_text`: the segment begins the text (Metaspace's prepend_scheme "first").
  void encode_plain(std::string_view text, bool starts_text, WordCache& cache,
                    std::vector<int32_t>& ids) const;
  // The ids of one piece from `cache`, or by `encode` (appending to ids), then cached.
  template <typename Encode>
  void encode_cached(std::string_view piece, WordCache& cache, std::vector<int32_t>& ids,
                     const Encode& encode) const;

  std::vector<std::string> tokens_;
  std::vector<std::string> bytes_;        // per id: what decode writes
  std::vector<std::string> first_bytes_;  // per id as a first token, where that differs
  std::vector<uint8_t> present_, special_;
  std::unique_ptr<BpeModel> bpe_;
  PreTokenizer pre_tokenizer_;
  AddedTokenMatcher added_;
  std::vector<TextEdit> normalizer_;
  bool char_level_;
  std::optional<MetaspaceSpec> metaspace_;
  int strip_leading_spaces_;
  std::vector<int32_t> prefix_ids_, suffix_ids_;
  std::optional<int32_t> bos_id_, eos_id_;

  // Ids of pieces seen before; it starts over when full. Concurrent encode calls use it
  // one at a time and the others a cache of their own call.
  mutable std::mutex cache_mutex_;
  mutable WordCache cache_;
  mutable std::once_flag byte_order_once_;
  mutable ByteOrder byte_order_;
};

// Decodes ids one at a time for streaming output: add() returns the text the id
// completes and holds back the bytes of a character split across tokens; flush() returns
// what is left (an incomplete character there becomes U+FFFD).
class StreamDecoder {
 public:
  explicit StreamDecoder(const Tokenizer& tokenizer, bool skip_special_tokens = false)
      : tokenizer_(&tokenizer),
        skip_special_tokens_(skip_special_tokens),
        strip_(tokenizer.strip_leading_spaces()) {}

  Expected<std::string> add(int32_t id);
  std::string flush() { return utf8_.finish(); }

 private:
  const Tokenizer* tokenizer_;
  bool skip_special_tokens_;
  int strip_;  // leading spaces still to drop
  bool first_ = true;
  Utf8Stream utf8_;
};

}  // namespace nxrt::genai
