#include "genai/model_config.h"

#include "core/mapped_file.h"
#include "genai/json_fields.h"

namespace nxrt::genai {
namespace {

using json::Json;

// Reads a positive integer member; `what` names it in errors.
Expected<int64_t> read_positive(const Json& obj, const char* key, std::string_view path,
                                int64_t limit) {
  const Json* value = json::member(obj, key);
  if (value == nullptr) return invalid_argument("'", json::path_of(path, key), "' is missing");
  if (!value->is_number_integer() || value->get<int64_t>() < 1 || value->get<int64_t>() > limit)
    return invalid_argument("'", json::path_of(path, key), "' must be an integer in [1, ", limit,
                            "], not ", json::brief(*value));
  return value->get<int64_t>();
}

Expected<double> read_number(const Json& obj, const char* key, std::string_view path,
                             double fallback) {
  const Json* value = json::member(obj, key);
  if (value == nullptr) return fallback;
  if (!value->is_number())
    return invalid_argument("'", json::path_of(path, key), "' must be a number, not ",
                            json::brief(*value));
  return value->get<double>();
}

// A name pattern must hold exactly one %d and nothing else printf would read.
Status check_pattern(const std::string& pattern, std::string_view path) {
  size_t count = 0;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '%') continue;
    if (i + 1 < pattern.size() && pattern[i + 1] == 'd') {
      ++count;
      ++i;
    } else {
      count = 2;  // any other conversion is refused
    }
  }
  if (count != 1)
    return invalid_argument("'", path, "' must hold the layer number as one %d, not '", pattern,
                            "'");
  return Status();
}

Status read_names(const Json& decoder, ModelConfig& c) {
  struct Entry {
    const char* group;
    const char* key;
    std::string* target;
    bool pattern;
  };
  const Entry entries[] = {
      {"inputs", "input_ids", &c.input_ids, false},
      {"inputs", "attention_mask", &c.attention_mask, false},
      {"inputs", "position_ids", &c.position_ids, false},
      {"inputs", "past_key_names", &c.past_key, true},
      {"inputs", "past_value_names", &c.past_value, true},
      {"outputs", "logits", &c.logits, false},
      {"outputs", "present_key_names", &c.present_key, true},
      {"outputs", "present_value_names", &c.present_value, true},
  };
  for (const Entry& e : entries) {
    const Json* group = json::member(decoder, e.group);
    if (group == nullptr) continue;
    const std::string path = json::path_of(json::path_of("model.decoder", e.group), e.key);
    NXRT_ASSIGN_OR_RETURN(std::optional<std::string> name, json::read_string(*group, e.key, path));
    if (!name) continue;
    if (e.pattern) NXRT_RETURN_IF_ERROR(check_pattern(*name, path));
    *e.target = *name;
  }
  return Status();
}

Status read_search(const Json& root, SearchDefaults& s) {
  const Json* search = json::member(root, "search");
  if (search == nullptr) return Status();
  NXRT_ASSIGN_OR_RETURN(s.do_sample, json::read_bool(*search, "do_sample", "search", false));
  NXRT_ASSIGN_OR_RETURN(s.past_present_share_buffer,
                        json::read_bool(*search, "past_present_share_buffer", "search", false));
  NXRT_ASSIGN_OR_RETURN(double temperature, read_number(*search, "temperature", "search", 1.0));
  NXRT_ASSIGN_OR_RETURN(double top_k, read_number(*search, "top_k", "search", 0.0));
  NXRT_ASSIGN_OR_RETURN(double top_p, read_number(*search, "top_p", "search", 1.0));
  NXRT_ASSIGN_OR_RETURN(double repetition,
                        read_number(*search, "repetition_penalty", "search", 1.0));
  if (top_k < 0 || top_k > json::kMaxTokenId)
    return invalid_argument("'search.top_k' must be in [0, ", json::kMaxTokenId, "]");
  s.temperature = float(temperature);
  s.top_k = int(top_k);
  s.top_p = float(top_p);
  s.repetition_penalty = float(repetition);
  return Status();
}

}  // namespace

std::string layer_name(const std::string& pattern, int layer) {
  const size_t at = pattern.find("%d");
  return pattern.substr(0, at) + std::to_string(layer) + pattern.substr(at + 2);
}

Expected<ModelConfig> ModelConfig::from_json(std::string_view text, const std::string& path) {
  auto in_file = [&](Status s) { return invalid_argument(path, ": ", s.message()); };
  auto parsed = json::parse(text);
  if (!parsed.ok()) return in_file(parsed.status());
  const Json& root = *parsed;
  const Json* model = json::member(root, "model");
  const Json* decoder = model ? json::member(*model, "decoder") : nullptr;
  if (decoder == nullptr || !decoder->is_object())
    return in_file(invalid_argument("'model.decoder' is missing"));
  ModelConfig c;
  auto read = [&]() -> Status {
    constexpr int64_t kMaxLayers = 4096, kMaxHeads = 4096, kMaxHeadSize = 4096;
    constexpr int64_t kMaxContext = int64_t{1} << 24;
    NXRT_ASSIGN_OR_RETURN(
        int64_t layers, read_positive(*decoder, "num_hidden_layers", "model.decoder", kMaxLayers));
    NXRT_ASSIGN_OR_RETURN(int64_t kv_heads, read_positive(*decoder, "num_key_value_heads",
                                                          "model.decoder", kMaxHeads));
    NXRT_ASSIGN_OR_RETURN(int64_t head_size,
                          read_positive(*decoder, "head_size", "model.decoder", kMaxHeadSize));
    NXRT_ASSIGN_OR_RETURN(c.context_length,
                          read_positive(*model, "context_length", "model", kMaxContext));
    c.layers = int(layers);
    c.kv_heads = int(kv_heads);
    c.head_size = int(head_size);
    NXRT_ASSIGN_OR_RETURN(std::optional<std::string> file,
                          json::read_string(*decoder, "filename", "model.decoder"));
    if (!file) return invalid_argument("'model.decoder.filename' is missing");
    // The model file sits in the folder: no path leads out of it.
    if (file->empty() || file->find('/') != std::string::npos ||
        file->find('\\') != std::string::npos || *file == "." || *file == "..")
      return invalid_argument("'model.decoder.filename' must name a file in the folder, not '",
                              *file, "'");
    c.model_file = *file;
    const Json* eos = json::member(*model, "eos_token_id");
    if (eos == nullptr) return invalid_argument("'model.eos_token_id' is missing");
    if (eos->is_array()) {
      for (size_t i = 0; i < eos->size(); ++i) {
        NXRT_ASSIGN_OR_RETURN(int32_t id,
                              json::read_id((*eos)[i], json::path_of("model.eos_token_id", i)));
        c.eos_token_ids.push_back(id);
      }
    } else {
      NXRT_ASSIGN_OR_RETURN(int32_t id, json::read_id(*eos, "model.eos_token_id"));
      c.eos_token_ids.push_back(id);
    }
    NXRT_RETURN_IF_ERROR(read_names(*decoder, c));
    return read_search(root, c.search);
  };
  if (Status s = read(); !s.ok()) return in_file(s);
  return c;
}

Expected<ModelConfig> ModelConfig::from_file(const std::string& path) {
  auto file = MappedFile::open(path);
  if (!file) return invalid_argument(path, ": cannot read it (", file.status().message(), ")");
  return from_json(std::string_view((*file)->data(), (*file)->size()), path);
}

}  // namespace nxrt::genai
