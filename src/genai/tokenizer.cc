#include "genai/tokenizer.h"

#include <algorithm>
#include <filesystem>

#include "core/mapped_file.h"
#include "genai/byte_level.h"
#include "genai/nfc.h"
#include "genai/tokenizer_json.h"
#include "genai/utf8.h"

namespace nxrt::genai {
namespace {

constexpr size_t kWordCacheLimit = size_t{1} << 17;  // pieces remembered before starting over

Expected<std::shared_ptr<MappedFile>> open_file(const std::string& path, const char* what) {
  auto file = MappedFile::open(path);
  if (!file) {
    Status s = std::move(file).status();
    if (s.code() == StatusCode::kNoSuchFile)
      return Status(s.code(), str_cat(what, " '", path, "' does not exist or is not a file"));
    return std::move(s).with_context(str_cat(what, ": "));
  }
  return file;
}

std::string_view contents(const MappedFile& file) { return {file.data(), file.size()}; }

}  // namespace

Expected<std::unique_ptr<Tokenizer>> Tokenizer::from_json_file(const std::string& path,
                                                               const std::string& config_path) {
  NXRT_ASSIGN_OR_RETURN(std::shared_ptr<MappedFile> file, open_file(path, "tokenizer file"));
  std::string config_file = config_path;
  if (config_file.empty()) {
    // As the Python port and Hugging Face do: a tokenizer_config.json beside it, if any.
    std::error_code ec;
    const auto beside = std::filesystem::absolute(path, ec).parent_path() / "tokenizer_config.json";
    if (!ec && std::filesystem::is_regular_file(beside, ec)) config_file = beside.string();
  }
  TokenizerConfig config;
  if (!config_file.empty()) {
    NXRT_ASSIGN_OR_RETURN(std::shared_ptr<MappedFile> config_data,
                          open_file(config_file, "tokenizer config"));
    auto parsed = parse_tokenizer_config(contents(*config_data));
    if (!parsed)
      return std::move(parsed).status().with_context(
          str_cat("tokenizer config '", config_file, "': "));
    config = std::move(parsed).value();
  }
  auto parts = parse_tokenizer_json(contents(*file), config);
  if (!parts) return std::move(parts).status().with_context(str_cat("tokenizer '", path, "': "));
  return std::make_unique<Tokenizer>(std::move(parts).value());
}

Expected<std::unique_ptr<Tokenizer>> Tokenizer::from_json(std::string_view json,
                                                          std::string_view config_json) {
  TokenizerConfig config;
  if (!config_json.empty()) {
    auto parsed = parse_tokenizer_config(config_json);
    if (!parsed) return std::move(parsed).status().with_context("tokenizer_config.json: ");
    config = std::move(parsed).value();
  }
  auto parts = parse_tokenizer_json(json, config);
  if (!parts) return std::move(parts).status().with_context("tokenizer.json: ");
  return std::make_unique<Tokenizer>(std::move(parts).value());
}

Tokenizer::Tokenizer(TokenizerParts parts)
    : tokens_(std::move(parts.tokens)),
      present_(std::move(parts.present)),
      special_(tokens_.size(), 0),
      bpe_(std::move(parts.bpe)),
      pre_tokenizer_(std::move(parts.pre_tokenizer)),
      normalizer_(std::move(parts.normalizer)),
      char_level_(parts.char_level),
      metaspace_(std::move(parts.metaspace)),
      strip_leading_spaces_(parts.char_level ? parts.char_decoder.strip_leading_spaces : 0),
      prefix_ids_(std::move(parts.prefix_ids)),
      suffix_ids_(std::move(parts.suffix_ids)),
      bos_id_(parts.bos_id),
      eos_id_(parts.eos_id) {
  for (int32_t id : parts.special_ids) special_[id] = 1;
  // An added token is literal text; so is the id a repeated one first had, the one that
  // matching finds. Vocabulary tokens are byte-level strings, except those with a
  // character outside the alphabet, which are text as well (Hugging Face's ByteLevel
  // decoder does the same).
  std::vector<uint8_t> literal(tokens_.size(), 0);
  StringMap<int32_t> first_id;
  for (const auto& [content, id] : parts.added) {
    added_.add(content, id);
    if (first_id.try_emplace(content, id).second) literal[id] = 1;
  }
  bytes_.resize(tokens_.size());
  for (size_t id = 0; id < tokens_.size(); ++id) {
    if (!present_[id]) continue;
    if (char_level_) {
      bytes_[id] = literal[id] ? tokens_[id] : decode_char_token(tokens_[id], parts.char_decoder);
      if (!literal[id] && !parts.char_decoder.first_token_drops.empty()) {
        if (first_bytes_.empty()) first_bytes_.resize(tokens_.size());
        first_bytes_[id] = decode_char_token(tokens_[id], parts.char_decoder, /*first=*/true);
      }
      continue;
    }
    std::optional<std::string> bytes;
    if (!literal[id]) bytes = byte_level_bytes(tokens_[id]);
    bytes_[id] = bytes ? std::move(*bytes) : tokens_[id];
  }
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special_tokens) const {
  std::vector<int32_t> ids;
  if (add_special_tokens) ids = prefix_ids_;
  std::unique_lock lock(cache_mutex_, std::try_to_lock);
  WordCache own_cache;
  WordCache& cache = lock.owns_lock() ? cache_ : own_cache;
  size_t pos = 0;
  if (!added_.empty()) {
    while (auto match = added_.find(text, pos)) {
      encode_plain(text.substr(pos, match->begin - pos), pos == 0, cache, ids);
      ids.push_back(match->id);
      pos = match->end;
    }
  }
  encode_plain(text.substr(pos), pos == 0, cache, ids);
  if (add_special_tokens) ids.insert(ids.end(), suffix_ids_.begin(), suffix_ids_.end());
  return ids;
}

template <typename Encode>
void Tokenizer::encode_cached(std::string_view piece, WordCache& cache, std::vector<int32_t>& ids,
                              const Encode& encode) const {
  if (auto it = cache.find(piece); it != cache.end()) {
    ids.insert(ids.end(), it->second.begin(), it->second.end());
    return;
  }
  const size_t first = ids.size();
  encode(ids);
  if (cache.size() >= kWordCacheLimit) cache.clear();
  cache.emplace(std::string(piece), std::vector<int32_t>(ids.begin() + first, ids.end()));
}

void Tokenizer::encode_plain(std::string_view text, bool starts_text, WordCache& cache,
                             std::vector<int32_t>& ids) const {
  if (text.empty()) return;
  std::string normalized;
  if (!normalizer_.empty()) {
    normalized = apply_edits(text, normalizer_);
    text = normalized;
  }
  if (char_level_) {
    std::vector<std::string> pieces;
    if (metaspace_)
      metaspace_split(text, *metaspace_, starts_text, pieces);
    else if (!text.empty())
      pieces.emplace_back(text);
    for (const std::string& piece : pieces)
      encode_cached(piece, cache, ids,
                    [&](std::vector<int32_t>& out) { bpe_->encode_chars(piece, out); });
    return;
  }
  DecodedText decoded;
  decode_utf8_lenient(text, decoded);
  std::vector<Piece> pieces;
  pre_tokenizer_.split(decoded, pieces);
  std::string spaced;
  for (const Piece& piece : pieces) {
    std::string_view bytes = text.substr(piece.begin, piece.end - piece.begin);
    if (piece.space_before) {
      spaced.assign(1, ' ');
      spaced.append(bytes);
      bytes = spaced;
    }
    encode_cached(bytes, cache, ids,
                  [&](std::vector<int32_t>& out) { bpe_->encode_piece(bytes, out); });
  }
}

Expected<std::string_view> Tokenizer::token_bytes(int32_t id, bool skip_special_tokens) const {
  if (id < 0 || id >= vocab_size())
    return invalid_argument("token id ", id, " is out of range (vocabulary of ", vocab_size(), ")");
  if (!present_[id])
    return invalid_argument("token id ", id, " has no token (the vocabulary leaves it unused)");
  if (skip_special_tokens && special_[id]) return std::string_view();
  return std::string_view(bytes_[id]);
}

const Tokenizer::ByteOrder& Tokenizer::byte_order() const {
  std::call_once(byte_order_once_, [this] {
    std::vector<int32_t>& ids = byte_order_.ids;
    for (int32_t id = 0; id < vocab_size(); ++id)
      if (present_[size_t(id)] && !special_[size_t(id)] && !bytes_[size_t(id)].empty())
        ids.push_back(id);
    std::sort(ids.begin(), ids.end(),
              [&](int32_t a, int32_t b) { return bytes_[size_t(a)] < bytes_[size_t(b)]; });
    byte_order_.common.assign(ids.size(), 0);
    for (size_t i = 1; i < ids.size(); ++i) {
      const std::string& a = bytes_[size_t(ids[i - 1])];
      const std::string& b = bytes_[size_t(ids[i])];
      const size_t n = std::min(a.size(), b.size());
      byte_order_.common[i] =
          uint32_t(std::mismatch(a.begin(), a.begin() + n, b.begin()).first - a.begin());
    }
    byte_order_.plain_chars.assign(size_t(vocab_size()), 0);
    for (int32_t id : ids)
      byte_order_.plain_chars[size_t(id)] = plain_text_chars(bytes_[size_t(id)]);
  });
  return byte_order_;
}

Expected<std::string_view> Tokenizer::first_token_bytes(int32_t id, bool skip_special_tokens,
                                                        bool* counted) const {
  NXRT_ASSIGN_OR_RETURN(std::string_view b, token_bytes(id, skip_special_tokens));
  *counted = !(skip_special_tokens && special_[id]);
  if (*counted && !first_bytes_.empty() && !special_[id]) return std::string_view(first_bytes_[id]);
  return b;
}

Expected<std::string> Tokenizer::decode(std::span<const int32_t> ids,
                                        bool skip_special_tokens) const {
  std::string bytes;
  bool first = true;
  for (int32_t id : ids) {
    std::string_view b;
    if (first) {
      bool counted = false;
      NXRT_ASSIGN_OR_RETURN(b, first_token_bytes(id, skip_special_tokens, &counted));
      first = !counted;
    } else {
      NXRT_ASSIGN_OR_RETURN(b, token_bytes(id, skip_special_tokens));
    }
    bytes.append(b);
  }
  std::string text = utf8_replace_invalid(bytes);
  size_t strip = 0;
  while (strip < size_t(strip_leading_spaces_) && strip < text.size() && text[strip] == ' ')
    ++strip;
  return text.substr(strip);
}

std::optional<int32_t> Tokenizer::token_to_id(std::string_view token) const {
  auto it = bpe_->vocab().find(token);
  return it == bpe_->vocab().end() ? std::nullopt : std::optional<int32_t>(it->second);
}

std::optional<std::string> Tokenizer::id_to_token(int32_t id) const {
  if (id < 0 || id >= vocab_size() || !present_[id]) return std::nullopt;
  return tokens_[id];
}

Expected<std::string> StreamDecoder::add(int32_t id) {
  std::string_view bytes;
  if (first_) {
    bool counted = false;
    NXRT_ASSIGN_OR_RETURN(bytes, tokenizer_->first_token_bytes(id, skip_special_tokens_, &counted));
    first_ = !counted;
  } else {
    NXRT_ASSIGN_OR_RETURN(bytes, tokenizer_->token_bytes(id, skip_special_tokens_));
  }
  std::string text = utf8_.push(bytes);
  size_t strip = 0;
  while (strip_ > 0 && strip < text.size()) {
    if (text[strip] != ' ') {
      strip_ = 0;
      break;
    }
    ++strip;
    --strip_;
  }
  return strip ? text.substr(strip) : text;
}

}  // namespace nxrt::genai
