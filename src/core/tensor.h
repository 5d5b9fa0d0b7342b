// A typed n-dimensional view over memory that someone owns. `owner_` keeps that memory
// alive when the tensor holds it (initializers in a mapped file, run outputs handed to
// Python); a tensor with no owner borrows memory whose lifetime the executor manages.
#pragma once

#include <cstring>
#include <memory>
#include <string>

#include "core/dtype.h"
#include "core/limits.h"
#include "core/shape.h"
#include "core/status.h"

namespace nxrt {

class Tensor {
 public:
  Tensor() = default;
  Tensor(DataType dtype, Shape shape, void* data, std::shared_ptr<void> owner = nullptr)
      : dtype_(dtype), shape_(std::move(shape)), data_(data), owner_(std::move(owner)) {}

  // Allocates an owning, 64-byte aligned, zero-filled tensor (strings default-constructed).
  // Shapes beyond `limits` (max_tensor_bytes, max_tensor_elements) are refused.
  static Expected<Tensor> allocate(DataType dtype, const Shape& shape,
                                   const Limits& limits = default_limits());
  // The same without the zero fill (strings are still constructed): for kernel outputs,
  // which kernels write whole, like the pooled intermediates.
  static Expected<Tensor> allocate_uninitialized(DataType dtype, const Shape& shape,
                                                 const Limits& limits = default_limits());

  DataType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  Shape& mutable_shape() { return shape_; }
  size_t rank() const { return shape_.size(); }
  int64_t numel() const { return shape_.numel(); }
  size_t nbytes() const { return size_t(numel()) * dtype_size(dtype_); }
  bool defined() const { return dtype_ != DataType::kUndefined; }

  void* raw() { return data_; }
  const void* raw() const { return data_; }
  template <typename T>
  T* data() {
    return static_cast<T*>(data_);
  }
  template <typename T>
  const T* data() const {
    return static_cast<const T*>(data_);
  }
  const std::shared_ptr<void>& owner() const { return owner_; }

  // Back to an undefined tensor, dropping the owner (what `= Tensor()` does, without
  // building and moving a temporary: the executor clears slots on every node).
  void reset() {
    dtype_ = DataType::kUndefined;
    shape_.resize(0);
    data_ = nullptr;
    owner_.reset();
  }

  // Deep copy into a fresh owning tensor.
  Expected<Tensor> clone() const;

 private:
  DataType dtype_ = DataType::kUndefined;
  Shape shape_;
  void* data_ = nullptr;
  std::shared_ptr<void> owner_;
};

// Bytes needed for a tensor of `shape` and `dtype`, or an InvalidArgument error naming
// `what` when a dim is negative, the element count overflows int64 or the tensor is beyond
// `limits` (max_tensor_bytes, max_tensor_elements).
Expected<size_t> tensor_bytes(DataType dtype, const Shape& shape, const std::string& what,
                              const Limits& limits = default_limits());

// Copies elements (string-aware) from src to dst; both must have `count` elements.
void copy_elements(DataType dtype, const void* src, void* dst, int64_t count);

}  // namespace nxrt
