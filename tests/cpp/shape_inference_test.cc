// Shape inference (src/ops/shape_inference.h) in C++, so the sanitizer build runs every
// rule: on every ONNX backend node model (declared shapes; no crash, no undefined
// behaviour, whatever the op) and on the shared real models with fixed input shapes.
// The numbers themselves are checked against real runs by tests/python/test_shape_inference.py.
#include "ops/shape_inference.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "onnx/decoder.h"
#include "optimizer/inline_functions.h"
#include "optimizer/pass.h"

namespace nxrt::ops {
namespace {

std::string shared(const std::string& path) { return std::string(NXRT_SHARED_DIR) + "/" + path; }

ShapeInferenceResult infer_file(const std::string& path,
                                const std::map<std::string, SymShape>& inputs = {}) {
  auto model = onnx::load_model_file(path);
  EXPECT_TRUE(model.ok()) << path << ": " << model.status().message();
  if (!model.ok()) return {};
  EXPECT_TRUE(optimizer::inline_functions(**model).ok()) << path;
  ShapeInferenceOptions options;
  options.input_shapes = inputs;
  options.inputs_override_initializers = (*model)->ir_version >= 4;
  return infer_shapes((*model)->graph, (*model)->opset_imports, options);
}

TEST(ShapeInference, EveryBackendNodeModelInfersWithoutCrashing) {
  const std::filesystem::path root = shared("onnx-backend-data/node");
  ASSERT_TRUE(std::filesystem::is_directory(root)) << root;
  size_t models = 0, values = 0, known = 0;
  for (const auto& entry : std::filesystem::directory_iterator(root)) {
    const auto model = entry.path() / "model.onnx";
    if (!std::filesystem::is_regular_file(model)) continue;
    ShapeInferenceResult r = infer_file(model.string());
    ++models;
    for (const auto& [name, facts] : r.values) {
      ++values;
      known += facts.shape.fully_known();
    }
  }
  EXPECT_GT(models, 1000u);
  EXPECT_GT(known, values / 2) << known << " of " << values << " values with numbers";
}

// The graph passes' own ops (channel-blocked convolutions and pools, FusedConv, ...) have
// rules: after optimizing, every value is sized, and every value both graphs have (the
// plain-layout results the blocked ops hand back under their original names) gets the
// shape it has in the original graph.
TEST(ShapeInference, OptimizedCnnsInferLikeTheirOriginals) {
  for (const char* name : {"light_squeezenet", "light_densenet121", "light_inception_v1"}) {
    const std::string path = shared(std::string("onnx-backend-data/light/") + name + ".onnx");
    const ShapeInferenceResult original = infer_file(path);
    auto model = onnx::load_model_file(path);
    ASSERT_TRUE(model.ok()) << model.status().message();
    ASSERT_TRUE(optimizer::optimize(**model, {}, Limits{}).ok()) << name;
    ShapeInferenceOptions options;
    options.use_value_info = false;
    const ShapeInferenceResult optimized =
        infer_shapes((*model)->graph, (*model)->opset_imports, options);
    EXPECT_TRUE(optimized.conflicts.empty()) << name << ": " << optimized.conflicts[0];
    EXPECT_TRUE(optimized.ops_without_rule.empty())
        << name << ": " << *optimized.ops_without_rule.begin();
    size_t shared_values = 0;
    for (const ir::Node& node : (*model)->graph.nodes)
      for (const std::string& out : node.outputs) {
        auto facts = optimized.values.find(out);
        ASSERT_TRUE(facts != optimized.values.end() && facts->second.shape.fully_known())
            << name << ": " << out << " is " << optimized.shape_text(out);
        if (original.values.count(out)) {
          ++shared_values;
          EXPECT_EQ(optimized.shape_text(out), original.shape_text(out)) << name << ": " << out;
        }
      }
    EXPECT_GT(shared_values, 0u) << name;
  }
}

TEST(ShapeInference, RealModelsWithFixedInputs) {
  ShapeInferenceResult ppocr =
      infer_file(shared("models/ppocr_v4_det.onnx"),
                 {{"x", SymShape::of_ints(std::vector<int64_t>{1, 3, 320, 256})}});
  EXPECT_TRUE(ppocr.conflicts.empty());
  EXPECT_EQ(ppocr.shape_text("sigmoid_0.tmp_0"), "[1,1,320,256]");

  ShapeInferenceResult legacy =
      infer_file(shared("models/silero_vad_legacy.onnx"),
                 {{"input", SymShape::of_ints(std::vector<int64_t>{1, 512})},
                  {"sr", SymShape::scalar()},
                  {"h", SymShape::of_ints(std::vector<int64_t>{2, 1, 64})},
                  {"c", SymShape::of_ints(std::vector<int64_t>{2, 1, 64})}});
  EXPECT_EQ(legacy.shape_text("output"), "[1,1]");
  EXPECT_EQ(legacy.shape_text("hn"), "[2,1,64]");
}

TEST(ShapeInference, SymbolsBroadcastAndConflictsAreReported) {
  SymShape a = SymShape::of({SymDim::named("batch"), SymDim::of(1), SymDim::named("seq")});
  SymShape b = SymShape::of_ints(std::vector<int64_t>{8, 1});
  auto out = broadcast_shapes(a, b);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->text(), "[batch,8,seq]");
  EXPECT_FALSE(broadcast_shapes(SymShape::of_ints(std::vector<int64_t>{3}),
                                SymShape::of_ints(std::vector<int64_t>{4}))
                   .ok());
  EXPECT_EQ(product(std::vector<SymDim>{SymDim::named("n"), SymDim::of(1)}).text(), "n");
  EXPECT_EQ(product(std::vector<SymDim>{SymDim::of(int64_t(1) << 62), SymDim::of(4)}).text(), "?");
}

}  // namespace
}  // namespace nxrt::ops
