// Minimal .npy reader/writer for the CLI: format versions 1.0 and 2.0, C order, little
// endian, numeric and bool dtypes. Anything else is refused with a message that says why,
// because silently reinterpreting a big-endian or Fortran-order file gives garbage inputs.
#pragma once

#include <string>

#include "core/status.h"
#include "core/tensor.h"

namespace nxrt::cli {

// Reads `path` into an owning tensor.
Expected<Tensor> read_npy(const std::string& path);
// Writes `tensor` as a version 1.0 file (2.0 when the header needs more than 64 KiB).
Status write_npy(const std::string& path, const Tensor& tensor);

// numpy's descr for a dtype ("<f4"), or empty when numpy has no such type.
std::string npy_descr(DataType dtype);

}  // namespace nxrt::cli
