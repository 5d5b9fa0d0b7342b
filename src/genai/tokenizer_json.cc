#include "genai/tokenizer_json.h"

#include <algorithm>

#include "genai/json_fields.h"

namespace nxrt::genai {
namespace {

using json::Json;
using json::member;
using json::path_of;

template <typename... Args>
Status unsupported(const Args&... args) {
  return not_implemented(args...);
}

// The "type" of a component object ("BPE", "ByteLevel"), or an error.
Expected<std::string> type_of(const Json& component, std::string_view path) {
  if (!component.is_object())
    return invalid_argument("'", path, "' must be an object, not ", json::brief(component));
  NXRT_ASSIGN_OR_RETURN(std::optional<std::string> type,
                        json::read_string(component, "type", path));
  if (!type) return invalid_argument("'", path, "' has no 'type'");
  return *type;
}

using Steps = std::vector<std::pair<const Json*, std::string>>;

// The steps of a component at `path`: the list under `list_key` when it is a Sequence
// (an empty Sequence may omit it when `optional_list`), else the component itself.
Expected<Steps> steps_of(const Json& component, const std::string& path, const char* list_key,
                         bool optional_list = false) {
  NXRT_ASSIGN_OR_RETURN(std::string kind, type_of(component, path));
  Steps steps;
  if (kind != "Sequence") {
    steps.emplace_back(&component, path);
    return steps;
  }
  const std::string list_path = path + "." + list_key;
  const Json* list = member(component, list_key);
  if (list == nullptr && optional_list) return steps;
  if (list == nullptr || !list->is_array())
    return invalid_argument("'", list_path, "' must be a list");
  for (size_t k = 0; k < list->size(); ++k) steps.emplace_back(&(*list)[k], path_of(list_path, k));
  return steps;
}

// ---- model --------------------------------------------------------------------------

Status check_model(const Json& model) {
  const Json* type = member(model, "type");
  std::string kind = "BPE";  // a model without a type is BPE when it has merges
  if (type != nullptr && !type->is_string())
    return invalid_argument("'model.type' must be a string, not ", json::brief(*type));
  if (type != nullptr) kind = type->get<std::string>();
  if (type == nullptr && member(model, "merges") == nullptr)
    return unsupported("unsupported model type: 'model' has neither a 'type' nor 'merges'");
  if (kind != "BPE")
    return unsupported("unsupported model type '", kind,
                       "' in 'model.type' (only BPE is supported)");
  if (json::truthy(member(model, "dropout")))
    return unsupported("BPE dropout ('model.dropout') is not supported");
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"})
    if (json::truthy(member(model, key)))
      return unsupported("BPE ", key, " ('model.", key, "') is not supported");
  return Status();
}

// The vocabulary into parts.tokens (sized to the largest id, vocabulary or added).
Status read_vocab(const Json& model, const Json* added_tokens, TokenizerParts& parts) {
  const Json* vocab = member(model, "vocab");
  if (vocab == nullptr) return invalid_argument("'model.vocab' is missing");
  if (!vocab->is_object())
    return invalid_argument("'model.vocab' must be an object {token: id}, not ",
                            json::brief(*vocab));
  int64_t size = 0;
  std::vector<std::pair<const std::string*, int32_t>> entries;
  entries.reserve(vocab->size());
  for (auto it = vocab->begin(); it != vocab->end(); ++it) {
    NXRT_ASSIGN_OR_RETURN(int32_t id,
                          json::read_id(it.value(), str_cat("model.vocab['", it.key(), "']")));
    entries.emplace_back(&it.key(), id);
    size = std::max<int64_t>(size, int64_t(id) + 1);
  }
  size_t added_count = 0;
  if (added_tokens != nullptr)
    for (size_t k = 0; k < added_tokens->size(); ++k)
      if (const Json* id = member((*added_tokens)[k], "id")) {
        NXRT_ASSIGN_OR_RETURN(int32_t added_id,
                              json::read_id(*id, path_of(path_of("added_tokens", k), "id")));
        size = std::max<int64_t>(size, int64_t(added_id) + 1);
        ++added_count;
      }
  // Ids index a table: a few scattered huge ids must not make it gigabytes.
  const size_t count = entries.size() + added_count;
  if (size_t(size) > 2 * count + 1024)
    return invalid_argument("token ids are too sparse: the largest is ", size - 1, " for ", count,
                            " tokens in 'model.vocab' and 'added_tokens'");
  parts.tokens.assign(size_t(size), std::string());
  parts.present.assign(size_t(size), 0);
  for (const auto& [token, id] : entries) {
    parts.tokens[id] = *token;
    parts.present[id] = 1;
  }
  return Status();
}

// Added tokens override the vocabulary's string at their id, as in the Python port.
Status read_added_tokens(const Json* added_tokens, TokenizerParts& parts) {
  if (added_tokens == nullptr) return Status();
  for (size_t k = 0; k < added_tokens->size(); ++k) {
    const Json& t = (*added_tokens)[k];
    const std::string path = path_of("added_tokens", k);
    if (!t.is_object())
      return invalid_argument("'", path, "' must be an object, not ", json::brief(t));
    const Json* id_value = member(t, "id");
    if (id_value == nullptr) return invalid_argument("'", path, "' has no 'id'");
    NXRT_ASSIGN_OR_RETURN(int32_t id, json::read_id(*id_value, path_of(path, "id")));
    NXRT_ASSIGN_OR_RETURN(std::optional<std::string> content,
                          json::read_string(t, "content", path));
    if (!content) return invalid_argument("'", path, "' has no 'content'");
    // lstrip/rstrip/single_word change which text a token takes; the Python port
    // refuses them too rather than matching differently from Hugging Face.
    for (const char* flag : {"lstrip", "rstrip", "single_word"})
      if (json::truthy(member(t, flag)))
        return unsupported("added token '", *content, "' ('", path, "'): ", flag,
                           " is not supported");
    NXRT_ASSIGN_OR_RETURN(bool special, json::read_bool(t, "special", path, false));
    parts.tokens[id] = *content;
    parts.present[id] = 1;
    parts.added.emplace_back(*content, id);
    if (special) parts.special_ids.push_back(id);
  }
  return Status();
}

Status read_merges(const Json& model, BpeModel& bpe) {
  const Json* merges = member(model, "merges");
  if (merges == nullptr) return Status();
  if (!merges->is_array())
    return invalid_argument("'model.merges' must be a list, not ", json::brief(*merges));
  for (size_t k = 0; k < merges->size(); ++k) {
    const Json& m = (*merges)[k];
    if (m.is_string()) {  // "left right"
      const std::string& text = m.get_ref<const std::string&>();
      const size_t space = text.find(' ');
      if (space == std::string::npos)
        return invalid_argument("'", path_of("model.merges", k), "' (\"", text,
                                "\") is not two tokens separated by a space");
      bpe.add_merge(std::string_view(text).substr(0, space),
                    std::string_view(text).substr(space + 1));
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      bpe.add_merge(m[0].get_ref<const std::string&>(), m[1].get_ref<const std::string&>());
    } else {
      return invalid_argument("'", path_of("model.merges", k),
                              "' must be \"left right\" or [\"left\", \"right\"], not ",
                              json::brief(m));
    }
  }
  return Status();
}

// ---- normalizer, pre-tokenizer, decoder ---------------------------------------------

// A Replace step's {"String": "x"} pattern (a Regex is refused).
Expected<std::string> replace_pattern(const Json& step, const std::string& path) {
  const Json* pattern = member(step, "pattern");
  const Json* literal = pattern != nullptr ? member(*pattern, "String") : nullptr;
  if (literal == nullptr || !literal->is_string())
    return unsupported("unsupported Replace pattern at '", path,
                       "' (only {\"String\": ...} patterns are supported)");
  return literal->get<std::string>();
}

// The normalizer's steps: NFC, Prepend and Replace, alone or in a Sequence.
Expected<std::vector<TextEdit>> read_normalizer(const Json& spec) {
  std::vector<TextEdit> edits;
  const Json* normalizer = member(spec, "normalizer");
  if (normalizer == nullptr) return edits;
  NXRT_ASSIGN_OR_RETURN(Steps steps, steps_of(*normalizer, "normalizer", "normalizers", true));
  for (const auto& [step, path] : steps) {
    NXRT_ASSIGN_OR_RETURN(std::string type, type_of(*step, path));
    TextEdit edit;
    if (type == "NFC") {
      edit.kind = TextEdit::Kind::kNfc;
    } else if (type == "Prepend") {
      edit.kind = TextEdit::Kind::kPrepend;
      NXRT_ASSIGN_OR_RETURN(std::optional<std::string> text,
                            json::read_string(*step, "prepend", path));
      edit.to = text.value_or("");
    } else if (type == "Replace") {
      edit.kind = TextEdit::Kind::kReplace;
      NXRT_ASSIGN_OR_RETURN(edit.from, replace_pattern(*step, path));
      NXRT_ASSIGN_OR_RETURN(std::optional<std::string> content,
                            json::read_string(*step, "content", path));
      edit.to = content.value_or("");
    } else {
      return unsupported("unsupported normalizer '", type, "' at '", path,
                         "' (NFC, Prepend and Replace are supported)");
    }
    edits.push_back(std::move(edit));
  }
  return edits;
}

// prepend_scheme ("always", "first", "never"), or the older add_prefix_space.
Expected<MetaspaceSpec::Prepend> read_prepend_scheme(const Json& step, const std::string& path) {
  NXRT_ASSIGN_OR_RETURN(std::optional<std::string> scheme,
                        json::read_string(step, "prepend_scheme", path));
  if (!scheme) {
    NXRT_ASSIGN_OR_RETURN(bool add, json::read_bool(step, "add_prefix_space", path, true));
    return add ? MetaspaceSpec::Prepend::kAlways : MetaspaceSpec::Prepend::kNever;
  }
  if (*scheme == "always") return MetaspaceSpec::Prepend::kAlways;
  if (*scheme == "first") return MetaspaceSpec::Prepend::kFirst;
  if (*scheme == "never") return MetaspaceSpec::Prepend::kNever;
  return invalid_argument("'", path, ".prepend_scheme' is '", *scheme,
                          "' (always, first or never)");
}

Expected<MetaspaceSpec> read_metaspace(const Json& step, const std::string& path) {
  MetaspaceSpec out;
  NXRT_ASSIGN_OR_RETURN(std::optional<std::string> replacement,
                        json::read_string(step, "replacement", path));
  if (replacement) out.replacement = *replacement;
  NXRT_ASSIGN_OR_RETURN(out.prepend, read_prepend_scheme(step, path));
  NXRT_ASSIGN_OR_RETURN(out.split, json::read_bool(step, "split", path, true));
  return out;
}

// The decoder of a SentencePiece-style tokenizer.
Expected<CharDecoderSpec> read_char_decoder(const Json& spec) {
  CharDecoderSpec out;
  const Json* decoder = member(spec, "decoder");
  if (decoder == nullptr) return out;
  NXRT_ASSIGN_OR_RETURN(Steps steps, steps_of(*decoder, "decoder", "decoders"));
  for (const auto& [step, path] : steps) {
    NXRT_ASSIGN_OR_RETURN(std::string type, type_of(*step, path));
    if (type == "Replace") {
      NXRT_ASSIGN_OR_RETURN(std::string from, replace_pattern(*step, path));
      NXRT_ASSIGN_OR_RETURN(std::optional<std::string> content,
                            json::read_string(*step, "content", path));
      out.replacements.emplace_back(std::move(from), content.value_or(""));
    } else if (type == "ByteFallback") {
      out.byte_fallback = true;
    } else if (type == "Fuse") {
      // Joining the tokens is what decoding does anyway.
    } else if (type == "Strip") {
      NXRT_ASSIGN_OR_RETURN(std::optional<std::string> content,
                            json::read_string(*step, "content", path));
      const Json* start = member(*step, "start");
      const Json* stop = member(*step, "stop");
      if (content.value_or(" ") != " " || (stop != nullptr && *stop != 0) ||
          (start != nullptr && !start->is_number_unsigned()))
        return unsupported("unsupported Strip decoder at '", path,
                           "' (only leading spaces are supported)");
      out.strip_leading_spaces += start != nullptr ? start->get<int>() : 0;
    } else if (type == "Metaspace") {
      NXRT_ASSIGN_OR_RETURN(MetaspaceSpec m, read_metaspace(*step, path));
      out.replacements.emplace_back(m.replacement, " ");
      if (m.prepend != MetaspaceSpec::Prepend::kNever) out.first_token_drops = m.replacement;
    } else {
      return unsupported("unsupported decoder '", type, "' at '", path,
                         "' for a SentencePiece-style tokenizer (Replace, ByteFallback, Fuse, "
                         "Strip and Metaspace are supported)");
    }
  }
  return out;
}

// "Sequence[Digits, ByteLevel]" for messages.
std::string describe_pre_tokenizer(const Json& step, int depth = 0) {
  const Json* type = member(step, "type");
  if (type == nullptr || !type->is_string()) return json::brief(step);
  const std::string& kind = type->get_ref<const std::string&>();
  const Json* list = member(step, "pretokenizers");
  if (kind != "Sequence" || list == nullptr || !list->is_array() || depth > 4) return kind;
  std::string out = "Sequence[";
  for (size_t k = 0; k < list->size(); ++k)
    out += (k ? ", " : "") + describe_pre_tokenizer((*list)[k], depth + 1);
  return out + "]";
}

struct FlatStep {
  const Json* step;
  std::string path;
  std::string type;
};

// Nested Sequences flattened into their steps.
Status flatten_pre_tokenizer(const Json& step, const std::string& path, int depth,
                             std::vector<FlatStep>& out) {
  if (depth > 8) return invalid_argument("'", path, "': pre-tokenizer Sequences nest too deeply");
  NXRT_ASSIGN_OR_RETURN(std::string type, type_of(step, path));
  if (type != "Sequence") {
    out.push_back({&step, path, type});
    return Status();
  }
  const Json* list = member(step, "pretokenizers");
  if (list == nullptr || !list->is_array())
    return invalid_argument("'", path, ".pretokenizers' must be a list");
  for (size_t k = 0; k < list->size(); ++k)
    NXRT_RETURN_IF_ERROR(
        flatten_pre_tokenizer((*list)[k], path_of(path + ".pretokenizers", k), depth + 1, out));
  return Status();
}

Expected<PreTokenizerStep> read_split(const FlatStep& s) {
  const Json& step = *s.step;
  const Json* pattern = member(step, "pattern");
  const Json* regex = pattern != nullptr ? member(*pattern, "Regex") : nullptr;
  NXRT_ASSIGN_OR_RETURN(std::optional<std::string> behavior,
                        json::read_string(step, "behavior", s.path));
  NXRT_ASSIGN_OR_RETURN(bool invert, json::read_bool(step, "invert", s.path, false));
  std::optional<SplitPattern> known;
  if (regex != nullptr && regex->is_string())
    known = recognise_split_pattern(regex->get_ref<const std::string&>());
  if (!known || behavior != "Isolated" || invert) {
    std::string shown = "null";
    if (regex != nullptr && regex->is_string())
      shown = json::brief(*regex);
    else if (const Json* literal = pattern ? member(*pattern, "String") : nullptr)
      shown = "String " + json::brief(*literal);
    return unsupported("unsupported pre-tokenizer Split with pattern ", shown, " (behavior ",
                       behavior.value_or("null"), invert ? ", inverted" : "", ") at '", s.path,
                       "': only the GPT-2, Llama 3 and Qwen2 regexes, Isolated, are supported");
  }
  PreTokenizerStep out;
  out.kind = PreTokenizerStep::Kind::kSplit;
  out.pattern = *known;
  return out;
}

Expected<PreTokenizerSpec> read_pre_tokenizer(const Json& spec) {
  const Json* pre = member(spec, "pre_tokenizer");
  if (pre == nullptr)
    return unsupported("unsupported pre-tokenizer null: byte-level BPE needs ByteLevel");
  std::vector<FlatStep> steps;
  NXRT_RETURN_IF_ERROR(flatten_pre_tokenizer(*pre, "pre_tokenizer", 0, steps));
  if (steps.empty() || steps.back().type != "ByteLevel")
    return unsupported("unsupported pre-tokenizer ", describe_pre_tokenizer(*pre),
                       ": a byte-level BPE's must end with ByteLevel");
  PreTokenizerSpec out;
  for (size_t k = 0; k + 1 < steps.size(); ++k) {
    const FlatStep& s = steps[k];
    if (s.type == "Digits") {
      PreTokenizerStep digits;
      digits.kind = PreTokenizerStep::Kind::kDigits;
      NXRT_ASSIGN_OR_RETURN(digits.individual_digits,
                            json::read_bool(*s.step, "individual_digits", s.path, false));
      out.steps.push_back(digits);
    } else if (s.type == "Split") {
      NXRT_ASSIGN_OR_RETURN(PreTokenizerStep split, read_split(s));
      out.steps.push_back(split);
    } else {
      return unsupported("unsupported pre-tokenizer '", s.type, "' at '", s.path, "' in ",
                         describe_pre_tokenizer(*pre),
                         " (Digits and Split before a final ByteLevel are supported)");
    }
  }
  const FlatStep& byte_level = steps.back();
  NXRT_ASSIGN_OR_RETURN(out.add_prefix_space, json::read_bool(*byte_level.step, "add_prefix_space",
                                                              byte_level.path, false));
  NXRT_ASSIGN_OR_RETURN(out.use_regex,
                        json::read_bool(*byte_level.step, "use_regex", byte_level.path, true));
  return out;
}

Status check_decoder(const Json& spec) {
  const Json* decoder = member(spec, "decoder");
  if (decoder == nullptr) return Status();
  NXRT_ASSIGN_OR_RETURN(std::string kind, type_of(*decoder, "decoder"));
  if (kind != "ByteLevel")
    return unsupported("unsupported decoder '", kind, "' in 'decoder' (only ByteLevel)");
  return Status();
}

// ---- post-processor -----------------------------------------------------------------

struct Template {
  std::vector<int32_t> prefix, suffix;
};

Expected<Template> read_template(const Json& step, const std::string& path, int32_t vocab_size) {
  const Json* single = member(step, "single");
  if (single == nullptr || !single->is_array())
    return invalid_argument("'", path, ".single' must be a list of template pieces");
  const Json* specials = member(step, "special_tokens");
  Template out;
  bool seen_sequence = false;
  for (size_t k = 0; k < single->size(); ++k) {
    const Json& item = (*single)[k];
    const std::string item_path = path_of(path + ".single", k);
    if (const Json* sequence = member(item, "Sequence")) {
      const Json* id = member(*sequence, "id");
      if (id == nullptr || *id != "A" || seen_sequence)
        return unsupported("'", item_path, "': only one sequence, $A, is supported in a ",
                           "TemplateProcessing for single inputs");
      seen_sequence = true;
      continue;
    }
    const Json* special = member(item, "SpecialToken");
    const Json* name = special != nullptr ? member(*special, "id") : nullptr;
    if (name == nullptr || !name->is_string())
      return invalid_argument("'", item_path,
                              "' must be {\"Sequence\": ...} or {\"SpecialToken\": {\"id\": ...}}");
    const std::string& token = name->get_ref<const std::string&>();
    const Json* entry = specials != nullptr ? member(*specials, token.c_str()) : nullptr;
    if (entry == nullptr)
      return invalid_argument("'", item_path, "': special token '", token, "' is not defined in '",
                              path, ".special_tokens'");
    const Json* ids = member(*entry, "ids");
    if (ids == nullptr || !ids->is_array())
      return invalid_argument("'", path, ".special_tokens['", token, "'].ids' must be a list");
    for (size_t i = 0; i < ids->size(); ++i) {
      NXRT_ASSIGN_OR_RETURN(
          int32_t id,
          json::read_id((*ids)[i], str_cat(path, ".special_tokens['", token, "'].ids[", i, "]")));
      if (id >= vocab_size)
        return invalid_argument("'", path, ".special_tokens['", token, "']': id ", id,
                                " is outside the vocabulary (", vocab_size, " ids)");
      (seen_sequence ? out.suffix : out.prefix).push_back(id);
    }
  }
  return out;
}

// The template's ids; nullopt when the post-processor adds none (null or ByteLevel).
Expected<std::optional<Template>> read_post_processor(const Json& spec, int32_t vocab_size) {
  const Json* post = member(spec, "post_processor");
  if (post == nullptr) return std::optional<Template>();
  NXRT_ASSIGN_OR_RETURN(Steps steps, steps_of(*post, "post_processor", "processors"));
  std::optional<Template> out;
  for (const auto& [step, path] : steps) {
    NXRT_ASSIGN_OR_RETURN(std::string step_kind, type_of(*step, path));
    if (step_kind == "TemplateProcessing") {
      NXRT_ASSIGN_OR_RETURN(Template t, read_template(*step, path, vocab_size));
      out = std::move(t);
    } else if (step_kind != "ByteLevel") {
      return unsupported("unsupported post-processor '", step_kind, "' at '", path,
                         "' (TemplateProcessing and ByteLevel are supported)");
    }
  }
  return out;
}

// ---- config -------------------------------------------------------------------------

// A token given as "text" or as {"content": "text", ...}.
Expected<std::optional<std::string>> read_config_token(const Json& config, const char* key) {
  const Json* value = member(config, key);
  if (value == nullptr) return std::optional<std::string>();
  if (value->is_object()) return json::read_string(*value, "content", key);
  if (!value->is_string())
    return invalid_argument("'", key, "' must be a string or {\"content\": ...}, not ",
                            json::brief(*value));
  return std::optional<std::string>(value->get<std::string>());
}

std::optional<int32_t> lookup(const BpeModel& bpe, const std::optional<std::string>& token) {
  if (!token) return std::nullopt;
  auto it = bpe.vocab().find(*token);
  return it == bpe.vocab().end() ? std::nullopt : std::optional<int32_t>(it->second);
}

}  // namespace

Expected<TokenizerConfig> parse_tokenizer_config(std::string_view text) {
  NXRT_ASSIGN_OR_RETURN(Json config, json::parse(text));
  if (!config.is_object()) return invalid_argument("the top level must be a JSON object");
  TokenizerConfig out;
  NXRT_ASSIGN_OR_RETURN(out.bos_token, read_config_token(config, "bos_token"));
  NXRT_ASSIGN_OR_RETURN(out.eos_token, read_config_token(config, "eos_token"));
  NXRT_ASSIGN_OR_RETURN(out.add_bos_token, json::read_bool(config, "add_bos_token", "", false));
  NXRT_ASSIGN_OR_RETURN(out.add_eos_token, json::read_bool(config, "add_eos_token", "", false));
  return out;
}

Expected<TokenizerParts> parse_tokenizer_json(std::string_view text,
                                              const TokenizerConfig& config) {
  NXRT_ASSIGN_OR_RETURN(Json spec, json::parse(text));
  if (!spec.is_object()) return invalid_argument("the top level must be a JSON object");
  const Json* model = member(spec, "model");
  if (model == nullptr) return invalid_argument("'model' is missing");
  if (!model->is_object())
    return invalid_argument("'model' must be an object, not ", json::brief(*model));
  NXRT_RETURN_IF_ERROR(check_model(*model));

  TokenizerParts parts;
  NXRT_ASSIGN_OR_RETURN(parts.normalizer, read_normalizer(spec));
  // No pre-tokenizer or a Metaspace one, and no ByteLevel decoder: SentencePiece style.
  const Json* pre = member(spec, "pre_tokenizer");
  const Json* decoder = member(spec, "decoder");
  const Json* decoder_type = decoder != nullptr ? member(*decoder, "type") : nullptr;
  const bool byte_level_decoder = decoder_type != nullptr && *decoder_type == "ByteLevel";
  const Json* pre_type = pre != nullptr ? member(*pre, "type") : nullptr;
  parts.char_level =
      !byte_level_decoder && (pre == nullptr || (pre_type != nullptr && *pre_type == "Metaspace"));
  if (parts.char_level) {
    if (pre != nullptr) {
      NXRT_ASSIGN_OR_RETURN(MetaspaceSpec m, read_metaspace(*pre, "pre_tokenizer"));
      parts.metaspace = std::move(m);
    }
    NXRT_ASSIGN_OR_RETURN(parts.char_decoder, read_char_decoder(spec));
  } else {
    NXRT_ASSIGN_OR_RETURN(parts.pre_tokenizer, read_pre_tokenizer(spec));
    NXRT_RETURN_IF_ERROR(check_decoder(spec));
  }

  const Json* added_tokens = member(spec, "added_tokens");
  if (added_tokens != nullptr && !added_tokens->is_array())
    return invalid_argument("'added_tokens' must be a list, not ", json::brief(*added_tokens));
  NXRT_RETURN_IF_ERROR(read_vocab(*model, added_tokens, parts));
  NXRT_RETURN_IF_ERROR(read_added_tokens(added_tokens, parts));

  // The id of each string: the first id that has it (vocabulary and added tokens alike).
  StringMap<int32_t> vocab;
  vocab.reserve(parts.tokens.size());
  for (size_t id = 0; id < parts.tokens.size(); ++id)
    if (parts.present[id]) vocab.try_emplace(parts.tokens[id], int32_t(id));
  BpeModel::Options options;
  NXRT_ASSIGN_OR_RETURN(std::optional<std::string> unk,
                        json::read_string(*model, "unk_token", "model"));
  if (unk)
    if (auto it = vocab.find(*unk); it != vocab.end()) options.unk_id = it->second;
  NXRT_ASSIGN_OR_RETURN(options.ignore_merges,
                        json::read_bool(*model, "ignore_merges", "model", false));
  NXRT_ASSIGN_OR_RETURN(options.byte_fallback,
                        json::read_bool(*model, "byte_fallback", "model", false));
  NXRT_ASSIGN_OR_RETURN(options.fuse_unk, json::read_bool(*model, "fuse_unk", "model", false));
  if (options.byte_fallback && !parts.char_level)
    return unsupported(
        "BPE byte_fallback ('model.byte_fallback') with a ByteLevel "
        "pre-tokenizer or decoder is not supported");
  const auto vocab_size = int32_t(parts.tokens.size());
  parts.bpe = std::make_unique<BpeModel>(std::move(vocab), vocab_size, options);
  NXRT_RETURN_IF_ERROR(read_merges(*model, *parts.bpe));

  parts.bos_id = lookup(*parts.bpe, config.bos_token);
  parts.eos_id = lookup(*parts.bpe, config.eos_token);
  NXRT_ASSIGN_OR_RETURN(std::optional<Template> tmpl, read_post_processor(spec, vocab_size));
  if (tmpl) {
    parts.prefix_ids = std::move(tmpl->prefix);
    parts.suffix_ids = std::move(tmpl->suffix);
  } else {
    if (parts.bos_id && config.add_bos_token) parts.prefix_ids.push_back(*parts.bos_id);
    if (parts.eos_id && config.add_eos_token) parts.suffix_ids.push_back(*parts.eos_id);
  }
  return parts;
}

}  // namespace nxrt::genai
