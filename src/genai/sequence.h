// One generation's decoding state, between the model's runs: picks each token from the
// logits, applies the stop rules (EOS and stop tokens, stop strings, max tokens, the
// context), streams the text without broken UTF-8 characters or stop strings, and keeps
// the result and its timings. Engine::generate drives one; the batch scheduler many.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "genai/engine.h"
#include "genai/json_constraint.h"

namespace nxrt::genai {

class Sequence {
 public:
  // Checks the prompt (not empty, ids in the vocabulary, shorter than the context) and
  // the options.
  static Expected<std::unique_ptr<Sequence>> create(const Tokenizer& tokenizer,
                                                    const ModelConfig& config,
                                                    std::vector<int32_t> prompt,
                                                    const SamplingOptions& options, TextSink sink);

  // Receives each piece's tokens with their log-probabilities (SamplingOptions::logprobs).
  void on_logprobs(LogprobSink sink) { logprob_sink_ = std::move(sink); }
  // Call when the prompt's run starts (the time to first token counts from here).
  void begin() { start_ = Clock::now(); }
  // After a run of `tokens` new tokens, with the last position's logits: picks the next
  // token and applies the stop rules. Returns true when the sequence has finished.
  Expected<bool> advance(std::span<const float> logits, int64_t tokens);

  const std::vector<int32_t>& prompt() const { return prompt_; }
  int32_t next_token() const { return result_.token_ids.back(); }  // to run next
  int64_t position() const { return position_; }                   // tokens in the cache
  // Cache positions the sequence may still need (prompt + max_tokens, within the context).
  int64_t capacity() const;
  bool finished() const { return finished_; }
  // Lowers the context the sequence may fill (a batch slot's capacity).
  void limit_context(int64_t positions) { context_length_ = std::min(context_length_, positions); }
  Generation& result() { return result_; }
  // The tokens whose keys and values the sequence's runs left in its cache, in order: the
  // prompt and every picked token but the last (picked, never run).
  void cached_tokens(std::vector<int32_t>& out) const {
    out.assign(prompt_.begin(), prompt_.end());
    if (!result_.token_ids.empty())
      out.insert(out.end(), result_.token_ids.begin(), result_.token_ids.end() - 1);
  }

 private:
  using Clock = std::chrono::steady_clock;
  Sequence(const Tokenizer& tokenizer, const ModelConfig& config, std::vector<int32_t> prompt,
           const SamplingOptions& options, TextSink sink);
  // Gives out text; `text_tokens`: how many picked tokens it accounts for (all of them, or
  // all but an EOS / stop token).
  bool emit(std::string_view piece, size_t text_tokens = SIZE_MAX);
  // `last_token_is_text` false: the last token (EOS, a stop id) is not in the output.
  void finish(const char* reason, bool last_token_is_text = true);

  int64_t context_length_;
  std::vector<int32_t> prompt_;
  SamplingOptions options_;
  TextSink sink_;
  LogprobSink logprob_sink_;
  size_t reported_tokens_ = 0;  // tokens the logprob sink has had
  Sampler sampler_;
  StreamDecoder decoder_;
  std::vector<int32_t> stop_ids_;
  std::vector<std::string> stops_;
  std::string held_;  // decoded text not yet given out: it may begin a stop string
  Generation result_;
  int64_t position_ = 0;
  bool finished_ = false;
  Clock::time_point start_{}, first_{};
  // With options.json: the JSON read so far, and the logits with the tokens that cannot
  // continue it masked.
  std::optional<JsonConstraint> json_constraint_;
  std::optional<JsonState> json_;
  std::vector<float> masked_;
};

}  // namespace nxrt::genai
