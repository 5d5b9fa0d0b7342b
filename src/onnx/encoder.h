// ir::Model back to ONNX protobuf: what SessionOptions.optimized_model_filepath writes.
// The inverse of decoder.h for everything nxrt keeps of a model (graphs and subgraphs,
// typed values, attributes, initializers as raw data, functions, metadata).
#pragma once

#include <string>

#include "core/status.h"
#include "ir/graph.h"

namespace nxrt::onnx {

// The serialized ModelProto. Fails (naming the tensor or attribute) for what ONNX files
// cannot hold inline: a model past protobuf's 2 GiB, or weights already released.
Expected<std::string> encode_model(const ir::Model& model);

// encode_model() written to `path` (replaced if it exists).
Status write_model_file(const ir::Model& model, const std::string& path);

}  // namespace nxrt::onnx
