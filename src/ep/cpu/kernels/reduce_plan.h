// Iteration plan for reducing a contiguous tensor over a set of axes, shared by the
// Reduce family and the normalizations that reduce over arbitrary axes (MVN).
//
// The input is walked in memory order as "runs": stretches of the last collapsed dim.
// A run is either reduced (every element folds into one output) or kept (element i maps
// to output out_offset + i). Only the run start needs index arithmetic, so the cost per
// element is the loop body alone whichever axes are reduced.
#pragma once

#include <cstdint>
#include <vector>

#include "core/shape.h"
#include "core/status.h"
#include "ep/cpu/kernels/common.h"

namespace nxrt::cpu {

struct ReducePlan {
  SmallVec<int64_t> dims;         // collapsed input dims (at least one)
  SmallVec<int64_t> out_strides;  // output element stride per collapsed dim, 0 if reduced
  bool inner_reduced = true;      // the last collapsed dim is reduced
  int64_t inner = 1;              // run length: the last collapsed dim
  int64_t in_numel = 0;
  int64_t out_numel = 1;
  int64_t reduce_count = 1;  // input elements folded into each output
};

// `reduced[d]` marks the reduced axes of `in`.
template <typename Marks>
ReducePlan make_reduce_plan(const Shape& in, const Marks& reduced) {
  ReducePlan p;
  p.in_numel = in.numel();
  SmallVec<int64_t> dims;
  SmallVec<bool> red;
  for (size_t d = 0; d < in.size(); ++d) {
    if (reduced[d])
      p.reduce_count *= in[d];
    else
      p.out_numel *= in[d];
    if (in[d] == 1) continue;  // size-1 dims move no offset either way
    if (!dims.empty() && red.back() == reduced[d]) {
      dims.back() *= in[d];  // neighbours of one kind walk memory as one dim
    } else {
      dims.push_back(in[d]);
      red.push_back(reduced[d]);
    }
  }
  if (dims.empty()) {
    dims.push_back(1);
    red.push_back(true);
  }
  p.dims = dims;
  p.out_strides.assign(dims.size(), 0);
  int64_t stride = 1;
  for (size_t d = dims.size(); d-- > 0;) {
    if (red[d]) continue;
    p.out_strides[d] = stride;
    stride *= dims[d];
  }
  p.inner_reduced = red.back();
  p.inner = dims.back();
  return p;
}

// Calls body(in_offset, out_offset) for each run of plan.inner input elements.
template <typename Body>
void for_each_reduce_run(const ReducePlan& p, Body&& body) {
  if (p.in_numel == 0) return;
  const size_t outer_rank = p.dims.size() - 1;
  SmallVec<int64_t> index(outer_rank, 0);
  int64_t out = 0;
  for (int64_t in = 0; in < p.in_numel; in += p.inner) {
    body(in, out);
    for (size_t d = outer_rank; d-- > 0;) {
      if (++index[d] < p.dims[d]) {
        out += p.out_strides[d];
        break;
      }
      out -= p.out_strides[d] * (p.dims[d] - 1);
      index[d] = 0;
    }
  }
}

// Marks `axes` (possibly negative) of a rank-`rank` tensor; errors on out-of-range or
// repeated axes.
template <typename Axes, typename Marks>
Status mark_axes(const Axes& axes, int64_t rank, Marks& marked) {
  marked.assign(size_t(rank), false);
  for (int64_t a : axes) {
    int64_t axis = a;
    if (!normalize_axis(axis, rank))
      return invalid_argument("axis ", a, " is out of range for an input of rank ", rank);
    if (marked[size_t(axis)]) return invalid_argument("axis ", a, " is listed more than once");
    marked[size_t(axis)] = true;
  }
  return Status();
}

}  // namespace nxrt::cpu
