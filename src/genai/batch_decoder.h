// Continuous batching: sequences from many callers decoded together. A scheduler thread
// owns one Engine::Feeds with `slots` cache slots; a new sequence's prompt runs alone on
// its slot (batch 1) between steps, then joins the next decode step, which runs every
// active sequence's next token in one batch (the weights are read once per step for all
// of them, which is where the throughput comes from on a memory-bound decode). A finished
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

 private:
  BatchDecoder(Engine& engine, std::unique_ptr<Engine::Feeds> feeds, int slots, int64_t capacity);
  void loop();
  void finish(std::shared_ptr<Job>& job, Status status);
  // Ends the sequence in `slot`, which finished: its cache's tokens stay for reuse.
  void finish_slot(size_t slot);
  Status prefill(int64_t slot);
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
  bool stop_ = false;
  std::vector<int32_t> step_ids_;
  std::vector<int64_t> step_lengths_;
  std::thread thread_;
};

}  // namespace nxrt::genai
