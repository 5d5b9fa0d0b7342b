// ai.onnx.ml ops on a map input (ValueKind::kMap: keys [K] and values [K], one graph
// input fed a Python dict): DictVectorizer (the values of a vocabulary's keys, in its
// order, 0 or "" where the map lacks a key) and CastMap (int64-keyed values cast to
// float, string or int64, densely in key order or sparsely at index = key).
#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <numeric>
#include <string>
#include <unordered_map>
#include <vector>

#include "ep/cpu/kernels/common.h"

namespace nxrt::cpu {
namespace {

// The map bound to input 0: its keys and values tensors.
Status map_input(const KernelContext& ctx, const Tensor*& keys, const Tensor*& values) {
  const TensorSequence* map = ctx.input_sequence(0);
  if (!map || map->size() != 2) return invalid_argument("input X must be a map");
  keys = &(*map)[0];
  values = &(*map)[1];
  return Status();
}

class DictVectorizerKernel final : public Kernel {
 public:
  DictVectorizerKernel(DataType dtype, std::vector<std::string> strings, std::vector<int64_t> ints)
      : dtype_(dtype), string_keys_(!strings.empty()) {
    size_ = int64_t(string_keys_ ? strings.size() : ints.size());
    for (int64_t i = 0; i < size_; ++i) {
      if (string_keys_)
        by_string_.emplace(strings[size_t(i)], i);  // the first of repeated entries wins
      else
        by_int_.emplace(ints[size_t(i)], i);
    }
  }

  Status compute(KernelContext& ctx) const override {
    const Tensor* keys = nullptr;
    const Tensor* values = nullptr;
    NXRT_RETURN_IF_ERROR(map_input(ctx, keys, values));
    const DataType key_type = string_keys_ ? DataType::kString : DataType::kInt64;
    if (keys->dtype() != key_type)
      return invalid_argument("the map has ", dtype_name(keys->dtype()), " keys; the ",
                              string_keys_ ? "string" : "int64", "_vocabulary needs ",
                              dtype_name(key_type), " keys");
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, Shape{1, size_}));
    const int64_t count = keys->numel();
    auto place = [&](int64_t k) -> int64_t {
      if (string_keys_) {
        auto it = by_string_.find(keys->data<std::string>()[k]);
        return it == by_string_.end() ? -1 : it->second;
      }
      auto it = by_int_.find(keys->data<int64_t>()[k]);
      return it == by_int_.end() ? -1 : it->second;
    };
    switch (dtype_) {
      NXRT_CASE(kFloat, scatter<T>(*values, count, place, *y))
      NXRT_CASE(kDouble, scatter<T>(*values, count, place, *y))
      NXRT_CASE(kInt64, scatter<T>(*values, count, place, *y))
      NXRT_CASE(kString, scatter<T>(*values, count, place, *y))
      default:
        return not_implemented("values of type ", dtype_name(dtype_), " are not supported");
    }
    return Status();
  }

 private:
  template <typename T, typename Place>
  static void scatter(const Tensor& values, int64_t count, Place& place, Tensor& y) {
    T* out = y.data<T>();
    std::fill(out, out + y.numel(), T());  // 0, or "" for strings
    for (int64_t k = 0; k < count; ++k)
      if (const int64_t at = place(k); at >= 0) out[at] = values.data<T>()[k];
  }

  DataType dtype_;
  bool string_keys_;
  int64_t size_ = 0;
  std::unordered_map<std::string, int64_t> by_string_;
  std::unordered_map<int64_t, int64_t> by_int_;
};

enum class CastTo { kFloat, kString, kInt64 };

class CastMapKernel final : public Kernel {
 public:
  CastMapKernel(DataType from, CastTo to, bool sparse, int64_t max_map)
      : from_(from), to_(to), sparse_(sparse), max_map_(max_map) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor* keys = nullptr;
    const Tensor* values = nullptr;
    NXRT_RETURN_IF_ERROR(map_input(ctx, keys, values));
    if (keys->dtype() != DataType::kInt64)
      return invalid_argument("CastMap takes int64 keys, got ", dtype_name(keys->dtype()));
    const int64_t count = keys->numel();
    const int64_t* key = keys->data<int64_t>();
    // Dense: the entries in key order. Sparse: at index = key, the rest filled.
    std::vector<int64_t> order(static_cast<size_t>(count));
    std::iota(order.begin(), order.end(), int64_t(0));
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t a, int64_t b) { return key[a] < key[b]; });
    const int64_t width = sparse_ ? max_map_ : count;
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, Shape{1, width}));
    if (sparse_) {
      for (int64_t k = 0; k < count; ++k)
        if (key[k] < 0 || key[k] >= max_map_)
          return invalid_argument("key ", key[k], " is outside [0, max_map = ", max_map_, ")");
      fill_missing(*y);
    }
    for (int64_t i = 0; i < count; ++i) {
      const int64_t k = order[size_t(i)];
      NXRT_RETURN_IF_ERROR(cast_one(*values, k, *y, sparse_ ? key[k] : i));
    }
    return Status();
  }

 private:
  // onnxruntime fills a sparse string output's gaps with "0.f" (its literal for a zero
  // float); nxrt does too, so outputs compare equal.
  void fill_missing(Tensor& y) const {
    switch (to_) {
      case CastTo::kFloat:
        std::fill(y.data<float>(), y.data<float>() + y.numel(), 0.0f);
        break;
      case CastTo::kInt64:
        std::fill(y.data<int64_t>(), y.data<int64_t>() + y.numel(), int64_t(0));
        break;
      case CastTo::kString:
        std::fill(y.data<std::string>(), y.data<std::string>() + y.numel(), std::string("0.f"));
        break;
    }
  }

  // Value k of the map into y[at]: floats print as "%f" and truncate to int64; strings
  // parse whole (an unparsable one is an error naming it).
  Status cast_one(const Tensor& values, int64_t k, Tensor& y, int64_t at) const {
    if (from_ == DataType::kFloat) {
      const float v = values.data<float>()[k];
      switch (to_) {
        case CastTo::kFloat:
          y.data<float>()[at] = v;
          break;
        case CastTo::kString:
          y.data<std::string>()[at] = std::to_string(v);
          break;
        case CastTo::kInt64:
          y.data<int64_t>()[at] = int64_t(v);
          break;
      }
      return Status();
    }
    const std::string& text = values.data<std::string>()[k];
    char* end = nullptr;
    errno = 0;
    switch (to_) {
      case CastTo::kString:
        y.data<std::string>()[at] = text;
        return Status();
      case CastTo::kFloat:
        y.data<float>()[at] = std::strtof(text.c_str(), &end);
        break;
      case CastTo::kInt64:
        y.data<int64_t>()[at] = std::strtoll(text.c_str(), &end, 10);
        break;
    }
    if (text.empty() || end != text.c_str() + text.size() || errno == ERANGE)
      return invalid_argument("value '", text, "' is not a ",
                              to_ == CastTo::kFloat ? "float" : "int64");
    return Status();
  }

  DataType from_;
  CastTo to_;
  bool sparse_;
  int64_t max_map_;
};

Status require_map_input(KernelInit& init) {
  if (init.input_kinds.empty() || init.input_kinds[0] != ValueKind::kMap)
    return init.error(StatusCode::kInvalidGraph, "input X must be a map (a graph input of type ",
                      "map(K, V))");
  return Status();
}

}  // namespace

Expected<KernelPtr> create_dict_vectorizer(KernelInit& init) {
  NXRT_RETURN_IF_ERROR(require_map_input(init));
  AttrReader attrs(init.node);
  std::vector<std::string> strings = attrs.get_strings("string_vocabulary");
  std::vector<int64_t> ints = attrs.get_ints("int64_vocabulary");
  NXRT_RETURN_IF_ERROR(attrs.status());
  if (strings.empty() == ints.empty())
    return init.error(StatusCode::kInvalidGraph,
                      "exactly one of string_vocabulary and int64_vocabulary must be given");
  const DataType t = init.input_type(0);
  if (t != DataType::kFloat && t != DataType::kDouble && t != DataType::kInt64 &&
      t != DataType::kString)
    return init.error(StatusCode::kNotImplemented, "map values of type ", dtype_name(t),
                      " are not supported (int64, float, double, string are)");
  init.output_types[0] = t;
  return make_kernel<DictVectorizerKernel>(t, std::move(strings), std::move(ints));
}

Expected<KernelPtr> create_cast_map(KernelInit& init) {
  NXRT_RETURN_IF_ERROR(require_map_input(init));
  AttrReader attrs(init.node);
  const std::string cast_to = attrs.get_string("cast_to", "TO_FLOAT");
  const std::string form = attrs.get_string("map_form", "DENSE");
  const int64_t max_map = attrs.get_int("max_map", 1);
  NXRT_RETURN_IF_ERROR(attrs.status());
  const DataType from = init.input_type(0);
  if (from != DataType::kFloat && from != DataType::kString)
    return init.error(StatusCode::kNotImplemented, "map values of type ", dtype_name(from),
                      " are not supported (float and string are)");
  CastTo to;
  if (cast_to == "TO_FLOAT") {
    to = CastTo::kFloat;
    init.output_types[0] = DataType::kFloat;
  } else if (cast_to == "TO_STRING") {
    to = CastTo::kString;
    init.output_types[0] = DataType::kString;
  } else if (cast_to == "TO_INT64") {
    to = CastTo::kInt64;
    init.output_types[0] = DataType::kInt64;
  } else {
    return init.error(StatusCode::kInvalidGraph, "cast_to '", cast_to,
                      "' is not TO_FLOAT, TO_STRING or TO_INT64");
  }
  if (form != "DENSE" && form != "SPARSE")
    return init.error(StatusCode::kInvalidGraph, "map_form '", form, "' is not DENSE or SPARSE");
  if (form == "SPARSE" && max_map < 1)
    return init.error(StatusCode::kInvalidGraph, "max_map must be positive, got ", max_map);
  return make_kernel<CastMapKernel>(from, to, form == "SPARSE", max_map);
}

}  // namespace nxrt::cpu
