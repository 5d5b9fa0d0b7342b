// A one-hot embedding written out, MatMul(Cast<float>(Equal(A, R)), W) with constant class
// values R [1, ..., 1, K] (integers) and a constant float W [K, N], becomes one nxrt
// OneHotMatMul(A, R, W), which copies the matching row of W instead of multiplying a
// mostly-zero [rows, K] matrix (TensorFlow's and JAX's one_hot exports; in Magika three
// nodes and a K-deep product per byte). Only for a W whose values are all finite: then
// 0 * W[k] adds exactly zero and the copy is the product's result.
#include <cmath>

#include "optimizer/graph_view.h"
#include "optimizer/passes/passes.h"

namespace nxrt::optimizer {
namespace {

constexpr int64_t kCastToFloat = 1;  // TensorProto FLOAT

bool all_finite(const Tensor& w) {
  const float* p = w.data<float>();
  for (int64_t i = 0; i < w.numel(); ++i)
    if (!std::isfinite(p[i])) return false;
  return true;
}

// Integer class values [1, ..., 1, K], K = the rows of W.
bool class_values(const Tensor* r, int64_t K) {
  if (!r || (r->dtype() != DataType::kInt32 && r->dtype() != DataType::kInt64)) return false;
  return r->rank() >= 1 && r->shape().back() == K && r->numel() == K;
}

}  // namespace

Status fuse_one_hot_matmul(ir::Graph& graph, PassContext& ctx) {
  GraphView view(graph, ctx);
  GraphEditor edit(graph, view);
  for (ir::Node& mm : graph.nodes) {
    if (!is_onnx_op(mm, "MatMul") || mm.inputs.size() != 2 || mm.outputs.size() != 1) continue;
    const Tensor* w = view.constant(mm.inputs[1]);
    if (!w || w->dtype() != DataType::kFloat || w->rank() != 2) continue;
    const int c = view.producer(mm.inputs[0]);
    if (c < 0 || edit.removed(size_t(c)) || view.sole_consumer(mm.inputs[0]) < 0) continue;
    const ir::Node& cast = graph.nodes[size_t(c)];
    const ir::Attribute* to = cast.find_attribute("to");
    if (!is_onnx_op(cast, "Cast") || cast.inputs.size() != 1 || !to || to->i != kCastToFloat)
      continue;
    const int e = view.producer(cast.inputs[0]);
    if (e < 0 || edit.removed(size_t(e)) || view.sole_consumer(cast.inputs[0]) < 0) continue;
    const ir::Node& equal = graph.nodes[size_t(e)];
    if (!is_onnx_op(equal, "Equal") || equal.inputs.size() != 2) continue;
    const int64_t K = w->shape()[0];
    // Equal is symmetric: the class values may stand on either side.
    size_t side = 2;
    for (size_t i = 0; i < 2 && side == 2; ++i)
      if (class_values(view.constant(equal.inputs[i]), K) && !view.constant(equal.inputs[1 - i]))
        side = i;
    if (side == 2 || !all_finite(*w)) continue;
    if (!ctx.import_domain("nxrt", 1)) return Status();
    mm.domain = "nxrt";
    mm.op_type = "OneHotMatMul";
    mm.inputs = {equal.inputs[1 - side], equal.inputs[side], mm.inputs[1]};
    edit.remove(size_t(c));
    edit.remove(size_t(e));
  }
  edit.apply();
  return Status();
}

}  // namespace nxrt::optimizer
