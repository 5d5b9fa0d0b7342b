// Continuous batching: sequences from many callers decoded together. A scheduler thread
// owns one Engine::Feeds with `slots` cache slots; new sequences' prompts run between
// steps (those admitted together on neighbouring slots in one run, padded to the longest),
// then join the next decode step, which runs every active sequence's next token in one
// batch (the weights are read once per step for all of them, which is where the
// throughput comes from on a memory-bound decode). A finished
// sequence's cache stays in its slot: a later prompt that starts with the same tokens (the
// next chat turn, a shared system prompt) goes to that slot and runs only the rest.
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "genai/engine.h"
#include "genai/sequence.h"

namespace nxrt::genai {

class BatchDecoder {
 public:
  // A submitted sequence; wait() returns its result once it has finished.
  class Job {
   public:
    Expected<Generation> wait();
    bool ready() {
      std::lock_guard<std::mutex> lock(mutex);
      return done;
    }

   private:
    friend class BatchDecoder;
    std::unique_ptr<Sequence> sequence;
    std::mutex mutex;
    std::condition_variable cv;
    bool done = false;
    Status status;
  };

  // `slots` sequences at once, each with up to `capacity` cache positions (prompt and
  // output). Needs an engine whose cache is in place.
  static Expected<std::unique_ptr<BatchDecoder>> create(Engine& engine, int slots,
                                                        int64_t capacity);
  ~BatchDecoder();  // ends the scheduler: sequences not finished end with an error

  int64_t capacity() const { return capacity_; }
  // Queues a sequence (its sink runs on the scheduler thread: keep it quick; returning
  // false cancels it). Fails when the sequence needs more than capacity() positions.
  Expected<std::shared_ptr<Job>> submit(std::unique_ptr<Sequence> sequence);
  size_t waiting() const;
  size_t active() const;
  // Prompt runs so far, the prompts they ran, and sequences moved by close_gaps.
  struct Counts {
    int64_t runs = 0, sequences = 0;
    int64_t slot_moves = 0;  // sequences close_gaps moved
  };
  Counts counts() const;

 private:
  BatchDecoder(Engine& engine, std::unique_ptr<Engine::Feeds> feeds, int slots, int64_t capacity);
  void loop();
  void finish(std::shared_ptr<Job>& job, Status status);
  // Ends the sequence in `slot`, which finished: its cache's tokens stay for reuse.
  void finish_slot(size_t slot);
  // Runs the prompts of the sequences admitted to `slots` (ascending), as few runs as the
  // rules at kBatchedPrefillMinTokens allow.
  Status prefill(const std::vector<int64_t>& slots);
  // One run for the prompts in slots [first, first + count): each its tokens after what
  // its slot's cache holds (reuse[i]), padded to `longest` tokens.
  Status prefill_run(int64_t first, int64_t count, const std::vector<int64_t>& reuse,
                     int64_t longest);
  // Swaps the sequence in the last busy slot with a free slot below it until the busy
  // slots are [0, active), which a decode step then runs as one view of the caches (a
  // gap used to cost a dummy row per step: a quarter of a loaded server's step rows). The caches
  // trade places (exact copies), so the free slot's kept tokens stay reusable from their new slot.
  void close_gaps();
  Status decode_step();

  Engine& engine_;
  std::unique_ptr<Engine::Feeds> feeds_;
  int64_t capacity_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Job>> pending_;
  std::vector<std::shared_ptr<Job>> slots_;  // null: free (scheduler thread only)
  // By slot: the tokens whose keys and values its cache holds (scheduler thread only).
  // A new prompt takes the free slot sharing the longest prefix and skips those tokens.
  std::vector<std::vector<int32_t>> cached_;
  size_t active_ = 0;  // guarded by mutex_
  Counts counts_;      // guarded by mutex_
  bool stop_ = false;
  // Prompts that run together: each needs at least this many new tokens, because products
  // of 1-4 rows take other kernels than those of 5 and more (Engine::kRerunTokens), and a
  // prompt must give the same logits alone as beside others; padding may at most double
  // the rows of a run; and a run of several prompts holds at most kMaxBatchedPrefillRows
  // rows. Past a few dozen rows a row costs the same in any run (measured: 5 rows alone
  // ~24 ms, 7 x 5 together 55 ms, 29 x 12 together 885 ms), while every active sequence
  // waits for the run: the cap keeps that stall short.
  static constexpr int64_t kBatchedPrefillMinTokens = Engine::kRerunTokens;
  static constexpr int64_t kMaxPaddingFactor = 2;
  static constexpr int64_t kMaxBatchedPrefillRows = 64;
  std::vector<int32_t> step_ids_;
  std::vector<int64_t> step_lengths_;
  std::thread thread_;
};

// Generates after each prompt, decoded together (a decoder with a slot per prompt, up to
// 32 slots and 32768 cache positions; further prompts take slots as others finish), and
// returns the results in the prompts' order. With a seed, prompt i samples with seed + i
// (the same seed would give every prompt the same random stream). Needs an engine whose
// cache is in place.
Expected<std::vector<Generation>> generate_batch(Engine& engine,
                                                 const std::vector<std::vector<int32_t>>& prompts,
                                                 const SamplingOptions& options);

}  // namespace nxrt::genai
