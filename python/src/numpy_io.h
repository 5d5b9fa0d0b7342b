// numpy arrays in and out of native code without calling back into Python: inputs are
// read through the buffer protocol (C-contiguous, aligned, native-endian, plain dtypes),
// outputs become numpy arrays that own the result buffer. Shared by the eager hot path
// and InferenceSession.run's fast path; anything else is converted in Python first.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace nxrt::py {

// numpy.ndarray (exactly: subclasses take the Python path), imported on first use.
bool is_numpy_array(PyObject* o);

// ONNX element type of a buffer format ("f", "<q", "?"), or kUndefined.
DataType dtype_of_format(const char* format, Py_ssize_t itemsize);

// Buffers held for one call; released (with the GIL held) when the call ends.
struct Buffers {
  std::vector<Py_buffer> views;
  std::vector<std::shared_ptr<std::string[]>> strings;
  Buffers() = default;
  Buffers(const Buffers&) = delete;
  Buffers& operator=(const Buffers&) = delete;
  ~Buffers();
};

// A borrowed tensor over a C-contiguous, aligned, native-endian array of a plain dtype;
// false when the object is anything else. `code` (when not kUndefined) is the ONNX type
// the bits stand for (bfloat16 and float8 travel as integer bits).
bool array_tensor(PyObject* array, Buffers& buffers, Tensor& out,
                  DataType code = DataType::kUndefined);

// Element types a numpy array holds as they are (no bfloat16, float8, sub-byte, string).
bool is_plain(DataType type);

// The DLPack dtype a tensor's bytes are exported as (bfloat16, float8 and sub-byte types
// as integers of their width, re-typed in Python).
nanobind::dlpack::dtype dlpack_dtype(DataType type);

// A numpy array owning the tensor's buffer (no copy).
nanobind::object numpy_array(Tensor&& tensor);

}  // namespace nxrt::py
