#include <gtest/gtest.h>

#include "ep/cpu/cpu_provider.h"
#include "model_builder.h"
#include "onnx/decoder.h"
#include "planner/plan.h"
#include "runtime/session.h"

namespace nxrt {
namespace {

using testing::build_model;

Expected<std::shared_ptr<ExecutableGraph>> plan(const std::string& bytes) {
  auto model = onnx::decode_model(bytes.data(), bytes.size(), nullptr, "");
  if (!model) return model.status();
  PlanOptions options;
  options.opset_imports = (*model)->opset_imports;
  options.providers = {cpu::cpu_provider()};
  // The plan keeps pointers into the model's nodes; keep the model alive for the test.
  static std::vector<std::shared_ptr<ir::Model>> keep;
  keep.push_back(*model);
  return plan_graph((*model)->graph, options, {}, {}, {});
}

TEST(Planner, OrdersNodesTopologicallyWhateverTheFileOrder) {
  const std::string bytes =
      build_model({{"Relu", {"a"}, {"y"}, "second"}, {"Neg", {"x"}, {"a"}, "first"}}, {"x"}, {"y"});
  auto g = plan(bytes);
  ASSERT_TRUE(g.ok()) << g.status().message();
  ASSERT_EQ((*g)->steps.size(), 2u);
  EXPECT_EQ((*g)->steps[0].node->name, "first");
  EXPECT_EQ((*g)->steps[1].node->name, "second");
}

TEST(Planner, ReleasesIntermediatesAfterLastUse) {
  const std::string bytes = build_model(
      {{"Neg", {"x"}, {"a"}, "n0"}, {"Relu", {"a"}, {"b"}, "n1"}, {"Add", {"a", "b"}, {"y"}, "n2"}},
      {"x"}, {"y"});
  auto g = plan(bytes);
  ASSERT_TRUE(g.ok()) << g.status().message();
  const auto& steps = (*g)->steps;
  EXPECT_TRUE(steps[0].release_after.empty());
  EXPECT_TRUE(steps[1].release_after.empty());
  EXPECT_EQ(steps[2].release_after.size(), 2u);  // a and b die at the Add
}

TEST(Planner, FoldsConstantSubgraphs) {
  const std::string bytes =
      build_model({{"Neg", {"w"}, {"nw"}, "fold_me"}, {"Add", {"x", "nw"}, {"y"}, "keep"}}, {"x"},
                  {"y"}, {{"w", {2}, {1.0f, 2.0f}}});
  auto g = plan(bytes);
  ASSERT_TRUE(g.ok()) << g.status().message();
  ASSERT_EQ((*g)->steps.size(), 1u);
  EXPECT_EQ((*g)->steps[0].node->name, "keep");
}

TEST(Planner, ReportsCyclesMissingInputsAndUnknownOps) {
  auto cycle = plan(
      build_model({{"Add", {"x", "b"}, {"a"}, "n1"}, {"Relu", {"a"}, {"b"}, "n2"}}, {"x"}, {"b"}));
  ASSERT_FALSE(cycle.ok());
  EXPECT_NE(cycle.status().message().find("cycle"), std::string::npos);
  auto missing = plan(build_model({{"Add", {"x", "ghost"}, {"y"}, "adder"}}, {"x"}, {"y"}));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kInvalidGraph);
  EXPECT_NE(missing.status().message().find("'ghost'"), std::string::npos);
  auto unknown = plan(build_model({{"NoSuchOp", {"x"}, {"y"}, "odd"}}, {"x"}, {"y"}));
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), StatusCode::kNotImplemented);
  EXPECT_NE(unknown.status().message().find("NoSuchOp"), std::string::npos);
}

TEST(Executor, WarmRunsReuseThePool) {
  const std::string bytes = build_model(
      {{"Neg", {"x"}, {"a"}, "n0"}, {"Relu", {"a"}, {"b"}, "n1"}, {"Neg", {"b"}, {"y"}, "n2"}},
      {"x"}, {"y"});
  auto session = Session::create_from_bytes(bytes.data(), bytes.size(), {});
  ASSERT_TRUE(session.ok()) << session.status().message();
  std::vector<float> x(1000, -1.0f);
  std::vector<Value> feeds = {Tensor(DataType::kFloat, Shape{1000}, x.data())};
  std::vector<std::string> names = {"x"};
  std::vector<Value> out;
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE((*session)->run(names, feeds, {}, out).ok());
    EXPECT_FLOAT_EQ(out[0].tensor.data<float>()[999], -1.0f);
  }
}

}  // namespace
}  // namespace nxrt

namespace nxrt {
namespace {

TEST(Executor, WritesBoundOutputsInPlace) {
  const std::string bytes = testing::build_model(
      {{"Neg", {"x"}, {"a"}, "n0"}, {"Relu", {"a"}, {"y"}, "n1"}}, {"x"}, {"y", "x"});
  auto session = Session::create_from_bytes(bytes.data(), bytes.size(), {});
  ASSERT_TRUE(session.ok()) << session.status().message();
  std::vector<float> x = {-1.0f, 2.0f, -3.0f}, y(3, 42.0f), x_copy(3, 0.0f);
  std::vector<Value> feeds = {Tensor(DataType::kFloat, Shape{3}, x.data())};
  std::vector<std::string> names = {"x"};
  const Tensor bound[] = {Tensor(DataType::kFloat, Shape{3}, y.data()),
                          Tensor(DataType::kFloat, Shape{3}, x_copy.data())};
  RunFlags flags;
  flags.bound_outputs = bound;
  std::vector<Value> out;
  ASSERT_TRUE((*session)->run(names, feeds, {}, out, flags).ok());
  EXPECT_EQ(out[0].tensor.raw(), y.data());
  EXPECT_EQ(y, (std::vector<float>{1.0f, 0.0f, 3.0f}));
  EXPECT_EQ(out[1].tensor.raw(), x_copy.data());  // a pass-through output is copied in
  EXPECT_EQ(x_copy, x);
  std::vector<float> wrong(4);
  const Tensor bad[] = {Tensor(DataType::kFloat, Shape{4}, wrong.data()), Tensor()};
  flags.bound_outputs = bad;
  Status s = (*session)->run(names, feeds, {}, out, flags);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("bound"), std::string::npos);
}

}  // namespace
}  // namespace nxrt

namespace nxrt {
namespace {

// LSTM packs constant W and R at prepare; the plan then keeps their shapes but frees the
// data, and runs give what the same LSTM gives with W and R fed as inputs.
TEST(Planner, FreesTheDataOfConstantsAKernelPacked) {
  std::vector<float> w(24), r(16);
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.05f * float(i % 7) - 0.1f;
  for (size_t i = 0; i < r.size(); ++i) r[i] = 0.03f * float(i % 5) - 0.05f;
  const testing::NodeSpec lstm{"LSTM", {"x", "W", "R"}, {"", "y_h"}, "cell", {{"hidden_size", 2}}};
  const std::string packed =
      testing::build_model({lstm}, {"x"}, {"y_h"}, {{"W", {1, 8, 3}, w}, {"R", {1, 8, 2}, r}});
  auto g = plan(packed);
  ASSERT_TRUE(g.ok()) << g.status().message();
  int constants_seen = 0;
  for (size_t s = 0; s < (*g)->slots.size(); ++s) {
    const std::string& name = (*g)->slots[s].name;
    if (name != "W" && name != "R") continue;
    const Tensor& c = (*g)->constants[s];
    ASSERT_TRUE(c.defined()) << name;
    EXPECT_EQ(c.shape(), name == "W" ? Shape({1, 8, 3}) : Shape({1, 8, 2}));
    EXPECT_EQ(c.raw(), nullptr) << name << " still holds its data";
    ++constants_seen;
  }
  EXPECT_EQ(constants_seen, 2);

  const std::string fed = testing::build_model({lstm}, {"x", "W", "R"}, {"y_h"});
  auto with_constants = Session::create_from_bytes(packed.data(), packed.size(), {});
  auto with_inputs = Session::create_from_bytes(fed.data(), fed.size(), {});
  ASSERT_TRUE(with_constants.ok()) << with_constants.status().message();
  ASSERT_TRUE(with_inputs.ok()) << with_inputs.status().message();
  std::vector<float> x = {0.5f, -1.0f, 2.0f, 0.25f, 0.75f, -0.5f};  // [2, 1, 3]
  const Tensor xt(DataType::kFloat, Shape{2, 1, 3}, x.data());
  std::vector<Value> a, b;
  const std::vector<std::string> x_name = {"x"}, all_names = {"x", "W", "R"};
  const std::vector<Value> x_feed = {xt};
  const std::vector<Value> all_feeds = {xt, Tensor(DataType::kFloat, Shape{1, 8, 3}, w.data()),
                                        Tensor(DataType::kFloat, Shape{1, 8, 2}, r.data())};
  ASSERT_TRUE((*with_constants)->run(x_name, x_feed, {}, a).ok());
  ASSERT_TRUE((*with_inputs)->run(all_names, all_feeds, {}, b).ok());
  ASSERT_EQ(a[0].tensor.numel(), 2);
  for (int i = 0; i < 2; ++i) {
    EXPECT_NEAR(a[0].tensor.data<float>()[i], b[0].tensor.data<float>()[i], 1e-6f);
    EXPECT_NE(a[0].tensor.data<float>()[i], 0.0f);
  }
}

}  // namespace
}  // namespace nxrt
