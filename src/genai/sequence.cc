#include "genai/sequence.h"

#include <algorithm>

namespace nxrt::genai {
namespace {

double seconds(std::chrono::steady_clock::time_point from,
               std::chrono::steady_clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

// Bytes at the end of `text` that could begin one of `stops`: held back from the output
// until the next token shows whether a stop string completes.
size_t held_back(std::string_view text, const std::vector<std::string>& stops) {
  size_t hold = 0;
  for (const std::string& stop : stops)
    for (size_t n = std::min(text.size(), stop.size() - 1); n > hold; --n)
      if (text.substr(text.size() - n) == std::string_view(stop).substr(0, n)) {
        hold = n;
        break;
      }
  return hold;
}

}  // namespace

Expected<std::unique_ptr<Sequence>> Sequence::create(const Tokenizer& tokenizer,
                                                     const ModelConfig& config,
                                                     std::vector<int32_t> prompt,
                                                     const SamplingOptions& options,
                                                     TextSink sink) {
  NXRT_RETURN_IF_ERROR(options.check());
  const int64_t length = int64_t(prompt.size());
  if (length == 0) return invalid_argument("the prompt is empty (no tokens)");
  if (length >= config.context_length)
    return invalid_argument("the prompt has ", length, " tokens; the model's context is ",
                            config.context_length);
  for (int32_t id : prompt)
    if (id < 0 || id >= tokenizer.vocab_size())
      return invalid_argument("token id ", id, " of the prompt is outside the vocabulary [0, ",
                              tokenizer.vocab_size(), ")");
  return std::unique_ptr<Sequence>(
      new Sequence(tokenizer, config, std::move(prompt), options, std::move(sink)));
}

Sequence::Sequence(const Tokenizer& tokenizer, const ModelConfig& config,
                   std::vector<int32_t> prompt, const SamplingOptions& options, TextSink sink)
    : context_length_(config.context_length),
      prompt_(std::move(prompt)),
      options_(options),
      sink_(std::move(sink)),
      sampler_(options),
      decoder_(tokenizer) {
  stop_ids_ = options.stop_token_ids;
  if (!options.ignore_eos)
    stop_ids_.insert(stop_ids_.end(), config.eos_token_ids.begin(), config.eos_token_ids.end());
  for (const std::string& s : options.stop)
    if (!s.empty()) stops_.push_back(s);
  if (options.json) {
    json_constraint_.emplace(tokenizer, options.json);
    json_.emplace(json_constraint_->start());
  }
  result_.stats.prompt_tokens = int(prompt_.size());
  start_ = Clock::now();
}

int64_t Sequence::capacity() const {
  return std::min<int64_t>(context_length_, int64_t(prompt_.size()) + options_.max_tokens);
}

bool Sequence::emit(std::string_view piece, size_t text_tokens) {
  result_.text += piece;
  const size_t upto = std::min(text_tokens, result_.logprobs.size());
  if (logprob_sink_ && upto > reported_tokens_) {
    const size_t n = upto - reported_tokens_;
    TokenLogprobs tokens;
    tokens.ids = std::span<const int32_t>(result_.token_ids).subspan(reported_tokens_, n);
    tokens.logprobs = std::span<const float>(result_.logprobs).subspan(reported_tokens_, n);
    if (result_.top_logprobs.size() >= upto)
      tokens.top = std::span<const std::vector<std::pair<int32_t, float>>>(result_.top_logprobs)
                       .subspan(reported_tokens_, n);
    logprob_sink_(tokens);
    reported_tokens_ = upto;
  }
  return !sink_ || piece.empty() || sink_(piece);
}

void Sequence::finish(const char* reason, bool last_token_is_text) {
  result_.finish_reason = reason;
  result_.text_tokens = result_.token_ids.size() - (last_token_is_text ? 0 : 1);
  result_.stats.completion_tokens = int(result_.token_ids.size());
  result_.stats.decode_s = seconds(first_, Clock::now());
  finished_ = true;
}

Expected<bool> Sequence::advance(std::span<const float> logits, int64_t tokens) {
  position_ += tokens;
  if (json_constraint_) {
    masked_.assign(logits.begin(), logits.end());
    if (json_constraint_->mask(*json_, masked_) == 0)
      return runtime_error("no token of the vocabulary continues the JSON output");
    logits = masked_;
  }
  const Sampler::Pick pick = sampler_.pick(logits, prompt_, result_.token_ids);
  if (result_.token_ids.empty()) {
    first_ = Clock::now();
    result_.stats.time_to_first_token_s = seconds(start_, first_);
  }
  result_.token_ids.push_back(pick.token);
  if (options_.logprobs) {
    result_.logprobs.push_back(pick.logprob);
    if (options_.top_logprobs > 0)
      result_.top_logprobs.emplace_back(pick.top.begin(), pick.top.end());
  }
  if (std::find(stop_ids_.begin(), stop_ids_.end(), pick.token) != stop_ids_.end()) {
    // EOS or a stop token: its own text is not output.
    emit(held_ + decoder_.flush(), result_.token_ids.size() - 1);
    finish("stop", false);
    return true;
  }
  NXRT_ASSIGN_OR_RETURN(std::string piece, decoder_.add(pick.token));
  held_ += piece;
  if (json_ && json_->feed(json_constraint_->bytes(pick.token)) && json_->complete()) {
    emit(held_ + decoder_.flush());  // the object is closed: nothing may follow it
    finish("stop");
    return true;
  }
  size_t at = std::string::npos;
  for (const std::string& s : stops_) at = std::min(at, held_.find(s));
  if (at != std::string::npos) {
    emit(std::string_view(held_).substr(0, at));
    finish("stop");
    return true;
  }
  if (int64_t(result_.token_ids.size()) >= options_.max_tokens ||
      position_ + 1 >= context_length_) {
    emit(held_ + decoder_.flush());
    finish("length");
    return true;
  }
  const size_t cut = held_.size() - held_back(held_, stops_);
  if (cut > 0) {
    if (!emit(std::string_view(held_).substr(0, cut))) {
      finish("cancelled");
      return true;
    }
    held_.erase(0, cut);
  }
  return false;
}

}  // namespace nxrt::genai
