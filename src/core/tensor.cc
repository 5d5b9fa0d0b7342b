#include "core/tensor.h"

#include <cstdlib>
#include <new>

#include "core/large_buffers.h"

namespace nxrt {

Expected<size_t> tensor_bytes(DataType dtype, const Shape& shape, const std::string& what,
                              const Limits& limits) {
  const int64_t numel = checked_numel(shape.span());
  if (numel < 0)
    return invalid_argument(what, ": invalid shape ", shape.to_string(),
                            " (negative dim or element count overflows int64)");
  const size_t elem = dtype == DataType::kString ? sizeof(std::string) : dtype_size(dtype);
  if (elem == 0)
    return not_implemented(what, ": element type ", dtype_name(dtype), " is not supported");
  if (numel > limits.max_tensor_elements)
    return invalid_argument(what, ": shape ", shape.to_string(), " has ", numel,
                            " elements, more than the ",
                            limit_text(kLimitMaxTensorElements, limits.max_tensor_elements));
  int64_t bytes = 0;
  if (__builtin_mul_overflow(numel, int64_t(elem), &bytes) || bytes > limits.max_tensor_bytes)
    return invalid_argument(what, ": shape ", shape.to_string(), " of ", dtype_name(dtype),
                            " needs ", numel, " x ", elem, " bytes, more than the ",
                            limit_text(kLimitMaxTensorBytes, limits.max_tensor_bytes));
  return size_t(bytes);
}

Expected<Tensor> Tensor::allocate(DataType dtype, const Shape& shape, const Limits& limits) {
  NXRT_ASSIGN_OR_RETURN(Tensor t, allocate_uninitialized(dtype, shape, limits));
  if (dtype != DataType::kString) std::memset(t.raw(), 0, t.nbytes());
  return t;
}

Expected<Tensor> Tensor::allocate_uninitialized(DataType dtype, const Shape& shape,
                                                const Limits& limits) {
  NXRT_ASSIGN_OR_RETURN(size_t bytes, tensor_bytes(dtype, shape, "tensor", limits));
  if (dtype == DataType::kString) {
    const int64_t n = shape.numel();
    std::shared_ptr<std::string[]> strings(new (std::nothrow) std::string[size_t(n ? n : 1)]);
    if (!strings) return runtime_error("out of memory allocating ", n, " strings");
    void* data = strings.get();
    return Tensor(dtype, shape, data, std::shared_ptr<void>(strings, data));
  }
  const size_t rounded = (bytes + 63) / 64 * 64;
  if (rounded >= kLargeBufferMin) {
    size_t capacity = 0;
    void* data = acquire_large_buffer(rounded, &capacity);
    if (!data) return runtime_error("out of memory allocating ", bytes, " bytes");
    return Tensor(dtype, shape, data, std::shared_ptr<void>(data, [capacity](void* p) {
                    release_large_buffer(p, capacity);
                  }));
  }
  void* data = std::aligned_alloc(64, rounded ? rounded : 64);
  if (!data) return runtime_error("out of memory allocating ", bytes, " bytes");
  return Tensor(dtype, shape, data, std::shared_ptr<void>(data, std::free));
}

Expected<Tensor> Tensor::clone() const {
  NXRT_ASSIGN_OR_RETURN(Tensor out, allocate(dtype_, shape_));
  copy_elements(dtype_, data_, out.raw(), numel());
  return out;
}

void copy_elements(DataType dtype, const void* src, void* dst, int64_t count) {
  if (count <= 0 || src == dst) return;
  if (dtype == DataType::kString) {
    auto* s = static_cast<const std::string*>(src);
    auto* d = static_cast<std::string*>(dst);
    for (int64_t i = 0; i < count; ++i) d[i] = s[i];
    return;
  }
  std::memcpy(dst, src, size_t(count) * dtype_size(dtype));
}

}  // namespace nxrt
