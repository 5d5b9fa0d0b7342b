// Zero-copy values: the native half of NxrtValue / OrtValue, DLPack export and import.
// Python policy (argument checks, dtype views, protocol negotiation) is in nxrt/_value.py.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstring>
#include <string>
#include <vector>

#include "errors.h"
#include "value.h"

namespace nb = nanobind;

namespace nxrt::py {
namespace {

// The DLPack ABI (dlpack.h 1.1). Declared here rather than vendored: only these structs
// and constants cross the boundary, and their layout is frozen by the spec.
struct DLPackVersion {
  uint32_t major;
  uint32_t minor;
};
struct DLDevice {
  int32_t device_type;  // a C enum: int-sized
  int32_t device_id;
};
struct DLDataType {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
};
struct DLTensor {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;  // in elements; null means compact row-major
  uint64_t byte_offset;
};
struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor* self);
};
struct DLManagedTensorVersioned {
  DLPackVersion version;
  void* manager_ctx;
  void (*deleter)(DLManagedTensorVersioned* self);
  uint64_t flags;
  DLTensor dl_tensor;
};

constexpr int32_t kDLCPU = 1;
constexpr uint8_t kDLInt = 0, kDLUInt = 1, kDLFloat = 2, kDLBfloat = 4, kDLBool = 6;
constexpr uint8_t kDLFloat8_e4m3fn = 10, kDLFloat8_e4m3fnuz = 11, kDLFloat8_e5m2 = 12,
                  kDLFloat8_e5m2fnuz = 13, kDLFloat8_e8m0fnu = 14;
constexpr uint64_t kFlagReadOnly = 1, kFlagIsCopied = 2;
constexpr const char* kLegacyName = "dltensor";
constexpr const char* kVersionedName = "dltensor_versioned";

// How a dtype travels through DLPack. Sub-byte integers are stored one value per byte
// (core/dtype.h), so they export as the int8/uint8 holding the same numbers; float4 codes
// in a byte have no such reading and are refused rather than exported as misleading uint8.
bool export_dtype(DataType type, DLDataType& out) {
  auto set = [&](uint8_t code, uint8_t bits) {
    out = DLDataType{code, bits, 1};
    return true;
  };
  switch (type) {
    case DataType::kFloat:
      return set(kDLFloat, 32);
    case DataType::kDouble:
      return set(kDLFloat, 64);
    case DataType::kFloat16:
      return set(kDLFloat, 16);
    case DataType::kBFloat16:
      return set(kDLBfloat, 16);
    case DataType::kInt8:
    case DataType::kInt4:
    case DataType::kInt2:
      return set(kDLInt, 8);
    case DataType::kInt16:
      return set(kDLInt, 16);
    case DataType::kInt32:
      return set(kDLInt, 32);
    case DataType::kInt64:
      return set(kDLInt, 64);
    case DataType::kUint8:
    case DataType::kUint4:
    case DataType::kUint2:
      return set(kDLUInt, 8);
    case DataType::kUint16:
      return set(kDLUInt, 16);
    case DataType::kUint32:
      return set(kDLUInt, 32);
    case DataType::kUint64:
      return set(kDLUInt, 64);
    case DataType::kBool:
      return set(kDLBool, 8);
    case DataType::kFloat8E4M3FN:
      return set(kDLFloat8_e4m3fn, 8);
    case DataType::kFloat8E4M3FNUZ:
      return set(kDLFloat8_e4m3fnuz, 8);
    case DataType::kFloat8E5M2:
      return set(kDLFloat8_e5m2, 8);
    case DataType::kFloat8E5M2FNUZ:
      return set(kDLFloat8_e5m2fnuz, 8);
    case DataType::kFloat8E8M0:
      return set(kDLFloat8_e8m0fnu, 8);
    default:
      return false;
  }
}

DataType import_dtype(const DLDataType& t) {
  if (t.lanes != 1) return DataType::kUndefined;
  auto sized = [&](DataType b8, DataType b16, DataType b32, DataType b64) {
    switch (t.bits) {
      case 8:
        return b8;
      case 16:
        return b16;
      case 32:
        return b32;
      case 64:
        return b64;
      default:
        return DataType::kUndefined;
    }
  };
  constexpr DataType kNo = DataType::kUndefined;
  switch (t.code) {
    case kDLInt:
      return sized(DataType::kInt8, DataType::kInt16, DataType::kInt32, DataType::kInt64);
    case kDLUInt:
      return sized(DataType::kUint8, DataType::kUint16, DataType::kUint32, DataType::kUint64);
    case kDLFloat:
      return sized(kNo, DataType::kFloat16, DataType::kFloat, DataType::kDouble);
    case kDLBfloat:
      return t.bits == 16 ? DataType::kBFloat16 : kNo;
    case kDLBool:
      return t.bits == 8 ? DataType::kBool : kNo;
    case kDLFloat8_e4m3fn:
      return t.bits == 8 ? DataType::kFloat8E4M3FN : kNo;
    case kDLFloat8_e4m3fnuz:
      return t.bits == 8 ? DataType::kFloat8E4M3FNUZ : kNo;
    case kDLFloat8_e5m2:
      return t.bits == 8 ? DataType::kFloat8E5M2 : kNo;
    case kDLFloat8_e5m2fnuz:
      return t.bits == 8 ? DataType::kFloat8E5M2FNUZ : kNo;
    case kDLFloat8_e8m0fnu:
      return t.bits == 8 ? DataType::kFloat8E8M0 : kNo;
    default:
      return kNo;
  }
}

[[noreturn]] void raise(PyObject* type, const std::string& message) {
  if (type == PyExc_BufferError) throw nb::buffer_error(message.c_str());
  if (type == PyExc_TypeError) throw nb::type_error(message.c_str());
  throw nb::value_error(message.c_str());
}

// ---- export ----------------------------------------------------------------------------

// What a capsule keeps alive: a tensor sharing the buffer's owner, and for buffers nxrt
// does not own (a caller pointer) the Python value that does.
struct ExportContext {
  Tensor tensor;
  std::vector<int64_t> shape, strides;
  PyObject* keep = nullptr;
};

void release_context(ExportContext* ctx) {
  if (ctx->keep && Py_IsInitialized()) {
    // Consumers (torch) may free from a thread that does not hold the GIL.
    PyGILState_STATE gil = PyGILState_Ensure();
    Py_DecRef(ctx->keep);
    PyGILState_Release(gil);
  }
  delete ctx;
}

void delete_legacy(DLManagedTensor* self) {
  release_context(static_cast<ExportContext*>(self->manager_ctx));
  delete self;
}

void delete_versioned(DLManagedTensorVersioned* self) {
  release_context(static_cast<ExportContext*>(self->manager_ctx));
  delete self;
}

// A capsule nobody consumed still owns its tensor; a consumed one was renamed "used_...".
void legacy_capsule_destructor(PyObject* capsule) {
  if (!PyCapsule_IsValid(capsule, kLegacyName)) return;
  auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, kLegacyName));
  if (m && m->deleter) m->deleter(m);
}

void versioned_capsule_destructor(PyObject* capsule) {
  if (!PyCapsule_IsValid(capsule, kVersionedName)) return;
  auto* m = static_cast<DLManagedTensorVersioned*>(PyCapsule_GetPointer(capsule, kVersionedName));
  if (m && m->deleter) m->deleter(m);
}

nb::object to_dlpack(nb::handle self, bool versioned, bool copy) {
  NativeValue& v = nb::cast<NativeValue&>(self);
  DLDataType dtype{};
  if (!export_dtype(v.tensor.dtype(), dtype))
    raise(PyExc_BufferError, "nxrt cannot export a tensor(" +
                                 std::string(dtype_name(v.tensor.dtype())) +
                                 ") through DLPack: DLPack has no matching element type");
  auto* ctx = new ExportContext();
  if (copy) {
    auto cloned = v.tensor.clone();
    if (!cloned) {
      delete ctx;
      throw_status(cloned.status());
    }
    ctx->tensor = std::move(cloned).value();
  } else {
    ctx->tensor = v.tensor;
    if (!ctx->tensor.owner()) {
      ctx->keep = self.ptr();
      Py_IncRef(ctx->keep);
    }
  }
  const Shape& shape = ctx->tensor.shape();
  ctx->shape.assign(shape.begin(), shape.end());
  ctx->strides.assign(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;)
    ctx->strides[d - 1] = ctx->strides[d] * std::max<int64_t>(shape[d], 1);
  // Some consumers reject null data even for empty tensors.
  static char empty_data[64] = {};
  DLTensor t{};
  t.data = ctx->tensor.raw() ? ctx->tensor.raw() : empty_data;
  t.device = DLDevice{kDLCPU, 0};
  t.ndim = int32_t(ctx->shape.size());
  t.dtype = dtype;
  t.shape = ctx->shape.data();
  t.strides = ctx->strides.data();
  t.byte_offset = 0;
  PyObject* capsule = nullptr;
  if (versioned) {
    auto* m = new DLManagedTensorVersioned{};
    m->version = DLPackVersion{1, 1};
    m->manager_ctx = ctx;
    m->deleter = delete_versioned;
    m->flags = (copy ? kFlagIsCopied : 0) | (v.read_only && !copy ? kFlagReadOnly : 0);
    m->dl_tensor = t;
    capsule = PyCapsule_New(m, kVersionedName, versioned_capsule_destructor);
    if (!capsule) delete_versioned(m);
  } else {
    auto* m = new DLManagedTensor{};
    m->dl_tensor = t;
    m->manager_ctx = ctx;
    m->deleter = delete_legacy;
    capsule = PyCapsule_New(m, kLegacyName, legacy_capsule_destructor);
    if (!capsule) delete_legacy(m);
  }
  if (!capsule) throw nb::python_error();
  return nb::steal(capsule);
}

// ---- import ----------------------------------------------------------------------------

// Copies a strided view into a compact row-major buffer, one element size at a time.
void gather(const char* src, char* dst, const std::vector<int64_t>& shape,
            const std::vector<int64_t>& byte_strides, size_t elem, size_t dim, size_t& pos) {
  if (dim == shape.size()) {
    std::memcpy(dst + pos, src, elem);
    pos += elem;
    return;
  }
  for (int64_t i = 0; i < shape[dim]; ++i)
    gather(src + i * byte_strides[dim], dst, shape, byte_strides, elem, dim + 1, pos);
}

template <typename Managed>
NativeValue import_managed(PyObject* capsule, Managed* m, const char* used_name,
                           DataType override_type, bool read_only) {
  DLTensor& t = m->dl_tensor;
  if (t.device.device_type != kDLCPU)
    raise(PyExc_BufferError,
          "nxrt reads DLPack tensors on the CPU only (kDLCPU = 1); this one is "
          "on device type " +
              std::to_string(t.device.device_type) +
              ": move it to the CPU first (e.g. tensor.cpu())");
  DataType type = import_dtype(t.dtype);
  if (type == DataType::kUndefined)
    raise(PyExc_TypeError, "nxrt cannot read the DLPack element type (code " +
                               std::to_string(t.dtype.code) + ", bits " +
                               std::to_string(t.dtype.bits) + ", lanes " +
                               std::to_string(t.dtype.lanes) + ")");
  if (override_type != DataType::kUndefined) {
    if (dtype_size(override_type) != dtype_size(type))
      raise(PyExc_TypeError, "element size mismatch reinterpreting a DLPack tensor as " +
                                 std::string(dtype_name(override_type)));
    type = override_type;
  }
  if (t.ndim < 0 || (t.ndim > 0 && !t.shape))
    raise(PyExc_BufferError, "malformed DLPack tensor (no shape)");
  std::vector<int64_t> dims(t.shape, t.shape + t.ndim);
  Shape shape(dims);
  const size_t elem = dtype_size(type);
  bool compact = true;
  if (t.strides) {
    int64_t expected = 1;
    for (int d = t.ndim - 1; d >= 0; --d) {
      if (dims[size_t(d)] != 1 && t.strides[d] != expected) compact = false;
      expected *= dims[size_t(d)];
    }
    if (shape.numel() == 0) compact = true;
  }
  char* data = static_cast<char*>(t.data) + t.byte_offset;
  NativeValue out;
  if (compact) {
    // Consume: from now on the deleter is ours to call, when the last tensor copy goes.
    PyCapsule_SetName(capsule, used_name);
    std::shared_ptr<void> owner(m, [](void* p) {
      auto* managed = static_cast<Managed*>(p);
      if (!managed->deleter) return;
      if (!Py_IsInitialized()) return;
      PyGILState_STATE gil = PyGILState_Ensure();  // producers' deleters may touch Python
      managed->deleter(managed);
      PyGILState_Release(gil);
    });
    out.tensor = Tensor(type, std::move(shape), data, std::move(owner));
    out.read_only = read_only;
    return out;
  }
  // Strided: one gathering copy into memory nxrt owns; the producer's buffer is released.
  auto copy = Tensor::allocate(type, shape);
  if (!copy) throw_status(copy.status());
  std::vector<int64_t> byte_strides(dims.size());
  for (size_t d = 0; d < dims.size(); ++d) byte_strides[d] = t.strides[d] * int64_t(elem);
  size_t pos = 0;
  gather(data, static_cast<char*>(copy->raw()), dims, byte_strides, elem, 0, pos);
  PyCapsule_SetName(capsule, used_name);
  if (m->deleter) m->deleter(m);
  out.tensor = std::move(copy).value();
  return out;
}

NativeValue from_capsule(nb::handle capsule, int override_code) {
  PyObject* c = capsule.ptr();
  const auto override_type = DataType(override_code);
  if (PyCapsule_IsValid(c, kVersionedName)) {
    auto* m = static_cast<DLManagedTensorVersioned*>(PyCapsule_GetPointer(c, kVersionedName));
    if (m->version.major != 1)
      raise(PyExc_BufferError, "DLPack version " + std::to_string(m->version.major) + "." +
                                   std::to_string(m->version.minor) +
                                   " is not supported: nxrt reads version 1.x");
    return import_managed(c, m, "used_dltensor_versioned", override_type,
                          (m->flags & kFlagReadOnly) != 0);
  }
  if (PyCapsule_IsValid(c, kLegacyName)) {
    auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(c, kLegacyName));
    return import_managed(c, m, "used_dltensor", override_type, false);
  }
  raise(PyExc_TypeError,
        "expected an unconsumed DLPack capsule (\"dltensor\" or "
        "\"dltensor_versioned\"); capsules can be consumed only once");
}

Shape shape_from(const std::vector<int64_t>& dims) {
  for (int64_t d : dims)
    if (d < 0) raise(PyExc_ValueError, "shape dimensions must be non-negative");
  return Shape(dims);
}

// A numpy array over the value's memory; its base is the value object itself.
nb::object numpy_view(nb::handle self) {
  NativeValue& v = nb::cast<NativeValue&>(self);
  const Tensor& t = v.tensor;
  if (t.dtype() == DataType::kString)
    raise(PyExc_TypeError, "a tensor(string) has no numpy view; use strings()");
  DLDataType dl{};
  // Storage types only: bfloat16/float8 travel as uint16/uint8 bits and the Python side
  // views them as ml_dtypes; sub-byte values are int8/uint8 one per byte.
  const size_t size = dtype_size(t.dtype());
  uint8_t code = kDLUInt;
  if (export_dtype(t.dtype(), dl) &&
      (dl.code == kDLInt || dl.code == kDLFloat || dl.code == kDLBool))
    code = dl.code;
  if (t.dtype() == DataType::kFloat4E2M1) code = kDLUInt;
  if (size == 0) raise(PyExc_TypeError, "tensor type has no numpy view");
  nb::dlpack::dtype dt{code, uint8_t(size * 8), 1};
  std::vector<size_t> shape(t.shape().begin(), t.shape().end());
  nb::object owner = nb::borrow(self);
  if (v.read_only) {
    nb::ndarray<nb::numpy, nb::ro> a(t.raw(), shape.size(), shape.data(), owner, nullptr, dt);
    return a.cast();
  }
  nb::ndarray<nb::numpy> a(const_cast<void*>(t.raw()), shape.size(), shape.data(), owner, nullptr,
                           dt);
  return a.cast();
}

}  // namespace

void bind_value(nb::module_& m) {
  nb::class_<NativeValue>(m, "Value")
      .def_static("from_capsule", &from_capsule, nb::arg("capsule"), nb::arg("override_code") = 0,
                  "Consumes a DLPack capsule: in place when compact, else one copy.")
      .def_static(
          "from_pointer",
          [](int code, const std::vector<int64_t>& dims, uintptr_t ptr) {
            if (!dtype_is_known(code) || dtype_size(DataType(code)) == 0)
              raise(PyExc_TypeError, "unsupported element type " + std::to_string(code));
            Shape shape = shape_from(dims);
            if (ptr == 0 && shape.numel() > 0) raise(PyExc_ValueError, "buffer_ptr is null");
            return NativeValue{
                Tensor(DataType(code), std::move(shape), reinterpret_cast<void*>(ptr)), false};
          },
          nb::arg("code"), nb::arg("shape"), nb::arg("ptr"))
      .def_static(
          "allocate",
          [](int code, const std::vector<int64_t>& dims) {
            if (!dtype_is_known(code) ||
                (dtype_size(DataType(code)) == 0 && code != int(DataType::kString)))
              raise(PyExc_TypeError, "unsupported element type " + std::to_string(code));
            return NativeValue{unwrap(Tensor::allocate(DataType(code), shape_from(dims))), false};
          },
          nb::arg("code"), nb::arg("shape"))
      .def_static(
          "from_strings",
          [](const std::vector<std::string>& items, const std::vector<int64_t>& dims) {
            NativeValue v{unwrap(Tensor::allocate(DataType::kString, shape_from(dims))), false};
            if (size_t(v.tensor.numel()) != items.size())
              raise(PyExc_ValueError, "string count does not match the shape");
            auto* s = v.tensor.data<std::string>();
            for (size_t i = 0; i < items.size(); ++i) s[i] = items[i];
            return v;
          },
          nb::arg("items"), nb::arg("shape"))
      .def_prop_ro("code", [](const NativeValue& v) { return int(v.tensor.dtype()); })
      .def_prop_ro("shape",
                   [](const NativeValue& v) {
                     nb::list dims;
                     for (int64_t d : v.tensor.shape()) dims.append(d);
                     return nb::tuple(dims);
                   })
      .def_prop_ro("data_ptr", [](const NativeValue& v) { return uintptr_t(v.tensor.raw()); })
      .def_prop_ro("nbytes", [](const NativeValue& v) { return v.tensor.nbytes(); })
      .def_prop_ro("read_only", [](const NativeValue& v) { return v.read_only; })
      .def("numpy_view", &numpy_view)
      .def("strings",
           [](const NativeValue& v) {
             if (v.tensor.dtype() != DataType::kString)
               raise(PyExc_TypeError, "not a string tensor");
             nb::list items;
             const auto* s = v.tensor.data<std::string>();
             for (int64_t i = 0; i < v.tensor.numel(); ++i)
               items.append(nb::bytes(s[i].data(), s[i].size()));
             return items;
           })
      .def("clone",
           [](const NativeValue& v) {
             return NativeValue{unwrap(v.tensor.clone()), false};
           })
      .def(
          "copy_from",
          [](NativeValue& v, const NativeValue& src) {
            if (v.read_only) raise(PyExc_ValueError, "the value is read-only");
            if (src.tensor.dtype() != v.tensor.dtype() || !(src.tensor.shape() == v.tensor.shape()))
              raise(PyExc_ValueError, "copy_from needs the same element type and shape: got " +
                                          tensor_type_name(src.tensor.dtype()) + " " +
                                          src.tensor.shape().to_string() + " for " +
                                          tensor_type_name(v.tensor.dtype()) + " " +
                                          v.tensor.shape().to_string());
            copy_elements(v.tensor.dtype(), src.tensor.raw(), v.tensor.raw(), v.tensor.numel());
          })
      .def("to_dlpack", &to_dlpack, nb::arg("versioned"), nb::arg("copy") = false,
           "A DLPack capsule over the value's memory (a copy when copy=True).");
}

}  // namespace nxrt::py
