// Reading Hugging Face's tokenizer.json and tokenizer_config.json into TokenizerParts.
// What the files ask for and the tokenizer cannot do is an error that names it
// (kNotImplemented); a file of the wrong shape is an error naming the field
// (kInvalidArgument). Neither file's contents can crash the reader.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"
#include "genai/tokenizer.h"

namespace nxrt::genai {

// What tokenizer_config.json adds: the BOS/EOS tokens (their text) and whether encode
// with add_special_tokens puts them around the ids (when tokenizer.json has no template).
struct TokenizerConfig {
  std::optional<std::string> bos_token, eos_token;
  bool add_bos_token = false, add_eos_token = false;
};

Expected<TokenizerConfig> parse_tokenizer_config(std::string_view json);
Expected<TokenizerParts> parse_tokenizer_json(std::string_view json, const TokenizerConfig& config);

}  // namespace nxrt::genai
