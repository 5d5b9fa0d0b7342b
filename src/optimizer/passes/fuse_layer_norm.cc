// LayerNormalization and RMS normalization written out by exporters (PyTorch's LayerNorm
// before opset 17, every Llama-style RMSNorm, hand-written norms in audio models) become
// one node: one pass over each row instead of seven to nine whole-tensor ops, and no
// intermediate tensors. Matched, backwards from the division by the standard deviation:
//   LayerNorm: m = ReduceMean(x); d = Sub(x, m); v = ReduceMean(Pow(d, 2) or Mul(d, d))
//   RMSNorm:   d = x;                            v = ReduceMean(Pow(x, 2) or Mul(x, x))
//   n = Div(d, Sqrt(Add(v, eps))), or Mul(d, Reciprocal(Sqrt(..))), or Mul(d, Div(1, Sqrt(..)))
//   y = Mul(n, gamma), then optionally Add(., beta)
// -> LayerNormalization(x, gamma, beta) or, for RMS, SimplifiedLayerNormalization
// (RMSNormalization from opset 23), epsilon = eps, axis = the first reduced axis. Both
// kernels are registered in the ONNX domain at every opset, as onnxruntime's are.
//
// The rewrite must keep the values and the output's shape, so it requires: both means over
// the same trailing axes with keepdims; gamma, beta, eps and the exponent constants with no
// more dims than the normalized ones (a broadcast cannot grow the output); every value
// between x and y read by the pattern alone.
#include <algorithm>
#include <cmath>
#include <optional>

#include "ops/shape_inference.h"
#include "optimizer/graph_view.h"
#include "optimizer/passes/passes.h"

namespace nxrt::optimizer {
namespace {

// The values and shapes the matcher asks about.
class Facts {
 public:
  Facts(const ir::Graph& graph, PassContext& ctx, const GraphView& view)
      : graph_(graph), view_(view), shapes_(graph, ctx) {}

  const ir::Node* producer(const std::string& value, std::string_view op) const {
    const int p = view_.producer(value);
    if (p < 0 || !is_onnx_op(graph_.nodes[size_t(p)], op)) return nullptr;
    return &graph_.nodes[size_t(p)];
  }
  int index(const ir::Node* node) const { return int(node - graph_.nodes.data()); }

  // The shape of `value` where the graph inputs fix its rank; null otherwise.
  const ops::SymShape* shape(const std::string& value) { return shapes_.shape(value); }

  // How many trailing axes of `x` a ReduceMean with keepdims reduces, when it reduces
  // exactly the last k (k >= 1); nullopt for any other reduction.
  std::optional<int64_t> trailing_axes(const ir::Node& mean, const std::string& x) {
    if (!is_onnx_op(mean, "ReduceMean") || mean.outputs.size() != 1) return std::nullopt;
    if (const ir::Attribute* keep = mean.find_attribute("keepdims"); keep && keep->i != 1)
      return std::nullopt;
    std::vector<int64_t> axes;
    if (const ir::Attribute* a = mean.find_attribute("axes")) {
      axes = a->ints;
    } else {
      const Tensor* t = view_.constant(input_or_empty(mean, 1));
      if (!t || t->dtype() != DataType::kInt64) return std::nullopt;
      axes.assign(t->data<int64_t>(), t->data<int64_t>() + t->numel());
    }
    if (axes.empty()) return std::nullopt;
    const bool any_positive =
        std::any_of(axes.begin(), axes.end(), [](int64_t a) { return a >= 0; });
    if (any_positive) {
      const ops::SymShape* s = shape(x);
      if (!s) return std::nullopt;
      const int64_t rank = int64_t(s->rank());
      for (int64_t& a : axes) {
        if (a >= rank || a < -rank) return std::nullopt;
        if (a >= 0) a -= rank;
      }
    }
    std::sort(axes.begin(), axes.end());
    const int64_t k = int64_t(axes.size());
    for (int64_t i = 0; i < k; ++i)
      if (axes[size_t(i)] != i - k) return std::nullopt;
    return k;
  }

  // True when constant `value` broadcast against x, normalized over its last k axes,
  // leaves x's shape: no more than k dims, each 1 or x's (where the inference knows it).
  bool fits_normalized(const std::string& value, const std::string& x, int64_t k) {
    const Tensor* t = view_.constant(value);
    if (!t || int64_t(t->rank()) > k) return false;
    const ops::SymShape* s = shape(x);
    for (size_t i = 0; i < t->rank(); ++i) {
      const int64_t dim = t->shape()[t->rank() - 1 - i];
      if (dim == 1 || !s || i >= s->rank()) continue;
      const ops::SymDim& xd = s->dims[s->rank() - 1 - i];
      if (xd.known() && xd.value != dim) return false;
    }
    return true;
  }

  // A one-element constant equal to `want`, with no more dims than k.
  bool is_scalar(const std::string& value, double want, int64_t k) const {
    const Tensor* t = value.empty() ? nullptr : view_.constant(value);
    const std::optional<double> v = scalar_value(view_, value);
    return t && int64_t(t->rank()) <= k && v && *v == want;
  }

 private:
  const ir::Graph& graph_;
  const GraphView& view_;
  ShapeFacts shapes_;
};

struct NormMatch {
  bool rms = false;
  std::string x, gamma, beta;
  int64_t axes = 0;  // the trailing axes normalized
  double epsilon = 0;
  std::vector<size_t> nodes;  // every node of the pattern, the last one included
  size_t last = 0;            // the node whose output the fused node takes over
};

// The value that `node` (Pow(t, 2) or Mul(t, t)) squares, or "".
std::string squared(const ir::Node& node, const Facts& facts) {
  if (node.inputs.size() != 2 || node.outputs.size() != 1) return "";
  if (is_onnx_op(node, "Mul") && node.inputs[0] == node.inputs[1]) return node.inputs[0];
  if (is_onnx_op(node, "Pow") && facts.is_scalar(node.inputs[1], 2.0, 1)) return node.inputs[0];
  return "";
}

// Matches the pattern around `norm`, the node dividing by the standard deviation.
std::optional<NormMatch> match(const ir::Graph& graph, size_t norm_index, Facts& facts,
                               const GraphView& view) {
  const ir::Node& norm = graph.nodes[norm_index];
  if (norm.inputs.size() != 2 || norm.outputs.size() != 1) return std::nullopt;
  NormMatch m;
  m.nodes = {norm_index};
  // The numerator and the square root of the variance.
  std::string numerator;
  const ir::Node* root = nullptr;
  if (is_onnx_op(norm, "Div")) {
    numerator = norm.inputs[0];
    root = facts.producer(norm.inputs[1], "Sqrt");
  } else if (is_onnx_op(norm, "Mul")) {
    for (int side = 0; side < 2 && !root; ++side) {
      const std::string& inverse = norm.inputs[size_t(side)];
      const ir::Node* r = facts.producer(inverse, "Reciprocal");
      const ir::Node* one_over = facts.producer(inverse, "Div");
      std::string root_value;
      if (r && r->inputs.size() == 1) root_value = r->inputs[0];
      if (one_over && one_over->inputs.size() == 2 && facts.is_scalar(one_over->inputs[0], 1.0, 1))
        root_value = one_over->inputs[1];
      if (root_value.empty() || !(root = facts.producer(root_value, "Sqrt"))) continue;
      m.nodes.push_back(size_t(facts.index(r ? r : one_over)));
      numerator = norm.inputs[size_t(1 - side)];
    }
  }
  if (!root || root->inputs.size() != 1) return std::nullopt;
  m.nodes.push_back(size_t(facts.index(root)));
  const ir::Node* plus_eps = facts.producer(root->inputs[0], "Add");
  if (!plus_eps || plus_eps->inputs.size() != 2) return std::nullopt;
  m.nodes.push_back(size_t(facts.index(plus_eps)));
  const ir::Node* variance = nullptr;
  std::string eps_value;
  for (int side = 0; side < 2 && !variance; ++side) {
    variance = facts.producer(plus_eps->inputs[size_t(side)], "ReduceMean");
    eps_value = plus_eps->inputs[size_t(1 - side)];
  }
  if (!variance || variance->inputs.empty()) return std::nullopt;
  m.nodes.push_back(size_t(facts.index(variance)));
  const int sq_index = view.producer(variance->inputs[0]);
  if (sq_index < 0) return std::nullopt;
  m.nodes.push_back(size_t(sq_index));
  const std::string t = squared(graph.nodes[size_t(sq_index)], facts);
  if (t.empty()) return std::nullopt;

  // LayerNorm when the squared value is x minus its mean over the same axes (the
  // numerator the same Sub, or a second Sub of the same two values); RMSNorm otherwise.
  const ir::Node* centre = facts.producer(t, "Sub");
  const ir::Node* mean = centre && centre->inputs.size() == 2
                             ? facts.producer(centre->inputs[1], "ReduceMean")
                             : nullptr;
  if (mean && !mean->inputs.empty() && mean->inputs[0] == centre->inputs[0]) {
    m.x = centre->inputs[0];
    const std::optional<int64_t> k_mean = facts.trailing_axes(*mean, m.x);
    const std::optional<int64_t> k_var = facts.trailing_axes(*variance, t);
    if (!k_mean || k_mean != k_var) return std::nullopt;
    m.axes = *k_mean;
    m.nodes.push_back(size_t(facts.index(centre)));
    m.nodes.push_back(size_t(facts.index(mean)));
    if (numerator != t) {
      const ir::Node* again = facts.producer(numerator, "Sub");
      if (!again || again->inputs != centre->inputs) return std::nullopt;
      m.nodes.push_back(size_t(facts.index(again)));
    }
  } else {
    if (numerator != t) return std::nullopt;
    m.rms = true;
    m.x = t;
    const std::optional<int64_t> k = facts.trailing_axes(*variance, t);
    if (!k) return std::nullopt;
    m.axes = *k;
  }
  const std::optional<double> eps = scalar_value(view, eps_value);
  if (!eps || !std::isfinite(*eps) || !facts.is_scalar(eps_value, *eps, m.axes))
    return std::nullopt;
  m.epsilon = *eps;

  // Scale, then the optional shift.
  const int scale_index = view.sole_consumer(norm.outputs[0]);
  if (scale_index < 0) return std::nullopt;
  const ir::Node& scale = graph.nodes[size_t(scale_index)];
  if (!is_onnx_op(scale, "Mul") || scale.outputs.size() != 1) return std::nullopt;
  m.gamma = other_input(scale, norm.outputs[0]);
  const Tensor* gamma = view.constant(m.gamma);
  if (!gamma || !is_float_type(gamma->dtype()) || !facts.fits_normalized(m.gamma, m.x, m.axes))
    return std::nullopt;
  m.nodes.push_back(size_t(scale_index));
  m.last = size_t(scale_index);
  const int shift_index = view.sole_consumer(scale.outputs[0]);
  if (shift_index >= 0) {
    const ir::Node& shift = graph.nodes[size_t(shift_index)];
    const std::string beta = is_onnx_op(shift, "Add") && shift.outputs.size() == 1
                                 ? other_input(shift, scale.outputs[0])
                                 : "";
    const Tensor* b = beta.empty() ? nullptr : view.constant(beta);
    if (!m.rms && b && b->dtype() == gamma->dtype() && facts.fits_normalized(beta, m.x, m.axes)) {
      m.beta = beta;
      m.nodes.push_back(size_t(shift_index));
      m.last = size_t(shift_index);
    }
  }
  return m;
}

// True when nothing outside the pattern reads a value it computes, except its last output.
bool self_contained(const ir::Graph& graph, const NormMatch& m, const GraphView& view) {
  for (size_t n : m.nodes) {
    if (n == m.last) continue;
    for (const std::string& out : graph.nodes[n].outputs) {
      if (out.empty()) continue;
      if (view.is_graph_output(out) || view.use_count(out) != view.consumers(out).size())
        return false;
      for (size_t reader : view.consumers(out))
        if (std::find(m.nodes.begin(), m.nodes.end(), reader) == m.nodes.end()) return false;
    }
  }
  return true;
}

}  // namespace

Status fuse_layer_norm(ir::Graph& graph, PassContext& ctx) {
  GraphView view(graph, ctx);
  GraphEditor edit(graph, view);
  Facts facts(graph, ctx, view);
  const bool onnx_rms = ctx.opset("") >= 23;
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    if (edit.removed(n) || !is_onnx_op(graph.nodes[n], {"Div", "Mul"})) continue;
    const std::optional<NormMatch> m = match(graph, n, facts, view);
    if (!m || !self_contained(graph, *m, view)) continue;
    if (std::any_of(m->nodes.begin(), m->nodes.end(), [&](size_t i) { return edit.removed(i); }))
      continue;
    ir::Node& out = graph.nodes[m->last];
    out.op_type = m->rms ? (onnx_rms ? "RMSNormalization" : "SimplifiedLayerNormalization")
                         : "LayerNormalization";
    out.domain.clear();
    out.inputs = {m->x, m->gamma};
    if (!m->beta.empty()) out.inputs.push_back(m->beta);
    out.attributes = {ir::Attribute::of_int("axis", -m->axes),
                      ir::Attribute::of_float("epsilon", float(m->epsilon))};
    for (size_t i : m->nodes)
      if (i != m->last) edit.remove(i);
  }
  edit.apply();
  return Status();
}

}  // namespace nxrt::optimizer
