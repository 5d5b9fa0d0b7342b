// One query row of attention on AVX-512 (decode steps: a new token against its cache).
// The portable path (attention_rows.h) spends most of its time on what vectorizes here: a
// horizontal sum per key in SSE-width pieces, a libm exp per key and a 4-wide weighted
// sum of the values. Here a key's score is V vector FMAs and one reduction, the exps go
// through vmath's vector exp (softmax_weights), and the values accumulate in V zmm
// registers.
#include <immintrin.h>

#include "ep/cpu/gemm/gemm.h"
#include "ep/cpu/kernels/attention_rows.h"

#if defined(__GNUC__) && !defined(__clang__)
// GCC 12's AVX-512 reduction intrinsics start from _mm512_undefined_ps(), which its flow
// analysis reports as "may be used uninitialized" once inlined (a known false positive).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace nxrt::cpu {
namespace {

template <int V>
__attribute__((target("avx512f"))) void attend_row(const float* q, const float* k_rows,
                                                   const float* v_rows, const AttendRow& a,
                                                   float* scores, float* o) {
  constexpr int64_t D = 16 * V;
  __m512 qv[V];
  for (int v = 0; v < V; ++v) qv[v] = _mm512_loadu_ps(q + 16 * v);
  for (int64_t j = a.first; j <= a.last; ++j) {
    const float* k = k_rows + j * D;
    __m512 acc = _mm512_mul_ps(qv[0], _mm512_loadu_ps(k));
    for (int v = 1; v < V; ++v) acc = _mm512_fmadd_ps(qv[v], _mm512_loadu_ps(k + 16 * v), acc);
    scores[j] = _mm512_reduce_add_ps(acc) * a.scale;
  }
  const int64_t n = a.last + 1 - a.first;
  float* s = scores + a.first;
  const float inv = softmax_weights(s, n, a.softcap, a.smooth_softmax);
  __m512 acc[V];
  for (int v = 0; v < V; ++v) acc[v] = _mm512_setzero_ps();
  for (int64_t j = 0; j < n; ++j) {
    const __m512 p = _mm512_set1_ps(s[j] * inv);
    const float* vr = v_rows + (a.first + j) * D;
    for (int v = 0; v < V; ++v) acc[v] = _mm512_fmadd_ps(p, _mm512_loadu_ps(vr + 16 * v), acc[v]);
  }
  for (int v = 0; v < V; ++v) _mm512_storeu_ps(o + 16 * v, acc[v]);
}

}  // namespace

bool attend_row_avx512(const float* q, const float* k_rows, const float* v_rows, int64_t D,
                       const AttendRow& a, float* scores, float* o) {
  static const bool available = gemm::has_avx512f();
  if (!available) return false;
  switch (D) {
    case 16:
      attend_row<1>(q, k_rows, v_rows, a, scores, o);
      return true;
    case 32:
      attend_row<2>(q, k_rows, v_rows, a, scores, o);
      return true;
    case 64:
      attend_row<4>(q, k_rows, v_rows, a, scores, o);
      return true;
    case 128:
      attend_row<8>(q, k_rows, v_rows, a, scores, o);
      return true;
    default:
      return false;
  }
}

}  // namespace nxrt::cpu
