#include "runtime/concat_placement.h"

#include <algorithm>

namespace nxrt {

namespace {

// A slot the executor fills from its pool (StepContext::output): only those can be views.
bool pooled_host_tensor(const ValueSlot& info) {
  return info.kind == ValueKind::kTensor && !info.is_graph_output &&
         info.dtype != DataType::kString && info.device == kHostDevice;
}

constexpr size_t kBlockAlignment = 64;  // the pool's and the memory plan's

// Where a value goes within the Concat that reads it, before chains are followed.
struct Place {
  int concat_slot = -1;
  size_t offset = 0;
};

}  // namespace

ConcatPlacements find_concat_placements(
    const ExecutableGraph& plan,
    const std::function<std::optional<std::vector<int64_t>>(int slot)>& dims_of) {
  const size_t num_slots = plan.slots.size();
  std::vector<const Step*> producer(num_slots, nullptr);
  for (const Step& step : plan.steps)
    for (int s : step.outputs) producer[size_t(s)] = &step;

  std::vector<Place> place(num_slots);
  std::vector<Shape> shape_of(num_slots);  // of the Concats and the values placed
  std::vector<int> placed;                 // in step order
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

    std::vector<std::pair<int, Place>> found;
    std::vector<Shape> found_shapes;
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
      // Other readers are fine: kernels never write into their inputs. A value read by
      // two Concats (or twice by one) goes to the first place; the others copy it.
      const bool claimed =
          place[size_t(s)].concat_slot >= 0 ||
          std::any_of(found.begin(), found.end(), [&](const auto& f) { return f.first == s; });
      if (made_by && !claimed && pooled_host_tensor(info) && info.dtype == concat_info.dtype &&
          bytes > 0 && offset % kBlockAlignment == 0 && !plan.constants[size_t(s)].defined() &&
          !made_by->kernel->may_alias_input0()) {
        found.push_back({s, {concat, offset}});
        found_shapes.push_back(shape);
      }
      offset += bytes;
    }
    // Inputs that do not fill the output exactly are the kernel's error to report.
    if (!complete || offset != size_t(concat_shape.numel()) * element) continue;
    shape_of[size_t(concat)] = concat_shape;
    for (size_t k = 0; k < found.size(); ++k) {
      place[size_t(found[k].first)] = found[k].second;
      shape_of[size_t(found[k].first)] = found_shapes[k];
      placed.push_back(found[k].first);
    }
  }
  if (placed.empty()) return {};

  // A Concat placed in a later one (DenseNet's chains): its inputs go where it goes, so
  // every placed value's block is that of the last Concat of its chain.
  ConcatPlacements out;
  out.placement_of_slot.assign(num_slots, -1);
  for (int s : placed) {
    Place p = place[size_t(s)];
    while (place[size_t(p.concat_slot)].concat_slot >= 0) {
      const Place& outer = place[size_t(p.concat_slot)];
      p = {outer.concat_slot, p.offset + outer.offset};
    }
    const Shape& final_shape = shape_of[size_t(p.concat_slot)];
    const size_t final_bytes =
        size_t(final_shape.numel()) * dtype_size(plan.slots[size_t(p.concat_slot)].dtype);
    out.placement_of_slot[size_t(s)] = int(out.placements.size());
    out.placements.push_back(
        {p.concat_slot, p.offset, shape_of[size_t(s)], final_shape, final_bytes});
  }
  return out;
}

}  // namespace nxrt
