#include "ep/cpu/kernels/ml_common.h"

#include <algorithm>
#include <cmath>

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

}  // namespace nxrt::cpu
