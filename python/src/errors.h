// Turns a failed Status into the Python exception class of the same onnxruntime name.
// The classes are defined in python/nxrt/_errors.py and registered at import.
#pragma once

#include <nanobind/nanobind.h>

#include "core/status.h"

namespace nxrt::py {

void register_error_classes(nanobind::dict classes);
[[noreturn]] void throw_status(const Status& status);

// Unwraps an Expected or raises its Status.
template <typename T>
T unwrap(Expected<T>&& value) {
  if (!value) throw_status(value.status());
  return std::move(value).value();
}

}  // namespace nxrt::py
