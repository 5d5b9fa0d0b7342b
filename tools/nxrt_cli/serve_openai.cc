#include "serve_openai.h"

#include <atomic>
#include <chrono>
#include <cmath>

namespace nxrt::cli {
namespace {

ApiError bad(std::string message, std::string param) {
  ApiError e;
  e.message = std::move(message);
  e.param = std::move(param);
  return e;
}

// Reads a number field into `out` when present (null counts as absent).
std::optional<ApiError> read_number(const OrderedJson& body, const char* key, double lo, double hi,
                                    float& out) {
  auto it = body.find(key);
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_number() || !std::isfinite(it->get<double>()) || it->get<double>() < lo ||
      it->get<double>() > hi)
    return bad(std::string("'") + key + "' must be a number from " + std::to_string(lo) + " to " +
                   std::to_string(hi),
               key);
  out = it->get<float>();
  return std::nullopt;
}

std::optional<ApiError> read_integer(const OrderedJson& body, const char* key, int64_t lo,
                                     int64_t hi, int64_t& out) {
  auto it = body.find(key);
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_number_integer() || it->get<int64_t>() < lo || it->get<int64_t>() > hi)
    return bad(std::string("'") + key + "' must be an integer from " + std::to_string(lo) + " to " +
                   std::to_string(hi),
               key);
  out = it->get<int64_t>();
  return std::nullopt;
}

std::optional<ApiError> read_stop(const OrderedJson& body, std::vector<std::string>& stops) {
  auto it = body.find("stop");
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (it->is_string()) {
    stops.push_back(it->get<std::string>());
    return std::nullopt;
  }
  if (!it->is_array() || it->size() > 4)
    return bad("'stop' must be a string or a list of at most 4 strings", "stop");
  for (const auto& s : *it) {
    if (!s.is_string()) return bad("'stop' must hold strings", "stop");
    stops.push_back(s.get<std::string>());
  }
  return std::nullopt;
}

std::optional<ApiError> read_messages(const OrderedJson& body, ApiRequest& r) {
  auto it = body.find("messages");
  if (it == body.end() || !it->is_array() || it->empty())
    return bad("'messages' must be a non-empty list of messages", "messages");
  for (size_t i = 0; i < it->size(); ++i) {
    const OrderedJson& m = (*it)[i];
    const std::string where = "messages[" + std::to_string(i) + "]";
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string())
      return bad("'" + where + "' must be an object with a string 'role'", where);
    if (m.contains("content") && !m["content"].is_string() && !m["content"].is_null() &&
        !m["content"].is_array())
      return bad("'" + where + ".content' must be a string or a list of parts", where);
  }
  r.messages = *it;
  r.variables = OrderedJson::object();
  for (const char* key : {"tools", "documents"})
    if (auto v = body.find(key); v != body.end() && !v->is_null()) r.variables[key] = *v;
  return std::nullopt;
}

// response_format: "text", "json_object" or "json_schema" (constrained decoding: the
// output is one JSON value that parses and, for a schema, matches it).
std::optional<ApiError> read_response_format(const OrderedJson& format, genai::SamplingOptions& s) {
  const auto type = format.is_object() ? format.find("type") : format.end();
  if (type == format.end() || !type->is_string())
    return bad("'response_format' must be an object with a string 'type'", "response_format");
  if (*type == "text") return std::nullopt;
  if (*type == "json_object") {
    s.json = genai::JsonGrammar::any_object();
    return std::nullopt;
  }
  if (*type != "json_schema")
    return bad("'response_format' type '" + type->get<std::string>() +
                   "' is not supported (text, json_object and json_schema are)",
               "response_format");
  const auto spec = format.find("json_schema");
  if (spec == format.end() || !spec->is_object())
    return bad("'response_format' of type json_schema needs a 'json_schema' object",
               "response_format");
  const auto schema = spec->find("schema");
  if (schema == spec->end() || schema->is_null()) {  // no schema: any object, as json_object
    s.json = genai::JsonGrammar::any_object();
    return std::nullopt;
  }
  auto grammar = genai::JsonGrammar::from_schema(schema->dump());
  if (!grammar.ok())
    return bad("response_format.json_schema.schema " + grammar.status().message(),
               "response_format");
  s.json = *grammar;
  return std::nullopt;
}

}  // namespace

std::string ApiError::body() const {
  OrderedJson e = {{"message", message},
                   {"type", type},
                   {"param", param.empty() ? OrderedJson() : OrderedJson(param)},
                   {"code", code.empty() ? OrderedJson() : OrderedJson(code)}};
  return OrderedJson{{"error", e}}.dump(-1, ' ', false, OrderedJson::error_handler_t::replace);
}

std::optional<ApiError> parse_request(std::string_view text, bool chat, int64_t max_tokens_cap,
                                      ApiRequest& r) {
  OrderedJson body;
  try {
    body = OrderedJson::parse(text.begin(), text.end());
  } catch (const nlohmann::json::exception& e) {
    return bad(std::string("the body is not valid JSON: ") + e.what(), "");
  }
  if (!body.is_object()) return bad("the body must be a JSON object", "");
  r.chat = chat;
  if (auto it = body.find("model"); it != body.end() && !it->is_null()) {
    if (!it->is_string()) return bad("'model' must be a string", "model");
    r.model = it->get<std::string>();
  }
  if (chat) {
    if (auto e = read_messages(body, r)) return e;
  } else {
    auto it = body.find("prompt");
    if (it == body.end() || !it->is_string())
      return bad("'prompt' must be a string (lists of prompts are not supported)", "prompt");
    r.prompt = it->get<std::string>();
  }
  genai::SamplingOptions& s = r.sampling;
  int64_t max_tokens = std::min<int64_t>(max_tokens_cap, chat ? max_tokens_cap : 16);
  for (const char* key : {"max_tokens", "max_completion_tokens"})
    if (auto e = read_integer(body, key, 1, max_tokens_cap, max_tokens)) return e;
  s.max_tokens = int(max_tokens);
  s.temperature = 1.0f;  // OpenAI's default
  if (auto e = read_number(body, "temperature", 0.0, 2.0, s.temperature)) return e;
  if (auto e = read_number(body, "top_p", 1e-6, 1.0, s.top_p)) return e;
  if (auto e = read_number(body, "min_p", 0.0, 1.0, s.min_p)) return e;
  if (auto e = read_number(body, "presence_penalty", -2.0, 2.0, s.presence_penalty)) return e;
  if (auto e = read_number(body, "frequency_penalty", -2.0, 2.0, s.frequency_penalty)) return e;
  if (auto e = read_number(body, "repetition_penalty", 0.01, 100.0, s.repetition_penalty)) return e;
  int64_t top_k = 0, seed = 0, n = 1;
  if (auto e = read_integer(body, "top_k", 0, int64_t{1} << 24, top_k)) return e;
  s.top_k = int(top_k);
  if (auto it = body.find("seed"); it != body.end() && !it->is_null()) {
    if (auto e = read_integer(body, "seed", INT64_MIN, INT64_MAX, seed)) return e;
    s.seed = uint64_t(seed);
  }
  if (auto e = read_integer(body, "n", 1, kMaxChoices, n)) return e;
  r.n = int(n);
  if (auto e = read_stop(body, s.stop)) return e;
  if (auto it = body.find("stream"); it != body.end() && !it->is_null()) {
    if (!it->is_boolean()) return bad("'stream' must be true or false", "stream");
    r.stream = it->get<bool>();
  }
  if (auto it = body.find("stream_options"); it != body.end() && !it->is_null()) {
    if (!it->is_object()) return bad("'stream_options' must be an object", "stream_options");
    if (auto u = it->find("include_usage"); u != it->end() && !u->is_null()) {
      if (!u->is_boolean())
        return bad("'stream_options.include_usage' must be true or false", "stream_options");
      r.include_usage = u->get<bool>();
    }
  }
  // logprobs: a flag with top_logprobs (chat), or the number of top entries (completions).
  if (auto it = body.find("logprobs"); it != body.end() && !it->is_null()) {
    if (chat) {
      if (!it->is_boolean()) return bad("'logprobs' must be true or false", "logprobs");
      s.logprobs = it->get<bool>();
      int64_t top = 0;
      if (auto e = read_integer(body, "top_logprobs", 0, 20, top)) return e;
      s.top_logprobs = int(top);
    } else {
      int64_t top = 0;
      if (auto e = read_integer(body, "logprobs", 0, 5, top)) return e;
      s.logprobs = true;
      s.top_logprobs = int(top);
    }
  }
  if (auto it = body.find("top_logprobs"); it != body.end() && !it->is_null() && !s.logprobs)
    return bad("'top_logprobs' needs 'logprobs': true", "top_logprobs");
  // Not built yet: refused rather than ignored, so no client gets a silently different answer.
  for (const char* key : {"logit_bias", "tools", "tool_choice"}) {
    auto it = body.find(key);
    const bool used = it != body.end() && !it->is_null() &&
                      !(it->is_boolean() && !it->get<bool>()) &&
                      !(std::string_view(key) == "tools" && chat);
    if (used) return bad(std::string("'") + key + "' is not supported by nxrt serve yet", key);
  }
  if (auto it = body.find("response_format"); it != body.end() && !it->is_null())
    return read_response_format(*it, s);
  return std::nullopt;
}

ResponseId ResponseId::make(bool chat, const std::string& model) {
  static std::atomic<uint64_t> counter{0};
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  ResponseId id;
  id.created = std::chrono::duration_cast<std::chrono::seconds>(now).count();
  char text[64];
  std::snprintf(text, sizeof(text), "%s-%llx%llx", chat ? "chatcmpl" : "cmpl",
                static_cast<unsigned long long>(id.created),
                static_cast<unsigned long long>(counter.fetch_add(1)));
  id.id = text;
  id.model = model;
  id.chat = chat;
  return id;
}

OrderedJson usage_json(const genai::GenerationStats& stats) {
  return {{"prompt_tokens", stats.prompt_tokens},
          {"completion_tokens", stats.completion_tokens},
          {"total_tokens", stats.prompt_tokens + stats.completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", stats.cached_prompt_tokens}}}};
}

genai::GenerationStats choices_usage(std::span<const genai::GenerationStats> choices) {
  genai::GenerationStats usage;
  if (!choices.empty()) {
    usage.prompt_tokens = choices[0].prompt_tokens;
    usage.cached_prompt_tokens = choices[0].cached_prompt_tokens;
  }
  for (const genai::GenerationStats& s : choices) usage.completion_tokens += s.completion_tokens;
  return usage;
}

namespace {

OrderedJson envelope(const ResponseId& id, bool chunk) {
  const char* object =
      id.chat ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion";
  return {{"id", id.id}, {"object", object}, {"created", id.created}, {"model", id.model}};
}

std::string dump(const OrderedJson& j) {
  // Generated text may end inside a UTF-8 character only at a cut stop string; replace.
  return j.dump(-1, ' ', false, OrderedJson::error_handler_t::replace);
}

}  // namespace

namespace {

std::string token_text(const genai::Tokenizer& tokenizer, int32_t id) {
  auto bytes = tokenizer.token_bytes(id);
  return bytes.ok() ? std::string(*bytes) : std::string();
}

OrderedJson byte_list(std::string_view text) {
  OrderedJson list = OrderedJson::array();
  for (char c : text) list.push_back(int(static_cast<unsigned char>(c)));
  return list;
}

// The chat API's form: per token its text, bytes, log-probability and top alternatives.
void append_chat_entries(const genai::TokenLogprobs& t, const genai::Tokenizer& tokenizer,
                         OrderedJson& content) {
  for (size_t i = 0; i < t.ids.size() && i < t.logprobs.size(); ++i) {
    const std::string text = token_text(tokenizer, t.ids[i]);
    OrderedJson top = OrderedJson::array();
    if (i < t.top.size())
      for (const auto& [id, logprob] : t.top[i]) {
        const std::string alt = token_text(tokenizer, id);
        top.push_back({{"token", alt}, {"logprob", logprob}, {"bytes", byte_list(alt)}});
      }
    content.push_back({{"token", text},
                       {"logprob", t.logprobs[i]},
                       {"bytes", byte_list(text)},
                       {"top_logprobs", top}});
  }
}

// The completions API's (legacy) form: parallel lists and text offsets from `offset` on.
void append_completion_lists(const genai::TokenLogprobs& t, const genai::Tokenizer& tokenizer,
                             size_t& offset, OrderedJson& lists) {
  for (size_t i = 0; i < t.ids.size() && i < t.logprobs.size(); ++i) {
    const std::string text = token_text(tokenizer, t.ids[i]);
    lists["tokens"].push_back(text);
    lists["token_logprobs"].push_back(t.logprobs[i]);
    lists["text_offset"].push_back(offset);
    offset += text.size();
    OrderedJson top = OrderedJson::object();
    if (i < t.top.size())
      for (const auto& [id, logprob] : t.top[i]) top[token_text(tokenizer, id)] = logprob;
    lists["top_logprobs"].push_back(top);
  }
}

OrderedJson empty_completion_lists() {
  return {{"tokens", OrderedJson::array()},
          {"token_logprobs", OrderedJson::array()},
          {"top_logprobs", OrderedJson::array()},
          {"text_offset", OrderedJson::array()}};
}

// A whole result's text tokens as TokenLogprobs.
genai::TokenLogprobs text_token_logprobs(const genai::Generation& result) {
  const size_t n = std::min(result.text_tokens, result.logprobs.size());
  genai::TokenLogprobs t;
  t.ids = std::span<const int32_t>(result.token_ids).first(n);
  t.logprobs = std::span<const float>(result.logprobs).first(n);
  t.top = std::span<const std::vector<std::pair<int32_t, float>>>(result.top_logprobs)
              .first(std::min(n, result.top_logprobs.size()));
  return t;
}

OrderedJson chat_logprobs(const genai::Generation& result, const genai::Tokenizer& tokenizer) {
  OrderedJson content = OrderedJson::array();
  append_chat_entries(text_token_logprobs(result), tokenizer, content);
  return {{"content", content}, {"refusal", nullptr}};
}

OrderedJson completion_logprobs(const genai::Generation& result,
                                const genai::Tokenizer& tokenizer) {
  OrderedJson lists = empty_completion_lists();
  size_t offset = 0;
  append_completion_lists(text_token_logprobs(result), tokenizer, offset, lists);
  return lists;
}

}  // namespace

std::string response_body(const ResponseId& id, std::span<const genai::Generation> results,
                          const genai::Tokenizer& tokenizer) {
  OrderedJson body = envelope(id, false);
  body["choices"] = OrderedJson::array();
  std::vector<genai::GenerationStats> stats;
  for (size_t i = 0; i < results.size(); ++i) {
    const genai::Generation& result = results[i];
    OrderedJson choice = {{"index", i}};
    if (id.chat)
      choice["message"] = {{"role", "assistant"}, {"content", result.text}};
    else
      choice["text"] = result.text;
    if (result.logprobs.empty())
      choice["logprobs"] = nullptr;
    else
      choice["logprobs"] =
          id.chat ? chat_logprobs(result, tokenizer) : completion_logprobs(result, tokenizer);
    choice["finish_reason"] = result.finish_reason;
    body["choices"].push_back(std::move(choice));
    stats.push_back(result.stats);
  }
  body["usage"] = usage_json(choices_usage(stats));
  return dump(body);
}

void StreamLogprobs::add(const genai::TokenLogprobs& tokens) {
  if (pending_.is_null())
    pending_ = chat_ ? OrderedJson{{"content", OrderedJson::array()}, {"refusal", nullptr}}
                     : empty_completion_lists();
  if (chat_)
    append_chat_entries(tokens, *tokenizer_, pending_["content"]);
  else
    append_completion_lists(tokens, *tokenizer_, text_offset_, pending_);
}

OrderedJson StreamLogprobs::take() {
  OrderedJson out;
  out.swap(pending_);
  return out;
}

std::string chunk_event(const ResponseId& id, std::string_view piece, const char* finish_reason,
                        bool first, size_t index, const OrderedJson* logprobs) {
  OrderedJson body = envelope(id, true);
  OrderedJson choice = {{"index", index}};
  if (id.chat) {
    OrderedJson delta = OrderedJson::object();
    if (first) delta["role"] = "assistant";
    if (!piece.empty() || (first && !finish_reason)) delta["content"] = std::string(piece);
    choice["delta"] = delta;
  } else {
    choice["text"] = std::string(piece);
  }
  choice["logprobs"] = logprobs ? *logprobs : OrderedJson();
  choice["finish_reason"] = finish_reason ? OrderedJson(finish_reason) : OrderedJson();
  body["choices"] = OrderedJson::array({choice});
  return "data: " + dump(body) + "\n\n";
}

std::string usage_event(const ResponseId& id, const genai::GenerationStats& stats) {
  OrderedJson body = envelope(id, true);
  body["choices"] = OrderedJson::array();
  body["usage"] = usage_json(stats);
  return "data: " + dump(body) + "\n\n";
}

}  // namespace nxrt::cli
