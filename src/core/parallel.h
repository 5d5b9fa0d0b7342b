// Intra-op parallelism. A run installs its session's Parallel (a pool nxrt owns, or one
// the caller supplied through the C API) for the calling thread; kernels split big loops
// with parallel_for(). Without one, or inside a worker, loops run serially on the calling
// thread, which is the default: nxrt starts no thread unless intra_op_num_threads > 1.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>

namespace nxrt {

class Parallel {
 public:
  virtual ~Parallel() = default;
  // How many pieces are worth splitting work into (the threads that can run at once).
  virtual size_t width() const = 0;
  // Calls fn(ctx, i) for every i in [0, n), possibly at the same time on several threads;
  // returns when all calls are done. Must not allocate on the heap.
  virtual void run(size_t n, void (*fn)(void* ctx, size_t index), void* ctx) = 0;
};

// A pool of `threads - 1` workers plus the calling thread. Runs of one session may call
// it concurrently: a call that finds the workers busy runs its loop serially instead of
// waiting, so concurrent runs never queue behind each other.
std::unique_ptr<Parallel> make_worker_pool(size_t threads);

// The Parallel installed for this thread (nullptr: serial).
Parallel* current_parallel();

// Installs `p` for this thread for the scope's lifetime.
class ParallelScope {
 public:
  explicit ParallelScope(Parallel* p);
  ~ParallelScope();
  ParallelScope(const ParallelScope&) = delete;
  ParallelScope& operator=(const ParallelScope&) = delete;

 private:
  Parallel* previous_;
};

// Runs body(i) for i in [0, n) on the current Parallel, or serially.
template <typename Body>
void parallel_for(size_t n, Body&& body) {
  Parallel* p = n < 2 ? nullptr : current_parallel();  // one piece: no thread-local lookup
  if (!p) {
    for (size_t i = 0; i < n; ++i) body(i);
    return;
  }
  using Fn = std::remove_reference_t<Body>;
  p->run(
      n, [](void* ctx, size_t i) { (*static_cast<Fn*>(ctx))(i); },
      const_cast<void*>(static_cast<const void*>(&body)));
}

// The number of pieces to split work of `units` (of roughly equal cost) into: 1 when
// serial or when the work is too small to be worth a thread hand-off.
inline size_t parallel_pieces(double work, double min_work_per_piece) {
  if (work < 2 * min_work_per_piece) return 1;  // before the thread-local lookup
  Parallel* p = current_parallel();
  if (!p) return 1;
  const double by_work = work / min_work_per_piece;
  const size_t width = p->width();
  return by_work < double(width) ? size_t(by_work) : width;
}

// Splits [0, n) into at most `max_pieces` contiguous ranges, as many as
// parallel_pieces(n, min_per_piece) allows, and runs body(piece, begin, end) for each on
// the run's threads (memory-bound loops over a flat tensor). Returns the number of pieces.
template <typename Body>
size_t parallel_ranges(int64_t n, double min_per_piece, Body&& body,
                       size_t max_pieces = size_t(-1)) {
  const size_t pieces =
      std::max<size_t>(1, std::min(max_pieces, parallel_pieces(double(n), min_per_piece)));
  const int64_t chunk = (n + int64_t(pieces) - 1) / int64_t(pieces);
  parallel_for(pieces, [&](size_t piece) {
    const int64_t begin = std::min(n, int64_t(piece) * chunk);
    body(piece, begin, std::min(n, begin + chunk));
  });
  return pieces;
}

}  // namespace nxrt
