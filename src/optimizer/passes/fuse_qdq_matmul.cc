// MatMul(DequantizeLinear(x_q), DequantizeLinear(W_q)) with a constant 8-bit weight, or
// with a second quantized activation (attention's Q K^T and P V), becomes com.microsoft
// MatMulIntegerToFloat(x_q, W_q, scales, zero points): the product runs on the 8-bit GEMM,
// exact in int32, then scales to float, as onnxruntime's QDQ rewrite does.
// The DequantizeLinear nodes are left to dead-node elimination (another reader keeps them).
#include "optimizer/graph_view.h"
#include "optimizer/passes/passes.h"

namespace nxrt::optimizer {
namespace {

bool is_float(const Tensor* t) { return t && t->dtype() == DataType::kFloat; }

// A DequantizeLinear of the plain per-tensor or per-axis form (no blocks), or null.
const ir::Node* dequantize_feeding(const std::string& value, const GraphView& view,
                                   const ir::Graph& graph) {
  const int n = view.producer(value);
  if (n < 0) return nullptr;
  const ir::Node& dq = graph.nodes[size_t(n)];
  if (!is_onnx_op(dq, "DequantizeLinear") || dq.inputs.size() < 2 || dq.outputs.size() != 1)
    return nullptr;
  if (const ir::Attribute* b = dq.find_attribute("block_size"); b && b->i != 0) return nullptr;
  return &dq;
}

// A DequantizeLinear of a computed 8-bit tensor: one constant float scale and a constant
// 8-bit zero point (which tells the tensor's type).
bool dequantizes_activation(const ir::Node& dq, const GraphView& view) {
  const Tensor* scale = view.constant(dq.inputs[1]);
  const std::string& zero_name = input_or_empty(dq, 2);
  const Tensor* zero = zero_name.empty() ? nullptr : view.constant(zero_name);
  return is_float(scale) && scale->numel() == 1 && is_8bit(zero) && zero->numel() == 1;
}

}  // namespace

Status fuse_qdq_matmul(ir::Graph& graph, PassContext& ctx) {
  GraphView view(graph, ctx);
  for (ir::Node& mm : graph.nodes) {
    if (!is_onnx_op(mm, "MatMul") || mm.inputs.size() != 2 || mm.outputs.size() != 1) continue;
    const ir::Node* dx = dequantize_feeding(mm.inputs[0], view, graph);
    const ir::Node* dw = dequantize_feeding(mm.inputs[1], view, graph);
    if (!dx || !dw) continue;
    // The weight: a constant 2-D 8-bit matrix, float scales per tensor or per column
    // (axis 1), zero points of the same shape and type. Or a second activation (attention's
    // products), of any rank, dequantized like the first.
    const Tensor* w = view.constant(dw->inputs[0]);
    const Tensor* ws = view.constant(dw->inputs[1]);
    const std::string& wz_name = input_or_empty(*dw, 2);
    const Tensor* wz = wz_name.empty() ? nullptr : view.constant(wz_name);
    if (!is_float(ws)) continue;
    if (!w) {
      if (!dequantizes_activation(*dw, view)) continue;
    } else {
      if (!is_8bit(w) || w->rank() != 2) continue;
      const int64_t N = w->shape()[1];
      if (ws->numel() != 1) {
        const ir::Attribute* axis = dw->find_attribute("axis");
        const int64_t a = axis ? axis->i : 1;
        if (ws->rank() != 1 || ws->numel() != N || (a != 1 && a != -1)) continue;
      }
      if (!wz_name.empty() && (!wz || wz->dtype() != w->dtype() || wz->numel() != ws->numel()))
        continue;
    }
    if (!dequantizes_activation(*dx, view)) continue;
    const std::string& xz_name = input_or_empty(*dx, 2);
    if (!ctx.import_domain("com.microsoft", 1)) return Status();
    mm.domain = "com.microsoft";
    mm.op_type = "MatMulIntegerToFloat";
    mm.inputs = {dx->inputs[0], dw->inputs[0], dx->inputs[1], dw->inputs[1], xz_name, wz_name};
  }
  return Status();
}

}  // namespace nxrt::optimizer
