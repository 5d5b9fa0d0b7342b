// ONNX protobuf to ir::Model, decoded with protozero straight from the mapped bytes.
#pragma once

#include <memory>
#include <string>

#include "core/status.h"
#include "ir/graph.h"

namespace nxrt::onnx {

// Loads a model file; its bytes stay mapped and aligned initializers point into them.
Expected<std::shared_ptr<ir::Model>> load_model_file(const std::string& path);

// Decodes a serialized model. `storage` owns `data` (it is kept alive by the model);
// `model_dir` resolves external data ("" refuses any).
Expected<std::shared_ptr<ir::Model>> decode_model(const char* data, size_t size,
                                                  std::shared_ptr<void> storage,
                                                  const std::string& model_dir);

// Decodes one serialized TensorProto (test data files, constant attributes).
Expected<Tensor> decode_tensor(const char* data, size_t size, std::shared_ptr<void> storage);

}  // namespace nxrt::onnx
