// ONNX protobuf to ir::Model, decoded with protozero straight from the mapped bytes.
#pragma once

#include <memory>
#include <string>

#include "core/limits.h"
#include "core/status.h"
#include "ir/graph.h"

namespace nxrt::onnx {

// Loads a model file; its bytes stay mapped and aligned initializers point into them.
// `limits` bounds the model size, subgraph and type nesting, node count and the tensors
// decoding allocates.
Expected<std::shared_ptr<ir::Model>> load_model_file(const std::string& path,
                                                     const Limits& limits = default_limits());

// Decodes a serialized model. `storage` owns `data` (it is kept alive by the model);
// `model_dir` resolves external data ("" refuses any).
Expected<std::shared_ptr<ir::Model>> decode_model(const char* data, size_t size,
                                                  std::shared_ptr<void> storage,
                                                  const std::string& model_dir,
                                                  const Limits& limits = default_limits());

// Decodes one serialized TensorProto (test data files, constant attributes).
Expected<Tensor> decode_tensor(const char* data, size_t size, std::shared_ptr<void> storage,
                               const Limits& limits = default_limits());

}  // namespace nxrt::onnx
