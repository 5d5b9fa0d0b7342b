// com.microsoft DynamicQuantizeLSTM with constant 8-bit weights (onnxruntime's quantizer
// writes it for LSTMs): an ONNX LSTM on the dequantized weights. The quantized W and R
// are [directions, input or hidden, 4 * hidden] (the ONNX layout transposed), with a
// scale and zero point per direction or per direction and column:
//   W_onnx[d][j][i] = (W_q[d][i][j] - zero[d][j]) * scale[d][j].
// onnxruntime runs the gates' products in 8 bits with X and h quantized per step; float
// products of the same weights differ from it by that quantization only. A required pass:
// without it the model cannot run, at any optimization level.
#include "optimizer/graph_view.h"
#include "optimizer/passes/passes.h"

namespace nxrt::optimizer {
namespace {

int32_t byte_at(const Tensor& t, int64_t i) {
  return t.dtype() == DataType::kInt8 ? int32_t(t.data<int8_t>()[i])
                                      : int32_t(t.data<uint8_t>()[i]);
}

// The float weight in ONNX layout; an error that names what does not fit.
Expected<Tensor> dequantize_weight(const char* what, const Tensor& q, const Tensor& scale,
                                   const Tensor* zero, const Limits& limits) {
  if (!is_8bit(&q) || q.rank() != 3)
    return invalid_graph(what, " must be a 3-D int8 or uint8 tensor, got ",
                         tensor_type_name(q.dtype()), " ", q.shape().to_string());
  const int64_t D = q.shape()[0], rows = q.shape()[1], cols = q.shape()[2];
  const bool per_column = scale.numel() == D * cols;
  if (scale.dtype() != DataType::kFloat || (!per_column && scale.numel() != D))
    return invalid_graph(what, "'s scale must be float with ", D, " or ", D * cols, " values, got ",
                         tensor_type_name(scale.dtype()), " ", scale.shape().to_string());
  if (zero && (!is_8bit(zero) || zero->numel() != scale.numel()))
    return invalid_graph(what, "'s zero point must be 8-bit with as many values as its scale (",
                         scale.numel(), "), got ", tensor_type_name(zero->dtype()), " ",
                         zero->shape().to_string());
  NXRT_ASSIGN_OR_RETURN(
      Tensor out, Tensor::allocate_uninitialized(DataType::kFloat, Shape{D, cols, rows}, limits));
  float* w = out.data<float>();
  const float* s = scale.data<float>();
  for (int64_t d = 0; d < D; ++d)
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) {
        const int64_t p = per_column ? d * cols + j : d;
        const int32_t z = zero ? byte_at(*zero, p) : 0;
        w[(d * cols + j) * rows + i] = float(byte_at(q, (d * rows + i) * cols + j) - z) * s[p];
      }
  return out;
}

}  // namespace

Status dequantize_lstm(ir::Graph& graph, PassContext& ctx) {
  GraphView view(graph, ctx);
  GraphEditor edit(graph, view);
  for (ir::Node& node : graph.nodes) {
    if (node.domain != "com.microsoft" || node.op_type != "DynamicQuantizeLSTM") continue;
    auto constant = [&](size_t i) {
      const std::string& name = input_or_empty(node, i);
      return name.empty() ? nullptr : view.constant(name);
    };
    // Weights, scales and zero points given at run time: left as it is (its kernel reports
    // the op as not implemented).
    const Tensor *wq = constant(1), *rq = constant(2), *ws = constant(8), *rs = constant(10);
    const Tensor *wz = constant(9), *rz = constant(11);
    if (!wq || !rq || !ws || !rs || (!input_or_empty(node, 9).empty() && !wz) ||
        (!input_or_empty(node, 11).empty() && !rz))
      continue;
    auto w = dequantize_weight("W", *wq, *ws, wz, ctx.limits);
    auto r = dequantize_weight("R", *rq, *rs, rz, ctx.limits);
    for (const Status& st : {w.status(), r.status()})
      if (!st.ok()) return invalid_graph(node.describe(), ": ", st.message());
    const std::string w_name = edit.fresh_name(node.inputs[1] + "_dequantized");
    const std::string r_name = edit.fresh_name(node.inputs[2] + "_dequantized");
    edit.add_initializer(w_name, std::move(w).value());
    edit.add_initializer(r_name, std::move(r).value());
    node.domain = "";
    node.op_type = "LSTM";
    node.inputs.resize(std::min<size_t>(node.inputs.size(), 8));
    node.inputs[1] = w_name;
    node.inputs[2] = r_name;
    while (!node.inputs.empty() && node.inputs.back().empty()) node.inputs.pop_back();
  }
  edit.apply();
  return Status();
}

}  // namespace nxrt::optimizer
