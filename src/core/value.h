// A value that flows between nodes and across the API: a tensor, a sequence of tensors,
// or nothing (an empty optional).
#pragma once

#include <memory>
#include <vector>

#include "core/tensor.h"

namespace nxrt {

using TensorSequence = std::vector<Tensor>;

struct Value {
  Value() = default;
  Value(Tensor t) : tensor(std::move(t)) {}  // NOLINT: a tensor is a value
  explicit Value(std::shared_ptr<const TensorSequence> s) : sequence(std::move(s)) {}

  bool is_sequence() const { return sequence != nullptr; }
  bool is_none() const { return !tensor.defined() && !sequence; }

  Tensor tensor;
  std::shared_ptr<const TensorSequence> sequence;
  // The sequence holds maps (keys [C], values [N, C]; see ValueKind::kMapSequence).
  bool maps = false;
};

}  // namespace nxrt
