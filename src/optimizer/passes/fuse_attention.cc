// Attention as PyTorch and TensorFlow export it, per head:
//   s = MatMul(Q [* c1], Kt [* c2]) [* c3 | / c3] [+ bias]
//   y = MatMul(Softmax(s, last axis) or nxrt SafeSoftmax(s), V)
// becomes one nxrt FusedAttention(Q, K, V, bias) with q_scale c1, k_scale c2 and scale c3
// (or 1 / c3).
// The head transposes around it are read through instead of run: a Q or V made by
// Transpose(0, 2, 1, 3) is read before it ("bshd"), as is a Kt made by Transpose(0, 2, 3,
// 1), by Transpose(0, 1, 3, 2) of K, or by the Reshape / Transpose(0, 2, 1) / Reshape that
// PyTorch's scaled_dot_product_attention export writes for K^T; a y read only by
// Transpose(0, 2, 1, 3) is written in that order. Those Transposes then have no readers
// left (unless something else reads them) and go with the dead nodes.
//
// The rewrite keeps values and shapes, so it requires: Q, Kt and V of rank 4 and the bias
// of rank 4 at most (shape inference from the graph inputs); the scale constants float32
// scalars, one of them (or the bias) a constant so the chain is known to be float32;
// every value inside the chain read by the chain alone.
#include <optional>

#include "optimizer/graph_view.h"
#include "optimizer/passes/passes.h"

namespace nxrt::optimizer {
namespace {

struct AttentionMatch {
  std::string q, k, v, bias, out;
  std::string q_layout = "bhsd", k_layout = "bhds", v_layout = "bhsd", out_layout = "bhsd";
  double scale = 1.0, q_scale = 1.0, k_scale = 1.0;
  size_t weighted = 0;          // the MatMul by V, which becomes the fused node
  std::vector<size_t> removed;  // the other chain nodes
};

class AttentionMatcher {
 public:
  AttentionMatcher(const ir::Graph& graph, const GraphView& view, const GraphEditor& edit,
                   ShapeFacts& shapes, int64_t opset)
      : graph_(graph), view_(view), edit_(edit), shapes_(shapes), opset_(opset) {}

  // The match ending at the MatMul that reads softmax node `sm`'s output; nullopt when
  // the chain is not attention or the rewrite would not keep its values.
  std::optional<AttentionMatch> match(size_t sm) const {
    const ir::Node& softmax = graph_.nodes[sm];
    const int pv = sole_reader(softmax.outputs[0], "MatMul", 2);
    if (pv < 0 || graph_.nodes[size_t(pv)].inputs[0] != softmax.outputs[0] ||
        !softmax_over_last_axis(softmax))
      return std::nullopt;
    AttentionMatch m;
    m.weighted = size_t(pv);
    m.removed.push_back(sm);
    // The scores: the product, or [Add(product, bias) or Add(bias, product)].
    std::optional<Product> p = product(softmax.inputs[0], sm);
    if (const int add = fused_producer(softmax.inputs[0], "Add", sm); !p && add >= 0) {
      const ir::Node& node = graph_.nodes[size_t(add)];
      for (size_t i = 0; i < 2 && !p; ++i) {
        p = product(node.inputs[i], size_t(add));
        m.bias = node.inputs[1 - i];
      }
      if (!p) return std::nullopt;
      if (const Tensor* t = view_.constant(m.bias); t && t->dtype() == DataType::kFloat)
        p->float_known = true;
      m.removed.push_back(size_t(add));
    }
    if (!p) return std::nullopt;
    const ir::Node& qk = graph_.nodes[p->matmul];
    std::string q = qk.inputs[0], kt = qk.inputs[1], operand;
    double operand_scale[2] = {1.0, 1.0};
    for (int side = 0; side < 2; ++side) {
      std::string& value = side == 0 ? q : kt;
      const int mul = fused_producer(value, "Mul", p->matmul);
      if (mul >= 0 && take_scale(graph_.nodes[size_t(mul)], *p, operand, operand_scale[side])) {
        value = operand;
        p->nodes.push_back(size_t(mul));
      }
    }
    const ir::Node& weighted = graph_.nodes[size_t(pv)];
    m.v = weighted.inputs[1];
    if (!p->float_known || !rank4(q) || !rank4(kt) || !rank4(m.v) || !bias_fits(m.bias))
      return std::nullopt;
    m.scale = p->scale;
    m.q_scale = operand_scale[0];
    m.k_scale = operand_scale[1];
    m.removed.insert(m.removed.end(), p->nodes.begin(), p->nodes.end());
    m.q = read_through(q, {0, 2, 1, 3}, m.q_layout);
    m.v = read_through(m.v, {0, 2, 1, 3}, m.v_layout);
    m.k = keys(kt, m.k_layout);
    m.out = weighted.outputs[0];
    const int t = sole_reader(m.out, "Transpose", 1);
    if (t >= 0 && perm(graph_.nodes[size_t(t)]) == std::vector<int64_t>{0, 2, 1, 3}) {
      m.out = graph_.nodes[size_t(t)].outputs[0];
      m.out_layout = "bshd";
      m.removed.push_back(size_t(t));
    }
    return m;
  }

 private:
  // The scores' MatMul(Q', Kt') and the scalings after it (Mul or Div by constants).
  struct Product {
    size_t matmul = 0;
    double scale = 1.0;
    bool float_known = false;   // a float32 constant takes part
    std::vector<size_t> nodes;  // the MatMul, its scalings and those of its operands
  };

  // The product that makes `s`, read by `reader` alone; nullopt when there is none.
  std::optional<Product> product(std::string s, size_t reader) const {
    Product p;
    std::string operand;
    for (int scaled = fused_producer(s, {"Mul", "Div"}, reader); scaled >= 0;
         scaled = fused_producer(s, {"Mul", "Div"}, reader)) {
      if (!take_scale(graph_.nodes[size_t(scaled)], p, operand, p.scale)) break;
      p.nodes.push_back(size_t(scaled));
      s = operand;
      reader = size_t(scaled);
    }
    const int qk = fused_producer(s, "MatMul", reader);
    if (qk < 0) return std::nullopt;
    p.matmul = size_t(qk);
    p.nodes.push_back(size_t(qk));
    return p;
  }

  // The node that alone reads `value`, when it is op `op` with `inputs` inputs and one
  // output; -1 otherwise.
  int sole_reader(const std::string& value, std::string_view op, size_t inputs) const {
    const int r = view_.sole_consumer(value);
    if (r < 0 || edit_.removed(size_t(r))) return -1;
    const ir::Node& node = graph_.nodes[size_t(r)];
    return is_onnx_op(node, op) && node.inputs.size() == inputs && node.outputs.size() == 1 ? r
                                                                                            : -1;
  }

  // The producer of `value` when it is one of `ops` with two inputs and one output and
  // `reader` alone reads `value`; -1 otherwise.
  int fused_producer(const std::string& value, std::initializer_list<std::string_view> ops,
                     size_t reader) const {
    const int p = edit_.fusable_producer(value, reader);
    if (p < 0) return -1;
    const ir::Node& node = graph_.nodes[size_t(p)];
    return is_onnx_op(node, ops) && node.inputs.size() == 2 && node.outputs.size() == 1 ? p : -1;
  }
  int fused_producer(const std::string& value, std::string_view op, size_t reader) const {
    return fused_producer(value, {op}, reader);
  }

  // A float32 one-element constant of at most four dims (a Mul by it keeps a rank-4
  // shape).
  std::optional<float> float_scalar(const std::string& value) const {
    const Tensor* t = view_.constant(value);
    if (!t || t->dtype() != DataType::kFloat || t->numel() != 1 || t->rank() > 4)
      return std::nullopt;
    return *t->data<float>();
  }

  // Mul(x, c), Mul(c, x) or Div(x, c): folds c into `scale` and names x in `operand`.
  bool take_scale(const ir::Node& node, Product& p, std::string& operand, double& scale) const {
    const bool div = is_onnx_op(node, "Div");
    for (size_t i = 0; i < (div ? 1u : 2u); ++i) {
      const std::optional<float> c = float_scalar(node.inputs[1 - i]);
      if (!c || (div && *c == 0.0f)) continue;
      scale = div ? scale / *c : scale * *c;
      p.float_known = true;
      operand = node.inputs[i];
      return true;
    }
    return false;
  }

  bool rank4(const std::string& value) const {
    const ops::SymShape* s = shapes_.shape(value);
    return s && s->rank() == 4;
  }

  bool softmax_over_last_axis(const ir::Node& softmax) const {
    const ir::Attribute* axis = softmax.find_attribute("axis");
    // Before opset 13, Softmax defaults to axis 1 and coerces to 2-D there.
    const bool nxrt = softmax.domain == "nxrt";
    if (!axis) return nxrt || opset_ >= 13;
    return axis->i == -1 || axis->i == 3;
  }

  // A bias of rank 4 or less: the Add then keeps the scores' rank. (Its dims need no
  // proof: the kernel broadcasts them as Add and MatMul do, growing batch, heads and a
  // single query row as the unfused chain would.)
  bool bias_fits(const std::string& bias) const {
    if (bias.empty()) return true;
    const ops::SymShape* b = shapes_.shape(bias);
    return b && b->rank() <= 4;
  }

  static std::vector<int64_t> perm(const ir::Node& transpose) {
    const ir::Attribute* p = transpose.find_attribute("perm");
    return p ? p->ints : std::vector<int64_t>{};
  }

  // The input of the Transpose by `p` that makes `value`, or "".
  std::string transposed_from(const std::string& value, const std::vector<int64_t>& p) const {
    const int t = view_.producer(value);
    if (t < 0 || edit_.removed(size_t(t))) return "";
    const ir::Node& node = graph_.nodes[size_t(t)];
    if (!is_onnx_op(node, "Transpose") || node.inputs.size() != 1 || perm(node) != p) return "";
    return node.inputs[0];
  }

  // `value`, or the input of the Transpose by `p` that makes it (layout "bshd").
  std::string read_through(const std::string& value, const std::vector<int64_t>& p,
                           std::string& layout) const {
    std::string before = transposed_from(value, p);
    if (before.empty()) return value;
    layout = "bshd";
    return before;
  }

  // The keys behind Kt ([B, H, D, T]) in the furthest layout the kernel reads.
  std::string keys(const std::string& kt, std::string& layout) const {
    if (std::string k = transposed_from(kt, {0, 2, 3, 1}); !k.empty()) {
      layout = "bshd";
      return k;
    }
    std::string k = transposed_from(kt, {0, 1, 3, 2});
    if (k.empty()) k = reshaped_transpose(kt);
    if (k.empty()) return kt;  // layout stays "bhds"
    layout = "bhsd";
    return read_through(k, {0, 2, 1, 3}, layout);
  }

  // K when kt = Reshape(Transpose(Reshape(K, [B*H, T, D]), [0, 2, 1]), [B, H, D, T]), as
  // shape inference proves the two reshapes; "" otherwise. (With B = 0 everything is
  // empty, whatever the second reshape's split.)
  std::string reshaped_transpose(const std::string& kt) const {
    const int r2 = view_.producer(kt);
    if (r2 < 0 || !is_onnx_op(graph_.nodes[size_t(r2)], "Reshape")) return "";
    const std::string t3 = graph_.nodes[size_t(r2)].inputs[0];
    const int t = view_.producer(t3);
    if (t < 0 || !is_onnx_op(graph_.nodes[size_t(t)], "Transpose") ||
        perm(graph_.nodes[size_t(t)]) != std::vector<int64_t>{0, 2, 1})
      return "";
    const std::string r1 = graph_.nodes[size_t(t)].inputs[0];
    const int r = view_.producer(r1);
    if (r < 0 || !is_onnx_op(graph_.nodes[size_t(r)], "Reshape")) return "";
    const std::string k = graph_.nodes[size_t(r)].inputs[0];
    const ops::SymShape* ks = shapes_.shape(k);
    const ops::SymShape* merged = shapes_.shape(r1);
    const ops::SymShape* out = shapes_.shape(kt);
    if (!ks || !merged || !out || ks->rank() != 4 || merged->rank() != 3 || out->rank() != 4)
      return "";
    const auto& K = ks->dims;
    // The first reshape keeps T and D, so it merges B and H; the second keeps D and T,
    // so its leading dims multiply to B * H, and one of them equal to B or H makes the
    // other the other (a Reshape's head count comes from a -1 inference cannot follow).
    const bool proven = merged->dims[1].same_as(K[2]) && merged->dims[2].same_as(K[3]) &&
                        out->dims[2].same_as(K[3]) && out->dims[3].same_as(K[2]) &&
                        (out->dims[0].same_as(K[0]) || out->dims[1].same_as(K[1]));
    return proven ? k : "";
  }

 private:
  const ir::Graph& graph_;
  const GraphView& view_;
  const GraphEditor& edit_;
  ShapeFacts& shapes_;
  int64_t opset_;  // of the ONNX domain
};

}  // namespace

Status fuse_attention(ir::Graph& graph, PassContext& ctx) {
  GraphView view(graph, ctx);
  GraphEditor edit(graph, view);
  ShapeFacts shapes(graph, ctx);
  AttentionMatcher matcher(graph, view, edit, shapes, ctx.opset(""));
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const ir::Node& node = graph.nodes[n];
    const bool safe = node.domain == "nxrt" && node.op_type == "SafeSoftmax";
    if ((!safe && !is_onnx_op(node, "Softmax")) || node.inputs.size() != 1 ||
        node.outputs.size() != 1 || edit.removed(n))
      continue;
    std::optional<AttentionMatch> m = matcher.match(n);
    if (!m || !ctx.import_domain("nxrt", 1)) continue;
    ir::Node& fused = graph.nodes[m->weighted];
    fused.op_type = "FusedAttention";
    fused.domain = "nxrt";
    fused.inputs = {m->q, m->k, m->v};
    if (!m->bias.empty()) fused.inputs.push_back(m->bias);
    fused.outputs = {m->out};
    fused.attributes = {ir::Attribute::of_float("scale", float(m->scale)),
                        ir::Attribute::of_float("q_scale", float(m->q_scale)),
                        ir::Attribute::of_float("k_scale", float(m->k_scale)),
                        ir::Attribute::of_string("q_layout", m->q_layout),
                        ir::Attribute::of_string("k_layout", m->k_layout),
                        ir::Attribute::of_string("v_layout", m->v_layout),
                        ir::Attribute::of_string("out_layout", m->out_layout),
                        ir::Attribute::of_int("safe", safe ? 1 : 0)};
    for (size_t r : m->removed) edit.remove(r);
  }
  edit.apply();
  return Status();
}

}  // namespace nxrt::optimizer
