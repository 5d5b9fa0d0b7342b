// What the ai.onnx.ml models (tree ensembles, linear and SVM models) share: the score
// transforms their post_transform attribute names.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"

namespace nxrt::cpu {

enum class PostTransform { kNone = 0, kSoftmax, kLogistic, kSoftmaxZero, kProbit };

// PostTransform from its attribute string (NONE, SOFTMAX, LOGISTIC, SOFTMAX_ZERO, PROBIT).
Expected<PostTransform> parse_post(const std::string& s);

// Applies `post` to one row of n scores in place.
void post_transform(PostTransform post, double* row, int64_t n);

}  // namespace nxrt::cpu
