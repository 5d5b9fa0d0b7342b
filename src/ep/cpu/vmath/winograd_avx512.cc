// The Winograd F(2x2, 3x3) transforms (winograd.h) on AVX-512, 16 tiles of a tile row in
// the lanes. Tile j starts at column 2j: its columns are the even (2j, 2j + 2) and odd
// (2j + 1, 2j + 3) elements of the row, which two permutes pick from two loads.
#include <immintrin.h>

#include "ep/cpu/vmath/winograd.h"

#if defined(__GNUC__) && !defined(__clang__)
// GCC 12's AVX-512 intrinsics start from _mm512_undefined_ps(), which its flow analysis
// reports as "may be used uninitialized" once inlined (a known false positive).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace nxrt::vmath {
namespace {

__attribute__((target("avx512f"), always_inline)) inline __mmask16 first_lanes(int64_t n) {
  return n >= 16 ? __mmask16(0xFFFF) : n <= 0 ? __mmask16(0) : __mmask16((1u << n) - 1);
}

// B^T d on four rows: t0 = d0 - d2, t1 = d1 + d2, t2 = d2 - d1, t3 = d1 - d3.
__attribute__((target("avx512f"), always_inline)) inline void vertical(const __m512 (&d)[4],
                                                                       __m512 (&t)[4]) {
  t[0] = _mm512_sub_ps(d[0], d[2]);
  t[1] = _mm512_add_ps(d[1], d[2]);
  t[2] = _mm512_sub_ps(d[2], d[1]);
  t[3] = _mm512_sub_ps(d[1], d[3]);
}

}  // namespace

void winograd_f23_filter(const float* g, float* u, int64_t u_step) {
  // t = G g (4 x 3), then u = t G^T (4 x 4).
  float t[4][3];
  for (int c = 0; c < 3; ++c) {
    const float g0 = g[c], g1 = g[3 + c], g2 = g[6 + c];
    t[0][c] = g0;
    t[1][c] = 0.5f * (g0 + g1 + g2);
    t[2][c] = 0.5f * (g0 - g1 + g2);
    t[3][c] = g2;
  }
  for (int k = 0; k < 4; ++k) {
    const float a = t[k][0], b = t[k][1], c = t[k][2];
    u[(4 * k + 0) * u_step] = a;
    u[(4 * k + 1) * u_step] = 0.5f * (a + b + c);
    u[(4 * k + 2) * u_step] = 0.5f * (a - b + c);
    u[(4 * k + 3) * u_step] = c;
  }
}

void winograd_f43_filter(const float* g, float* u, int64_t u_step) {
  // G times a 3-vector (a, b, c).
  auto column = [](double a, double b, double c, double(&out)[6]) {
    out[0] = a / 4;
    out[1] = -(a + b + c) / 6;
    out[2] = -(a - b + c) / 6;
    out[3] = a / 24 + b / 12 + c / 6;
    out[4] = a / 24 - b / 12 + c / 6;
    out[5] = c;
  };
  double t[3][6];  // t[c] = G g[:, c]: the columns of G g (6 x 3)
  for (int c = 0; c < 3; ++c) column(g[c], g[3 + c], g[6 + c], t[c]);
  for (int k = 0; k < 6; ++k) {
    double row[6];  // row k of (G g) G^T = G applied to row k of G g
    column(t[0][k], t[1][k], t[2][k], row);
    for (int l = 0; l < 6; ++l) u[(6 * k + l) * u_step] = float(row[l]);
  }
}

__attribute__((target("avx512f"))) void winograd_f23_input(const float* p, int64_t ld,
                                                           int64_t count, float* v,
                                                           int64_t v_step) {
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
  // Rows 0-3 of the tiles: columns [0, 32) and [2, 34) from the tile row's start.
  __m512 lo[4], hi[4], lo2[4], hi2[4];
  for (int r = 0; r < 4; ++r) {
    const float* row = p + r * ld;
    lo[r] = _mm512_loadu_ps(row);
    hi[r] = _mm512_loadu_ps(row + 16);
    lo2[r] = _mm512_loadu_ps(row + 2);
    hi2[r] = _mm512_loadu_ps(row + 18);
  }
  // B^T d: the rows' combinations, on whole loads (linear, so before the permutes).
  __m512 tlo[4], thi[4], tlo2[4], thi2[4];
  vertical(lo, tlo);
  vertical(hi, thi);
  vertical(lo2, tlo2);
  vertical(hi2, thi2);
  const __mmask16 keep = first_lanes(count);
  for (int k = 0; k < 4; ++k) {
    // Column s of tile j: s = 0, 1 from (lo, hi), s = 2, 3 from (lo2, hi2).
    const __m512 c0 = _mm512_permutex2var_ps(tlo[k], even, thi[k]);
    const __m512 c1 = _mm512_permutex2var_ps(tlo[k], odd, thi[k]);
    const __m512 c2 = _mm512_permutex2var_ps(tlo2[k], even, thi2[k]);
    const __m512 c3 = _mm512_permutex2var_ps(tlo2[k], odd, thi2[k]);
    float* out = v + 4 * k * v_step;
    _mm512_mask_storeu_ps(out, keep, _mm512_sub_ps(c0, c2));
    _mm512_mask_storeu_ps(out + v_step, keep, _mm512_add_ps(c1, c2));
    _mm512_mask_storeu_ps(out + 2 * v_step, keep, _mm512_sub_ps(c2, c1));
    _mm512_mask_storeu_ps(out + 3 * v_step, keep, _mm512_sub_ps(c1, c3));
  }
}

__attribute__((target("avx512f"))) void winograd_f23_output(const float* m, int64_t m_step,
                                                            int64_t count, float* y, int64_t ldy,
                                                            int64_t rows, int64_t cols,
                                                            const WinogradEpilogue& e) {
  const __mmask16 keep = first_lanes(count);
  __m512 s[2][4];
  for (int l = 0; l < 4; ++l) {
    const __m512 m0 = _mm512_maskz_loadu_ps(keep, m + l * m_step);
    const __m512 m1 = _mm512_maskz_loadu_ps(keep, m + (4 + l) * m_step);
    const __m512 m2 = _mm512_maskz_loadu_ps(keep, m + (8 + l) * m_step);
    const __m512 m3 = _mm512_maskz_loadu_ps(keep, m + (12 + l) * m_step);
    s[0][l] = _mm512_add_ps(_mm512_add_ps(m0, m1), m2);
    s[1][l] = _mm512_sub_ps(_mm512_sub_ps(m1, m2), m3);
  }
  // Outputs (r, 2j) and (r, 2j + 1) interleaved into 32 consecutive floats.
  const __m512i first = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  const __m512i second = _mm512_add_epi32(first, _mm512_set1_epi32(8));
  const __m512 scale = _mm512_set1_ps(e.scale), shift = _mm512_set1_ps(e.shift);
  const __m512 lo = _mm512_set1_ps(e.lo), hi = _mm512_set1_ps(e.hi);
  const __mmask16 keep0 = first_lanes(cols), keep1 = first_lanes(cols - 16);
  for (int r = 0; r < rows; ++r) {
    const __m512 y0 = _mm512_add_ps(_mm512_add_ps(s[r][0], s[r][1]), s[r][2]);
    const __m512 y1 = _mm512_sub_ps(_mm512_sub_ps(s[r][1], s[r][2]), s[r][3]);
    __m512 a = _mm512_fmadd_ps(_mm512_permutex2var_ps(y0, first, y1), scale, shift);
    __m512 b = _mm512_fmadd_ps(_mm512_permutex2var_ps(y0, second, y1), scale, shift);
    if (e.z) {
      const float* z = e.z + r * e.ldz;
      a = _mm512_add_ps(a, _mm512_maskz_loadu_ps(keep0, z));
      b = _mm512_add_ps(b, _mm512_maskz_loadu_ps(keep1, z + 16));
    }
    // max(lo, x) and min(hi, x) return x when it is NaN (the second operand).
    a = _mm512_min_ps(hi, _mm512_max_ps(lo, a));
    b = _mm512_min_ps(hi, _mm512_max_ps(lo, b));
    _mm512_mask_storeu_ps(y + r * ldy, keep0, a);
    _mm512_mask_storeu_ps(y + r * ldy + 16, keep1, b);
  }
}

}  // namespace nxrt::vmath
