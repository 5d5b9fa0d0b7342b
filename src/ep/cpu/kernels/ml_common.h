// What the ai.onnx.ml models (tree ensembles, linear and SVM models) share: the score
// transforms their post_transform attribute names.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"

namespace nxrt::cpu {

enum class PostTransform { kNone = 0, kSoftmax, kLogistic, kSoftmaxZero, kProbit };

// PostTransform from its attribute string (NONE, SOFTMAX, LOGISTIC, SOFTMAX_ZERO, PROBIT).
Expected<PostTransform> parse_post(const std::string& s);

// Applies `post` to one row of n scores in place.
void post_transform(PostTransform post, double* row, int64_t n);

// The features X ([N, F], or [F] as one row) as doubles: float, double, int64, int32 or
// float16. Errors name X's rank or type.
Status read_feature_rows(const Tensor& x, std::vector<double>& values, int64_t& rows,
                         int64_t& cols);

}  // namespace nxrt::cpu
