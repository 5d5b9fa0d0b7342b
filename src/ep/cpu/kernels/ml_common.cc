#include "ep/cpu/kernels/ml_common.h"

#include <algorithm>
#include <cmath>

#include "ep/cpu/kernels/common.h"

namespace nxrt::cpu {
namespace {

double probit(double p) {
  // The erf^-1 approximation onnxruntime and the onnx reference use (a = 0.147).
  const double x = 2 * p - 1;
  const double sgn = x < 0 ? -1.0 : 1.0;
  const double w = (1 - x) * (1 + x);
  if (w == 0) return 0;
  const double l = std::log(w);
  const double v = 2 / (M_PI * 0.147) + 0.5 * l;
  return 1.41421356 * sgn * std::sqrt(-v + std::sqrt(v * v - l / 0.147));
}

}  // namespace

void post_transform(PostTransform post, double* row, int64_t n) {
  switch (post) {
    case PostTransform::kNone:
      return;
    case PostTransform::kLogistic:
      for (int64_t i = 0; i < n; ++i) {
        const double e = std::exp(-std::abs(row[i]));
        row[i] = row[i] < 0 ? e / (1 + e) : 1 / (1 + e);
      }
      return;
    case PostTransform::kSoftmax: {
      const double m = *std::max_element(row, row + n);
      double s = 0;
      for (int64_t i = 0; i < n; ++i) s += (row[i] = std::exp(row[i] - m));
      for (int64_t i = 0; i < n; ++i) row[i] /= s;
      return;
    }
    case PostTransform::kSoftmaxZero: {
      // exact zeros stay out of the softmax (they are "no score")
      const double m = *std::max_element(row, row + n);
      double s = 0;
      for (int64_t i = 0; i < n; ++i) {
        row[i] = std::abs(row[i]) > 1e-7 ? std::exp(row[i] - m) : row[i] * std::exp(-m);
        s += row[i];
      }
      for (int64_t i = 0; i < n; ++i) row[i] = s == 0 ? 0.5 : row[i] / s;
      return;
    }
    case PostTransform::kProbit:
      for (int64_t i = 0; i < n; ++i) row[i] = probit(row[i]);
      return;
  }
}

Expected<PostTransform> parse_post(const std::string& s) {
  if (s == "NONE") return PostTransform::kNone;
  if (s == "SOFTMAX") return PostTransform::kSoftmax;
  if (s == "LOGISTIC") return PostTransform::kLogistic;
  if (s == "SOFTMAX_ZERO") return PostTransform::kSoftmaxZero;
  if (s == "PROBIT") return PostTransform::kProbit;
  return invalid_graph("unknown post_transform '", s, "'");
}

Status read_feature_rows(const Tensor& x, std::vector<double>& values, int64_t& rows,
                         int64_t& cols) {
  if (x.rank() != 1 && x.rank() != 2)
    return invalid_argument("X must have shape [N, F], got ", x.shape().to_string());
  rows = x.rank() == 1 ? 1 : x.shape()[0];
  cols = x.shape().back();
  values.resize(size_t(x.numel()));
  switch (x.dtype()) {
    NXRT_CASE(kFloat, std::copy(x.data<T>(), x.data<T>() + x.numel(), values.begin()))
    NXRT_CASE(kDouble, std::copy(x.data<T>(), x.data<T>() + x.numel(), values.begin()))
    NXRT_CASE(kInt64, std::copy(x.data<T>(), x.data<T>() + x.numel(), values.begin()))
    NXRT_CASE(kInt32, std::copy(x.data<T>(), x.data<T>() + x.numel(), values.begin()))
    NXRT_CASE(kFloat16,
              for (int64_t i = 0; i < x.numel(); ++i) values[size_t(i)] = float(x.data<T>()[i]))
    default:
      return invalid_argument("X of type ", dtype_name(x.dtype()),
                              " is not supported (float, double, int64, int32, float16)");
  }
  return Status();
}

}  // namespace nxrt::cpu
