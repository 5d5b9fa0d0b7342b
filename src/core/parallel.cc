#include "core/parallel.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace nxrt {

namespace {

thread_local Parallel* t_current = nullptr;

// Spins (with a pause instruction) before sleeping: a futex wake-up costs tens of
// microseconds on a VM, more than many of the loops a model hands the pool. Workers spin
// for kSpinTime after their last piece of work, then sleep on a condition variable, so an
// idle session burns no CPU. 1 ms, not 0.3: with 0.3 the worker was often asleep when the
// next parallel op came (shufflenet's depthwise layers, between serial channel shuffles,
// ran as if on one thread: 2-thread ratio to onnxruntime 1.28 -> 1.13).
constexpr auto kSpinTime = std::chrono::microseconds(1000);

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

class WorkerPool final : public Parallel {
 public:
  explicit WorkerPool(size_t threads) : width_(threads) {
    for (size_t i = 1; i < threads; ++i) workers_.emplace_back([this] { work(); });
  }

  ~WorkerPool() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_.store(true);
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
    // Publish the loop: close the claim word first, so a worker still looking at the
    // previous loop cannot claim with the new bounds, then the loop, then open it.
    const uint64_t loop = ++loops_ & kLoopMask;
    claim_.store(loop << 32 | kClosed);
    fn_.store(fn);
    ctx_.store(ctx);
    n_.store(n);
    done_.store(0);
    claim_.store(loop << 32);
    // seq_cst with the sleepers_ check below and the worker's (increment sleepers_, then
    // re-read generation_): either the worker sees this generation or we see it asleep.
    generation_.fetch_add(1);
    if (sleepers_.load() > 0) {
      std::lock_guard<std::mutex> lock(mutex_);
      wake_.notify_all();
    }
    drain();
    // Wait only for pieces a worker has taken: a worker still asleep, or one whose vCPU
    // the host took away, has nothing of this loop, and this thread ran the rest.
    for (unsigned spins = 0; done_.load(std::memory_order_acquire) != n; ++spins) {
      if (spins < 4096)
        cpu_relax();
      else
        std::this_thread::yield();  // a worker lost its core: let it finish
    }
    busy_.store(false, std::memory_order_release);
  }

 private:
  static constexpr uint64_t kLoopMask = 0xFFFFFFFFu;
  static constexpr uint64_t kClosed = 0xFFFFFFFFu;

  // Claims indices of the published loop until none are left: the claim word holds the
  // loop's number and its next index, so a claim made against a loop that has since
  // been replaced fails instead of taking an index of the new one.
  void drain() {
    uint64_t v = claim_.load();
    for (;;) {
      const uint64_t index = v & kLoopMask;
      if (index == kClosed || index >= n_.load()) return;
      if (!claim_.compare_exchange_weak(v, v + 1)) continue;  // v reloaded
      fn_.load()(ctx_.load(), size_t(index));
      done_.fetch_add(1, std::memory_order_release);
      v = claim_.load();
    }
  }

  void work() {
    // 0, the generation at construction: a loop published before this thread got to run
    // must still be taken.
    size_t seen = 0;
    for (;;) {
      if (!wait_for_work(seen)) return;
      seen = generation_.load(std::memory_order_acquire);
      drain();
    }
  }

  // Returns when generation_ moves past `seen` (true) or the pool stops (false).
  bool wait_for_work(size_t seen) {
    auto deadline = std::chrono::steady_clock::now() + kSpinTime;
    for (unsigned spins = 1;; ++spins) {
      if (generation_.load(std::memory_order_acquire) != seen) return true;
      if (stop_.load(std::memory_order_relaxed)) return false;
      cpu_relax();
      if (spins % 64 == 0 && std::chrono::steady_clock::now() > deadline) break;
    }
    std::unique_lock<std::mutex> lock(mutex_);
    sleepers_.fetch_add(1);
    wake_.wait(lock, [&] { return stop_.load() || generation_.load() != seen; });
    sleepers_.fetch_sub(1);
    return !stop_.load();
  }

  const size_t width_;
  std::vector<std::thread> workers_;
  std::atomic<bool> busy_{false};  // set by the run using the workers
  std::mutex mutex_;
  std::condition_variable wake_;
  std::atomic<bool> stop_{false};
  std::atomic<size_t> generation_{0}, sleepers_{0};
  // The current loop. Atomic because a worker may still read them while the next loop
  // is published (its claim then fails).
  uint64_t loops_ = 0;                    // loops published, by the thread holding busy_
  std::atomic<uint64_t> claim_{kClosed};  // loop number << 32 | next index
  std::atomic<size_t> n_{0}, done_{0};
  std::atomic<void (*)(void*, size_t)> fn_{nullptr};
  std::atomic<void*> ctx_{nullptr};
};

}  // namespace

std::unique_ptr<Parallel> make_worker_pool(size_t threads) {
  return std::make_unique<WorkerPool>(threads < 1 ? 1 : threads);
}

Parallel* current_parallel() { return t_current; }

ParallelScope::ParallelScope(Parallel* p) : previous_(t_current) { t_current = p; }
ParallelScope::~ParallelScope() { t_current = previous_; }

}  // namespace nxrt
