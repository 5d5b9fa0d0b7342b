#include "runtime/memory_plan.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "runtime/session.h"

namespace nxrt {
namespace {

// One simulated run: blocks a (1000 bytes) and b (3000) live together, then c (2000)
// after both are released.
struct Blocks {
  void* a = nullptr;
  void* b = nullptr;
  void* c = nullptr;
};

Blocks simulate_run(MemoryPlan& plan, BufferPool& pool, std::span<const Value* const> feeds,
                    size_t c_bytes = 2000) {
  plan.begin_run(feeds, {});
  Blocks out;
  int ia, ib, ic;
  size_t cap;
  out.a = plan.acquire(1000, pool, &ia, &cap);
  out.b = plan.acquire(3000, pool, &ib, &cap);
  std::memset(out.a, 1, 1000);
  std::memset(out.b, 2, 3000);
  plan.release(ia, out.a, pool);
  plan.release(ib, out.b, pool);
  out.c = plan.acquire(c_bytes, pool, &ic, &cap);
  std::memset(out.c, 3, c_bytes);
  plan.release(ic, out.c, pool);
  plan.end_run(true, pool);
  return out;
}

TEST(MemoryPlan, PlansAfterTwoEqualRecordingsAndPacksByLifetime) {
  MemoryPlan plan;
  BufferPool pool;
  std::vector<float> x(8);
  Value feed(Tensor(DataType::kFloat, Shape{2, 4}, x.data()));
  const Value* feeds[] = {&feed};
  simulate_run(plan, pool, feeds);
  EXPECT_FALSE(plan.has_plan());
  simulate_run(plan, pool, feeds);
  ASSERT_TRUE(plan.has_plan());
  // a and b overlap in time, so they are disjoint; c reuses their bytes.
  EXPECT_EQ(plan.arena_bytes(), 1024u + 3008u);
  EXPECT_EQ(pool.blocks_allocated(), 0u);  // the recordings' blocks were freed
  const Blocks planned = simulate_run(plan, pool, feeds);
  EXPECT_EQ(plan.planned_runs(), 1u);
  const auto* a = static_cast<const std::byte*>(planned.a);
  const auto* b = static_cast<const std::byte*>(planned.b);
  EXPECT_TRUE(a + 1000 <= b || b + 3000 <= a);
  EXPECT_EQ(pool.blocks_allocated(), 0u);  // nothing came from the pool
}

TEST(MemoryPlan, OtherShapesRecordAndADivergentRunFallsBackToThePool) {
  MemoryPlan plan;
  BufferPool pool;
  std::vector<float> x(16);
  Value small(Tensor(DataType::kFloat, Shape{2, 4}, x.data()));
  Value large(Tensor(DataType::kFloat, Shape{4, 4}, x.data()));
  const Value* small_feeds[] = {&small};
  const Value* large_feeds[] = {&large};
  simulate_run(plan, pool, small_feeds);
  simulate_run(plan, pool, small_feeds);
  ASSERT_TRUE(plan.has_plan());
  // Other feed shapes run on the pool and keep the plan.
  simulate_run(plan, pool, large_feeds, 5000);
  EXPECT_TRUE(plan.has_plan());
  EXPECT_EQ(plan.planned_runs(), 0u);
  // Same feed shapes but c needs more than planned (a data-dependent shape): c comes from
  // the pool, the run is correct, and the plan is dropped.
  const Blocks diverged = simulate_run(plan, pool, small_feeds, 5000);
  EXPECT_FALSE(plan.has_plan());
  EXPECT_GE(pool.blocks_allocated(), 1u);
  EXPECT_EQ(static_cast<const unsigned char*>(diverged.c)[4999], 3);
}

// A real model at a fixed frame size: after two runs its intermediates come from one arena,
// and the results stay those of the pooled runs.
TEST(MemoryPlan, SileroVadRunsFromTheArenaWithTheSameResults) {
  const std::string path = std::string(NXRT_SHARED_DIR) + "/models/silero_vad_v5.onnx";
  auto session = Session::create_from_file(path, {});
  ASSERT_TRUE(session.ok()) << session.status().message();
  std::vector<float> audio(512), state(2 * 128, 0.0f);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (float& v : audio) v = uniform(rng);
  int64_t sr = 16000;
  std::vector<Value> feeds = {Tensor(DataType::kFloat, Shape{1, 512}, audio.data()),
                              Tensor(DataType::kFloat, Shape{2, 1, 128}, state.data()),
                              Tensor(DataType::kInt64, Shape{}, &sr)};
  std::vector<std::string> names = {"input", "state", "sr"};
  std::vector<std::vector<float>> first;
  for (int run = 0; run < 5; ++run) {
    std::vector<Value> outputs;
    Status s = (*session)->run(names, feeds, {}, outputs);
    ASSERT_TRUE(s.ok()) << s.message();
    std::vector<float> probability(outputs[0].tensor.data<float>(),
                                   outputs[0].tensor.data<float>() + outputs[0].tensor.numel());
    std::vector<float> next_state(outputs[1].tensor.data<float>(),
                                  outputs[1].tensor.data<float>() + outputs[1].tensor.numel());
    if (run == 0) {
      first = {probability, next_state};
    } else {
      EXPECT_EQ(probability, first[0]) << "run " << run;
      EXPECT_EQ(next_state, first[1]) << "run " << run;
    }
  }
  const Session::MemoryPlanStats stats = (*session)->memory_plan_stats();
  EXPECT_GT(stats.arena_bytes, 0u);
  EXPECT_EQ(stats.planned_runs, 3u);
}

}  // namespace
}  // namespace nxrt
