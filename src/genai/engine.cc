#include "genai/engine.h"

#include <algorithm>
#include <cstring>

#include "genai/sequence.h"
#include "runtime/session.h"

namespace nxrt::genai {

Engine::~Engine() = default;

Expected<std::unique_ptr<Engine>> Engine::load(const std::string& folder,
                                               const EngineOptions& options) {
  std::unique_ptr<Engine> engine(new Engine());
  NXRT_ASSIGN_OR_RETURN(engine->config_, ModelConfig::from_file(folder + "/genai_config.json"));
  SessionConfig session_config = options.session;
  if (options.threads > 0) session_config.intra_op_num_threads = options.threads;
  auto session =
      Session::create_from_file(folder + "/" + engine->config_.model_file, session_config);
  if (!session) return session.status();
  engine->session_ = std::move(*session);
  auto tokenizer = Tokenizer::from_json_file(folder + "/tokenizer.json");
  if (!tokenizer) return tokenizer.status();
  engine->tokenizer_ = std::move(*tokenizer);
  NXRT_RETURN_IF_ERROR(engine->bind_names());
  NXRT_ASSIGN_OR_RETURN(engine->single_, engine->make_feeds(1));
  return engine;
}

Status Engine::bind_names() {
  const ModelConfig& c = config_;
  auto has_input = [&](const std::string& name) {
    for (const auto& info : session_->inputs())
      if (info.name == name) return true;
    return false;
  };
  for (const std::string* name : {&c.input_ids, &c.attention_mask})
    if (!has_input(*name))
      return invalid_argument(c.model_file, " has no input '", *name,
                              "' that genai_config.json names");
  input_names_ = {c.input_ids, c.attention_mask};  // positions 0 and 1
  if (has_input(c.position_ids)) {
    positions_at_ = input_names_.size();
    input_names_.push_back(c.position_ids);
  }
  past_at_ = input_names_.size();
  for (int layer = 0; layer < c.layers; ++layer)
    for (const std::string* pattern : {&c.past_key, &c.past_value}) {
      std::string name = layer_name(*pattern, layer);
      if (!has_input(name))
        return invalid_argument(c.model_file, " has no input '", name, "' (num_hidden_layers is ",
                                c.layers, ")");
      input_names_.push_back(std::move(name));
    }
  for (const auto& info : session_->inputs())
    if (std::find(input_names_.begin(), input_names_.end(), info.name) == input_names_.end())
      return not_implemented(c.model_file, " needs input '", info.name,
                             "', which the generation engine does not feed");
  const auto& outputs = session_->outputs();
  auto output_index = [&](const std::string& name) -> Expected<size_t> {
    for (size_t i = 0; i < outputs.size(); ++i)
      if (outputs[i].name == name) return i;
    return invalid_argument(c.model_file, " has no output '", name,
                            "' that genai_config.json names");
  };
  NXRT_ASSIGN_OR_RETURN(logits_out_, output_index(c.logits));
  for (int layer = 0; layer < c.layers; ++layer)
    for (const std::string* pattern : {&c.present_key, &c.present_value}) {
      NXRT_ASSIGN_OR_RETURN(size_t index, output_index(layer_name(*pattern, layer)));
      present_out_.push_back(index);
    }
  return Status();
}

Expected<std::unique_ptr<Engine::Feeds>> Engine::make_feeds(int64_t slots) const {
  if (slots < 1 || (slots > 1 && !cache_in_place()))
    return invalid_argument(
        "batches of sequences need a cache shared by past and present "
        "(past_present_share_buffer, GroupQueryAttention models)");
  auto f = std::make_unique<Feeds>();
  f->slots = slots;
  f->inputs.resize(input_names_.size());
  f->bound.resize(session_->outputs().size());
  return f;
}

Status Engine::reserve(Feeds& f, int64_t capacity) const {
  if (!cache_in_place() || f.capacity >= capacity) return Status();
  // Doubling keeps a growing conversation from re-laying the cache out every turn.
  capacity = std::max(capacity, std::min(2 * f.capacity, config_.context_length));
  const int64_t rows = f.slots * int64_t(config_.kv_heads), D = config_.head_size;
  const size_t floats = size_t(rows * capacity * D);
  if (f.cache.size() != present_out_.size()) f.cache.assign(present_out_.size(), {});
  for (auto& buffer : f.cache) {
    // Each (slot, head) row keeps its positions at the new row length.
    std::vector<float> grown(floats);
    for (int64_t r = 0; r < rows && f.capacity > 0; ++r)
      std::memcpy(grown.data() + r * capacity * D, buffer.data() + r * f.capacity * D,
                  size_t(f.capacity * D) * sizeof(float));
    buffer = std::move(grown);
  }
  f.capacity = capacity;
  return Status();
}

void Engine::swap_slots(Feeds& f, int64_t a, int64_t b, int64_t tokens) const {
  const int64_t heads = config_.kv_heads, D = config_.head_size;
  tokens = std::min(tokens, f.capacity);
  for (auto& buffer : f.cache)
    for (int64_t h = 0; h < heads; ++h) {
      float* first = buffer.data() + ((a * heads + h) * f.capacity) * D;
      std::swap_ranges(first, first + tokens * D,
                       buffer.data() + ((b * heads + h) * f.capacity) * D);
    }
}

int64_t Engine::reusable_prefix(std::span<const int32_t> cached, std::span<const int32_t> prompt) {
  const int64_t keep = int64_t(prompt.size()) >= kRerunTokens ? kRerunTokens : 1;
  const size_t limit =
      std::min(cached.size(), size_t(std::max<int64_t>(0, int64_t(prompt.size()) - keep)));
  size_t n = 0;
  while (n < limit && cached[n] == prompt[n]) ++n;
  return int64_t(n);
}

Status Engine::run(Feeds& f, std::span<const int32_t> ids, int64_t batch, int64_t first_slot,
                   std::span<const int64_t> lengths, std::span<const int64_t> last) const {
  const ModelConfig& c = config_;
  const int64_t n = int64_t(ids.size()) / batch;  // new tokens per sequence
  if (!last.empty() && int64_t(last.size()) != batch)
    return invalid_argument("the run has ", batch, " sequences but ", last.size(), " last rows");
  for (int64_t row : last)
    if (row < 0 || row >= n)
      return invalid_argument("last row ", row, " is not one of the ", n, " new tokens");
  int64_t width = 0;  // the mask: the longest sequence
  for (int64_t b = 0; b < batch; ++b) width = std::max(width, lengths[size_t(b)] + n);
  if (cache_in_place() && (first_slot + batch > f.slots || width > f.capacity))
    return invalid_argument("the run needs slots [", first_slot, ", ", first_slot + batch, ") and ",
                            width, " positions; the cache has ", f.slots, " x ", f.capacity);
  f.ids.assign(ids.begin(), ids.end());
  f.inputs[0] = Tensor(DataType::kInt64, Shape{batch, n}, f.ids.data());
  // Each row's mask: ones over its tokens, zeros after (GroupQueryAttention reads each
  // sequence's length as the row's sum).
  f.mask.assign(size_t(batch * width), 0);
  for (int64_t b = 0; b < batch; ++b)
    std::fill_n(f.mask.begin() + b * width, lengths[size_t(b)] + n, 1);
  f.inputs[1] = Tensor(DataType::kInt64, Shape{batch, width}, f.mask.data());
  if (positions_at_ != SIZE_MAX) {
    f.positions.resize(size_t(batch * n));
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t i = 0; i < n; ++i) f.positions[size_t(b * n + i)] = lengths[size_t(b)] + i;
    f.inputs[positions_at_] = Tensor(DataType::kInt64, Shape{batch, n}, f.positions.data());
  }
  if (cache_in_place()) {
    // Past and present: the same rows of each layer's buffer.
    const int64_t slot_floats = int64_t(c.kv_heads) * f.capacity * c.head_size;
    const Shape shape{batch, c.kv_heads, f.capacity, c.head_size};
    for (size_t i = 0; i < f.cache.size(); ++i) {
      Tensor view(DataType::kFloat, shape, f.cache[i].data() + first_slot * slot_floats);
      f.inputs[past_at_ + i] = view;
      f.bound[present_out_[i]] = view;
    }
  } else if (lengths[0] == 0) {  // a grown cache starts empty
    for (size_t i = 0; i < present_out_.size(); ++i) {
      auto empty = Tensor::allocate(DataType::kFloat, Shape{1, c.kv_heads, 0, c.head_size});
      if (!empty) return empty.status();
      f.inputs[past_at_ + i] = std::move(*empty);
    }
  }
  // One-token steps write their logits straight into f.logits; a prompt's come back whole.
  const bool bind_logits = n == 1 && f.vocab > 0;
  if (bind_logits) f.logits.resize(size_t(batch * f.vocab));
  f.bound[logits_out_] =
      bind_logits ? Tensor(DataType::kFloat, Shape{batch, 1, f.vocab}, f.logits.data()) : Tensor();
  RunFlags flags;
  flags.bound_outputs = f.bound;
  NXRT_RETURN_IF_ERROR(session_->run(input_names_, f.inputs, {}, f.outputs, flags));
  const Tensor& logits = f.outputs[logits_out_].tensor;
  if (logits.dtype() != DataType::kFloat || logits.shape().rank() != 3 ||
      logits.shape()[0] != batch || logits.shape()[1] != n)
    return runtime_error(c.model_file, ": output '", c.logits, "' has shape ",
                         logits.shape().to_string(), ", expected [", batch, ", ", n,
                         ", vocab] float");
  if (!bind_logits) {
    f.vocab = logits.shape()[2];
    f.logits.resize(size_t(batch * f.vocab));
    for (int64_t b = 0; b < batch; ++b)
      std::memcpy(
          f.logits.data() + b * f.vocab,
          logits.data<float>() + (b * n + (last.empty() ? n - 1 : last[size_t(b)])) * f.vocab,
          size_t(f.vocab) * sizeof(float));
  }
  if (!cache_in_place())  // the grown cache is the next step's past
    for (size_t i = 0; i < present_out_.size(); ++i)
      f.inputs[past_at_ + i] = f.outputs[present_out_[i]];
  return Status();
}

std::span<const float> Engine::logits(const Feeds& f, int64_t b) const {
  return std::span<const float>(f.logits.data() + b * f.vocab, size_t(f.vocab));
}

Expected<Generation> Engine::generate(std::string_view prompt, const SamplingOptions& options,
                                      const TextSink& sink) {
  return generate(std::span<const int32_t>(tokenizer_->encode(prompt, false)), options, sink);
}

Expected<Generation> Engine::generate(std::span<const int32_t> prompt_ids,
                                      const SamplingOptions& options, const TextSink& sink,
                                      const LogprobSink& logprob_sink) {
  NXRT_ASSIGN_OR_RETURN(std::unique_ptr<Generator> generator,
                        start(prompt_ids, options, sink, logprob_sink));
  while (true) {
    NXRT_ASSIGN_OR_RETURN(bool done, generator->step());
    if (done) break;
  }
  return std::move(generator->result());
}

Expected<std::unique_ptr<Engine::Generator>> Engine::start(std::span<const int32_t> prompt_ids,
                                                           const SamplingOptions& options,
                                                           TextSink sink,
                                                           LogprobSink logprob_sink) {
  NXRT_ASSIGN_OR_RETURN(std::unique_ptr<Sequence> seq,
                        Sequence::create(*tokenizer_, config_,
                                         std::vector<int32_t>(prompt_ids.begin(), prompt_ids.end()),
                                         options, std::move(sink)));
  seq->on_logprobs(std::move(logprob_sink));
  NXRT_RETURN_IF_ERROR(reserve(*single_, seq->capacity()));
  return std::unique_ptr<Generator>(new Generator(*this, std::move(seq), ++generations_));
}

Engine::Generator::Generator(Engine& engine, std::unique_ptr<Sequence> seq, uint64_t id)
    : engine_(engine), seq_(std::move(seq)), id_(id) {}

Engine::Generator::~Generator() = default;

Generation& Engine::Generator::result() { return seq_->result(); }

Expected<bool> Engine::Generator::step() {
  if (finished_) return true;
  if (engine_.generations_ != id_)
    return runtime_error("another generation started on this engine; this one can no longer run");
  Engine& e = engine_;
  Feeds& f = *e.single_;
  if (ran_ < 0) {
    // Whatever happens below changes the cache; it is known again once the sequence ends.
    std::vector<int32_t> cached;
    cached.swap(e.single_cached_);
    if (!e.cache_in_place()) cached.clear();  // a grown cache starts empty every time
    seq_->begin();
    const std::span<const int32_t> prompt(seq_->prompt());
    int64_t length = reusable_prefix(cached, prompt);
    seq_->result().stats.cached_prompt_tokens = int(length);
    NXRT_RETURN_IF_ERROR(
        e.run(f, prompt.subspan(size_t(length)), 1, 0, std::span<const int64_t>(&length, 1)));
    ran_ = int64_t(prompt.size());
  } else {
    const int32_t token = seq_->next_token();
    const int64_t length = seq_->position();
    NXRT_RETURN_IF_ERROR(
        e.run(f, std::span<const int32_t>(&token, 1), 1, 0, std::span<const int64_t>(&length, 1)));
    ran_ = 1;
  }
  NXRT_ASSIGN_OR_RETURN(finished_, seq_->advance(e.logits(f, 0), ran_));
  if (finished_ && e.cache_in_place()) seq_->cached_tokens(e.single_cached_);
  return finished_;
}

}  // namespace nxrt::genai
