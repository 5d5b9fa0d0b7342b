// The pass functions listed in passes.inc, one file each.
#pragma once

#include "optimizer/pass.h"

namespace nxrt::optimizer {

// Replaces calls to model-local functions with their bodies (inline_functions.h).
Status inline_functions_pass(ir::Graph& graph, PassContext& ctx);
// Identity, and Dropout that cannot be in training mode: readers take the input instead.
Status eliminate_identity(ir::Graph& graph, PassContext& ctx);
// Shape and Size of values whose dimensions are all numbers: int64 initializers.
Status fold_shapes(ir::Graph& graph, PassContext& ctx);
// Nodes whose inputs are all constants: run once, their outputs become initializers.
Status fold_constants(ir::Graph& graph, PassContext& ctx);
// Transpose of a Transpose: one Transpose by the composed permutation, none for the
// identity.
Status cancel_transposes(ir::Graph& graph, PassContext& ctx);
// BatchNormalization after a Conv with constant weights: folded into W and B.
Status fuse_conv_batchnorm(ir::Graph& graph, PassContext& ctx);
// MatMul of two DequantizeLinear outputs, the weight constant: com.microsoft
// MatMulIntegerToFloat on the 8-bit inputs.
Status fuse_qdq_matmul(ir::Graph& graph, PassContext& ctx);
// MatMul of a one-hot Cast(Equal(indices, constant classes)) by a constant W: nxrt
// OneHotMatMul, a row lookup in W.
Status fuse_one_hot_matmul(ir::Graph& graph, PassContext& ctx);
// LayerNorm and RMSNorm written out (mean, variance, sqrt, divide, scale, shift): one
// LayerNormalization or SimplifiedLayerNormalization / RMSNormalization.
Status fuse_layer_norm(ir::Graph& graph, PassContext& ctx);
// MatMul by a constant 2-D weight, then Add of a constant bias: one nxrt MatMulBias.
Status fuse_matmul_add(ir::Graph& graph, PassContext& ctx);
// x * 0.5 * (1 + Erf(x / sqrt 2)) written out: one Gelu; its tanh form: Gelu(approximate =
// tanh) or com.microsoft FastGelu.
Status fuse_gelu(ir::Graph& graph, PassContext& ctx);
// Where(IsNaN(Softmax(x)), 0, Softmax(x)), PyTorch's masked-attention softmax: one nxrt
// SafeSoftmax.
Status fuse_safe_softmax(ir::Graph& graph, PassContext& ctx);
// MatMul(Q, K^T), scale, mask Add, Softmax, MatMul(., V) per head, the head transposes
// around it read through: one nxrt FusedAttention.
Status fuse_attention(ir::Graph& graph, PassContext& ctx);
// x + r * sin(alpha * x)^2 with per-channel alpha and r (the vocoders' Snake): one nxrt
// Snake.
Status fuse_snake(ir::Graph& graph, PassContext& ctx);
// x * Sigmoid(x): one com.microsoft QuickGelu (alpha 1).
Status fuse_quick_gelu(ir::Graph& graph, PassContext& ctx);
// Mul or Add by a per-channel constant after a Conv with constant weights: folded.
Status fuse_conv_affine(ir::Graph& graph, PassContext& ctx);
// x * Clip(x + 3, 0, 6) / 6: one HardSwish.
Status fuse_hard_swish(ir::Graph& graph, PassContext& ctx);
// BatchNormalization after a Conv, its parameters not constant: nxrt FusedConv applying
// it per run.
Status fuse_conv_batchnorm_runtime(ir::Graph& graph, PassContext& ctx);
// Conv read only by an Add (or two-input Sum): nxrt FusedConv with the other addend as Z.
Status fuse_conv_add(ir::Graph& graph, PassContext& ctx);
// Conv followed by an activation: one FusedConv node (com.microsoft, or nxrt's own domain
// for activations onnxruntime's FusedConv lacks).
Status fuse_conv_activation(ir::Graph& graph, PassContext& ctx);
// Mul/Add by scalar constants after a FusedConv's activation: its post_scale/post_shift.
Status fuse_activation_affine(ir::Graph& graph, PassContext& ctx);
// BatchNormalization with constant parameters, the Mul/Add by per-channel constants and
// the activation after it: one nxrt ChannelAffine node.
Status fuse_batchnorm_affine(ir::Graph& graph, PassContext& ctx);
// Float32 2-D convolutions, and the pools, Concats and elementwise ops between them, to
// nxrt's channel-blocked (NCHWc) ops, reordering back where plain readers need it.
Status layout_nchwc(ir::Graph& graph, PassContext& ctx);
// Nodes none of whose outputs anything reads.
Status eliminate_dead_nodes(ir::Graph& graph, PassContext& ctx);

}  // namespace nxrt::optimizer
