// An output written over an input that dies at its node (Kernel::output0_overwrites_input,
// Step::overwritable_input): a blocked convolution's sum input Z, whose block the output
// takes over, as ResNet's residual additions do. Results must be those of the plain
// graph, the predicted memory plan must hold run after run, and a Z read later must not
// be overwritten.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "ep/cpu/vmath/nchwc.h"
#include "model_builder.h"
#include "runtime/session.h"

namespace nxrt {
namespace {

using testing::InitSpec;
using testing::NodeSpec;
using testing::ramp;

// x [1, 16, 4, 4] -> Conv 16 -> 160 (h) -> Conv 160 -> 64 (z) and Conv 160 -> 64 (a);
// a + z -> Relu -> (`extra`) -> Neg -> y. 160 input channels take two chunks of input
// blocks in the blocked 1x1 tiles, which keep partial sums in the output between them.
std::string residual_model(const std::vector<NodeSpec>& extra, const std::string& last) {
  const std::vector<InitSpec> inits = {
      {"w0", {160, 16, 1, 1}, ramp(160 * 16, 0.37f, 0.0f)}, {"b0", {160}, ramp(160, 0.11f, 0.1f)},
      {"wz", {64, 160, 1, 1}, ramp(64 * 160, 0.23f, 0.0f)}, {"bz", {64}, ramp(64, 0.19f, -0.1f)},
      {"wa", {64, 160, 1, 1}, ramp(64 * 160, 0.41f, 0.0f)}, {"ba", {64}, ramp(64, 0.07f, 0.2f)}};
  std::vector<NodeSpec> nodes = {{"Conv", {"x", "w0", "b0"}, {"h"}, "c0"},
                                 {"Conv", {"h", "wz", "bz"}, {"z"}, "cz"},
                                 {"Conv", {"h", "wa", "ba"}, {"a"}, "ca"},
                                 {"Add", {"a", "z"}, {"s"}, "add"},
                                 {"Relu", {"s"}, {"r"}, "relu"}};
  nodes.insert(nodes.end(), extra.begin(), extra.end());
  nodes.push_back({"Neg", {last}, {"y"}, "neg"});
  return testing::build_model(nodes, {"x"}, {"y"}, inits, 17, 8, {{1, 16, 4, 4}});
}

std::unique_ptr<Session> session_at(const std::string& bytes, int level) {
  SessionConfig config;
  config.graph_optimization_level = level;
  auto session = Session::create_from_bytes(bytes.data(), bytes.size(), config);
  EXPECT_TRUE(session.ok()) << session.status().message();
  return session.ok() ? std::move(session).value() : nullptr;
}

std::vector<float> run(const Session& session, std::vector<float>& x) {
  std::vector<Value> feeds = {Tensor(DataType::kFloat, Shape{1, 16, 4, 4}, x.data())};
  std::vector<std::string> names = {"x"};
  std::vector<Value> outputs;
  const Status st = session.run(names, feeds, {}, outputs);
  EXPECT_TRUE(st.ok()) << st.message();
  if (!st.ok()) return {};
  const Tensor& y = outputs.at(0).tensor;
  return std::vector<float>(y.data<float>(), y.data<float>() + y.numel());
}

// The names of the inputs whose blocks the plan lets an output take over.
std::vector<std::string> overwritable(const Session& session) {
  const ExecutableGraph& plan = session.plan();
  std::vector<std::string> names;
  for (const Step& step : plan.steps)
    if (step.overwritable_input >= 0)
      names.push_back(plan.slots[size_t(step.inputs[size_t(step.overwritable_input)])].name);
  return names;
}

// Three optimized runs, each from the predicted plan, match the unoptimized graph.
void expect_runs_match_plain(const Session& fast, const Session& plain) {
  std::vector<float> x = ramp(16 * 16, 0.29f, 0.05f);
  const std::vector<float> expected = run(plain, x);
  ASSERT_EQ(expected.size(), size_t(64 * 16));
  for (int r = 0; r < 3; ++r) {
    const std::vector<float> y = run(fast, x);
    ASSERT_EQ(y.size(), expected.size());
    for (size_t i = 0; i < y.size(); ++i)
      EXPECT_NEAR(y[i], expected[i], 1e-4f + 1e-4f * std::fabs(expected[i]))
          << "run " << r << ", element " << i;
  }
  const Session::MemoryPlanStats stats = fast.memory_plan_stats();
  EXPECT_TRUE(stats.predicted) << stats.not_predicted_why;
  EXPECT_EQ(stats.planned_runs, 3u);
}

TEST(OverwriteInput, ABlockedConvolutionWritesItsOutputOverADyingSumInput) {
  const std::string bytes = residual_model({}, "r");
  auto fast = session_at(bytes, 99);
  auto plain = session_at(bytes, 0);
  ASSERT_TRUE(fast && plain);
  expect_runs_match_plain(*fast, *plain);
  if (!vmath::nchwc_available()) GTEST_SKIP() << "no blocked convolutions on this CPU";
  // Add and Relu fold into one of the two convolutions, the other's (blocked) output
  // becoming its sum input Z, which dies there.
  const std::vector<std::string> names = overwritable(*fast);
  ASSERT_EQ(names.size(), 1u);
  EXPECT_TRUE(names[0] == "a_nchwc" || names[0] == "z_nchwc") << names[0];
  // Blocked values: h 10 blocks of 16 positions x 16 floats (10 KiB), Z and the fused
  // output 4 KiB each. Were the output a block of its own, h, Z and it would be live at
  // once (18 KiB); over Z, the arena needs h and Z only.
  EXPECT_EQ(fast->memory_plan_stats().arena_bytes, size_t(10240 + 4096));
}

TEST(OverwriteInput, ASumInputReadLaterKeepsItsBlock) {
  // z is read again after the fused convolution: its block must stay z's.
  const std::string bytes = residual_model({{"Add", {"r", "z"}, {"t"}, "add_again"}}, "t");
  auto fast = session_at(bytes, 99);
  auto plain = session_at(bytes, 0);
  ASSERT_TRUE(fast && plain);
  EXPECT_TRUE(overwritable(*fast).empty());
  expect_runs_match_plain(*fast, *plain);
}

}  // namespace
}  // namespace nxrt
