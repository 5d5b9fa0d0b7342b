// ai.onnx.ml LinearClassifier and LinearRegressor: scores = X * coefficients^T +
// intercepts per row (in double), then the post transform; the classifier also picks each
// row's label. A classifier with one coefficient row and two labels is binary, scored as
// onnxruntime does (the onnx reference differs): [1 - v, v] with v the logistic of s under
// LOGISTIC and s itself under every other transform, the second label when s > 0.
#include <algorithm>
#include <string>
#include <vector>

#include "ep/cpu/kernels/common.h"
#include "ep/cpu/kernels/ml_common.h"

namespace nxrt::cpu {
namespace {

// X as rows of doubles: [N, F] or one row [F]. F may be below the coefficients' count per
// target: onnxruntime then reads the coefficients as [targets, F] (its datasets'
// logreg_iris.onnx declares 2 features for 4 per class, and runs), so nxrt does too.
Status read_features(const Tensor& x, int64_t features, std::vector<double>& values,
                     int64_t& rows) {
  int64_t cols = 0;
  NXRT_RETURN_IF_ERROR(read_feature_rows(x, values, rows, cols));
  if (cols > features || cols == 0)
    return invalid_argument("X has ", cols, " features; the coefficients are for ", features);
  return Status();
}

struct LinearModel {
  std::vector<double> coefficients;  // targets x features
  std::vector<double> intercepts;    // targets, or empty
  int64_t targets = 1, features = 0;
  PostTransform post = PostTransform::kNone;

  // scores (rows x targets) of X.
  Status scores(const Tensor& x, std::vector<double>& out, int64_t& rows) const {
    std::vector<double> xs;
    NXRT_RETURN_IF_ERROR(read_features(x, features, xs, rows));
    const int64_t cols = x.shape().back();
    out.assign(size_t(rows * targets), 0.0);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t t = 0; t < targets; ++t) {
        double acc = intercepts.empty() ? 0.0 : intercepts[size_t(t)];
        for (int64_t f = 0; f < cols; ++f)
          acc += xs[size_t(r * cols + f)] * coefficients[size_t(t * cols + f)];
        out[size_t(r * targets + t)] = acc;
      }
    return Status();
  }
};

class LinearRegressorKernel final : public Kernel {
 public:
  explicit LinearRegressorKernel(LinearModel m) : m_(std::move(m)) {}
  Status compute(KernelContext& ctx) const override {
    std::vector<double> scores;
    int64_t rows = 0;
    NXRT_RETURN_IF_ERROR(m_.scores(*ctx.input(0), scores, rows));
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, Shape{rows, m_.targets}));
    for (int64_t r = 0; r < rows; ++r)
      post_transform(m_.post, scores.data() + r * m_.targets, m_.targets);
    for (size_t i = 0; i < scores.size(); ++i) y->data<float>()[i] = float(scores[i]);
    return Status();
  }

 private:
  LinearModel m_;
};

class LinearClassifierKernel final : public Kernel {
 public:
  LinearClassifierKernel(LinearModel m, std::vector<int64_t> int_labels,
                         std::vector<std::string> str_labels)
      : m_(std::move(m)), int_labels_(std::move(int_labels)), str_labels_(std::move(str_labels)) {}

  Status compute(KernelContext& ctx) const override {
    std::vector<double> raw;
    int64_t rows = 0;
    NXRT_RETURN_IF_ERROR(m_.scores(*ctx.input(0), raw, rows));
    const int64_t labels = int64_t(std::max(int_labels_.size(), str_labels_.size()));
    const bool binary = m_.targets == 1 && labels == 2;
    const int64_t width = binary ? 2 : m_.targets;
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, Shape{rows}));
    NXRT_ASSIGN_OR_RETURN(Tensor * z, ctx.output(1, Shape{rows, width}));
    std::vector<double> row(static_cast<size_t>(width));
    for (int64_t r = 0; r < rows; ++r) {
      int64_t best = 0;
      if (binary) {
        const double s = raw[size_t(r)];
        double v = s;
        if (m_.post == PostTransform::kLogistic) post_transform(m_.post, &v, 1);
        row[0] = 1.0 - v;
        row[1] = v;
        best = s > 0 ? 1 : 0;
      } else {
        std::copy(raw.begin() + r * width, raw.begin() + (r + 1) * width, row.begin());
        // The highest score before the transform wins (as in onnxruntime: PROBIT makes
        // scores outside (0, 1) NaN).
        for (int64_t c = 1; c < width; ++c)
          if (row[size_t(c)] > row[size_t(best)]) best = c;
        post_transform(m_.post, row.data(), width);
      }
      for (int64_t c = 0; c < width; ++c) z->data<float>()[r * width + c] = float(row[size_t(c)]);
      if (width == 1) {
        // One score and not two labels: the first label when it passes the threshold,
        // else 0 (or "").
        const double threshold = m_.post == PostTransform::kNone ? 0.0 : 0.5;
        best = row[0] >= threshold ? 0 : -1;
      }
      if (!str_labels_.empty())
        y->data<std::string>()[r] = best < 0 ? std::string() : str_labels_[size_t(best)];
      else if (!int_labels_.empty())
        y->data<int64_t>()[r] = best < 0 ? 0 : int_labels_[size_t(best)];
      else
        y->data<int64_t>()[r] = best < 0 ? 0 : best;
    }
    return Status();
  }

 private:
  LinearModel m_;
  std::vector<int64_t> int_labels_;
  std::vector<std::string> str_labels_;
};

bool features_type_ok(DataType t) {
  return t == DataType::kFloat || t == DataType::kDouble || t == DataType::kInt64 ||
         t == DataType::kInt32;
}

// Reads coefficients, intercepts and post_transform for `targets` score columns.
// A classifier (`labels` > 0, targets 0) has one coefficient row per intercept, else one
// per label, or a single row for a binary model.
Expected<LinearModel> read_model(KernelInit& init, AttrReader& attrs, int64_t targets,
                                 size_t labels = 0) {
  LinearModel m;
  for (float v : attrs.get_floats("coefficients")) m.coefficients.push_back(v);
  for (float v : attrs.get_floats("intercepts")) m.intercepts.push_back(v);
  NXRT_ASSIGN_OR_RETURN(m.post, parse_post(attrs.get_string("post_transform", "NONE")));
  NXRT_RETURN_IF_ERROR(attrs.status());
  if (targets == 0)
    targets = !m.intercepts.empty()                               ? int64_t(m.intercepts.size())
              : labels > 0 && m.coefficients.size() % labels == 0 ? int64_t(labels)
                                                                  : 1;
  m.targets = targets;
  if (targets <= 0 || m.coefficients.empty() || m.coefficients.size() % size_t(targets) != 0)
    return init.error(StatusCode::kInvalidGraph, "coefficients has ", m.coefficients.size(),
                      " values; expected a positive multiple of the ", targets, " targets");
  if (!m.intercepts.empty() && int64_t(m.intercepts.size()) != targets)
    return init.error(StatusCode::kInvalidGraph, "intercepts has ", m.intercepts.size(),
                      " values; expected ", targets);
  m.features = int64_t(m.coefficients.size()) / targets;
  return m;
}

}  // namespace

Expected<KernelPtr> create_linear_regressor(KernelInit& init) {
  if (!features_type_ok(init.input_type(0))) return init.unsupported_type(0);
  AttrReader attrs(init.node);
  const int64_t targets = attrs.get_int("targets", 1);
  NXRT_ASSIGN_OR_RETURN(LinearModel m, read_model(init, attrs, targets));
  init.set_all_outputs(DataType::kFloat);
  return make_kernel<LinearRegressorKernel>(std::move(m));
}

Expected<KernelPtr> create_linear_classifier(KernelInit& init) {
  if (!features_type_ok(init.input_type(0))) return init.unsupported_type(0);
  AttrReader attrs(init.node);
  std::vector<int64_t> ints = attrs.get_ints("classlabels_ints");
  std::vector<std::string> strings = attrs.get_strings("classlabels_strings");
  NXRT_RETURN_IF_ERROR(attrs.status());
  if (!ints.empty() && !strings.empty())
    return init.error(StatusCode::kInvalidGraph,
                      "has both classlabels_ints and classlabels_strings; expected one");
  const size_t labels = std::max(ints.size(), strings.size());
  NXRT_ASSIGN_OR_RETURN(LinearModel m, read_model(init, attrs, 0, labels));
  if (labels > 0 && !(m.targets == int64_t(labels) || (m.targets == 1 && labels <= 2)))
    return init.error(StatusCode::kInvalidGraph, "has ", labels, " class labels for ", m.targets,
                      " coefficient rows");
  init.set_all_outputs(DataType::kFloat);
  init.output_types[0] = strings.empty() ? DataType::kInt64 : DataType::kString;
  return make_kernel<LinearClassifierKernel>(std::move(m), std::move(ints), std::move(strings));
}

}  // namespace nxrt::cpu
