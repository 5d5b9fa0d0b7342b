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
  std::vector<Shape> shape_of(num_slots);   // of the Concats and the values placed
  std::vector<size_t> bytes_of(num_slots);  // of the Concats
  std::vector<int> placed;                  // in step order
  for (const Step& step : plan.steps) {
    const std::optional<int64_t> axis_attr = step.kernel->in_place_concat_axis();
    if (!axis_attr || step.outputs.empty() || step.inputs.empty()) continue;
    const int concat = step.outputs[0];
    const ValueSlot& concat_info = plan.slots[size_t(concat)];
    if (!pooled_host_tensor(concat_info)) continue;
    const std::optional<std::vector<int64_t>> concat_dims = dims_of(concat);
    if (!concat_dims || concat_dims->empty()) continue;
    const Shape concat_shape(*concat_dims);
    // Sizes over the session's tensor limits (or past size_t) are left to the run's
    // ordinary path, which reports them.
    const Expected<size_t> concat_bytes =
        tensor_bytes(concat_info.dtype, concat_shape, std::string(), plan.limits);
    if (!concat_bytes) continue;
    int64_t axis = *axis_attr;
    if (!normalize_axis(axis, int64_t(concat_shape.size()))) continue;
    if (concat_shape.product(0, size_t(axis)) != 1) continue;

    struct Found {
      int slot;
      Place place;
      Shape shape;
    };
    std::vector<Found> found;
    size_t offset = 0;
    bool complete = true;
    for (int s : step.inputs) {
      const std::optional<std::vector<int64_t>> dims = s >= 0 ? dims_of(s) : std::nullopt;
      if (!dims) {
        complete = false;
        break;
      }
      const Shape shape(*dims);
      const Expected<size_t> input_bytes =
          tensor_bytes(concat_info.dtype, shape, std::string(), plan.limits);
      if (!input_bytes) {
        complete = false;
        break;
      }
      const size_t bytes = input_bytes.value();
      const ValueSlot& info = plan.slots[size_t(s)];
      const Step* made_by = producer[size_t(s)];
      // Other readers are fine: kernels never write into their inputs. A value read by
      // two Concats (or twice by one) goes to the first place; the others copy it.
      const bool claimed =
          place[size_t(s)].concat_slot >= 0 ||
          std::any_of(found.begin(), found.end(), [&](const Found& f) { return f.slot == s; });
      if (made_by && !claimed && pooled_host_tensor(info) && info.dtype == concat_info.dtype &&
          bytes > 0 && offset % kBlockAlignment == 0 && !plan.constants[size_t(s)].defined() &&
          !made_by->kernel->may_alias_input0()) {
        found.push_back({s, {concat, offset}, shape});
      }
      offset += bytes;
    }
    // Inputs that do not fill the output exactly are the kernel's error to report.
    if (!complete || offset != concat_bytes.value()) continue;
    shape_of[size_t(concat)] = concat_shape;
    bytes_of[size_t(concat)] = concat_bytes.value();
    for (Found& f : found) {
      place[size_t(f.slot)] = f.place;
      shape_of[size_t(f.slot)] = std::move(f.shape);
      placed.push_back(f.slot);
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
    out.placement_of_slot[size_t(s)] = int(out.placements.size());
    out.placements.push_back({p.concat_slot, p.offset, shape_of[size_t(s)],
                              shape_of[size_t(p.concat_slot)], bytes_of[size_t(p.concat_slot)]});
  }
  return out;
}

}  // namespace nxrt
