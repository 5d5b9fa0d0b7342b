#include "onnx/decoder.h"

#include <charconv>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <protozero/pbf_reader.hpp>
#include <stdexcept>

#include "core/mapped_file.h"

namespace nxrt::onnx {
namespace {

namespace pz = protozero;

// Decoding throws DecodeError internally (protozero reports malformed input by throwing
// too); decode_model catches both at its boundary and returns a Status.
struct DecodeError : std::runtime_error {
  StatusCode code;
  DecodeError(StatusCode c, const std::string& what) : std::runtime_error(what), code(c) {}
};

[[noreturn]] void fail(const std::string& what) {
  throw DecodeError(StatusCode::kInvalidProtobuf, what);
}

[[noreturn]] void fail_limit(const std::string& what, const char* key, int64_t value) {
  throw DecodeError(StatusCode::kInvalidArgument, what + ", over the " + limit_text(key, value));
}

struct Context {
  std::shared_ptr<void> storage;
  std::string model_dir;
  const char* base = nullptr;  // start of the mapped bytes, to find alignment
  Limits limits;
  mutable int64_t nodes = 0;  // nodes decoded so far, in all graphs and functions
};

void expect_wire(const pz::pbf_reader& r, pz::pbf_wire_type wire, const char* field) {
  if (r.wire_type() != wire) fail(std::string("field '") + field + "' has the wrong wire type");
}

bool is_valid_utf8(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    const size_t len = c < 0x80           ? 1
                       : (c >> 5) == 0x6  ? 2
                       : (c >> 4) == 0xe  ? 3
                       : (c >> 3) == 0x1e ? 4
                                          : 0;
    if (len == 0 || i + len > s.size()) return false;
    for (size_t k = 1; k < len; ++k)
      if ((static_cast<unsigned char>(s[i + k]) >> 6) != 0x2) return false;
    i += len;
  }
  return true;
}

// Protobuf `string` fields must be UTF-8 (names, domains, op types); `bytes` fields
// (raw data, string tensors, attribute strings) may hold anything: read_bytes.
std::string read_string(pz::pbf_reader& r, const char* field) {
  expect_wire(r, pz::pbf_wire_type::length_delimited, field);
  std::string out = r.get_string();
  if (!is_valid_utf8(out)) fail(std::string("field '") + field + "' is not valid UTF-8");
  return out;
}
std::string read_bytes(pz::pbf_reader& r, const char* field) {
  expect_wire(r, pz::pbf_wire_type::length_delimited, field);
  return r.get_string();
}
int64_t read_int64(pz::pbf_reader& r, const char* field) {
  expect_wire(r, pz::pbf_wire_type::varint, field);
  return r.get_int64();
}
pz::pbf_reader read_message(pz::pbf_reader& r, const char* field) {
  expect_wire(r, pz::pbf_wire_type::length_delimited, field);
  return r.get_message();
}

// Repeated scalar fields arrive packed (one length-delimited run) or one per tag.
template <typename T>
void read_repeated_varint(pz::pbf_reader& r, std::vector<T>& out, const char* field) {
  if (r.wire_type() == pz::pbf_wire_type::length_delimited) {
    for (auto v : r.get_packed_int64()) out.push_back(T(v));
  } else {
    expect_wire(r, pz::pbf_wire_type::varint, field);
    out.push_back(T(r.get_int64()));
  }
}
void read_repeated_uint64(pz::pbf_reader& r, std::vector<uint64_t>& out, const char* field) {
  if (r.wire_type() == pz::pbf_wire_type::length_delimited) {
    for (auto v : r.get_packed_uint64()) out.push_back(v);
  } else {
    expect_wire(r, pz::pbf_wire_type::varint, field);
    out.push_back(r.get_uint64());
  }
}
void read_repeated_float(pz::pbf_reader& r, std::vector<float>& out, const char* field) {
  if (r.wire_type() == pz::pbf_wire_type::length_delimited) {
    for (auto v : r.get_packed_float()) out.push_back(v);
  } else {
    expect_wire(r, pz::pbf_wire_type::fixed32, field);
    out.push_back(r.get_float());
  }
}
void read_repeated_double(pz::pbf_reader& r, std::vector<double>& out, const char* field) {
  if (r.wire_type() == pz::pbf_wire_type::length_delimited) {
    for (auto v : r.get_packed_double()) out.push_back(v);
  } else {
    expect_wire(r, pz::pbf_wire_type::fixed64, field);
    out.push_back(r.get_double());
  }
}

std::pair<std::string, std::string> read_string_pair(pz::pbf_reader msg) {
  std::pair<std::string, std::string> kv;
  while (msg.next()) {
    switch (msg.tag()) {
      case 1:
        kv.first = read_string(msg, "key");
        break;
      case 2:
        kv.second = read_string(msg, "value");
        break;
      default:
        msg.skip();
    }
  }
  return kv;
}

// ---- tensors ---------------------------------------------------------------------

struct RawTensor {
  std::string name;
  std::vector<int64_t> dims;
  int32_t data_type = 0;
  bool has_raw = false;
  pz::data_view raw;
  std::vector<float> floats;
  std::vector<int64_t> int32s;  // int32_data, widened
  std::vector<int64_t> int64s;
  std::vector<uint64_t> uint64s;
  std::vector<double> doubles;
  std::vector<std::string> strings;
  std::vector<std::pair<std::string, std::string>> external;
  bool is_external = false;
};

RawTensor read_raw_tensor(pz::pbf_reader msg) {
  RawTensor t;
  while (msg.next()) {
    switch (msg.tag()) {
      case 1:
        read_repeated_varint(msg, t.dims, "TensorProto.dims");
        break;
      case 2:
        t.data_type = int32_t(read_int64(msg, "TensorProto.data_type"));
        break;
      case 4:
        read_repeated_float(msg, t.floats, "TensorProto.float_data");
        break;
      case 5:
        read_repeated_varint(msg, t.int32s, "TensorProto.int32_data");
        break;
      case 6:
        t.strings.push_back(read_bytes(msg, "TensorProto.string_data"));
        break;
      case 7:
        read_repeated_varint(msg, t.int64s, "TensorProto.int64_data");
        break;
      case 8:
        t.name = read_string(msg, "TensorProto.name");
        break;
      case 9:
        expect_wire(msg, pz::pbf_wire_type::length_delimited, "TensorProto.raw_data");
        t.raw = msg.get_view();
        t.has_raw = true;
        break;
      case 10:
        read_repeated_double(msg, t.doubles, "TensorProto.double_data");
        break;
      case 11:
        read_repeated_uint64(msg, t.uint64s, "TensorProto.uint64_data");
        break;
      case 13:
        t.external.push_back(read_string_pair(read_message(msg, "TensorProto.external_data")));
        break;
      case 14:
        t.is_external = read_int64(msg, "TensorProto.data_location") == 1;
        break;
      default:
        msg.skip();
    }
  }
  return t;
}

template <typename T, typename Src>
void fill_from(Tensor& out, const std::vector<Src>& src) {
  T* dst = out.data<T>();
  for (size_t i = 0; i < src.size(); ++i) {
    if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) {
      dst[i].bits = uint16_t(src[i]);
    } else {
      dst[i] = T(src[i]);
    }
  }
}

// Resolves an external data location inside the model folder, refusing escapes.
std::string resolve_external_path(const Context& ctx, const std::string& location,
                                  const std::string& tensor_name) {
  namespace fs = std::filesystem;
  if (ctx.model_dir.empty())
    throw DecodeError(StatusCode::kInvalidArgument,
                      "tensor '" + tensor_name +
                          "' uses external data, which needs the model "
                          "to be loaded from a file path (not bytes)");
  const fs::path rel(location);
  if (location.empty() || rel.is_absolute())
    throw DecodeError(StatusCode::kInvalidArgument,
                      "tensor '" + tensor_name + "': external data location '" + location +
                          "' must be a relative path inside the model's folder");
  for (const auto& part : rel)
    if (part == "..")
      throw DecodeError(StatusCode::kInvalidArgument, "tensor '" + tensor_name +
                                                          "': external data location '" + location +
                                                          "' leaves the model's folder");
  // Symlinks are followed (in the folder path, the location's directories and the file
  // itself) before comparing, so a link inside the folder cannot point outside it.
  std::error_code ec;
  const fs::path dir = fs::canonical(fs::path(ctx.model_dir), ec);
  fs::path full;
  if (!ec) full = fs::weakly_canonical(dir / rel, ec);
  const auto [dir_end, unused] = std::mismatch(dir.begin(), dir.end(), full.begin(), full.end());
  (void)unused;
  if (ec || dir.empty() || dir_end != dir.end() || full == dir)
    throw DecodeError(StatusCode::kInvalidArgument,
                      "tensor '" + tensor_name + "': external data location '" + location +
                          "' resolves outside the model's folder (symlinks are followed)");
  return full.string();
}

// Bytes ONNX uses to serialize `numel` elements: packed for the sub-byte types.
// `numel` is at most max_tensor_elements; the product is still checked so a raised limit
// cannot wrap it around to a small size that matches short data.
size_t serialized_bytes(DataType dtype, int64_t numel) {
  const int bits = dtype_packed_bits(dtype);
  if (bits == 0) {
    const size_t elem = dtype_size(dtype);
    if (elem && size_t(numel) > SIZE_MAX / elem)
      throw DecodeError(StatusCode::kInvalidArgument, std::to_string(numel) + " elements of " +
                                                          std::string(dtype_name(dtype)) +
                                                          ": tensor size overflows");
    return size_t(numel) * elem;
  }
  const size_t per_byte = size_t(8 / bits);
  return size_t(numel) / per_byte + (size_t(numel) % per_byte != 0);
}

// Expands ONNX's packed sub-byte data (first element in the lowest bits of each byte) to
// nxrt's one element per byte, sign-extending int4/int2 (see dtype.h). `byte_at(k)` gives
// packed byte k.
template <typename ByteAt>
void unpack_sub_byte(DataType dtype, int64_t numel, ByteAt byte_at, uint8_t* out) {
  const int bits = dtype_packed_bits(dtype);
  const int per_byte = 8 / bits;
  const int mask = (1 << bits) - 1;
  const int sign = 1 << (bits - 1);
  const bool is_signed = dtype == DataType::kInt4 || dtype == DataType::kInt2;
  for (int64_t i = 0; i < numel; ++i) {
    const int v = (int(byte_at(size_t(i / per_byte))) >> ((i % per_byte) * bits)) & mask;
    out[i] = is_signed ? uint8_t(int8_t((v ^ sign) - sign)) : uint8_t(v);
  }
}

Tensor make_tensor(const RawTensor& raw, const Context& ctx) {
  const std::string label = "tensor '" + raw.name + "'";
  if (!dtype_is_known(raw.data_type))
    fail(label + " has unknown data_type " + std::to_string(raw.data_type));
  const auto dtype = DataType(raw.data_type);
  const Shape shape(raw.dims);
  const int64_t numel = checked_numel(raw.dims);
  if (numel < 0)
    throw DecodeError(StatusCode::kInvalidArgument,
                      label + " has invalid dims " + shape.to_string() +
                          " (negative dim or element count overflows int64)");
  if (numel > ctx.limits.max_tensor_elements)
    fail_limit(
        label + " has shape " + shape.to_string() + " of " + std::to_string(numel) + " elements",
        kLimitMaxTensorElements, ctx.limits.max_tensor_elements);
  if (dtype != DataType::kString && dtype_size(dtype) == 0)
    throw DecodeError(StatusCode::kNotImplemented, label + " has element type " +
                                                       std::string(dtype_name(dtype)) +
                                                       ", which nxrt does not support yet");

  auto allocate = [&]() {
    Expected<Tensor> t = Tensor::allocate(dtype, shape, ctx.limits);
    if (!t) throw DecodeError(t.status().code(), label + ": " + t.status().message());
    return std::move(t).value();
  };
  auto size_mismatch = [&](size_t have, const char* unit, size_t need) {
    throw DecodeError(StatusCode::kInvalidGraph,
                      label + " has " + std::to_string(have) + " " + unit + " of data but " +
                          "its shape " + shape.to_string() + " of " +
                          std::string(dtype_name(dtype)) + " needs " + std::to_string(need));
  };

  const bool packed = dtype_packed_bits(dtype) != 0;

  // View bytes in place when aligned for the element type, else copy (or unpack).
  auto from_bytes = [&](const char* bytes, size_t size, std::shared_ptr<void> owner) {
    const size_t need = serialized_bytes(dtype, numel);
    if (size != need) {
      if (!packed) size_mismatch(size, "bytes", need);
      throw DecodeError(StatusCode::kInvalidGraph,
                        label + " has " + std::to_string(size) + " bytes of packed " +
                            std::string(dtype_name(dtype)) + " data but its shape " +
                            shape.to_string() + " needs " + std::to_string(need));
    }
    if (packed) {
      Tensor out = allocate();
      const auto* p = reinterpret_cast<const uint8_t*>(bytes);
      unpack_sub_byte(
          dtype, numel, [p](size_t k) { return p[k]; }, out.data<uint8_t>());
      return out;
    }
    const size_t align = dtype_size(dtype);
    if (owner && reinterpret_cast<uintptr_t>(bytes) % align == 0)
      return Tensor(dtype, shape, const_cast<char*>(bytes), std::move(owner));
    Tensor out = allocate();
    if (need) std::memcpy(out.raw(), bytes, need);
    return out;
  };

  if (raw.is_external) {
    std::string location;
    int64_t offset = 0, length = -1;
    auto number = [&](const std::string& key, const std::string& value) {
      int64_t v = 0;
      const char* end = value.data() + value.size();
      const auto [ptr, ec] = std::from_chars(value.data(), end, v);
      if (value.empty() || ec != std::errc() || ptr != end || v < 0)
        throw DecodeError(StatusCode::kInvalidGraph, label + ": external data " + key + " '" +
                                                         value + "' is not a non-negative integer");
      return v;
    };
    for (const auto& [key, value] : raw.external) {
      if (key == "location")
        location = value;
      else if (key == "offset")
        offset = number(key, value);
      else if (key == "length")
        length = number(key, value);
    }
    const std::string path = resolve_external_path(ctx, location, raw.name);
    auto file = MappedFile::open(path);
    if (!file) throw DecodeError(file.status().code(), label + ": " + file.status().message());
    const size_t file_size = (*file)->size();
    const size_t need = serialized_bytes(dtype, numel);
    if (length < 0) length = int64_t(need);
    if (offset < 0 || size_t(offset) > file_size || size_t(length) > file_size - size_t(offset))
      throw DecodeError(StatusCode::kInvalidGraph,
                        label + ": external data offset " + std::to_string(offset) + " + length " +
                            std::to_string(length) + " exceeds the size of '" + location + "' (" +
                            std::to_string(file_size) + " bytes)");
    std::shared_ptr<void> owner = *file;
    return from_bytes((*file)->data() + offset, size_t(length), owner);
  }

  if (raw.has_raw) {
    if (dtype == DataType::kString) fail(label + ": string tensors cannot use raw_data");
    return from_bytes(raw.raw.data(), raw.raw.size(), ctx.storage);
  }

  // Counts are checked before allocating: dims must not make nxrt allocate memory the
  // file does not back with data.
  size_t have = 0;
  switch (dtype) {
    case DataType::kFloat:
      have = raw.floats.size();
      break;
    case DataType::kDouble:
      have = raw.doubles.size();
      break;
    case DataType::kInt64:
      have = raw.int64s.size();
      break;
    case DataType::kUint64:
    case DataType::kUint32:
      have = raw.uint64s.size();
      break;
    case DataType::kString:
      have = raw.strings.size();
      break;
    case DataType::kUint4:
    case DataType::kInt4:
    case DataType::kFloat4E2M1:
    case DataType::kUint2:
    case DataType::kInt2:
    case DataType::kInt32:
    case DataType::kInt16:
    case DataType::kInt8:
    case DataType::kUint16:
    case DataType::kUint8:
    case DataType::kBool:
    case DataType::kFloat16:
    case DataType::kBFloat16:
    case DataType::kFloat8E4M3FN:
    case DataType::kFloat8E4M3FNUZ:
    case DataType::kFloat8E5M2:
    case DataType::kFloat8E5M2FNUZ:
    case DataType::kFloat8E8M0:
      have = raw.int32s.size();
      break;
    default:
      have = packed ? serialized_bytes(dtype, numel) : size_t(numel);
      break;  // refused below
  }
  if (!packed && have != size_t(numel)) size_mismatch(have, "elements", size_t(numel));
  if (packed && have != serialized_bytes(dtype, numel))
    throw DecodeError(StatusCode::kInvalidGraph,
                      label + " has " + std::to_string(have) + " int32_data entries of packed " +
                          std::string(dtype_name(dtype)) + " but its shape " + shape.to_string() +
                          " needs " + std::to_string(serialized_bytes(dtype, numel)));
  Tensor out = allocate();
  auto check = [&](size_t have) {
    if (have != size_t(numel)) size_mismatch(have, "elements", size_t(numel));
  };
  switch (dtype) {
    case DataType::kFloat:
      check(raw.floats.size());
      fill_from<float>(out, raw.floats);
      break;
    case DataType::kDouble:
      check(raw.doubles.size());
      fill_from<double>(out, raw.doubles);
      break;
    case DataType::kInt64:
      check(raw.int64s.size());
      fill_from<int64_t>(out, raw.int64s);
      break;
    case DataType::kUint64:
      check(raw.uint64s.size());
      fill_from<uint64_t>(out, raw.uint64s);
      break;
    case DataType::kUint32:
      check(raw.uint64s.size());
      fill_from<uint32_t>(out, raw.uint64s);
      break;
    case DataType::kInt32:
      check(raw.int32s.size());
      fill_from<int32_t>(out, raw.int32s);
      break;
    case DataType::kInt16:
      check(raw.int32s.size());
      fill_from<int16_t>(out, raw.int32s);
      break;
    case DataType::kInt8:
      check(raw.int32s.size());
      fill_from<int8_t>(out, raw.int32s);
      break;
    case DataType::kUint16:
      check(raw.int32s.size());
      fill_from<uint16_t>(out, raw.int32s);
      break;
    case DataType::kUint8:
      check(raw.int32s.size());
      fill_from<uint8_t>(out, raw.int32s);
      break;
    case DataType::kBool:
      check(raw.int32s.size());
      fill_from<bool>(out, raw.int32s);
      break;
    case DataType::kFloat16:
      check(raw.int32s.size());
      fill_from<Float16>(out, raw.int32s);
      break;
    case DataType::kBFloat16:
      check(raw.int32s.size());
      fill_from<BFloat16>(out, raw.int32s);
      break;
    // One-byte floats: the bit pattern of each element in its own int32_data entry.
    case DataType::kFloat8E4M3FN:
    case DataType::kFloat8E4M3FNUZ:
    case DataType::kFloat8E5M2:
    case DataType::kFloat8E5M2FNUZ:
    case DataType::kFloat8E8M0:
      check(raw.int32s.size());
      fill_from<uint8_t>(out, raw.int32s);
      break;
    // Sub-byte types: int32_data holds the packed bytes, one per entry.
    case DataType::kUint4:
    case DataType::kInt4:
    case DataType::kFloat4E2M1:
    case DataType::kUint2:
    case DataType::kInt2: {
      const size_t need = serialized_bytes(dtype, numel);
      if (raw.int32s.size() != need)
        throw DecodeError(StatusCode::kInvalidGraph,
                          label + " has " + std::to_string(raw.int32s.size()) +
                              " int32_data entries of packed " + std::string(dtype_name(dtype)) +
                              " but its shape " + shape.to_string() + " needs " +
                              std::to_string(need));
      const auto& src = raw.int32s;
      unpack_sub_byte(
          dtype, numel, [&src](size_t k) { return uint8_t(src[k]); }, out.data<uint8_t>());
      break;
    }
    case DataType::kString: {
      check(raw.strings.size());
      auto* dst = out.data<std::string>();
      for (size_t i = 0; i < raw.strings.size(); ++i) dst[i] = raw.strings[i];
      break;
    }
    default:
      throw DecodeError(
          StatusCode::kNotImplemented,
          label + ": typed data for " + std::string(dtype_name(dtype)) + " is not supported yet");
  }
  return out;
}

// ---- types -----------------------------------------------------------------------

ir::TypeInfo read_type(pz::pbf_reader msg, const Context& ctx, int depth);

void read_tensor_type(pz::pbf_reader msg, ir::TypeInfo& type) {
  while (msg.next()) {
    switch (msg.tag()) {
      case 1: {
        const int64_t raw = read_int64(msg, "TypeProto.Tensor.elem_type");
        type.elem_type = dtype_is_known(int32_t(raw)) ? DataType(raw) : DataType::kUndefined;
        break;
      }
      case 2: {
        type.has_shape = true;
        pz::pbf_reader shape = read_message(msg, "TypeProto.Tensor.shape");
        while (shape.next()) {
          if (shape.tag() != 1) {
            shape.skip();
            continue;
          }
          ir::Dim dim;
          pz::pbf_reader d = read_message(shape, "TensorShapeProto.dim");
          while (d.next()) {
            switch (d.tag()) {
              case 1:
                dim.value = read_int64(d, "Dimension.dim_value");
                break;
              case 2:
                dim.param = read_string(d, "Dimension.dim_param");
                break;
              default:
                d.skip();
            }
          }
          type.dims.push_back(std::move(dim));
        }
        break;
      }
      default:
        msg.skip();
    }
  }
}

ir::TypeInfo read_type(pz::pbf_reader msg, const Context& ctx, int depth) {
  if (depth > ctx.limits.max_graph_depth)
    fail_limit("type nesting deeper than " + std::to_string(ctx.limits.max_graph_depth) + " levels",
               kLimitMaxGraphDepth, ctx.limits.max_graph_depth);
  ir::TypeInfo type;
  auto read_inner = [&](pz::pbf_reader m) {
    while (m.next()) {
      if (m.tag() == 1) {
        type.inner = std::make_shared<ir::TypeInfo>(
            read_type(read_message(m, "TypeProto.elem_type"), ctx, depth + 1));
      } else {
        m.skip();
      }
    }
  };
  while (msg.next()) {
    switch (msg.tag()) {
      case 1:
        type.kind = ir::TypeInfo::Kind::kTensor;
        read_tensor_type(read_message(msg, "TypeProto.tensor_type"), type);
        break;
      case 4:
        type.kind = ir::TypeInfo::Kind::kSequence;
        read_inner(read_message(msg, "TypeProto.sequence_type"));
        break;
      case 9:
        type.kind = ir::TypeInfo::Kind::kOptional;
        read_inner(read_message(msg, "TypeProto.optional_type"));
        break;
      case 5: {
        type.kind = ir::TypeInfo::Kind::kMap;
        pz::pbf_reader m = read_message(msg, "TypeProto.map_type");
        while (m.next()) {
          if (m.tag() == 1) {
            const int64_t raw = read_int64(m, "Map.key_type");
            type.elem_type = dtype_is_known(int32_t(raw)) ? DataType(raw) : DataType::kUndefined;
          } else if (m.tag() == 2) {
            type.inner = std::make_shared<ir::TypeInfo>(
                read_type(read_message(m, "Map.value_type"), ctx, depth + 1));
          } else {
            m.skip();
          }
        }
        break;
      }
      case 8:
        type.kind = ir::TypeInfo::Kind::kSparseTensor;
        read_tensor_type(read_message(msg, "TypeProto.sparse_tensor_type"), type);
        break;
      default:
        msg.skip();
    }
  }
  return type;
}

ir::ValueInfo read_value_info(pz::pbf_reader msg, const Context& ctx) {
  ir::ValueInfo info;
  while (msg.next()) {
    switch (msg.tag()) {
      case 1:
        info.name = read_string(msg, "ValueInfoProto.name");
        break;
      case 2:
        info.type = read_type(read_message(msg, "ValueInfoProto.type"), ctx, 0);
        break;
      default:
        msg.skip();
    }
  }
  return info;
}

// ---- graphs ----------------------------------------------------------------------

std::shared_ptr<ir::Graph> read_graph(pz::pbf_reader msg, const Context& ctx, int depth);

ir::Attribute read_attribute(pz::pbf_reader msg, const Context& ctx, int depth) {
  ir::Attribute a;
  bool has_type = false;
  while (msg.next()) {
    switch (msg.tag()) {
      case 1:
        a.name = read_string(msg, "AttributeProto.name");
        break;
      case 2:
        expect_wire(msg, pz::pbf_wire_type::fixed32, "AttributeProto.f");
        a.f = msg.get_float();
        break;
      case 3:
        a.i = read_int64(msg, "AttributeProto.i");
        break;
      case 4:
        a.s = read_bytes(msg, "AttributeProto.s");
        break;
      case 5:
        a.t = make_tensor(read_raw_tensor(read_message(msg, "AttributeProto.t")), ctx);
        break;
      case 6:
        a.g = read_graph(read_message(msg, "AttributeProto.g"), ctx, depth + 1);
        break;
      case 7:
        read_repeated_float(msg, a.floats, "AttributeProto.floats");
        break;
      case 8:
        read_repeated_varint(msg, a.ints, "AttributeProto.ints");
        break;
      case 9:
        a.strings.push_back(read_bytes(msg, "AttributeProto.strings"));
        break;
      case 10:
        a.tensors.push_back(
            make_tensor(read_raw_tensor(read_message(msg, "AttributeProto.tensors")), ctx));
        break;
      case 11:
        a.graphs.push_back(read_graph(read_message(msg, "AttributeProto.graphs"), ctx, depth + 1));
        break;
      case 14:
        a.tp = read_type(read_message(msg, "AttributeProto.tp"), ctx, 0);
        break;
      case 20: {
        const int64_t t = read_int64(msg, "AttributeProto.type");
        if (t < 0 || t > 14)
          fail("attribute '" + a.name + "' has unknown type " + std::to_string(t));
        a.type = ir::Attribute::Type(t);
        has_type = true;
        break;
      }
      case 21:
        a.ref_attr_name = read_string(msg, "AttributeProto.ref_attr_name");
        break;
      default:
        msg.skip();
    }
  }
  // IR version 1 files may omit the type; infer it from the field that is set.
  if (!has_type) {
    using T = ir::Attribute::Type;
    if (a.g)
      a.type = T::kGraph;
    else if (a.t.defined())
      a.type = T::kTensor;
    else if (!a.floats.empty())
      a.type = T::kFloats;
    else if (!a.ints.empty())
      a.type = T::kInts;
    else if (!a.strings.empty())
      a.type = T::kStrings;
    else if (!a.graphs.empty())
      a.type = T::kGraphs;
    else if (!a.tensors.empty())
      a.type = T::kTensors;
    else if (!a.s.empty())
      a.type = T::kString;
    else if (a.f != 0)
      a.type = T::kFloat;
    else
      a.type = T::kInt;
  }
  return a;
}

ir::Node read_node(pz::pbf_reader msg, const Context& ctx, int depth) {
  if (++ctx.nodes > ctx.limits.max_nodes)
    fail_limit("model has more than " + std::to_string(ctx.limits.max_nodes) +
                   " nodes (all graphs and functions)",
               kLimitMaxNodes, ctx.limits.max_nodes);
  ir::Node node;
  while (msg.next()) {
    switch (msg.tag()) {
      case 1:
        node.inputs.push_back(read_string(msg, "NodeProto.input"));
        break;
      case 2:
        node.outputs.push_back(read_string(msg, "NodeProto.output"));
        break;
      case 3:
        node.name = read_string(msg, "NodeProto.name");
        break;
      case 4:
        node.op_type = read_string(msg, "NodeProto.op_type");
        break;
      case 5:
        node.attributes.push_back(
            read_attribute(read_message(msg, "NodeProto.attribute"), ctx, depth));
        break;
      case 7:
        node.domain = read_string(msg, "NodeProto.domain");
        break;
      default:
        msg.skip();
    }
  }
  if (node.domain == "ai.onnx") node.domain.clear();
  return node;
}

std::shared_ptr<ir::Graph> read_graph(pz::pbf_reader msg, const Context& ctx, int depth) {
  if (depth > ctx.limits.max_graph_depth)
    fail_limit(
        "subgraphs nested deeper than " + std::to_string(ctx.limits.max_graph_depth) + " levels",
        kLimitMaxGraphDepth, ctx.limits.max_graph_depth);
  auto graph = std::make_shared<ir::Graph>();
  while (msg.next()) {
    switch (msg.tag()) {
      case 1:
        graph->nodes.push_back(read_node(read_message(msg, "GraphProto.node"), ctx, depth));
        break;
      case 2:
        graph->name = read_string(msg, "GraphProto.name");
        break;
      case 5: {
        RawTensor raw = read_raw_tensor(read_message(msg, "GraphProto.initializer"));
        std::string name = raw.name;
        graph->initializers.push_back({std::move(name), make_tensor(raw, ctx)});
        break;
      }
      case 11:
        graph->inputs.push_back(read_value_info(read_message(msg, "GraphProto.input"), ctx));
        break;
      case 12:
        graph->outputs.push_back(read_value_info(read_message(msg, "GraphProto.output"), ctx));
        break;
      case 13:
        graph->value_info.push_back(
            read_value_info(read_message(msg, "GraphProto.value_info"), ctx));
        break;
      case 15:
        msg.skip();
        throw DecodeError(StatusCode::kNotImplemented, "graph '" + graph->name +
                                                           "' has sparse initializers, which nxrt "
                                                           "does not support yet");
      default:
        msg.skip();
    }
  }
  return graph;
}

std::pair<std::string, int64_t> read_opset(pz::pbf_reader msg) {
  std::pair<std::string, int64_t> opset{"", 0};
  while (msg.next()) {
    switch (msg.tag()) {
      case 1:
        opset.first = read_string(msg, "OperatorSetIdProto.domain");
        break;
      case 2:
        opset.second = read_int64(msg, "OperatorSetIdProto.version");
        break;
      default:
        msg.skip();
    }
  }
  if (opset.first == "ai.onnx") opset.first.clear();
  return opset;
}

ir::Function read_function(pz::pbf_reader msg, const Context& ctx) {
  ir::Function f;
  while (msg.next()) {
    switch (msg.tag()) {
      case 1:
        f.name = read_string(msg, "FunctionProto.name");
        break;
      case 4:
        f.inputs.push_back(read_string(msg, "FunctionProto.input"));
        break;
      case 5:
        f.outputs.push_back(read_string(msg, "FunctionProto.output"));
        break;
      case 6:
        f.attribute_names.push_back(read_string(msg, "FunctionProto.attribute"));
        break;
      case 7:
        f.nodes.push_back(read_node(read_message(msg, "FunctionProto.node"), ctx, 1));
        break;
      case 9:
        f.opset_imports.insert(read_opset(read_message(msg, "FunctionProto.opset_import")));
        break;
      case 10:
        f.domain = read_string(msg, "FunctionProto.domain");
        break;
      case 11:
        f.attribute_defaults.push_back(
            read_attribute(read_message(msg, "FunctionProto.attribute_proto"), ctx, 1));
        break;
      default:
        msg.skip();
    }
  }
  return f;
}

}  // namespace

Expected<std::shared_ptr<ir::Model>> decode_model(const char* data, size_t size,
                                                  std::shared_ptr<void> storage,
                                                  const std::string& model_dir,
                                                  const Limits& limits) {
  if (size == 0) return make_error(StatusCode::kInvalidProtobuf, "model is empty (0 bytes)");
  if (size > uint64_t(limits.max_model_bytes))
    return invalid_argument("model is ", size, " bytes, over the ",
                            limit_text(kLimitMaxModelBytes, limits.max_model_bytes));
  auto model = std::make_shared<ir::Model>();
  model->storage = storage;
  model->model_dir = model_dir;
  Context ctx{storage, model_dir, data, limits};
  bool has_graph = false;
  try {
    pz::pbf_reader msg(data, size);
    while (msg.next()) {
      switch (msg.tag()) {
        case 1:
          model->ir_version = read_int64(msg, "ModelProto.ir_version");
          break;
        case 2:
          model->producer_name = read_string(msg, "ModelProto.producer_name");
          break;
        case 3:
          model->producer_version = read_string(msg, "ModelProto.producer_version");
          break;
        case 4:
          model->domain = read_string(msg, "ModelProto.domain");
          break;
        case 5:
          model->model_version = read_int64(msg, "ModelProto.model_version");
          break;
        case 6:
          model->doc_string = read_bytes(msg, "ModelProto.doc_string");
          break;
        case 7: {
          auto graph = read_graph(read_message(msg, "ModelProto.graph"), ctx, 0);
          model->graph = std::move(*graph);
          has_graph = true;
          break;
        }
        case 8:
          model->opset_imports.insert(read_opset(read_message(msg, "ModelProto.opset_import")));
          break;
        case 14:
          model->metadata_props.push_back(
              read_string_pair(read_message(msg, "ModelProto.metadata_props")));
          break;
        case 25:
          model->functions.push_back(read_function(read_message(msg, "ModelProto.functions"), ctx));
          break;
        default:
          msg.skip();
      }
    }
  } catch (const DecodeError& e) {
    return Status(e.code, std::string("model protobuf: ") + e.what());
  } catch (const pz::exception& e) {
    return make_error(StatusCode::kInvalidProtobuf, "model protobuf is truncated or corrupt (",
                      e.what(), ")");
  }
  if (!has_graph)
    return make_error(StatusCode::kInvalidProtobuf,
                      "model protobuf has no graph (not an ONNX model, or corrupt)");
  if (model->ir_version < 3 || model->ir_version > 14)
    return make_error(StatusCode::kInvalidGraph, "unsupported ONNX IR version ", model->ir_version,
                      " (nxrt supports IR versions 3 to 14)");
  if (model->opset_imports.empty())
    return make_error(StatusCode::kInvalidGraph, "model has no opset_import");
  return model;
}

Expected<std::shared_ptr<ir::Model>> load_model_file(const std::string& path,
                                                     const Limits& limits) {
  NXRT_ASSIGN_OR_RETURN(auto file, MappedFile::open(path));
  const std::string dir = std::filesystem::path(path).parent_path().string();
  auto model = decode_model(file->data(), file->size(), file, dir.empty() ? "." : dir, limits);
  if (!model)
    return Status(model.status().code(),
                  "Load model from " + path + " failed: " + model.status().message());
  (*model)->mapped_file = file;
  return model;
}

Expected<Tensor> decode_tensor(const char* data, size_t size, std::shared_ptr<void> storage,
                               const Limits& limits) {
  Context ctx{std::move(storage), "", data, limits};
  try {
    return make_tensor(read_raw_tensor(pz::pbf_reader(data, size)), ctx);
  } catch (const DecodeError& e) {
    return Status(e.code, e.what());
  } catch (const pz::exception& e) {
    return make_error(StatusCode::kInvalidProtobuf, "tensor protobuf is corrupt (", e.what(), ")");
  }
}

}  // namespace nxrt::onnx
