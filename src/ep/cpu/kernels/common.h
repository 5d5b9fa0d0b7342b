// Helpers shared by CPU kernels: broadcasting, reading shape-like inputs, factories.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "ep/kernel.h"

namespace nxrt::cpu {

// numpy broadcasting of several shapes; false when they are incompatible.
bool broadcast_shapes(std::span<const Shape* const> shapes, Shape& out);

// Iteration plan for an elementwise op over broadcast inputs. Adjacent dims that
// broadcast the same way are merged so the inner loop is as long as possible.
struct BroadcastPlan {
  std::vector<int64_t> dims;                  // collapsed output dims (at least one)
  std::vector<std::vector<int64_t>> strides;  // per input, element strides per dim (0 = bcast)
  int64_t numel = 0;
};
BroadcastPlan make_broadcast_plan(const Shape& out, std::span<const Shape* const> inputs);

// Calls body(offsets, out_offset, count, steps) for each inner run; offsets[k] is the
// element offset into input k and steps[k] its stride (0 or 1, or the merged stride).
template <typename Body>
void for_each_broadcast_run(const BroadcastPlan& plan, Body&& body) {
  const size_t rank = plan.dims.size();
  const size_t n_in = plan.strides.size();
  if (plan.numel == 0) return;
  const int64_t inner = plan.dims[rank - 1];
  std::vector<int64_t> offsets(n_in, 0), steps(n_in), index(rank, 0);
  for (size_t k = 0; k < n_in; ++k) steps[k] = plan.strides[k][rank - 1];
  for (int64_t out = 0; out < plan.numel; out += inner) {
    body(offsets.data(), out, inner, steps.data());
    // advance the odometer over the outer dims
    for (size_t d = rank - 1; d-- > 0;) {
      if (++index[d] < plan.dims[d]) {
        for (size_t k = 0; k < n_in; ++k) offsets[k] += plan.strides[k][d];
        break;
      }
      for (size_t k = 0; k < n_in; ++k) offsets[k] -= plan.strides[k][d] * (plan.dims[d] - 1);
      index[d] = 0;
    }
  }
}

// Reads a 1-D (or scalar) int32/int64 tensor such as a shape, axes or pads input.
Status read_int_list(const Tensor& t, std::vector<int64_t>& out, const char* what);

// Makes a kernel object, boxed as the factory's result.
template <typename K, typename... Args>
Expected<KernelPtr> make_kernel(Args&&... args) {
  return KernelPtr(std::make_unique<K>(std::forward<Args>(args)...));
}

// Element type of input 0 unless it is missing; for ops whose output dtype follows it.
inline DataType first_input_type(const KernelInit& init) { return init.input_type(0); }

}  // namespace nxrt::cpu
