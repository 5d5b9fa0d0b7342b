// AVX-512F micro-kernels, 12 x 32 and 8 x 48: 24 zmm accumulators + the B vectors + a
// broadcast fit the 32 registers. Both are one template over the vectors per panel (2 or
// 3). 8 x 48 leaves no partial row tile when rows come in multiples of 8 (output
// channels); 12 x 32 none when columns come in multiples of 32 (hidden sizes); the
// driver picks by shape. Only these functions are compiled for AVX-512 (target
// attribute); the driver calls them only when the CPU (and OS) support it.
#include <immintrin.h>

#include <algorithm>

#include "ep/cpu/gemm/gemm_internal.h"

#if defined(__GNUC__) && !defined(__clang__)
// GCC 12's AVX-512 min/max intrinsics start from _mm512_undefined_ps(), which its flow
// analysis reports as "may be used uninitialized" once inlined (a known false positive).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace nxrt::gemm::detail {

namespace {

// Where row k of B panel q starts. Strided: panels `panel` apart, rows `row` apart
// (packed panels, or a row-major B read in place). Rows: row k of the first panel at
// rows[k] + col, the next panels NR floats further on (a B whose rows are views into
// another buffer: the shifted input rows of a direct convolution).
struct StridedB {
  const float* b;
  int64_t row, panel;
  const float* at(int64_t k, int q) const { return b + q * panel + k * row; }
  StridedB panels_from(int64_t q) const { return {b + q * panel, row, panel}; }
  bool packed() const { return panel > row; }
};
template <int NR>
struct RowsB {
  const float* const* rows;
  int64_t col;
  const float* at(int64_t k, int q) const { return rows[k] + col + q * NR; }
  RowsB panels_from(int64_t q) const { return {rows, col + q * NR}; }
  static constexpr bool packed() { return false; }
};

// Rows ahead that packed panels are prefetched (a prefetch past a panel's end lands in the
// next panel or past the buffer: prefetches do not fault).
constexpr int64_t kPackedAhead = 12;

// The last K slice of a direct convolution: each tile row m (output channel row0 + m) is
// scaled, shifted and clamped in registers, then its columns go to their places in Y. The
// product's column p is output position (p / wp, p % wp) with p % wp >= ow dropped; the
// kept lanes of a vector land on consecutive floats of Y (a row's end joins the next
// row's start), so one compressing store writes each vector. C holds the earlier slices'
// sums when beta is 1.
template <int V, int R>
__attribute__((target("avx512f"), always_inline)) inline void store_conv(
    __m512 (&acc)[R][V], const __mmask16 (&valid)[V], int64_t col, const ConvOutput& o,
    int64_t row0, const float* c, int64_t rs_c, float beta) {
  __mmask16 keep[V];
  int64_t at[V];
  // Lanes [0, n) as a mask, n clamped to [0, 16].
  auto lanes_below = [](int64_t n) { return n <= 0 ? 0u : n >= 16 ? 0xFFFFu : (1u << n) - 1; };
  if (o.wp == o.ow) {  // no dropped column: the tile's columns are Y's positions
#pragma GCC unroll 12
    for (int v = 0; v < V; ++v) {
      keep[v] = valid[v];
      at[v] = col + 16 * v;
    }
  } else if (o.wp >= 16) {
    // A vector's 16 columns span at most two rows: the kept ones are the first
    // ow - c0 lanes (c0: its first column's place in its row) and, from lane wp - c0
    // where the next row starts, the next ow lanes.
    const int64_t p0 = col;
    int64_t oh = p0 / o.wp, c0 = p0 % o.wp;
#pragma GCC unroll 12
    for (int v = 0; v < V; ++v) {
      const int64_t next_row = o.wp - c0;
      const unsigned first = lanes_below(o.ow - c0);
      const unsigned second = lanes_below(next_row + o.ow) & ~lanes_below(next_row);
      keep[v] = __mmask16((first | second) & valid[v]);
      at[v] = first ? oh * o.ow + c0 : (oh + 1) * o.ow;
      c0 += 16;
      if (c0 >= o.wp) {
        c0 -= o.wp;
        ++oh;
      }
    }
  } else {
#pragma GCC unroll 12
    for (int v = 0; v < V; ++v) {
      const int64_t p = col + 16 * v;
      int64_t oh = p / o.wp, ow = p % o.wp;
      unsigned bits = 0;
      at[v] = -1;
      for (int i = 0; i < 16; ++i) {
        if ((valid[v] >> i & 1) && ow < o.ow) {
          bits |= 1u << i;
          if (at[v] < 0) at[v] = oh * o.ow + ow;
        }
        if (++ow == o.wp) {
          ow = 0;
          ++oh;
        }
      }
      keep[v] = __mmask16(bits);
    }
  }
  const __m512 lo = _mm512_set1_ps(o.lo), hi = _mm512_set1_ps(o.hi);
#pragma GCC unroll 12
  for (int r = 0; r < R; ++r) {
    const int64_t m = row0 + r;
    const __m512 scale = _mm512_set1_ps(o.scale ? o.scale[m] : 1.0f);
    const __m512 shift = _mm512_set1_ps(o.shift ? o.shift[m] : 0.0f);
    float* y = o.y + m * o.plane;
#pragma GCC unroll 12
    for (int v = 0; v < V; ++v) {
      if (!keep[v]) continue;
      __m512 out = acc[r][v];
      if (beta != 0.0f)
        out = _mm512_add_ps(out, _mm512_maskz_loadu_ps(valid[v], c + r * rs_c + 16 * v));
      out = _mm512_fmadd_ps(out, scale, shift);
      // Z's values sit where Y's go: expand-load is compress-store's inverse.
      if (o.z)
        out = _mm512_add_ps(out, _mm512_maskz_expandloadu_ps(keep[v], o.z + m * o.plane + at[v]));
      // max(lo, x) and min(hi, x) return x when it is NaN (the second operand).
      out = _mm512_min_ps(hi, _mm512_max_ps(lo, out));
      _mm512_mask_compressstoreu_ps(y + at[v], keep[v], out);
    }
  }
}

// Column j < cols of the 8 x 16 block acc[0..7][v] to c[j * cs_c .. + 8] (times alpha, plus
// beta times what is there unless beta is 0): unpacks and shuffles put each column's
// eight rows in one 128-bit lane pair, whose halves then go out as one 256-bit store.
template <int V>
__attribute__((target("avx512f"), always_inline)) inline void store_transposed_8x16(
    const __m512 (&acc)[8][V], int v, float* c, int64_t cs_c, float alpha, float beta,
    int64_t cols) {
  if (cols <= 0) return;
  __m512 t[8], u[8];
#pragma GCC unroll 4
  for (int h = 0; h < 2; ++h) {  // rows 0-3, then 4-7
    const __m512 a0 = acc[4 * h][v], a1 = acc[4 * h + 1][v];
    const __m512 a2 = acc[4 * h + 2][v], a3 = acc[4 * h + 3][v];
    t[4 * h] = _mm512_unpacklo_ps(a0, a1);
    t[4 * h + 1] = _mm512_unpackhi_ps(a0, a1);
    t[4 * h + 2] = _mm512_unpacklo_ps(a2, a3);
    t[4 * h + 3] = _mm512_unpackhi_ps(a2, a3);
    // Lane L of u[4h + q]: rows 4h .. 4h + 3 of column 4L + q.
    u[4 * h] = _mm512_shuffle_ps(t[4 * h], t[4 * h + 2], 0x44);
    u[4 * h + 1] = _mm512_shuffle_ps(t[4 * h], t[4 * h + 2], 0xEE);
    u[4 * h + 2] = _mm512_shuffle_ps(t[4 * h + 1], t[4 * h + 3], 0x44);
    u[4 * h + 3] = _mm512_shuffle_ps(t[4 * h + 1], t[4 * h + 3], 0xEE);
  }
  const __m256 va = _mm256_set1_ps(alpha), vb = _mm256_set1_ps(beta);
#pragma GCC unroll 4
  for (int q = 0; q < 4; ++q) {
    // [u_q L0, u_q L1, u_{4+q} L0, u_{4+q} L1] reordered to [u_q L0, u_{4+q} L0, u_q L1,
    // u_{4+q} L1]: columns q and 4 + q; the same from lanes 2 and 3.
    const __m512 lanes01 = _mm512_shuffle_f32x4(u[q], u[4 + q], _MM_SHUFFLE(1, 0, 1, 0));
    const __m512 lanes23 = _mm512_shuffle_f32x4(u[q], u[4 + q], _MM_SHUFFLE(3, 2, 3, 2));
    const __m512 low = _mm512_shuffle_f32x4(lanes01, lanes01, _MM_SHUFFLE(3, 1, 2, 0));
    const __m512 high = _mm512_shuffle_f32x4(lanes23, lanes23, _MM_SHUFFLE(3, 1, 2, 0));
    const __m256 column[4] = {_mm512_castps512_ps256(low),
                              _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(low), 1)),
                              _mm512_castps512_ps256(high),
                              _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(high), 1))};
#pragma GCC unroll 4
    for (int L = 0; L < 4; ++L) {
      const int64_t j = 4 * L + q;
      if (j >= cols) continue;
      float* dst = c + j * cs_c;
      __m256 out = _mm256_mul_ps(va, column[L]);
      if (beta != 0.0f) out = _mm256_add_ps(_mm256_mul_ps(vb, _mm256_loadu_ps(dst)), out);
      _mm256_storeu_ps(dst, out);
    }
  }
}

// acc += A (R x kc) * B (kc x NP panels), each B vector loaded under its mask when
// kMasked.
template <int VECS, int R, int NP, bool kMasked, typename BSource>
__attribute__((target("avx512f"), always_inline)) inline void accumulate(
    int64_t kc, const float* a, int64_t ak, const BSource& b,
    const __mmask16 (&load_mask)[VECS * NP], __m512 (&acc)[R][VECS * NP]) {
  constexpr int kVecs = VECS, V = VECS * NP;
  for (int64_t k = 0; k < kc; ++k) {
    __m512 bv[V];
#pragma GCC unroll 4
    for (int q = 0; q < NP; ++q)
#pragma GCC unroll 3
      for (int s = 0; s < kVecs; ++s) {
        const float* src = b.at(k, q) + 16 * s;
        if constexpr (kMasked)
          bv[q * kVecs + s] = _mm512_maskz_loadu_ps(load_mask[q * kVecs + s], src);
        else
          bv[q * kVecs + s] = _mm512_loadu_ps(src);
      }
    // The next panel's row k: a B read in place has its rows far apart (one page each),
    // where the hardware prefetchers lose track. Packed panels (rows NR floats apart) are
    // a whole L1 long, so their next panel's row would be evicted before its use: they
    // prefetch a few rows ahead within each panel instead.
    if (b.packed()) {
#pragma GCC unroll 4
      for (int q = 0; q < NP; ++q)
#pragma GCC unroll 3
        for (int s = 0; s < kVecs; ++s)
          _mm_prefetch(reinterpret_cast<const char*>(b.at(k + kPackedAhead, q) + 16 * s),
                       _MM_HINT_T0);
    } else {
      const float* next = b.at(k, NP);
#pragma GCC unroll 3
      for (int s = 0; s < kVecs; ++s)
        _mm_prefetch(reinterpret_cast<const char*>(next + 16 * s), _MM_HINT_T0);
    }
    const float* ap = a + k * ak;
#pragma GCC unroll 12
    for (int r = 0; r < R; ++r) {
      const __m512 av = _mm512_set1_ps(ap[r]);
#pragma GCC unroll 12
      for (int v = 0; v < V; ++v) acc[r][v] = _mm512_fmadd_ps(av, bv[v], acc[r][v]);
    }
  }
}

// R rows x NP panels of 16 * VECS columns. Each C element is one sequential chain of FMAs over
// k (no split partial sums, so the rounding matches a plain dot product); with few rows,
// NP > 1 supplies the independent chains (~8 in flight) that hide the FMA latency.
// With `conv` (a RowsB product), the finished tile goes to a convolution's output instead
// of C (which then only holds the earlier K slices' sums): see ConvOutput.
template <int VECS, int R, int NP, typename BSource>
__attribute__((target("avx512f"), always_inline)) inline void tile(
    int64_t kc, const float* a, int64_t ak, const BSource& b, float* c, int64_t rs_c, int64_t cs_c,
    float alpha, float beta, int64_t nr, ConvTarget conv) {
  constexpr int kVecs = VECS, kNR = 16 * VECS;
  constexpr int V = kVecs * NP;  // accumulator vectors per row
  __m512 acc[R][V];
#pragma GCC unroll 12
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 12
    for (int v = 0; v < V; ++v) acc[r][v] = _mm512_setzero_ps();
  // Row-major C's tile lines are fetched while the tile's products run: its later K
  // slices read them back (beta 1) and every store would otherwise wait for its line
  // (256-1024 square and BM_SgemmPerKernel 1-3% faster, MiniLM at 128 tokens 2.4%).
  if (cs_c == 1 && !conv.out) {
#pragma GCC unroll 12
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 12
      for (int v = 0; v < V; ++v)
        _mm_prefetch(reinterpret_cast<const char*>(c + r * rs_c + 16 * v), _MM_HINT_T0);
  }
  // B given by row pointers is read only up to its last column (masked loads do not
  // fault): its rows may end at the end of a tensor. Packed panels are zero-padded.
  // Masked loads take an extra ALU micro-op on the FMA ports: full tiles load plainly.
  __mmask16 load_mask[V];
#pragma GCC unroll 12
  for (int v = 0; v < V; ++v) {
    const int64_t left = nr - 16 * v;
    load_mask[v] = left >= 16  ? __mmask16(0xFFFF)
                   : left <= 0 ? __mmask16(0)
                               : __mmask16((1u << left) - 1);
  }
  if constexpr (requires { b.col; }) {
    if (nr < V * 16) {
      accumulate<VECS, R, NP, true>(kc, a, ak, b, load_mask, acc);
    } else {
      accumulate<VECS, R, NP, false>(kc, a, ak, b, load_mask, acc);
    }
  } else {
    accumulate<VECS, R, NP, false>(kc, a, ak, b, load_mask, acc);
  }
  if (cs_c == 1) {
    // Row-major C: masked stores cover a partial last panel without spilling.
    const __mmask16(&mask)[V] = load_mask;
    const __m512 va = _mm512_set1_ps(alpha);
    const __m512 vb = _mm512_set1_ps(beta);
    if constexpr (requires { b.col; }) {
      if (conv.out) {
        store_conv<V, R>(acc, mask, b.col, *conv.out, conv.row0, c, rs_c, beta);
        return;
      }
    }
#pragma GCC unroll 12
    for (int r = 0; r < R; ++r) {
      float* row = c + r * rs_c;
#pragma GCC unroll 12
      for (int v = 0; v < V; ++v) {
        __m512 out = _mm512_mul_ps(va, acc[r][v]);
        if (beta != 0.0f)
          out = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(mask[v], row + 16 * v), out);
        _mm512_mask_storeu_ps(row + 16 * v, mask[v], out);
      }
    }
    return;
  }
  if constexpr (R == 8) {
    // Transposed C (element (r, j) at c[r + j * cs_c]): eight rows go out as eight
    // consecutive floats per column, transposed in registers.
    if (rs_c == 1) {
#pragma GCC unroll 12
      for (int v = 0; v < V; ++v)
        store_transposed_8x16(acc, v, c + 16 * v * cs_c, cs_c, alpha, beta, nr - 16 * v);
      return;
    }
  }
  // Transposed C: spill and store element by element.
  alignas(64) float spill[R * kNR * NP];
#pragma GCC unroll 12
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 12
    for (int v = 0; v < V; ++v) _mm512_store_ps(spill + (r * V + v) * 16, acc[r][v]);
  store_tile(spill, kNR * NP, c, rs_c, cs_c, alpha, beta, R, nr);
}

// Runs rows x nr (up to kPanelGroup panels) as tiles of NP panels, then single panels.
template <int VECS, int R, int NP, typename BSource>
__attribute__((target("avx512f"), always_inline)) inline void rows(
    int64_t kc, const float* a, int64_t ak, const BSource& b, float* c, int64_t rs_c, int64_t cs_c,
    float alpha, float beta, int64_t nr, ConvTarget conv) {
  constexpr int kNR = 16 * VECS;
  int64_t j = 0;
  if constexpr (NP > 1) {
    for (; j + kNR * (NP - 1) < nr; j += kNR * NP)
      tile<VECS, R, NP>(kc, a, ak, b.panels_from(j / kNR), c + j * cs_c, rs_c, cs_c, alpha, beta,
                        std::min<int64_t>(nr - j, kNR * NP), conv);
  }
  for (; j < nr; j += kNR) {
    const int64_t left = std::min<int64_t>(nr - j, kNR);
    // A partial last panel of packed or strided B runs only the vectors that hold columns:
    // a 64-wide product on 48-wide panels would otherwise compute 96 columns. (Not for the
    // row-pointer kernels: each variant is inlined into every row count's path, and the
    // sanitizer build's compile time of this file grew by minutes.)
    if constexpr (VECS > 1 && !requires { b.col; }) {
      if (left <= 16) {
        tile<1, R, 1>(kc, a, ak, b.panels_from(j / kNR), c + j * cs_c, rs_c, cs_c, alpha, beta,
                      left, conv);
        continue;
      }
    }
    if constexpr (VECS > 2 && !requires { b.col; }) {
      if (left <= 32) {
        tile<2, R, 1>(kc, a, ak, b.panels_from(j / kNR), c + j * cs_c, rs_c, cs_c, alpha, beta,
                      left, conv);
        continue;
      }
    }
    tile<VECS, R, 1>(kc, a, ak, b.panels_from(j / kNR), c + j * cs_c, rs_c, cs_c, alpha, beta, left,
                     conv);
  }
}

// Calls rows<VECS, mr, NP>: few rows take several panels at once (more FMA chains).
template <int VECS, int MR, typename BSource>
__attribute__((target("avx512f"), always_inline)) inline void dispatch(
    int64_t kc, const float* a, int64_t ak, const BSource& b, float* c, int64_t rs_c, int64_t cs_c,
    float alpha, float beta, int64_t mr, int64_t nr, ConvTarget conv = {}) {
#define NXRT_ROWS(R, NP) \
  return rows<VECS, R, NP>(kc, a, ak, b, c, rs_c, cs_c, alpha, beta, nr, conv)
  constexpr int kTwo = VECS == 2 ? 2 : 1;  // a third row of two panels still fits (2 x 32)
  switch (mr) {
    case 1:
      NXRT_ROWS(1, 4);
    case 2:
      NXRT_ROWS(2, 2);
    case 3:
      NXRT_ROWS(3, kTwo);
    case 4:
      NXRT_ROWS(4, 1);
    case 5:
      NXRT_ROWS(5, 1);
    case 6:
      NXRT_ROWS(6, 1);
    case 7:
      NXRT_ROWS(7, 1);
    case 8:
      NXRT_ROWS(8, 1);
  }
  if constexpr (MR > 8) {
    switch (mr) {
      case 9:
        NXRT_ROWS(9, 1);
      case 10:
        NXRT_ROWS(10, 1);
      case 11:
        NXRT_ROWS(11, 1);
      default:
        NXRT_ROWS(12, 1);
    }
  }
#undef NXRT_ROWS
}

}  // namespace

__attribute__((target("avx512f"))) void micro_kernel_avx512_12x32(
    int64_t kc, const float* a, int64_t ak, const float* b, int64_t b_row, int64_t b_panel,
    float* c, int64_t rs_c, int64_t cs_c, float alpha, float beta, int64_t mr, int64_t nr) {
  dispatch<2, 12>(kc, a, ak, StridedB{b, b_row, b_panel}, c, rs_c, cs_c, alpha, beta, mr, nr);
}

__attribute__((target("avx512f"))) void micro_kernel_avx512_8x48(
    int64_t kc, const float* a, int64_t ak, const float* b, int64_t b_row, int64_t b_panel,
    float* c, int64_t rs_c, int64_t cs_c, float alpha, float beta, int64_t mr, int64_t nr) {
  dispatch<3, 8>(kc, a, ak, StridedB{b, b_row, b_panel}, c, rs_c, cs_c, alpha, beta, mr, nr);
}

__attribute__((target("avx512f"))) void micro_kernel_avx512_rows_12x32(
    int64_t kc, const float* a, int64_t ak, const float* const* b_rows, int64_t col, float* c,
    int64_t ldc, float beta, int64_t mr, int64_t nr) {
  dispatch<2, 12>(kc, a, ak, RowsB<32>{b_rows, col}, c, ldc, 1, 1.0f, beta, mr, nr);
}

__attribute__((target("avx512f"))) void micro_kernel_avx512_rows_8x48(
    int64_t kc, const float* a, int64_t ak, const float* const* b_rows, int64_t col, float* c,
    int64_t ldc, float beta, int64_t mr, int64_t nr) {
  dispatch<3, 8>(kc, a, ak, RowsB<48>{b_rows, col}, c, ldc, 1, 1.0f, beta, mr, nr);
}

__attribute__((target("avx512f"))) void micro_kernel_avx512_rows_conv_12x32(
    int64_t kc, const float* a, int64_t ak, const float* const* b_rows, int64_t col, const float* c,
    int64_t ldc, float beta, int64_t mr, int64_t nr, const ConvOutput& out, int64_t row0) {
  dispatch<2, 12>(kc, a, ak, RowsB<32>{b_rows, col}, const_cast<float*>(c), ldc, 1, 1.0f, beta, mr,
                  nr, ConvTarget{&out, row0});
}

__attribute__((target("avx512f"))) void micro_kernel_avx512_rows_conv_8x48(
    int64_t kc, const float* a, int64_t ak, const float* const* b_rows, int64_t col, const float* c,
    int64_t ldc, float beta, int64_t mr, int64_t nr, const ConvOutput& out, int64_t row0) {
  dispatch<3, 8>(kc, a, ak, RowsB<48>{b_rows, col}, const_cast<float*>(c), ldc, 1, 1.0f, beta, mr,
                 nr, ConvTarget{&out, row0});
}

}  // namespace nxrt::gemm::detail
