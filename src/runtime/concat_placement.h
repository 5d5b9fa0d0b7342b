// Concat inputs written in place: when a graph's shapes are static, a Concat input can be
// produced directly at its place in the Concat's output, and the Concat then has nothing
// to copy for it. SqueezeNet's Fire modules and
// DenseNet's blocks spend 6-7% of their run in Concat copies otherwise.
//
// The executor (StepContext::output) gives such an input a view into the block the
// Concat's output will own; the first placed input to run acquires that block, and the
// Concat's own output takes it over. The Concat kernel skips inputs whose data already
// sits at their place (Kernel::in_place_concat_axis).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "planner/plan.h"

namespace nxrt {

struct ConcatPlacements {
  std::vector<int> placement_of_slot;  // by slot: index into `placements`, or -1
  std::vector<ConcatPlacement> placements;
};

// The inputs of `plan`'s Concats that qualify: the Concat's kernel concatenates in place,
// its output is a pooled host tensor (not a graph output) whose dims before the axis
// multiply to 1 (so each input is one contiguous range of it), and the input is a
// pooled host tensor of the same dtype, made by a step that is not a view of its input,
// placed nowhere else, at an offset that keeps the 64-byte alignment pooled blocks have.
// Other nodes may read it too (kernels never write into their inputs). A Concat placed
// in another takes its inputs along: every placement names the last Concat of its chain
// and the offset there. `dims_of(slot)` gives a slot's static dims, or nullopt.
ConcatPlacements find_concat_placements(
    const ExecutableGraph& plan,
    const std::function<std::optional<std::vector<int64_t>>(int slot)>& dims_of);

}  // namespace nxrt
