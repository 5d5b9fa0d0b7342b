// Target (c): arbitrary bytes as one TensorProto (test data files, constant attributes).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>

#include "onnx/decoder.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const nxrt::Limits limits = [] {
    nxrt::Limits l;
    l.max_tensor_bytes = int64_t(64) << 20;
    l.max_tensor_elements = int64_t(16) << 20;
    return l;
  }();
  // An owned copy, so decoding may view raw_data in place as it does for mapped files.
  std::shared_ptr<char[]> copy(new char[size ? size : 1]);
  if (size) std::memcpy(copy.get(), data, size);
  auto tensor =
      nxrt::onnx::decode_tensor(copy.get(), size, std::shared_ptr<void>(copy, copy.get()), limits);
  if (tensor && tensor->dtype() != nxrt::DataType::kString && tensor->numel() > 0) {
    // Touch the first and last byte: a tensor that claims more than it holds shows here.
    const auto* p = static_cast<const volatile unsigned char*>(tensor->raw());
    (void)p[0];
    (void)p[tensor->nbytes() - 1];
  }
  return 0;
}
