#include "common.h"

#include <sys/stat.h>

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <map>
#include <random>

#include "npy.h"

namespace nxrt::cli {
namespace {

std::string fmt_g(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.6g", v);
  return buf;
}

const ir::TypeInfo& tensor_type_of(const ir::TypeInfo& type) {
  if (type.kind == ir::TypeInfo::Kind::kOptional && type.inner) return *type.inner;
  return type;
}

Expected<std::pair<std::string, std::string>> split_spec(const std::string& spec,
                                                         const char* option, const char* form) {
  size_t eq = spec.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
    return invalid_argument("bad ", option, " '", spec, "': expected ", form);
  return std::make_pair(spec.substr(0, eq), spec.substr(eq + 1));
}

}  // namespace

Expected<std::pair<std::string, Shape>> parse_shape_option(const std::string& spec) {
  NXRT_ASSIGN_OR_RETURN(auto kv,
                        split_spec(spec, "--shape", "NAME=D0,D1,... (NAME= for a scalar)"));
  Shape shape;
  std::string text = kv.second == "scalar" ? "" : kv.second;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t comma = text.find(',', pos);
    std::string item =
        text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    char* end = nullptr;
    long long dim = std::strtoll(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || dim < 0 || dim > (1LL << 40))
      return invalid_argument("bad --shape '", spec,
                              "': dims must be non-negative integers separated by commas");
    shape.push_back(dim);
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return std::pair<std::string, Shape>(kv.first, shape);
}

Expected<std::pair<std::string, int64_t>> parse_dim_option(const std::string& spec) {
  NXRT_ASSIGN_OR_RETURN(auto kv, split_spec(spec, "--dim", "SYMBOL=SIZE"));
  char* end = nullptr;
  long long value = std::strtoll(kv.second.c_str(), &end, 10);
  if (kv.second.empty() || *end != '\0' || value < 0 || value > (1LL << 40))
    return invalid_argument("bad --dim '", spec, "': size must be a non-negative integer");
  return std::pair<std::string, int64_t>(kv.first, int64_t(value));
}

namespace {

template <typename T, typename Gen>
void fill_random(Tensor& t, Gen&& gen) {
  T* p = t.data<T>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = gen();
}

// Random values that are valid for most inputs: floats in [-1, 1), integers in [0, 10)
// (small and non-negative, so index-like inputs stay in range), bools either way.
Expected<std::string> randomize(Tensor& t, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> uf(-1.f, 1.f);
  std::uniform_int_distribution<int> ui(0, 9);
  switch (t.dtype()) {
    case DataType::kFloat:
      fill_random<float>(t, [&] { return uf(rng); });
      break;
    case DataType::kDouble:
      fill_random<double>(t, [&] { return double(uf(rng)); });
      break;
    case DataType::kFloat16:
      fill_random<Float16>(t, [&] { return Float16(uf(rng)); });
      break;
    case DataType::kBFloat16:
      fill_random<BFloat16>(t, [&] { return BFloat16(uf(rng)); });
      break;
    case DataType::kComplex64: {
      float* p = static_cast<float*>(t.raw());
      for (int64_t i = 0; i < 2 * t.numel(); ++i) p[i] = uf(rng);
      break;
    }
    case DataType::kBool:
      fill_random<bool>(t, [&] { return ui(rng) >= 5; });
      break;
#define NXRT_CLI_INT(ENUM, CT)                       \
  case DataType::ENUM:                               \
    fill_random<CT>(t, [&] { return CT(ui(rng)); }); \
    break;
      NXRT_CLI_INT(kInt8, int8_t)
      NXRT_CLI_INT(kInt16, int16_t)
      NXRT_CLI_INT(kInt32, int32_t)
      NXRT_CLI_INT(kInt64, int64_t)
      NXRT_CLI_INT(kUint8, uint8_t)
      NXRT_CLI_INT(kUint16, uint16_t)
      NXRT_CLI_INT(kUint32, uint32_t)
      NXRT_CLI_INT(kUint64, uint64_t)
#undef NXRT_CLI_INT
    case DataType::kString: {
      std::string* p = t.data<std::string>();
      for (int64_t i = 0; i < t.numel(); ++i) p[i] = "s" + std::to_string(ui(rng));
      return std::string("random strings");
    }
    default:
      return std::string("zeros (no random generator for ") + std::string(dtype_name(t.dtype())) +
             ")";
  }
  if (is_float_type(t.dtype()) || t.dtype() == DataType::kComplex64)
    return std::string("random uniform [-1,1)");
  if (t.dtype() == DataType::kBool) return std::string("random bools");
  return std::string("random integers [0,9]");
}

Expected<std::string> fill_value(Tensor& t, double value) {
  switch (t.dtype()) {
#define NXRT_CLI_FILL(ENUM, CT)                    \
  case DataType::ENUM:                             \
    fill_random<CT>(t, [&] { return CT(value); }); \
    break;
    NXRT_CLI_FILL(kFloat, float)
    NXRT_CLI_FILL(kDouble, double)
    NXRT_CLI_FILL(kInt8, int8_t)
    NXRT_CLI_FILL(kInt16, int16_t)
    NXRT_CLI_FILL(kInt32, int32_t)
    NXRT_CLI_FILL(kInt64, int64_t)
    NXRT_CLI_FILL(kUint8, uint8_t)
    NXRT_CLI_FILL(kUint16, uint16_t)
    NXRT_CLI_FILL(kUint32, uint32_t)
    NXRT_CLI_FILL(kUint64, uint64_t)
#undef NXRT_CLI_FILL
    case DataType::kFloat16:
      fill_random<Float16>(t, [&] { return Float16(float(value)); });
      break;
    case DataType::kBFloat16:
      fill_random<BFloat16>(t, [&] { return BFloat16(float(value)); });
      break;
    case DataType::kBool:
      fill_random<bool>(t, [&] { return value != 0; });
      break;
    default:
      return invalid_argument("--fill does not support ", dtype_name(t.dtype()), " inputs");
  }
  return "filled with " + fmt_g(value);
}

template <typename T>
std::string numeric_summary(const Tensor& t) {
  const T* p = t.data<T>();
  const int64_t n = t.numel();
  auto as_double = [](T v) { return double(v); };
  constexpr bool kFloat = !std::is_integral_v<T>;
  auto one = [&](T v) {
    if constexpr (kFloat)
      return fmt_g(as_double(v));
    else if constexpr (std::is_same_v<T, bool>)
      return std::string(v ? "true" : "false");
    else if constexpr (std::is_signed_v<T>)
      return std::to_string(int64_t(v));
    else
      return std::to_string(uint64_t(v));
  };
  constexpr int64_t kAll = 10;
  constexpr int64_t kHead = 6;
  std::string values = "[";
  for (int64_t i = 0; i < std::min(n, n <= kAll ? kAll : kHead); ++i)
    values += (i ? ", " : "") + one(p[i]);
  values += n > kAll ? ", ...]" : "]";
  if (n <= kAll) return values;
  double lo = INFINITY, hi = -INFINITY, sum = 0;
  int64_t nan = 0, inf = 0, finite = 0;
  for (int64_t i = 0; i < n; ++i) {
    double v = as_double(p[i]);
    if (std::isnan(v)) {
      ++nan;
      continue;
    }
    if (std::isinf(v))
      ++inf;
    else {
      sum += v;
      ++finite;
    }
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  if (nan == n) return "all nan  " + values;
  // Integers print exactly; floats through %g (lo/hi are +-inf or nan-free by now).
  std::string out = kFloat ? "min " + fmt_g(lo) + " max " + fmt_g(hi)
                           : "min " + one(T(lo)) + " max " + one(T(hi));
  out += " mean " + (finite ? fmt_g(sum / double(finite)) : std::string("nan"));
  if (nan) out += " nan " + std::to_string(nan);
  if (inf) out += " inf " + std::to_string(inf);
  return out + "  " + values;
}

}  // namespace

std::string bytes_text(double bytes) {
  char buf[32];
  if (bytes >= 1024.0 * 1024.0)
    std::snprintf(buf, sizeof(buf), "%.1f MiB", bytes / (1024.0 * 1024.0));
  else if (bytes >= 1024.0)
    std::snprintf(buf, sizeof(buf), "%.1f KiB", bytes / 1024.0);
  else
    std::snprintf(buf, sizeof(buf), "%.0f B", bytes);
  return buf;
}

std::string dims_text(const Shape& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) out += ',';
    out += std::to_string(shape[i]);
  }
  return out + "]";
}

std::string type_text(const ir::TypeInfo& type) {
  using K = ir::TypeInfo::Kind;
  auto inner = [&] { return type.inner ? type_text(*type.inner) : std::string("?"); };
  switch (type.kind) {
    case K::kTensor:
      return tensor_type_name(type.elem_type);
    case K::kSequence:
      return "seq(" + inner() + ")";
    case K::kOptional:
      return "optional(" + inner() + ")";
    case K::kMap:
      return "map(" + std::string(dtype_name(type.elem_type)) + "," + inner() + ")";
    case K::kSparseTensor:
      return "sparse_" + tensor_type_name(type.elem_type);
    case K::kUnknown:
      break;
  }
  return "(unknown type)";
}

std::string shape_text(const ir::TypeInfo& type) {
  const ir::TypeInfo& t = tensor_type_of(type);
  if (t.kind == ir::TypeInfo::Kind::kSequence && t.inner) return shape_text(*t.inner);
  if (t.kind != ir::TypeInfo::Kind::kTensor && t.kind != ir::TypeInfo::Kind::kSparseTensor)
    return "";
  if (!t.has_shape) return "(unknown shape)";
  std::string out = "[";
  for (size_t i = 0; i < t.dims.size(); ++i) {
    const ir::Dim& d = t.dims[i];
    out += i ? "," : "";
    out += d.value >= 0 ? std::to_string(d.value) : d.param.empty() ? "?" : d.param;
  }
  return out + "]";
}

std::string value_summary(const Tensor& t) {
  if (t.numel() == 0) return "(empty)";
  switch (t.dtype()) {
    case DataType::kFloat:
      return numeric_summary<float>(t);
    case DataType::kDouble:
      return numeric_summary<double>(t);
    case DataType::kFloat16:
      return numeric_summary<Float16>(t);
    case DataType::kBFloat16:
      return numeric_summary<BFloat16>(t);
    case DataType::kBool:
      return numeric_summary<bool>(t);
    case DataType::kInt8:
      return numeric_summary<int8_t>(t);
    case DataType::kInt16:
      return numeric_summary<int16_t>(t);
    case DataType::kInt32:
      return numeric_summary<int32_t>(t);
    case DataType::kInt64:
      return numeric_summary<int64_t>(t);
    case DataType::kUint8:
      return numeric_summary<uint8_t>(t);
    case DataType::kUint16:
      return numeric_summary<uint16_t>(t);
    case DataType::kUint32:
      return numeric_summary<uint32_t>(t);
    case DataType::kUint64:
      return numeric_summary<uint64_t>(t);
    case DataType::kString: {
      std::string out = "[";
      const std::string* p = t.data<std::string>();
      for (int64_t i = 0; i < std::min<int64_t>(t.numel(), 6); ++i) {
        std::string s = p[i].size() > 40 ? p[i].substr(0, 40) + "..." : p[i];
        out += (i ? ", \"" : "\"") + s + "\"";
      }
      return out + (t.numel() > 6 ? ", ...]" : "]");
    }
    default:
      return "(" + std::string(dtype_name(t.dtype())) + " values not shown)";
  }
}

Status check_model_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    return make_error(StatusCode::kNoSuchFile, "model file '", path, "' does not exist");
  if (!S_ISREG(st.st_mode))
    return make_error(StatusCode::kNoSuchFile, "model path '", path, "' is not a regular file");
  return Status();
}

Expected<std::unique_ptr<Session>> load_session(const std::string& path,
                                                const SessionConfig& config) {
  NXRT_RETURN_IF_ERROR(check_model_file(path));
  auto session = Session::create_from_file(path, config);
  if (!session) {
    Status s = std::move(session).status();
    return Status(s.code(), "cannot load '" + path + "': " + s.message());
  }
  return session;
}

Expected<Feeds> make_feeds(const Session& session, const InputOptions& options) {
  const auto& inputs = session.inputs();
  auto known_names = [&] {
    std::string names;
    for (const auto& in : inputs) names += (names.empty() ? "" : ", ") + in.name;
    return names.empty() ? std::string("none") : names;
  };

  std::map<std::string, std::string> files;
  for (const std::string& spec : options.inputs) {
    NXRT_ASSIGN_OR_RETURN(auto kv, split_spec(spec, "--input", "NAME=FILE.npy"));
    bool found = false;
    for (const auto& in : inputs) found |= in.name == kv.first;
    for (const auto& in : session.overridable_initializers()) found |= in.name == kv.first;
    if (!found)
      return invalid_argument("bad --input '", spec, "': the model has no input '", kv.first,
                              "' (inputs: ", known_names(), ")");
    if (!files.emplace(kv.first, kv.second).second)
      return invalid_argument("input '", kv.first, "' is given twice");
  }

  auto check_name = [&](const std::string& spec, const char* option,
                        const std::string& name) -> Status {
    for (const auto& in : inputs)
      if (in.name == name) return Status();
    return invalid_argument("bad ", option, " '", spec, "': the model has no input '", name,
                            "' (inputs: ", known_names(), ")");
  };
  std::map<std::string, Shape> shapes;
  for (const std::string& spec : options.shapes) {
    NXRT_ASSIGN_OR_RETURN(auto kv, parse_shape_option(spec));
    NXRT_RETURN_IF_ERROR(check_name(spec, "--shape", kv.first));
    shapes[kv.first] = kv.second;
  }
  std::map<std::string, double> fills;
  for (const std::string& spec : options.fills) {
    NXRT_ASSIGN_OR_RETURN(auto kv, split_spec(spec, "--fill", "NAME=NUMBER"));
    NXRT_RETURN_IF_ERROR(check_name(spec, "--fill", kv.first));
    char* end = nullptr;
    double value = std::strtod(kv.second.c_str(), &end);
    if (kv.second == "true")
      value = 1;
    else if (kv.second == "false")
      value = 0;
    else if (*end != '\0')
      return invalid_argument("bad --fill '", spec, "': '", kv.second, "' is not a number");
    fills[kv.first] = value;
  }

  std::map<std::string, int64_t> dims;
  for (const std::string& spec : options.dims) {
    NXRT_ASSIGN_OR_RETURN(auto kv, parse_dim_option(spec));
    const int64_t value = kv.second;
    bool used = false;
    for (const auto& in : inputs)
      for (const ir::Dim& d : tensor_type_of(in.type).dims) used |= d.param == kv.first;
    if (!used) {
      std::string symbols;
      for (const auto& in : inputs)
        for (const ir::Dim& d : tensor_type_of(in.type).dims)
          if (!d.param.empty() && symbols.find(d.param) == std::string::npos)
            symbols += (symbols.empty() ? "" : ", ") + d.param;
      return invalid_argument("bad --dim '", spec, "': no input has a dimension named '", kv.first,
                              "' (symbolic dims: ", symbols.empty() ? "none" : symbols, ")");
    }
    dims[kv.first] = value;
  }

  Feeds feeds;
  std::mt19937_64 rng(options.seed);
  auto add_file = [&](const ir::ValueInfo& in, const std::string& file) -> Status {
    NXRT_ASSIGN_OR_RETURN(Tensor t, read_npy(file));
    const ir::TypeInfo& type = tensor_type_of(in.type);
    if (type.kind == ir::TypeInfo::Kind::kSequence)
      return invalid_argument("input '", in.name, "' is a sequence; .npy files give tensors");
    if (type.elem_type != DataType::kUndefined && t.dtype() != type.elem_type)
      return invalid_argument("input '", in.name, "' expects ", dtype_name(type.elem_type),
                              " but '", file, "' holds ", dtype_name(t.dtype()), " (",
                              npy_descr(t.dtype()), ")");
    feeds.names.push_back(in.name);
    feeds.values.emplace_back(std::move(t));
    feeds.sources.push_back("from " + file);
    return Status();
  };
  for (const auto& in : session.overridable_initializers()) {
    auto it = files.find(in.name);
    if (it != files.end()) NXRT_RETURN_IF_ERROR(add_file(in, it->second));
  }
  for (const auto& in : inputs) {
    auto it = files.find(in.name);
    if (it != files.end()) {
      NXRT_RETURN_IF_ERROR(add_file(in, it->second));
      continue;
    }
    const ir::TypeInfo& type = tensor_type_of(in.type);
    if (type.kind != ir::TypeInfo::Kind::kTensor)
      return invalid_argument("input '", in.name, "' has type ", type_text(in.type),
                              "; random values are only made for tensors, give it with --input");
    if (type.elem_type == DataType::kUndefined)
      return invalid_argument("input '", in.name,
                              "' has no declared element type; give it with --input");
    Shape shape;
    if (auto it = shapes.find(in.name); it != shapes.end()) {
      shape = it->second;
    } else {
      for (const ir::Dim& d : type.dims) {
        if (d.value >= 0)
          shape.push_back(d.value);
        else if (auto dim = dims.find(d.param); dim != dims.end())
          shape.push_back(dim->second);
        else
          shape.push_back(1);  // symbolic or unknown: the smallest size that makes sense
      }
    }
    NXRT_ASSIGN_OR_RETURN(Tensor t, Tensor::allocate(type.elem_type, shape));
    std::string how;
    if (auto it = fills.find(in.name); it != fills.end()) {
      NXRT_ASSIGN_OR_RETURN(how, fill_value(t, it->second));
    } else {
      NXRT_ASSIGN_OR_RETURN(how, randomize(t, rng));
    }
    feeds.names.push_back(in.name);
    feeds.values.emplace_back(std::move(t));
    feeds.sources.push_back(how);
  }
  return feeds;
}

}  // namespace nxrt::cli
