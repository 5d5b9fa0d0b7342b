// The pieces of one query row of attention that GroupQueryAttention and
// MultiHeadAttention share: the q.k dot product and the softmax-weighted sum of values.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace nxrt::cpu {

// Eight independent partial sums, so the compiler vectorizes without reassociating.
inline float attention_dot(const float* a, const float* b, int64_t n) {
  float part[8] = {};
  int64_t k = 0;
  for (; k + 8 <= n; k += 8)
    for (int j = 0; j < 8; ++j) part[j] += a[k + j] * b[k + j];
  for (; k < n; ++k) part[0] += a[k] * b[k];
  return ((part[0] + part[1]) + (part[2] + part[3])) + ((part[4] + part[5]) + (part[6] + part[7]));
}

// Softmax over scores[first..last] (`max` is their maximum; `extra` joins the
// denominator, as smooth softmax's virtual sink does), then o[0..dv) = the sum over j of
// p_j times value row j (v + j * dv). Overwrites scores with the unnormalized weights.
inline void attend_values(float* scores, int64_t first, int64_t last, float max, float extra,
                          const float* v, int64_t dv, float* o) {
  float sum = extra;
  for (int64_t j = first; j <= last; ++j) {
    scores[j] = std::exp(scores[j] - max);
    sum += scores[j];
  }
  std::fill(o, o + dv, 0.0f);
  const float inv = 1.0f / sum;
  for (int64_t j = first; j <= last; ++j) {
    const float p = scores[j] * inv;
    const float* vj = v + j * dv;
    for (int64_t d = 0; d < dv; ++d) o[d] += p * vj[d];
  }
}

}  // namespace nxrt::cpu
