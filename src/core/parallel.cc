#include "core/parallel.h"

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace nxrt {

namespace {

thread_local Parallel* t_current = nullptr;

class WorkerPool final : public Parallel {
 public:
  explicit WorkerPool(size_t threads) : width_(threads) {
    for (size_t i = 1; i < threads; ++i) workers_.emplace_back([this] { work(); });
  }

  ~WorkerPool() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : workers_) t.join();
  }

  size_t width() const override { return width_; }

  void run(size_t n, void (*fn)(void*, size_t), void* ctx) override {
    // Busy: another run holds the workers, or this is a loop nested inside one of our
    // own pieces on the calling thread. Either way the loop runs here, serially.
    bool idle = false;
    if (!busy_.compare_exchange_strong(idle, true, std::memory_order_acquire)) {
      for (size_t i = 0; i < n; ++i) fn(ctx, i);
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      fn_ = fn;
      ctx_ = ctx;
      n_ = n;
      next_.store(0, std::memory_order_relaxed);
      pending_ = workers_.size();
      ++generation_;
    }
    wake_.notify_all();
    drain();
    {
      std::unique_lock<std::mutex> lock(mutex_);
      done_.wait(lock, [this] { return pending_ == 0; });
    }
    busy_.store(false, std::memory_order_release);
  }

 private:
  // Takes indices until none are left.
  void drain() {
    for (size_t i = next_.fetch_add(1); i < n_; i = next_.fetch_add(1)) fn_(ctx_, i);
  }

  void work() {
    size_t seen = 0;
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
        if (stop_) return;
        seen = generation_;
      }
      drain();
      std::lock_guard<std::mutex> lock(mutex_);
      if (--pending_ == 0) done_.notify_one();
    }
  }

  const size_t width_;
  std::vector<std::thread> workers_;
  std::atomic<bool> busy_{false};  // set by the run using the workers
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  bool stop_ = false;
  size_t generation_ = 0, pending_ = 0, n_ = 0;
  void (*fn_)(void*, size_t) = nullptr;
  void* ctx_ = nullptr;
  std::atomic<size_t> next_{0};
};

}  // namespace

std::unique_ptr<Parallel> make_worker_pool(size_t threads) {
  return std::make_unique<WorkerPool>(threads < 1 ? 1 : threads);
}

Parallel* current_parallel() { return t_current; }

ParallelScope::ParallelScope(Parallel* p) : previous_(t_current) { t_current = p; }
ParallelScope::~ParallelScope() { t_current = previous_; }

}  // namespace nxrt
