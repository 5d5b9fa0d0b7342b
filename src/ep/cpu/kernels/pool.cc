// MaxPool, AveragePool, LpPool and their Global forms, for any number of spatial dims.
// Windows are clipped to the input per dim up front (dim_ranges), so the inner loops
// never test for padding.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "ep/cpu/kernels/conv_geometry.h"
#include "ep/cpu/vmath/vmath.h"

namespace nxrt::cpu {
namespace {

enum class PoolKind { kMax, kAverage, kLp };

struct PoolParams {
  PoolKind kind;
  bool count_include_pad = false;
  float p = 2.0f;
};

// Taps of a window starting at input index `start` that lie inside the padded input
// [-pad_begin, in + pad_end): AveragePool's divisor with count_include_pad.
int64_t padded_taps(int64_t start, int64_t kernel, int64_t dilation, int64_t in, int64_t pad_begin,
                    int64_t pad_end) {
  int64_t count = 0;
  for (int64_t k = 0; k < kernel; ++k) {
    const int64_t i = start + k * dilation;
    count += i >= -pad_begin && i < in + pad_end;
  }
  return count;
}

// AveragePool's divisor along one dim for the window starting at input index `start`: its
// taps inside the input, or inside the padded input with count_include_pad.
int64_t divisor_taps(bool include_pad, int64_t start, int64_t kernel, int64_t dilation, int64_t in,
                     int64_t pad_begin, int64_t pad_end) {
  if (include_pad) return padded_taps(start, kernel, dilation, in, pad_begin, pad_end);
  const DimRange r = window_range(start, kernel, dilation, in);
  return r.k_hi - r.k_lo;
}

// Visits every output position of one (n, c) plane with the clipped window: calls
// fn(out_index, window) where window lists the input offsets inside the image and
// `full` is the number of positions of the window within the padded input.
template <typename T>
void pool_plane(const Window& w, const std::vector<std::vector<DimRange>>& ranges,
                const PoolParams& prm, const T* x, T* y, int64_t* indices, int64_t plane_base,
                bool column_major) {
  using A = wide_t<T>;
  const size_t r = w.rank;
  std::vector<int64_t> istride(r, 1), cstride(r, 1), o(r, 0), k(r, 0);
  for (size_t d = r - 1; d-- > 0;) istride[d] = istride[d + 1] * w.in[d + 1];
  for (size_t d = 1; d < r; ++d) cstride[d] = cstride[d - 1] * w.in[d - 1];
  const int64_t out_size = w.out_size();
  for (int64_t oi = 0; oi < out_size; ++oi) {
    // window bounds for this output position
    bool empty = false;
    int64_t full = 1;
    for (size_t d = 0; d < r; ++d) {
      const DimRange& dr = ranges[d][size_t(o[d])];
      empty |= dr.k_hi <= dr.k_lo;
      if (prm.count_include_pad) {
        full *= padded_taps(dr.start, w.kernel[d], w.dilation[d], w.in[d], w.pad_begin[d],
                            w.pad_end[d]);
      } else {
        full *= dr.k_hi - dr.k_lo;
      }
    }
    A acc = prm.kind == PoolKind::kMax ? std::numeric_limits<A>::lowest() : A(0);
    int64_t best = -1;
    if (!empty) {
      for (size_t d = 0; d < r; ++d) k[d] = ranges[d][size_t(o[d])].k_lo;
      while (true) {
        int64_t off = 0;
        for (size_t d = 0; d < r; ++d)
          off += (ranges[d][size_t(o[d])].start + k[d] * w.dilation[d]) * istride[d];
        const A v = A(x[off]);
        if (prm.kind == PoolKind::kMax) {
          if (best < 0 || v > acc || (std::isnan(double(v)) && !std::isnan(double(acc)))) {
            acc = v;
            best = off;
          }
        } else if (prm.kind == PoolKind::kAverage) {
          acc += v;
        } else {
          acc += A(std::pow(std::fabs(double(v)), double(prm.p)));
        }
        size_t d = r;
        while (d-- > 0) {
          if (++k[d] < ranges[d][size_t(o[d])].k_hi) break;
          k[d] = ranges[d][size_t(o[d])].k_lo;
        }
        if (d == size_t(-1)) break;
      }
    }
    A result = acc;
    if (prm.kind == PoolKind::kAverage)
      result = full > 0 ? A(acc / A(full)) : A(0);
    else if (prm.kind == PoolKind::kLp)
      result = A(std::pow(double(acc), 1.0 / double(prm.p)));
    else if (best < 0)
      result = A(0);
    y[oi] = T(result);
    if (indices) {
      int64_t idx = best < 0 ? 0 : best;
      if (column_major && best >= 0) {
        idx = 0;
        int64_t rem = best;
        for (size_t d = 0; d < r; ++d) {
          idx += (rem / istride[d]) * cstride[d];
          rem %= istride[d];
        }
      }
      indices[oi] = plane_base + idx;
    }
    for (size_t d = r; d-- > 0;) {
      if (++o[d] < w.out[d]) break;
      o[d] = 0;
    }
  }
}

// Max or average pooling of float planes with 1 or 2 spatial dims (a 1-D pool is a 2-D
// one with H = 1), separably: for each output row the window's input rows are first
// reduced into one row (vectorized, contiguous), then each output takes the max or sum
// of its taps along that row. Windows are clipped at the borders; an average divides by
// the taps inside the input, or inside the padded input with count_include_pad.
struct Pool2d {
  int64_t H, W, OH, OW, KH, KW, SH, SW, DH, DW, PT, PL, PB, PR;
};

Pool2d pool2d_geometry(const Window& w) {
  if (w.rank == 1)
    return {1, w.in[0],       1, w.out[0],       1, w.kernel[0], 1, w.stride[0],
            1, w.dilation[0], 0, w.pad_begin[0], 0, w.pad_end[0]};
  return {w.in[0],        w.in[1],        w.out[0],     w.out[1],      w.kernel[0],
          w.kernel[1],    w.stride[0],    w.stride[1],  w.dilation[0], w.dilation[1],
          w.pad_begin[0], w.pad_begin[1], w.pad_end[0], w.pad_end[1]};
}

// The max of a window clipped to the plane (its vertical and horizontal ranges from
// window_range, neither empty).
float window_max(const Pool2d& g, const float* x, const DimRange& vr, const DimRange& hr) {
  float acc = -std::numeric_limits<float>::infinity();
  for (int64_t kh = vr.k_lo; kh < vr.k_hi; ++kh) {
    const float* row = x + (vr.start + kh * g.DH) * g.W + hr.start;
    for (int64_t kw = hr.k_lo; kw < hr.k_hi; ++kw) acc = vmath::max_keep_nan(acc, row[kw * g.DW]);
  }
  return acc;
}

void pool2d_plane(const Pool2d& g, bool max, bool include_pad, const float* x, float* y,
                  float* row) {
  // Outputs [ow_lo, ow_hi) have their whole window inside the row: one vectorized pass.
  int64_t ow_lo, ow_hi;
  inner_outputs(g.OW, g.SW, g.PL, g.KW, g.DW, g.W, ow_lo, ow_hi);
  SmallVec<const float*, 16> rows;
  for (int64_t oh = 0; oh < g.OH; ++oh) {
    const DimRange vr = window_range(oh * g.SH - g.PT, g.KH, g.DH, g.H);
    const int64_t nrows = vr.k_hi - vr.k_lo;
    const int64_t hpad = include_pad ? padded_taps(vr.start, g.KH, g.DH, g.H, g.PT, g.PB) : 0;
    float* out = y + oh * g.OW;
    if (nrows <= 0) {  // the window lies in the padding
      std::fill(out, out + g.OW, 0.0f);
      continue;
    }
    rows.clear();
    for (int64_t k = vr.k_lo; k < vr.k_hi; ++k) rows.push_back(x + (vr.start + k * g.DH) * g.W);
    const float* r = rows[0];
    if (rows.size() > 1) {
      vmath::reduce_rows(max, rows.data(), rows.size(), row, size_t(g.W));
      r = row;
    }
    if (ow_hi > ow_lo) {
      const float scale = 1.0f / float(include_pad ? hpad * g.KW : nrows * g.KW);
      vmath::reduce_taps(max, r + ow_lo * g.SW - g.PL, size_t(ow_hi - ow_lo), g.SW, g.KW, g.DW,
                         scale, out + ow_lo);
    }
    // The border outputs, with clipped windows.
    auto border = [&](int64_t ow) {
      const DimRange hr = window_range(ow * g.SW - g.PL, g.KW, g.DW, g.W);
      if (hr.k_hi <= hr.k_lo) {
        out[ow] = 0.0f;
        return;
      }
      const float* p = r + hr.start;
      float acc = p[hr.k_lo * g.DW];
      for (int64_t k = hr.k_lo + 1; k < hr.k_hi; ++k)
        acc = max ? vmath::max_keep_nan(acc, p[k * g.DW]) : acc + p[k * g.DW];
      if (!max) {
        const int64_t count = include_pad
                                  ? hpad * padded_taps(hr.start, g.KW, g.DW, g.W, g.PL, g.PR)
                                  : nrows * (hr.k_hi - hr.k_lo);
        acc /= float(count);
      }
      out[ow] = acc;
    };
    for (int64_t ow = 0; ow < ow_lo; ++ow) border(ow);
    for (int64_t ow = ow_hi; ow < g.OW; ++ow) border(ow);
  }
}

// Averages over zero-padded planes were all divided by KH * KW; an output whose window has
// fewer taps gets its own divisor. The divisor factors into row and column taps, so the
// corrections are row_factor[oh] * col_factor[ow] (KH / row taps, KW / column taps); full
// rows only touch the few border columns (listed in border_cols).
void rescale_borders(const Pool2d& g, const float* row_factor, const float* col_factor,
                     const int64_t* border_cols, int64_t border_count, float* y) {
  for (int64_t oh = 0; oh < g.OH; ++oh) {
    float* row = y + oh * g.OW;
    const float rf = row_factor[oh];
    if (rf != 1.0f) {
      for (int64_t ow = 0; ow < g.OW; ++ow) row[ow] *= rf * col_factor[ow];
      continue;
    }
    for (int64_t i = 0; i < border_count; ++i) row[border_cols[i]] *= col_factor[border_cols[i]];
  }
}

// Stride-1 2-D pooling of `planes` planes at once, without per-row calls or border
// cases: the planes are stacked into one tall zero- (average) or -inf- (max) bordered image
// of HP x WP each (the padded extent), so the horizontal pass is one reduce_taps over the
// flattened stack, the vertical one a single reduce_rows over its result, and the kept
// outputs move to Y (windows that cross a row or plane edge are computed and dropped).
// Small planes (inception's 3x3 pools on 7 to 28 wide maps) pay per row otherwise; strided
// pools measured slower this way than vmath::pool_plane, whose windows read X in place.
// Every window must reach the input (pads smaller than the window), which the caller
// checks. An average divides by the taps its window has in the input, or in the padded
// input with count_include_pad.
void pool2d_stacked(const Pool2d& g, bool max, bool include_pad, const float* x, float* y,
                    int64_t planes) {
  if (planes <= 0) return;
  const int64_t HP = g.OH + (g.KH - 1) * g.DH, WP = g.OW + (g.KW - 1) * g.DW;
  const int64_t rows = planes * HP, flat = rows * WP;
  // reduce_taps reads up to (KW - 1) * DW past the last window start, in 16-lane blocks.
  const int64_t tail = (g.KW - 1) * g.DW + 16;
  float* padded = thread_scratch<float>(size_t(flat + tail), 1);
  float* horizontal = thread_scratch<float>(size_t(flat), 2);
  const float fill = max ? -std::numeric_limits<float>::infinity() : 0.0f;
  vmath::pad_planes(x, planes, g.H, g.W, g.PT, g.PL, HP, WP, HP * WP, fill, padded);
  std::fill(padded + flat, padded + flat + tail, fill);
  vmath::reduce_taps(max, padded, size_t(flat), 1, g.KW, g.DW, 1.0f, horizontal);
  // Vertical: element i of `vertical` (reusing `padded`) reduces rows i / WP + kh * DH.
  SmallVec<const float*, 16> taps;
  for (int64_t kh = 0; kh < g.KH; ++kh) taps.push_back(horizontal + kh * g.DH * WP);
  float* vertical = padded;
  vmath::reduce_rows(max, taps.data(), taps.size(), vertical,
                     size_t((rows - (g.KH - 1) * g.DH) * WP));
  // Output row oh of plane p is row p * HP + oh of the stack.
  auto kept = [&](int64_t p, int64_t oh) { return vertical + (p * HP + oh) * WP; };
  if (max) {
    for (int64_t p = 0; p < planes; ++p)
      for (int64_t oh = 0; oh < g.OH; ++oh)
        std::copy(kept(p, oh), kept(p, oh) + g.OW, y + (p * g.OH + oh) * g.OW);
    return;
  }
  // Each average divided by its window's taps: taps along H of its row times taps along W
  // of its column, from a table of the plane's divisors.
  auto taps_of = [&](int64_t start, int64_t kernel, int64_t dilation, int64_t in, int64_t pad_begin,
                     int64_t pad_end) {
    return float(divisor_taps(include_pad, start, kernel, dilation, in, pad_begin, pad_end));
  };
  float* inverse = thread_scratch<float>(size_t(g.OH * g.OW), 3);
  for (int64_t oh = 0; oh < g.OH; ++oh) {
    const float th = taps_of(oh - g.PT, g.KH, g.DH, g.H, g.PT, g.PB);
    for (int64_t ow = 0; ow < g.OW; ++ow)
      inverse[oh * g.OW + ow] = 1.0f / (th * taps_of(ow - g.PL, g.KW, g.DW, g.W, g.PL, g.PR));
  }
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t oh = 0; oh < g.OH; ++oh) {
      const float* src = kept(p, oh);
      const float* inv = inverse + oh * g.OW;
      float* dst = y + (p * g.OH + oh) * g.OW;
      for (int64_t ow = 0; ow < g.OW; ++ow) dst[ow] = src[ow] * inv[ow];
    }
}

class PoolKernel final : public Kernel {
 public:
  PoolKernel(WindowAttrs attrs, PoolParams prm, bool column_major)
      : attrs_(std::move(attrs)), prm_(prm), column_major_(column_major) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    if (x.rank() < 3)
      return invalid_argument("pooling needs an input of rank >= 3, got ", x.shape().to_string());
    const std::span<const int64_t> in = x.shape().span().subspan(2);  // no copy per run
    if (attrs_.kernel_shape.size() != in.size())
      return invalid_argument("kernel_shape has ", attrs_.kernel_shape.size(),
                              " values; the input has ", in.size(), " spatial dims");
    Window w;
    NXRT_RETURN_IF_ERROR(resolve_window(attrs_, in, attrs_.kernel_shape, w));
    Shape out{x.shape()[0], x.shape()[1]};
    for (int64_t d : w.out) out.push_back(d);
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, out));
    Tensor* ind = nullptr;
    if (ctx.num_outputs() > 1) {
      NXRT_ASSIGN_OR_RETURN(ind, ctx.output(1, out));
    }
    if (y->numel() == 0) return Status();
    if (x.dtype() == DataType::kFloat && !ind && w.rank <= 2 && prm_.kind != PoolKind::kLp) {
      run_fast(w, x, *y);
      return Status();
    }
    std::vector<std::vector<DimRange>> ranges(w.rank);
    for (size_t d = 0; d < w.rank; ++d) ranges[d] = dim_ranges(w, d);
    const int64_t planes = x.shape()[0] * x.shape()[1];
    const int64_t in_size = w.in_size(), out_size = w.out_size();
    switch (x.dtype()) {
      NXRT_CASES_FLOAT(run<T>(w, ranges, x, *y, ind, planes, in_size, out_size))
      NXRT_CASE(kInt8, run<T>(w, ranges, x, *y, ind, planes, in_size, out_size))
      NXRT_CASE(kUint8, run<T>(w, ranges, x, *y, ind, planes, in_size, out_size))
      default:
        return not_implemented("pooling of ", tensor_type_name(x.dtype()));
    }
    return Status();
  }

 private:
  void run_fast(const Window& w, const Tensor& x, Tensor& y) const {
    const Pool2d g = pool2d_geometry(w);
    const int64_t planes = x.shape()[0] * x.shape()[1];
    const int64_t in_size = g.H * g.W, out_size = g.OH * g.OW;
    const double work = double(planes) * double(out_size) * double(g.KH * g.KW);
    const size_t pieces = std::min(parallel_pieces(work, double(1 << 16)), size_t(planes));
    const bool max = prm_.kind == PoolKind::kMax;
    // Every window reaches the input when each pad is smaller than the window's extent.
    const bool windows_reach = g.PT < (g.KH - 1) * g.DH + 1 && g.PB < (g.KH - 1) * g.DH + 1 &&
                               g.PL < (g.KW - 1) * g.DW + 1 && g.PR < (g.KW - 1) * g.DW + 1;
    // (With ceil_mode a last window can start past the input; those keep the old path.)
    const bool last_inside = (g.OH - 1) * g.SH - g.PT < g.H && (g.OW - 1) * g.SW - g.PL < g.W;
    if (g.OH == 1 && g.OW == 1 && g.KH == g.H && g.KW == g.W && g.PT == 0 && g.PL == 0 &&
        g.DH == 1 && g.DW == 1) {
      // One window over each whole plane (a 7x7 average pool closing a ResNet): a
      // vectorized reduction per plane.
      const float* px = x.data<float>();
      float* py = y.data<float>();
      parallel_for(pieces, [&](size_t piece) {
        for (int64_t p = planes * int64_t(piece) / int64_t(pieces);
             p < planes * int64_t(piece + 1) / int64_t(pieces); ++p) {
          const float* v = px + p * in_size;
          py[p] =
              max ? vmath::max_value(v, size_t(in_size)) : partial_sum(v, in_size) / float(in_size);
        }
      });
      return;
    }
    // Max pooling, and averages whose windows all lie inside the input (one divisor):
    // whole planes through vmath::pool_plane, padded with -inf first when windows reach
    // into the padding.
    const int64_t HP = (g.OH - 1) * g.SH + (g.KH - 1) * g.DH + 1;
    const int64_t WP = (g.OW - 1) * g.SW + (g.KW - 1) * g.DW + 1;
    const bool inside = g.PT == 0 && g.PL == 0 && HP <= g.H && WP <= g.W;
    int64_t oh_lo, oh_hi, ow_lo, ow_hi;
    inner_outputs(g.OH, g.SH, g.PT, g.KH, g.DH, g.H, oh_lo, oh_hi);
    inner_outputs(g.OW, g.SW, g.PL, g.KW, g.DW, g.W, ow_lo, ow_hi);
    if (max && windows_reach && last_inside && !inside && oh_hi > oh_lo && ow_hi - ow_lo >= 16) {
      // Padded max pooling of wide maps without copying the planes: the outputs whose
      // windows lie inside go through vmath::pool_plane straight from X (a ResNet stem's
      // 3x3 / 2 pool on 112x112: the padded copy took as long as the pooling), the border
      // ones one by one over their clipped windows. (Averages: their border divisors
      // made this slower than the stacked or padded paths.)
      const vmath::PoolWindow win{oh_hi - oh_lo, ow_hi - ow_lo, g.KH, g.KW, g.SH,
                                  g.SW,          g.DH,          g.DW, g.OW};
      parallel_for(pieces, [&](size_t piece) {
        // The clipped windows of every row and column, once per call (each takes divisions).
        DimRange* vr = thread_scratch<DimRange>(size_t(g.OH + g.OW));
        DimRange* hr = vr + g.OH;
        for (int64_t oh = 0; oh < g.OH; ++oh)
          vr[oh] = window_range(oh * g.SH - g.PT, g.KH, g.DH, g.H);
        for (int64_t ow = 0; ow < g.OW; ++ow)
          hr[ow] = window_range(ow * g.SW - g.PL, g.KW, g.DW, g.W);
        for (int64_t p = int64_t(piece); p < planes; p += int64_t(pieces)) {
          const float* src = x.data<float>() + p * in_size;
          float* dst = y.data<float>() + p * out_size;
          vmath::pool_plane(true, src + (oh_lo * g.SH - g.PT) * g.W + ow_lo * g.SW - g.PL, g.W, win,
                            1.0f, dst + oh_lo * g.OW + ow_lo);
          for (int64_t oh = 0; oh < g.OH; ++oh) {
            const bool inner_row = oh >= oh_lo && oh < oh_hi;
            for (int64_t ow = 0; ow < g.OW; ++ow) {
              if (inner_row && ow == ow_lo) ow = ow_hi;
              if (ow < g.OW) dst[oh * g.OW + ow] = window_max(g, src, vr[oh], hr[ow]);
            }
          }
        }
      });
      return;
    }
    if (windows_reach && g.SH == 1 && g.SW == 1) {
      // Stacks of about 64K floats (in L2), split among the threads.
      const int64_t padded_plane = (g.OH + (g.KH - 1) * g.DH) * (g.OW + (g.KW - 1) * g.DW);
      const int64_t per_stack = std::max<int64_t>(1, (int64_t(1) << 16) / padded_plane);
      const int64_t stacks = std::min<int64_t>(
          planes, std::max<int64_t>(int64_t(pieces), (planes + per_stack - 1) / per_stack));
      parallel_for(size_t(stacks), [&](size_t stack) {
        const int64_t p0 = planes * int64_t(stack) / stacks;
        const int64_t p1 = planes * int64_t(stack + 1) / stacks;
        pool2d_stacked(g, max, prm_.count_include_pad, x.data<float>() + p0 * in_size,
                       y.data<float>() + p0 * out_size, p1 - p0);
      });
      return;
    }
    if ((windows_reach && last_inside) || inside) {
      // Whole planes through vmath::pool_plane, padded first when windows reach into the
      // padding: with -inf for max, with zeros for averages, whose border outputs then get
      // their own divisors (a window's divisor is its row taps times its column taps).
      vmath::PoolWindow win{g.OH, g.OW, g.KH, g.KW, g.SH, g.SW, g.DH, g.DW};
      if (!inside) win.slack = vmath::kPlaneSlack;
      const float scale = 1.0f / float(g.KH * g.KW);
      const bool fix_borders = !max && !inside;
      auto taps = [&](int64_t start, int64_t kernel, int64_t dilation, int64_t in,
                      int64_t pad_begin, int64_t pad_end) {
        return divisor_taps(prm_.count_include_pad, start, kernel, dilation, in, pad_begin,
                            pad_end);
      };
      float* row_factor = fix_borders ? thread_scratch<float>(size_t(g.OH + g.OW), 2) : nullptr;
      float* col_factor = row_factor ? row_factor + g.OH : nullptr;
      int64_t* border_cols = fix_borders ? thread_scratch<int64_t>(size_t(g.OW), 3) : nullptr;
      int64_t border_count = 0;
      for (int64_t oh = 0; fix_borders && oh < g.OH; ++oh)
        row_factor[oh] = float(g.KH) / float(taps(oh * g.SH - g.PT, g.KH, g.DH, g.H, g.PT, g.PB));
      for (int64_t ow = 0; fix_borders && ow < g.OW; ++ow) {
        col_factor[ow] = float(g.KW) / float(taps(ow * g.SW - g.PL, g.KW, g.DW, g.W, g.PL, g.PR));
        if (col_factor[ow] != 1.0f) border_cols[border_count++] = ow;
      }
      const float fill = max ? -std::numeric_limits<float>::infinity() : 0.0f;
      parallel_for(pieces, [&](size_t piece) {
        float* plane =
            inside ? nullptr : thread_scratch<float>(size_t(HP * WP + vmath::kPlaneSlack), 1);
        for (int64_t p = int64_t(piece); p < planes; p += int64_t(pieces)) {
          const float* src = x.data<float>() + p * in_size;
          float* dst = y.data<float>() + p * out_size;
          int64_t ld = g.W;
          if (!inside) {
            vmath::pad_planes(src, 1, g.H, g.W, g.PT, g.PL, HP, WP, HP * WP, fill, plane);
            src = plane;
            ld = WP;
          }
          vmath::pool_plane(max, src, ld, win, scale, dst);
          if (fix_borders)
            rescale_borders(g, row_factor, col_factor, border_cols, border_count, dst);
        }
      });
      return;
    }
    parallel_for(pieces, [&](size_t piece) {
      float* row = thread_scratch<float>(size_t(g.W));
      for (int64_t p = int64_t(piece); p < planes; p += int64_t(pieces))
        pool2d_plane(g, max, prm_.count_include_pad, x.data<float>() + p * in_size,
                     y.data<float>() + p * out_size, row);
    });
  }

  template <typename T>
  void run(const Window& w, const std::vector<std::vector<DimRange>>& ranges, const Tensor& x,
           Tensor& y, Tensor* ind, int64_t planes, int64_t in_size, int64_t out_size) const {
    for (int64_t p = 0; p < planes; ++p)
      pool_plane<T>(w, ranges, prm_, x.data<T>() + p * in_size, y.data<T>() + p * out_size,
                    ind ? ind->data<int64_t>() + p * out_size : nullptr, p * in_size,
                    column_major_);
  }

  WindowAttrs attrs_;
  PoolParams prm_;
  bool column_major_;
};

class GlobalPoolKernel final : public Kernel {
 public:
  explicit GlobalPoolKernel(PoolParams prm) : prm_(prm) {}
  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    if (x.rank() < 2)
      return invalid_argument("global pooling needs an input of rank >= 2, got ",
                              x.shape().to_string());
    Shape out{x.shape()[0], x.shape()[1]};
    for (size_t d = 2; d < x.rank(); ++d) out.push_back(1);
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, out));
    const int64_t planes = out.numel();
    const int64_t size = x.shape().product(2, x.rank());
    if (x.dtype() == DataType::kFloat && size > 0 && prm_.kind != PoolKind::kLp) {
      // Float max and average: vectorized per plane (max_value keeps NaN; the sum runs in
      // float partial sums, as other runtimes' float reductions do), planes split
      // across the run's threads.
      const float* px = x.data<float>();
      float* py = y->data<float>();
      const bool max = prm_.kind == PoolKind::kMax;
      const size_t pieces =
          std::min(parallel_pieces(double(planes * size), double(1 << 16)), size_t(planes));
      parallel_for(pieces, [&](size_t piece) {
        for (int64_t p = planes * int64_t(piece) / int64_t(pieces);
             p < planes * int64_t(piece + 1) / int64_t(pieces); ++p) {
          const float* v = px + p * size;
          py[p] = max ? vmath::max_value(v, size_t(size)) : partial_sum(v, size) / float(size);
        }
      });
      return Status();
    }
    switch (x.dtype()) {
      NXRT_CASES_FLOAT({
        using A = wide_t<T>;
        const T* px = x.data<T>();
        T* py = y->data<T>();
        for (int64_t p = 0; p < planes; ++p) {
          const T* v = px + p * size;
          A acc = prm_.kind == PoolKind::kMax ? -std::numeric_limits<A>::infinity() : A(0);
          for (int64_t i = 0; i < size; ++i) {
            const A a = A(v[i]);
            if (prm_.kind == PoolKind::kMax)
              acc = (a > acc || std::isnan(a)) ? a : acc;
            else if (prm_.kind == PoolKind::kAverage)
              acc += a;
            else
              acc += A(std::pow(std::fabs(double(a)), double(prm_.p)));
          }
          if (prm_.kind == PoolKind::kAverage) acc = size > 0 ? A(acc / A(size)) : A(0);
          if (prm_.kind == PoolKind::kLp) acc = A(std::pow(double(acc), 1.0 / double(prm_.p)));
          py[p] = T(acc);
        }
      })
      default:
        return not_implemented("global pooling of ", tensor_type_name(x.dtype()));
    }
    return Status();
  }

 private:
  PoolParams prm_;
};

// MaxUnpool: scatters X into a zero tensor at the flat positions MaxPool's Indices name.
class MaxUnpoolKernel final : public Kernel {
 public:
  explicit MaxUnpoolKernel(WindowAttrs attrs) : attrs_(std::move(attrs)) {}
  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    const Tensor& ind = *ctx.input(1);
    if (x.rank() < 3)
      return invalid_argument("MaxUnpool needs rank >= 3, got ", x.shape().to_string());
    if (!(ind.shape() == x.shape()))
      return invalid_argument("indices shape ", ind.shape().to_string(), " differs from X ",
                              x.shape().to_string());
    const size_t r = x.rank() - 2;
    if (attrs_.kernel_shape.size() != r)
      return invalid_argument("kernel_shape has ", attrs_.kernel_shape.size(), " values for ", r,
                              " spatial dims");
    if ((!attrs_.strides.empty() && attrs_.strides.size() != r) ||
        (!attrs_.pads.empty() && attrs_.pads.size() != 2 * r))
      return invalid_argument("strides/pads do not match ", r, " spatial dims");
    Shape out{x.shape()[0], x.shape()[1]};
    for (size_t d = 0; d < r; ++d) {
      const int64_t s = attrs_.strides.empty() ? 1 : attrs_.strides[d];
      const int64_t pads = attrs_.pads.empty() ? 0 : attrs_.pads[d] + attrs_.pads[d + r];
      out.push_back((x.shape()[d + 2] - 1) * s - pads + attrs_.kernel_shape[d]);
    }
    // Indices address the default unpooled shape; an explicit output_shape may be larger,
    // and each value keeps its coordinates in it.
    const Shape natural = out;
    if (const Tensor* os = ctx.input(2)) {
      std::vector<int64_t> dims;
      NXRT_RETURN_IF_ERROR(read_int_list(*os, dims, "output_shape"));
      if (dims.size() != x.rank()) return invalid_argument("output_shape has the wrong rank");
      out = Shape(dims);
    }
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, out));
    const int64_t total = y->numel();
    const int64_t natural_total = natural.numel();
    const int64_t* pi = ind.data<int64_t>();
    std::vector<int64_t> target(size_t(x.numel()));
    for (int64_t i = 0; i < x.numel(); ++i) {
      int64_t idx = pi[i];
      if (idx < 0 || idx >= natural_total)
        return invalid_argument("index ", idx, " is outside the unpooled tensor of ", natural_total,
                                " elements");
      if (out == natural) {
        target[size_t(i)] = idx;
        continue;
      }
      int64_t t = 0, scale = 1;
      for (size_t d = x.rank(); d-- > 0;) {
        const int64_t c = idx % natural[d];
        idx /= natural[d];
        if (c >= out[d]) return invalid_argument("output_shape ", out.to_string(), " is too small");
        t += c * scale;
        scale *= out[d];
      }
      target[size_t(i)] = t;
    }
    switch (x.dtype()) {
      NXRT_CASES_NUMERIC({
        T* py = y->data<T>();
        std::fill(py, py + total, T(0));
        const T* px = x.data<T>();
        for (int64_t i = 0; i < x.numel(); ++i) py[target[size_t(i)]] = px[i];
      })
      default:
        return not_implemented("MaxUnpool of ", tensor_type_name(x.dtype()));
    }
    return Status();
  }

 private:
  WindowAttrs attrs_;
};

Expected<KernelPtr> create_pool(KernelInit& init, PoolKind kind) {
  AttrReader attrs(init.node);
  WindowAttrs w;
  PoolParams prm{kind};
  prm.count_include_pad = attrs.get_int("count_include_pad", 0) != 0;
  prm.p = kind == PoolKind::kLp ? float(attrs.get_int("p", 2)) : 2.0f;
  const int64_t storage_order = attrs.get_int("storage_order", 0);
  Status st = read_window_attrs(attrs, true, w);
  if (!st.ok()) return init.error(st.code(), st.message());
  if (w.kernel_shape.empty()) return init.error(StatusCode::kInvalidGraph, "needs kernel_shape");
  if (storage_order != 0 && storage_order != 1)
    return init.error(StatusCode::kInvalidGraph, "storage_order must be 0 or 1");
  const DataType t = init.input_type(0);
  const bool int_ok = kind == PoolKind::kMax && (t == DataType::kInt8 || t == DataType::kUint8);
  if (!is_float_type(t) && !int_ok) return init.unsupported_type(0);
  if (init.output_types.size() > 2 || (kind != PoolKind::kMax && init.output_types.size() > 1))
    return init.error(StatusCode::kInvalidGraph, "has too many outputs");
  init.output_types[0] = t;
  if (init.output_types.size() > 1) init.output_types[1] = DataType::kInt64;
  return make_kernel<PoolKernel>(std::move(w), prm, storage_order == 1);
}

Expected<KernelPtr> create_global_pool(KernelInit& init, PoolKind kind) {
  AttrReader attrs(init.node);
  PoolParams prm{kind};
  prm.p = kind == PoolKind::kLp ? float(attrs.get_int("p", 2)) : 2.0f;
  NXRT_RETURN_IF_ERROR(attrs.status());
  if (!is_float_type(init.input_type(0))) return init.unsupported_type(0);
  init.set_all_outputs(init.input_type(0));
  return make_kernel<GlobalPoolKernel>(prm);
}

}  // namespace

Expected<KernelPtr> create_max_unpool(KernelInit& init) {
  AttrReader attrs(init.node);
  WindowAttrs w;
  Status st = read_window_attrs(attrs, false, w);
  if (!st.ok()) return init.error(st.code(), st.message());
  if (w.kernel_shape.empty()) return init.error(StatusCode::kInvalidGraph, "needs kernel_shape");
  const DataType t = init.input_type(0);
  if (!is_float_type(t) && !is_integer_type(t)) return init.unsupported_type(0);
  if (init.input_type(1) != DataType::kInt64) return init.unsupported_type(1);
  init.set_all_outputs(t);
  return make_kernel<MaxUnpoolKernel>(std::move(w));
}

Expected<KernelPtr> create_max_pool(KernelInit& init) { return create_pool(init, PoolKind::kMax); }
Expected<KernelPtr> create_average_pool(KernelInit& init) {
  return create_pool(init, PoolKind::kAverage);
}
Expected<KernelPtr> create_lp_pool(KernelInit& init) { return create_pool(init, PoolKind::kLp); }
Expected<KernelPtr> create_global_max_pool(KernelInit& init) {
  return create_global_pool(init, PoolKind::kMax);
}
Expected<KernelPtr> create_global_average_pool(KernelInit& init) {
  return create_global_pool(init, PoolKind::kAverage);
}
Expected<KernelPtr> create_global_lp_pool(KernelInit& init) {
  return create_global_pool(init, PoolKind::kLp);
}

}  // namespace nxrt::cpu
