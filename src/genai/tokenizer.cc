#include "genai/tokenizer.h"

#include <filesystem>

#include "core/mapped_file.h"
#include "genai/byte_level.h"
#include "genai/nfc.h"
#include "genai/tokenizer_json.h"

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
      nfc_(parts.nfc),
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
      encode_plain(text.substr(pos, match->begin - pos), cache, ids);
      ids.push_back(match->id);
      pos = match->end;
    }
  }
  encode_plain(text.substr(pos), cache, ids);
  if (add_special_tokens) ids.insert(ids.end(), suffix_ids_.begin(), suffix_ids_.end());
  return ids;
}

void Tokenizer::encode_plain(std::string_view text, WordCache& cache,
                             std::vector<int32_t>& ids) const {
  if (text.empty()) return;
  std::string normalized;
  if (nfc_) {
    normalized = nfc(text);
    text = normalized;
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
    if (auto it = cache.find(bytes); it != cache.end()) {
      ids.insert(ids.end(), it->second.begin(), it->second.end());
      continue;
    }
    const size_t first = ids.size();
    bpe_->encode_piece(bytes, ids);
    if (cache.size() >= kWordCacheLimit) cache.clear();
    cache.emplace(std::string(bytes), std::vector<int32_t>(ids.begin() + first, ids.end()));
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

Expected<std::string> Tokenizer::decode(std::span<const int32_t> ids,
                                        bool skip_special_tokens) const {
  std::string bytes;
  for (int32_t id : ids) {
    NXRT_ASSIGN_OR_RETURN(std::string_view b, token_bytes(id, skip_special_tokens));
    bytes.append(b);
  }
  return utf8_replace_invalid(bytes);
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
  NXRT_ASSIGN_OR_RETURN(std::string_view bytes, tokenizer_->token_bytes(id, skip_special_tokens_));
  return utf8_.push(bytes);
}

}  // namespace nxrt::genai
