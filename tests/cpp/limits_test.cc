// Limits: parsing of the "nxrt.limits.*" session config entries and their enforcement in
// tensor allocation, decoding, function inlining and planning.
#include "core/limits.h"

#include <gtest/gtest.h>

#include <protozero/pbf_writer.hpp>

#include "core/tensor.h"
#include "model_builder.h"
#include "onnx/decoder.h"
#include "runtime/session.h"

namespace nxrt {
namespace {

TEST(Limits, DefaultsAndParsing) {
  auto none = parse_limits({{"session.other_key", "x"}});
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->max_graph_depth, 64);
  EXPECT_EQ(none->max_session_memory_bytes, 0);

  auto set = parse_limits(
      {{"nxrt.limits.max_nodes", "12"}, {"nxrt.limits.max_session_memory_bytes", "4096"}});
  ASSERT_TRUE(set.ok());
  EXPECT_EQ(set->max_nodes, 12);
  EXPECT_EQ(set->max_session_memory_bytes, 4096);

  auto unknown = parse_limits({{"nxrt.limits.max_nodez", "1"}});
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(unknown.status().message().find("nxrt.limits.max_nodez"), std::string::npos);
  for (const char* bad : {"", "12a", "-1", "1e6", " 5", "99999999999999999999"}) {
    auto r = parse_limits({{"nxrt.limits.max_nodes", bad}});
    EXPECT_FALSE(r.ok()) << bad;
  }
}

TEST(Limits, TensorBytesAndElements) {
  Limits limits;
  limits.max_tensor_bytes = 1024;
  limits.max_tensor_elements = 100;
  EXPECT_TRUE(Tensor::allocate(DataType::kFloat, Shape{10, 10}, limits).ok());
  auto elems = Tensor::allocate(DataType::kUint8, Shape{101}, limits);
  ASSERT_FALSE(elems.ok());
  EXPECT_NE(elems.status().message().find("nxrt.limits.max_tensor_elements = 100"),
            std::string::npos);
  limits.max_tensor_elements = 1000;
  auto bytes = tensor_bytes(DataType::kDouble, Shape{129}, "output 'y'", limits);
  ASSERT_FALSE(bytes.ok());
  EXPECT_NE(bytes.status().message().find("output 'y'"), std::string::npos);
  EXPECT_NE(bytes.status().message().find("nxrt.limits.max_tensor_bytes = 1024"),
            std::string::npos);
  auto overflow = tensor_bytes(DataType::kFloat, Shape{int64_t(1) << 32, int64_t(1) << 32}, "t");
  ASSERT_FALSE(overflow.ok());
  EXPECT_NE(overflow.status().message().find("overflows"), std::string::npos);
}

// An If whose then-branch holds another If, `depth` levels deep.
std::string nested_if_graph(int depth) {
  std::string graph;
  protozero::pbf_writer g(graph);
  std::string node;
  {
    protozero::pbf_writer n(node);
    n.add_string(1, "c");
    n.add_string(2, "y");
    n.add_string(4, depth > 0 ? "If" : "Identity");
    if (depth > 0) {
      for (const char* branch : {"then_branch", "else_branch"}) {
        std::string attr;
        protozero::pbf_writer a(attr);
        a.add_string(1, branch);
        a.add_string(6, nested_if_graph(depth - 1));
        a.add_int64(20, 5);  // GRAPH
        n.add_string(5, attr);
      }
    }
  }
  g.add_string(1, node);
  return graph;
}

TEST(Limits, GraphDepthIsConfigurable) {
  std::string model;
  {
    protozero::pbf_writer m(model);
    m.add_int64(1, 8);
    m.add_string(7, nested_if_graph(10));
    std::string opset;
    protozero::pbf_writer o(opset);
    o.add_int64(2, 17);
    m.add_string(8, opset);
  }
  Limits limits;
  limits.max_graph_depth = 5;
  auto refused = onnx::decode_model(model.data(), model.size(), nullptr, "", limits);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("nxrt.limits.max_graph_depth = 5"), std::string::npos);
  limits.max_graph_depth = 10;
  EXPECT_TRUE(onnx::decode_model(model.data(), model.size(), nullptr, "", limits).ok());
}

TEST(Limits, NodesAndModelBytesThroughSessionConfig) {
  const std::string model = testing::build_model(
      {{"Relu", {"x"}, {"a"}}, {"Relu", {"a"}, {"b"}}, {"Relu", {"b"}, {"y"}}}, {"x"}, {"y"});
  SessionConfig config;
  EXPECT_TRUE(Session::create_from_bytes(model.data(), model.size(), config).ok());
  config.config_entries["nxrt.limits.max_nodes"] = "2";
  auto nodes = Session::create_from_bytes(model.data(), model.size(), config);
  ASSERT_FALSE(nodes.ok());
  EXPECT_NE(nodes.status().message().find("nxrt.limits.max_nodes = 2"), std::string::npos);
  config.config_entries.clear();
  config.config_entries["nxrt.limits.max_model_bytes"] = "16";
  auto bytes = Session::create_from_bytes(model.data(), model.size(), config);
  ASSERT_FALSE(bytes.ok());
  EXPECT_NE(bytes.status().message().find("nxrt.limits.max_model_bytes = 16"), std::string::npos);
  config.config_entries.clear();
  config.config_entries["nxrt.limits.max_graph_depth"] = "deep";
  EXPECT_EQ(Session::create_from_bytes(model.data(), model.size(), config).status().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace nxrt
