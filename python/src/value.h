// A tensor crossing the Python boundary without a copy (NxrtValue, OrtValue, DLPack).
// Who keeps the memory alive is the tensor's owner: run outputs own their buffer, values
// made from numpy arrays or DLPack capsules hold the producer, and values over a raw
// caller pointer (IoBinding.bind_input/bind_output with buffer_ptr) borrow it.
#pragma once

#include "core/tensor.h"

namespace nxrt::py {

struct NativeValue {
  Tensor tensor;
  bool read_only = false;  // the producer said so (DLPack flag): never a bound output
};

}  // namespace nxrt::py
