// Gelu written out by exporters becomes one node: one pass over the tensor with the vector
// erf or tanh instead of five to nine. The exact form, x * 0.5 * (1 + Erf(x / sqrt(2))),
// becomes Gelu (ai.onnx from opset 20, else com.microsoft); the tanh form,
// x * 0.5 * (1 + Tanh(sqrt(2 / pi) (x + 0.044715 x^3))), Gelu with approximate = "tanh"
// (opset 20) or com.microsoft FastGelu, as onnxruntime's GeluFusion and FastGeluFusion do.
// The heads matched:
//   Div(x, sqrt 2) or Mul(x, 1/sqrt 2) -> Erf
//   Add(x, 0.044715 x^3) -> Mul(sqrt(2 / pi)) -> Tanh, the cubic term any product of three
//   x and the constant (Mul chains in any order, or Pow(x, 3)): JAX writes
//   x * (x * (0.044715 * x)), PyTorch x * x * x * 0.044715 or Pow
// and the tails, after Add(1):
//   -> Mul(x) -> Mul(0.5);  -> Mul(Mul(x, 0.5));  -> Mul(0.5) -> Mul(x)
#include <cmath>

#include "optimizer/graph_view.h"
#include "optimizer/passes/passes.h"

namespace nxrt::optimizer {
namespace {

// True when `value` is a constant float32 scalar within 1e-4 (relative) of `want`.
bool is_scalar(const GraphView& view, const std::string& value, double want) {
  const Tensor* t = view.constant(value);
  if (!t || t->dtype() != DataType::kFloat || t->numel() != 1) return false;
  return std::fabs(double(t->data<float>()[0]) - want) <= 1e-4 * std::fabs(want);
}

// For a binary node reading `value` and a constant scalar `want` (either order): true.
bool binary_with_scalar(const ir::Node& node, const std::string& value, const GraphView& view,
                        double want) {
  if (node.inputs.size() != 2) return false;
  return (node.inputs[0] == value && is_scalar(view, node.inputs[1], want)) ||
         (node.inputs[1] == value && is_scalar(view, node.inputs[0], want));
}

// The operand of two-input `node` beside a constant scalar `want` (either order); "" when
// neither is one.
std::string beside_scalar(const GraphView& view, const ir::Node& node, double want) {
  if (node.inputs.size() != 2) return "";
  if (is_scalar(view, node.inputs[1], want)) return node.inputs[0];
  if (is_scalar(view, node.inputs[0], want)) return node.inputs[1];
  return "";
}

// The exact form's head: x for Erf node `e` reading x / sqrt 2 (Div) or x * (1 / sqrt 2),
// read by nothing but the Erf; appends that node to `gone`. "" when it does not match.
std::string match_erf_head(const ir::Graph& graph, const GraphView& view, const GraphEditor& edit,
                           size_t e, std::vector<size_t>& gone) {
  const std::string& in = graph.nodes[e].inputs[0];
  const int s = edit.fusable_producer(in, e);
  if (s < 0) return "";
  const ir::Node& scale = graph.nodes[size_t(s)];
  std::string x;
  if (is_onnx_op(scale, "Div") && scale.inputs.size() == 2 &&
      is_scalar(view, scale.inputs[1], std::sqrt(2.0)))
    x = scale.inputs[0];
  else if (is_onnx_op(scale, "Mul"))
    x = beside_scalar(view, scale, std::sqrt(0.5));
  if (!x.empty()) gone.push_back(size_t(s));
  return x;
}

// A product of x, x, x and float constants, each intermediate Mul read only by the next:
// how many times x appears, the constants' product and the nodes.
struct Product {
  int x_count = 0;
  double coefficient = 1;
  std::vector<size_t> nodes;
  bool ok = true;
};

void collect_product(const ir::Graph& graph, const GraphView& view, const GraphEditor& edit,
                     const std::string& value, const std::string& x, int reader, Product& p) {
  if (!p.ok) return;
  if (value == x) {
    ++p.x_count;
    return;
  }
  const Tensor* c = view.constant(value);
  if (c) {
    p.ok = c->dtype() == DataType::kFloat && c->numel() == 1;
    if (p.ok) p.coefficient *= double(c->data<float>()[0]);
    return;
  }
  const int n = view.producer(value);
  p.ok = n >= 0 && !edit.removed(size_t(n)) && view.sole_consumer(value) == reader &&
         p.nodes.size() < 4;
  if (!p.ok) return;
  const ir::Node& node = graph.nodes[size_t(n)];
  p.nodes.push_back(size_t(n));
  if (is_onnx_op(node, "Mul") && node.inputs.size() == 2) {
    collect_product(graph, view, edit, node.inputs[0], x, n, p);
    collect_product(graph, view, edit, node.inputs[1], x, n, p);
  } else if (is_onnx_op(node, "Pow") && node.inputs.size() == 2 && node.inputs[0] == x &&
             is_scalar(view, node.inputs[1], 3.0)) {
    p.x_count += 3;
  } else {
    p.ok = false;
  }
}

// The tanh form's head: x for Tanh node `t` reading sqrt(2 / pi) (x + 0.044715 x^3);
// appends the nodes before the Tanh to `gone`. "" when it does not match.
std::string match_tanh_head(const ir::Graph& graph, const GraphView& view, const GraphEditor& edit,
                            size_t t, std::vector<size_t>& gone) {
  const ir::Node& tanh = graph.nodes[t];
  const int m = edit.fusable_producer(tanh.inputs[0], t);
  if (m < 0) return "";
  const ir::Node& scale = graph.nodes[size_t(m)];
  if (!is_onnx_op(scale, "Mul")) return "";
  const std::string inner = beside_scalar(view, scale, std::sqrt(2.0 / M_PI));
  const int a = view.producer(inner);
  if (a < 0 || edit.removed(size_t(a)) || view.sole_consumer(inner) != m) return "";
  const ir::Node& add = graph.nodes[size_t(a)];
  if (!is_onnx_op(add, "Add") || add.inputs.size() != 2) return "";
  for (int side = 0; side < 2; ++side) {
    const std::string& x = add.inputs[size_t(side)];
    Product cubic;
    collect_product(graph, view, edit, add.inputs[size_t(1 - side)], x, a, cubic);
    if (!cubic.ok || cubic.x_count != 3 ||
        std::fabs(cubic.coefficient - 0.044715) > 1e-4 * 0.044715)
      continue;
    gone.insert(gone.end(), cubic.nodes.begin(), cubic.nodes.end());
    gone.push_back(size_t(a));
    gone.push_back(size_t(m));
    return x;
  }
  return "";
}

// The tail after Erf or Tanh node `f`: Add(1), then x and 0.5 multiplied in in one of the
// three orders above. Returns the last node (whose output the Gelu takes over) and
// appends the others to `gone`; -1 when it does not match.
int match_tail(const ir::Graph& graph, const GraphView& view, const GraphEditor& edit, size_t f,
               const std::string& x, std::vector<size_t>& gone) {
  const int a = view.sole_consumer(graph.nodes[f].outputs[0]);
  if (a < 0 || edit.removed(size_t(a))) return -1;
  const ir::Node& add = graph.nodes[size_t(a)];
  if (!is_onnx_op(add, "Add") || add.outputs.size() != 1 ||
      !binary_with_scalar(add, graph.nodes[f].outputs[0], view, 1.0))
    return -1;
  const int m = view.sole_consumer(add.outputs[0]);
  if (m < 0 || edit.removed(size_t(m))) return -1;
  const ir::Node& mul = graph.nodes[size_t(m)];
  if (!is_onnx_op(mul, "Mul") || mul.outputs.size() != 1) return -1;
  const std::string other = other_input(mul, add.outputs[0]);
  gone.push_back(size_t(a));
  if (binary_with_scalar(mul, add.outputs[0], view, 0.5)) {
    // x * ((1 + f) * 0.5)
    const int t = view.sole_consumer(mul.outputs[0]);
    if (t < 0 || edit.removed(size_t(t))) return -1;
    const ir::Node& times_x = graph.nodes[size_t(t)];
    if (!is_onnx_op(times_x, "Mul") || other_input(times_x, mul.outputs[0]) != x) return -1;
    gone.push_back(size_t(m));
    return t;
  }
  if (other == x) {
    // (x * (1 + f)) * 0.5
    const int h = view.sole_consumer(mul.outputs[0]);
    if (h < 0 || edit.removed(size_t(h))) return -1;
    const ir::Node& half = graph.nodes[size_t(h)];
    if (!is_onnx_op(half, "Mul") || !binary_with_scalar(half, mul.outputs[0], view, 0.5)) return -1;
    gone.push_back(size_t(m));
    return h;
  }
  // (x * 0.5) * (1 + f)
  const int h = view.producer(other);
  if (h < 0 || edit.removed(size_t(h)) || view.sole_consumer(other) != m) return -1;
  const ir::Node& half = graph.nodes[size_t(h)];
  if (!is_onnx_op(half, "Mul") || !binary_with_scalar(half, x, view, 0.5)) return -1;
  gone.push_back(size_t(h));
  return m;
}

}  // namespace

Status fuse_gelu(ir::Graph& graph, PassContext& ctx) {
  GraphView view(graph, ctx);
  GraphEditor edit(graph, view);
  const bool onnx_gelu = ctx.opset("") >= 20;
  for (size_t f = 0; f < graph.nodes.size(); ++f) {
    const ir::Node& fn = graph.nodes[f];
    const bool erf = is_onnx_op(fn, "Erf");
    if ((!erf && !is_onnx_op(fn, "Tanh")) || fn.inputs.size() != 1 || fn.outputs.size() != 1)
      continue;
    std::vector<size_t> gone;
    const std::string x = erf ? match_erf_head(graph, view, edit, f, gone)
                              : match_tanh_head(graph, view, edit, f, gone);
    if (x.empty()) continue;
    gone.push_back(f);
    const int last = match_tail(graph, view, edit, f, x, gone);
    if (last < 0) continue;
    if (!onnx_gelu && !ctx.import_domain("com.microsoft", 1)) return Status();
    ir::Node& out = graph.nodes[size_t(last)];
    out.op_type = onnx_gelu || erf ? "Gelu" : "FastGelu";
    out.domain = onnx_gelu ? "" : "com.microsoft";
    out.inputs = {x};
    out.attributes.clear();
    if (onnx_gelu && !erf) {
      ir::Attribute approximate;
      approximate.name = "approximate";
      approximate.type = ir::Attribute::Type::kString;
      approximate.s = "tanh";
      out.attributes.push_back(std::move(approximate));
    }
    for (size_t n : gone) edit.remove(n);
  }
  edit.apply();
  return Status();
}

}  // namespace nxrt::optimizer
