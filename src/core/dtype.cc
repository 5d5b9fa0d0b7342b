#include "core/dtype.h"

namespace nxrt {

size_t dtype_size(DataType type) {
  switch (type) {
    case DataType::kFloat:
    case DataType::kInt32:
    case DataType::kUint32:
      return 4;
    case DataType::kUint8:
    case DataType::kInt8:
    case DataType::kBool:
      return 1;
    case DataType::kFloat8E4M3FN:
    case DataType::kFloat8E4M3FNUZ:
    case DataType::kFloat8E5M2:
    case DataType::kFloat8E5M2FNUZ:
    case DataType::kFloat8E8M0:
      return 1;
    case DataType::kUint4:
    case DataType::kInt4:
    case DataType::kFloat4E2M1:
    case DataType::kUint2:
    case DataType::kInt2:
      return 1;  // unpacked, see dtype.h
    case DataType::kUint16:
    case DataType::kInt16:
    case DataType::kFloat16:
    case DataType::kBFloat16:
      return 2;
    case DataType::kInt64:
    case DataType::kDouble:
    case DataType::kUint64:
    case DataType::kComplex64:
      return 8;
    case DataType::kComplex128:
      return 16;
    default:
      return 0;
  }
}

int dtype_packed_bits(DataType type) {
  switch (type) {
    case DataType::kUint4:
    case DataType::kInt4:
    case DataType::kFloat4E2M1:
      return 4;
    case DataType::kUint2:
    case DataType::kInt2:
      return 2;
    default:
      return 0;
  }
}

std::string_view dtype_name(DataType type) {
  switch (type) {
    case DataType::kFloat:
      return "float";
    case DataType::kUint8:
      return "uint8";
    case DataType::kInt8:
      return "int8";
    case DataType::kUint16:
      return "uint16";
    case DataType::kInt16:
      return "int16";
    case DataType::kInt32:
      return "int32";
    case DataType::kInt64:
      return "int64";
    case DataType::kString:
      return "string";
    case DataType::kBool:
      return "bool";
    case DataType::kFloat16:
      return "float16";
    case DataType::kDouble:
      return "double";
    case DataType::kUint32:
      return "uint32";
    case DataType::kUint64:
      return "uint64";
    case DataType::kComplex64:
      return "complex64";
    case DataType::kComplex128:
      return "complex128";
    case DataType::kBFloat16:
      return "bfloat16";
    case DataType::kFloat8E4M3FN:
      return "float8e4m3fn";
    case DataType::kFloat8E4M3FNUZ:
      return "float8e4m3fnuz";
    case DataType::kFloat8E5M2:
      return "float8e5m2";
    case DataType::kFloat8E5M2FNUZ:
      return "float8e5m2fnuz";
    case DataType::kUint4:
      return "uint4";
    case DataType::kInt4:
      return "int4";
    case DataType::kFloat4E2M1:
      return "float4e2m1";
    case DataType::kFloat8E8M0:
      return "float8e8m0";
    case DataType::kUint2:
      return "uint2";
    case DataType::kInt2:
      return "int2";
    case DataType::kUndefined:
      break;
  }
  return "undefined";
}

std::string tensor_type_name(DataType type) {
  return "tensor(" + std::string(dtype_name(type)) + ")";
}

bool dtype_is_known(int32_t raw) { return raw >= 1 && raw <= 26; }

bool is_float_type(DataType type) {
  return type == DataType::kFloat || type == DataType::kDouble || type == DataType::kFloat16 ||
         type == DataType::kBFloat16;
}

bool is_integer_type(DataType type) {
  switch (type) {
    case DataType::kInt8:
    case DataType::kInt16:
    case DataType::kInt32:
    case DataType::kInt64:
    case DataType::kUint8:
    case DataType::kUint16:
    case DataType::kUint32:
    case DataType::kUint64:
      return true;
    default:
      return false;
  }
}

bool is_signed_type(DataType type) {
  switch (type) {
    case DataType::kInt8:
    case DataType::kInt16:
    case DataType::kInt32:
    case DataType::kInt64:
      return true;
    default:
      return is_float_type(type);
  }
}

}  // namespace nxrt
