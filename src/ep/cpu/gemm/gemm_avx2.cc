// AVX2+FMA micro-kernel. Only these functions are compiled for AVX2 (target attribute),
// so the library still runs on CPUs without it; the driver picks them at run time.
#include <immintrin.h>

#include <algorithm>
#include <cmath>

#include "ep/cpu/gemm/gemm_internal.h"

namespace nxrt::gemm::detail {

namespace {

// R rows x NP panels of 16 columns. Each C element is one sequential chain of FMAs over
// k (no split partial sums, so the rounding matches a plain dot product); with few rows,
// NP > 1 supplies the independent chains (~8 in flight) that hide the FMA latency.
template <int R, int NP>
__attribute__((target("avx2,fma"), always_inline)) inline void tile(
    int64_t kc, const float* a, int64_t ak, const float* b, int64_t b_row, int64_t b_panel,
    float* c, int64_t rs_c, int64_t cs_c, float alpha, float beta, int64_t nr) {
  constexpr int V = 2 * NP;  // accumulator vectors per row
  __m256 acc[R][V];
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v) acc[r][v] = _mm256_setzero_ps();
  for (int64_t k = 0; k < kc; ++k) {
    __m256 bv[V];
#pragma GCC unroll 4
    for (int q = 0; q < NP; ++q) {
      bv[2 * q] = _mm256_loadu_ps(b + q * b_panel + k * b_row);
      bv[2 * q + 1] = _mm256_loadu_ps(b + q * b_panel + k * b_row + 8);
    }
    const float* ap = a + k * ak;
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      const __m256 av = _mm256_broadcast_ss(ap + r);
#pragma GCC unroll 8
      for (int v = 0; v < V; ++v) acc[r][v] = _mm256_fmadd_ps(av, bv[v], acc[r][v]);
    }
  }
  if (nr == 16 * NP && cs_c == 1) {
    const __m256 va = _mm256_set1_ps(alpha);
    const __m256 vb = _mm256_set1_ps(beta);
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      float* row = c + r * rs_c;
#pragma GCC unroll 8
      for (int v = 0; v < V; ++v) {
        __m256 out = _mm256_mul_ps(va, acc[r][v]);
        if (beta != 0.0f) out = _mm256_fmadd_ps(vb, _mm256_loadu_ps(row + 8 * v), out);
        _mm256_storeu_ps(row + 8 * v, out);
      }
    }
    return;
  }
  // Edge or transposed tile: spill the accumulators and merge only the valid part.
  alignas(32) float spill[R * 16 * NP];
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v) _mm256_store_ps(spill + (r * V + v) * 8, acc[r][v]);
  store_tile(spill, 16 * NP, c, rs_c, cs_c, alpha, beta, R, nr);
}

// Runs rows x nr (up to kPanelGroup panels) as tiles of NP panels, then single panels.
template <int R, int NP>
__attribute__((target("avx2,fma"), always_inline)) inline void rows(
    int64_t kc, const float* a, int64_t ak, const float* b, int64_t b_row, int64_t b_panel,
    float* c, int64_t rs_c, int64_t cs_c, float alpha, float beta, int64_t nr) {
  int64_t j = 0;
  if constexpr (NP > 1) {
    for (; j + 16 * (NP - 1) < nr; j += 16 * NP)
      tile<R, NP>(kc, a, ak, b + j / 16 * b_panel, b_row, b_panel, c + j * cs_c, rs_c, cs_c, alpha,
                  beta, std::min<int64_t>(nr - j, 16 * NP));
  }
  for (; j < nr; j += 16)
    tile<R, 1>(kc, a, ak, b + j / 16 * b_panel, b_row, b_panel, c + j * cs_c, rs_c, cs_c, alpha,
               beta, std::min<int64_t>(nr - j, 16));
}

}  // namespace

__attribute__((target("avx2,fma"))) void micro_kernel_avx2_6x16(
    int64_t kc, const float* a, int64_t ak, const float* b, int64_t b_row, int64_t b_panel,
    float* c, int64_t rs_c, int64_t cs_c, float alpha, float beta, int64_t mr, int64_t nr) {
  // 6 rows: 12 accumulators + 2 B vectors + 1 broadcast = 15 of 16 ymm registers.
  switch (mr) {
    case 1:
      return rows<1, 4>(kc, a, ak, b, b_row, b_panel, c, rs_c, cs_c, alpha, beta, nr);
    case 2:
      return rows<2, 2>(kc, a, ak, b, b_row, b_panel, c, rs_c, cs_c, alpha, beta, nr);
    case 3:
      return rows<3, 1>(kc, a, ak, b, b_row, b_panel, c, rs_c, cs_c, alpha, beta, nr);
    case 4:
      return rows<4, 1>(kc, a, ak, b, b_row, b_panel, c, rs_c, cs_c, alpha, beta, nr);
    case 5:
      return rows<5, 1>(kc, a, ak, b, b_row, b_panel, c, rs_c, cs_c, alpha, beta, nr);
    default:
      return rows<6, 1>(kc, a, ak, b, b_row, b_panel, c, rs_c, cs_c, alpha, beta, nr);
  }
}

namespace {

// The row-pointer form (gemm_internal.h): row k of B at b_rows[k] + col, readable only up
// to column nr (masked loads past it do not fault). R rows x NP panels of 16 columns.
template <int R, int NP, bool kMasked>
__attribute__((target("avx2,fma"), always_inline)) inline void accumulate_rows(
    int64_t kc, const float* a, int64_t ak, const float* const* b_rows, int64_t col,
    const __m256i (&mask)[2 * NP], __m256 (&acc)[R][2 * NP]) {
  constexpr int V = 2 * NP;
  for (int64_t k = 0; k < kc; ++k) {
    const float* src = b_rows[k] + col;
    __m256 bv[V];
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v)
      bv[v] = kMasked ? _mm256_maskload_ps(src + 8 * v, mask[v]) : _mm256_loadu_ps(src + 8 * v);
    const float* ap = a + k * ak;
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      const __m256 av = _mm256_broadcast_ss(ap + r);
#pragma GCC unroll 8
      for (int v = 0; v < V; ++v) acc[r][v] = _mm256_fmadd_ps(av, bv[v], acc[r][v]);
    }
  }
}

// One finished value of a convolution's output (ConvOutput), as the vector path does it
// (compiled for FMA, so std::fma is the instruction rather than a library call).
__attribute__((target("avx2,fma"))) inline float conv_value(float v, float scale, float shift,
                                                            const float* z, const ConvOutput& o) {
  v = std::fma(v, scale, shift);
  if (z) v += *z;
  v = o.lo > v ? o.lo : v;  // NaN kept, as max(lo, v) and min(hi, v) keep it
  return o.hi < v ? o.hi : v;
}

// The last K slice of a direct convolution (ConvOutput): a vector's eight columns whose
// places in Y are consecutive (no dropped column among them) go out as one vector, the
// others lane by lane.
template <int R, int V>
__attribute__((target("avx2,fma"), always_inline)) inline void store_conv_rows(
    __m256 (&acc)[R][V], const __m256i (&mask)[V], int64_t col, int64_t nr, const ConvOutput& o,
    int64_t row0, const float* c, int64_t ldc, float beta) {
  const __m256 lo = _mm256_set1_ps(o.lo), hi = _mm256_set1_ps(o.hi);
#pragma GCC unroll 8
  for (int v = 0; v < V; ++v) {
    const int64_t lanes = std::min<int64_t>(8, nr - 8 * v);
    if (lanes <= 0) continue;
    const int64_t p0 = col + 8 * v, oh = p0 / o.wp, c0 = p0 % o.wp;
    const bool run = c0 + lanes <= o.ow;  // all kept, consecutive in Y
    const int64_t at = oh * o.ow + c0;
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      const int64_t m = row0 + r;
      const float scale = o.scale ? o.scale[m] : 1.0f, shift = o.shift ? o.shift[m] : 0.0f;
      __m256 out = acc[r][v];
      if (beta != 0.0f) out = _mm256_add_ps(out, _mm256_maskload_ps(c + r * ldc + 8 * v, mask[v]));
      const float* z = o.z ? o.z + m * o.plane : nullptr;
      float* y = o.y + m * o.plane;
      if (run) {
        out = _mm256_fmadd_ps(out, _mm256_set1_ps(scale), _mm256_set1_ps(shift));
        if (z) out = _mm256_add_ps(out, _mm256_maskload_ps(z + at, mask[v]));
        out = _mm256_min_ps(hi, _mm256_max_ps(lo, out));
        if (lanes == 8) {
          _mm256_storeu_ps(y + at, out);
        } else {
          _mm256_maskstore_ps(y + at, mask[v], out);
        }
        continue;
      }
      alignas(32) float lane[8];
      _mm256_store_ps(lane, out);
      for (int64_t i = 0; i < lanes; ++i) {
        const int64_t p = p0 + i, pw = p % o.wp;
        if (pw >= o.ow) continue;
        const int64_t place = p / o.wp * o.ow + pw;
        y[place] = conv_value(lane[i], scale, shift, z ? z + place : nullptr, o);
      }
    }
  }
}

template <int R, int NP>
__attribute__((target("avx2,fma"), always_inline)) inline void rows_tile(
    int64_t kc, const float* a, int64_t ak, const float* const* b_rows, int64_t col, float* c,
    int64_t ldc, float beta, int64_t nr, const ConvOutput* conv, int64_t row0) {
  constexpr int V = 2 * NP;
  __m256 acc[R][V];
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v) acc[r][v] = _mm256_setzero_ps();
  __m256i mask[V];
#pragma GCC unroll 8
  for (int v = 0; v < V; ++v) {
    const int64_t left = nr - 8 * v;
    mask[v] = left >= 8 ? _mm256_set1_epi32(-1)
                        : _mm256_cmpgt_epi32(_mm256_set1_epi32(int(std::max<int64_t>(left, 0))),
                                             _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  if (nr >= 8 * V) {
    accumulate_rows<R, NP, false>(kc, a, ak, b_rows, col, mask, acc);
  } else {
    accumulate_rows<R, NP, true>(kc, a, ak, b_rows, col, mask, acc);
  }
  if (conv) return store_conv_rows<R, V>(acc, mask, col, nr, *conv, row0, c, ldc, beta);
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) {
    float* row = c + r * ldc;
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v) {
      if (nr - 8 * v <= 0) continue;
      __m256 out = acc[r][v];
      if (beta != 0.0f) out = _mm256_add_ps(out, _mm256_maskload_ps(row + 8 * v, mask[v]));
      _mm256_maskstore_ps(row + 8 * v, mask[v], out);
    }
  }
}

template <int R, int NP>
__attribute__((target("avx2,fma"), always_inline)) inline void rows_of(
    int64_t kc, const float* a, int64_t ak, const float* const* b_rows, int64_t col, float* c,
    int64_t ldc, float beta, int64_t nr, const ConvOutput* conv, int64_t row0) {
  for (int64_t j = 0; j < nr; j += 16 * NP)
    rows_tile<R, NP>(kc, a, ak, b_rows, col + j, c + j, ldc, beta,
                     std::min<int64_t>(16 * NP, nr - j), conv, row0);
}

__attribute__((target("avx2,fma"))) void rows_dispatch(int64_t kc, const float* a, int64_t ak,
                                                       const float* const* b_rows, int64_t col,
                                                       float* c, int64_t ldc, float beta,
                                                       int64_t mr, int64_t nr,
                                                       const ConvOutput* conv, int64_t row0) {
  switch (mr) {
    case 1:
      return rows_of<1, 2>(kc, a, ak, b_rows, col, c, ldc, beta, nr, conv, row0);
    case 2:
      return rows_of<2, 2>(kc, a, ak, b_rows, col, c, ldc, beta, nr, conv, row0);
    case 3:
      return rows_of<3, 1>(kc, a, ak, b_rows, col, c, ldc, beta, nr, conv, row0);
    case 4:
      return rows_of<4, 1>(kc, a, ak, b_rows, col, c, ldc, beta, nr, conv, row0);
    case 5:
      return rows_of<5, 1>(kc, a, ak, b_rows, col, c, ldc, beta, nr, conv, row0);
    default:
      return rows_of<6, 1>(kc, a, ak, b_rows, col, c, ldc, beta, nr, conv, row0);
  }
}

}  // namespace

void micro_kernel_avx2_rows_6x16(int64_t kc, const float* a, int64_t ak, const float* const* b_rows,
                                 int64_t col, float* c, int64_t ldc, float beta, int64_t mr,
                                 int64_t nr) {
  rows_dispatch(kc, a, ak, b_rows, col, c, ldc, beta, mr, nr, nullptr, 0);
}

void micro_kernel_avx2_rows_conv_6x16(int64_t kc, const float* a, int64_t ak,
                                      const float* const* b_rows, int64_t col, const float* c,
                                      int64_t ldc, float beta, int64_t mr, int64_t nr,
                                      const ConvOutput& out, int64_t row0) {
  rows_dispatch(kc, a, ak, b_rows, col, const_cast<float*>(c), ldc, beta, mr, nr, &out, row0);
}

}  // namespace nxrt::gemm::detail
