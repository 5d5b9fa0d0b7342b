// The pieces of attention that GroupQueryAttention, MultiHeadAttention and the packed-QKV
// Attention share: the q.k dot product, the softmax-weighted sum of values, the
// attention_bias input and the split of (batch, head) pairs across threads.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "core/parallel.h"
#include "core/scratch.h"
#include "core/status.h"
#include "core/tensor.h"
#include "ep/cpu/vmath/vmath.h"

namespace nxrt::cpu {

// An attention_bias input, [B or 1, N or 1, S, T] float (broadcast over batch and heads),
// read one score at a time; adds nothing when absent.
struct AttentionBias {
  const float* data = nullptr;
  int64_t per_batch = 0, per_head = 0, T = 0;
  float at(int64_t b, int64_t n, int64_t i, int64_t j) const {
    return data ? data[b * per_batch + n * per_head + i * T + j] : 0.0f;
  }
};

inline Status read_attention_bias(const Tensor* t, int64_t B, int64_t N, int64_t S, int64_t T,
                                  AttentionBias& out) {
  if (!t) return Status();
  const Shape& s = t->shape();
  if (t->dtype() != DataType::kFloat || s.size() != 4 || (s[0] != 1 && s[0] != B) ||
      (s[1] != 1 && s[1] != N) || s[2] != S || s[3] != T)
    return invalid_argument("attention_bias shape ", s.to_string(), " must be [", B, " or 1, ", N,
                            " or 1, ", S, ", ", T, "] float");
  out.data = t->data<float>();
  out.per_head = s[1] == 1 ? 0 : S * T;
  out.per_batch = s[0] == 1 ? 0 : s[1] * S * T;
  out.T = T;
  return Status();
}

// Runs fn(b, n, scores) for every (batch, head) pair, split across the intra-op threads
// when `work` (multiply-adds) is worth it; `scores` is per-thread scratch of `row` floats.
template <typename Fn>
void for_each_head(int64_t B, int64_t N, double work, size_t row, Fn&& fn) {
  const size_t pieces = parallel_pieces(work, double(1 << 17));
  const size_t tasks = size_t(B * N), per_piece = (tasks + pieces - 1) / pieces;
  parallel_for(pieces, [&](size_t piece) {
    float* scores = scratch<float>(ScratchSlot::kKernel2, row);
    for (size_t task = piece * per_piece; task < std::min(tasks, (piece + 1) * per_piece); ++task)
      fn(int64_t(task) / N, int64_t(task) % N, scores);
  });
}

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

// Softmax weights of one query row's scores s[0, n) in place, unnormalized: each score
// softcapped (softcap * tanh(s / softcap)) when softcap > 0, then exp(s - max) by vmath's
// vector exp. Returns 1 / their sum (with smooth softmax's sink at 0 in the max and the
// sum). The matrix-product and AVX-512 row paths share it; attend_values keeps libm's exp.
inline float softmax_weights(float* s, int64_t n, float softcap, bool smooth_softmax) {
  float max = -std::numeric_limits<float>::infinity();
  for (int64_t j = 0; j < n; ++j) {
    if (softcap > 0.0f) s[j] = softcap * std::tanh(s[j] / softcap);
    max = std::max(max, s[j]);
  }
  if (smooth_softmax) max = std::max(max, 0.0f);
  for (int64_t j = 0; j < n; ++j) s[j] -= max;
  vmath::unary(vmath::Unary::kExp, {}, s, s, size_t(n));
  float sum = smooth_softmax ? std::exp(-max) : 0.0f;
  for (int64_t j = 0; j < n; ++j) sum += s[j];
  return 1.0f / sum;
}

// One query row against keys [first, last] of one head (keys and values D floats a row):
// o = softmax(q.k * scale, softcapped when softcap > 0, with smooth softmax's sink)
// times the values, on AVX-512 (attention_row_avx512.cc). False, with nothing written,
// when this CPU lacks AVX-512 or D is not 16, 32, 64 or 128: the caller then takes
// attention_dot and attend_values. `scores` holds at least last + 1 floats.
struct AttendRow {
  int64_t first = 0, last = 0;
  float scale = 1.0f, softcap = 0.0f;
  bool smooth_softmax = false;
};
bool attend_row_avx512(const float* q, const float* k_rows, const float* v_rows, int64_t D,
                       const AttendRow& a, float* scores, float* o);

}  // namespace nxrt::cpu
