#include "runtime/predicted_traffic.h"

#include "ops/shape_inference.h"
#include "runtime/concat_placement.h"
#include "runtime/memory_plan.h"

namespace nxrt {

namespace {

// Replays execute_graph()'s pool bookkeeping: root[slot] is the slot whose block `slot`
// uses (-1: none the pool manages), refs[root] the live slots on it.
class TrafficReplay {
 public:
  // Appends the events and block sizes to `out`.
  TrafficReplay(size_t num_slots, PredictedTraffic& out)
      : root_(num_slots, -1),
        refs_(num_slots, 0),
        block_(num_slots, -1),
        pending_(num_slots, -1),
        out_(out) {}

  void acquire(int slot, size_t bytes) {
    block_[size_t(slot)] = int32_t(out_.bytes.size());
    out_.events.push_back(block_[size_t(slot)]);
    out_.bytes.push_back(bytes);
    root_[size_t(slot)] = slot;
    refs_[size_t(slot)] = 1;
  }
  void view(int slot, int source) {
    const int r = source >= 0 ? root_[size_t(source)] : -1;
    root_[size_t(slot)] = r;
    if (r >= 0) ++refs_[size_t(r)];
  }
  // A Concat input written in place (StepContext::place_in_concat).
  void place(int slot, int concat, size_t concat_bytes) {
    int& pending = pending_[size_t(concat)];
    if (pending < 0) {
      acquire(slot, concat_bytes);
      refs_[size_t(slot)] = 2;
      pending = slot;
    } else {
      view(slot, pending);
    }
  }
  // A Concat's output taking over its placed inputs' block; false when none holds one.
  bool take_pending(int concat) {
    const int r = pending_[size_t(concat)];
    if (r < 0) return false;
    pending_[size_t(concat)] = -1;
    root_[size_t(concat)] = r;
    return true;
  }
  // Whether `slot` holds its own block and nothing else does.
  bool owns_alone(int slot) const {
    return root_[size_t(slot)] == slot && refs_[size_t(slot)] == 1;
  }
  void release(int slot) {
    const int r = root_[size_t(slot)];
    if (r >= 0 && --refs_[size_t(r)] == 0) out_.events.push_back(~block_[size_t(r)]);
    root_[size_t(slot)] = -1;
  }

 private:
  std::vector<int> root_;
  std::vector<int> refs_;
  std::vector<int32_t> block_;
  std::vector<int> pending_;  // by Concat output slot
  PredictedTraffic& out_;
};

std::optional<PredictedTraffic> fail(std::string* why, std::string reason) {
  if (why) *why = std::move(reason);
  return std::nullopt;
}

}  // namespace

std::optional<PredictedTraffic> predict_static_traffic(const ir::Graph& graph,
                                                       const std::map<std::string, int64_t>& opsets,
                                                       const ExecutableGraph& plan,
                                                       std::string* why) {
  ops::ShapeInferenceOptions options;
  options.use_value_info = false;  // only what the ops' rules derive; declarations may lie
  std::vector<Value> feeds(plan.inputs.size());
  std::vector<const Value*> feed_pointers(plan.inputs.size(), nullptr);
  for (size_t k = 0; k < plan.inputs.size(); ++k) {
    if (!plan.input_required[k]) continue;  // optional inputs and overridable initializers
    const ir::ValueInfo& input = plan.inputs[k];
    const ValueSlot& slot = plan.slots[size_t(plan.input_slots[k])];
    if (slot.kind != ValueKind::kTensor || input.type.kind != ir::TypeInfo::Kind::kTensor ||
        !input.type.has_shape)
      return fail(why, "input '" + input.name + "' declares no tensor shape");
    std::vector<int64_t> dims;
    for (const ir::Dim& d : input.type.dims) {
      if (d.value < 0) return fail(why, "input '" + input.name + "' has a symbolic dimension");
      dims.push_back(d.value);
    }
    options.input_shapes[input.name] = ops::SymShape::of_ints(dims);
    feeds[k] = Value(Tensor(slot.dtype, Shape(dims), nullptr));
    feed_pointers[k] = &feeds[k];
  }
  const ops::ShapeInferenceResult facts = ops::infer_shapes(graph, opsets, options);

  const auto dims_of = [&](int slot) -> std::optional<std::vector<int64_t>> {
    auto known = facts.values.find(plan.slots[size_t(slot)].name);
    if (known == facts.values.end()) return std::nullopt;
    return known->second.shape.ints();
  };
  PredictedTraffic out;
  out.concats = find_concat_placements(plan, dims_of);
  const std::vector<int>& placement_of_slot = out.concats.placement_of_slot;

  TrafficReplay replay(plan.slots.size(), out);
  for (const Step& step : plan.steps) {
    for (size_t i = 0; i < step.outputs.size(); ++i) {
      const int s = step.outputs[i];
      const ValueSlot& info = plan.slots[size_t(s)];
      // What StepContext::output() hands out without the pool.
      if (info.kind != ValueKind::kTensor || info.is_graph_output ||
          info.dtype == DataType::kString)
        continue;
      const int source = step.inputs.empty() ? -1 : step.inputs[0];
      if (i == 0 && source >= 0 && step.kernel->may_alias_input0() &&
          plan.slots[size_t(source)].dtype == info.dtype) {
        replay.view(s, source);
        continue;
      }
      if (!placement_of_slot.empty()) {
        if (const int p = placement_of_slot[size_t(s)]; p >= 0) {
          const ConcatPlacement& placement = out.concats.placements[size_t(p)];
          replay.place(s, placement.concat_slot, placement.concat_bytes);
          continue;
        }
        if (replay.take_pending(s)) continue;
      }
      const std::optional<std::vector<int64_t>> dims = dims_of(s);
      if (!dims) return fail(why, "shape inference leaves '" + info.name + "' open");
      if (i == 0 && step.overwritable_input >= 0) {  // StepContext::take_dying_input
        const int source = step.inputs[size_t(step.overwritable_input)];
        if ((placement_of_slot.empty() || placement_of_slot[size_t(source)] < 0) &&
            replay.owns_alone(source) && dims_of(source) == dims) {
          replay.view(s, source);
          continue;
        }
      }
      auto bytes = tensor_bytes(info.dtype, Shape(*dims), std::string(), plan.limits);
      if (!bytes) return fail(why, "'" + info.name + "' is over the tensor limits");
      replay.acquire(s, bytes.value());
    }
    for (int s : step.release_after) replay.release(s);
  }
  // execute_graph()'s release_all(): what is still held goes back in slot order.
  for (size_t s = 0; s < plan.slots.size(); ++s)
    if (!plan.constants[s].defined()) replay.release(int(s));
  MemoryPlan::signature_of(feed_pointers, {}, out.signature);
  return out;
}

}  // namespace nxrt
