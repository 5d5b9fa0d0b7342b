// Graph passes: what each one rewrites, what it must leave alone, and that the rewritten
// model computes what the original does.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "ep/cpu/vmath/nchwc.h"
#include "model_builder.h"
#include "onnx/decoder.h"
#include "optimizer/pass.h"
#include "runtime/session.h"

namespace nxrt {
namespace {

using testing::build_model;
using testing::InitSpec;
using testing::ramp;

std::shared_ptr<ir::Model> optimized(const std::string& bytes,
                                     optimizer::OptimizerOptions options = {}) {
  auto model = onnx::decode_model(bytes.data(), bytes.size(), nullptr, "");
  EXPECT_TRUE(model.ok()) << model.status().message();
  Status st = optimizer::optimize(**model, options, default_limits());
  EXPECT_TRUE(st.ok()) << st.message();
  return *model;
}

std::vector<std::string> op_types(const ir::Model& model) {
  std::vector<std::string> out;
  for (const ir::Node& n : model.graph.nodes) out.push_back(n.op_type);
  return out;
}

// Runs the model on x at an optimization level and returns output 0.
std::vector<float> run_at(const std::string& bytes, int level, const std::vector<float>& x,
                          const Shape& shape) {
  SessionConfig config;
  config.graph_optimization_level = level;
  auto session = Session::create_from_bytes(bytes.data(), bytes.size(), config);
  EXPECT_TRUE(session.ok()) << session.status().message();
  if (!session.ok()) return {};
  std::vector<Value> feeds = {Tensor(DataType::kFloat, shape, const_cast<float*>(x.data()))};
  std::vector<std::string> names = {"x"};
  std::vector<Value> outputs;
  Status st = (*session)->run(names, feeds, {}, outputs);
  EXPECT_TRUE(st.ok()) << st.message();
  const Tensor& y = outputs.at(0).tensor;
  return std::vector<float>(y.data<float>(), y.data<float>() + y.numel());
}

// |a - b| within 1e-5 + 1e-4 |b|, plus `of_scale` times the largest |b| (for algorithms
// whose rounding follows the output's scale rather than each value: Winograd).
void expect_close(const std::vector<float>& a, const std::vector<float>& b, float of_scale = 0) {
  ASSERT_EQ(a.size(), b.size());
  float scale = 0;
  for (float v : b) scale = std::max(scale, std::fabs(v));
  for (size_t i = 0; i < a.size(); ++i)
    EXPECT_NEAR(a[i], b[i], 1e-5f + 1e-4f * std::fabs(b[i]) + of_scale * scale) << i;
}

// x [1, 3, 5, 5] -> Conv (4 filters 3x3, bias) -> BatchNormalization -> Relu -> y.
std::string conv_bn_relu(bool weights_are_inputs = false) {
  std::vector<InitSpec> inits = {
      {"w", {4, 3, 3, 3}, ramp(108, 0.37f, 0.0f)}, {"b", {4}, {0.1f, -0.2f, 0.3f, 0.0f}},
      {"scale", {4}, {1.5f, 0.5f, -1.0f, 2.0f}},   {"beta", {4}, {0.0f, 0.25f, -0.5f, 1.0f}},
      {"mean", {4}, {0.2f, -0.1f, 0.0f, 0.4f}},    {"var", {4}, {1.0f, 0.5f, 2.0f, 0.25f}}};
  std::vector<std::string> inputs = {"x"};
  if (weights_are_inputs) inputs.push_back("w");  // overridable: not a constant
  return build_model({{"Conv", {"x", "w", "b"}, {"c"}, "conv"},
                      {"BatchNormalization", {"c", "scale", "beta", "mean", "var"}, {"n"}, "bn"},
                      {"Relu", {"n"}, {"y"}, "relu"}},
                     inputs, {"y"}, inits);
}

TEST(Optimizer, FoldsBatchNormIntoConvAndFusesTheActivation) {
  const std::string bytes = conv_bn_relu();
  auto model = optimized(bytes);
  EXPECT_EQ(op_types(*model), std::vector<std::string>{"FusedConv"});
  EXPECT_EQ(model->graph.nodes[0].domain, "com.microsoft");
  EXPECT_EQ(model->graph.nodes[0].outputs[0], "y");
  EXPECT_EQ(model->opset_imports.at("com.microsoft"), 1);
  const std::vector<float> x = ramp(75, 0.11f, 0.2f);
  expect_close(run_at(bytes, 99, x, Shape{1, 3, 5, 5}), run_at(bytes, 0, x, Shape{1, 3, 5, 5}));
}

// x [2, 8, 9, 11] through the ops the layout pass blocks: a stem convolution on the plain
// input, a Winograd one with asymmetric padding, a ceil-mode max pool, a strided
// depthwise convolution, a 1x1 with a partial last block, a global average pool.
std::string blocked_chain() {
  std::vector<InitSpec> inits = {{"w1", {32, 8, 3, 3}, ramp(32 * 8 * 9, 0.37f, 0.0f)},
                                 {"b1", {32}, ramp(32, 0.5f, 0.1f)},
                                 {"w2", {64, 32, 3, 3}, ramp(64 * 32 * 9, 0.13f, -0.01f)},
                                 {"w3", {64, 1, 3, 3}, ramp(64 * 9, 0.71f, 0.05f)},
                                 {"w4", {40, 64, 1, 1}, ramp(40 * 64, 0.29f, 0.0f)},
                                 {"b4", {40}, ramp(40, 0.3f, -0.2f)}};
  return build_model({{"Conv", {"x", "w1", "b1"}, {"c1"}, "c1", {}, {{"pads", {1, 1, 1, 1}}}},
                      {"Relu", {"c1"}, {"r1"}, "r1"},
                      {"Conv", {"r1", "w2"}, {"c2"}, "c2", {}, {{"pads", {1, 0, 1, 2}}}},
                      {"Relu", {"c2"}, {"r2"}, "r2"},
                      {"MaxPool",
                       {"r2"},
                       {"p"},
                       "p",
                       {{"ceil_mode", 1}},
                       {{"kernel_shape", {3, 3}}, {"strides", {2, 2}}}},
                      {"Conv",
                       {"p", "w3"},
                       {"c3"},
                       "c3",
                       {{"group", 64}},
                       {{"pads", {1, 1, 1, 1}}, {"strides", {2, 2}}}},
                      {"Conv", {"c3", "w4", "b4"}, {"y"}, "c4"},
                      {"GlobalAveragePool", {"y"}, {"g"}, "g"}},
                     {"x"}, {"y", "g"}, inits);
}

TEST(Optimizer, BlockedLayoutComputesWhatThePlainOneDoes) {
  const std::string bytes = blocked_chain();
  auto model = optimized(bytes);
  const std::vector<std::string> ops = op_types(*model);
  if (vmath::nchwc_available()) {
    EXPECT_EQ(std::count(ops.begin(), ops.end(), "NchwcConv"), 4);
    EXPECT_EQ(std::count(ops.begin(), ops.end(), "NchwcToNchw"), 2);  // y and g
  }
  const std::vector<float> x = ramp(2 * 8 * 9 * 11, 0.11f, 0.2f);
  // The 32 -> 64 3x3 convolution takes Winograd's F(4x4, 3x3), whose rounding reaches a few
  // 1e-5 of the output's scale (tests/python/test_constant_weights.py measures it).
  expect_close(run_at(bytes, 99, x, Shape{2, 8, 9, 11}), run_at(bytes, 0, x, Shape{2, 8, 9, 11}),
               5e-5f);
}

TEST(Optimizer, LevelsAndDisabledPassesChooseWhatRuns) {
  const std::string bytes = conv_bn_relu();
  optimizer::OptimizerOptions basic;
  basic.level = 1;
  EXPECT_EQ(op_types(*optimized(bytes, basic)), (std::vector<std::string>{"Conv", "Relu"}));
  optimizer::OptimizerOptions off;
  off.level = 0;
  EXPECT_EQ(op_types(*optimized(bytes, off)),
            (std::vector<std::string>{"Conv", "BatchNormalization", "Relu"}));
  optimizer::OptimizerOptions no_bn;
  no_bn.disabled = {"fuse_conv_batchnorm", "fuse_conv_batchnorm_runtime"};
  // The BatchNormalization no Conv took, and its Relu: one ChannelAffine.
  EXPECT_EQ(op_types(*optimized(bytes, no_bn)),
            (std::vector<std::string>{"Conv", "ChannelAffine"}));
  no_bn.disabled.insert("fuse_batchnorm_affine");
  EXPECT_EQ(op_types(*optimized(bytes, no_bn)),
            (std::vector<std::string>{"Conv", "BatchNormalization", "Relu"}));
  // With the constant fold off, the run-time form takes the BatchNormalization.
  optimizer::OptimizerOptions no_fold;
  no_fold.disabled = {"fuse_conv_batchnorm"};
  auto runtime = optimized(bytes, no_fold);
  EXPECT_EQ(op_types(*runtime), std::vector<std::string>{"FusedConv"});
  EXPECT_EQ(runtime->graph.nodes[0].domain, "nxrt");
  EXPECT_EQ(runtime->graph.nodes[0].inputs.size(), 8u);

  auto model = onnx::decode_model(bytes.data(), bytes.size(), nullptr, "");
  ASSERT_TRUE(model.ok());
  optimizer::OptimizerOptions unknown;
  unknown.disabled = {"no_such_pass"};
  Status st = optimizer::optimize(**model, unknown, default_limits());
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("no_such_pass"), std::string::npos);
}

TEST(Optimizer, LeavesOverridableWeightsAndSharedValuesAlone) {
  // W is a graph input too (IR 8): callers may feed another W, so BN cannot fold into it;
  // at the basic level it stays, above it the run-time form fuses it (same results).
  const std::string overridable = conv_bn_relu(true);
  optimizer::OptimizerOptions basic;
  basic.level = 1;
  EXPECT_EQ(op_types(*optimized(overridable, basic)),
            (std::vector<std::string>{"Conv", "BatchNormalization", "Relu"}));
  auto model = optimized(overridable);
  EXPECT_EQ(op_types(*model), std::vector<std::string>{"FusedConv"});
  EXPECT_EQ(model->graph.nodes[0].domain, "nxrt");
  const std::vector<float> x = ramp(75, 0.11f, 0.2f);
  expect_close(run_at(overridable, 99, x, Shape{1, 3, 5, 5}),
               run_at(overridable, 0, x, Shape{1, 3, 5, 5}));

  // The conv's output is also a graph output: fusing would lose it.
  const std::string shared =
      build_model({{"Conv", {"x", "w"}, {"c"}, "conv"}, {"Relu", {"c"}, {"y"}, "relu"}}, {"x"},
                  {"y", "c"}, {{"w", {2, 1, 1, 1}, {1.0f, -1.0f}}});
  EXPECT_EQ(op_types(*optimized(shared)), (std::vector<std::string>{"Conv", "Relu"}));
}

TEST(Optimizer, RemovesIdentitiesAndDeadNodes) {
  const std::string bytes = build_model({{"Neg", {"x"}, {"a"}, "neg"},
                                         {"Identity", {"a"}, {"b"}, "id1"},
                                         {"Identity", {"b"}, {"c"}, "id2"},
                                         {"Relu", {"c"}, {"y"}, "relu"},
                                         {"Exp", {"a"}, {"unused"}, "dead"},
                                         {"Identity", {"y"}, {"out"}, "kept_as_output"}},
                                        {"x"}, {"out"});
  auto model = optimized(bytes);
  EXPECT_EQ(op_types(*model), (std::vector<std::string>{"Neg", "Relu", "Identity"}));
  EXPECT_EQ(model->graph.nodes[1].inputs[0], "a");
  const std::vector<float> x = {-1.0f, 2.0f, -3.0f};
  EXPECT_EQ(run_at(bytes, 99, x, Shape{3}), (std::vector<float>{1.0f, 0.0f, 3.0f}));
}

TEST(Optimizer, CancelsAndComposesTransposes) {
  using Perm = std::vector<std::pair<std::string, std::vector<int64_t>>>;
  const Shape shape{2, 3, 4};
  const std::vector<float> x = ramp(24, 0.37f, 0.1f);
  // A pair whose permutations undo each other: both go, Relu reads x.
  const std::string pair =
      build_model({{"Transpose", {"x"}, {"a"}, "t1", {}, Perm{{"perm", {1, 2, 0}}}},
                   {"Transpose", {"a"}, {"b"}, "t2", {}, Perm{{"perm", {2, 0, 1}}}},
                   {"Relu", {"b"}, {"y"}, "relu"}},
                  {"x"}, {"y"});
  auto model = optimized(pair);
  EXPECT_EQ(op_types(*model), (std::vector<std::string>{"Relu"}));
  EXPECT_EQ(model->graph.nodes[0].inputs[0], "x");
  EXPECT_EQ(run_at(pair, 99, x, shape), run_at(pair, 0, x, shape));
  // Three in a row compose into one; the first stays for its other reader.
  const std::string chain =
      build_model({{"Transpose", {"x"}, {"a"}, "t1", {}, Perm{{"perm", {0, 2, 1}}}},
                   {"Transpose", {"a"}, {"b"}, "t2", {}, Perm{{"perm", {1, 0, 2}}}},
                   {"Transpose", {"b"}, {"c"}, "t3", {}, Perm{{"perm", {2, 1, 0}}}},
                   {"Neg", {"a"}, {"n"}, "neg"}},
                  {"x"}, {"c", "n"});
  model = optimized(chain);
  EXPECT_EQ(op_types(*model), (std::vector<std::string>{"Transpose", "Transpose", "Neg"}));
  EXPECT_EQ(model->graph.nodes[1].inputs[0], "x");
  EXPECT_EQ(model->graph.nodes[1].find_attribute("perm")->ints, (std::vector<int64_t>{1, 0, 2}));
  EXPECT_EQ(run_at(chain, 99, x, shape), run_at(chain, 0, x, shape));
  // Two default reversals cancel whatever the rank; at a graph output an Identity keeps
  // the name. A reversal beside an explicit permutation is left alone (rank unknown).
  const std::string reversals =
      build_model({{"Transpose", {"x"}, {"a"}, "t1"},
                   {"Transpose", {"a"}, {"y"}, "t2"},
                   {"Transpose", {"x"}, {"b"}, "t3"},
                   {"Transpose", {"b"}, {"z"}, "t4", {}, Perm{{"perm", {2, 1, 0}}}}},
                  {"x"}, {"y", "z"});
  model = optimized(reversals);
  EXPECT_EQ(op_types(*model), (std::vector<std::string>{"Identity", "Transpose", "Transpose"}));
  EXPECT_EQ(run_at(reversals, 99, x, shape), x);
}

TEST(Optimizer, LeavesInvalidTransposesToTheKernel) {
  using Perm = std::vector<std::pair<std::string, std::vector<int64_t>>>;
  const std::string bad =
      build_model({{"Transpose", {"x"}, {"a"}, "t1", {}, Perm{{"perm", {0, 0, 1}}}},
                   {"Transpose", {"a"}, {"y"}, "t2", {}, Perm{{"perm", {0, 2, 1}}}}},
                  {"x"}, {"y"});
  EXPECT_EQ(op_types(*optimized(bad)), (std::vector<std::string>{"Transpose", "Transpose"}));
  SessionConfig config;
  auto session = Session::create_from_bytes(bad.data(), bad.size(), config);
  if (session.ok()) {
    std::vector<float> x(24, 1.0f);
    std::vector<Value> feeds = {Tensor(DataType::kFloat, Shape{2, 3, 4}, x.data())};
    std::vector<std::string> names = {"x"};
    std::vector<Value> outputs;
    const Status st = (*session)->run(names, feeds, {}, outputs);
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.message().find("t1"), std::string::npos) << st.message();
  } else {
    EXPECT_NE(session.status().message().find("t1"), std::string::npos)
        << session.status().message();
  }
}

}  // namespace
}  // namespace nxrt
