// ai.onnx.ml preprocessing ops: LabelEncoder, Binarizer, ArrayFeatureExtractor,
// Normalizer, Scaler, OneHotEncoder.
#include <cmath>
#include <cstring>
#include <limits>
#include <unordered_map>

#include "ep/cpu/kernels/common.h"

namespace nxrt::cpu {
namespace {

bool is_label_int(DataType t) {
  return t == DataType::kInt64 || t == DataType::kInt32 || t == DataType::kInt16;
}
bool is_label_float(DataType t) { return t == DataType::kFloat || t == DataType::kDouble; }

// A float key with -0 folded into +0 and every NaN into one NaN, so the lookup follows
// value equality (and a NaN key catches NaN inputs).
uint64_t float_key(double v) {
  if (std::isnan(v)) return 0x7FF8000000000000ull;
  if (v == 0) v = 0;
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  return bits;
}

// Keys or values of a LabelEncoder in one of three storage families.
struct LabelList {
  DataType type = DataType::kUndefined;  // the ONNX type they came as
  std::vector<std::string> strings;
  std::vector<int64_t> ints;
  std::vector<double> floats;
  size_t size() const {
    return type == DataType::kString ? strings.size()
           : is_label_int(type)      ? ints.size()
                                     : floats.size();
  }
};

Status list_from_tensor(const Tensor& t, LabelList& out) {
  const int64_t n = t.numel();
  out.type = t.dtype();
  switch (t.dtype()) {
    case DataType::kString:
      out.strings.assign(t.data<std::string>(), t.data<std::string>() + n);
      break;
    case DataType::kInt64:
      out.ints.assign(t.data<int64_t>(), t.data<int64_t>() + n);
      break;
    case DataType::kInt32:
      out.ints.assign(t.data<int32_t>(), t.data<int32_t>() + n);
      break;
    case DataType::kInt16:
      out.ints.assign(t.data<int16_t>(), t.data<int16_t>() + n);
      break;
    case DataType::kFloat:
      out.floats.assign(t.data<float>(), t.data<float>() + n);
      break;
    case DataType::kDouble:
      out.floats.assign(t.data<double>(), t.data<double>() + n);
      break;
    default:
      return invalid_graph("label tensors of type ", dtype_name(t.dtype()), " are not supported");
  }
  return Status();
}

class LabelEncoderKernel final : public Kernel {
 public:
  LabelEncoderKernel(LabelList keys, LabelList values, LabelList fallback)
      : keys_(std::move(keys)), values_(std::move(values)), default_(std::move(fallback)) {
    for (size_t i = keys_.size(); i-- > 0;) {
      // A duplicated key maps to its last value (as a dict built front to back would);
      // walking backwards lets emplace keep that one.
      if (keys_.type == DataType::kString)
        string_index_.emplace(keys_.strings[i], i);
      else if (is_label_int(keys_.type))
        int_index_.emplace(keys_.ints[i], i);
      else
        float_index_.emplace(float_key(keys_.floats[i]), i);
    }
  }

  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, x.shape()));
    const int64_t n = x.numel();
    std::vector<int64_t> hits(static_cast<size_t>(n));
    switch (x.dtype()) {
      case DataType::kString:
        lookup(x.data<std::string>(), n, string_index_, hits,
               [](const std::string& s) -> const std::string& { return s; });
        break;
      case DataType::kInt64:
        lookup(x.data<int64_t>(), n, int_index_, hits, [](int64_t v) { return v; });
        break;
      case DataType::kInt32:
        lookup(x.data<int32_t>(), n, int_index_, hits, [](int32_t v) { return int64_t(v); });
        break;
      case DataType::kInt16:
        lookup(x.data<int16_t>(), n, int_index_, hits, [](int16_t v) { return int64_t(v); });
        break;
      case DataType::kFloat:
        lookup(x.data<float>(), n, float_index_, hits, [](float v) { return float_key(v); });
        break;
      case DataType::kDouble:
        lookup(x.data<double>(), n, float_index_, hits, [](double v) { return float_key(v); });
        break;
      default:
        return invalid_argument("unsupported input type ", dtype_name(x.dtype()));
    }
    switch (y->dtype()) {
      case DataType::kString: {
        std::string* out = y->data<std::string>();
        for (int64_t i = 0; i < n; ++i)
          out[i] =
              hits[size_t(i)] < 0 ? default_.strings[0] : values_.strings[size_t(hits[size_t(i)])];
        break;
      }
        NXRT_CASE(kInt64, write_numbers<T>(y->data<T>(), hits, values_.ints, default_.ints[0]))
        NXRT_CASE(kInt32, write_numbers<T>(y->data<T>(), hits, values_.ints, default_.ints[0]))
        NXRT_CASE(kInt16, write_numbers<T>(y->data<T>(), hits, values_.ints, default_.ints[0]))
        NXRT_CASE(kFloat, write_numbers<T>(y->data<T>(), hits, values_.floats, default_.floats[0]))
        NXRT_CASE(kDouble, write_numbers<T>(y->data<T>(), hits, values_.floats, default_.floats[0]))
      default:
        return invalid_argument("unsupported output type ", dtype_name(y->dtype()));
    }
    return Status();
  }

 private:
  template <typename In, typename Map, typename KeyOf>
  static void lookup(const In* in, int64_t n, const Map& index, std::vector<int64_t>& hits,
                     KeyOf key_of) {
    for (int64_t i = 0; i < n; ++i) {
      auto it = index.find(key_of(in[i]));
      hits[size_t(i)] = it == index.end() ? -1 : int64_t(it->second);
    }
  }
  template <typename T, typename V>
  static void write_numbers(T* out, const std::vector<int64_t>& hits, const std::vector<V>& values,
                            V fallback) {
    for (size_t i = 0; i < hits.size(); ++i)
      out[i] = T(hits[i] < 0 ? fallback : values[size_t(hits[i])]);
  }

  LabelList keys_, values_, default_;
  std::unordered_map<std::string, size_t> string_index_;
  std::unordered_map<int64_t, size_t> int_index_;
  std::unordered_map<uint64_t, size_t> float_index_;
};

// Opset 1 maps strings to their position in classes_strings, or positions back to strings.
class LabelEncoderV1Kernel final : public Kernel {
 public:
  LabelEncoderV1Kernel(std::vector<std::string> classes, int64_t default_int,
                       std::string default_string)
      : classes_(std::move(classes)),
        default_int_(default_int),
        default_string_(std::move(default_string)) {
    for (size_t i = classes_.size(); i-- > 0;) index_[classes_[i]] = int64_t(i);
  }
  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, x.shape()));
    const int64_t n = x.numel();
    if (x.dtype() == DataType::kString) {
      const std::string* in = x.data<std::string>();
      int64_t* out = y->data<int64_t>();
      for (int64_t i = 0; i < n; ++i) {
        auto it = index_.find(in[i]);
        out[i] = it == index_.end() ? default_int_ : it->second;
      }
    } else {
      const int64_t* in = x.data<int64_t>();
      std::string* out = y->data<std::string>();
      for (int64_t i = 0; i < n; ++i)
        out[i] = in[i] >= 0 && in[i] < int64_t(classes_.size()) ? classes_[size_t(in[i])]
                                                                : default_string_;
    }
    return Status();
  }

 private:
  std::vector<std::string> classes_;
  std::unordered_map<std::string, int64_t> index_;
  int64_t default_int_;
  std::string default_string_;
};

Expected<KernelPtr> create_label_encoder_v1(KernelInit& init, AttrReader& attrs) {
  std::vector<std::string> classes = attrs.get_strings("classes_strings");
  const int64_t default_int = attrs.get_int("default_int64", -1);
  std::string default_string = attrs.get_string("default_string", "_Unused");
  NXRT_RETURN_IF_ERROR(attrs.status());
  const DataType xt = init.input_type(0);
  if (xt != DataType::kString && xt != DataType::kInt64) return init.unsupported_type(0);
  init.output_types[0] = xt == DataType::kString ? DataType::kInt64 : DataType::kString;
  return make_kernel<LabelEncoderV1Kernel>(std::move(classes), default_int,
                                           std::move(default_string));
}

}  // namespace

Expected<KernelPtr> create_label_encoder(KernelInit& init) {
  AttrReader attrs(init.node);
  if (init.opset < 2) return create_label_encoder_v1(init, attrs);
  auto bad = [&](const auto&... msg) { return init.error(StatusCode::kInvalidGraph, msg...); };

  // Exactly one keys_* and one values_* attribute; the *_tensor forms exist from opset 4.
  LabelList keys, values, fallback;
  int key_sources = 0, value_sources = 0;
  if (attrs.has("keys_strings")) {
    keys.type = DataType::kString;
    keys.strings = attrs.get_strings("keys_strings");
    ++key_sources;
  }
  if (attrs.has("keys_int64s")) {
    keys.type = DataType::kInt64;
    keys.ints = attrs.get_ints("keys_int64s");
    ++key_sources;
  }
  if (attrs.has("keys_floats")) {
    keys.type = DataType::kFloat;
    for (float f : attrs.get_floats("keys_floats")) keys.floats.push_back(f);
    ++key_sources;
  }
  if (attrs.has("values_strings")) {
    values.type = DataType::kString;
    values.strings = attrs.get_strings("values_strings");
    ++value_sources;
  }
  if (attrs.has("values_int64s")) {
    values.type = DataType::kInt64;
    values.ints = attrs.get_ints("values_int64s");
    ++value_sources;
  }
  if (attrs.has("values_floats")) {
    values.type = DataType::kFloat;
    for (float f : attrs.get_floats("values_floats")) values.floats.push_back(f);
    ++value_sources;
  }
  if (init.opset >= 4) {
    if (const Tensor* t = attrs.get_tensor("keys_tensor")) {
      NXRT_RETURN_IF_ERROR(std::move(list_from_tensor(*t, keys))
                               .with_context(node_context(init.node) + "keys_tensor: "));
      ++key_sources;
    }
    if (const Tensor* t = attrs.get_tensor("values_tensor")) {
      NXRT_RETURN_IF_ERROR(std::move(list_from_tensor(*t, values))
                               .with_context(node_context(init.node) + "values_tensor: "));
      ++value_sources;
    }
  }
  NXRT_RETURN_IF_ERROR(attrs.status());
  if (key_sources != 1 || value_sources != 1)
    return bad("exactly one keys_* and one values_* attribute must be set (got ", key_sources,
               " and ", value_sources, ")");
  if (keys.size() != values.size())
    return bad("keys has ", keys.size(), " entries but values has ", values.size());

  // The default follows the values' type: default_tensor when given (opset 4), else the
  // matching default_* attribute.
  const Tensor* default_tensor = init.opset >= 4 ? attrs.get_tensor("default_tensor") : nullptr;
  if (default_tensor) {
    NXRT_RETURN_IF_ERROR(std::move(list_from_tensor(*default_tensor, fallback))
                             .with_context(node_context(init.node) + "default_tensor: "));
    if (fallback.size() != 1)
      return bad("default_tensor must hold one value, it holds ", fallback.size());
    if (fallback.type != values.type)
      return bad("default_tensor has type ", dtype_name(fallback.type), " but the values are ",
                 dtype_name(values.type));
  } else {
    fallback.type = values.type;
    if (values.type == DataType::kString)
      fallback.strings = {attrs.get_string("default_string", "_Unused")};
    else if (is_label_int(values.type))
      fallback.ints = {attrs.get_int("default_int64", -1)};
    else
      fallback.floats = {attrs.get_float("default_float", -0.0f)};
  }
  NXRT_RETURN_IF_ERROR(attrs.status());

  const DataType xt = init.input_type(0);
  const bool input_ok = keys.type == DataType::kString ? xt == DataType::kString
                        : is_label_int(keys.type)      ? is_label_int(xt)
                                                       : is_label_float(xt);
  if (!input_ok)
    return bad("input type ", dtype_name(xt), " does not match keys of type ",
               dtype_name(keys.type));
  init.output_types[0] = values.type;
  return make_kernel<LabelEncoderKernel>(std::move(keys), std::move(values), std::move(fallback));
}

// ---------------------------------------------------------------- Binarizer, Scaler, Normalizer

namespace {

class BinarizerKernel final : public Kernel {
 public:
  explicit BinarizerKernel(float threshold) : threshold_(threshold) {}
  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, x.shape()));
    switch (x.dtype()) {
      NXRT_CASE(kFloat, apply<T>(x, *y))
      NXRT_CASE(kDouble, apply<T>(x, *y))
      NXRT_CASE(kInt64, apply<T>(x, *y))
      NXRT_CASE(kInt32, apply<T>(x, *y))
      default:
        return invalid_argument("unsupported input type ", dtype_name(x.dtype()));
    }
    return Status();
  }

 private:
  template <typename T>
  void apply(const Tensor& x, Tensor& y) const {
    const T* in = x.data<T>();
    T* out = y.data<T>();
    const double t = threshold_;
    for (int64_t i = 0; i < x.numel(); ++i) out[i] = double(in[i]) > t ? T(1) : T(0);
  }
  float threshold_;
};

// Reads element i of a float/double/int32/int64 tensor as double.
template <typename Fn>
Status for_each_as_double(const Tensor& x, Fn&& fn) {
  switch (x.dtype()) {
    NXRT_CASE(kFloat, {
      const T* p = x.data<T>();
      for (int64_t i = 0; i < x.numel(); ++i) fn(i, double(p[i]));
    })
    NXRT_CASE(kDouble, {
      const T* p = x.data<T>();
      for (int64_t i = 0; i < x.numel(); ++i) fn(i, double(p[i]));
    })
    NXRT_CASE(kInt64, {
      const T* p = x.data<T>();
      for (int64_t i = 0; i < x.numel(); ++i) fn(i, double(p[i]));
    })
    NXRT_CASE(kInt32, {
      const T* p = x.data<T>();
      for (int64_t i = 0; i < x.numel(); ++i) fn(i, double(p[i]));
    })
    default:
      return invalid_argument("unsupported input type ", dtype_name(x.dtype()));
  }
  return Status();
}

bool is_ml_numeric(DataType t) {
  return t == DataType::kFloat || t == DataType::kDouble || t == DataType::kInt64 ||
         t == DataType::kInt32;
}

// Imputer: every X value equal to replaced_value (0 by default; NaN matches NaN) becomes
// its column's imputed value (or the one value given for all columns). Floats use the
// float attributes, integers the int64 ones; Y has X's type and shape.
class ImputerKernel final : public Kernel {
 public:
  ImputerKernel(std::vector<double> imputed, double replaced)
      : imputed_(std::move(imputed)), replaced_(replaced) {}
  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    const int64_t c = x.rank() == 0 ? 1 : x.shape().back();
    if (imputed_.size() != 1 && int64_t(imputed_.size()) != c)
      return invalid_argument("there are ", imputed_.size(), " imputed values; need 1 or ", c,
                              " (the last dim of ", x.shape().to_string(), ")");
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, x.shape()));
    const bool nan = std::isnan(replaced_);
    switch (x.dtype()) {
      NXRT_CASE(kFloat, fill<T>(x, *y, c, nan))
      NXRT_CASE(kDouble, fill<T>(x, *y, c, nan))
      NXRT_CASE(kInt64, fill<T>(x, *y, c, false))
      NXRT_CASE(kInt32, fill<T>(x, *y, c, false))
      default:
        return invalid_argument("X of type ", dtype_name(x.dtype()), " is not supported");
    }
    return Status();
  }

 private:
  template <typename T>
  void fill(const Tensor& x, Tensor& y, int64_t c, bool nan) const {
    const T* in = x.data<T>();
    T* out = y.data<T>();
    for (int64_t i = 0; i < x.numel(); ++i) {
      const bool hit = nan ? in[i] != in[i] : double(in[i]) == replaced_;
      out[i] = hit ? T(imputed_[imputed_.size() == 1 ? 0 : size_t(i % c)]) : in[i];
    }
  }

  std::vector<double> imputed_;
  double replaced_;
};

class ScalerKernel final : public Kernel {
 public:
  ScalerKernel(std::vector<float> offset, std::vector<float> scale)
      : offset_(std::move(offset)), scale_(std::move(scale)) {}
  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    const int64_t c = x.rank() == 0 ? 1 : x.shape().back();
    for (const auto* v : {&offset_, &scale_})
      if (v->size() != 1 && int64_t(v->size()) != c)
        return invalid_argument("offset/scale have ", v->size(), " entries; need 1 or ", c,
                                " (the last dim of ", x.shape().to_string(), ")");
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, x.shape()));
    float* out = y->data<float>();
    const bool one_off = offset_.size() == 1, one_scale = scale_.size() == 1;
    return for_each_as_double(x, [&](int64_t i, double v) {
      const size_t k = size_t(i % c);
      out[i] = float((v - offset_[one_off ? 0 : k]) * scale_[one_scale ? 0 : k]);
    });
  }

 private:
  std::vector<float> offset_, scale_;
};

enum class NormKind { kMax, kL1, kL2 };

class NormalizerKernel final : public Kernel {
 public:
  explicit NormalizerKernel(NormKind kind) : kind_(kind) {}
  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    if (x.rank() != 1 && x.rank() != 2)
      return invalid_argument("input must have shape [C] or [N, C], got ", x.shape().to_string());
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, x.shape()));
    float* out = y->data<float>();
    std::vector<double> v(static_cast<size_t>(x.numel()));
    NXRT_RETURN_IF_ERROR(for_each_as_double(x, [&](int64_t i, double d) { v[size_t(i)] = d; }));
    const int64_t c = x.shape().back();
    const int64_t rows = c == 0 ? 0 : x.numel() / c;
    for (int64_t r = 0; r < rows; ++r) {
      const double* row = v.data() + r * c;
      double norm = 0;
      for (int64_t k = 0; k < c; ++k) {
        const double a = std::abs(row[k]);
        if (kind_ == NormKind::kMax)
          norm = std::max(norm, a);
        else if (kind_ == NormKind::kL1)
          norm += a;
        else
          norm += a * a;
      }
      if (kind_ == NormKind::kL2) norm = std::sqrt(norm);
      norm = std::max(norm, 1e-30);  // all-zero rows stay zero
      for (int64_t k = 0; k < c; ++k) out[r * c + k] = float(row[k] / norm);
    }
    return Status();
  }

 private:
  NormKind kind_;
};

// ---------------------------------------------------------------- ArrayFeatureExtractor

class ArrayFeatureExtractorKernel final : public Kernel {
 public:
  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    const Tensor& idx = *ctx.input(1);
    if (x.rank() == 0) return invalid_argument("input X must have at least one dim");
    const int64_t c = x.shape().back();
    const int64_t k = idx.numel();
    const int64_t* ids = idx.data<int64_t>();
    for (int64_t j = 0; j < k; ++j)
      if (ids[j] < 0 || ids[j] >= c)
        return invalid_argument("index ", ids[j], " is out of range for the last dim of size ", c);
    // A 1-D input gives a [1, k] row, as onnxruntime does.
    Shape out_shape;
    if (x.rank() == 1) {
      out_shape = Shape{1, k};
    } else {
      out_shape = x.shape();
      out_shape[x.rank() - 1] = k;
    }
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, out_shape));
    const int64_t rows = c == 0 ? x.shape().product(0, x.rank() - 1) : x.numel() / c;
    const size_t elem = x.dtype() == DataType::kString ? 0 : dtype_size(x.dtype());
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t j = 0; j < k; ++j) {
        const int64_t src = r * c + ids[j], dst = r * k + j;
        if (elem == 0)
          y->data<std::string>()[dst] = x.data<std::string>()[src];
        else
          std::memcpy(static_cast<char*>(y->raw()) + dst * elem,
                      static_cast<const char*>(x.raw()) + src * elem, elem);
      }
    }
    return Status();
  }
};

// ---------------------------------------------------------------- OneHotEncoder

class OneHotEncoderKernel final : public Kernel {
 public:
  OneHotEncoderKernel(std::vector<int64_t> cats_int, std::vector<std::string> cats_str, bool zeros)
      : zeros_(zeros), n_(int64_t(cats_int.empty() ? cats_str.size() : cats_int.size())) {
    for (size_t i = 0; i < cats_int.size(); ++i) int_index_.emplace(cats_int[i], int64_t(i));
    for (size_t i = 0; i < cats_str.size(); ++i) str_index_.emplace(cats_str[i], int64_t(i));
  }
  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    Shape out_shape = x.shape();
    out_shape.push_back(n_);
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, out_shape));
    float* out = y->data<float>();
    std::fill(out, out + y->numel(), 0.0f);
    const int64_t n = x.numel();
    auto place = [&](int64_t i, int64_t cat) -> Status {
      if (cat >= 0) {
        out[i * n_ + cat] = 1.0f;
      } else if (!zeros_) {
        return invalid_argument("element ", i, " is not one of the categories (zeros=0)");
      }
      return Status();
    };
    if (x.dtype() == DataType::kString) {
      if (str_index_.empty())
        return invalid_argument("string input but the categories are integers");
      for (int64_t i = 0; i < n; ++i) {
        auto it = str_index_.find(x.data<std::string>()[i]);
        NXRT_RETURN_IF_ERROR(place(i, it == str_index_.end() ? -1 : it->second));
      }
      return Status();
    }
    if (int_index_.empty()) return invalid_argument("numeric input but the categories are strings");
    Status st;
    // Floating inputs are truncated to integers to find their category.
    NXRT_RETURN_IF_ERROR(for_each_as_double(x, [&](int64_t i, double v) {
      if (!st.ok()) return;
      int64_t cat = -1;
      if (std::isfinite(v) && std::abs(v) < 9.2e18) {
        auto it = int_index_.find(int64_t(v));
        if (it != int_index_.end()) cat = it->second;
      }
      st = place(i, cat);
    }));
    return st;
  }

 private:
  bool zeros_;
  int64_t n_;
  std::unordered_map<int64_t, int64_t> int_index_;
  std::unordered_map<std::string, int64_t> str_index_;
};

}  // namespace

Expected<KernelPtr> create_binarizer(KernelInit& init) {
  if (!is_ml_numeric(init.input_type(0))) return init.unsupported_type(0);
  AttrReader attrs(init.node);
  const float threshold = attrs.get_float("threshold", 0.0f);
  NXRT_RETURN_IF_ERROR(attrs.status());
  init.output_types[0] = init.input_type(0);
  return make_kernel<BinarizerKernel>(threshold);
}

Expected<KernelPtr> create_scaler(KernelInit& init) {
  if (!is_ml_numeric(init.input_type(0))) return init.unsupported_type(0);
  AttrReader attrs(init.node);
  std::vector<float> offset = attrs.get_floats("offset", {0.0f});
  std::vector<float> scale = attrs.get_floats("scale", {1.0f});
  NXRT_RETURN_IF_ERROR(attrs.status());
  if (offset.empty() || scale.empty())
    return init.error(StatusCode::kInvalidGraph, "offset and scale must not be empty");
  init.output_types[0] = DataType::kFloat;
  return make_kernel<ScalerKernel>(std::move(offset), std::move(scale));
}

Expected<KernelPtr> create_imputer(KernelInit& init) {
  const DataType t = init.input_type(0);
  if (!is_ml_numeric(t)) return init.unsupported_type(0);
  AttrReader attrs(init.node);
  const bool floats = t == DataType::kFloat || t == DataType::kDouble;
  std::vector<double> imputed;
  double replaced = 0;
  if (floats) {
    for (float v : attrs.get_floats("imputed_value_floats")) imputed.push_back(v);
    replaced = attrs.get_float("replaced_value_float", 0.0f);  // NaN when given as NaN
  } else {
    for (int64_t v : attrs.get_ints("imputed_value_int64s")) imputed.push_back(double(v));
    replaced = double(attrs.get_int("replaced_value_int64", 0));
  }
  NXRT_RETURN_IF_ERROR(attrs.status());
  if (imputed.empty())
    return init.error(StatusCode::kInvalidGraph, "has no ",
                      floats ? "imputed_value_floats" : "imputed_value_int64s", " for a ",
                      dtype_name(t), " input");
  init.output_types[0] = t;
  return make_kernel<ImputerKernel>(std::move(imputed), replaced);
}

Expected<KernelPtr> create_normalizer(KernelInit& init) {
  if (!is_ml_numeric(init.input_type(0))) return init.unsupported_type(0);
  AttrReader attrs(init.node);
  const std::string norm = attrs.get_string("norm", "MAX");
  NXRT_RETURN_IF_ERROR(attrs.status());
  NormKind kind;
  if (norm == "MAX")
    kind = NormKind::kMax;
  else if (norm == "L1")
    kind = NormKind::kL1;
  else if (norm == "L2")
    kind = NormKind::kL2;
  else
    return init.error(StatusCode::kInvalidGraph, "norm must be MAX, L1 or L2, got '", norm, "'");
  init.output_types[0] = DataType::kFloat;
  return make_kernel<NormalizerKernel>(kind);
}

Expected<KernelPtr> create_array_feature_extractor(KernelInit& init) {
  const DataType xt = init.input_type(0);
  if (!is_ml_numeric(xt) && xt != DataType::kString) return init.unsupported_type(0);
  if (init.input_type(1) != DataType::kInt64) return init.unsupported_type(1);
  init.output_types[0] = xt;
  return make_kernel<ArrayFeatureExtractorKernel>();
}

Expected<KernelPtr> create_one_hot_encoder(KernelInit& init) {
  const DataType xt = init.input_type(0);
  if (!is_ml_numeric(xt) && xt != DataType::kString) return init.unsupported_type(0);
  AttrReader attrs(init.node);
  std::vector<int64_t> cats_int = attrs.get_ints("cats_int64s");
  std::vector<std::string> cats_str = attrs.get_strings("cats_strings");
  const bool zeros = attrs.get_int("zeros", 1) != 0;
  NXRT_RETURN_IF_ERROR(attrs.status());
  if (cats_int.empty() == cats_str.empty())
    return init.error(StatusCode::kInvalidGraph,
                      "exactly one of cats_int64s and cats_strings must be set");
  if ((xt == DataType::kString) != !cats_str.empty())
    return init.error(StatusCode::kInvalidGraph, "input type ", dtype_name(xt),
                      " does not match the categories");
  init.output_types[0] = DataType::kFloat;
  return make_kernel<OneHotEncoderKernel>(std::move(cats_int), std::move(cats_str), zeros);
}

}  // namespace nxrt::cpu
