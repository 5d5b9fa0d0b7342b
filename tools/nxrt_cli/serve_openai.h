// The OpenAI API's request and response bodies for `nxrt serve`: /v1/completions and
// /v1/chat/completions requests read into sampling options (every field type-checked,
// errors naming the parameter), responses and server-sent-event chunks written back.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "genai/engine.h"

namespace nxrt::cli {

using OrderedJson = nlohmann::ordered_json;

// An error response: HTTP status and the OpenAI error object's fields.
struct ApiError {
  int status = 400;
  std::string message;
  std::string type = "invalid_request_error";
  std::string param;  // empty: null
  std::string code;   // empty: null
  std::string body() const;
};

struct ApiRequest {
  bool chat = false;
  std::string model;
  std::string prompt;     // completions
  OrderedJson messages;   // chat: the array as given
  OrderedJson variables;  // chat: tools and other template variables
  bool stream = false;
  bool include_usage = false;
  int n = 1;  // choices: each its own generation (seed + i when a seed is given)
  genai::SamplingOptions sampling;
};

// Parses a request body; `max_tokens_cap` bounds max_tokens (the model's context).
// Returns the request, or the error to answer with.
std::optional<ApiError> parse_request(std::string_view body, bool chat, int64_t max_tokens_cap,
                                      ApiRequest& request);

// Identifies one response: "cmpl-..." / "chatcmpl-..." and its creation time.
struct ResponseId {
  std::string id;
  int64_t created = 0;
  std::string model;
  bool chat = false;
  static ResponseId make(bool chat, const std::string& model);
};

OrderedJson usage_json(const genai::GenerationStats& stats);
// The usage of a request's choices: the prompt counted once (it ran once per choice, as
// OpenAI counts it), every choice's tokens.
genai::GenerationStats choices_usage(std::span<const genai::GenerationStats> choices);
// Choices a request may ask for (its `n`).
constexpr int64_t kMaxChoices = 16;

// The whole non-streamed response, one choice per result; `tokenizer` spells out the
// tokens of logprobs.
std::string response_body(const ResponseId& id, std::span<const genai::Generation> results,
                          const genai::Tokenizer& tokenizer);
// One streamed chunk as an SSE event ("data: {...}\n\n"): a text piece, or with a
// finish reason the closing chunk; `first` adds the chat role; `index` is the choice's;
// `logprobs` (null: none) those of the piece's tokens, from StreamLogprobs.
std::string chunk_event(const ResponseId& id, std::string_view piece, const char* finish_reason,
                        bool first, size_t index = 0, const OrderedJson* logprobs = nullptr);

// A streamed choice's logprobs, piece by piece, in the form of its API (chat: content
// entries; completions: the legacy parallel lists with text offsets running on).
class StreamLogprobs {
 public:
  StreamLogprobs(bool chat, const genai::Tokenizer& tokenizer)
      : chat_(chat), tokenizer_(&tokenizer) {}
  // Adds tokens to the pending part.
  void add(const genai::TokenLogprobs& tokens);
  bool pending() const { return !pending_.is_null(); }
  // The pending part as a chunk's "logprobs" value; empties it.
  OrderedJson take();

 private:
  bool chat_;
  const genai::Tokenizer* tokenizer_;
  OrderedJson pending_;
  size_t text_offset_ = 0;
};
// The usage-only chunk of stream_options.include_usage.
std::string usage_event(const ResponseId& id, const genai::GenerationStats& stats);

}  // namespace nxrt::cli
