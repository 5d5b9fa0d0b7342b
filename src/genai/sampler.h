// Choosing the next token from a row of logits: greedy, or sampling with temperature,
// top-k, top-p (nucleus) and min-p after repetition, frequency and presence penalties.
// The same rules as nxrt.genai.sampling (Python); the random streams differ, so a seed
// reproduces C++ runs, not Python ones.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "genai/json_schema.h"

namespace nxrt::genai {

struct SamplingOptions {
  int max_tokens = 256;
  float temperature = 0.0f;  // 0: greedy
  int top_k = 0;             // 0: every token
  float top_p = 1.0f;
  float min_p = 0.0f;
  float repetition_penalty = 1.0f;  // > 1 discourages tokens of the prompt and output
  float frequency_penalty = 0.0f;   // minus this times a token's count in the output
  float presence_penalty = 0.0f;    // minus this once a token is in the output
  std::optional<uint64_t> seed;     // none: a random seed
  std::vector<std::string> stop;    // strings that end the output (not included)
  std::vector<int32_t> stop_token_ids;
  bool ignore_eos = false;  // generate max_tokens whatever comes (benchmarks)
  bool logprobs = false;    // each chosen token's log-probability under the model
  int top_logprobs = 0;     // with logprobs: also the most likely tokens' (at most 20)
  // Set (response_format json_object / json_schema): the output is one JSON value of this
  // grammar; tokens that cannot continue one are never picked, and the sequence ends when
  // the value closes.
  std::shared_ptr<const JsonGrammar> json;

  // An error naming the first option out of range.
  Status check() const;
};

class Sampler {
 public:
  explicit Sampler(const SamplingOptions& options);

  struct Pick {
    int32_t token;
    float logprob;  // 0 unless options.logprobs
    // options.top_logprobs (id, log-probability) pairs, likeliest first; the span is
    // valid until the next pick.
    std::span<const std::pair<int32_t, float>> top;
  };
  // `logits` is one row over the vocabulary; `prompt` and `generated` feed the
  // penalties. Allocates nothing once its buffers have grown to the vocabulary.
  Pick pick(std::span<const float> logits, std::span<const int32_t> prompt,
            std::span<const int32_t> generated);

 private:
  void penalize(std::span<const int32_t> prompt, std::span<const int32_t> generated);
  int32_t sample();

  SamplingOptions options_;
  std::mt19937_64 rng_;
  std::vector<float> work_;       // penalized logits
  std::vector<int32_t> order_;    // candidate ids, best first
  std::vector<double> probs_;     // their probabilities
  std::vector<uint32_t> counts_;  // per id: occurrences in the output
  std::vector<uint8_t> seen_;     // per id: in the prompt or the output
  std::vector<int32_t> touched_;  // ids whose counts_/seen_ entries are set
  std::vector<std::pair<int32_t, float>> top_;
};

}  // namespace nxrt::genai
