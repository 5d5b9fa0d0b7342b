// The NCHWc convolutions and pools (nchwc.h) on AVX-512: one register per position's 16
// channels.
#include "ep/cpu/vmath/nchwc.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#include <algorithm>

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx2,fma"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx2,fma")
// GCC 12's AVX-512 intrinsics start from _mm512_undefined_ps(), which its flow analysis
// reports as "may be used uninitialized" once inlined (a known false positive).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace nxrt::vmath {
namespace {

constexpr int64_t kB = kNchwcBlock;
// Accumulators of a dense tile: output blocks x positions <= 24 of the 32 registers,
// leaving room for the weights and the broadcast input.
constexpr int kMaxTileBlocks = 4, kMaxTilePositions = 8;
// The weights one pass over a row reads (KiB; a 16 x 16 tap is 1 KiB), its input blocks
// summed before the partial sums are stored: as many as stay in a 48 KiB L1 cache next to
// the input rows, so every tile of the row reads them from there (measured on ResNet
// shapes: 36 KiB beat 144 KiB by 5-25%, 3x3 convolutions most).
constexpr int64_t kPassWeightsKiB = 36;

struct ConvTile {
  const float* x;                      // input at the chunk's first block
  int64_t offsets[kMaxTilePositions];  // where each position's window starts in it
  // Checked tiles (some window crosses the border): each position's window origin (row,
  // column, either may be negative), its taps outside the input read zeros.
  int64_t row0[kMaxTilePositions], col0[kMaxTilePositions];
  int64_t blocks;      // input blocks in the chunk
  int64_t last_lanes;  // channels of the chunk's last block
  const float* w;      // weights at the first output block and the chunk's first input block
  float* y;            // output at the first output block, row and position
  const float* z;      // the sum input at the same place, or null
  const float* bias;   // at the first output block
  bool first, last;    // the first / last chunk of input blocks
};

inline void finish(const NchwcEpilogue& e, float* y, int64_t n) {
  if (e.has_activation && e.activation != Unary::kRelu)
    unary(e.activation, e.params, y, y, size_t(n));
  if (e.post_scale != 1.0f || e.post_shift != 0.0f)
    for (int64_t i = 0; i < n; ++i) y[i] = y[i] * e.post_scale + e.post_shift;
}

// Sixteen zeros: the lanes a checked tile reads for a tap in the padding.
alignas(64) constexpr float kZeros[kB] = {};

template <int Blocks, int Positions, bool Checked>
void conv_tile(const NchwcConvArgs& a, const ConvTile& t) {
  __m512 acc[Blocks][Positions];
  const int64_t y_block = a.out_h * a.out_w * kB;
  const int64_t w_block = (a.in_channels + kB - 1) / kB * a.kernel_h * a.kernel_w * kB * kB;
#pragma GCC unroll 4
  for (int j = 0; j < Blocks; ++j) {
    const __m512 b = _mm512_loadu_ps(t.bias + j * kB);
#pragma GCC unroll 8
    for (int p = 0; p < Positions; ++p)
      acc[j][p] = t.first ? b : _mm512_loadu_ps(t.y + j * y_block + p * kB);
  }
  const int64_t lane = a.x_lane_stride;
  const int64_t taps = a.kernel_h * a.kernel_w;
  for (int64_t ib = 0; ib < t.blocks; ++ib) {
    const int64_t lanes = ib + 1 == t.blocks ? t.last_lanes : kB;
    const float* xb = t.x + ib * a.x_block_stride;
    const float* wb = t.w + ib * taps * kB * kB;
    for (int64_t kh = 0; kh < a.kernel_h; ++kh)
      for (int64_t kw = 0; kw < a.kernel_w; ++kw) {
        const float* tap =
            xb + kh * a.dilation_h * a.x_row_stride + kw * a.dilation_w * a.x_col_stride;
        const float* xs[Positions];
#pragma GCC unroll 8
        for (int p = 0; p < Positions; ++p) {
          if constexpr (Checked) {
            const int64_t r = t.row0[p] + kh * a.dilation_h, c = t.col0[p] + kw * a.dilation_w;
            const bool inside = uint64_t(r) < uint64_t(a.in_h) && uint64_t(c) < uint64_t(a.in_w);
            xs[p] = inside ? xb + r * a.x_row_stride + c * a.x_col_stride : kZeros;
          } else {
            xs[p] = tap + t.offsets[p];
          }
        }
        const float* ws = wb + (kh * a.kernel_w + kw) * kB * kB;
#pragma GCC unroll 4
        for (int64_t i = 0; i < lanes; ++i) {
          __m512 wv[Blocks];
#pragma GCC unroll 4
          for (int j = 0; j < Blocks; ++j) wv[j] = _mm512_loadu_ps(ws + j * w_block + i * kB);
#pragma GCC unroll 8
          for (int p = 0; p < Positions; ++p) {
            const __m512 v = _mm512_set1_ps(xs[p][i * lane]);
#pragma GCC unroll 4
            for (int j = 0; j < Blocks; ++j) acc[j][p] = _mm512_fmadd_ps(wv[j], v, acc[j][p]);
          }
        }
      }
  }
  const NchwcEpilogue& e = a.epilogue;
  const bool relu = t.last && e.has_activation && e.activation == Unary::kRelu;
  const bool post_in_registers = relu || !e.has_activation;
  const __m512 zero = _mm512_setzero_ps(), scale = _mm512_set1_ps(e.post_scale),
               shift = _mm512_set1_ps(e.post_shift);
#pragma GCC unroll 4
  for (int j = 0; j < Blocks; ++j) {
    float* y = t.y + j * y_block;
#pragma GCC unroll 8
    for (int p = 0; p < Positions; ++p) {
      __m512 v = acc[j][p];
      if (t.last) {
        if (t.z) v = _mm512_add_ps(v, _mm512_loadu_ps(t.z + j * y_block + p * kB));
        if (relu) v = _mm512_max_ps(zero, v);  // NaN passes through, as vmath's Relu
        if (post_in_registers) v = _mm512_fmadd_ps(v, scale, shift);
      }
      _mm512_storeu_ps(y + p * kB, v);
    }
    if (t.last && !post_in_registers) finish(e, y, Positions * kB);
  }
}

using ConvTileFn = void (*)(const NchwcConvArgs&, const ConvTile&);

template <int Blocks, bool Checked, int... P>
constexpr ConvTileFn conv_tile_for(int positions, std::integer_sequence<int, P...>) {
  ConvTileFn fn = nullptr;
  ((fn = positions == P + 1 ? conv_tile<Blocks, P + 1, Checked> : fn), ...);
  return fn;
}

template <bool Checked>
ConvTileFn conv_tile_for(int blocks, int positions) {
  const auto seq = std::make_integer_sequence<int, kMaxTilePositions>();
  switch (blocks) {
    case 1:
      return conv_tile_for<1, Checked>(positions, seq);
    case 2:
      return conv_tile_for<2, Checked>(positions, seq);
    case 3:
      return conv_tile_for<3, Checked>(positions, seq);
    default:
      return conv_tile_for<4, Checked>(positions, seq);
  }
}

// Positions in the next tile of a row with `left` positions to go: whole tiles of
// `most`, the last two balanced rather than a full one and a sliver.
inline int64_t next_tile(int64_t left, int64_t most) {
  if (left <= most) return left;
  if (left < 2 * most) return (left + 1) / 2;
  return most;
}

}  // namespace

void nchwc_conv(const NchwcConvArgs& a, int64_t block0, int64_t block1, int64_t pos0,
                int64_t pos1) {
  const int64_t in_blocks = (a.in_channels + kB - 1) / kB;
  const int64_t taps = a.kernel_h * a.kernel_w;
  const int64_t w_block = in_blocks * taps * kB * kB;
  const int64_t plane = a.out_h * a.out_w;
  // Positions run in the order of the output plane, tiles crossing row ends (a 7 x 7 map
  // fills whole tiles; a 1-wide map, a 1-D convolution, still gets 6 positions a tile).
  // A span of them goes through all input chunks before the next: its input rows stay
  // in cache from chunk to chunk.
  const int64_t span = std::max<int64_t>(a.out_w, 24);
  // Extent of a window: positions whose window reaches past the input take checked tiles.
  const int64_t row_span = (a.kernel_h - 1) * a.dilation_h + 1;
  const int64_t col_span = (a.kernel_w - 1) * a.dilation_w + 1;
  for (int64_t ob = block0; ob < block1;) {
    const int blocks = int(std::min<int64_t>(kMaxTileBlocks, block1 - ob));
    const int64_t most = blocks == kMaxTileBlocks ? 6 : kMaxTilePositions;
    const int64_t per_pass = std::max<int64_t>(1, kPassWeightsKiB / (blocks * taps));
    // Spans of equal length: a remainder span of a few positions would run as sliver
    // tiles that load every weight for one or two positions.
    const int64_t spans = (pos1 - pos0 + span - 1) / span;
    const int64_t span_len = (pos1 - pos0 + spans - 1) / spans;
    for (int64_t s0 = pos0; s0 < pos1; s0 += span_len) {
      const int64_t s1 = std::min(pos1, s0 + span_len);
      for (int64_t ib = 0; ib < in_blocks; ib += per_pass) {
        const int64_t chunk = std::min(per_pass, in_blocks - ib);
        ConvTile t;
        t.x = a.x + ib * a.x_block_stride;
        t.blocks = chunk;
        t.last_lanes = std::min(kB, a.in_channels - (ib + chunk - 1) * kB);
        t.w = a.w + ob * w_block + ib * taps * kB * kB;
        t.bias = a.epilogue.bias + ob * kB;
        t.first = ib == 0;
        t.last = ib + chunk == in_blocks;
        int64_t oh = s0 / a.out_w, ow = s0 % a.out_w;
        for (int64_t q = s0; q < s1;) {
          const int64_t positions = next_tile(s1 - q, most);
          bool checked = false;
          for (int64_t p = 0; p < positions; ++p) {
            const int64_t r = oh * a.stride_h - a.pad_top, c = ow * a.stride_w - a.pad_left;
            t.row0[p] = r;
            t.col0[p] = c;
            t.offsets[p] = r * a.x_row_stride + c * a.x_col_stride;
            checked |= r < 0 || r + row_span > a.in_h || c < 0 || c + col_span > a.in_w;
            if (++ow == a.out_w) {
              ow = 0;
              ++oh;
            }
          }
          const int64_t y_offset = (ob * plane + q) * kB;
          t.y = a.y + y_offset;
          t.z = a.epilogue.z ? a.epilogue.z + y_offset : nullptr;
          (checked ? conv_tile_for<true>(blocks, int(positions))
                   : conv_tile_for<false>(blocks, int(positions)))(a, t);
          q += positions;
        }
      }
    }
    ob += blocks;
  }
}

namespace {

// One output row of a window op over one block: `interior` positions [lo, hi) whose
// windows lie inside the row's columns run `Positions` at a time with every column tap;
// the rest one by one over their clipped windows. body(ow, count, k_lo, k_hi, acc) gets
// output positions ow..ow+count-1 (count <= 8) and fills acc[0..count).
struct RowWindow {
  int64_t kh_lo, kh_hi;  // the kernel rows inside the input for this output row
  int64_t ih0;           // input row of kernel row 0
};

inline RowWindow row_window(const NchwcWindowArgs& a, int64_t oh) {
  RowWindow r;
  r.ih0 = oh * a.stride_h - a.pad_top;
  r.kh_lo = 0;
  r.kh_hi = a.kernel_h;
  while (r.kh_lo < r.kh_hi && r.ih0 + r.kh_lo * a.dilation_h < 0) ++r.kh_lo;
  while (r.kh_hi > r.kh_lo && r.ih0 + (r.kh_hi - 1) * a.dilation_h >= a.in_h) --r.kh_hi;
  return r;
}

// The output columns whose whole window lies inside the input's columns.
inline void interior_columns(const NchwcWindowArgs& a, int64_t& lo, int64_t& hi) {
  lo = 0;
  while (lo < a.out_w && lo * a.stride_w - a.pad_left < 0) ++lo;
  const int64_t span = (a.kernel_w - 1) * a.dilation_w;
  hi = a.out_w;
  while (hi > lo && (hi - 1) * a.stride_w - a.pad_left + span >= a.in_w) --hi;
}

inline void column_taps(const NchwcWindowArgs& a, int64_t ow, int64_t& iw0, int64_t& kw_lo,
                        int64_t& kw_hi) {
  iw0 = ow * a.stride_w - a.pad_left;
  kw_lo = 0;
  kw_hi = a.kernel_w;
  while (kw_lo < kw_hi && iw0 + kw_lo * a.dilation_w < 0) ++kw_lo;
  while (kw_hi > kw_lo && iw0 + (kw_hi - 1) * a.dilation_w >= a.in_w) --kw_hi;
}

// Runs op.template positions<P>(ow, kw_lo, kw_hi) over one output row: interior columns
// 8 at a time, the rest (borders, the interior's remainder) one at a time.
template <typename Op>
void for_row(const NchwcWindowArgs& a, Op& op) {
  int64_t lo, hi;
  interior_columns(a, lo, hi);
  int64_t ow = 0;
  for (; ow < lo; ++ow) op.template positions<1>(ow);
  for (; ow + 8 <= hi; ow += 8) op.template positions<8>(ow);
  for (; ow < a.out_w; ++ow) op.template positions<1>(ow);
}

// Depthwise sums of Positions outputs of one row and block.
struct DepthwiseRow {
  const NchwcWindowArgs& a;
  const NchwcEpilogue& e;
  const float* x;  // the block's input plane
  const float* w;  // the block's taps
  const float* bias;
  const float* z;  // the block's sum plane, or null
  float* y;        // the block's output row
  const float* zrow;
  RowWindow r;

  template <int Positions>
  void positions(int64_t ow) {
    int64_t iw0, kw_lo, kw_hi;
    column_taps(a, ow, iw0, kw_lo, kw_hi);
    __m512 acc[Positions];
    const __m512 b = _mm512_loadu_ps(bias);
    for (int p = 0; p < Positions; ++p) acc[p] = b;
    const int64_t step = a.stride_w * kB;
    for (int64_t kh = r.kh_lo; kh < r.kh_hi; ++kh) {
      const float* xr = x + (r.ih0 + kh * a.dilation_h) * a.in_w * kB;
      for (int64_t kw = kw_lo; kw < kw_hi; ++kw) {
        const __m512 wv = _mm512_loadu_ps(w + (kh * a.kernel_w + kw) * kB);
        const float* xs = xr + (iw0 + kw * a.dilation_w) * kB;
#pragma GCC unroll 8
        for (int p = 0; p < Positions; ++p)
          acc[p] = _mm512_fmadd_ps(_mm512_loadu_ps(xs + p * step), wv, acc[p]);
      }
    }
    const bool relu = e.has_activation && e.activation == Unary::kRelu;
    const bool in_registers = relu || !e.has_activation;
    const __m512 zero = _mm512_setzero_ps(), scale = _mm512_set1_ps(e.post_scale),
                 shift = _mm512_set1_ps(e.post_shift);
#pragma GCC unroll 8
    for (int p = 0; p < Positions; ++p) {
      __m512 v = acc[p];
      if (zrow) v = _mm512_add_ps(v, _mm512_loadu_ps(zrow + (ow + p) * kB));
      if (relu) v = _mm512_max_ps(zero, v);
      if (in_registers) v = _mm512_fmadd_ps(v, scale, shift);
      _mm512_storeu_ps(y + (ow + p) * kB, v);
    }
    if (!in_registers) finish(e, y + ow * kB, Positions * kB);
  }
};

// Max or sum (divided per position) of Positions outputs of one row and block.
struct PoolRow {
  const NchwcWindowArgs& a;
  NchwcPool kind;
  const float* x;
  float* y;
  RowWindow r;
  int64_t row_taps;  // kernel rows counted in the divisor (AverageIncludePad: padded rows)

  template <int Positions>
  void positions(int64_t ow) {
    int64_t iw0, kw_lo, kw_hi;
    column_taps(a, ow, iw0, kw_lo, kw_hi);
    const bool max = kind == NchwcPool::kMax;
    __m512 acc[Positions];
    for (int p = 0; p < Positions; ++p)
      acc[p] = max ? _mm512_set1_ps(-__builtin_inff()) : _mm512_setzero_ps();
    const int64_t step = a.stride_w * kB;
    for (int64_t kh = r.kh_lo; kh < r.kh_hi; ++kh) {
      const float* xr = x + (r.ih0 + kh * a.dilation_h) * a.in_w * kB;
      for (int64_t kw = kw_lo; kw < kw_hi; ++kw) {
        const float* xs = xr + (iw0 + kw * a.dilation_w) * kB;
#pragma GCC unroll 8
        for (int p = 0; p < Positions; ++p) {
          const __m512 v = _mm512_loadu_ps(xs + p * step);
          // max(v, acc) keeps a NaN input: the pools propagate NaN.
          acc[p] = max ? _mm512_max_ps(v, acc[p]) : _mm512_add_ps(acc[p], v);
        }
      }
    }
    for (int p = 0; p < Positions; ++p) {
      __m512 v = acc[p];
      if (!max) {
        int64_t cols = kw_hi - kw_lo;
        if (kind == NchwcPool::kAverageIncludePad) {
          // Taps inside the padded input [-pad_left, in_w + pad_right).
          cols = 0;
          const int64_t start = (ow + p) * a.stride_w - a.pad_left;
          for (int64_t k = 0; k < a.kernel_w; ++k) {
            const int64_t i = start + k * a.dilation_w;
            cols += i >= -a.pad_left && i < a.in_w + a.pad_right;
          }
        }
        const int64_t count = cols * row_taps;
        v = count > 0 ? _mm512_div_ps(v, _mm512_set1_ps(float(count))) : _mm512_setzero_ps();
      }
      _mm512_storeu_ps(y + (ow + p) * kB, v);
    }
  }
};

}  // namespace

void nchwc_depthwise(const NchwcWindowArgs& a, const float* w, const NchwcEpilogue& e,
                     int64_t block0, int64_t block1, int64_t row0, int64_t row1) {
  const int64_t in_plane = a.in_h * a.in_w * kB, out_plane = a.out_h * a.out_w * kB;
  for (int64_t b = block0; b < block1; ++b)
    for (int64_t oh = row0; oh < row1; ++oh) {
      const int64_t row = b * out_plane + oh * a.out_w * kB;
      DepthwiseRow op{a,
                      e,
                      a.x + b * in_plane,
                      w + b * a.kernel_h * a.kernel_w * kB,
                      e.bias + b * kB,
                      e.z,
                      a.y + row,
                      e.z ? e.z + row : nullptr,
                      row_window(a, oh)};
      for_row(a, op);
    }
}

void nchwc_pool(const NchwcWindowArgs& a, NchwcPool kind, int64_t block0, int64_t block1,
                int64_t row0, int64_t row1) {
  const int64_t in_plane = a.in_h * a.in_w * kB, out_plane = a.out_h * a.out_w * kB;
  for (int64_t b = block0; b < block1; ++b)
    for (int64_t oh = row0; oh < row1; ++oh) {
      PoolRow op{
          a, kind, a.x + b * in_plane, a.y + b * out_plane + oh * a.out_w * kB, row_window(a, oh),
          0};
      op.row_taps = op.r.kh_hi - op.r.kh_lo;
      if (kind == NchwcPool::kAverageIncludePad) {
        op.row_taps = 0;
        for (int64_t k = 0; k < a.kernel_h; ++k) {
          const int64_t i = op.r.ih0 + k * a.dilation_h;
          op.row_taps += i >= -a.pad_top && i < a.in_h + a.pad_bottom;
        }
      }
      for_row(a, op);
    }
}

namespace {

// r[i] = column i of the 16 x 16 matrix whose row j is r[j] (lane k of r[j] is row j,
// column k): four rounds of pairwise interleaves, 64 shuffles in all.
inline void transpose16(__m512 (&r)[16]) {
  __m512 t[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {
    const __m512d a = _mm512_castps_pd(t[i]), b = _mm512_castps_pd(t[i + 1]),
                  c = _mm512_castps_pd(t[i + 2]), d = _mm512_castps_pd(t[i + 3]);
    r[i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
    r[i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
    r[i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d));
    r[i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d));
  }
  // Each r[i] now holds, per 128-bit lane q, column (i's position in its group) of rows
  // 4q'..: exchange 128-bit lanes across groups of four registers.
  for (int i = 0; i < 4; ++i) {
    t[i] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0x88);
    t[i + 4] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0xDD);
    t[i + 8] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0x88);
    t[i + 12] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0xDD);
  }
  for (int i = 0; i < 4; ++i) {
    r[i] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0x88);
    r[i + 8] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0xDD);
    r[i + 4] = _mm512_shuffle_f32x4(t[i + 4], t[i + 12], 0x88);
    r[i + 12] = _mm512_shuffle_f32x4(t[i + 4], t[i + 12], 0xDD);
  }
}

}  // namespace

namespace {

// Input tile (r0, c0) of block xb, element (k, l) zero outside the image.
inline __m512 tile_input(const float* xb, const NchwcWinogradTiles& g, int64_t r, int64_t c) {
  return uint64_t(r) < uint64_t(g.in_h) && uint64_t(c) < uint64_t(g.in_w)
             ? _mm512_loadu_ps(xb + (r * g.in_w + c) * kB)
             : _mm512_setzero_ps();
}

// B^T d for F(4x4, 3x3) on one line of six: the rows of B^T (winograd.h) with the shared
// sums computed once.
inline void f43_input_line(const __m512 (&d)[6], __m512 (&t)[6]) {
  const __m512 four = _mm512_set1_ps(4.0f), five = _mm512_set1_ps(5.0f);
  const __m512 a = _mm512_fnmadd_ps(four, d[2], d[4]);  // d4 - 4 d2
  const __m512 b = _mm512_fnmadd_ps(four, d[1], d[3]);  // d3 - 4 d1
  const __m512 c = _mm512_sub_ps(d[4], d[2]);
  const __m512 e = _mm512_add_ps(_mm512_sub_ps(d[3], d[1]), _mm512_sub_ps(d[3], d[1]));
  t[0] = _mm512_fmadd_ps(four, d[0], _mm512_fnmadd_ps(five, d[2], d[4]));
  t[1] = _mm512_add_ps(a, b);
  t[2] = _mm512_sub_ps(a, b);
  t[3] = _mm512_add_ps(c, e);
  t[4] = _mm512_sub_ps(c, e);
  t[5] = _mm512_fmadd_ps(four, d[1], _mm512_fnmadd_ps(five, d[3], d[5]));
}

// Calls fn(xb, r0, c0, out) for the tiles of blocks [block0, block1): xb the block's
// input, (r0, c0) the tile's first input row and column (negative in the padding), out
// where its transformed values start (value xi at out + xi * xi_step).
template <typename Fn>
void for_each_input_tile(const float* x, int64_t block0, int64_t block1,
                         const NchwcWinogradTiles& g, float* v, Fn fn) {
  const int64_t plane = g.in_h * g.in_w * kB;
  for (int64_t b = block0; b < block1; ++b)
    for (int64_t t = 0; t < g.count; ++t) {
      const int64_t tile = g.first + t;
      fn(x + b * plane, g.tile * (tile / g.tiles_w) - g.pad_top,
         g.tile * (tile % g.tiles_w) - g.pad_left, v + (b * g.count + t) * kB);
    }
}

void input_f23(const float* x, int64_t blocks, int64_t block0, int64_t block1,
               const NchwcWinogradTiles& g, float* v) {
  const int64_t xi_step = blocks * g.count * kB;
  for_each_input_tile(
      x, block0, block1, g, v, [&](const float* xb, int64_t r0, int64_t c0, float* out) {
        __m512 d[4][4];
        for (int k = 0; k < 4; ++k)
          for (int l = 0; l < 4; ++l) d[k][l] = tile_input(xb, g, r0 + k, c0 + l);
        // B^T d down the columns, then (B^T d) B along the rows.
        __m512 u[4][4];
        for (int l = 0; l < 4; ++l) {
          u[0][l] = _mm512_sub_ps(d[0][l], d[2][l]);
          u[1][l] = _mm512_add_ps(d[1][l], d[2][l]);
          u[2][l] = _mm512_sub_ps(d[2][l], d[1][l]);
          u[3][l] = _mm512_sub_ps(d[1][l], d[3][l]);
        }
        for (int k = 0; k < 4; ++k) {
          _mm512_storeu_ps(out + (4 * k + 0) * xi_step, _mm512_sub_ps(u[k][0], u[k][2]));
          _mm512_storeu_ps(out + (4 * k + 1) * xi_step, _mm512_add_ps(u[k][1], u[k][2]));
          _mm512_storeu_ps(out + (4 * k + 2) * xi_step, _mm512_sub_ps(u[k][2], u[k][1]));
          _mm512_storeu_ps(out + (4 * k + 3) * xi_step, _mm512_sub_ps(u[k][1], u[k][3]));
        }
      });
}

void input_f43(const float* x, int64_t blocks, int64_t block0, int64_t block1,
               const NchwcWinogradTiles& g, float* v) {
  const int64_t xi_step = blocks * g.count * kB;
  for_each_input_tile(x, block0, block1, g, v,
                      [&](const float* xb, int64_t r0, int64_t c0, float* out) {
                        // B^T d down each column, kept in u (36 vectors: more than the registers).
                        __m512 u[6][6];
                        for (int l = 0; l < 6; ++l) {
                          __m512 d[6], t6[6];
                          for (int k = 0; k < 6; ++k) d[k] = tile_input(xb, g, r0 + k, c0 + l);
                          f43_input_line(d, t6);
                          for (int k = 0; k < 6; ++k) u[k][l] = t6[k];
                        }
                        // Then (B^T d) B along each row.
                        for (int k = 0; k < 6; ++k) {
                          __m512 r6[6];
                          f43_input_line(u[k], r6);
                          for (int l = 0; l < 6; ++l)
                            _mm512_storeu_ps(out + (6 * k + l) * xi_step, r6[l]);
                        }
                      });
}

// One finished output vector of block b at position (r, c): bias, sum input, activation
// and post scale, as the direct tiles apply them.
inline void store_output(const NchwcEpilogue& e, __m512 v, __m512 bias, int64_t at, float* y) {
  const bool relu = e.has_activation && e.activation == Unary::kRelu;
  const bool in_registers = relu || !e.has_activation;
  v = _mm512_add_ps(v, bias);
  if (e.z) v = _mm512_add_ps(v, _mm512_loadu_ps(e.z + at));
  if (relu) v = _mm512_max_ps(_mm512_setzero_ps(), v);
  if (in_registers)
    v = _mm512_fmadd_ps(v, _mm512_set1_ps(e.post_scale), _mm512_set1_ps(e.post_shift));
  _mm512_storeu_ps(y + at, v);
  if (!in_registers) finish(e, y + at, kB);
}

// The S x S outputs of every tile of blocks [block0, block1): transform(in, xi_step, out)
// turns a tile's products (value xi at in + xi * xi_step) into out[row][column], which
// go to y through the epilogue, the rows and columns past the map dropped.
template <int S, typename Transform>
void for_each_output_tile(const float* m, int64_t blocks, int64_t block0, int64_t block1,
                          const NchwcWinogradTiles& g, const NchwcEpilogue& e, float* y,
                          Transform transform) {
  const int64_t plane = g.out_h * g.out_w * kB, xi_step = blocks * g.count * kB;
  for (int64_t b = block0; b < block1; ++b) {
    const __m512 bias = _mm512_loadu_ps(e.bias + b * kB);
    for (int64_t t = 0; t < g.count; ++t) {
      __m512 out[S][S];
      transform(m + (b * g.count + t) * kB, xi_step, out);
      const int64_t tile = g.first + t;
      const int64_t r0 = S * (tile / g.tiles_w), c0 = S * (tile % g.tiles_w);
      for (int r = 0; r < S && r0 + r < g.out_h; ++r)
        for (int c = 0; c < S && c0 + c < g.out_w; ++c)
          store_output(e, out[r][c], bias, b * plane + ((r0 + r) * g.out_w + c0 + c) * kB, y);
    }
  }
}

void output_f23(const float* m, int64_t blocks, int64_t block0, int64_t block1,
                const NchwcWinogradTiles& g, const NchwcEpilogue& e, float* y) {
  for_each_output_tile<2>(m, blocks, block0, block1, g, e, y,
                          [](const float* in, int64_t xi_step, __m512(&out)[2][2]) {
                            __m512 p[16];
                            for (int xi = 0; xi < 16; ++xi)
                              p[xi] = _mm512_loadu_ps(in + xi * xi_step);
                            // A^T p down the columns (rows 0-3 of the 4x4 products), then along the
                            // rows.
                            __m512 s[2][4];
                            for (int l = 0; l < 4; ++l) {
                              s[0][l] = _mm512_add_ps(_mm512_add_ps(p[l], p[4 + l]), p[8 + l]);
                              s[1][l] = _mm512_sub_ps(_mm512_sub_ps(p[4 + l], p[8 + l]), p[12 + l]);
                            }
                            for (int r = 0; r < 2; ++r) {
                              out[r][0] = _mm512_add_ps(_mm512_add_ps(s[r][0], s[r][1]), s[r][2]);
                              out[r][1] = _mm512_sub_ps(_mm512_sub_ps(s[r][1], s[r][2]), s[r][3]);
                            }
                          });
}

// A^T p for F(4x4, 3x3) on one line of six: o0 = p0 + s12 + s34, o1 = d12 + 2 d34,
// o2 = s12 + 4 s34, o3 = d12 + 8 d34 + p5 (s: sums, d: differences of the pairs).
inline void f43_output_line(const __m512 (&p)[6], __m512 (&o)[4]) {
  const __m512 s12 = _mm512_add_ps(p[1], p[2]), d12 = _mm512_sub_ps(p[1], p[2]);
  const __m512 s34 = _mm512_add_ps(p[3], p[4]), d34 = _mm512_sub_ps(p[3], p[4]);
  o[0] = _mm512_add_ps(_mm512_add_ps(p[0], s12), s34);
  o[1] = _mm512_fmadd_ps(_mm512_set1_ps(2.0f), d34, d12);
  o[2] = _mm512_fmadd_ps(_mm512_set1_ps(4.0f), s34, s12);
  o[3] = _mm512_add_ps(_mm512_fmadd_ps(_mm512_set1_ps(8.0f), d34, d12), p[5]);
}

void output_f43(const float* m, int64_t blocks, int64_t block0, int64_t block1,
                const NchwcWinogradTiles& g, const NchwcEpilogue& e, float* y) {
  for_each_output_tile<4>(m, blocks, block0, block1, g, e, y,
                          [](const float* in, int64_t xi_step, __m512(&out)[4][4]) {
                            // A^T p down each column of the 6x6 products: s[r][l], rows 0-3; then
                            // along the rows.
                            __m512 s[4][6];
                            for (int l = 0; l < 6; ++l) {
                              __m512 p[6], o[4];
                              for (int k = 0; k < 6; ++k)
                                p[k] = _mm512_loadu_ps(in + (6 * k + l) * xi_step);
                              f43_output_line(p, o);
                              for (int r = 0; r < 4; ++r) s[r][l] = o[r];
                            }
                            for (int r = 0; r < 4; ++r) f43_output_line(s[r], out[r]);
                          });
}

}  // namespace

void nchwc_winograd_input(const float* x, int64_t blocks, int64_t block0, int64_t block1,
                          const NchwcWinogradTiles& g, float* v) {
  if (g.tile == 4) return input_f43(x, blocks, block0, block1, g, v);
  input_f23(x, blocks, block0, block1, g, v);
}

void nchwc_winograd_output(const float* m, int64_t blocks, int64_t block0, int64_t block1,
                           const NchwcWinogradTiles& g, const NchwcEpilogue& e, float* y) {
  if (g.tile == 4) return output_f43(m, blocks, block0, block1, g, e, y);
  output_f23(m, blocks, block0, block1, g, e, y);
}

void nchwc_affine(const float* x, int64_t positions, const float* scale, const float* shift,
                  bool has_activation, Unary activation, const UnaryParams& params, float* y) {
  const __m512 a = _mm512_loadu_ps(scale), b = _mm512_loadu_ps(shift), zero = _mm512_setzero_ps();
  const bool relu = has_activation && activation == Unary::kRelu;
  for (int64_t p = 0; p < positions; ++p) {
    __m512 v = _mm512_fmadd_ps(_mm512_loadu_ps(x + p * kB), a, b);
    if (relu) v = _mm512_max_ps(zero, v);
    _mm512_storeu_ps(y + p * kB, v);
  }
  if (has_activation && !relu) unary(activation, params, y, y, size_t(positions * kB));
}

void nchwc_block_to_planes(const float* x, int64_t positions, int64_t lanes, float* y) {
  int64_t p = 0;
  for (; p + 16 <= positions; p += 16) {
    __m512 r[16];
    for (int j = 0; j < 16; ++j) r[j] = _mm512_loadu_ps(x + (p + j) * kB);
    transpose16(r);
    for (int64_t l = 0; l < lanes; ++l) _mm512_storeu_ps(y + l * positions + p, r[l]);
  }
  for (; p < positions; ++p)
    for (int64_t l = 0; l < lanes; ++l) y[l * positions + p] = x[p * kB + l];
}

void nchwc_planes_to_block(const float* x, int64_t positions, int64_t plane_stride, int64_t lanes,
                           float* y) {
  int64_t p = 0;
  for (; p + 16 <= positions; p += 16) {
    __m512 r[16];
    for (int64_t l = 0; l < 16; ++l)
      r[l] = l < lanes ? _mm512_loadu_ps(x + l * plane_stride + p) : _mm512_setzero_ps();
    transpose16(r);
    for (int j = 0; j < 16; ++j) _mm512_storeu_ps(y + (p + j) * kB, r[j]);
  }
  for (; p < positions; ++p)
    for (int64_t l = 0; l < kB; ++l) y[p * kB + l] = l < lanes ? x[l * plane_stride + p] : 0.0f;
}

}  // namespace nxrt::vmath

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC diagnostic pop
#pragma GCC pop_options
#endif

#else  // not x86: the layout pass never runs there

namespace nxrt::vmath {
void nchwc_conv(const NchwcConvArgs&, int64_t, int64_t, int64_t, int64_t) {}
void nchwc_depthwise(const NchwcWindowArgs&, const float*, const NchwcEpilogue&, int64_t, int64_t,
                     int64_t, int64_t) {}
void nchwc_pool(const NchwcWindowArgs&, NchwcPool, int64_t, int64_t, int64_t, int64_t) {}
void nchwc_block_to_planes(const float*, int64_t, int64_t, float*) {}
void nchwc_planes_to_block(const float*, int64_t, int64_t, int64_t, float*) {}
void nchwc_affine(const float*, int64_t, const float*, const float*, bool, Unary,
                  const UnaryParams&, float*) {}
void nchwc_winograd_input(const float*, int64_t, int64_t, int64_t, const NchwcWinogradTiles&,
                          float*) {}
void nchwc_winograd_output(const float*, int64_t, int64_t, int64_t, const NchwcWinogradTiles&,
                           const NchwcEpilogue&, float*) {}
}  // namespace nxrt::vmath

#endif
