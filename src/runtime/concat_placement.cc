#include "runtime/concat_placement.h"

namespace nxrt {

namespace {

// A slot the executor fills from its pool (StepContext::output): only those can be views.
bool pooled_host_tensor(const ValueSlot& info) {
  return info.kind == ValueKind::kTensor && !info.is_graph_output &&
         info.dtype != DataType::kString && info.device == kHostDevice;
}

constexpr size_t kBlockAlignment = 64;  // the pool's and the memory plan's

}  // namespace

ConcatPlacements find_concat_placements(
    const ExecutableGraph& plan,
    const std::function<std::optional<std::vector<int64_t>>(int slot)>& dims_of) {
  const size_t num_slots = plan.slots.size();
  std::vector<int> readers(num_slots, 0);
  std::vector<const Step*> producer(num_slots, nullptr);
  for (const Step& step : plan.steps) {
    for (int s : step.inputs)
      if (s >= 0) ++readers[size_t(s)];
    for (int s : step.implicit_inputs) ++readers[size_t(s)];
    for (int s : step.outputs) producer[size_t(s)] = &step;
  }
  for (int s : plan.output_slots) ++readers[size_t(s)];

  ConcatPlacements out;
  for (const Step& step : plan.steps) {
    const std::optional<int64_t> axis_attr = step.kernel->in_place_concat_axis();
    if (!axis_attr || step.outputs.empty() || step.inputs.empty()) continue;
    const int concat = step.outputs[0];
    const ValueSlot& concat_info = plan.slots[size_t(concat)];
    if (!pooled_host_tensor(concat_info)) continue;
    const std::optional<std::vector<int64_t>> concat_dims = dims_of(concat);
    if (!concat_dims || concat_dims->empty()) continue;
    const Shape concat_shape(*concat_dims);
    int64_t axis = *axis_attr;
    if (!normalize_axis(axis, int64_t(concat_shape.size()))) continue;
    if (concat_shape.product(0, size_t(axis)) != 1) continue;
    const size_t element = dtype_size(concat_info.dtype);
    const size_t concat_bytes = size_t(concat_shape.numel()) * element;

    std::vector<std::pair<int, ConcatPlacement>> found;  // (input slot, placement)
    size_t offset = 0;
    bool complete = true;
    for (int s : step.inputs) {
      const std::optional<std::vector<int64_t>> dims = s >= 0 ? dims_of(s) : std::nullopt;
      if (!dims) {
        complete = false;
        break;
      }
      const Shape shape(*dims);
      const size_t bytes = size_t(shape.numel()) * element;
      const ValueSlot& info = plan.slots[size_t(s)];
      const Step* made_by = producer[size_t(s)];
      if (made_by && readers[size_t(s)] == 1 && pooled_host_tensor(info) &&
          info.dtype == concat_info.dtype && bytes > 0 && offset % kBlockAlignment == 0 &&
          !plan.constants[size_t(s)].defined() && !made_by->kernel->may_alias_input0() &&
          !made_by->kernel->in_place_concat_axis())
        found.push_back({s, {concat, offset, shape, concat_shape, concat_bytes}});
      offset += bytes;
    }
    // Inputs that do not fill the output exactly are the kernel's error to report.
    if (!complete || offset != concat_bytes || found.empty()) continue;
    if (out.placement_of_slot.empty()) out.placement_of_slot.assign(num_slots, -1);
    for (auto& [slot, placement] : found) {
      out.placement_of_slot[size_t(slot)] = int(out.placements.size());
      out.placements.push_back(std::move(placement));
    }
  }
  return out;
}

}  // namespace nxrt
