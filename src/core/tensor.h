// A typed n-dimensional view over memory that someone owns. `owner_` keeps that memory
// alive when the tensor holds it (initializers in a mapped file, run outputs handed to
// Python); a tensor with no owner borrows memory whose lifetime the executor manages.
#pragma once

#include <cstring>
#include <memory>
#include <string>

#include "core/dtype.h"
#include "core/shape.h"
#include "core/status.h"

namespace nxrt {

// Upper bound for one tensor's bytes; a model or input asking for more is refused
// instead of letting the allocator fail or the process run out of memory.
inline constexpr int64_t kMaxTensorBytes = int64_t(1) << 40;

class Tensor {
 public:
  Tensor() = default;
  Tensor(DataType dtype, Shape shape, void* data, std::shared_ptr<void> owner = nullptr)
      : dtype_(dtype), shape_(std::move(shape)), data_(data), owner_(std::move(owner)) {}

  // Allocates an owning, 64-byte aligned, zero-filled tensor (strings default-constructed).
  static Expected<Tensor> allocate(DataType dtype, const Shape& shape);

  DataType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  Shape& mutable_shape() { return shape_; }
  size_t rank() const { return shape_.size(); }
  int64_t numel() const { return shape_.numel(); }
  size_t nbytes() const { return size_t(numel()) * dtype_size(dtype_); }
  bool defined() const { return dtype_ != DataType::kUndefined; }

  void* raw() { return data_; }
  const void* raw() const { return data_; }
  template <typename T> T* data() { return static_cast<T*>(data_); }
  template <typename T> const T* data() const { return static_cast<const T*>(data_); }
  const std::shared_ptr<void>& owner() const { return owner_; }

  // Deep copy into a fresh owning tensor.
  Expected<Tensor> clone() const;

 private:
  DataType dtype_ = DataType::kUndefined;
  Shape shape_;
  void* data_ = nullptr;
  std::shared_ptr<void> owner_;
};

// Bytes needed for `numel` elements of `dtype`, or an error naming `what` when absurd.
Expected<size_t> tensor_bytes(DataType dtype, const Shape& shape, const std::string& what);

// Copies elements (string-aware) from src to dst; both must have `count` elements.
void copy_elements(DataType dtype, const void* src, void* dst, int64_t count);

}  // namespace nxrt
