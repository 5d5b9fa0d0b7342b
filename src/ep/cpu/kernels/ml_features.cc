// ai.onnx.ml FeatureVectorizer (inputs joined column-wise into one float matrix, each cut
// or zero-padded to its declared width) and CategoryMapper (strings to int64 ids and
// back, through two parallel lists, with a default for what is not listed).
#include <string>
#include <unordered_map>
#include <vector>

#include "ep/cpu/kernels/common.h"

namespace nxrt::cpu {
namespace {

class FeatureVectorizerKernel final : public Kernel {
 public:
  explicit FeatureVectorizerKernel(std::vector<int64_t> widths) : widths_(std::move(widths)) {}

  Status compute(KernelContext& ctx) const override {
    // Each input is [N, C], or [C] (one row, as onnxruntime reads it); all have one N.
    int64_t rows = -1, total = 0;
    for (size_t i = 0; i < widths_.size(); ++i) {
      const Tensor& x = *ctx.input(i);
      if (x.rank() != 1 && x.rank() != 2)
        return invalid_argument("input ", i, " has shape ", x.shape().to_string(),
                                "; expected [N, C] or [C]");
      const int64_t n = x.rank() == 1 ? 1 : x.shape()[0];
      if (rows >= 0 && n != rows)
        return invalid_argument("input ", i, " has ", n, " rows; input 0 has ", rows);
      rows = n;
      total += widths_[i];
    }
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, Shape{rows, total}));
    float* out = y->data<float>();
    int64_t col0 = 0;
    for (size_t i = 0; i < widths_.size(); ++i) {
      const Tensor& x = *ctx.input(i);
      const int64_t cols = x.shape().back(), width = widths_[i];
      switch (x.dtype()) {
        NXRT_CASE(kFloat, copy_columns(x.data<T>(), rows, cols, width, out, total, col0))
        NXRT_CASE(kDouble, copy_columns(x.data<T>(), rows, cols, width, out, total, col0))
        NXRT_CASE(kInt64, copy_columns(x.data<T>(), rows, cols, width, out, total, col0))
        NXRT_CASE(kInt32, copy_columns(x.data<T>(), rows, cols, width, out, total, col0))
        default:
          return invalid_argument("input ", i, " of type ", dtype_name(x.dtype()),
                                  " is not supported");
      }
      col0 += width;
    }
    return Status();
  }

 private:
  template <typename T>
  static void copy_columns(const T* x, int64_t rows, int64_t cols, int64_t width, float* out,
                           int64_t stride, int64_t col0) {
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < width; ++c)
        out[r * stride + col0 + c] = c < cols ? float(x[r * cols + c]) : 0.0f;
  }

  std::vector<int64_t> widths_;
};

class CategoryMapperKernel final : public Kernel {
 public:
  CategoryMapperKernel(std::vector<int64_t> ints, std::vector<std::string> strings,
                       int64_t default_int, std::string default_string)
      : default_int_(default_int), default_string_(std::move(default_string)) {
    // The first occurrence of a repeated category wins.
    for (size_t i = 0; i < ints.size(); ++i) {
      to_int_.emplace(strings[i], ints[i]);
      to_string_.emplace(ints[i], strings[i]);
    }
  }

  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, x.shape()));
    if (x.dtype() == DataType::kString) {
      const std::string* in = x.data<std::string>();
      int64_t* out = y->data<int64_t>();
      for (int64_t i = 0; i < x.numel(); ++i) {
        auto it = to_int_.find(in[i]);
        out[i] = it == to_int_.end() ? default_int_ : it->second;
      }
    } else {
      const int64_t* in = x.data<int64_t>();
      std::string* out = y->data<std::string>();
      for (int64_t i = 0; i < x.numel(); ++i) {
        auto it = to_string_.find(in[i]);
        out[i] = it == to_string_.end() ? default_string_ : it->second;
      }
    }
    return Status();
  }

 private:
  std::unordered_map<std::string, int64_t> to_int_;
  std::unordered_map<int64_t, std::string> to_string_;
  int64_t default_int_;
  std::string default_string_;
};

}  // namespace

Expected<KernelPtr> create_feature_vectorizer(KernelInit& init) {
  AttrReader attrs(init.node);
  std::vector<int64_t> widths = attrs.get_ints("inputdimensions");
  NXRT_RETURN_IF_ERROR(attrs.status());
  if (widths.size() != init.num_inputs())
    return init.error(StatusCode::kInvalidGraph, "inputdimensions has ", widths.size(),
                      " values for ", init.num_inputs(), " inputs");
  for (size_t i = 0; i < widths.size(); ++i) {
    const DataType t = init.input_type(i);
    if (t != DataType::kFloat && t != DataType::kDouble && t != DataType::kInt64 &&
        t != DataType::kInt32)
      return init.unsupported_type(i);
    if (widths[i] < 0)
      return init.error(StatusCode::kInvalidGraph, "inputdimensions[", i, "] is ", widths[i]);
  }
  init.set_all_outputs(DataType::kFloat);
  return make_kernel<FeatureVectorizerKernel>(std::move(widths));
}

Expected<KernelPtr> create_category_mapper(KernelInit& init) {
  const DataType t = init.input_type(0);
  if (t != DataType::kString && t != DataType::kInt64) return init.unsupported_type(0);
  AttrReader attrs(init.node);
  std::vector<int64_t> ints = attrs.get_ints("cats_int64s");
  std::vector<std::string> strings = attrs.get_strings("cats_strings");
  const int64_t default_int = attrs.get_int("default_int64", -1);
  std::string default_string = attrs.get_string("default_string", "_Unused");
  NXRT_RETURN_IF_ERROR(attrs.status());
  if (ints.size() != strings.size())
    return init.error(StatusCode::kInvalidGraph, "cats_int64s has ", ints.size(),
                      " values but cats_strings ", strings.size());
  init.set_all_outputs(t == DataType::kString ? DataType::kInt64 : DataType::kString);
  return make_kernel<CategoryMapperKernel>(std::move(ints), std::move(strings), default_int,
                                           std::move(default_string));
}

}  // namespace nxrt::cpu
