#include "core/parallel.h"

#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <thread>
#include <vector>

#include "ep/cpu/gemm/gemm.h"

namespace nxrt {
namespace {

TEST(Parallel, SerialWithoutAPool) {
  EXPECT_EQ(current_parallel(), nullptr);
  EXPECT_EQ(parallel_pieces(1e12, 1.0), 1u);
  std::vector<int> hits(10, 0);
  parallel_for(hits.size(), [&](size_t i) { ++hits[i]; });
  for (int h : hits) EXPECT_EQ(h, 1);
}

TEST(Parallel, WorkerPoolRunsEveryIndexOnceFromConcurrentCallers) {
  auto pool = make_worker_pool(3);
  EXPECT_EQ(pool->width(), 3u);
  std::vector<std::thread> callers;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t)
    callers.emplace_back([&] {
      ParallelScope scope(pool.get());
      for (int round = 0; round < 200; ++round) {
        std::vector<std::atomic<int>> hits(37);
        parallel_for(hits.size(), [&](size_t i) { hits[i].fetch_add(1); });
        for (auto& h : hits) failures += h.load() != 1;
      }
    });
  for (auto& c : callers) c.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(current_parallel(), nullptr);  // scopes are per thread
  {
    ParallelScope scope(pool.get());
    EXPECT_EQ(parallel_pieces(1e9, 1e6), 3u);
    EXPECT_EQ(parallel_pieces(1e6, 1e6), 1u);  // too small to split
  }
}

TEST(Parallel, BackToBackTinyLoopsNeverLeakIndicesAcrossLoops) {
  // Loops of 2..6 indices published as fast as possible: a worker that arrives late for
  // one loop must neither run one of its indices again nor take one of the next loop's
  // with the old loop's function.
  auto pool = make_worker_pool(4);
  ParallelScope scope(pool.get());
  int failures = 0;
  for (int round = 0; round < 20000; ++round) {
    const size_t n = 2 + size_t(round % 5);
    std::atomic<int> hits[6] = {};
    const int tag = round;
    std::atomic<int> wrong_tag{0};
    parallel_for(n, [&](size_t i) {
      if (tag != round) wrong_tag.fetch_add(1);
      hits[i].fetch_add(1);
    });
    for (size_t i = 0; i < 6; ++i) failures += hits[i].load() != (i < n ? 1 : 0);
    failures += wrong_tag.load();
  }
  EXPECT_EQ(failures, 0);
}

TEST(Parallel, GemmOnThreadsMatchesSerial) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  auto pool = make_worker_pool(2);
  // Wide (split by columns), tall (by rows, with B packed) and plain shapes.
  struct Case {
    int64_t m, n, k;
  } cases[] = {{64, 3000, 300}, {3000, 40, 300}, {300, 300, 300}};
  for (const Case& c : cases) {
    std::vector<float> a(size_t(c.m * c.k)), b(size_t(c.k * c.n));
    for (float& v : a) v = dist(rng);
    for (float& v : b) v = dist(rng);
    std::vector<float> serial(size_t(c.m * c.n)), threaded(serial.size());
    gemm::sgemm(false, false, c.m, c.n, c.k, 1.0f, a.data(), c.k, b.data(), c.n, 0.0f,
                serial.data(), c.n);
    {
      ParallelScope scope(pool.get());
      gemm::sgemm(false, false, c.m, c.n, c.k, 1.0f, a.data(), c.k, b.data(), c.n, 0.0f,
                  threaded.data(), c.n);
    }
    for (size_t i = 0; i < serial.size(); ++i)
      ASSERT_NEAR(threaded[i], serial[i], 1e-4f) << c.m << "x" << c.n << "x" << c.k << " at " << i;
    // B packed: rows of A split across the threads.
    const auto packed = gemm::PackedMatrix::pack_right(false, c.k, c.n, b.data(), c.n);
    {
      ParallelScope scope(pool.get());
      gemm::sgemm_packed_right(false, c.m, 1.0f, a.data(), c.k, packed, 0.0f, threaded.data(), c.n,
                               false);
    }
    for (size_t i = 0; i < serial.size(); ++i)
      ASSERT_NEAR(threaded[i], serial[i], 1e-4f) << "packed " << c.m << "x" << c.n << " at " << i;
  }
}

}  // namespace
}  // namespace nxrt
