// Conv -> BatchNormalization (inference) with every parameter constant: BN is an affine
// map per output channel, so it folds into the convolution's weights and bias,
//   W'[m] = W[m] * s[m],  B'[m] = (B[m] - mean[m]) * s[m] + beta[m],
//   s[m] = scale[m] / sqrt(var[m] + epsilon),
// computed in double and stored in the weights' type (float32 or float64).
#include <cmath>

#include "optimizer/graph_view.h"
#include "optimizer/passes/batchnorm.h"
#include "optimizer/passes/passes.h"

namespace nxrt::optimizer {
namespace {

// A constant 1-D tensor of `count` values of type `dtype`, or null.
const Tensor* channel_vector(const GraphView& view, const std::string& name, DataType dtype,
                             int64_t count) {
  const Tensor* t = name.empty() ? nullptr : view.constant(name);
  if (!t || t->dtype() != dtype || t->rank() != 1 || t->shape()[0] != count) return nullptr;
  return t;
}

double element(const Tensor& t, int64_t i) {
  return t.dtype() == DataType::kFloat ? double(t.data<float>()[i]) : t.data<double>()[i];
}

void set_element(Tensor& t, int64_t i, double v) {
  if (t.dtype() == DataType::kFloat)
    t.data<float>()[i] = float(v);
  else
    t.data<double>()[i] = v;
}

// The inference BatchNormalization that alone reads Conv node n's output, or -1.
int batchnorm_after(size_t n, const ir::Graph& graph, const GraphView& view,
                    const GraphEditor& edit) {
  const ir::Node& conv = graph.nodes[n];
  if (!is_onnx_op(conv, "Conv") || conv.inputs.size() < 2 || conv.outputs.size() != 1) return -1;
  const int b = view.sole_consumer(conv.outputs[0]);
  if (b < 0 || edit.removed(size_t(b))) return -1;
  const ir::Node& bn = graph.nodes[size_t(b)];
  if (!is_inference_batchnorm(bn, view) || bn.inputs[0] != conv.outputs[0]) return -1;
  return b;
}

}  // namespace

bool is_inference_batchnorm(const ir::Node& bn, const GraphView& view) {
  if (!is_onnx_op(bn, "BatchNormalization") || bn.inputs.size() != 5) return false;
  if (const ir::Attribute* a = bn.find_attribute("training_mode"); a && a->i != 0) return false;
  if (const ir::Attribute* a = bn.find_attribute("spatial"); a && a->i != 1) return false;
  // Running-statistics outputs (old opsets, training) must not be read.
  for (size_t o = 1; o < bn.outputs.size(); ++o)
    if (!bn.outputs[o].empty() &&
        (view.use_count(bn.outputs[o]) > 0 || view.is_graph_output(bn.outputs[o])))
      return false;
  return !bn.outputs.empty() && !bn.outputs[0].empty();
}

Status fuse_conv_batchnorm(ir::Graph& graph, PassContext& ctx) {
  GraphView view(graph, ctx);
  GraphEditor edit(graph, view);
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const int b = batchnorm_after(n, graph, view, edit);
    if (b < 0) continue;
    ir::Node& conv = graph.nodes[n];
    const ir::Node& bn = graph.nodes[size_t(b)];
    const Tensor* w = view.constant(conv.inputs[1]);
    if (!w || (w->dtype() != DataType::kFloat && w->dtype() != DataType::kDouble) ||
        w->rank() < 3 || w->shape()[0] <= 0)
      continue;
    const DataType dtype = w->dtype();
    const int64_t M = w->shape()[0], per_m = w->numel() / M;
    const bool has_bias = conv.inputs.size() > 2 && !conv.inputs[2].empty();
    const Tensor* bias = has_bias ? channel_vector(view, conv.inputs[2], dtype, M) : nullptr;
    const Tensor* scale = channel_vector(view, bn.inputs[1], dtype, M);
    const Tensor* beta = channel_vector(view, bn.inputs[2], dtype, M);
    const Tensor* mean = channel_vector(view, bn.inputs[3], dtype, M);
    const Tensor* var = channel_vector(view, bn.inputs[4], dtype, M);
    if ((has_bias && !bias) || !scale || !beta || !mean || !var) continue;
    const ir::Attribute* eps_attr = bn.find_attribute("epsilon");
    const double eps = eps_attr ? double(eps_attr->f) : 1e-5;

    auto new_w = Tensor::allocate_uninitialized(dtype, w->shape(), ctx.limits);
    auto new_b = Tensor::allocate_uninitialized(dtype, Shape{M}, ctx.limits);
    if (!new_w || !new_b) continue;  // over the limits: leave the graph as it is
    for (int64_t m = 0; m < M; ++m) {
      const double s = element(*scale, m) / std::sqrt(element(*var, m) + eps);
      for (int64_t i = 0; i < per_m; ++i)
        set_element(*new_w, m * per_m + i, element(*w, m * per_m + i) * s);
      const double b0 = bias ? element(*bias, m) : 0.0;
      set_element(*new_b, m, (b0 - element(*mean, m)) * s + element(*beta, m));
    }
    const std::string w_name = edit.fresh_name(conv.inputs[1] + "_bn");
    const std::string b_name =
        edit.fresh_name((has_bias ? conv.inputs[2] : conv.inputs[1]) + "_bn_bias");
    edit.add_initializer(w_name, std::move(new_w).value());
    edit.add_initializer(b_name, std::move(new_b).value());
    conv.inputs.resize(3);
    conv.inputs[1] = w_name;
    conv.inputs[2] = b_name;
    conv.outputs[0] = bn.outputs[0];
    edit.remove(size_t(b));
  }
  edit.apply();
  return Status();
}

// Conv -> BatchNormalization whose parameters are not constants (weights that callers
// may override, or computed by the graph): nxrt's FusedConv with the BN's inputs as its
// inputs 4-7, applied per run as a per-channel scale and shift of each block of output.
Status fuse_conv_batchnorm_runtime(ir::Graph& graph, PassContext& ctx) {
  GraphView view(graph, ctx);
  GraphEditor edit(graph, view);
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const int b = batchnorm_after(n, graph, view, edit);
    if (b < 0) continue;
    ir::Node& conv = graph.nodes[n];
    const ir::Node& bn = graph.nodes[size_t(b)];
    if (!ctx.import_domain("nxrt", 1)) return Status();
    const ir::Attribute* eps_attr = bn.find_attribute("epsilon");
    const ir::Attribute eps = ir::Attribute::of_float("bn_epsilon", eps_attr ? eps_attr->f : 1e-5f);
    conv.domain = "nxrt";
    conv.op_type = "FusedConv";
    conv.inputs.resize(3);
    conv.inputs.push_back("");  // no sum input
    for (size_t i = 1; i < 5; ++i) conv.inputs.push_back(bn.inputs[i]);
    conv.attributes.push_back(std::move(eps));
    conv.outputs[0] = bn.outputs[0];
    edit.remove(size_t(b));
  }
  edit.apply();
  return Status();
}

}  // namespace nxrt::optimizer
