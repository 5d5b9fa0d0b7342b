// Conv and ConvTranspose for any number of spatial dims, via im2col/col2im and GEMM.
// float runs on the packed SGEMM, double on the simple loop; float16/bfloat16 widen to float.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <type_traits>
#include <vector>

#include "core/parallel.h"
#include "ep/cpu/gemm/gemm.h"
#include "ep/cpu/gemm/qgemm.h"
#include "ep/cpu/kernels/conv_dft.h"
#include "ep/cpu/kernels/conv_geometry.h"
#include "ep/cpu/kernels/fused_activation.h"
#include "ep/cpu/kernels/qconv_gemm.h"
#include "ep/cpu/vmath/vmath.h"
#include "ep/cpu/vmath/winograd.h"

namespace nxrt::cpu {
namespace {

template <typename T>
constexpr bool kHalf = std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>;

template <typename T>
void gemm_any(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const T* A, int64_t lda,
              const T* B, int64_t ldb, T beta, T* C, int64_t ldc) {
  if constexpr (std::is_same_v<T, float>)
    gemm::sgemm(ta, tb, M, N, K, 1.0f, A, lda, B, ldb, beta, C, ldc);
  else
    gemm::gemm_simple<T>(ta, tb, M, N, K, T(1), A, lda, B, ldb, beta, C, ldc);
}

// A convolution's column matrix or partial sums, per thread (core/scratch.h): 64-byte
// aligned, so the GEMM can read a column matrix in place (gemm::in_place_ld).
template <typename T>
T* column_scratch(size_t n) {
  return scratch<T>(ScratchSlot::kConvColumns, n);
}

// Products with at most this many output positions (per group and image) use the
// weights packed at prepare, as Y^T = col^T * W^T: the vectorized side of the
// micro-kernel then runs along the output channels, not along the few positions, and
// nothing is repacked per call. Wider outputs amortize repacking W and keep Y row-major.
constexpr int64_t kPackedMaxPositions = 64;

// Multiply-adds below which a convolution is not split across threads (~50 us of work).
constexpr double kMinConvWork = double(1 << 20);

// Input and output channels below which a 3x3 convolution skips Winograd: the tile
// transforms cost per channel what a few output channels' products save (measured: 16
// inputs or 32 outputs ran slower than the direct path, 32 inputs and 64 outputs faster).
constexpr int64_t kWinogradMinInputs = 32, kWinogradMinOutputs = 64;

// Rows per chunk so that `pairs` (image, group) pairs cut into chunks of output rows
// share `width` threads evenly: when the tasks are few, their count is raised to a
// multiple of the width (3 groups on 2 threads would leave one idle a third of the time;
// one image is cut into at least one chunk per thread).
int64_t balanced_chunk(int64_t rows, int64_t chunk, int64_t pairs, int64_t width) {
  if (width <= 1 || rows <= 1) return chunk;
  int64_t count = (rows + chunk - 1) / chunk;
  if (pairs * count >= 4 * width) return chunk;
  while ((pairs * count) % width != 0 && count < rows) ++count;
  return std::max<int64_t>(1, (rows + count - 1) / count);
}

// The im2col correspondence: an "image" (Conv input, ConvTranspose output) and a "grid" of
// window positions (Conv output, ConvTranspose input); image = grid*stride - pad + k*dilation.
struct Lattice {
  size_t r;
  SmallVec<int64_t> image, grid, kernel, stride, dilation, pad;
  int64_t image_size() const { return Window::product(image); }
  int64_t grid_size() const { return Window::product(grid); }
  int64_t kernel_size() const { return Window::product(kernel); }

  // Drops spatial dims where image, kernel and grid are all 1 (no padding): they do not
  // change the memory layout, and without them a (k x 1) convolution over a width of 1
  // (audio and sequence models written as 2-D) takes the 1-D paths instead of an im2col
  // that copies one element per row.
  void drop_unit_dims() {
    size_t keep = 0;
    for (size_t d = 0; d < r; ++d) {
      const bool unit = image[d] == 1 && kernel[d] == 1 && grid[d] == 1 && pad[d] == 0;
      if (unit && (keep > 0 || d + 1 < r)) continue;  // at least one dim stays
      image[keep] = image[d];
      grid[keep] = grid[d];
      kernel[keep] = kernel[d];
      stride[keep] = stride[d];
      dilation[keep] = dilation[d];
      pad[keep] = pad[d];
      ++keep;
    }
    r = keep;
    for (SmallVec<int64_t>* v : {&image, &grid, &kernel, &stride, &dilation, &pad}) v->resize(keep);
  }
};

// Grid positions [lo, hi) of a 1-D lattice whose window tap lands at image index
// o*stride + off inside the image; divides only when the span is cut (divisions are slow
// next to these short rows).
inline void tap_span(int64_t off, int64_t stride, int64_t image, int64_t grid, int64_t& lo,
                     int64_t& hi) {
  lo = 0;
  hi = grid;
  if (off < 0) lo = std::min((-off + stride - 1) / stride, grid);
  if (off + (grid - 1) * stride >= image)
    hi = std::clamp(off >= image ? 0 : (image - off + stride - 1) / stride, lo, grid);
}

// Calls run(col_row, c, tap, j0, image_base, lo, hi, first, step) for each column-matrix
// row (channel c, kernel offset `tap` in [0, kernel_size)) and each grid row in [row0, row1)
// along the last dim: grid positions [lo, hi) of that row (j0 + lo .. j0 + hi in the
// column) touch image elements image_base + first + (o - lo)*step; the rest of the row
// lies in the padding. image_base < 0 means the whole row is padding.
template <typename Run>
void for_each_col_row(const Lattice& L, int64_t channels, int64_t row0, int64_t row1, Run run) {
  const size_t r = L.r;
  const int64_t gl = L.grid[r - 1], il = L.image[r - 1];
  const int64_t s = L.stride[r - 1], kl = L.kernel[r - 1];
  // One buffer: kernel and grid odometers, image strides, and the valid grid span per
  // last-dim kernel offset (the same for every channel and row; divisions are slow).
  SmallVec<int64_t, 32> buf(3 * r + 2 * size_t(kl));  // inline for kernels up to 13 wide
  int64_t* k = buf.data();
  int64_t* o = k + r;
  int64_t* istride = o + r;
  int64_t* span_lo = istride + r;
  int64_t* span_hi = span_lo + kl;
  istride[r - 1] = 1;
  for (size_t d = r - 1; d-- > 0;) istride[d] = istride[d + 1] * L.image[d + 1];
  for (int64_t q = 0; q < kl; ++q)
    tap_span(q * L.dilation[r - 1] - L.pad[r - 1], s, il, gl, span_lo[q], span_hi[q]);
  const int64_t ksize = L.kernel_size();
  const int64_t isize = L.image_size();
  int64_t col_row = 0;
  for (int64_t c = 0; c < channels; ++c) {
    std::fill(k, k + r, 0);
    for (int64_t kk = 0; kk < ksize; ++kk, ++col_row) {
      const int64_t q = k[r - 1];
      const int64_t off = q * L.dilation[r - 1] - L.pad[r - 1];
      const int64_t lo = span_lo[q], hi = span_hi[q];
      // outer grid coordinates of row0
      int64_t rem = row0;
      for (size_t d = r - 1; d-- > 0;) {
        o[d] = rem % L.grid[d];
        rem /= L.grid[d];
      }
      for (int64_t row = row0; row < row1; ++row) {
        int64_t base = c * isize;
        bool inside = true;
        for (size_t d = 0; d + 1 < r; ++d) {
          const int64_t i = o[d] * L.stride[d] - L.pad[d] + k[d] * L.dilation[d];
          inside &= i >= 0 && i < L.image[d];
          base += i * istride[d];
        }
        run(col_row, c, kk, (row - row0) * gl, inside ? base : -1, lo, hi, lo * s + off, s);
        for (size_t d = r - 1; d-- > 0;) {
          if (++o[d] < L.grid[d]) break;
          o[d] = 0;
        }
      }
      for (size_t d = r; d-- > 0;) {
        if (++k[d] < L.kernel[d]) break;
        k[d] = 0;
      }
    }
  }
}

// im2col of a 1-D conv (the audio models' case) with plain loops: their rows are a few
// positions long, where a memcpy/fill call per row costs more than the copying itself.
template <typename T>
void im2col_1d(const Lattice& L, int64_t channels, const T* image, T* col, int64_t ld) {
  const int64_t gl = L.grid[0], il = L.image[0], s = L.stride[0], kl = L.kernel[0];
  for (int64_t q = 0; q < kl; ++q) {
    const int64_t off = q * L.dilation[0] - L.pad[0];
    int64_t lo, hi;
    tap_span(off, s, il, gl, lo, hi);
    if constexpr (std::is_same_v<T, float>) {
      if (gl <= 16 && s <= 2) {  // rows of a few positions: one masked move each
        vmath::strided_rows(image, il, channels, off, s, lo, hi, gl, col + q * ld, kl * ld);
        continue;
      }
    }
    for (int64_t c = 0; c < channels; ++c) {
      T* dst = col + (c * kl + q) * ld;
      const T* src = image + c * il;
      int64_t o = 0;
      for (; o < lo; ++o) dst[o] = T(0);
      for (; o < hi; ++o) dst[o] = src[o * s + off];
      for (; o < gl; ++o) dst[o] = T(0);
    }
  }
}

// 1-D depthwise conv accumulated into y (zeroed): per channel and tap, one short axpy.
template <typename T>
void depthwise_1d(const Lattice& L, int64_t channels, int64_t mult, const T* x, const T* w, T* y) {
  const int64_t gl = L.grid[0], il = L.image[0], s = L.stride[0], kl = L.kernel[0];
  for (int64_t q = 0; q < kl; ++q) {
    const int64_t off = q * L.dilation[0] - L.pad[0];
    int64_t lo, hi;
    tap_span(off, s, il, gl, lo, hi);
    for (int64_t c = 0; c < channels; ++c) {
      const T* src = x + c * il;
      for (int64_t m = 0; m < mult; ++m) {
        const T wv = w[(c * mult + m) * kl + q];
        T* dst = y + (c * mult + m) * gl;
        if (s == 1) {
          for (int64_t o = lo; o < hi; ++o) dst[o] += wv * src[o + off];
        } else {
          for (int64_t o = lo; o < hi; ++o) dst[o] += wv * src[o * s + off];
        }
      }
    }
  }
}

// Float rows of at most this many elements go through vmath::window_rows (one masked
// move each) instead of a memcpy call per row.
constexpr int64_t kShortRow = 16;

// im2col of a 2-D conv for grid rows [row0, row1): per (channel, kernel row, kernel
// column), each output row is a zero head, a copy (strided when the stride is) and a zero
// tail, with the bounds worked out once per kernel column instead of per row.
template <typename T>
void im2col_2d(const Lattice& L, int64_t channels, int64_t row0, int64_t row1, const T* image,
               T* col, int64_t ld) {
  const int64_t H = L.image[0], W = L.image[1], OW = L.grid[1];
  const int64_t KH = L.kernel[0], KW = L.kernel[1], SH = L.stride[0], SW = L.stride[1];
  const int64_t DH = L.dilation[0], DW = L.dilation[1], PT = L.pad[0], PL = L.pad[1];
  T* dst = col;
  for (int64_t c = 0; c < channels; ++c) {
    const T* plane = image + c * H * W;
    for (int64_t kh = 0; kh < KH; ++kh) {
      for (int64_t kw = 0; kw < KW; ++kw, dst += ld) {
        const int64_t off = kw * DW - PL;
        int64_t lo, hi;
        tap_span(off, SW, W, OW, lo, hi);
        if constexpr (std::is_same_v<T, float>) {
          if (SW == 1 && OW <= kShortRow) {
            vmath::window_rows(plane, H, W, row0 * SH - PT + kh * DH, SH, row1 - row0, off, lo, hi,
                               OW, dst);
            continue;
          }
        }
        T* out = dst;
        for (int64_t oh = row0; oh < row1; ++oh, out += OW) {
          const int64_t ih = oh * SH - PT + kh * DH;
          if (ih < 0 || ih >= H) {
            std::fill(out, out + OW, T(0));
            continue;
          }
          const T* src = plane + ih * W + off;
          for (int64_t o = 0; o < lo; ++o) out[o] = T(0);
          if (SW == 1) {
            // libc's copy uses the widest vectors; a loop here gets the baseline ISA's.
            if (hi > lo) std::memcpy(out + lo, src + lo, size_t(hi - lo) * sizeof(T));
          } else {
            for (int64_t o = lo; o < hi; ++o) out[o] = src[o * SW];
          }
          for (int64_t o = hi; o < OW; ++o) out[o] = T(0);
        }
      }
    }
  }
}

// col[(c*K + k) * ld + j] for grid rows [row0, row1), j over those rows' positions
// (ld >= their count).
template <typename T>
void im2col(const Lattice& L, int64_t channels, int64_t row0, int64_t row1, const T* image, T* col,
            int64_t ld) {
  if (L.r == 1) return im2col_1d(L, channels, image, col, ld);
  if (L.r == 2) return im2col_2d(L, channels, row0, row1, image, col, ld);
  const int64_t gl = L.grid[L.r - 1];
  for_each_col_row(L, channels, row0, row1,
                   [&](int64_t cr, int64_t, int64_t, int64_t j0, int64_t base, int64_t lo,
                       int64_t hi, int64_t first, int64_t step) {
                     T* dst = col + cr * ld + j0;
                     if (base < 0) {
                       std::fill(dst, dst + gl, T(0));
                       return;
                     }
                     std::fill(dst, dst + lo, T(0));
                     const T* src = image + base + first;
                     if (step == 1) {
                       std::memcpy(dst + lo, src, size_t(hi - lo) * sizeof(T));
                     } else {
                       for (int64_t o = lo; o < hi; ++o) dst[o] = src[(o - lo) * step];
                     }
                     std::fill(dst + hi, dst + gl, T(0));
                   });
}

template <typename T>
void col2im_add(const Lattice& L, int64_t channels, const T* col, T* image) {
  const int64_t rows = L.grid_size() / L.grid[L.r - 1];
  const int64_t ld = L.grid_size();
  for_each_col_row(L, channels, 0, rows,
                   [&](int64_t cr, int64_t, int64_t, int64_t j0, int64_t base, int64_t lo,
                       int64_t hi, int64_t first, int64_t step) {
                     if (base < 0) return;
                     const T* src = col + cr * ld + j0;
                     T* dst = image + base + first;
                     for (int64_t o = lo; o < hi; ++o) dst[(o - lo) * step] += src[o];
                   });
}

// 2-D float depthwise conv of `channels` channels (`mult` outputs each), one output row at
// a time: the outputs whose windows lie inside the input rows in one vectorized pass that
// keeps every sum in registers, the few at the borders with clipped windows. Writes every
// output (no zeroed y needed).
void depthwise_2d_f32(const Lattice& L, int64_t channels, int64_t mult, const float* x,
                      const float* w, float* y) {
  const int64_t H = L.image[0], W = L.image[1], OH = L.grid[0], OW = L.grid[1];
  const int64_t KH = L.kernel[0], KW = L.kernel[1], SH = L.stride[0], SW = L.stride[1];
  const int64_t DH = L.dilation[0], DW = L.dilation[1], PT = L.pad[0], PL = L.pad[1];
  // Each channel is copied into a zero-bordered plane first, so every window lies inside
  // it: one vector pass per output row and no clipped border outputs (which, on the
  // 7 to 56 wide planes of mobile networks, cost as much as the rest).
  const int64_t HP = std::max(H + PT, (OH - 1) * SH + (KH - 1) * DH + 1);
  const int64_t WP = std::max(W + PL, (OW - 1) * SW + (KW - 1) * DW + 1);
  const bool padded = PT > 0 || PL > 0 || HP > H || WP > W;
  float* plane = padded ? thread_scratch<float>(size_t(HP * WP + vmath::kPlaneSlack), 1) : nullptr;
  for (int64_t c = 0; c < channels; ++c) {
    const float* xc = x + c * H * W;
    int64_t ld = W;
    if (padded) {
      vmath::pad_planes(xc, 1, H, W, PT, PL, HP, WP, HP * WP, 0.0f, plane);
      xc = plane;
      ld = WP;
    }
    // The whole plane in one call (per-row calls cost as much as the arithmetic on the
    // 7 to 28 wide maps of mobile networks).
    vmath::PoolWindow win{OH, OW, KH, KW, SH, SW, DH, DW};
    if (padded) win.slack = vmath::kPlaneSlack;
    for (int64_t m = 0; m < mult; ++m)
      vmath::depthwise_plane(xc, ld, win, w + (c * mult + m) * KH * KW,
                             y + (c * mult + m) * OH * OW);
  }
}

// Row i, column j of `dst` (rows x cols) = x[(row0 + i * row_step) * W + col0 + j * col_step]
// of the H x W plane x, or 0 outside it: one zero-bordered phase plane of a convolution's
// input (stride 1: the padded input itself).
void fill_phase_plane(const float* x, int64_t H, int64_t W, int64_t row0, int64_t row_step,
                      int64_t col0, int64_t col_step, int64_t rows, int64_t cols, float* dst) {
  // Columns [j_lo, j_hi) land inside the plane.
  const int64_t j_lo = std::min(cols, col0 >= 0 ? 0 : (-col0 + col_step - 1) / col_step);
  const int64_t j_hi = std::clamp(col0 >= W ? 0 : (W - col0 + col_step - 1) / col_step, j_lo, cols);
  for (int64_t i = 0; i < rows; ++i, dst += cols) {
    const int64_t h = row0 + i * row_step;
    if (h < 0 || h >= H || j_lo == j_hi) {
      std::fill(dst, dst + cols, 0.0f);
      continue;
    }
    std::fill(dst, dst + j_lo, 0.0f);
    const float* src = x + h * W + col0;
    if (col_step == 1) {
      std::memcpy(dst + j_lo, src + j_lo, size_t(j_hi - j_lo) * sizeof(float));
    } else {
      for (int64_t j = j_lo; j < j_hi; ++j) dst[j] = src[j * col_step];
    }
    std::fill(dst + j_hi, dst + cols, 0.0f);
  }
}

// The zero-bordered phase planes of `channels` H x W input planes, `plane` floats apart
// (phase (a, b) of channel c at (c * phases + a_index * col_phases + b_index) * plane),
// in a thread scratch buffer, on the run's threads. `tail`: floats read past the last
// plane (a shifted row's dropped columns).
const float* fill_planes(const float* x, int64_t channels, int64_t H, int64_t W, int64_t PT,
                         int64_t PL, int64_t SH, int64_t SW, int64_t HP, int64_t WP, int64_t plane,
                         const SmallVec<int64_t, 4>& phase_rows,
                         const SmallVec<int64_t, 4>& phase_cols, int64_t tail) {
  const int64_t col_phases = int64_t(phase_cols.size());
  const int64_t phases = int64_t(phase_rows.size()) * col_phases;
  const int64_t planes = channels * phases, in_size = H * W;
  const size_t padded_floats = size_t(planes * plane + tail + 16);
  float* xp = thread_scratch<float>(padded_floats, 3);
  const int64_t pieces = int64_t(parallel_pieces(double(planes * plane), double(1 << 18)));
  parallel_for(size_t(pieces), [&](size_t piece) {
    for (int64_t p = planes * int64_t(piece) / pieces; p < planes * int64_t(piece + 1) / pieces;
         ++p) {
      const int64_t a = phase_rows[size_t(p % phases / col_phases)];
      const int64_t b = phase_cols[size_t(p % col_phases)];
      float* dst = xp + p * plane;
      fill_phase_plane(x + p / phases * in_size, H, W, a - PT, SH, b - PL, SW, HP, WP, dst);
      // The gap to the next plane is read too (past a row's last output, by whole
      // panels): zeros, since stale bits there could be subnormals, which slow the FMAs
      // that read them by orders of magnitude even though their results are dropped.
      std::fill(dst + HP * WP, dst + plane, 0.0f);
    }
  });
  std::fill(xp + planes * plane, xp + padded_floats, 0.0f);
  return xp;
}

// Depthwise conv (one input channel per group; `mult` outputs per channel) into y (one
// image, C * mult channels): 2-D float by rows, the rest by accumulating each kernel tap
// straight into a zeroed y. An im2col and a one-row GEMM per channel would cost more than
// the arithmetic.
template <typename T>
void depthwise(const Lattice& L, int64_t channels, int64_t mult, const T* x, const T* w, T* y) {
  if constexpr (std::is_same_v<T, float>) {
    if (L.r == 2) return depthwise_2d_f32(L, channels, mult, x, w, y);
  }
  std::fill(y, y + channels * mult * L.grid_size(), T(0));
  if (L.r == 1) return depthwise_1d(L, channels, mult, x, w, y);
  const int64_t rows = L.grid_size() / L.grid[L.r - 1];
  const int64_t ksize = L.kernel_size(), plane = L.grid_size();
  for_each_col_row(L, channels, 0, rows,
                   [&](int64_t, int64_t c, int64_t tap, int64_t j0, int64_t base, int64_t lo,
                       int64_t hi, int64_t first, int64_t step) {
                     if (base < 0) return;
                     const T* src = x + base + first;  // the element of position lo
                     for (int64_t m = 0; m < mult; ++m) {
                       const T wv = w[(c * mult + m) * ksize + tap];
                       T* dst = y + (c * mult + m) * plane + j0 + lo;
                       const int64_t count = hi - lo;
                       if (step == 1) {
                         for (int64_t o = 0; o < count; ++o) dst[o] += wv * src[o];
                       } else {
                         for (int64_t o = 0; o < count; ++o) dst[o] += wv * src[o * step];
                       }
                     }
                   });
}

template <typename T>
void add_bias(T* y, const T* bias, int64_t batches, int64_t channels, int64_t plane) {
  for (int64_t n = 0; n < batches; ++n)
    for (int64_t c = 0; c < channels; ++c) {
      T* p = y + (n * channels + c) * plane;
      const T b = bias[c];
      for (int64_t i = 0; i < plane; ++i) p[i] += b;
    }
}

// Converts T inputs to the compute type and calls fn(x, w, b, y) with compute-type pointers.
template <typename T, typename Fn>
void with_compute_type(const Tensor& x, const Tensor& w, const Tensor* b, Tensor& y, Fn fn) {
  if constexpr (kHalf<T>) {
    const auto fx = widen(x.data<T>(), x.numel());
    const auto fw = widen(w.data<T>(), w.numel());
    std::vector<float> fb;
    if (b) fb = widen(b->data<T>(), b->numel());
    std::vector<float> fy(size_t(y.numel()));
    fn(fx.data(), fw.data(), b ? fb.data() : nullptr, fy.data());
    T* out = y.data<T>();
    for (size_t i = 0; i < fy.size(); ++i) out[i] = T(fy[i]);
  } else {
    fn(x.data<T>(), w.data<T>(), b ? b->data<T>() : nullptr, y.data<T>());
  }
}

// FusedConv's sum input in the compute type: float16/bfloat16 widened into `wide`.
template <typename T>
const std::conditional_t<kHalf<T>, float, T>* sum_input(const Tensor* z, std::vector<float>& wide) {
  if (!z) return nullptr;
  if constexpr (kHalf<T>) {
    wide = widen(z->data<T>(), z->numel());
    return wide.data();
  } else {
    return z->data<T>();
  }
}

Status check_bias(const Tensor* b, int64_t channels) {
  if (b && (b->rank() != 1 || b->shape()[0] != channels))
    return invalid_argument("bias has shape ", b->shape().to_string(), "; expected [", channels,
                            "]");
  return Status();
}

std::span<const int64_t> spatial(const Shape& s) { return s.span().subspan(2); }

// The element types whose constant weights the GEMM can pack (float_data widens them).
bool is_float_like(const Tensor& t) {
  return t.dtype() == DataType::kFloat || t.dtype() == DataType::kFloat16 ||
         t.dtype() == DataType::kBFloat16;
}

// Constant weights packed per group for the products that read them whole: as right
// operands (Conv: W_g^T, K x M/G, the thin-output path) or left ones (ConvTranspose:
// W_g^T). Packed on the first run that needs them, not at prepare: planning then never
// holds a model's weights twice at once (decoded and packed), which is most of a small
// model's peak memory. Compute uses them only for that very constant (`source`).
// The micro-kernel of the thin-output path (Y^T = col^T W^T, stored transposed).
gemm::MicroKernel thin_kernel() {
  return gemm::best_kernel() == gemm::MicroKernel::kAvx512 ? gemm::MicroKernel::kAvx512x48
                                                           : gemm::MicroKernel::kAuto;
}

struct PackedWeights {
  Tensor source;  // set at prepare when the constant's shape can be packed
  bool left = false;
  int64_t groups = 1;

  bool matches(const Tensor& w) const { return source.defined() && w.raw() == source.raw(); }

  // The packed groups, packed by the first caller (threads race to call_once).
  const std::vector<gemm::PackedMatrix>& get() const {
    std::call_once(lazy_->once, [&] {
      std::vector<float> wide;
      const float* pw = float_data(source, wide);
      const int64_t per_group = source.shape()[0] / groups,
                    inner = source.numel() / source.shape()[0];
      for (int64_t g = 0; g < groups; ++g) {
        const float* wg = pw + g * per_group * inner;
        // Right operands: for the 8 x 48 AVX-512 kernel, whose 8-row tiles store the
        // transposed output in registers (thin_kernel), in slices up to 512 deep (fewer
        // passes over C; measured on 7x7 outputs: the transposed store then costs no more
        // than a row-major one, against 10-20% with 12-row tiles spilled).
        lazy_->packed.push_back(
            left ? gemm::PackedMatrix::pack_left(true, inner, per_group, wg, inner)
                 : gemm::PackedMatrix::pack_right(true, inner, per_group, wg, inner, thin_kernel(),
                                                  std::min<int64_t>(inner, 512)));
      }
    });
    return lazy_->packed;
  }

 private:
  struct Lazy {
    std::once_flag once;
    std::vector<gemm::PackedMatrix> packed;
  };
  std::unique_ptr<Lazy> lazy_ = std::make_unique<Lazy>();  // the kernel moves
};

// FusedConv's activation, applied to each finished block of output, and nxrt's optional
// affine map after it (post_scale, post_shift: a Mul and Add by constants that followed).
struct ConvActivation {
  vmath::Unary fn;
  vmath::UnaryParams params;
  float post_scale = 1.0f, post_shift = 0.0f;
  bool post() const { return post_scale != 1.0f || post_shift != 0.0f; }
};

class ConvKernel final : public Kernel {
 public:
  // bn_epsilon: nxrt's FusedConv with inputs 4..7 (scale, B, mean, var of a
  // BatchNormalization applied to the conv's output); nullopt otherwise.
  // broadcast_sum: Z may broadcast against the conv's output (nxrt's FusedConv); else it
  // must have its shape (com.microsoft's).
  ConvKernel(WindowAttrs attrs, int64_t group, std::optional<ConvActivation> activation = {},
             bool has_sum = false, std::optional<float> bn_epsilon = {}, bool broadcast_sum = false)
      : attrs_(std::move(attrs)),
        group_(group),
        activation_(activation),
        has_sum_(has_sum),
        broadcast_sum_(broadcast_sum),
        bn_epsilon_(bn_epsilon) {}

  // Marks a constant float/float16/bfloat16 W for packing on first use; leaves the kernel
  // unpacked if W's shape cannot be right (compute reports that).
  void pack_weights(const Tensor& w) {
    if (w.rank() < 3 || w.shape()[0] % group_ != 0 || w.numel() == 0 || !is_float_like(w)) return;
    packed_.source = w;
    packed_.groups = group_;
  }

  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    const Tensor& w = *ctx.input(1);
    const Tensor* b = ctx.input(2);
    const Tensor* z = has_sum_ ? ctx.input(3) : nullptr;
    Lattice L;
    Tensor* y = nullptr;
    Shape conv_shape;
    NXRT_RETURN_IF_ERROR(prepare_output(ctx, x, w, b, L, y, z, &conv_shape));
    if (z && (z->dtype() != x.dtype() || (!y && !broadcast_sum_)))
      return invalid_argument("the sum input Z is ", tensor_type_name(z->dtype()), " ",
                              z->shape().to_string(),
                              "; FusedConv needs the output's type and "
                              "shape ",
                              conv_shape.to_string());
    if (!y) return broadcast_sum(ctx, x, w, b, *z, L, conv_shape);
    if (y->numel() == 0) return Status();
    const int64_t N = x.shape()[0], C = x.shape()[1], M = w.shape()[0];
    switch (x.dtype()) {
      NXRT_CASES_FLOAT({
        using W = std::conditional_t<kHalf<T>, float, T>;
        const PackedWeights* packed = packed_.matches(w) ? &packed_ : nullptr;
        std::vector<float> wide_z;
        const W* pz = sum_input<T>(z, wide_z);
        // The fused BN's per-channel map, per run (its parameters may change), in per-thread
        // scratch (slot 2: the depthwise planes use slot 1) so warm runs do not allocate.
        W* bn_scale = bn_epsilon_ ? thread_scratch<W>(size_t(2 * M), 2) : nullptr;
        W* bn_shift = bn_scale ? bn_scale + M : nullptr;
        if (bn_epsilon_) NXRT_RETURN_IF_ERROR(batch_norm_affine<T>(ctx, b, M, bn_scale, bn_shift));
        with_compute_type<T>(x, w, b, *y, [&](const W* px, const W* pw, const W* pb, W* py) {
          if (bn_epsilon_)
            run<W>(L, N, C, M, px, pw, bn_shift, py, packed, pz, bn_scale);
          else
            run<W>(L, N, C, M, px, pw, pb, py, packed, pz);
        });
      })
      default:
        return not_implemented("Conv of ", tensor_type_name(x.dtype()));
    }
    return Status();
  }

  // nxrt's FusedConv whose sum input Z does not have the conv's shape (the Add it came
  // from broadcast them): the conv, with its bias and normalization, into a temporary,
  // then Y = activation(conv + Z) with numpy broadcasting. Exporters' residual Adds
  // have equal shapes, which take the fused path; this keeps any other model exact.
  Status broadcast_sum(KernelContext& ctx, const Tensor& x, const Tensor& w, const Tensor* b,
                       const Tensor& z, const Lattice& L, const Shape& conv_shape) const {
    NXRT_ASSIGN_OR_RETURN(Tensor conv, Tensor::allocate_uninitialized(x.dtype(), conv_shape));
    const int64_t N = x.shape()[0], C = x.shape()[1], M = w.shape()[0];
    const ConvKernel plain(attrs_, group_, std::nullopt, false, bn_epsilon_);
    switch (x.dtype()) {
      NXRT_CASES_FLOAT({
        using W = std::conditional_t<kHalf<T>, float, T>;
        W* bn_scale = bn_epsilon_ ? thread_scratch<W>(size_t(2 * M), 2) : nullptr;
        W* bn_shift = bn_scale ? bn_scale + M : nullptr;
        if (bn_epsilon_) NXRT_RETURN_IF_ERROR(batch_norm_affine<T>(ctx, b, M, bn_scale, bn_shift));
        if (conv.numel() > 0)
          with_compute_type<T>(x, w, b, conv, [&](const W* px, const W* pw, const W* pb, W* py) {
            plain.run<W>(L, N, C, M, px, pw, bn_epsilon_ ? bn_shift : pb, py, nullptr, nullptr,
                         bn_scale);
          });
        return broadcast_binary<T, T, T>(ctx, conv, z, [&](T a, T c) {
          double v = double(W(a)) + double(W(c));
          if (activation_)
            v = vmath::reference(activation_->fn, activation_->params, v) *
                    activation_->post_scale +
                activation_->post_shift;
          return T(W(v));
        });
      })
      default:
        return not_implemented("Conv of ", tensor_type_name(x.dtype()));
    }
  }

  // The run-time BatchNormalization as a per-channel affine map of the conv's output
  // (bias included): y = conv * scale + shift, scale = s / sqrt(var + eps),
  // shift = (bias - mean) * scale + B.
  template <typename T, typename W = std::conditional_t<kHalf<T>, float, T>>
  Status batch_norm_affine(KernelContext& ctx, const Tensor* bias, int64_t M, W* scale,
                           W* shift) const {
    const char* names[] = {"scale", "B", "input_mean", "input_var"};
    const Tensor* p[4];
    for (size_t i = 0; i < 4; ++i) {
      p[i] = ctx.input(4 + i);
      if (!p[i] || p[i]->dtype() != ctx.input(0)->dtype() || p[i]->numel() != M)
        return invalid_argument("the fused BatchNormalization's ", names[i], " must be ", M,
                                " values of the input's type");
    }
    for (int64_t m = 0; m < M; ++m) {
      const double s = double(W(p[0]->data<T>()[m])) /
                       std::sqrt(double(W(p[3]->data<T>()[m])) + double(*bn_epsilon_));
      const double b0 = bias ? double(W(bias->data<T>()[m])) : 0.0;
      scale[size_t(m)] = W(s);
      shift[size_t(m)] =
          W((b0 - double(W(p[2]->data<T>()[m]))) * s + double(W(p[1]->data<T>()[m])));
    }
    return Status();
  }

  // Validates shapes, resolves the geometry and gets the output buffer (with
  // `sum_shape`: output 0 only when Z has the conv's shape; else y stays null and
  // *sum_shape is the conv's shape, for the broadcasting sum).
  Status prepare_output(KernelContext& ctx, const Tensor& x, const Tensor& w, const Tensor* b,
                        Lattice& L, Tensor*& y, const Tensor* z = nullptr,
                        Shape* conv_shape = nullptr) const {
    if (x.rank() < 3 || w.rank() != x.rank())
      return invalid_argument("Conv needs X of rank >= 3 and W of the same rank, got ",
                              x.shape().to_string(), " and ", w.shape().to_string());
    const int64_t N = x.shape()[0], C = x.shape()[1], M = w.shape()[0];
    if (C != w.shape()[1] * group_ || M % group_ != 0)
      return invalid_argument("X ", x.shape().to_string(), " and W ", w.shape().to_string(),
                              " do not match group=", group_);
    NXRT_RETURN_IF_ERROR(check_bias(b, M));
    const std::span<const int64_t> kernel = spatial(w.shape());
    if (!attrs_.kernel_shape.empty() &&
        !std::equal(attrs_.kernel_shape.begin(), attrs_.kernel_shape.end(), kernel.begin(),
                    kernel.end()))
      return invalid_argument("kernel_shape does not match W ", w.shape().to_string());
    Window win;
    NXRT_RETURN_IF_ERROR(resolve_window(attrs_, spatial(x.shape()), kernel, win));
    Shape out{N, M};
    for (int64_t d : win.out) out.push_back(d);
    if (conv_shape) *conv_shape = out;
    if (!z || z->shape() == out) {
      NXRT_ASSIGN_OR_RETURN(y, ctx.output(0, out));
    }
    L = Lattice{win.rank, win.in, win.out, win.kernel, win.stride, win.dilation, win.pad_begin};
    L.drop_unit_dims();
    return Status();
  }

  // Scales (fused BatchNormalization) and adds the bias and the sum input to `channels`
  // rows of `cols` outputs starting at y[offset] (channel first_channel; rows out_size
  // apart) and applies the activation: called on each block right after its product,
  // while the block is in cache.
  template <typename T>
  void finish(T* y, const T* z, const T* bias, const T* scale, int64_t out_size, int64_t offset,
              int64_t first_channel, int64_t channels, int64_t cols) const {
    if (!bias && !z && !activation_) return;
    if constexpr (std::is_same_v<T, float>) {
      float lo, hi;
      if (!z && cols < 16 && clamp_bounds(lo, hi)) {
        // Rows of a few positions (the audio encoders' last layers): the block at once,
        // where a vector call per row costs more than its handful of outputs.
        vmath::channel_affine_clamp(y + offset, channels, cols, out_size,
                                    scale ? scale + first_channel : nullptr,
                                    bias ? bias + first_channel : nullptr, lo, hi);
        return;
      }
    }
    for (int64_t c = 0; c < channels; ++c) {
      T* row = y + offset + c * out_size;
      if constexpr (std::is_same_v<T, float>) {
        if (!z) {
          // One vector pass: activation(row * scale + bias).
          epilogue(scale ? scale[first_channel + c] : 1.0f, bias ? bias[first_channel + c] : 0.0f,
                   row, row, cols);
          continue;
        }
      }
      if (scale) {
        const T s = scale[first_channel + c], b = bias[first_channel + c];
        for (int64_t i = 0; i < cols; ++i) row[i] = row[i] * s + b;
      } else if (bias) {
        const T b = bias[first_channel + c];
        for (int64_t i = 0; i < cols; ++i) row[i] += b;
      }
      if (z) {
        const T* zrow = z + offset + c * out_size;
        for (int64_t i = 0; i < cols; ++i) row[i] += zrow[i];
      }
      if (!activation_) continue;
      const ConvActivation& act = *activation_;
      if constexpr (std::is_same_v<T, float>) {
        vmath::unary(act.fn, act.params, row, row, size_t(cols));
        if (act.post())
          vmath::unary_affine(vmath::Unary::kIdentity, {}, act.post_scale, act.post_shift, row, row,
                              size_t(cols));
      } else {
        for (int64_t i = 0; i < cols; ++i)
          row[i] = T(vmath::reference(act.fn, act.params, double(row[i])) * act.post_scale +
                     act.post_shift);
      }
    }
  }

  // The epilogue as a clamp: [lo, hi] for no activation (infinite), Relu or Clip; false
  // for the others.
  bool clamp_bounds(float& lo, float& hi) const {
    lo = -std::numeric_limits<float>::infinity();
    hi = std::numeric_limits<float>::infinity();
    if (!activation_) return true;
    if (activation_->post()) return false;
    if (activation_->fn == vmath::Unary::kRelu) {
      lo = 0.0f;
      return true;
    }
    if (activation_->fn == vmath::Unary::kClip) {
      lo = activation_->params.alpha;
      hi = activation_->params.beta;
      return true;
    }
    return false;
  }

  // dst = activation(src * scale + bias), then the post map: the epilogue of one row
  // without a sum input (finish() for a float block, from another buffer).
  void epilogue(float scale, float bias, const float* src, float* dst, int64_t n) const {
    vmath::unary_affine(activation_ ? activation_->fn : vmath::Unary::kIdentity,
                        activation_ ? activation_->params : vmath::UnaryParams{}, scale, bias, src,
                        dst, size_t(n));
    if (activation_ && activation_->post())
      vmath::unary_affine(vmath::Unary::kIdentity, {}, activation_->post_scale,
                          activation_->post_shift, dst, dst, size_t(n));
  }

  // A 1-D convolution of a single input channel and a few filters (FIR filters):
  // output o of filter m is the dot product of w_m with the window at o * stride, and the
  // windows overlap, so an im2col would copy the signal K / stride times. Outputs whose
  // window lies inside the signal are one strided GEMV per filter (rows of A are the
  // overlapping windows, read in place); the few at the borders sum their clipped taps.
  void single_channel_1d(const Lattice& L, int64_t N, int64_t M, const float* x, const float* w,
                         float* y, const float* z, const float* bias, const float* scale) const {
    const int64_t in = L.image[0], out = L.grid[0], K = L.kernel[0], s = L.stride[0];
    const int64_t pad = L.pad[0];
    int64_t lo, hi;
    inner_outputs(out, s, pad, K, 1, in, lo, hi);
    parallel_for(size_t(N * M), [&](size_t task) {
      const int64_t n = int64_t(task) / M, m = int64_t(task) % M;
      const float* xn = x + n * in;
      const float* wm = w + m * K;
      float* ym = y + (n * M + m) * out;
      if (hi > lo)
        gemm::sgemm(false, true, hi - lo, 1, K, 1.0f, xn + lo * s - pad, s, wm, K, 0.0f, ym + lo,
                    1);
      auto border = [&](int64_t o) {
        const DimRange r = window_range(o * s - pad, K, 1, in);
        float acc = 0.0f;
        for (int64_t k = r.k_lo; k < r.k_hi; ++k) acc += wm[k] * xn[r.start + k];
        ym[o] = acc;
      };
      for (int64_t o = 0; o < lo; ++o) border(o);
      for (int64_t o = hi; o < out; ++o) border(o);
      finish(y, z, bias, scale, out, (n * M + m) * out, m, 1, out);
    });
  }

  // Constant weights packed as left operands (per group W_g, Mg x K) on first use, once
  // for all runs: only models that reach the wide paths pay the memory for a second
  // packing. `deep`: in K slices as deep as 320 (one C pass for most 3x3 convs of up to
  // 32 channels, even splits above), for B rows read in place that overlap in cache or
  // are few (shifted_rows, pointwise convs); else the GEMM's own depth, which suits an
  // im2col matrix. A pointwise conv uses the deep packing on both its paths.
  const std::vector<gemm::PackedMatrix>& left_packed(
      const float* w, int64_t G, int64_t Mg, int64_t K, bool deep,
      gemm::MicroKernel kernel = gemm::MicroKernel::kAuto) const {
    LazyLeft& lazy = deep ? *deep_left_ : *left_;
    std::call_once(lazy.once, [&] {
      const int64_t slices = (K + 319) / 320, depth = deep ? (K + slices - 1) / slices : 0;
      for (int64_t g = 0; g < G; ++g)
        lazy.groups.push_back(
            gemm::PackedMatrix::pack_left(false, Mg, K, w + g * Mg * K, K, kernel, depth));
    });
    return lazy.groups;
  }

  // A 3x3 stride-1 convolution by Winograd's F(2x2, 3x3) (vmath/winograd.h): per chunk of
  // tile rows, the input tiles are transformed into 16 matrices (C x tiles), each
  // multiplied by its transformed weights (M x C, packed once), and the 16 products
  // transformed back into 2x2 outputs each, with the epilogue. 16 multiply-adds per 4
  // outputs per channel pair instead of 36. Single group, AVX-512, enough channels for
  // the transforms to be cheap beside the products; false when it does not apply.
  bool winograd(const Lattice& L, int64_t N, int64_t C, int64_t M, const float* x, const float* w,
                float* y, const float* z, const float* bias, const float* scale) const {
    // NXRT_CONV_NO_WINOGRAD=1 keeps 3x3 convolutions on the direct paths (to compare).
    static const bool disabled = std::getenv("NXRT_CONV_NO_WINOGRAD") != nullptr;
    if (disabled || L.r != 2 || group_ != 1) return false;
    if (L.kernel[0] != 3 || L.kernel[1] != 3 || L.stride[0] != 1 || L.stride[1] != 1 ||
        L.dilation[0] != 1 || L.dilation[1] != 1)
      return false;
    const int64_t H = L.image[0], W = L.image[1], OH = L.grid[0], OW = L.grid[1];
    const int64_t PT = L.pad[0], PL = L.pad[1];
    if (C < kWinogradMinInputs || M < kWinogradMinOutputs || OH < 4 || OW < 4) return false;
    if (gemm::best_kernel() != gemm::MicroKernel::kAvx512) return false;
    const int64_t TH = (OH + 1) / 2, TW = (OW + 1) / 2, tiles = TH * TW;
    // Chunks of tile rows counted over the whole batch (row r is row r % TH of image
    // r / TH), so small images share a product instead of each padding its own to whole
    // panels. Per chunk, its transformed tiles and products (16 x (C + M) floats per tile)
    // about 384 KiB, so they stay in L2 beside the planes and the packed weights (measured:
    // 1.5 MiB ran 10-20% slower on 56x56 and batched 21x21 maps), but at least 96 tiles
    // (two of the products' panels).
    const int64_t all_rows = N * TH;
    const int64_t target = std::clamp<int64_t>((int64_t(3) << 11) / (C + M), 96, 512);
    int64_t chunk_rows = std::clamp<int64_t>(target / TW, 1, all_rows);
    const int64_t width = int64_t(parallel_pieces(double(N * M * C * tiles) * 16, kMinConvWork));
    if (width > 1) chunk_rows = std::min(chunk_rows, (all_rows + width - 1) / width);
    const int64_t chunks = (all_rows + chunk_rows - 1) / chunk_rows;
    const int64_t max_cols = chunk_rows * TW;
    auto& lazy = *winograd_left_;
    std::call_once(lazy.once, [&] {
      std::vector<float> u(size_t(vmath::kWinogradMatrices * M * C));
      for (int64_t m = 0; m < M; ++m)
        for (int64_t c = 0; c < C; ++c)
          vmath::winograd_f23_filter(w + (m * C + c) * 9, u.data() + m * C + c, M * C);
      const gemm::MicroKernel kernel = gemm::pick_kernel(M, max_cols);
      for (int64_t xi = 0; xi < vmath::kWinogradMatrices; ++xi)
        lazy.groups.push_back(
            gemm::PackedMatrix::pack_left(false, M, C, u.data() + xi * M * C, C, kernel));
    });
    // The products run over whole vectors; the columns past a chunk's tiles hold zeros.
    const int64_t ldv = gemm::in_place_ld((max_cols + 15) / 16 * 16);
    // Zero-bordered planes: the tiles reach row 2 TH + 1 and column 2 TW + 1, and a
    // transform reads 34 columns from its group's first tile.
    const int64_t HP = 2 * TH + 2, WP = 2 * TW + 34, plane = HP * WP;
    float lo = 0.0f, hi = 0.0f;
    const bool fused = clamp_bounds(lo, hi);
    const int64_t out_size = OH * OW;
    SmallVec<int64_t, 4> one_phase;
    one_phase.push_back(0);
    const float* all_planes =
        fill_planes(x, N * C, H, W, PT, PL, 1, 1, HP, WP, plane, one_phase, one_phase, 0);
    parallel_for(size_t(chunks), [&](size_t chunk) {
      const int64_t r0 = int64_t(chunk) * chunk_rows, r1 = std::min(all_rows, r0 + chunk_rows);
      const int64_t cols = (r1 - r0) * TW;
      constexpr int64_t kXi = vmath::kWinogradMatrices;
      float* v = thread_scratch<float>(size_t(kXi * C * ldv), 1);
      float* prod = thread_scratch<float>(size_t(kXi * M * ldv), 2);
      // Whole vectors: the GEMM packs a partial last panel and runs only its vectors
      // (whole panels would compute 96 columns for a 14x14 map's 49 tiles).
      const int64_t gemm_cols = (cols + 15) / 16 * 16;
      if (gemm_cols > cols)
        for (int64_t row = 0; row < kXi * C; ++row)
          std::fill(v + row * ldv + cols, v + row * ldv + gemm_cols, 0.0f);
      for (int64_t r = r0; r < r1; ++r) {
        const float* planes = all_planes + r / TH * C * plane;
        const int64_t ti = r % TH;
        for (int64_t c = 0; c < C; ++c)
          for (int64_t tj = 0; tj < TW; tj += 16)
            vmath::winograd_f23_input(planes + c * plane + 2 * ti * WP + 2 * tj, WP,
                                      std::min<int64_t>(16, TW - tj),
                                      v + c * ldv + (r - r0) * TW + tj, C * ldv);
      }
      for (int64_t xi = 0; xi < kXi; ++xi)
        gemm::sgemm_packed_left(lazy.groups[size_t(xi)], false, gemm_cols, 1.0f, v + xi * C * ldv,
                                ldv, 0.0f, prod + xi * M * ldv, ldv);
      for (int64_t m = 0; m < M; ++m) {
        vmath::WinogradEpilogue e;
        if (fused) {
          e.scale = scale ? scale[m] : 1.0f;
          e.shift = bias ? bias[m] : 0.0f;
          e.lo = lo;
          e.hi = hi;
          e.ldz = OW;
        }
        for (int64_t r = r0; r < r1; ++r) {
          const int64_t n = r / TH, ti = r % TH;
          for (int64_t tj = 0; tj < TW; tj += 16) {
            const int64_t at = (n * M + m) * out_size + 2 * ti * OW + 2 * tj;
            if (fused && z) e.z = z + at;
            vmath::winograd_f23_output(prod + m * ldv + (r - r0) * TW + tj, M * ldv,
                                       std::min<int64_t>(16, TW - tj), y + at, OW,
                                       std::min<int64_t>(2, OH - 2 * ti),
                                       std::min<int64_t>(32, OW - 2 * tj), e);
          }
        }
      }
      if (!fused) {
        // Per image: the chunk's output rows of each channel.
        for (int64_t r = r0; r < r1;) {
          const int64_t n = r / TH, end = std::min(r1, (n + 1) * TH);
          const int64_t t0 = r % TH, t1 = t0 + (end - r);
          finish(y, z, bias, scale, out_size, n * M * out_size + 2 * t0 * OW, 0, M,
                 std::min(OH, 2 * t1) * OW - 2 * t0 * OW);
          r = end;
        }
      }
    });
    return true;
  }

  // A convolution as a GEMM that reads its B straight from the input. Stride 1: each
  // image's channels are copied once into zero-bordered planes of width WP, and then row
  // (c, kh, kw) of the im2col matrix is the plane of c itself, shifted by kh * WP + kw,
  // over output positions laid out with the padded width (oh * WP + ow). Stride s: the
  // padded input is split into s x s phase planes (phase (a, b) holds the elements at
  // rows a mod s and columns b mod s), and tap (kh, kw) is the phase plane of
  // (kh mod s, kw mod s) shifted by (kh / s, kw / s): a stride-1 product again, with no
  // zero taps. The GEMM computes the WP - OW columns per row that are dropped, and skips
  // im2col's copy of K values per output (9 per 3x3 conv) with its cache and TLB misses.
  // 1-D and 2-D lattices, AVX-512 packed weights; false when it does not apply (the
  // caller takes the im2col path).
  bool shifted_rows(const Lattice& L, int64_t N, int64_t C, int64_t M, const float* x,
                    const float* w, float* y, const float* z, const float* bias,
                    const float* scale) const {
    // NXRT_CONV_IM2COL=1 keeps every convolution on im2col, to compare the paths on whole
    // models (like NXRT_GEMM_KERNEL for the micro-kernels). Read once.
    static const bool im2col_only = std::getenv("NXRT_CONV_IM2COL") != nullptr;
    if (im2col_only || L.r > 2) return false;
    const bool two = L.r == 2;
    const int64_t H = two ? L.image[0] : 1, W = L.image[L.r - 1];
    const int64_t OH = two ? L.grid[0] : 1, OW = L.grid[L.r - 1];
    const int64_t KH = two ? L.kernel[0] : 1, KW = L.kernel[L.r - 1];
    const int64_t DH = two ? L.dilation[0] : 1, DW = L.dilation[L.r - 1];
    const int64_t SH = two ? L.stride[0] : 1, SW = L.stride[L.r - 1];
    const int64_t PT = two ? L.pad[0] : 0, PL = L.pad[L.r - 1];
    if (SH > 4 || SW > 4) return false;  // phase planes would outnumber the taps
    const int64_t HP = OH + (KH - 1) * DH / SH, WP = OW + (KW - 1) * DW / SW;
    // The dropped columns cost as much as real ones: narrow planes (7x7 with a 3x3
    // kernel wastes 2 of 9) stay on im2col.
    if (OW * 5 < WP * 4) return false;
    const int64_t G = group_, Cg = C / G, Mg = M / G, K = Cg * KH * KW;
    // The row-pointer kernels exist for AVX-512 and AVX2. On AVX2 only where they save an
    // im2col matrix: pointwise convs ran 22% slower on them than on the strided GEMM
    // (shufflenet's grouped 1x1 convs on Zen 3), wider kernels 17% faster (basic-pitch).
    const gemm::MicroKernel isa = gemm::best_kernel();
    if (isa != gemm::MicroKernel::kAvx512 && (isa != gemm::MicroKernel::kAvx2 || KH * KW == 1))
      return false;
    // Only the phases some tap reads are built (a 1x1 stride-2 conv reads one of four).
    int64_t row_phase[4] = {-1, -1, -1, -1}, col_phase[4] = {-1, -1, -1, -1};
    int64_t row_phases = 0, col_phases = 0;
    SmallVec<int64_t, 4> phase_rows, phase_cols;  // the input row / column offset of each
    for (int64_t kh = 0; kh < KH; ++kh)
      if (row_phase[kh * DH % SH] < 0) {
        row_phase[kh * DH % SH] = row_phases++;
        phase_rows.push_back(kh * DH % SH);
      }
    for (int64_t kw = 0; kw < KW; ++kw)
      if (col_phase[kw * DW % SW] < 0) {
        col_phase[kw * DW % SW] = col_phases++;
        phase_cols.push_back(kw * DW % SW);
      }
    const int64_t phases = row_phases * col_phases, in_size = H * W;
    // A convolution with one phase, no padding and one column tap (1x1 convolutions
    // above all) reads its rows straight from the input: its padded planes would be the
    // input planes themselves (no row reads past its plane's end but for dropped columns,
    // which are never read). Only when their stride spreads a K slice over the L1 sets.
    const bool in_place =
        phases == 1 && KW == 1 && PT == 0 && HP == H && WP == W && gemm::readable_in_place(in_size);
    // Planes a stride apart that spreads the rows of one K slice over the L1 cache's sets.
    const int64_t plane = in_place ? in_size : gemm::in_place_ld(HP * WP);
    const float* xp = in_place ? x
                               : fill_planes(x, N * C, H, W, PT, PL, SH, SW, HP, WP, plane,
                                             phase_rows, phase_cols, (KW - 1) * DW / SW);

    // Chunks of whole output rows, 256 to 2048 columns: the block of output (Mg x
    // columns) at most about 1 MiB so it is still in L2 for the epilogue, and wide enough
    // that streaming the packed weights once per chunk stays cheap.
    const int64_t chunk_cols = std::clamp<int64_t>((int64_t(1) << 18) / Mg, 256, 2048);
    int64_t chunk = std::clamp<int64_t>(chunk_cols / WP, 1, OH);
    const int64_t width = int64_t(parallel_pieces(double(Mg * OH * OW * K), kMinConvWork));
    // With threads and fewer (image, group) pairs than threads, one product is split:
    // by its weights' rows when the weights outweigh the input planes they multiply (deep
    // layers on small planes: each thread then streams only its share of the weights), else
    // by output rows, in equal shares.
    const bool split_weights = width > 1 && N * G < width && Mg * K > Cg * phases * plane;
    if (!split_weights) chunk = balanced_chunk(OH, chunk, N * G, width);
    const int64_t chunks = (OH + chunk - 1) / chunk, out_size = OH * OW;
    if (in_place && KH == 1 && !split_weights) {
      // A pointwise conv whose chunk ends in a mostly empty panel (14x14 maps: 196
      // columns on 48-wide panels compute 240) goes to the strided GEMM instead, whose
      // narrow tiles cover that panel (22-28% faster there, measured alone); the
      // row-pointer kernels have no narrow tiles (their variants multiply the
      // sanitizer build's compile time).
      const gemm::MicroKernel kernel = gemm::pick_kernel(Mg, chunk * WP);
      const int64_t NR = kernel == gemm::MicroKernel::kAvx512x48 ? 48
                         : kernel == gemm::MicroKernel::kAvx2    ? 16
                                                                 : 32;
      const int64_t cols = chunk * WP, padded = (cols + NR - 1) / NR * NR;
      if ((padded - cols) * 16 > cols) return false;
    }
    // The micro-kernel that leaves less of a chunk's edge tiles empty (packed on the
    // first run, whose shapes later runs of a model repeat).
    const std::vector<gemm::PackedMatrix>& left =
        left_packed(w, G, Mg, K, true, gemm::pick_kernel(Mg, chunk * WP));
    const int64_t tile = left[0].row_tile();
    const int64_t m_step = split_weights ? ((Mg + width - 1) / width + tile - 1) / tile * tile : Mg;
    const int64_t m_blocks = (Mg + m_step - 1) / m_step;
    // With no activation, a Relu or a Clip, the micro-kernel finishes each tile itself,
    // sum input included, straight into Y (store.y set as a flag here).
    gemm::ConvOutput store;
    if (clamp_bounds(store.lo, store.hi)) {
      store.y = y;
      store.plane = out_size;
      store.wp = WP;
      store.ow = OW;
    }
    parallel_for(size_t(N * G * chunks * m_blocks), [&](size_t job) {
      const int64_t m0 = int64_t(job) % m_blocks * m_step, m1 = std::min(Mg, m0 + m_step);
      const int64_t task = int64_t(job) / m_blocks;
      const int64_t c = task % chunks, g = task / chunks % G, n = task / chunks / G;
      const int64_t r0 = c * chunk, r1 = std::min(OH, r0 + chunk), cols = (r1 - r0) * WP;
      const float** b_rows = thread_scratch<const float*>(size_t(K));
      const float* xg = xp + (n * C + g * Cg) * phases * plane;
      for (int64_t ci = 0, k = 0; ci < Cg; ++ci)
        for (int64_t kh = 0; kh < KH; ++kh)
          for (int64_t kw = 0; kw < KW; ++kw) {
            const int64_t th = kh * DH, tw = kw * DW;
            const float* phase =
                xg + (ci * phases + row_phase[th % SH] * col_phases + col_phase[tw % SW]) * plane;
            b_rows[k++] = phase + th / SH * WP + tw / SW;
          }
      float* yg = y + (n * M + g * Mg) * out_size;
      const int64_t first = (n * M + g * Mg + m0) * out_size + r0 * OW;
      // C for the K slices before the last: Y itself when no column is dropped, else a
      // block of the padded width.
      float* part = yg + r0 * OW;
      int64_t ldc = out_size;
      if (WP != OW) {
        ldc = (cols + 15) / 16 * 16 + 16;  // off the 4 KiB aliasing stride
        part = column_scratch<float>(size_t(Mg * ldc));
      }
      if (store.y) {
        // The kernel scales, shifts, clamps and places the last slice's tiles in Y.
        gemm::ConvOutput o = store;
        o.y = yg;
        o.scale = scale ? scale + g * Mg : nullptr;
        o.shift = bias ? bias + g * Mg : nullptr;
        o.z = z ? z + (yg - y) : nullptr;
        gemm::sgemm_packed_left_rows(left[size_t(g)], cols, b_rows, r0 * WP, part, ldc, m0, m1, &o);
        return;
      }
      gemm::sgemm_packed_left_rows(left[size_t(g)], cols, b_rows, r0 * WP, part, ldc, m0, m1);
      if (WP == OW) {
        finish(y, z, bias, scale, out_size, first, g * Mg + m0, m1 - m0, cols);
        return;
      }
      // The epilogue over each channel's whole block row (one call per channel, the
      // dropped columns included), then the kept columns move into Y. With a sum input the
      // epilogue waits until Z can be added in Y.
      const bool fused = !z;
      for (int64_t m = m0; m < m1; ++m) {
        float* row = part + m * ldc;
        if (fused)
          epilogue(scale ? scale[g * Mg + m] : 1.0f, bias ? bias[g * Mg + m] : 0.0f, row, row,
                   cols);
        for (int64_t oh = r0; oh < r1; ++oh)
          std::memcpy(yg + m * out_size + oh * OW, row + (oh - r0) * WP,
                      size_t(OW) * sizeof(float));
      }
      if (!fused) finish(y, z, bias, scale, out_size, first, g * Mg + m0, m1 - m0, (r1 - r0) * OW);
    });
    return true;
  }

  template <typename T>
  void run(const Lattice& L, int64_t N, int64_t C, int64_t M, const T* x, const T* w, const T* bias,
           T* y, const PackedWeights* packed = nullptr, const T* z = nullptr,
           const T* scale = nullptr) const {
    const int64_t G = group_, Cg = C / G, Mg = M / G;
    const int64_t in_size = L.image_size(), out_size = L.grid_size();
    const int64_t K = Cg * L.kernel_size();
    bool pointwise = true;
    for (size_t d = 0; d < L.r; ++d)
      pointwise &= L.kernel[d] == 1 && L.stride[d] == 1 && L.pad[d] == 0;
    const int64_t gl = L.grid[L.r - 1];
    const int64_t rows = out_size / gl;
    if constexpr (std::is_same_v<T, float>) {
      // Few filters only: with many (an STFT's 258), im2col + GEMM shares each copied
      // window among all of them and wins.
      if (C == 1 && G == 1 && M <= 4 && L.r == 1 && L.dilation[0] == 1 && L.kernel[0] > 1) {
        single_channel_1d(L, N, M, x, w, y, z, bias, scale);
        return;
      }
    }
    if (Cg == 1 && G > 1 && Mg <= 4 && !pointwise) {
      // Channels are independent: blocks of them go to the run's threads. A depthwise
      // multiply-add costs about 8 of a GEMM's (shufflenet's 3x3 layers on 136 x 28 x 28:
      // 110 us for 0.96 M of them, under the GEMM threshold), so its threshold is 1/8.
      const int64_t ksize = L.kernel_size();
      const int64_t pieces =
          int64_t(parallel_pieces(double(M * out_size * ksize), kMinConvWork / 8));
      const int64_t block = (C + pieces - 1) / pieces, blocks = (C + block - 1) / block;
      for (int64_t n = 0; n < N; ++n)
        parallel_for(size_t(blocks), [&](size_t b) {
          // Bias and activation per channel, while its outputs are still in L1.
          const int64_t c0 = int64_t(b) * block, c1 = std::min(C, int64_t(b + 1) * block);
          if constexpr (std::is_same_v<T, float>) {
            // Short 1-D rows: the block's channels in one call, a row per register.
            if (L.r == 1 && Mg == 1 && L.dilation[0] == 1 &&
                vmath::depthwise_short_rows(x + (n * C + c0) * in_size, L.image[0], c1 - c0,
                                            w + c0 * ksize, ksize, L.stride[0], L.pad[0], out_size,
                                            y + (n * M + c0) * out_size)) {
              finish(y, z, bias, scale, out_size, (n * M + c0) * out_size, c0, c1 - c0, out_size);
              return;
            }
          }
          for (int64_t c = c0; c < c1; ++c) {
            depthwise(L, 1, Mg, x + (n * C + c) * in_size, w + c * Mg * ksize,
                      y + (n * M + c * Mg) * out_size);
            finish(y, z, bias, scale, out_size, (n * M + c * Mg) * out_size, c * Mg, Mg, out_size);
          }
        });
      return;
    }
    if constexpr (std::is_same_v<T, float>) {
      if (packed && out_size <= kPackedMaxPositions) {
        const std::vector<gemm::PackedMatrix>& wt = packed->get();
        // One input channel, unpadded and undilated (an STFT's framing): output position
        // o's window is x[o * stride, o * stride + kernel), a row of A read in place.
        const bool windows = Cg == 1 && L.r == 1 && L.pad[0] == 0 && L.dilation[0] == 1 &&
                             (gl - 1) * L.stride[0] + L.kernel[0] <= L.image[0];
        auto product = [&](int64_t task) {
          const int64_t n = task / G, g = task % G;
          const float* xg = x + (n * C + g * Cg) * in_size;
          // The input already is the column matrix when the conv is pointwise. The GEMM
          // reads col^T in place (its rows are out_size floats).
          float* col = pointwise || windows ? nullptr : column_scratch<float>(size_t(K * out_size));
          if (col) im2col(L, Cg, 0, rows, xg, col, out_size);
          // Y_g^T (positions x Mg) = col^T * W_g^T, stored transposed into Y_g; a
          // single-channel signal's windows are col^T's rows in place, `stride` apart.
          float* yg = y + (n * M + g * Mg) * out_size;
          if (windows)
            gemm::sgemm_packed_right(false, out_size, 1.0f, xg, L.stride[0], wt[size_t(g)], 0.0f,
                                     yg, out_size, true);
          else
            gemm::sgemm_packed_right(true, out_size, 1.0f, pointwise ? xg : col, out_size,
                                     wt[size_t(g)], 0.0f, yg, out_size, true);
          finish(y, z, bias, scale, out_size, (n * M + g * Mg) * out_size, g * Mg, Mg, out_size);
        };
        // Several (image, group) products go to the threads whole (each GEMM then runs
        // serially on its thread, im2col included); a single one splits its GEMM.
        const int64_t tasks = N * G;
        const int64_t width =
            int64_t(parallel_pieces(double(tasks * Mg * out_size * K), kMinConvWork));
        if (width > 1 && (tasks % width == 0 || tasks >= 4 * width)) {
          parallel_for(size_t(tasks), [&](size_t task) { product(int64_t(task)); });
        } else {
          for (int64_t task = 0; task < tasks; ++task) product(task);
        }
        return;
      }
    }
    // Whole grid rows at a time: ~256K column entries (1 MiB, so the column matrix im2col
    // writes is still in L2 when the GEMM reads it in place), but at least ~256 columns
    // (8 panels) so packing the weights, when they are not constant, stays cheap.
    const int64_t budget_rows = (int64_t(1) << 18) / std::max<int64_t>(1, K * gl);
    int64_t chunk = std::max<int64_t>({int64_t(1), budget_rows, (255 + gl) / gl});
    // With threads, a single image is cut into at least one chunk per thread, so im2col
    // runs in parallel too (each chunk's product then runs on its own thread).
    // Unless the weights are the larger operand (more output channels than positions):
    // then the GEMM splits them by rows, so each thread streams only its share.
    const int64_t width =
        Mg > out_size ? 1 : int64_t(parallel_pieces(double(Mg * out_size * K), kMinConvWork));
    chunk = balanced_chunk(rows, chunk, N * G, width);
    // Every (image, group, chunk of rows) is independent: with several, they go to the
    // run's threads (each with its own column scratch); with one, the GEMM splits itself.
    // A pointwise conv reads its chunks straight from the input.
    const int64_t chunks = (rows + chunk - 1) / chunk;
    const std::vector<gemm::PackedMatrix>* left = nullptr;
    if constexpr (std::is_same_v<T, float>) {
      if (packed) {
        if (winograd(L, N, C, M, x, w, y, z, bias, scale)) return;
        if (shifted_rows(L, N, C, M, x, w, y, z, bias, scale)) return;
        // A pointwise conv reads its input in place: deep K slices write each block of Y
        // fewer times.
        left = &left_packed(w, G, Mg, K, pointwise);
      }
    }
    auto product = [&](int64_t g, int64_t cols, const T* b, int64_t ldb, T* out) {
      if constexpr (std::is_same_v<T, float>) {
        if (left) {
          gemm::sgemm_packed_left((*left)[size_t(g)], false, cols, 1.0f, b, ldb, 0.0f, out,
                                  out_size);
          return;
        }
      }
      gemm_any<T>(false, false, Mg, cols, K, w + g * Mg * K, K, b, ldb, T(0), out, out_size);
    };
    parallel_for(size_t(N * G * chunks), [&](size_t task) {
      const int64_t c = int64_t(task) % chunks, g = int64_t(task) / chunks % G;
      const int64_t n = int64_t(task) / chunks / G;
      const T* xg = x + (n * C + g * Cg) * in_size;
      T* yg = y + (n * M + g * Mg) * out_size;
      const int64_t r0 = c * chunk, r1 = std::min(rows, r0 + chunk);
      const int64_t cols = (r1 - r0) * gl;
      if (pointwise) {
        // The input already is the column matrix (out dims equal in dims here).
        product(g, cols, xg + r0 * gl, in_size, yg + r0 * gl);
      } else {
        // Rows of the column matrix padded so the GEMM reads it in place, unpacked.
        const int64_t ld = gemm::in_place_ld(gl * std::min(chunk, rows));
        T* col = column_scratch<T>(size_t(K * ld));
        im2col(L, Cg, r0, r1, xg, col, ld);
        product(g, cols, col, ld, yg + r0 * gl);
      }
      finish(y, z, bias, scale, out_size, (n * M + g * Mg) * out_size + r0 * gl, g * Mg, Mg, cols);
    });
  }

 private:
  WindowAttrs attrs_;
  int64_t group_;
  std::optional<ConvActivation> activation_;
  bool has_sum_;  // FusedConv's input 3, added before the activation
  bool broadcast_sum_;
  std::optional<float> bn_epsilon_;
  PackedWeights packed_;
  // Per group W_g packed as a left operand, set once (behind a pointer: the kernel moves).
  struct LazyLeft {
    std::once_flag once;
    std::vector<gemm::PackedMatrix> groups;
  };
  std::unique_ptr<LazyLeft> left_ = std::make_unique<LazyLeft>();
  std::unique_ptr<LazyLeft> deep_left_ = std::make_unique<LazyLeft>();
  // The 16 Winograd-transformed weight matrices (M x C each), packed as left operands.
  std::unique_ptr<LazyLeft> winograd_left_ = std::make_unique<LazyLeft>();
};

// ConvInteger: (x - x_zero_point) conv (w - w_zero_point) in int32. Padding holds the
// zero point, i.e. 0 after the shift, so the float path's zero padding is right.
class ConvIntegerKernel final : public Kernel {
 public:
  ConvIntegerKernel(ConvKernel conv, int64_t group) : conv_(std::move(conv)), group_(group) {}

  // Packs a constant weight (and its zero points) for the 8-bit GEMM once.
  void pack_weights(const Tensor& w, const Tensor* wz) {
    if (w.rank() < 3 || w.shape()[0] % group_ != 0) return;
    const int64_t M = w.shape()[0];
    if (wz && wz->numel() != 1 && wz->numel() != M) return;
    packed_ = pack_groups(w, wz);
    packed_w_ = w.raw();
    packed_wz_ = wz ? wz->raw() : nullptr;
  }

  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    const Tensor& w = *ctx.input(1);
    Lattice L;
    Tensor* y = nullptr;
    NXRT_RETURN_IF_ERROR(conv_.prepare_output(ctx, x, w, nullptr, L, y));
    if (y->numel() == 0) return Status();
    const int64_t N = x.shape()[0], C = x.shape()[1], M = w.shape()[0];
    const Tensor* xz = ctx.input(2);
    const Tensor* wz = ctx.input(3);
    if (xz && xz->numel() != 1)
      return invalid_argument("x_zero_point must be a scalar, got ", xz->shape().to_string());
    if (wz && wz->numel() != 1 && wz->numel() != M)
      return invalid_argument("w_zero_point has ", wz->numel(), " values; expected 1 or ", M);
    const int32_t x0 = xz ? int_at(*xz, 0) : 0;
    if (L.r <= 2) {
      // The 8-bit GEMM on a channels-last copy of x (kernels/qconv_gemm.h).
      const bool same = w.raw() == packed_w_ && (wz ? wz->raw() : nullptr) == packed_wz_;
      std::vector<gemm::PackedQuantB> fresh;
      if (!same || packed_.empty()) fresh = pack_groups(w, wz);
      const std::vector<gemm::PackedQuantB>& packed = fresh.empty() ? packed_ : fresh;
      run_qconv(geometry(C, M, &L), N, static_cast<const uint8_t*>(x.raw()),
                x.dtype() == DataType::kInt8, x0, packed, y->data<int32_t>());
      return Status();
    }
    std::vector<int32_t> wx(size_t(x.numel())), ww(size_t(w.numel()));
    for (size_t i = 0; i < wx.size(); ++i) wx[i] = int_at(x, int64_t(i)) - x0;
    const int64_t per_m = M > 0 ? w.numel() / M : 0;
    for (size_t i = 0; i < ww.size(); ++i) {
      const int64_t m = per_m > 0 ? int64_t(i) / per_m : 0;
      ww[i] = int_at(w, int64_t(i)) - (wz ? int_at(*wz, wz->numel() == 1 ? 0 : m) : 0);
    }
    conv_.run<int32_t>(L, N, C, M, wx.data(), ww.data(), nullptr, y->data<int32_t>());
    return Status();
  }

 private:
  static int32_t int_at(const Tensor& t, int64_t i) {
    return t.dtype() == DataType::kUint8 ? int32_t(t.data<uint8_t>()[i])
                                         : int32_t(t.data<int8_t>()[i]);
  }

  // The geometry of a lattice of rank 1 or 2; without one (packing) only the channels and
  // the group count matter, the window's taps come from W.
  QConvGeometry geometry(int64_t C, int64_t M, const Lattice* L) const {
    QConvGeometry g;
    g.C = C;
    g.M = M;
    g.group = group_;
    if (!L) return g;
    const size_t last = L->r - 1;
    g.W = L->image[last];
    g.OW = L->grid[last];
    g.KW = L->kernel[last];
    g.SW = L->stride[last];
    g.DW = L->dilation[last];
    g.PL = L->pad[last];
    if (L->r == 2) {
      g.H = L->image[0];
      g.OH = L->grid[0];
      g.KH = L->kernel[0];
      g.SH = L->stride[0];
      g.DH = L->dilation[0];
      g.PT = L->pad[0];
    }
    return g;
  }

  // W_g^T ((kh, kw, c) x Mg) of each group packed, with w's zero points per output channel.
  std::vector<gemm::PackedQuantB> pack_groups(const Tensor& w, const Tensor* wz) const {
    const int64_t M = w.shape()[0];
    QConvGeometry g = geometry(w.shape()[1] * group_, M, nullptr);
    g.KW = w.numel() / (M * w.shape()[1]);  // all taps, in W's (row-major) order
    std::vector<int32_t> zero(size_t(wz ? wz->numel() : 0));
    for (size_t i = 0; i < zero.size(); ++i) zero[i] = int_at(*wz, int64_t(i));
    return pack_qconv_weights(g, static_cast<const uint8_t*>(w.raw()), w.dtype() == DataType::kInt8,
                              zero.data(), int64_t(zero.size()));
  }

  ConvKernel conv_;
  int64_t group_;
  std::vector<gemm::PackedQuantB> packed_;
  const void* packed_w_ = nullptr;   // the constant packed_ holds
  const void* packed_wz_ = nullptr;  // and its zero points
};

class ConvTransposeKernel final : public Kernel {
 public:
  ConvTransposeKernel(WindowAttrs attrs, int64_t group, std::vector<int64_t> output_padding,
                      std::vector<int64_t> output_shape)
      : attrs_(std::move(attrs)),
        group_(group),
        output_padding_(std::move(output_padding)),
        output_shape_(std::move(output_shape)) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    const Tensor& w = *ctx.input(1);
    const Tensor* b = ctx.input(2);
    if (x.rank() < 3 || w.rank() != x.rank())
      return invalid_argument("ConvTranspose needs X of rank >= 3 and W of the same rank, got ",
                              x.shape().to_string(), " and ", w.shape().to_string());
    const int64_t N = x.shape()[0], C = x.shape()[1];
    if (w.shape()[0] != C || C % group_ != 0)
      return invalid_argument("X ", x.shape().to_string(), " and W ", w.shape().to_string(),
                              " do not match group=", group_);
    const int64_t M = w.shape()[1] * group_;
    NXRT_RETURN_IF_ERROR(check_bias(b, M));
    Lattice L;
    NXRT_RETURN_IF_ERROR(geometry(spatial(x.shape()), spatial(w.shape()), L));
    Shape out{N, M};
    for (int64_t d : L.image) out.push_back(d);
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, out));
    if (y->numel() == 0) return Status();
    switch (x.dtype()) {
      NXRT_CASES_FLOAT({
        using W = std::conditional_t<kHalf<T>, float, T>;
        const PackedWeights* packed = packed_.matches(w) ? &packed_ : nullptr;
        with_compute_type<T>(x, w, b, *y, [&](const W* px, const W* pw, const W* pb, W* py) {
          run<W>(L, N, C, M, px, pw, pb, py, packed);
        });
      })
      default:
        return not_implemented("ConvTranspose of ", tensor_type_name(x.dtype()));
    }
    return Status();
  }

 private:
  Status geometry(std::span<const int64_t> in, std::span<const int64_t> kernel, Lattice& L) const {
    const size_t r = in.size();
    const WindowAttrs& a = attrs_;
    if (!a.kernel_shape.empty() &&
        !std::equal(a.kernel_shape.begin(), a.kernel_shape.end(), kernel.begin(), kernel.end()))
      return invalid_argument("kernel_shape does not match W");
    auto sized = [&](const std::vector<int64_t>& v, size_t n, int64_t fill, const char* what,
                     SmallVec<int64_t>& dst) -> Status {
      if (v.empty()) {
        dst.assign(n, fill);
        return Status();
      }
      if (v.size() != n) return invalid_argument(what, " has ", v.size(), " values, expected ", n);
      dst = v;
      return Status();
    };
    SmallVec<int64_t> pads, out_pad, out_shape;
    L.r = r;
    L.grid.assign(in.begin(), in.end());
    L.kernel.assign(kernel.begin(), kernel.end());
    NXRT_RETURN_IF_ERROR(sized(a.strides, r, 1, "strides", L.stride));
    NXRT_RETURN_IF_ERROR(sized(a.dilations, r, 1, "dilations", L.dilation));
    NXRT_RETURN_IF_ERROR(sized(a.pads, 2 * r, 0, "pads", pads));
    NXRT_RETURN_IF_ERROR(sized(output_padding_, r, 0, "output_padding", out_pad));
    if (!output_shape_.empty()) {
      // output_shape may list only the spatial dims or the full shape
      if (output_shape_.size() == r + 2)
        out_shape.assign(output_shape_.begin() + 2, output_shape_.end());
      else
        out_shape = output_shape_;
      if (out_shape.size() != r)
        return invalid_argument("output_shape has ", output_shape_.size(), " values for ", r,
                                " spatial dims");
    }
    L.image.assign(r, 0);
    L.pad.assign(r, 0);
    for (size_t d = 0; d < r; ++d) {
      const int64_t span = (kernel[d] - 1) * L.dilation[d] + 1;
      const int64_t full = L.stride[d] * (in[d] - 1) + out_pad[d] + span;
      if (!out_shape.empty() || a.auto_pad == AutoPad::kSameUpper ||
          a.auto_pad == AutoPad::kSameLower) {
        const int64_t target = out_shape.empty() ? in[d] * L.stride[d] : out_shape[d];
        const int64_t total = std::max<int64_t>(0, full - target);
        L.pad[d] = a.auto_pad == AutoPad::kSameUpper ? total / 2 : total - total / 2;
        L.image[d] = target;
      } else {
        const int64_t pb = a.auto_pad == AutoPad::kValid ? 0 : pads[d];
        const int64_t pe = a.auto_pad == AutoPad::kValid ? 0 : pads[d + r];
        L.pad[d] = pb;
        L.image[d] = full - pb - pe;
      }
      if (L.image[d] < 0)
        return invalid_argument("ConvTranspose output dim ", d, " would be negative");
    }
    return Status();
  }

  template <typename T>
  void run(const Lattice& L, int64_t N, int64_t C, int64_t M, const T* x, const T* w, const T* bias,
           T* y, const PackedWeights* packed) const {
    const int64_t G = group_, Cg = C / G, Mg = M / G;
    const int64_t in_size = L.grid_size(), out_size = L.image_size();
    const int64_t rows = Mg * L.kernel_size();
    T* col = column_scratch<T>(size_t(rows * in_size));
    std::fill(y, y + N * M * out_size, T(0));
    for (int64_t n = 0; n < N; ++n)
      for (int64_t g = 0; g < G; ++g) {
        const T* xg = x + (n * C + g * Cg) * in_size;
        const T* wg = w + g * Cg * rows;  // [Cg, Mg * kernel]
        // col = Wg^T * Xg, then every column entry is added into the output position
        // its (input position, kernel offset) pair maps to.
        bool done = false;
        if constexpr (std::is_same_v<T, float>) {
          if (packed) {
            gemm::sgemm_packed_left(packed->get()[size_t(g)], false, in_size, 1.0f, xg, in_size,
                                    0.0f, col, in_size);
            done = true;
          }
        }
        if (!done)
          gemm_any<T>(true, false, rows, in_size, Cg, wg, rows, xg, in_size, T(0), col, in_size);
        col2im_add(L, Mg, col, y + (n * M + g * Mg) * out_size);
      }
    if (bias) add_bias(y, bias, N, M, out_size);
  }

 public:
  // Marks a constant W ([C, M/G, kernel...]) for packing as W_g^T per group, the left
  // operand, on first use.
  void pack_weights(const Tensor& w) {
    if (w.rank() < 3 || w.shape()[0] % group_ != 0 || w.numel() == 0 || !is_float_like(w)) return;
    packed_.source = w;
    packed_.groups = group_;
    packed_.left = true;
  }

 private:
  PackedWeights packed_;

  WindowAttrs attrs_;
  int64_t group_;
  std::vector<int64_t> output_padding_, output_shape_;
};

Status check_float_inputs(KernelInit& init, size_t n) {
  const DataType t = init.input_type(0);
  if (!is_float_type(t)) return init.unsupported_type(0);
  for (size_t i = 1; i < n; ++i)
    if (init.has_input(i) && init.input_type(i) != t)
      return init.error(StatusCode::kInvalidGraph, "input ", i, " has type ",
                        tensor_type_name(init.input_type(i)), ", expected ", tensor_type_name(t));
  return Status();
}

}  // namespace

Expected<KernelPtr> create_conv(KernelInit& init) {
  AttrReader attrs(init.node);
  WindowAttrs w;
  int64_t group = 1;
  NXRT_RETURN_IF_ERROR(read_conv_attrs(init, attrs, w, group));
  NXRT_RETURN_IF_ERROR(check_float_inputs(init, 3));
  init.set_all_outputs(init.input_type(0));
  const WindowAttrs window = w;
  auto kernel = std::make_unique<ConvKernel>(std::move(w), group);
  const Tensor* weights = init.constant_input(1);
  if (weights) kernel->pack_weights(*weights);
  return maybe_dft_conv(std::move(kernel), window, group, weights, init.has_input(2));
}

// com.microsoft FusedConv: Conv, plus an optional sum input Z (same shape as Y) and an
// activation (Relu, LeakyRelu, Sigmoid, Tanh, HardSigmoid, Clip: onnxruntime's set)
// applied to conv + bias + Z. nxrt's own FusedConv also takes HardSwish and QuickGelu.
Expected<KernelPtr> create_fused_conv(KernelInit& init) {
  AttrReader attrs(init.node);
  WindowAttrs w;
  int64_t group = 1;
  NXRT_RETURN_IF_ERROR(read_conv_attrs(init, attrs, w, group));
  NXRT_RETURN_IF_ERROR(check_float_inputs(init, 8));
  NXRT_ASSIGN_OR_RETURN(const std::optional<FusedActivation> fused,
                        read_fused_activation(init, attrs, "FusedConv"));
  std::optional<ConvActivation> act;
  if (fused) act = ConvActivation{fused->fn, fused->params};
  if (act) {
    act->post_scale = attrs.get_float("post_scale", 1.0f);
    act->post_shift = attrs.get_float("post_shift", 0.0f);
  }
  // nxrt's FusedConv may carry a BatchNormalization whose parameters are not constants
  // (inputs 4-7, attribute bn_epsilon), applied per run as a per-channel affine map.
  std::optional<float> bn_epsilon;
  if (init.has_input(4)) {
    for (size_t i = 4; i < 8; ++i)
      if (!init.has_input(i))
        return init.error(StatusCode::kInvalidGraph, "input ", i,
                          " (fused BatchNormalization) is missing");
    bn_epsilon = attrs.get_float("bn_epsilon", 1e-5f);
  }
  init.set_all_outputs(init.input_type(0));
  auto kernel = std::make_unique<ConvKernel>(std::move(w), group, act, init.has_input(3),
                                             bn_epsilon, init.node.domain == "nxrt");
  if (const Tensor* weights = init.constant_input(1)) kernel->pack_weights(*weights);
  return KernelPtr(std::move(kernel));
}

Expected<KernelPtr> create_conv_integer(KernelInit& init) {
  AttrReader attrs(init.node);
  WindowAttrs w;
  int64_t group = 1;
  NXRT_RETURN_IF_ERROR(read_conv_attrs(init, attrs, w, group));
  for (size_t i = 0; i < 4; ++i) {
    const DataType t = init.input_type(i);
    if (i >= 2 && t == DataType::kUndefined) continue;
    if (t != DataType::kUint8 && t != DataType::kInt8) return init.unsupported_type(i);
  }
  init.set_all_outputs(DataType::kInt32);
  auto kernel = std::make_unique<ConvIntegerKernel>(ConvKernel(std::move(w), group), group);
  if (const Tensor* weights = init.constant_input(1)) {
    const Tensor* zero = init.has_input(3) ? init.constant_input(3) : nullptr;
    if (!init.has_input(3) || zero) kernel->pack_weights(*weights, zero);
  }
  return KernelPtr(std::move(kernel));
}

Expected<KernelPtr> create_conv_transpose(KernelInit& init) {
  AttrReader attrs(init.node);
  WindowAttrs w;
  int64_t group = 1;
  auto output_padding = attrs.get_ints("output_padding");
  auto output_shape = attrs.get_ints("output_shape");
  NXRT_RETURN_IF_ERROR(read_conv_attrs(init, attrs, w, group));
  NXRT_RETURN_IF_ERROR(check_float_inputs(init, 3));
  init.set_all_outputs(init.input_type(0));
  auto kernel = std::make_unique<ConvTransposeKernel>(
      std::move(w), group, std::move(output_padding), std::move(output_shape));
  if (const Tensor* weights = init.constant_input(1)) kernel->pack_weights(*weights);
  return KernelPtr(std::move(kernel));
}

}  // namespace nxrt::cpu
