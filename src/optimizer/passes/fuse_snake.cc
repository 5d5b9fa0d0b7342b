// The Snake activation of neural vocoders (BigVGAN, HiFi-GAN variants, Kokoro's decoder),
// y = x + r * sin(alpha * x)^2 with per-channel alpha and r = 1 / beta, exported as
//   Add(x, Mul(r, Pow(Sin(Mul(alpha, x)), 2)))   (Pow may be Mul(s, s); operands either way)
// becomes one nxrt Snake(x, alpha, r): one pass over x instead of five over [N, C, L].
// It requires alpha and r float32 constants of one shape, [1, C, 1] or [C, 1] (one value
// per channel), and every value inside read by the pattern alone. The kernel broadcasts
// x against them as the Mul and Add do, whatever x's shape.
#include <optional>

#include "optimizer/graph_view.h"
#include "optimizer/passes/passes.h"

namespace nxrt::optimizer {
namespace {

class SnakeMatcher {
 public:
  SnakeMatcher(const ir::Graph& graph, const GraphView& view, const GraphEditor& edit)
      : graph_(graph), view_(view), edit_(edit) {}

  struct Match {
    std::string x, alpha, r;
    size_t add = 0;              // becomes the Snake node
    std::vector<size_t> others;  // Mul(alpha, x), Sin, the square, Mul(r, .)
  };

  std::optional<Match> match(size_t sin) const {
    Match m;
    const ir::Node& sine = graph_.nodes[sin];
    const int scaled = producer(sine.inputs[0], "Mul", sin);
    if (scaled < 0) return std::nullopt;
    const ir::Node& mul = graph_.nodes[size_t(scaled)];
    for (size_t i = 0; i < 2 && m.alpha.empty(); ++i)
      if (per_channel(mul.inputs[i])) {
        m.alpha = mul.inputs[i];
        m.x = mul.inputs[1 - i];
      }
    if (m.alpha.empty()) return std::nullopt;
    const int square = sole_reader(sine.outputs[0], sin);
    if (square < 0 || !squares(graph_.nodes[size_t(square)], sine.outputs[0])) return std::nullopt;
    const int weighted = sole_reader(graph_.nodes[size_t(square)].outputs[0], size_t(square));
    if (weighted < 0 || !is_onnx_op(graph_.nodes[size_t(weighted)], "Mul")) return std::nullopt;
    m.r = other_input(graph_.nodes[size_t(weighted)], graph_.nodes[size_t(square)].outputs[0]);
    const int add = sole_reader(graph_.nodes[size_t(weighted)].outputs[0], size_t(weighted));
    if (m.r.empty() || !per_channel(m.r) || add < 0 ||
        !is_onnx_op(graph_.nodes[size_t(add)], "Add"))
      return std::nullopt;
    if (other_input(graph_.nodes[size_t(add)], graph_.nodes[size_t(weighted)].outputs[0]) != m.x)
      return std::nullopt;
    if (view_.constant(m.alpha)->shape() != view_.constant(m.r)->shape()) return std::nullopt;
    m.add = size_t(add);
    m.others = {size_t(scaled), sin, size_t(square), size_t(weighted)};
    return m;
  }

 private:
  // The producer of `value` when it is op `op` (two inputs, one output) and `reader`
  // alone reads `value`; -1 otherwise.
  int producer(const std::string& value, std::string_view op, size_t reader) const {
    const int p = edit_.fusable_producer(value, reader);
    if (p < 0) return -1;
    const ir::Node& node = graph_.nodes[size_t(p)];
    return is_onnx_op(node, op) && node.inputs.size() == 2 && node.outputs.size() == 1 ? p : -1;
  }

  // The node that alone reads `value` (made by node `from`), once or twice (Mul(s, s)),
  // with two inputs and one output; -1 otherwise.
  int sole_reader(const std::string& value, size_t from) const {
    const int r = edit_.only_reader(value);
    if (r < 0 || size_t(r) == from) return -1;
    const ir::Node& node = graph_.nodes[size_t(r)];
    return node.inputs.size() == 2 && node.outputs.size() == 1 ? r : -1;
  }

  // Pow(s, 2) or Mul(s, s).
  bool squares(const ir::Node& node, const std::string& s) const {
    if (is_onnx_op(node, "Mul")) return node.inputs[0] == s && node.inputs[1] == s;
    if (!is_onnx_op(node, "Pow") || node.inputs[0] != s) return false;
    const Tensor* e = view_.constant(node.inputs[1]);
    const std::optional<double> two = scalar_value(view_, node.inputs[1]);
    return e && e->rank() <= 1 && two && *two == 2.0;
  }

  // A float32 constant of shape [1, C, 1] or [C, 1]: one value per channel of [N, C, L].
  bool per_channel(const std::string& value) const {
    const Tensor* t = view_.constant(value);
    if (!t || t->dtype() != DataType::kFloat) return false;
    const Shape& s = t->shape();
    return (s.size() == 3 && s[0] == 1 && s[2] == 1) || (s.size() == 2 && s[1] == 1);
  }

  const ir::Graph& graph_;
  const GraphView& view_;
  const GraphEditor& edit_;
};

}  // namespace

Status fuse_snake(ir::Graph& graph, PassContext& ctx) {
  GraphView view(graph, ctx);
  GraphEditor edit(graph, view);
  SnakeMatcher matcher(graph, view, edit);
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const ir::Node& node = graph.nodes[n];
    if (!is_onnx_op(node, "Sin") || node.inputs.size() != 1 || node.outputs.size() != 1 ||
        edit.removed(n))
      continue;
    std::optional<SnakeMatcher::Match> m = matcher.match(n);
    if (!m || !ctx.import_domain("nxrt", 1)) continue;
    ir::Node& snake = graph.nodes[m->add];
    snake.op_type = "Snake";
    snake.domain = "nxrt";
    snake.inputs = {m->x, m->alpha, m->r};
    snake.attributes.clear();
    for (size_t r : m->others) edit.remove(r);
  }
  edit.apply();
  return Status();
}

}  // namespace nxrt::optimizer
