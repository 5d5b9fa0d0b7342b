// A second execution provider, defined only here, plugged into a session without
// touching the planner: it takes Relu and Add on its own "device" (host memory under
// another name, so the planner must put copy steps where values cross to it and back).
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>

#include "model_builder.h"
#include "runtime/session.h"

namespace nxrt {
namespace {

using testing::build_model;

std::atomic<int> g_test_kernel_runs{0};
std::atomic<int> g_copies{0};

class CopyKernel final : public Kernel {
 public:
  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, x.shape()));
    std::memcpy(y->raw(), x.raw(), x.nbytes());
    ++g_copies;
    return Status();
  }
};

// Relu, or Add of two tensors of one shape, on floats.
class TestKernel final : public Kernel {
 public:
  explicit TestKernel(bool add) : add_(add) {}
  Status compute(KernelContext& ctx) const override {
    const Tensor& a = *ctx.input(0);
    if (add_ && ctx.input(1)->shape() != a.shape())
      return invalid_argument("the test provider adds tensors of one shape only");
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, a.shape()));
    const float* pa = a.data<float>();
    float* py = y->data<float>();
    for (int64_t i = 0; i < a.numel(); ++i)
      py[i] = add_ ? pa[i] + ctx.input(1)->data<float>()[i] : (pa[i] > 0.0f ? pa[i] : 0.0f);
    ++g_test_kernel_runs;
    return Status();
  }

 private:
  bool add_;
};

class TestProvider final : public ExecutionProvider {
 public:
  std::string_view name() const override { return "TestExecutionProvider"; }
  std::string_view device() const override { return "test-device"; }
  bool supports(const ir::Node& node, int64_t, std::span<const DataType> types) const override {
    if (!node.domain.empty() || (node.op_type != "Relu" && node.op_type != "Add")) return false;
    for (DataType t : types)
      if (t != DataType::kFloat) return false;
    return true;
  }
  Expected<KernelPtr> create_kernel(KernelInit& init) const override {
    init.set_all_outputs(DataType::kFloat);
    return KernelPtr(std::make_unique<TestKernel>(init.node.op_type == "Add"));
  }
  Expected<KernelPtr> create_copy_kernel(bool) const override {
    return KernelPtr(std::make_unique<CopyKernel>());
  }
};

// x, z -> Relu(x) = r -> Add(r, z) = s -> Sigmoid(s) = y; r is an output too.
std::string relu_add_sigmoid() {
  return build_model({{"Relu", {"x"}, {"r"}, "relu"},
                      {"Add", {"r", "z"}, {"s"}, "add"},
                      {"Sigmoid", {"s"}, {"y"}, "sigmoid"}},
                     {"x", "z"}, {"y", "r"});
}

std::vector<std::vector<float>> run(const Session& session, std::vector<float> x,
                                    std::vector<float> z) {
  const Shape shape{2, 3};
  std::vector<Value> feeds = {Tensor(DataType::kFloat, shape, x.data()),
                              Tensor(DataType::kFloat, shape, z.data())};
  std::vector<std::string> names = {"x", "z"};
  std::vector<Value> outputs;
  Status st = session.run(names, feeds, {}, outputs);
  EXPECT_TRUE(st.ok()) << st.message();
  std::vector<std::vector<float>> out;
  for (const Value& v : outputs)
    out.emplace_back(v.tensor.data<float>(), v.tensor.data<float>() + v.tensor.numel());
  return out;
}

TEST(Providers, TestProviderTakesItsOpsWithCopiesBetweenDevices) {
  const std::string bytes = relu_add_sigmoid();
  SessionConfig config;
  config.enable_profiling = true;
  config.providers = {std::make_shared<TestProvider>()};
  auto session = Session::create_from_bytes(bytes.data(), bytes.size(), config);
  ASSERT_TRUE(session.ok()) << session.status().message();

  // Each input goes to the device once, Relu and Add run there, s comes back for the
  // CPU's Sigmoid and r comes back because the caller reads it.
  EXPECT_EQ(describe_plan((*session)->plan()),
            "0  MemcpyFromHost 'x_to_test-device'  [TestExecutionProvider]  x -> x@test-device\n"
            "1  Relu 'relu'  [TestExecutionProvider]  x@test-device -> r\n"
            "2  MemcpyFromHost 'z_to_test-device'  [TestExecutionProvider]  z -> z@test-device\n"
            "3  Add 'add'  [TestExecutionProvider]  r, z@test-device -> s\n"
            "4  MemcpyToHost 's_to_host'  [TestExecutionProvider]  s -> s@cpu\n"
            "5  Sigmoid 'sigmoid'  [CPUExecutionProvider]  s@cpu -> y\n"
            "6  MemcpyToHost 'r_to_host'  [TestExecutionProvider]  r -> r@cpu\n");

  const std::vector<float> x = {-1.0f, 0.5f, 2.0f, -3.0f, 0.0f, 1.5f};
  const std::vector<float> z = {0.25f, -0.5f, 1.0f, 2.0f, -1.0f, 0.0f};
  g_test_kernel_runs = g_copies = 0;
  const auto got = run(**session, x, z);
  EXPECT_EQ(g_test_kernel_runs.load(), 2);
  EXPECT_EQ(g_copies.load(), 4);

  // The same model on the CPU alone gives the same outputs.
  auto cpu_only = Session::create_from_bytes(bytes.data(), bytes.size(), SessionConfig{});
  ASSERT_TRUE(cpu_only.ok());
  EXPECT_EQ(describe_plan((*cpu_only)->plan()).find("Memcpy"), std::string::npos);
  EXPECT_EQ(got, run(**cpu_only, x, z));

  const std::string profile = (*session)->take_profile_json();
  EXPECT_NE(profile.find("\"op_name\":\"Relu\",\"provider\":\"TestExecutionProvider\""),
            std::string::npos);
  EXPECT_NE(profile.find("\"op_name\":\"Sigmoid\",\"provider\":\"CPUExecutionProvider\""),
            std::string::npos);
}

TEST(Providers, NodeNoProviderTakesNamesTheOp) {
  // The CPU provider is always last; a node neither takes reports the CPU's reason.
  const std::string bytes = build_model({{"NoSuchOp", {"x"}, {"y"}, "n"}}, {"x"}, {"y"});
  SessionConfig config;
  config.providers = {std::make_shared<TestProvider>()};
  auto session = Session::create_from_bytes(bytes.data(), bytes.size(), config);
  ASSERT_FALSE(session.ok());
  EXPECT_NE(session.status().message().find("op 'NoSuchOp' (domain 'ai.onnx', opset 17) is not "
                                            "implemented by nxrt"),
            std::string::npos)
      << session.status().message();
}

}  // namespace
}  // namespace nxrt
