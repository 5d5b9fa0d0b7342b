#include "runtime/memory_plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "model_builder.h"
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

// A plan, its pool and one float [2, 4] feed.
class MemoryPlanOfOneFeed : public ::testing::Test {
 protected:
  MemoryPlan plan;
  BufferPool pool;
  std::vector<float> x = std::vector<float>(8);
  Value feed{Tensor(DataType::kFloat, Shape{2, 4}, x.data())};
  const Value* feeds[1] = {&feed};
};

TEST_F(MemoryPlanOfOneFeed, PlansAfterTwoEqualRecordingsAndPacksByLifetime) {
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

// Adopts a predicted run of simulate_run()'s blocks (1000, 3000 and 2000 bytes) with
// these events, for one float [2, 4] feed.
void adopt_prediction(MemoryPlan& plan, BufferPool& pool, const std::vector<int32_t>& events) {
  std::vector<int64_t> signature;
  MemoryPlan::append_signature(signature, DataType::kFloat, std::vector<int64_t>{2, 4});
  plan.adopt(signature, events, std::vector<size_t>{1000, 3000, 2000}, pool);
}

// A predicted run (shape inference before any run) plans the very first run.
TEST_F(MemoryPlanOfOneFeed, AnAdoptedPredictionPlansTheFirstRun) {
  adopt_prediction(plan, pool, {0, 1, ~0, ~1, 2, ~2});
  ASSERT_TRUE(plan.predicted());
  EXPECT_TRUE(plan.offered());
  simulate_run(plan, pool, feeds);
  EXPECT_EQ(plan.planned_runs(), 1u);
  EXPECT_EQ(pool.blocks_allocated(), 0u);
  EXPECT_TRUE(plan.predicted());
}

// A prediction that gets the lifetimes wrong (here: a and b never live together, so it
// lets them share bytes) is caught at the first event that differs: b comes from the
// pool, nothing is overwritten, and the plan is learned from runs instead.
TEST_F(MemoryPlanOfOneFeed, AWrongPredictionFallsBackToThePoolAndIsLearnedAgain) {
  adopt_prediction(plan, pool, {0, ~0, 1, ~1, 2, ~2});
  ASSERT_TRUE(plan.predicted());
  EXPECT_EQ(plan.arena_bytes(), 3008u);  // everything on the same bytes
  const Blocks diverged = simulate_run(plan, pool, feeds);
  const auto* a = static_cast<const unsigned char*>(diverged.a);
  const auto* b = static_cast<const unsigned char*>(diverged.b);
  EXPECT_TRUE(a + 1000 <= b || b + 3000 <= a);
  EXPECT_FALSE(plan.has_plan());
  EXPECT_EQ(plan.planned_runs(), 0u);
  simulate_run(plan, pool, feeds);
  simulate_run(plan, pool, feeds);
  ASSERT_TRUE(plan.has_plan());
  EXPECT_FALSE(plan.predicted());
  EXPECT_EQ(plan.arena_bytes(), 1024u + 3008u);
}

// A CNN with fixed input dims: shape inference sizes every intermediate of the optimized
// graph (channel-blocked convolutions included), so its first run already comes from the
// arena, and later runs give the same result.
TEST(MemoryPlan, AStaticCnnRunsItsFirstRunFromAPredictedPlan) {
  const std::string path =
      std::string(NXRT_SHARED_DIR) + "/onnx-backend-data/light/light_squeezenet.onnx";
  auto session = Session::create_from_file(path, {});
  ASSERT_TRUE(session.ok()) << session.status().message();
  const ir::ValueInfo& input = (*session)->inputs()[0];
  std::vector<int64_t> dims;
  for (const ir::Dim& d : input.type.dims) dims.push_back(d.value);
  const Shape shape(dims);
  std::vector<float> image(size_t(shape.numel()));
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
  for (float& v : image) v = uniform(rng);
  std::vector<Value> feeds = {Tensor(DataType::kFloat, shape, image.data())};
  std::vector<std::string> names = {input.name};
  std::vector<float> first;
  for (int run = 0; run < 3; ++run) {
    std::vector<Value> outputs;
    Status s = (*session)->run(names, feeds, {}, outputs);
    ASSERT_TRUE(s.ok()) << s.message();
    const Tensor& out = outputs[0].tensor;
    std::vector<float> result(out.data<float>(), out.data<float>() + out.numel());
    if (run == 0) {
      const Session::MemoryPlanStats stats = (*session)->memory_plan_stats();
      EXPECT_TRUE(stats.predicted) << stats.not_predicted_why;
      EXPECT_EQ(stats.planned_runs, 1u);
      EXPECT_GT(stats.arena_bytes, 0u);
      first = result;
    } else {
      EXPECT_EQ(result, first) << "run " << run;
    }
  }
  EXPECT_EQ((*session)->memory_plan_stats().planned_runs, 3u);
}

std::vector<float> run_once(Session& session, const std::vector<float>& x, Shape shape) {
  std::vector<float> data = x;
  std::vector<Value> feeds = {Tensor(DataType::kFloat, std::move(shape), data.data())};
  std::vector<std::string> names = {"x"};
  std::vector<Value> outputs;
  Status s = session.run(names, feeds, {}, outputs);
  EXPECT_TRUE(s.ok()) << s.message();
  if (!s.ok()) return {};
  const Tensor& y = outputs[0].tensor;
  return std::vector<float>(y.data<float>(), y.data<float>() + y.numel());
}

// Fixed input dims: the plan is predicted at session creation, so the first run already
// uses it, a reshape-like view (Flatten) keeping its input's block alive. Other feed shapes
// are refused (the input declares its dims). Without declared dims the same graph learns
// its plan from two runs, and says why it was not predicted.
TEST(MemoryPlan, FixedInputDimsPlanTheFirstRunAndSymbolicOnesLearn) {
  const std::vector<testing::NodeSpec> nodes = {{"Neg", {"x"}, {"a"}, "neg"},
                                                {"Flatten", {"a"}, {"f"}, "flat"},  // a view of a
                                                {"Relu", {"x"}, {"r"}, "relu"},
                                                {"Add", {"f", "r"}, {"s"}, "add"},
                                                {"Exp", {"s"}, {"y"}, "exp"}};
  std::vector<float> x(32);
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(i % 7) - 3.0f;
  std::vector<float> expected;
  for (float v : x) expected.push_back(std::exp(-v + std::max(v, 0.0f)));

  const std::string fixed = testing::build_model(nodes, {"x"}, {"y"}, {}, 17, 8, {{4, 8}});
  auto session = Session::create_from_bytes(fixed.data(), fixed.size(), {});
  ASSERT_TRUE(session.ok()) << session.status().message();
  EXPECT_EQ(run_once(**session, x, Shape{4, 8}), expected);
  Session::MemoryPlanStats stats = (*session)->memory_plan_stats();
  EXPECT_TRUE(stats.predicted) << stats.not_predicted_why;
  EXPECT_EQ(stats.planned_runs, 1u);
  EXPECT_EQ(stats.arena_bytes, 3u * 128u);  // a (alive as f), r and s, all live at the Add
  EXPECT_EQ(run_once(**session, x, Shape{4, 8}), expected);
  EXPECT_EQ((*session)->memory_plan_stats().planned_runs, 2u);

  const std::string symbolic = testing::build_model(nodes, {"x"}, {"y"});
  session = Session::create_from_bytes(symbolic.data(), symbolic.size(), {});
  ASSERT_TRUE(session.ok()) << session.status().message();
  for (int run = 0; run < 3; ++run) EXPECT_EQ(run_once(**session, x, Shape{4, 8}), expected);
  stats = (*session)->memory_plan_stats();
  EXPECT_FALSE(stats.predicted);
  EXPECT_EQ(stats.not_predicted_why, "input 'x' declares no tensor shape");
  EXPECT_EQ(stats.planned_runs, 1u);  // the third run, after two equal recordings
}

// A data-dependent size (NonZero's count) leaves the plan to be learned, and says why.
TEST(MemoryPlan, ADataDependentSizeIsNotPredicted) {
  const std::string bytes = testing::build_model({{"NonZero", {"x"}, {"nz"}, "nonzero"},
                                                  {"Cast", {"nz"}, {"c"}, "cast", {{"to", 1}}},
                                                  {"Neg", {"c"}, {"y"}, "neg"}},
                                                 {"x"}, {"y"}, {}, 17, 8, {{6}});
  auto session = Session::create_from_bytes(bytes.data(), bytes.size(), {});
  ASSERT_TRUE(session.ok()) << session.status().message();
  std::vector<float> x = {0, 1, 0, 2, 3, 0};
  EXPECT_EQ(run_once(**session, x, Shape{6}), (std::vector<float>{-1, -3, -4}));
  const Session::MemoryPlanStats stats = (*session)->memory_plan_stats();
  EXPECT_FALSE(stats.predicted);
  EXPECT_EQ(stats.not_predicted_why, "shape inference leaves 'nz' open");
  EXPECT_EQ(stats.planned_runs, 0u);
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
