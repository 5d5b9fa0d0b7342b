// The shape rules of shape_inference.h, one function per op or op family, in four files:
// shape_rules_elementwise.cc (same shape, broadcasting), shape_rules_layout.cc (ops that
// move or select data: Reshape, Concat, Slice, Gather, ...), shape_rules_nn.cc (MatMul,
// Conv, pooling, reductions, normalization, recurrent and attention ops) and
// shape_rules_nxrt.cc (the ops of nxrt's own domain that graph passes write).
// shape_rules.inc maps (domain, op) to them.
#pragma once

#include "ops/shape_inference.h"

namespace nxrt::ops::rules {

// An axis in [-rank, rank) as an index; a conflict naming `what` when out of range.
Expected<size_t> axis_index(int64_t axis, size_t rank, const char* what = "axis");

// shape_rules_elementwise.cc
Status same_as_input(InferContext& ctx);  // every output: input 0's shape
Status broadcast_inputs(InferContext& ctx);
Status legacy_broadcast(InferContext& ctx);  // Add & co before opset 7: input 0's shape
Status where(InferContext& ctx);
Status cast(InferContext& ctx);
Status logical_not(InferContext& ctx);  // Not, with tracked conditions
Status identity(InferContext& ctx);
Status dynamic_quantize(InferContext& ctx);
Status layer_normalization(InferContext& ctx);
Status skip_layer_normalization(InferContext& ctx);
Status batch_normalization(InferContext& ctx);

// shape_rules_layout.cc
Status shape_of(InferContext& ctx);
Status size_of(InferContext& ctx);
Status constant(InferContext& ctx);
Status constant_of_shape(InferContext& ctx);
Status reshape(InferContext& ctx);
Status flatten(InferContext& ctx);
Status squeeze(InferContext& ctx);
Status unsqueeze(InferContext& ctx);
Status transpose(InferContext& ctx);
Status expand(InferContext& ctx);
Status concat(InferContext& ctx);
Status split(InferContext& ctx);
Status slice(InferContext& ctx);
Status gather(InferContext& ctx);
Status gather_elements(InferContext& ctx);
Status gather_nd(InferContext& ctx);
Status tile(InferContext& ctx);
Status pad(InferContext& ctx);
Status range(InferContext& ctx);
Status depth_space(InferContext& ctx);  // DepthToSpace and SpaceToDepth
Status one_hot(InferContext& ctx);
Status non_zero(InferContext& ctx);
Status non_max_suppression(InferContext& ctx);
Status top_k(InferContext& ctx);

// shape_rules_nn.cc
Status matmul(InferContext& ctx);
Status matmul_quantized(InferContext& ctx);  // QLinearMatMul: A is input 0, B input 3
Status matmul_nbits(InferContext& ctx);
Status fused_matmul(InferContext& ctx);
Status gemm(InferContext& ctx);
Status conv(InferContext& ctx);
Status conv_quantized(InferContext& ctx);  // QLinearConv: X is input 0, W input 3
Status conv_transpose(InferContext& ctx);
Status pool(InferContext& ctx);
Status global_pool(InferContext& ctx);
Status reduce(InferContext& ctx);
Status arg_reduce(InferContext& ctx);
Status resize(InferContext& ctx);
Status recurrent(InferContext& ctx);  // RNN, GRU, LSTM
Status packed_attention(InferContext& ctx);
Status multi_head_attention(InferContext& ctx);
Status onnx_attention(InferContext& ctx);  // ai.onnx Attention (opset 23)
Status grid_sample(InferContext& ctx);
Status classification_loss(InferContext& ctx);  // NegativeLogLikelihood, SoftmaxCrossEntropy
Status einsum(InferContext& ctx);

// shape_rules_nxrt.cc: nxrt's own ops
Status nchwc_conv(InferContext& ctx);
Status nchwc_pool(InferContext& ctx);  // NchwcMaxPool, NchwcAveragePool
Status nchwc_global_pool(InferContext& ctx);
Status nchwc_to_nchw(InferContext& ctx);
Status one_hot_matmul(InferContext& ctx);
Status fused_attention(InferContext& ctx);

}  // namespace nxrt::ops::rules
