#include "genai/batch_decoder.h"

#include <algorithm>

namespace nxrt::genai {

Expected<Generation> BatchDecoder::Job::wait() {
  std::unique_lock<std::mutex> lock(mutex);
  cv.wait(lock, [&] { return done; });
  if (!status.ok()) return status;
  return std::move(sequence->result());
}

Expected<std::unique_ptr<BatchDecoder>> BatchDecoder::create(Engine& engine, int slots,
                                                             int64_t capacity) {
  if (slots < 1) return invalid_argument("a batch needs at least one slot, not ", slots);
  capacity = std::min<int64_t>(capacity, engine.config().context_length);
  NXRT_ASSIGN_OR_RETURN(std::unique_ptr<Engine::Feeds> feeds, engine.make_feeds(slots));
  NXRT_RETURN_IF_ERROR(engine.reserve(*feeds, capacity));
  return std::unique_ptr<BatchDecoder>(new BatchDecoder(engine, std::move(feeds), slots, capacity));
}

BatchDecoder::BatchDecoder(Engine& engine, std::unique_ptr<Engine::Feeds> feeds, int slots,
                           int64_t capacity)
    : engine_(engine),
      feeds_(std::move(feeds)),
      capacity_(capacity),
      slots_(size_t(slots)),
      cached_(size_t(slots)) {
  thread_ = std::thread([this] { loop(); });
}

BatchDecoder::~BatchDecoder() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

Expected<std::shared_ptr<BatchDecoder::Job>> BatchDecoder::submit(
    std::unique_ptr<Sequence> sequence) {
  if (int64_t(sequence->prompt().size()) >= capacity_)
    return invalid_argument("the prompt has ", sequence->prompt().size(),
                            " tokens; this server's sequences hold ", capacity_);
  sequence->limit_context(capacity_);
  auto job = std::make_shared<Job>();
  job->sequence = std::move(sequence);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stop_) return runtime_error("the batch decoder is stopping");
    pending_.push_back(job);
  }
  cv_.notify_all();
  return job;
}

size_t BatchDecoder::waiting() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return pending_.size();
}

size_t BatchDecoder::active() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return active_;
}

BatchDecoder::Counts BatchDecoder::counts() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return counts_;
}

void BatchDecoder::finish(std::shared_ptr<Job>& job, Status status) {
  {
    std::lock_guard<std::mutex> lock(job->mutex);
    job->done = true;
    job->status = std::move(status);
  }
  job->cv.notify_all();
  job.reset();
  std::lock_guard<std::mutex> lock(mutex_);
  --active_;
}

Status BatchDecoder::prefill(const std::vector<int64_t>& slots) {
  // What each prompt's slot already holds, and the tokens left to run.
  std::vector<int64_t> reuse(slots.size()), tokens(slots.size());
  for (size_t i = 0; i < slots.size(); ++i) {
    Sequence& seq = *slots_[size_t(slots[i])]->sequence;
    seq.begin();
    reuse[i] = Engine::reusable_prefix(cached_[size_t(slots[i])], seq.prompt());
    tokens[i] = int64_t(seq.prompt().size()) - reuse[i];
    seq.result().stats.cached_prompt_tokens = int(reuse[i]);
    cached_[size_t(slots[i])].clear();  // known again when the sequence ends
  }
  for (size_t i = 0; i < slots.size();) {
    // Grow a run over neighbouring slots while the rules allow.
    size_t j = i + 1;
    int64_t longest = tokens[i], real = tokens[i];
    while (tokens[i] >= kBatchedPrefillMinTokens && j < slots.size() &&
           slots[j] == slots[j - 1] + 1 && tokens[j] >= kBatchedPrefillMinTokens) {
      const int64_t wider = std::max(longest, tokens[j]);
      const int64_t rows = int64_t(j - i + 1) * wider;
      bool fits = rows <= kMaxBatchedPrefillRows && rows <= kMaxPaddingFactor * (real + tokens[j]);
      for (size_t r = i; r <= j && fits; ++r) fits = reuse[r] + wider <= capacity_;
      if (!fits) break;
      longest = wider, real += tokens[j], ++j;
    }
    const std::vector<int64_t> run_reuse(reuse.begin() + ptrdiff_t(i),
                                         reuse.begin() + ptrdiff_t(j));
    NXRT_RETURN_IF_ERROR(prefill_run(slots[i], int64_t(j - i), run_reuse, longest));
    i = j;
  }
  return Status();
}

Status BatchDecoder::prefill_run(int64_t first, int64_t count, const std::vector<int64_t>& reuse,
                                 int64_t longest) {
  std::vector<int32_t> ids(size_t(count * longest));
  std::vector<int64_t> last(static_cast<size_t>(count));
  for (int64_t b = 0; b < count; ++b) {
    const std::vector<int32_t>& prompt = slots_[size_t(first + b)]->sequence->prompt();
    const auto rest = prompt.begin() + ptrdiff_t(reuse[size_t(b)]);
    const int64_t n = int64_t(prompt.end() - rest);
    std::copy(rest, prompt.end(), ids.begin() + b * longest);
    // The padding repeats the last token: its keys and values land past the prompt, where
    // this sequence's own next tokens overwrite them.
    std::fill_n(ids.begin() + b * longest + n, longest - n, prompt.back());
    last[size_t(b)] = n - 1;
  }
  NXRT_RETURN_IF_ERROR(engine_.run(*feeds_, ids, count, first, reuse, last));
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++counts_.runs;
    counts_.sequences += count;
  }
  for (int64_t b = 0; b < count; ++b) {
    Sequence& seq = *slots_[size_t(first + b)]->sequence;
    NXRT_ASSIGN_OR_RETURN(bool done,
                          seq.advance(engine_.logits(*feeds_, b), int64_t(seq.prompt().size())));
    if (done) finish_slot(size_t(first + b));
  }
  return Status();
}

void BatchDecoder::finish_slot(size_t slot) {
  slots_[slot]->sequence->cached_tokens(cached_[slot]);
  finish(slots_[slot], Status());
}

void BatchDecoder::close_gaps() {
  size_t free = 0, last = slots_.size();
  while (true) {
    while (free < slots_.size() && slots_[free]) ++free;
    while (last > 0 && !slots_[last - 1]) --last;
    if (free + 1 >= last) return;  // no free slot below the last busy one
    const size_t from = last - 1;
    const int64_t tokens =
        std::max(slots_[from]->sequence->position(), int64_t(cached_[free].size()));
    engine_.swap_slots(*feeds_, int64_t(from), int64_t(free), tokens);
    slots_[free] = std::move(slots_[from]);
    std::swap(cached_[free], cached_[from]);  // a busy slot's list is empty
    std::lock_guard<std::mutex> lock(mutex_);
    ++counts_.slot_moves;
  }
}

Status BatchDecoder::decode_step() {
  close_gaps();
  int64_t batch = 0;  // the busy slots, [0, batch) after close_gaps
  while (batch < int64_t(slots_.size()) && slots_[size_t(batch)]) ++batch;
  if (batch == 0) return Status();
  step_ids_.resize(size_t(batch));
  step_lengths_.resize(size_t(batch));
  for (int64_t b = 0; b < batch; ++b) {
    step_ids_[size_t(b)] = slots_[size_t(b)]->sequence->next_token();
    step_lengths_[size_t(b)] = slots_[size_t(b)]->sequence->position();
  }
  NXRT_RETURN_IF_ERROR(engine_.run(*feeds_, step_ids_, batch, 0, step_lengths_));
  for (int64_t b = 0; b < batch; ++b) {
    NXRT_ASSIGN_OR_RETURN(bool done,
                          slots_[size_t(b)]->sequence->advance(engine_.logits(*feeds_, b), 1));
    if (done) finish_slot(size_t(b));
  }
  return Status();
}

void BatchDecoder::loop() {
  while (true) {
    std::vector<int64_t> admitted;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      cv_.wait(lock, [&] { return stop_ || !pending_.empty() || active_ > 0; });
      if (stop_) break;
      // Each waiting sequence, oldest first, takes the free slot whose cache shares the
      // longest prefix with its prompt (the lowest such slot, keeping batches narrow).
      while (!pending_.empty()) {
        int64_t best = -1, best_reuse = -1;
        for (size_t s = 0; s < slots_.size(); ++s) {
          if (slots_[s]) continue;
          const int64_t reuse =
              Engine::reusable_prefix(cached_[s], pending_.front()->sequence->prompt());
          if (reuse > best_reuse) best = int64_t(s), best_reuse = reuse;
        }
        if (best < 0) break;
        slots_[size_t(best)] = std::move(pending_.front());
        pending_.pop_front();
        ++active_;
        admitted.push_back(best);
      }
    }
    std::sort(admitted.begin(), admitted.end());
    Status status = prefill(admitted);
    if (status.ok()) status = decode_step();
    if (!status.ok()) {  // a failed run ends every sequence in flight with its error
      for (auto& job : slots_)
        if (job) finish(job, status);
      for (auto& tokens : cached_) tokens.clear();  // what the caches hold is unknown
    }
  }
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto* jobs : {&pending_}) {
    for (auto& job : *jobs) {
      std::lock_guard<std::mutex> job_lock(job->mutex);
      job->done = true;
      job->status = runtime_error("the server stopped before this request ran");
      job->cv.notify_all();
    }
    jobs->clear();
  }
  for (auto& job : slots_)
    if (job) {
      std::lock_guard<std::mutex> job_lock(job->mutex);
      job->done = true;
      job->status = runtime_error("the server stopped during this request");
      job->cv.notify_all();
      job.reset();
    }
}

namespace {
constexpr int64_t kMaxBatchSlots = 32;
constexpr int64_t kBatchPositions = 32768;
}  // namespace

Expected<std::vector<Generation>> generate_batch(Engine& engine,
                                                 const std::vector<std::vector<int32_t>>& prompts,
                                                 const SamplingOptions& options) {
  std::vector<Generation> results;
  if (prompts.empty()) return results;
  std::vector<std::unique_ptr<Sequence>> sequences;
  int64_t capacity = 1;
  for (size_t i = 0; i < prompts.size(); ++i) {
    SamplingOptions own = options;
    if (own.seed) own.seed = *own.seed + i;
    NXRT_ASSIGN_OR_RETURN(
        std::unique_ptr<Sequence> sequence,
        Sequence::create(engine.tokenizer(), engine.config(), prompts[i], own, {}));
    capacity = std::max(capacity, sequence->capacity());
    sequences.push_back(std::move(sequence));
  }
  // Slots for at most kBatchPositions cache positions (and kMaxBatchSlots prompts) at once:
  // the rest wait in the decoder's queue, so thousands of prompts do not allocate a cache
  // for each.
  const int64_t slots = std::clamp<int64_t>(kBatchPositions / capacity, 1,
                                            std::min<int64_t>(kMaxBatchSlots, prompts.size()));
  NXRT_ASSIGN_OR_RETURN(std::unique_ptr<BatchDecoder> decoder,
                        BatchDecoder::create(engine, int(slots), capacity));
  std::vector<std::shared_ptr<BatchDecoder::Job>> jobs;
  for (std::unique_ptr<Sequence>& sequence : sequences) {
    NXRT_ASSIGN_OR_RETURN(std::shared_ptr<BatchDecoder::Job> job,
                          decoder->submit(std::move(sequence)));
    jobs.push_back(std::move(job));
  }
  for (const std::shared_ptr<BatchDecoder::Job>& job : jobs) {
    NXRT_ASSIGN_OR_RETURN(Generation generation, job->wait());
    results.push_back(std::move(generation));
  }
  return results;
}

}  // namespace nxrt::genai
