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
#include "core/value.h"
#include "genai/model_config.h"
#include "genai/sampler.h"
#include "genai/tokenizer.h"
#include "runtime/session.h"

namespace nxrt::genai {

struct EngineOptions {
  // The session's intra-op threads; 0 keeps session.intra_op_num_threads.
  int threads = 1;
  SessionConfig session;  // graph optimization level, config entries, ... (Python's SessionOptions)
};

struct GenerationStats {
  int prompt_tokens = 0;
  // Leading prompt tokens whose keys and values were still in the cache from an earlier
  // sequence (the previous chat turn, a shared system prompt): the prompt's run skipped them.
  int cached_prompt_tokens = 0;
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
  // per token, SamplingOptions::top_logprobs (id, log-probability) pairs, likeliest first
  std::vector<std::vector<std::pair<int32_t, float>>> top_logprobs;
  std::string finish_reason;  // "stop" (EOS, a stop token or string) or "length"
  // Leading tokens of token_ids whose text the output holds (all but an EOS or stop
  // token that ended it).
  size_t text_tokens = 0;
  GenerationStats stats;
};

// Receives the text as it is decoded (never a broken UTF-8 character, never a stop
// string); returning false stops generation (finish_reason "cancelled").
using TextSink = std::function<bool(std::string_view piece)>;

// With SamplingOptions::logprobs, called right before each text piece goes to the
// TextSink, with the tokens picked since the previous piece (what the piece's text comes
// from; an EOS or stop token that is not text is left out): ids, log-probabilities and
// the top alternatives (empty unless top_logprobs). The spans are valid during the call.
struct TokenLogprobs {
  std::span<const int32_t> ids;
  std::span<const float> logprobs;
  std::span<const std::vector<std::pair<int32_t, float>>> top;
};
using LogprobSink = std::function<void(const TokenLogprobs& tokens)>;

class Sequence;

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
                                const TextSink& sink = {}, const LogprobSink& logprob_sink = {});

  // One generation on generate()'s cache, a run at a time: generate() steps one to its end;
  // Python's Engine.stream steps one so each piece reaches the caller as it is decoded,
  // with no thread. Starting another generation (or calling generate) takes the cache over:
  // an earlier Generator's step() then fails. The engine must outlive it.
  class Generator {
   public:
    ~Generator();
    // The prompt's run (first call) or the last picked token's, then the next pick, whose
    // text goes to the sink. Returns true once the sequence has finished.
    Expected<bool> step();
    bool finished() const { return finished_; }
    Generation& result();

   private:
    friend class Engine;
    Generator(Engine& engine, std::unique_ptr<Sequence> seq, uint64_t id);
    Engine& engine_;
    std::unique_ptr<Sequence> seq_;
    uint64_t id_;       // the engine's generation counter when it started
    int64_t ran_ = -1;  // tokens the last run fed; -1 before the prompt's
    bool finished_ = false;
  };
  Expected<std::unique_ptr<Generator>> start(std::span<const int32_t> prompt_ids,
                                             const SamplingOptions& options, TextSink sink = {},
                                             LogprobSink logprob_sink = {});

  // generate() skips a prompt's leading tokens that the previous generation left in the
  // cache (a chat's earlier turns); after this the next prompt runs whole (benchmarks of
  // the time to first token).
  void forget_cached_tokens() { single_cached_.clear(); }

  const Tokenizer& tokenizer() const { return *tokenizer_; }
  // The same tokenizer, for a caller that keeps it beyond the engine (Python's Engine
  // encodes with it instead of reading tokenizer.json again).
  std::shared_ptr<const Tokenizer> shared_tokenizer() const { return tokenizer_; }
  const ModelConfig& config() const { return config_; }
  // Whether past and present share the engine's buffers (no copy per step); batches
  // (BatchDecoder) need it.
  bool cache_in_place() const { return config_.search.past_present_share_buffer; }

  // The session's feeds, outputs and (in place) cache for up to `slots` sequences at
  // once, kept between runs so a warm step allocates nothing.
  struct Feeds {
    int64_t slots = 1;
    std::vector<Value> inputs;  // aligned with the engine's input names
    std::vector<int64_t> ids, mask, positions;
    std::vector<Value> outputs;  // graph order
    std::vector<Tensor> bound;   // graph order; undefined: runtime-allocated
    std::vector<std::vector<float>>
        cache;  // in place: per layer key, value [slots, kv, capacity, D]
    int64_t capacity = 0;
    std::vector<float> logits;  // [batch, vocab]: each sequence's last row
    int64_t vocab = 0;
  };
  Expected<std::unique_ptr<Feeds>> make_feeds(int64_t slots) const;
  // Reserves cache positions in every slot (grows only, at least doubling, within the
  // context; the cached positions are kept).
  Status reserve(Feeds& f, int64_t capacity) const;
  // How many leading tokens of `prompt` a cache holding `cached` (tokens whose keys and
  // values it has, in order) can skip: their common prefix, leaving at least one token
  // to run for the logits, and for a prompt of kRerunTokens or more at least that many.
  // Why: products of a few rows and of more take different kernels (MatMulNBits: 1-4
  // rows read row-major codes, 5+ rows the strips, whose rows are the same bits whatever
  // runs with them), so a prompt's last tokens run as they would in a full prefill and
  // the same request gives the same logits, cached or not.
  static constexpr int64_t kRerunTokens = 5;
  // Swaps the first `tokens` cached positions of slots a and b in every layer's in-place
  // cache (a batch decoder closing a gap below its last busy slot).
  void swap_slots(Feeds& f, int64_t a, int64_t b, int64_t tokens) const;
  static int64_t reusable_prefix(std::span<const int32_t> cached, std::span<const int32_t> prompt);
  // Runs `batch` sequences of `ids.size() / batch` new tokens each on the cache slots
  // [first_slot, first_slot + batch); sequence b has lengths[b] tokens in its cache
  // already. Leaves each sequence's logits row `last[b]` (of its new tokens; the last one
  // when `last` is empty) in logits(f, b): prompts of different lengths run together
  // padded at the end, and a padding token only follows the real ones, which causal
  // attention keeps it out of. Thread-safe across distinct Feeds.
  Status run(Feeds& f, std::span<const int32_t> ids, int64_t batch, int64_t first_slot,
             std::span<const int64_t> lengths, std::span<const int64_t> last = {}) const;
  std::span<const float> logits(const Feeds& f, int64_t b) const;

 private:
  Engine() = default;
  Status bind_names();

  ModelConfig config_;
  std::unique_ptr<Session> session_;
  std::shared_ptr<const Tokenizer> tokenizer_;
  std::unique_ptr<Feeds> single_;       // generate()'s, one slot
  std::vector<int32_t> single_cached_;  // the tokens single_'s cache holds, in order
  uint64_t generations_ = 0;            // started so far: the latest owns single_
  // Graph input/output positions, found once at load.
  std::vector<std::string> input_names_;
  size_t positions_at_ = SIZE_MAX, past_at_ = 0, logits_out_ = 0;
  std::vector<size_t> present_out_;
};

}  // namespace nxrt::genai
