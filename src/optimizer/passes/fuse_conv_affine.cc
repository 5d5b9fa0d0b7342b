// Conv (constant weights) followed by Mul or Add with a constant that is one value, or
// one value per output channel: folded into the weights and bias,
//   Mul:  W'[m] = W[m] * c[m],  B'[m] = B[m] * c[m];   Add:  B'[m] = B[m] + c[m].
// Exporters write such affine maps after convolutions (PP-OCR's learnable affine blocks,
// a bias kept outside the Conv). Repeats until nothing folds, so Mul then Add both go.
#include "optimizer/graph_view.h"
#include "optimizer/passes/passes.h"

namespace nxrt::optimizer {
namespace {

// The constant's value for output channel m, when it broadcasts per channel against a
// conv output of rank `rank` with M channels; null when it does not.
const Tensor* per_channel(const Tensor* c, int64_t M, size_t rank) {
  if (!c || c->dtype() != DataType::kFloat || c->rank() > rank) return nullptr;
  if (c->numel() == 1) return c;
  if (c->numel() != M) return nullptr;
  // [M, 1, ..., 1] aligned to axis 1 (rank - 1 dims), or [1, M, 1, ..., 1] (rank dims).
  const Shape& s = c->shape();
  const size_t channel_axis = s.size() == rank ? 1 : s.size() == rank - 1 ? 0 : s.size();
  if (channel_axis >= s.size()) return nullptr;
  for (size_t d = 0; d < s.size(); ++d)
    if (d != channel_axis && s[d] != 1) return nullptr;
  return c;
}

// One fold, if any applies; true when the graph changed.
bool fold_one(ir::Graph& graph, PassContext& ctx) {
  GraphView view(graph, ctx);
  GraphEditor edit(graph, view);
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    ir::Node& conv = graph.nodes[n];
    if (!is_onnx_op(conv, "Conv") || conv.inputs.size() < 2 || conv.outputs.size() != 1) continue;
    const Tensor* w = view.constant(conv.inputs[1]);
    if (!w || w->dtype() != DataType::kFloat || w->rank() < 3 || w->shape()[0] <= 0) continue;
    const int64_t M = w->shape()[0], per_m = w->numel() / M;
    const bool has_bias = conv.inputs.size() > 2 && !conv.inputs[2].empty();
    const Tensor* bias = has_bias ? view.constant(conv.inputs[2]) : nullptr;
    if (has_bias && (!bias || bias->dtype() != DataType::kFloat || bias->numel() != M)) continue;
    const int a = view.sole_consumer(conv.outputs[0]);
    if (a < 0) continue;
    const ir::Node& op = graph.nodes[size_t(a)];
    const bool mul = is_onnx_op(op, "Mul"), add = is_onnx_op(op, "Add");
    if ((!mul && !add) || op.inputs.size() != 2 || op.outputs.size() != 1) continue;
    const std::string& other = op.inputs[0] == conv.outputs[0] ? op.inputs[1] : op.inputs[0];
    const Tensor* c = per_channel(view.constant(other), M, w->rank());
    if (!c || other == conv.outputs[0]) continue;
    auto c_at = [&](int64_t m) { return c->data<float>()[c->numel() == 1 ? 0 : m]; };
    auto new_b = Tensor::allocate_uninitialized(DataType::kFloat, Shape{M}, ctx.limits);
    if (!new_b) continue;
    for (int64_t m = 0; m < M; ++m) {
      const float b0 = bias ? bias->data<float>()[m] : 0.0f;
      new_b->data<float>()[m] = mul ? b0 * c_at(m) : b0 + c_at(m);
    }
    std::string w_name = conv.inputs[1];
    if (mul) {
      auto new_w = Tensor::allocate_uninitialized(DataType::kFloat, w->shape(), ctx.limits);
      if (!new_w) continue;
      for (int64_t m = 0; m < M; ++m)
        for (int64_t i = 0; i < per_m; ++i)
          new_w->data<float>()[m * per_m + i] = w->data<float>()[m * per_m + i] * c_at(m);
      w_name = edit.fresh_name(conv.inputs[1] + "_scaled");
      edit.add_initializer(w_name, std::move(new_w).value());
    }
    const std::string b_name = edit.fresh_name(conv.inputs[1] + "_bias");
    edit.add_initializer(b_name, std::move(new_b).value());
    conv.inputs.resize(3);
    conv.inputs[1] = w_name;
    conv.inputs[2] = b_name;
    conv.outputs[0] = op.outputs[0];
    edit.remove(size_t(a));
    edit.apply();
    return true;
  }
  return false;
}

}  // namespace

Status fuse_conv_affine(ir::Graph& graph, PassContext& ctx) {
  while (fold_one(graph, ctx)) {
  }
  return Status();
}

}  // namespace nxrt::optimizer
