// Element types, numbered as ONNX TensorProto.DataType so the decoder maps them 1:1.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/half.h"

namespace nxrt {

enum class DataType : int32_t {
  kUndefined = 0,
  kFloat = 1,
  kUint8 = 2,
  kInt8 = 3,
  kUint16 = 4,
  kInt16 = 5,
  kInt32 = 6,
  kInt64 = 7,
  kString = 8,
  kBool = 9,
  kFloat16 = 10,
  kDouble = 11,
  kUint32 = 12,
  kUint64 = 13,
  kComplex64 = 14,
  kComplex128 = 15,
  kBFloat16 = 16,
  kFloat8E4M3FN = 17,
  kFloat8E4M3FNUZ = 18,
  kFloat8E5M2 = 19,
  kFloat8E5M2FNUZ = 20,
  kUint4 = 21,
  kInt4 = 22,
  kFloat4E2M1 = 23,
  kFloat8E8M0 = 24,
  kUint2 = 25,
  kInt2 = 26,
};

// Sub-byte types (uint4, int4, float4e2m1, uint2, int2) are stored UNPACKED in nxrt, one
// element per byte, so kernels index them like uint8/int8 and shape-only kernels (Identity,
// Reshape, Transpose, Gather, ...) move them without special cases. ONNX serializes them
// packed (low bits first); the decoder unpacks initializers when loading. In each byte:
// int4/int2 hold the sign-extended value (an int8 in [-8, 7] / [-2, 1]), uint4/uint2 the
// value (a uint8 in [0, 15] / [0, 3]) and float4e2m1 its 4-bit code in the low nibble.
// float8 types, float8e8m0 included, hold their bit pattern. The Python layer exchanges
// them with ml_dtypes arrays (int8 values for int4/int2, uint8 bits for the others).

// Bytes per element (1 for the sub-byte types, see above); 0 for string (stored as
// std::string) and unknown types.
size_t dtype_size(DataType type);
// Bits per element in ONNX's packed serialization: 4 or 2 for the sub-byte types, else 0.
int dtype_packed_bits(DataType type);
// ONNX spelling: "float", "int64", "float16", "bfloat16", ...
std::string_view dtype_name(DataType type);
// onnxruntime spelling of a tensor type: "tensor(float)".
std::string tensor_type_name(DataType type);
bool dtype_is_known(int32_t raw);
bool is_float_type(DataType type);    // float16, bfloat16, float, double
bool is_integer_type(DataType type);  // signed or unsigned integers (not bool)
bool is_signed_type(DataType type);   // signed integers and floats

// C++ storage type for each DataType, and back.
template <DataType T>
struct DTypeTraits;
#define NXRT_DTYPE_TRAIT(ENUM, CTYPE)  \
  template <>                          \
  struct DTypeTraits<DataType::ENUM> { \
    using type = CTYPE;                \
  };                                   \
  inline constexpr DataType dtype_of(const CTYPE*) { return DataType::ENUM; }
NXRT_DTYPE_TRAIT(kFloat, float)
NXRT_DTYPE_TRAIT(kDouble, double)
NXRT_DTYPE_TRAIT(kFloat16, Float16)
NXRT_DTYPE_TRAIT(kBFloat16, BFloat16)
NXRT_DTYPE_TRAIT(kInt8, int8_t)
NXRT_DTYPE_TRAIT(kInt16, int16_t)
NXRT_DTYPE_TRAIT(kInt32, int32_t)
NXRT_DTYPE_TRAIT(kInt64, int64_t)
NXRT_DTYPE_TRAIT(kUint8, uint8_t)
NXRT_DTYPE_TRAIT(kUint16, uint16_t)
NXRT_DTYPE_TRAIT(kUint32, uint32_t)
NXRT_DTYPE_TRAIT(kUint64, uint64_t)
NXRT_DTYPE_TRAIT(kBool, bool)
NXRT_DTYPE_TRAIT(kString, std::string)
#undef NXRT_DTYPE_TRAIT

template <typename T>
inline constexpr DataType kDTypeOf = dtype_of(static_cast<const T*>(nullptr));

// The type arithmetic on T happens in: float for the 16-bit float storage types, T itself
// otherwise. Kernels load as wide_t<T>, compute, and convert back on store.
template <typename T>
struct Wide {
  using type = T;
};
template <>
struct Wide<Float16> {
  using type = float;
};
template <>
struct Wide<BFloat16> {
  using type = float;
};
template <typename T>
using wide_t = typename Wide<T>::type;

}  // namespace nxrt

// Dispatch helpers: call FN<T>(args) for the runtime dtype. Each expands a switch;
// a dtype outside the listed set falls to the default branch (the caller's error).
// (Unformatted: clang-format 14 does not settle on one layout of these macros.)
// clang-format off
#define NXRT_CASE(ENUM, ...)                              \
  case ::nxrt::DataType::ENUM: {                          \
    using T = typename ::nxrt::DTypeTraits<::nxrt::DataType::ENUM>::type; \
    __VA_ARGS__;                                          \
    break;                                                \
  }
#define NXRT_CASES_FLOAT(...) \
  NXRT_CASE(kFloat, __VA_ARGS__) NXRT_CASE(kDouble, __VA_ARGS__) \
  NXRT_CASE(kFloat16, __VA_ARGS__) NXRT_CASE(kBFloat16, __VA_ARGS__)
#define NXRT_CASES_INT(...) \
  NXRT_CASE(kInt8, __VA_ARGS__) NXRT_CASE(kInt16, __VA_ARGS__)   \
  NXRT_CASE(kInt32, __VA_ARGS__) NXRT_CASE(kInt64, __VA_ARGS__)  \
  NXRT_CASE(kUint8, __VA_ARGS__) NXRT_CASE(kUint16, __VA_ARGS__) \
  NXRT_CASE(kUint32, __VA_ARGS__) NXRT_CASE(kUint64, __VA_ARGS__)
#define NXRT_CASES_NUMERIC(...) NXRT_CASES_FLOAT(__VA_ARGS__) NXRT_CASES_INT(__VA_ARGS__)
#define NXRT_CASES_ALL(...) \
  NXRT_CASES_NUMERIC(__VA_ARGS__) NXRT_CASE(kBool, __VA_ARGS__) NXRT_CASE(kString, __VA_ARGS__)
// clang-format on
