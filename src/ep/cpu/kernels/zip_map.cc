// ai.onnx.ml ZipMap: each row of X [N, C] (or one row [C]) becomes a map from the class
// labels to that row's values, the sequence of N maps that scikit-learn classifiers
// converted by skl2onnx return as probabilities. The value is a kMapSequence: the labels
// tensor and X itself (kernel.h), which the Python API turns into a list of dicts.
#include <algorithm>
#include <string>
#include <vector>

#include "ep/cpu/kernels/common.h"

namespace nxrt::cpu {
namespace {

class ZipMapKernel final : public Kernel {
 public:
  explicit ZipMapKernel(Tensor keys) : keys_(std::move(keys)) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    const int64_t classes = keys_.numel();
    if ((x.rank() != 1 && x.rank() != 2) || x.shape().back() != classes)
      return invalid_argument("X has shape ", x.shape().to_string(), "; expected [N, ", classes,
                              "] (one column per class label)");
    const int64_t rows = x.rank() == 1 ? 1 : x.shape()[0];
    NXRT_ASSIGN_OR_RETURN(Tensor values,
                          Tensor::allocate_uninitialized(DataType::kFloat, Shape{rows, classes}));
    std::copy(x.data<float>(), x.data<float>() + x.numel(), values.data<float>());
    return ctx.set_output_sequence(0, TensorSequence{keys_, std::move(values)});
  }

 private:
  Tensor keys_;
};

}  // namespace

Expected<KernelPtr> create_zip_map(KernelInit& init) {
  if (init.input_type(0) != DataType::kFloat) return init.unsupported_type(0);
  AttrReader attrs(init.node);
  const std::vector<int64_t> ints = attrs.get_ints("classlabels_int64s");
  const std::vector<std::string> strings = attrs.get_strings("classlabels_strings");
  NXRT_RETURN_IF_ERROR(attrs.status());
  if (ints.empty() == strings.empty())
    return init.error(StatusCode::kInvalidGraph,
                      "needs exactly one of classlabels_int64s and classlabels_strings");
  const Shape shape{int64_t(std::max(ints.size(), strings.size()))};
  NXRT_ASSIGN_OR_RETURN(
      Tensor keys, Tensor::allocate(ints.empty() ? DataType::kString : DataType::kInt64, shape));
  if (!ints.empty())
    std::copy(ints.begin(), ints.end(), keys.data<int64_t>());
  else
    std::copy(strings.begin(), strings.end(), keys.data<std::string>());
  init.set_all_outputs(DataType::kFloat);
  init.output_kinds[0] = ValueKind::kMapSequence;
  return make_kernel<ZipMapKernel>(std::move(keys));
}

}  // namespace nxrt::cpu
