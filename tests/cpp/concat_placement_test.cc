// Concat inputs written in place (runtime/concat_placement.h): which inputs qualify, that
// results are those of an ordinary Concat, and that a run failing between a placed input
// and its Concat leaves later runs right.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "model_builder.h"
#include "runtime/session.h"

namespace nxrt {
namespace {

using testing::NodeSpec;

std::unique_ptr<Session> make_session(const std::vector<NodeSpec>& nodes,
                                      const std::vector<std::string>& inputs,
                                      const std::vector<std::vector<int64_t>>& dims) {
  const std::string bytes = testing::build_model(nodes, inputs, {"y"}, {}, 17, 8, dims);
  auto session = Session::create_from_bytes(bytes.data(), bytes.size(), {});
  EXPECT_TRUE(session.ok()) << session.status().message();
  return session.ok() ? std::move(session).value() : nullptr;
}

// The names of the values the plan writes into a Concat's output.
std::vector<std::string> placed_values(const Session& session) {
  const ExecutableGraph& plan = session.plan();
  std::vector<std::string> names;
  for (size_t s = 0; s < plan.placement_of_slot.size(); ++s)
    if (plan.placement_of_slot[s] >= 0) names.push_back(plan.slots[s].name);
  return names;
}

Status run(const Session& session, const std::vector<std::string>& names,
           std::vector<std::vector<float>>& data, const std::vector<Shape>& shapes,
           std::vector<float>& y) {
  std::vector<Value> feeds;
  for (size_t i = 0; i < data.size(); ++i)
    feeds.push_back(Value(Tensor(DataType::kFloat, shapes[i], data[i].data())));
  std::vector<Value> outputs;
  NXRT_RETURN_IF_ERROR(session.run(names, feeds, {}, outputs));
  const Tensor& t = outputs[0].tensor;
  y.assign(t.data<float>(), t.data<float>() + t.numel());
  return Status();
}

// Three runs give `expected` (within float rounding), all from the predicted plan.
void expect_planned_runs_give(const Session& session, const std::vector<std::string>& names,
                              std::vector<std::vector<float>>& feeds,
                              const std::vector<Shape>& shapes,
                              const std::vector<float>& expected) {
  for (int r = 0; r < 3; ++r) {
    std::vector<float> y;
    ASSERT_TRUE(run(session, names, feeds, shapes, y).ok());
    ASSERT_EQ(y.size(), expected.size());
    for (size_t i = 0; i < y.size(); ++i)
      EXPECT_NEAR(y[i], expected[i], 1e-6f) << "run " << r << ", element " << i;
  }
  EXPECT_EQ(session.memory_plan_stats().planned_runs, 3u);
}

std::vector<float> ramp(size_t n) {
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i) x[i] = float(i % 5) - 2.0f;
  return x;
}

// Neg's and Relu's results go straight into the Concat's output (each 16 floats, so both
// start on a 64-byte boundary); the graph input between them is copied. The plan stays
// the predicted one run after run.
TEST(ConcatPlacement, ProducedInputsAreWrittenIntoTheConcatOutput) {
  auto session = make_session({{"Neg", {"x"}, {"a"}, "neg"},
                               {"Relu", {"x"}, {"b"}, "relu"},
                               {"Concat", {"a", "x", "b"}, {"c"}, "concat", {{"axis", 0}}},
                               {"Exp", {"c"}, {"y"}, "exp"}},
                              {"x"}, {{16}});
  ASSERT_TRUE(session);
  EXPECT_EQ(placed_values(*session), (std::vector<std::string>{"a", "b"}));
  std::vector<std::vector<float>> x = {ramp(16)};
  std::vector<float> expected;
  for (float v : x[0]) expected.push_back(std::exp(-v));
  for (float v : x[0]) expected.push_back(std::exp(v));
  for (float v : x[0]) expected.push_back(std::exp(std::max(v, 0.0f)));
  for (int r = 0; r < 3; ++r) {
    std::vector<float> y;
    ASSERT_TRUE(run(*session, {"x"}, x, {Shape{16}}, y).ok());
    EXPECT_EQ(y, expected) << "run " << r;
  }
  const Session::MemoryPlanStats stats = session->memory_plan_stats();
  EXPECT_TRUE(stats.predicted) << stats.not_predicted_why;
  EXPECT_EQ(stats.planned_runs, 3u);
}

// Only n (which Abs reads too), m and q qualify. Not placed: a Concat whose inputs
// interleave in its output (axis 1 of [2, 16]: a, b), an input whose place is off the
// 64-byte alignment (r, after 3 floats), anything in a Concat that is a graph output (y;
// its inputs are Flatten views besides). The results are those of plain copies.
TEST(ConcatPlacement, OnlyContiguousAlignedInputsArePlaced) {
  auto session = make_session({{"Neg", {"x"}, {"a"}, "neg"},
                               {"Relu", {"x"}, {"b"}, "relu"},
                               {"Concat", {"a", "b"}, {"c"}, "interleaved", {{"axis", 1}}},
                               {"Sigmoid", {"x"}, {"n"}, "sigmoid"},
                               {"Abs", {"n"}, {"k"}, "abs"},
                               {"Neg", {"x"}, {"m"}, "neg_m"},
                               {"Concat", {"n", "m"}, {"d"}, "rows", {{"axis", 0}}},
                               {"Neg", {"z"}, {"q"}, "neg_z"},
                               {"Relu", {"z"}, {"r"}, "relu_z"},
                               {"Concat", {"q", "r"}, {"e"}, "unaligned", {{"axis", 0}}},
                               {"Flatten", {"c"}, {"fc"}, "flatten_c", {{"axis", 0}}},
                               {"Flatten", {"d"}, {"fd"}, "flatten_d", {{"axis", 0}}},
                               {"Flatten", {"k"}, {"fk"}, "flatten_k", {{"axis", 0}}},
                               {"Flatten", {"e"}, {"fe"}, "flatten_e", {{"axis", 0}}},
                               {"Concat", {"fc", "fd", "fk", "fe"}, {"y"}, "out", {{"axis", 1}}}},
                              {"x", "z"}, {{2, 16}, {3}});
  ASSERT_TRUE(session);
  EXPECT_EQ(placed_values(*session), (std::vector<std::string>{"n", "m", "q"}));
  std::vector<std::vector<float>> feeds = {ramp(32), {0.5f, -1.5f, 2.0f}};
  const std::vector<float>& x = feeds[0];
  const std::vector<float>& z = feeds[1];
  const auto sigmoid = [](float v) { return 1.0f / (1.0f + std::exp(-v)); };
  std::vector<float> expected;
  for (int row = 0; row < 2; ++row) {  // c = [-x | relu(x)] by rows
    for (int j = 0; j < 16; ++j) expected.push_back(-x[size_t(row * 16 + j)]);
    for (int j = 0; j < 16; ++j) expected.push_back(std::max(x[size_t(row * 16 + j)], 0.0f));
  }
  for (float v : x) expected.push_back(sigmoid(v));  // d = [n ; m]
  for (float v : x) expected.push_back(-v);
  for (float v : x) expected.push_back(std::fabs(sigmoid(v)));  // k
  for (float v : z) expected.push_back(-v);                     // e = [q ; r]
  for (float v : z) expected.push_back(std::max(v, 0.0f));
  expect_planned_runs_give(*session, {"x", "z"}, feeds, {Shape{2, 16}, Shape{3}}, expected);
}

// DenseNet's chain: c1 (read by Sigmoid too) is placed in c2, so a and b, placed in c1,
// go straight to their places in c2's block, and no Concat copies anything.
TEST(ConcatPlacement, AConcatPlacedInAnotherTakesItsInputsAlong) {
  auto session = make_session({{"Neg", {"x"}, {"a"}, "neg"},
                               {"Relu", {"x"}, {"b"}, "relu"},
                               {"Concat", {"a", "b"}, {"c1"}, "c1", {{"axis", 0}}},
                               {"Sigmoid", {"c1"}, {"s"}, "sigmoid"},
                               {"Exp", {"x"}, {"e"}, "exp"},
                               {"Concat", {"c1", "e"}, {"c2"}, "c2", {{"axis", 0}}},
                               {"Neg", {"c2"}, {"n2"}, "neg_c2"},
                               {"Concat", {"s", "n2"}, {"y"}, "out", {{"axis", 0}}}},
                              {"x"}, {{16}});
  ASSERT_TRUE(session);
  const ExecutableGraph& plan = session->plan();
  std::map<std::string, std::pair<std::string, size_t>> places;  // value: (Concat, offset)
  for (size_t s = 0; s < plan.placement_of_slot.size(); ++s) {
    if (plan.placement_of_slot[s] < 0) continue;
    const ConcatPlacement& p = plan.concat_placements[size_t(plan.placement_of_slot[s])];
    places[plan.slots[s].name] = {plan.slots[size_t(p.concat_slot)].name, p.offset};
  }
  using Places = std::map<std::string, std::pair<std::string, size_t>>;
  EXPECT_EQ(places,
            (Places{{"a", {"c2", 0}}, {"b", {"c2", 64}}, {"c1", {"c2", 0}}, {"e", {"c2", 128}}}));
  std::vector<std::vector<float>> x = {ramp(16)};
  std::vector<float> c1;
  for (float v : x[0]) c1.push_back(-v);
  for (float v : x[0]) c1.push_back(std::max(v, 0.0f));
  std::vector<float> expected;
  for (float v : c1) expected.push_back(1.0f / (1.0f + std::exp(-v)));
  for (float v : c1) expected.push_back(-v);
  for (float v : x[0]) expected.push_back(-std::exp(v));
  expect_planned_runs_give(*session, {"x"}, x, {Shape{16}}, expected);
}

// Declared dims whose sizes pass the session's tensor limits (here past int64 even) place
// nothing: the sizes are checked before any offset is summed, and the run's ordinary path
// is left to report them.
TEST(ConcatPlacement, AbsurdSizesPlaceNothing) {
  const int64_t huge = int64_t(1) << 31;
  const std::string bytes =
      testing::build_model({{"Neg", {"x"}, {"a"}, "neg"},
                            {"Relu", {"x"}, {"b"}, "relu"},
                            {"Concat", {"a", "b"}, {"c"}, "concat", {{"axis", 0}}},
                            {"Neg", {"c"}, {"y"}, "neg_c"}},
                           {"x"}, {"y"}, {}, 17, 8, {{huge, huge, 8}});
  auto session = Session::create_from_bytes(bytes.data(), bytes.size(), {});
  ASSERT_TRUE(session.ok()) << session.status().message();
  EXPECT_TRUE(placed_values(**session).empty());
  EXPECT_FALSE((*session)->memory_plan_stats().predicted);
}

// Gather fails on an index out of range after Neg and Relu have written into the Concat's
// block: the run reports the error, the block goes back, and the next runs are right.
TEST(ConcatPlacement, ARunFailingBeforeTheConcatLeavesLaterRunsRight) {
  auto session = make_session({{"Neg", {"x"}, {"a"}, "neg"},
                               {"Relu", {"x"}, {"b"}, "relu"},
                               {"Cast", {"i"}, {"idx"}, "cast", {{"to", 7}}},
                               {"Gather", {"x", "idx"}, {"g"}, "gather"},
                               {"Concat", {"a", "b", "g"}, {"c"}, "concat", {{"axis", 0}}},
                               {"Neg", {"c"}, {"y"}, "neg_c"}},
                              {"x", "i"}, {{16}, {3}});
  ASSERT_TRUE(session);
  EXPECT_EQ(placed_values(*session), (std::vector<std::string>{"a", "b", "g"}));
  std::vector<std::string> order;
  for (const Step& step : session->plan().steps) order.push_back(step.node->name);
  ASSERT_EQ(order, (std::vector<std::string>{"neg", "relu", "cast", "gather", "concat", "neg_c"}));
  std::vector<std::vector<float>> good = {ramp(16), {1, 2, 3}};
  std::vector<std::vector<float>> bad = {ramp(16), {1, 20, 3}};
  std::vector<float> expected;
  for (float v : good[0]) expected.push_back(v);
  for (float v : good[0]) expected.push_back(-std::max(v, 0.0f));
  for (float i : good[1]) expected.push_back(-good[0][size_t(i)]);
  const std::vector<Shape> shapes = {Shape{16}, Shape{3}};
  for (int r = 0; r < 3; ++r) {
    std::vector<float> y;
    const Status failed = run(*session, {"x", "i"}, bad, shapes, y);
    EXPECT_FALSE(failed.ok());
    EXPECT_NE(failed.message().find("gather"), std::string::npos) << failed.message();
    ASSERT_TRUE(run(*session, {"x", "i"}, good, shapes, y).ok());
    EXPECT_EQ(y, expected) << "run " << r;
  }
}

}  // namespace
}  // namespace nxrt
