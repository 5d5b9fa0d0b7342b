#include "genai/engine.h"

#include <algorithm>
#include <cstring>

#include "runtime/session.h"

namespace nxrt::genai {
namespace {

using Clock = std::chrono::steady_clock;

double seconds(Clock::time_point from, Clock::time_point to) {
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

// The session's feeds and outputs, kept between runs so a warm step allocates nothing.
struct Engine::Feeds {
  std::vector<std::string> input_names;
  std::vector<Value> inputs;
  size_t ids_at = 0, mask_at = 0, positions_at = SIZE_MAX, past_at = 0;  // indices in inputs
  std::vector<int64_t> ids, mask, positions;
  std::vector<Value> outputs;  // graph order
  std::vector<Tensor> bound;   // graph order; undefined: runtime-allocated
  size_t logits_out = 0;
  std::vector<size_t> present_out;        // per layer: key, value (graph output index)
  std::vector<std::vector<float>> cache;  // shared buffers: per layer key, value
  int64_t capacity = 0;                   // positions the shared buffers hold
};

Engine::~Engine() = default;

Expected<std::unique_ptr<Engine>> Engine::load(const std::string& folder,
                                               const EngineOptions& options) {
  std::unique_ptr<Engine> engine(new Engine());
  NXRT_ASSIGN_OR_RETURN(engine->config_, ModelConfig::from_file(folder + "/genai_config.json"));
  SessionConfig session_config;
  session_config.intra_op_num_threads = std::max(1, options.threads);
  auto session =
      Session::create_from_file(folder + "/" + engine->config_.model_file, session_config);
  if (!session) return session.status();
  engine->session_ = std::move(*session);
  auto tokenizer = Tokenizer::from_json_file(folder + "/tokenizer.json");
  if (!tokenizer) return tokenizer.status();
  engine->tokenizer_ = std::move(*tokenizer);
  NXRT_RETURN_IF_ERROR(engine->bind_names());
  return engine;
}

Status Engine::bind_names() {
  const ModelConfig& c = config_;
  auto feeds = std::make_unique<Feeds>();
  auto has_input = [&](const std::string& name) {
    for (const auto& info : session_->inputs())
      if (info.name == name) return true;
    return false;
  };
  for (const std::string* name : {&c.input_ids, &c.attention_mask})
    if (!has_input(*name))
      return invalid_argument(c.model_file, " has no input '", *name,
                              "' that genai_config.json names");
  feeds->ids_at = 0;
  feeds->mask_at = 1;
  feeds->input_names = {c.input_ids, c.attention_mask};
  if (has_input(c.position_ids)) {
    feeds->positions_at = feeds->input_names.size();
    feeds->input_names.push_back(c.position_ids);
  }
  feeds->past_at = feeds->input_names.size();
  for (int layer = 0; layer < c.layers; ++layer)
    for (const std::string* pattern : {&c.past_key, &c.past_value}) {
      std::string name = layer_name(*pattern, layer);
      if (!has_input(name))
        return invalid_argument(c.model_file, " has no input '", name, "' (num_hidden_layers is ",
                                c.layers, ")");
      feeds->input_names.push_back(std::move(name));
    }
  for (const auto& info : session_->inputs()) {
    const bool fed = std::find(feeds->input_names.begin(), feeds->input_names.end(), info.name) !=
                     feeds->input_names.end();
    if (!fed)
      return not_implemented(c.model_file, " needs input '", info.name,
                             "', which the generation engine does not feed");
  }
  const auto& outputs = session_->outputs();
  auto output_index = [&](const std::string& name) -> Expected<size_t> {
    for (size_t i = 0; i < outputs.size(); ++i)
      if (outputs[i].name == name) return i;
    return invalid_argument(c.model_file, " has no output '", name,
                            "' that genai_config.json names");
  };
  NXRT_ASSIGN_OR_RETURN(feeds->logits_out, output_index(c.logits));
  for (int layer = 0; layer < c.layers; ++layer)
    for (const std::string* pattern : {&c.present_key, &c.present_value}) {
      NXRT_ASSIGN_OR_RETURN(size_t index, output_index(layer_name(*pattern, layer)));
      feeds->present_out.push_back(index);
    }
  feeds->inputs.resize(feeds->input_names.size());
  feeds->bound.resize(outputs.size());
  feeds_ = std::move(feeds);
  return Status();
}

Status Engine::reserve_cache(int64_t capacity) {
  Feeds& f = *feeds_;
  const ModelConfig& c = config_;
  if (f.capacity >= capacity) return Status();
  const size_t floats = size_t(c.kv_heads) * size_t(capacity) * size_t(c.head_size);
  f.cache.assign(size_t(2 * c.layers), {});
  for (auto& buffer : f.cache) buffer.resize(floats);
  f.capacity = capacity;
  const Shape shape{1, c.kv_heads, capacity, c.head_size};
  for (size_t i = 0; i < f.cache.size(); ++i) {
    Tensor view(DataType::kFloat, shape, f.cache[i].data());
    f.inputs[f.past_at + i] = view;
    f.bound[f.present_out[i]] = view;
  }
  return Status();
}

Status Engine::step(std::span<const int32_t> ids, int64_t position) {
  Feeds& f = *feeds_;
  const int64_t n = int64_t(ids.size());
  f.ids.assign(ids.begin(), ids.end());
  f.inputs[f.ids_at] = Tensor(DataType::kInt64, Shape{1, n}, f.ids.data());
  if (int64_t(f.mask.size()) < position + n) f.mask.resize(size_t(position + n), 1);
  f.inputs[f.mask_at] = Tensor(DataType::kInt64, Shape{1, position + n}, f.mask.data());
  if (f.positions_at != SIZE_MAX) {
    f.positions.resize(size_t(n));
    for (int64_t i = 0; i < n; ++i) f.positions[size_t(i)] = position + i;
    f.inputs[f.positions_at] = Tensor(DataType::kInt64, Shape{1, n}, f.positions.data());
  }
  // A one-token step writes its logits straight into logits_; a prompt's come back whole.
  const bool bind_logits = n == 1 && vocab_ > 0;
  f.bound[f.logits_out] =
      bind_logits ? Tensor(DataType::kFloat, Shape{1, 1, vocab_}, logits_.data()) : Tensor();
  RunFlags flags;
  flags.bound_outputs = f.bound;
  NXRT_RETURN_IF_ERROR(session_->run(f.input_names, f.inputs, {}, f.outputs, flags));
  const Tensor& logits = f.outputs[f.logits_out].tensor;
  if (logits.dtype() != DataType::kFloat || logits.shape().rank() != 3 || logits.shape()[0] != 1 ||
      logits.shape()[1] != n)
    return runtime_error(config_.model_file, ": output '", config_.logits, "' has shape ",
                         logits.shape().to_string(), ", expected [1, ", n, ", vocab] float");
  if (!bind_logits) {
    vocab_ = logits.shape()[2];
    logits_.resize(size_t(vocab_));
    std::memcpy(logits_.data(), logits.data<float>() + (n - 1) * vocab_,
                size_t(vocab_) * sizeof(float));
  }
  if (!cache_in_place())  // the grown cache is the next step's past
    for (size_t i = 0; i < f.present_out.size(); ++i)
      f.inputs[f.past_at + i] = f.outputs[f.present_out[i]];
  return Status();
}

Expected<Generation> Engine::generate(std::string_view prompt, const SamplingOptions& options,
                                      const TextSink& sink) {
  const std::vector<int32_t> ids = tokenizer_->encode(prompt, false);
  return generate(std::span<const int32_t>(ids), options, sink);
}

Expected<Generation> Engine::generate(std::span<const int32_t> prompt_ids,
                                      const SamplingOptions& options, const TextSink& sink) {
  NXRT_RETURN_IF_ERROR(options.check());
  const ModelConfig& c = config_;
  const int64_t prompt_len = int64_t(prompt_ids.size());
  if (prompt_len == 0) return invalid_argument("the prompt is empty (no tokens)");
  if (prompt_len >= c.context_length)
    return invalid_argument("the prompt has ", prompt_len, " tokens; the model's context is ",
                            c.context_length);
  for (int32_t id : prompt_ids)
    if (id < 0 || id >= tokenizer_->vocab_size())
      return invalid_argument("token id ", id, " of the prompt is outside the vocabulary [0, ",
                              tokenizer_->vocab_size(), ")");
  Feeds& f = *feeds_;
  if (cache_in_place()) {
    NXRT_RETURN_IF_ERROR(
        reserve_cache(std::min<int64_t>(c.context_length, prompt_len + options.max_tokens)));
  } else {  // an empty past to start from
    for (size_t i = 0; i < f.present_out.size(); ++i) {
      auto empty = Tensor::allocate(DataType::kFloat, Shape{1, c.kv_heads, 0, c.head_size});
      if (!empty) return empty.status();
      f.inputs[f.past_at + i] = std::move(*empty);
    }
  }
  std::vector<int32_t> stop_ids = options.stop_token_ids;
  if (!options.ignore_eos)
    stop_ids.insert(stop_ids.end(), c.eos_token_ids.begin(), c.eos_token_ids.end());
  std::vector<std::string> stops;
  for (const std::string& s : options.stop)
    if (!s.empty()) stops.push_back(s);

  Generation out;
  out.stats.prompt_tokens = int(prompt_len);
  Sampler sampler(options);
  StreamDecoder decoder(*tokenizer_);
  std::string held;  // decoded text not yet given out: it may begin a stop string
  auto emit = [&](std::string_view piece) {
    out.text += piece;
    return !sink || piece.empty() || sink(piece);
  };

  const auto start = Clock::now();
  NXRT_RETURN_IF_ERROR(step(prompt_ids, 0));
  int64_t position = prompt_len;
  Clock::time_point first{};
  while (true) {
    const Sampler::Pick pick = sampler.pick(logits_, prompt_ids, out.token_ids);
    if (out.token_ids.empty()) {
      first = Clock::now();
      out.stats.time_to_first_token_s = seconds(start, first);
    }
    out.token_ids.push_back(pick.token);
    if (options.logprobs) out.logprobs.push_back(pick.logprob);
    std::string reason;
    if (std::find(stop_ids.begin(), stop_ids.end(), pick.token) != stop_ids.end()) {
      // EOS or a stop token: its own text is not output.
      emit(held + decoder.flush());
      out.finish_reason = "stop";
      break;
    }
    NXRT_ASSIGN_OR_RETURN(std::string piece, decoder.add(pick.token));
    held += piece;
    size_t at = std::string::npos;
    for (const std::string& s : stops) at = std::min(at, held.find(s));
    if (at != std::string::npos) {
      emit(std::string_view(held).substr(0, at));
      out.finish_reason = "stop";
      break;
    }
    if (int64_t(out.token_ids.size()) >= options.max_tokens || position + 1 >= c.context_length) {
      emit(held + decoder.flush());
      out.finish_reason = "length";
      break;
    }
    const size_t cut = held.size() - held_back(held, stops);
    if (cut > 0) {
      if (!emit(std::string_view(held).substr(0, cut))) {
        out.finish_reason = "cancelled";
        break;
      }
      held.erase(0, cut);
    }
    const int32_t token = pick.token;
    NXRT_RETURN_IF_ERROR(step(std::span<const int32_t>(&token, 1), position));
    ++position;
  }
  out.stats.completion_tokens = int(out.token_ids.size());
  out.stats.decode_s = seconds(first, Clock::now());
  return out;
}

}  // namespace nxrt::genai
