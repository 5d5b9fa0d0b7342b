// Float32 2-D convolutions to nxrt's channel-blocked ops (ep/cpu/vmath/nchwc.h), and the
// ops between them that run on the blocked layout as they are, so that a chain of
// convolutions reorders its data once at the end rather than per node:
//   - Conv and FusedConv (not the runtime-BatchNormalization form) with constant float
//     weights, 4-D, group 1 (any input) or depthwise (a blocked input), at least 16
//     output channels (fewer would waste most of a 16-lane block): NchwcConv. A sum
//     input Z must itself be blocked.
//   - MaxPool / AveragePool (2-D, one output), GlobalAveragePool / GlobalMaxPool and nxrt
//     ChannelAffine (constant scale and shift) of a blocked input: their Nchwc forms.
//   - Concat on the channel axis of blocked inputs whose channels fill whole blocks, Split
//     on the channel axis into parts of whole blocks, nearest-neighbour Resize of the map
//     (constant scales), and
//     elementwise Add / Sub / Mul / Max / Min of two blocked inputs with the same channels,
//     and activations of a blocked input (Relu, Sigmoid, Clip, ...): the same ONNX ops on
//     the 5-D blocked tensors (numpy broadcasting of [N, Cb, H, W, 16] against
//     [N, Cb, 1, 1, 16] is the 4-D one).
// A blocked value that anything else reads (another op, a graph output, a subgraph) gets
// an NchwcToNchw node right after its producer, writing the original name. The padding
// channels of a partial last block hold finite values that no result reads: blocked
// convolutions weigh them with zeros, Concat takes only whole blocks and NchwcToNchw drops
// them.
#include <optional>
#include <unordered_map>

#include "ep/cpu/vmath/nchwc.h"
#include "optimizer/passes/activation.h"
#include "optimizer/passes/passes.h"

namespace nxrt::optimizer {
namespace {

constexpr int64_t kBlock = 16;

struct BlockedValue {
  std::string name;  // the blocked tensor's value
  int64_t channels;  // channels of the original [N, C, H, W] value
};

int64_t int_attr(const ir::Node& node, const char* name, int64_t fallback) {
  const ir::Attribute* a = node.find_attribute(name);
  return a && a->type == ir::Attribute::Type::kInt ? a->i : fallback;
}

class NchwcRewriter {
 public:
  NchwcRewriter(ir::Graph& graph, PassContext& ctx)
      : graph_(graph), ctx_(ctx), view_(graph, ctx), edit_(graph, view_) {}

  Status run() {
    const int64_t opset = ctx_.opset("");
    std::vector<std::optional<ir::Node>> rewritten(graph_.nodes.size());
    for (size_t n : producers_first()) {
      const ir::Node& node = graph_.nodes[n];
      std::optional<ir::Node> r = rewrite(node, opset);
      if (!r) continue;
      for (std::string& input : r->inputs)
        if (auto it = blocked_.find(input); it != blocked_.end()) {
          input = it->second.name;
          ++blocked_reads_[it->first];
        }
      rewritten[n] = std::move(r);
    }
    if (blocked_.empty()) return Status();
    if (!ctx_.import_domain("nxrt", 1)) return Status();
    std::vector<ir::Node> nodes;
    nodes.reserve(graph_.nodes.size() + blocked_.size());
    for (size_t n = 0; n < graph_.nodes.size(); ++n) {
      if (!rewritten[n]) {
        nodes.push_back(std::move(graph_.nodes[n]));
        continue;
      }
      const std::vector<std::string> originals = graph_.nodes[n].outputs;
      const std::string name = rewritten[n]->name;
      nodes.push_back(std::move(*rewritten[n]));
      // Readers of an original value that stay on the plain layout get it back.
      for (size_t o = 0; o < originals.size(); ++o) {
        const std::string& original = originals[o];
        if (!view_.is_graph_output(original) &&
            view_.use_count(original) <= blocked_reads_[original])
          continue;
        ir::Node back;
        back.name = edit_.fresh_name(name + "_to_nchw");
        back.domain = "nxrt";
        back.op_type = "NchwcToNchw";
        back.inputs = {blocked_.at(original).name};
        back.outputs = {original};
        back.attributes.push_back(
            ir::Attribute::of_int("channels", blocked_.at(original).channels));
        nodes.push_back(std::move(back));
      }
    }
    graph_.nodes = std::move(nodes);
    edit_.apply();  // the blocked Split and Resize operands made above
    return Status();
  }

 private:
  // The node indices with every node after the producers of its inputs (earlier passes
  // may leave a fused node before the producer of an input it took over).
  std::vector<size_t> producers_first() const {
    const size_t count = graph_.nodes.size();
    std::vector<size_t> order;
    order.reserve(count);
    std::vector<uint8_t> state(count, 0);          // 0 new, 1 on the stack, 2 placed
    std::vector<std::pair<size_t, size_t>> stack;  // (node, next input to look at)
    for (size_t root = 0; root < count; ++root) {
      if (state[root]) continue;
      stack.emplace_back(root, 0);
      state[root] = 1;
      while (!stack.empty()) {
        auto& [n, i] = stack.back();
        const ir::Node& node = graph_.nodes[n];
        if (i < node.inputs.size()) {
          const int p = node.inputs[i++].empty() ? -1 : view_.producer(node.inputs[i - 1]);
          if (p >= 0 && state[size_t(p)] == 0) {
            state[size_t(p)] = 1;
            stack.emplace_back(size_t(p), 0);
          }
          continue;
        }
        state[n] = 2;
        order.push_back(n);
        stack.pop_back();
      }
    }
    return order;
  }

  const BlockedValue* blocked(const std::string& value) const {
    auto it = blocked_.find(value);
    return it == blocked_.end() ? nullptr : &it->second;
  }

  // The blocked form of `node` (inputs still under their original names), recording its
  // output as blocked; nullopt when it stays as it is.
  std::optional<ir::Node> rewrite(const ir::Node& node, int64_t opset) {
    if (node.inputs.empty()) return std::nullopt;
    if (is_onnx_op(node, "Split")) return split(node, opset);
    if (node.outputs.size() != 1) return std::nullopt;
    if (auto channels = conv_channels(node)) return blocked_node(node, "NchwcConv", *channels);
    const BlockedValue* x = blocked(node.inputs[0]);
    if (!x) return std::nullopt;
    const int64_t channels = x->channels;
    if (is_onnx_op(node, {"MaxPool", "AveragePool"})) {
      const ir::Attribute* k = node.find_attribute("kernel_shape");
      if (!k || k->ints.size() != 2) return std::nullopt;
      std::optional<ir::Node> r = blocked_node(node, "Nchwc" + node.op_type, channels);
      std::erase_if(r->attributes,
                    [](const ir::Attribute& a) { return a.name == "storage_order"; });
      return r;
    }
    if (node.domain == "nxrt" && node.op_type == "ChannelAffine" && node.inputs.size() == 3) {
      const Tensor* scale = view_.constant(node.inputs[1]);
      const Tensor* shift = view_.constant(node.inputs[2]);
      if (!scale || !shift || scale->dtype() != DataType::kFloat ||
          shift->dtype() != DataType::kFloat || scale->numel() != channels ||
          shift->numel() != channels)
        return std::nullopt;
      return blocked_node(node, "NchwcChannelAffine", channels);
    }
    if (is_onnx_op(node, {"GlobalAveragePool", "GlobalMaxPool"}))
      return blocked_node(node, "Nchwc" + node.op_type, channels);
    if (is_onnx_op(node, "Concat")) {
      const int64_t axis = int_attr(node, "axis", 0);
      if (axis != 1 && axis != -3) return std::nullopt;
      int64_t total = 0;
      for (const std::string& input : node.inputs) {
        const BlockedValue* b = blocked(input);
        if (!b || b->channels % kBlock != 0) return std::nullopt;
        total += b->channels;
      }
      ir::Node r = node;
      for (ir::Attribute& a : r.attributes)
        if (a.name == "axis") a.i = 1;
      return same_op(std::move(r), total);
    }
    if (is_onnx_op(node, "Resize")) return resize(node, channels, opset);
    if (is_onnx_op(node, {"Add", "Sub", "Mul", "Max", "Min"})) {
      if (node.inputs.size() != 2) return std::nullopt;
      const BlockedValue* other = blocked(node.inputs[1]);
      if (!other || other->channels != channels) return std::nullopt;
      return same_op(node, channels);
    }
    // Activations map the padding lanes' finite values to finite values.
    if (as_activation(node, view_, opset)) return same_op(node, channels);
    return std::nullopt;
  }

  // Split on the channel axis into parts of whole blocks: the same Split on the blocked
  // tensor's block axis, its sizes counted in blocks (YOLO's C2f and CSP stages split a
  // convolution's output in halves and join them back with Concat).
  std::optional<ir::Node> split(const ir::Node& node, int64_t opset) {
    const BlockedValue* x = blocked(node.inputs[0]);
    if (!x) return std::nullopt;
    const int64_t axis = int_attr(node, "axis", 0);
    if (axis != 1 && axis != -3) return std::nullopt;
    const int64_t parts = int64_t(node.outputs.size());
    std::vector<int64_t> sizes;
    const std::string& sizes_input = input_or_empty(node, 1);
    const bool sizes_in_input = opset >= 13 && !sizes_input.empty();
    if (sizes_in_input) {
      const Tensor* t = view_.constant(sizes_input);
      if (!t || t->dtype() != DataType::kInt64 || t->rank() != 1) return std::nullopt;
      sizes.assign(t->data<int64_t>(), t->data<int64_t>() + t->numel());
    } else if (const ir::Attribute* a = node.find_attribute("split"); a && opset < 13) {
      sizes = a->ints;
    } else {
      // Equal parts (num_outputs of opset 18 rounds the last one down when they do not
      // divide: only whole-block equal parts are taken).
      if (x->channels % (parts * kBlock) != 0) return std::nullopt;
      sizes.assign(size_t(parts), x->channels / parts);
    }
    if (int64_t(sizes.size()) != parts) return std::nullopt;
    int64_t total = 0;
    for (int64_t size : sizes) {
      if (size <= 0 || size % kBlock != 0) return std::nullopt;
      total += size;
    }
    if (total != x->channels) return std::nullopt;
    ir::Node r = node;
    for (ir::Attribute& a : r.attributes) {
      if (a.name == "axis") a.i = 1;
      if (a.name == "split")
        for (int64_t& size : a.ints) size /= kBlock;
    }
    if (sizes_in_input) {
      auto blocks = Tensor::allocate_uninitialized(DataType::kInt64, Shape{parts}, ctx_.limits);
      if (!blocks) return std::nullopt;
      for (int64_t i = 0; i < parts; ++i) blocks->data<int64_t>()[i] = sizes[size_t(i)] / kBlock;
      r.inputs[1] = edit_.fresh_name(sizes_input + "_blocks");
      edit_.add_initializer(r.inputs[1], std::move(blocks).value());
    }
    return same_op(std::move(r), sizes);
  }

  // Nearest-neighbour Resize of the map (constant scales, 1 on batch and channels): the
  // same Resize on the blocked tensor with a scale of 1 for the lanes. Nearest copies
  // whole source elements and a scale of 1 maps every coordinate to itself under each
  // coordinate transformation but tf_crop_and_resize, so the lanes move together.
  std::optional<ir::Node> resize(const ir::Node& node, int64_t channels, int64_t opset) {
    if (opset < 11 || node.find_attribute("axes")) return std::nullopt;
    const ir::Attribute* mode = node.find_attribute("mode");
    if (mode && mode->s != "nearest") return std::nullopt;
    const ir::Attribute* transform = node.find_attribute("coordinate_transformation_mode");
    if (transform && transform->s == "tf_crop_and_resize") return std::nullopt;
    const std::string& scales_input = input_or_empty(node, 2);
    if (scales_input.empty() || !input_or_empty(node, 3).empty()) return std::nullopt;
    const Tensor* scales = view_.constant(scales_input);
    if (!scales || scales->dtype() != DataType::kFloat || scales->numel() != 4) return std::nullopt;
    const float* s = scales->data<float>();
    if (s[0] != 1.0f || s[1] != 1.0f || !(s[2] > 0.0f) || !(s[3] > 0.0f)) return std::nullopt;
    auto blocked_scales = Tensor::allocate_uninitialized(DataType::kFloat, Shape{5}, ctx_.limits);
    if (!blocked_scales) return std::nullopt;
    float* b = blocked_scales->data<float>();
    std::copy(s, s + 4, b);
    b[4] = 1.0f;
    ir::Node r = node;
    r.inputs[2] = edit_.fresh_name(scales_input + "_blocked");
    edit_.add_initializer(r.inputs[2], std::move(blocked_scales).value());
    return same_op(std::move(r), channels);
  }

  // The output channels of a convolution this pass blocks, or nullopt.
  std::optional<int64_t> conv_channels(const ir::Node& node) const {
    const bool fused =
        node.op_type == "FusedConv" && (node.domain == "nxrt" || node.domain == "com.microsoft");
    if (!is_onnx_op(node, "Conv") && !fused) return std::nullopt;
    if (node.inputs.size() < 2 || (fused && node.inputs.size() > 4)) return std::nullopt;
    const Tensor* w = view_.constant(node.inputs[1]);
    if (!w || w->dtype() != DataType::kFloat || w->rank() != 4 || w->numel() == 0)
      return std::nullopt;
    const int64_t M = w->shape()[0];
    if (M < kBlock) return std::nullopt;
    const int64_t group = int_attr(node, "group", 1);
    const bool depthwise = group == M && w->shape()[1] == 1 && M > 1;
    if (group != 1 && !depthwise) return std::nullopt;
    if (depthwise && !blocked(node.inputs[0])) return std::nullopt;
    const std::string& bias = input_or_empty(node, 2);
    if (!bias.empty()) {
      const Tensor* b = view_.constant(bias);
      if (b && (b->dtype() != DataType::kFloat || b->numel() != M)) return std::nullopt;
    }
    const std::string& sum = input_or_empty(node, 3);
    if (!sum.empty()) {
      const BlockedValue* z = blocked(sum);
      if (!z || z->channels != M) return std::nullopt;
    }
    return M;
  }

  std::optional<ir::Node> blocked_node(const ir::Node& node, const std::string& op_type,
                                       int64_t channels) {
    ir::Node r = node;
    r.domain = "nxrt";
    r.op_type = op_type;
    return same_op(std::move(r), channels);
  }

  // `node` writing a fresh blocked value in place of its output.
  std::optional<ir::Node> same_op(ir::Node node, int64_t channels) {
    return same_op(std::move(node), std::vector<int64_t>{channels});
  }
  // `node` writing fresh blocked values in place of its outputs, of these channels.
  std::optional<ir::Node> same_op(ir::Node node, const std::vector<int64_t>& channels) {
    for (size_t o = 0; o < node.outputs.size(); ++o) {
      const std::string name = edit_.fresh_name(node.outputs[o] + "_nchwc");
      blocked_[node.outputs[o]] = BlockedValue{name, channels[o]};
      node.outputs[o] = name;
    }
    return node;
  }

  ir::Graph& graph_;
  PassContext& ctx_;
  GraphView view_;
  GraphEditor edit_;
  std::unordered_map<std::string, BlockedValue> blocked_;
  std::unordered_map<std::string, size_t> blocked_reads_;
};

}  // namespace

Status layout_nchwc(ir::Graph& graph, PassContext& ctx) {
  // The blocked kernels exist for AVX-512 and AVX2.
  if (!vmath::nchwc_available()) return Status();
  return NchwcRewriter(graph, ctx).run();
}

}  // namespace nxrt::optimizer
