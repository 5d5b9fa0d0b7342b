#include "npy.h"

#include <bit>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <vector>

namespace nxrt::cli {
namespace {

static_assert(std::endian::native == std::endian::little,
              "the .npy reader copies little-endian data as is");

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;

struct DescrEntry {
  const char* name;  // without the byte-order character
  DataType dtype;
};
constexpr DescrEntry kDescrs[] = {
    {"f4", DataType::kFloat},     {"f8", DataType::kDouble},      {"f2", DataType::kFloat16},
    {"i1", DataType::kInt8},      {"u1", DataType::kUint8},       {"i2", DataType::kInt16},
    {"u2", DataType::kUint16},    {"i4", DataType::kInt32},       {"u4", DataType::kUint32},
    {"i8", DataType::kInt64},     {"u8", DataType::kUint64},      {"b1", DataType::kBool},
    {"c8", DataType::kComplex64}, {"c16", DataType::kComplex128},
};

// The header is a Python dict literal with string, bool and int-tuple values; this parses
// exactly that subset so a malformed header is an error rather than undefined behaviour.
struct HeaderValue {
  enum class Kind { kString, kBool, kTuple } kind = Kind::kString;
  std::string text;
  bool flag = false;
  std::vector<int64_t> ints;
};

class HeaderParser {
 public:
  explicit HeaderParser(const std::string& text) : s_(text) {}

  Expected<std::map<std::string, HeaderValue>> parse() {
    std::map<std::string, HeaderValue> out;
    skip_space();
    if (!eat('{')) return fail("expected '{'");
    while (true) {
      skip_space();
      if (eat('}')) break;
      auto key = parse_string();
      if (!key) return key.status();
      skip_space();
      if (!eat(':')) return fail("expected ':' after key");
      skip_space();
      auto value = parse_value();
      if (!value) return value.status();
      out[*key] = std::move(*value);
      skip_space();
      if (eat(',')) continue;
      skip_space();
      if (eat('}')) break;
      return fail("expected ',' or '}'");
    }
    return out;
  }

 private:
  Status fail(const std::string& what) const {
    return invalid_argument("malformed .npy header at offset ", pos_, ": ", what);
  }
  void skip_space() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool eat(char c) {
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool eat_word(const char* word) {
    size_t n = std::strlen(word);
    if (s_.compare(pos_, n, word) != 0) return false;
    pos_ += n;
    return true;
  }
  Expected<std::string> parse_string() {
    if (pos_ >= s_.size() || (s_[pos_] != '\'' && s_[pos_] != '"'))
      return fail("expected a string");
    char quote = s_[pos_++];
    size_t end = s_.find(quote, pos_);
    if (end == std::string::npos) return fail("unterminated string");
    std::string text = s_.substr(pos_, end - pos_);
    pos_ = end + 1;
    return text;
  }
  Expected<HeaderValue> parse_value() {
    HeaderValue v;
    if (eat_word("True")) {
      v.kind = HeaderValue::Kind::kBool;
      v.flag = true;
      return v;
    }
    if (eat_word("False")) {
      v.kind = HeaderValue::Kind::kBool;
      return v;
    }
    if (eat('(')) {
      v.kind = HeaderValue::Kind::kTuple;
      while (true) {
        skip_space();
        if (eat(')')) break;
        if (pos_ >= s_.size() || !std::isdigit(static_cast<unsigned char>(s_[pos_])))
          return fail("expected a dimension");
        int64_t dim = 0;
        while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
          if (dim > (int64_t(1) << 50)) return fail("dimension too large");
          dim = dim * 10 + (s_[pos_++] - '0');
        }
        eat('L');  // Python 2 long suffix, written by old numpy
        v.ints.push_back(dim);
        skip_space();
        if (eat(',')) continue;
        skip_space();
        if (eat(')')) break;
        return fail("expected ',' or ')' in shape");
      }
      return v;
    }
    if (pos_ < s_.size() && s_[pos_] == '[') return fail("structured dtypes are not supported");
    auto text = parse_string();
    if (!text) return text.status();
    v.text = std::move(*text);
    return v;
  }

  const std::string& s_;
  size_t pos_ = 0;
};

Expected<DataType> dtype_from_descr(const std::string& descr, const std::string& path) {
  if (descr.size() < 2) return invalid_argument(path, ": unsupported dtype '", descr, "'");
  char order = descr[0];
  std::string code = descr.substr(1);
  for (const DescrEntry& e : kDescrs) {
    if (code != e.name) continue;
    bool one_byte = dtype_size(e.dtype) == 1;
    if (order == '>' && !one_byte)
      return invalid_argument(path, ": big-endian data ('", descr,
                              "') is not supported; save it with arr.astype('<", code, "')");
    if (order == '|' && !one_byte)
      return invalid_argument(path, ": dtype '", descr, "' has no byte order");
    if (order != '<' && order != '|' && order != '=' && order != '>')
      return invalid_argument(path, ": unsupported dtype '", descr, "'");
    return e.dtype;
  }
  if (code[0] == 'U' || code[0] == 'S' || code[0] == 'O')
    return invalid_argument(path, ": string/object arrays ('", descr, "') are not supported");
  return invalid_argument(path, ": unsupported dtype '", descr, "'");
}

std::string shape_text(const Shape& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) out += ',';
    out += std::to_string(shape[i]);
  }
  return out + "]";
}

}  // namespace

std::string npy_descr(DataType dtype) {
  for (const DescrEntry& e : kDescrs)
    if (e.dtype == dtype) return std::string(dtype_size(dtype) == 1 ? "|" : "<") + e.name;
  return "";
}

Expected<Tensor> read_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(StatusCode::kNoSuchFile, "cannot open '", path, "'");
  in.seekg(0, std::ios::end);
  const int64_t file_size = in.tellg();
  in.seekg(0);
  char prelude[12] = {};
  in.read(prelude, 10);
  if (in.gcount() < 10 || std::memcmp(prelude, kMagic, kMagicLen) != 0)
    return invalid_argument(path, ": not a .npy file (bad magic)");
  const int major = static_cast<unsigned char>(prelude[6]);
  const int minor = static_cast<unsigned char>(prelude[7]);
  size_t header_len = 0;
  size_t prelude_len = 0;
  if (major == 1) {
    header_len = static_cast<unsigned char>(prelude[8]) |
                 size_t(static_cast<unsigned char>(prelude[9])) << 8;
    prelude_len = 10;
  } else if (major == 2) {
    in.read(prelude + 10, 2);
    if (in.gcount() < 2) return invalid_argument(path, ": truncated .npy header");
    header_len = 0;
    for (int i = 3; i >= 0; --i)
      header_len = header_len << 8 | static_cast<unsigned char>(prelude[8 + i]);
    prelude_len = 12;
  } else {
    return invalid_argument(path, ": .npy format version ", major, ".", minor,
                            " is not supported (only 1.0 and 2.0)");
  }
  if (int64_t(prelude_len + header_len) > file_size)
    return invalid_argument(path, ": truncated .npy header");
  std::string header(header_len, '\0');
  in.read(header.data(), std::streamsize(header_len));

  HeaderParser parser(header);
  auto fields = parser.parse();
  if (!fields) return Status(fields.status().code(), path + ": " + fields.status().message());
  auto descr = fields->find("descr");
  auto fortran = fields->find("fortran_order");
  auto shape_field = fields->find("shape");
  if (descr == fields->end() || descr->second.kind != HeaderValue::Kind::kString)
    return invalid_argument(path, ": .npy header has no 'descr' string");
  if (fortran == fields->end() || fortran->second.kind != HeaderValue::Kind::kBool)
    return invalid_argument(path, ": .npy header has no 'fortran_order' flag");
  if (shape_field == fields->end() || shape_field->second.kind != HeaderValue::Kind::kTuple)
    return invalid_argument(path, ": .npy header has no 'shape' tuple");
  NXRT_ASSIGN_OR_RETURN(DataType dtype, dtype_from_descr(descr->second.text, path));

  Shape shape(shape_field->second.ints);
  NXRT_ASSIGN_OR_RETURN(size_t nbytes, tensor_bytes(dtype, shape, path));
  // A Fortran-order array of rank < 2 has the same layout as C order, so only refuse
  // the layouts that actually differ.
  size_t non_trivial = 0;
  for (int64_t d : shape) non_trivial += d > 1;
  if (fortran->second.flag && non_trivial > 1)
    return invalid_argument(path,
                            ": Fortran-order arrays are not supported; save with "
                            "np.ascontiguousarray(arr)");
  const int64_t data_bytes = file_size - int64_t(prelude_len + header_len);
  if (data_bytes != int64_t(nbytes))
    return invalid_argument(path, ": shape ", shape_text(shape), " of ", descr->second.text,
                            " needs ", nbytes, " data bytes but the file has ", data_bytes);
  NXRT_ASSIGN_OR_RETURN(Tensor tensor, Tensor::allocate(dtype, shape));
  in.read(static_cast<char*>(tensor.raw()), std::streamsize(nbytes));
  if (in.gcount() != std::streamsize(nbytes)) return invalid_argument(path, ": read failed");
  if (dtype == DataType::kBool) {
    const uint8_t* p = tensor.data<uint8_t>();
    for (size_t i = 0; i < nbytes; ++i)
      if (p[i] > 1) return invalid_argument(path, ": bool array holds byte value ", int(p[i]));
  }
  return tensor;
}

Status write_npy(const std::string& path, const Tensor& tensor) {
  std::string descr = npy_descr(tensor.dtype());
  if (descr.empty())
    return invalid_argument("cannot write ", dtype_name(tensor.dtype()), " tensor as .npy");
  std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < tensor.rank(); ++i)
    header += std::to_string(tensor.shape()[i]) +
              (tensor.rank() == 1 || i + 1 < tensor.rank() ? "," : "");
  header += "), }";
  // Total prelude + header is padded to a multiple of 64 and ends with '\n', as numpy does.
  bool v2 = false;
  size_t total = kMagicLen + 4 + header.size() + 1;
  if ((total + 63) / 64 * 64 - kMagicLen - 4 > 65535) {
    v2 = true;
    total += 2;
  }
  size_t padded = (total + 63) / 64 * 64;
  header.append(padded - total, ' ');
  header += '\n';
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return make_error(StatusCode::kFail, "cannot write '", path, "'");
  out.write(kMagic, kMagicLen);
  const size_t len = header.size();
  if (!v2) {
    const char version[4] = {1, 0, char(len & 0xff), char(len >> 8)};
    out.write(version, 4);
  } else {
    const char version[6] = {2,
                             0,
                             char(len & 0xff),
                             char(len >> 8 & 0xff),
                             char(len >> 16 & 0xff),
                             char(len >> 24 & 0xff)};
    out.write(version, 6);
  }
  out.write(header.data(), std::streamsize(header.size()));
  out.write(static_cast<const char*>(tensor.raw()), std::streamsize(tensor.nbytes()));
  if (!out) return make_error(StatusCode::kFail, "write to '", path, "' failed");
  return Status();
}

}  // namespace nxrt::cli
