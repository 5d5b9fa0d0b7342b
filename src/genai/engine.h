// Text generation on an nxrt session: a model folder in onnxruntime-genai's layout
// (genai_config.json, the decoder ONNX file, tokenizer.json), one run for the prompt and
// one per new token.
//
// The KV cache belongs to the engine. When the folder says past_present_share_buffer
// (GroupQueryAttention models), each layer's cache is one buffer of [1, kv_heads,
// capacity, head_size] fed as past and bound as present, so a step writes the new rows in
// place and copies nothing; the buffers and the other feeds are kept between calls, so a
// warm decode step allocates nothing that grows with the context. Other folders (a cache
// grown by Concat) get the runtime's present outputs fed back as the next past.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "genai/model_config.h"
#include "genai/sampler.h"
#include "genai/tokenizer.h"

namespace nxrt {
class Session;
}

namespace nxrt::genai {

struct EngineOptions {
  int threads = 1;  // intra-op threads of the session
};

struct GenerationStats {
  int prompt_tokens = 0;
  int completion_tokens = 0;
  double time_to_first_token_s = 0.0;  // the prompt's run and the first pick
  double decode_s = 0.0;               // from the first token to the last
  // Tokens after the first over decode_s (the first token's time is the prompt's).
  double tokens_per_second() const {
    return decode_s > 0.0 ? double(completion_tokens - 1) / decode_s : 0.0;
  }
};

struct Generation {
  std::string text;
  std::vector<int32_t> token_ids;
  std::vector<float> logprobs;  // per token when SamplingOptions::logprobs
  std::string finish_reason;    // "stop" (EOS, a stop token or string) or "length"
  GenerationStats stats;
};

// Receives the text as it is decoded (never a broken UTF-8 character, never a stop
// string); returning false stops generation (finish_reason "cancelled").
using TextSink = std::function<bool(std::string_view piece)>;

class Engine {
 public:
  static Expected<std::unique_ptr<Engine>> load(const std::string& folder,
                                                const EngineOptions& options = {});
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Generates after `prompt` (text is tokenized without special tokens: a chat-formatted
  // prompt carries its own). One call at a time per engine.
  Expected<Generation> generate(std::string_view prompt, const SamplingOptions& options,
                                const TextSink& sink = {});
  Expected<Generation> generate(std::span<const int32_t> prompt_ids, const SamplingOptions& options,
                                const TextSink& sink = {});

  const Tokenizer& tokenizer() const { return *tokenizer_; }
  const ModelConfig& config() const { return config_; }
  // Whether past and present share the engine's buffers (no copy per step).
  bool cache_in_place() const { return config_.search.past_present_share_buffer; }

 private:
  struct Feeds;
  Engine() = default;
  Status bind_names();
  Status reserve_cache(int64_t capacity);
  // Runs ids at `position`; leaves the last row's logits in logits_.
  Status step(std::span<const int32_t> ids, int64_t position);

  ModelConfig config_;
  std::unique_ptr<Session> session_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::unique_ptr<Feeds> feeds_;
  std::vector<float> logits_;
  int64_t vocab_ = 0;
};

}  // namespace nxrt::genai
