#include "numpy_io.h"

#include <bit>

namespace nb = nanobind;

namespace nxrt::py {

namespace {
// Set with the GIL held; no C++ static guard, which an import releasing the GIL could
// deadlock on. Kept for the process's life.
PyObject* g_ndarray_type = nullptr;
}  // namespace

bool is_numpy_array(PyObject* o) {
  if (!g_ndarray_type)
    g_ndarray_type = nb::object(nb::module_::import_("numpy").attr("ndarray")).release().ptr();
  return Py_TYPE(o) == reinterpret_cast<PyTypeObject*>(g_ndarray_type);
}

DataType dtype_of_format(const char* format, Py_ssize_t itemsize) {
  if (!format) return DataType::kUndefined;
  char c = format[0];
  if (c == '@' || c == '=' || c == '<') {
    if (c == '<' && !(std::endian::native == std::endian::little)) return DataType::kUndefined;
    c = format[1];
    if (c && format[2]) return DataType::kUndefined;
  } else if (c && format[1]) {
    return DataType::kUndefined;  // '>' / '!' byte orders and structured types
  }
  switch (c) {
    case 'f':
      return itemsize == 4 ? DataType::kFloat : DataType::kUndefined;
    case 'd':
      return itemsize == 8 ? DataType::kDouble : DataType::kUndefined;
    case 'e':
      return itemsize == 2 ? DataType::kFloat16 : DataType::kUndefined;
    case '?':
      return itemsize == 1 ? DataType::kBool : DataType::kUndefined;
    case 'b':
    case 'h':
    case 'i':
    case 'l':
    case 'q':
      switch (itemsize) {
        case 1:
          return DataType::kInt8;
        case 2:
          return DataType::kInt16;
        case 4:
          return DataType::kInt32;
        case 8:
          return DataType::kInt64;
      }
      return DataType::kUndefined;
    case 'B':
    case 'H':
    case 'I':
    case 'L':
    case 'Q':
      switch (itemsize) {
        case 1:
          return DataType::kUint8;
        case 2:
          return DataType::kUint16;
        case 4:
          return DataType::kUint32;
        case 8:
          return DataType::kUint64;
      }
      return DataType::kUndefined;
    default:
      return DataType::kUndefined;
  }
}

Buffers::~Buffers() {
  for (Py_buffer& v : views) PyBuffer_Release(&v);
}

bool array_tensor(PyObject* array, Buffers& buffers, Tensor& out, DataType code) {
  Py_buffer view;
  if (PyObject_GetBuffer(array, &view, PyBUF_RECORDS_RO) != 0) {
    PyErr_Clear();
    return false;
  }
  DataType dtype = dtype_of_format(view.format, view.itemsize);
  const bool aligned =
      view.itemsize == 0 || reinterpret_cast<uintptr_t>(view.buf) % size_t(view.itemsize) == 0;
  if (dtype == DataType::kUndefined || !aligned || !PyBuffer_IsContiguous(&view, 'C') ||
      view.ndim > 32) {
    PyBuffer_Release(&view);
    return false;
  }
  if (code != DataType::kUndefined) dtype = code;
  Shape shape;
  for (int d = 0; d < view.ndim; ++d) shape.push_back(int64_t(view.shape[d]));
  out = Tensor(dtype, std::move(shape), view.buf);
  buffers.views.push_back(view);
  return true;
}

bool is_plain(DataType type) {
  return is_integer_type(type) || type == DataType::kFloat || type == DataType::kDouble ||
         type == DataType::kFloat16 || type == DataType::kBool;
}

nb::dlpack::dtype dlpack_dtype(DataType type) {
  using nb::dlpack::dtype_code;
  auto make = [](dtype_code code, int bits) {
    return nb::dlpack::dtype{uint8_t(code), uint8_t(bits), 1};
  };
  switch (type) {
    case DataType::kFloat:
      return make(dtype_code::Float, 32);
    case DataType::kDouble:
      return make(dtype_code::Float, 64);
    case DataType::kFloat16:
      return make(dtype_code::Float, 16);
    case DataType::kInt8:
    case DataType::kInt4:
    case DataType::kInt2:
      return make(dtype_code::Int, 8);
    case DataType::kInt16:
      return make(dtype_code::Int, 16);
    case DataType::kInt32:
      return make(dtype_code::Int, 32);
    case DataType::kInt64:
      return make(dtype_code::Int, 64);
    case DataType::kUint16:
    case DataType::kBFloat16:
      return make(dtype_code::UInt, 16);
    case DataType::kUint32:
      return make(dtype_code::UInt, 32);
    case DataType::kUint64:
      return make(dtype_code::UInt, 64);
    case DataType::kBool:
      return make(dtype_code::Bool, 8);
    default:
      return make(dtype_code::UInt, 8);  // uint8, float8 and float4 bits
  }
}

nb::object numpy_array(Tensor&& tensor) {
  auto* owned = new Tensor(std::move(tensor));
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<Tensor*>(p); });
  const std::vector<size_t> shape(owned->shape().begin(), owned->shape().end());
  nb::ndarray<nb::numpy> array(owned->raw(), shape.size(), shape.data(), owner, nullptr,
                               dlpack_dtype(owned->dtype()));
  return array.cast();
}

}  // namespace nxrt::py
