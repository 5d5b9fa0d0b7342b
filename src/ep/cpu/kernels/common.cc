#include "ep/cpu/kernels/common.h"

#include <algorithm>

namespace nxrt::cpu {

bool broadcast_shapes(std::span<const Shape* const> shapes, Shape& out) {
  size_t rank = 0;
  for (const Shape* s : shapes) rank = std::max(rank, s->size());
  out.resize(rank);
  for (size_t d = 0; d < rank; ++d) {
    int64_t dim = 1;
    for (const Shape* s : shapes) {
      const size_t offset = rank - s->size();
      if (d < offset) continue;
      const int64_t v = (*s)[d - offset];
      if (v == 1) continue;
      if (dim != 1 && dim != v) return false;
      dim = v;
    }
    // A zero-sized dim against 1 gives 0; against anything else it is incompatible (above).
    for (const Shape* s : shapes) {
      const size_t offset = rank - s->size();
      if (d >= offset && (*s)[d - offset] == 0) dim = 0;
    }
    out[d] = dim;
  }
  return true;
}

BroadcastPlan make_broadcast_plan(const Shape& out, std::span<const Shape* const> inputs) {
  const size_t rank = out.size();
  const size_t n_in = inputs.size();
  // Full-rank strides per input (0 where broadcast), full[k * rank + d].
  SmallVec<int64_t, 24> full(n_in * rank, 0);
  for (size_t k = 0; k < n_in; ++k) {
    const Shape& s = *inputs[k];
    const size_t offset = rank - s.size();
    int64_t stride = 1;
    for (size_t d = rank; d-- > offset;) {
      const int64_t dim = s[d - offset];
      full[k * rank + d] = dim == 1 ? 0 : stride;
      stride *= dim;
    }
  }
  BroadcastPlan plan;
  plan.numel = out.numel();
  plan.inputs = n_in;
  // Merge dim d into the run after it when every input is contiguous across the pair.
  for (size_t d = 0; d < rank; ++d) {
    if (out[d] == 1) continue;  // size-1 dims do not affect iteration
    bool merge = !plan.dims.empty();
    const size_t last = plan.dims.size() - 1;  // meaningful only when merging
    if (merge) {
      for (size_t k = 0; k < n_in; ++k)
        if (plan.stride(k, last) != full[k * rank + d] * out[d]) merge = false;
    }
    if (merge) {
      plan.dims.back() *= out[d];
      for (size_t k = 0; k < n_in; ++k) plan.strides[last * n_in + k] = full[k * rank + d];
    } else {
      plan.dims.push_back(out[d]);
      for (size_t k = 0; k < n_in; ++k) plan.strides.push_back(full[k * rank + d]);
    }
  }
  if (plan.dims.empty()) {
    plan.dims.push_back(1);
    for (size_t k = 0; k < n_in; ++k) plan.strides.push_back(0);
  }
  return plan;
}

}  // namespace nxrt::cpu
