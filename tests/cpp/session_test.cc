#include "runtime/session.h"

#include <gtest/gtest.h>

#include "onnx/decoder.h"

namespace nxrt {
namespace {

std::string node_case(const std::string& name) {
  return std::string(NXRT_SHARED_DIR) + "/onnx-backend-data/node/" + name;
}

TEST(Decoder, LoadsABackendModel) {
  auto model = onnx::load_model_file(node_case("test_add") + "/model.onnx");
  ASSERT_TRUE(model.ok()) << model.status().message();
  EXPECT_EQ((*model)->graph.nodes.size(), 1u);
  EXPECT_EQ((*model)->graph.nodes[0].op_type, "Add");
  EXPECT_EQ((*model)->graph.inputs.size(), 2u);
}

TEST(Decoder, RejectsGarbageAndMissingFiles) {
  const char garbage[] = "\xff\xff\xff\xff not a model";
  auto bad = onnx::decode_model(garbage, sizeof(garbage), nullptr, "");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidProtobuf);
  auto missing = onnx::load_model_file("/nonexistent/model.onnx");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNoSuchFile);
}

TEST(Session, RunsAdd) {
  auto session = Session::create_from_file(node_case("test_add") + "/model.onnx", {});
  ASSERT_TRUE(session.ok()) << session.status().message();
  std::vector<float> x(60, 1.5f), y(60, 2.0f);
  std::vector<Value> feeds = {Tensor(DataType::kFloat, Shape{3, 4, 5}, x.data()),
                              Tensor(DataType::kFloat, Shape{3, 4, 5}, y.data())};
  std::vector<std::string> names = {"x", "y"};
  std::vector<Value> outputs;
  Status s = (*session)->run(names, feeds, {}, outputs);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(outputs.size(), 1u);
  EXPECT_EQ(outputs[0].tensor.shape(), (Shape{3, 4, 5}));
  EXPECT_FLOAT_EQ(outputs[0].tensor.data<float>()[7], 3.5f);
}

TEST(Session, ReportsWrongDtypeAndMissingInput) {
  auto session = Session::create_from_file(node_case("test_add") + "/model.onnx", {});
  ASSERT_TRUE(session.ok());
  std::vector<double> x(60, 1.0);
  std::vector<float> y(60, 1.0f);
  std::vector<Value> feeds = {Tensor(DataType::kDouble, Shape{3, 4, 5}, x.data()),
                              Tensor(DataType::kFloat, Shape{3, 4, 5}, y.data())};
  std::vector<std::string> names = {"x", "y"};
  std::vector<Value> outputs;
  Status s = (*session)->run(names, feeds, {}, outputs);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("tensor(double)"), std::string::npos);
  std::vector<std::string> one = {"y"};
  s = (*session)->run(one, std::span(feeds).subspan(1), {}, outputs);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("'x'"), std::string::npos);
}

}  // namespace
}  // namespace nxrt
