// Sampling ops on images: GridSample (opset 16 2-D, 20+ N-D), AffineGrid (20) and
// RoiAlign (10, 16).
//
// GridSample computes the taps and weights of each output location once and reuses
// them for every channel; RoiAlign does the same per region of interest.
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "ep/cpu/kernels/common.h"

namespace nxrt::cpu {
namespace {

template <typename T>
struct Compute {
  using type = float;
};
template <>
struct Compute<double> {
  using type = double;
};

template <typename T, typename A>
T to_storage(A v) {
  if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>)
    return T(float(v));
  else
    return T(v);
}

Status read_grid(const Tensor& t, std::vector<double>& out, const char* what) {
  out.resize(size_t(t.numel()));
  switch (t.dtype()) {
    NXRT_CASES_FLOAT(for (int64_t i = 0; i < t.numel(); ++i) out[size_t(i)] =
                         double(t.data<T>()[i]))
    default:
      return invalid_argument(what, " must be a float tensor, got ", dtype_name(t.dtype()));
  }
  return Status();
}

// ---------------------------------------------------------------- GridSample

enum class GridMode { kNearest, kLinear, kCubic };
enum class Padding { kZeros, kBorder, kReflection };

// Folds x back into [lo, hi] by mirroring at the borders as often as needed.
double reflect(double x, double lo, double hi) {
  const double range = hi - lo;
  if (range <= 0) return lo;
  if (x < lo) {
    const double dx = lo - x;
    const int64_t n = int64_t(dx / range);
    const double r = dx - double(n) * range;
    return n % 2 == 0 ? lo + r : hi - r;
  }
  if (x > hi) {
    const double dx = x - hi;
    const int64_t n = int64_t(dx / range);
    const double r = dx - double(n) * range;
    return n % 2 == 0 ? hi - r : lo + r;
  }
  return x;
}

void cubic_weights(double t, double w[4]) {
  constexpr double a = -0.75;
  const double x0 = t + 1, x1 = t, x2 = 1 - t, x3 = 2 - t;
  w[0] = ((a * x0 - 5 * a) * x0 + 8 * a) * x0 - 4 * a;
  w[1] = ((a + 2) * x1 - (a + 3)) * x1 * x1 + 1;
  w[2] = ((a + 2) * x2 - (a + 3)) * x2 * x2 + 1;
  w[3] = ((a * x3 - 5 * a) * x3 + 8 * a) * x3 - 4 * a;
}

class GridSampleKernel final : public Kernel {
 public:
  GridSampleKernel(GridMode mode, Padding padding, bool align)
      : mode_(mode), padding_(padding), align_(align) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    const Tensor& grid = *ctx.input(1);
    const size_t rank = x.rank();
    if (rank < 3) return invalid_argument("X must have rank >= 3, got ", x.shape().to_string());
    const size_t r = rank - 2;
    if (grid.rank() != rank || grid.shape()[0] != x.shape()[0] ||
        grid.shape()[rank - 1] != int64_t(r))
      return invalid_argument("grid shape ", grid.shape().to_string(), " must be [N, spatial..., ",
                              r, "] for X of shape ", x.shape().to_string());
    const int64_t N = x.shape()[0], C = x.shape()[1];
    Shape y_shape{N, C};
    for (size_t i = 1; i + 1 < rank; ++i) y_shape.push_back(grid.shape()[i]);
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, y_shape));
    if (y->numel() == 0) return Status();
    std::vector<double> g;
    NXRT_RETURN_IF_ERROR(read_grid(grid, g, "grid"));
    switch (x.dtype()) {
      NXRT_CASES_FLOAT(run<T>(x, g, *y); return Status())
      default:
        break;
    }
    return not_implemented("type ", tensor_type_name(x.dtype()), " is not supported");
  }

 private:
  // Source index for tap i along a dim of length len, or -1 for a zero pixel.
  int64_t tap_index(int64_t i, int64_t len, double lo, double hi) const {
    if (i >= 0 && i < len) return i;
    switch (padding_) {
      case Padding::kZeros:
        return -1;
      case Padding::kBorder:
        return std::clamp<int64_t>(i, 0, len - 1);
      case Padding::kReflection:
        return std::clamp<int64_t>(int64_t(reflect(double(i), lo, hi)), 0, len - 1);
    }
    return -1;
  }

  template <typename T>
  void run(const Tensor& x, const std::vector<double>& g, Tensor& y) const {
    using A = typename Compute<T>::type;
    const size_t rank = x.rank(), r = rank - 2;
    const int64_t N = x.shape()[0], C = x.shape()[1];
    const int64_t in_sp = x.shape().product(2, rank);
    const int64_t out_sp = y.shape().product(2, rank);
    const int64_t taps1 = mode_ == GridMode::kNearest ? 1 : mode_ == GridMode::kLinear ? 2 : 4;
    int64_t taps = 1;
    for (size_t d = 0; d < r; ++d) taps *= taps1;
    std::vector<int64_t> in_stride(r, 1);
    for (size_t d = r - 1; d-- > 0;) in_stride[d] = in_stride[d + 1] * x.shape()[d + 3];
    std::vector<int64_t> idx(size_t(r * 4));
    std::vector<double> wt(size_t(r * 4));
    std::vector<int64_t> off(static_cast<size_t>(taps));
    std::vector<A> w(static_cast<size_t>(taps));
    const T* xp = x.data<T>();
    T* yp = y.data<T>();
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t p = 0; p < out_sp; ++p) {
        const double* gp = &g[size_t((n * out_sp + p) * int64_t(r))];
        for (size_t d = 0; d < r; ++d) {
          const int64_t len = x.shape()[d + 2];
          const double lo = align_ ? 0.0 : -0.5, hi = align_ ? double(len - 1) : double(len) - 0.5;
          // The grid's last axis lists coordinates innermost first (x, y, z).
          const double gn = gp[r - 1 - d];
          double c = align_ ? (gn + 1) / 2 * double(len - 1) : ((gn + 1) * double(len) - 1) / 2;
          if (mode_ == GridMode::kNearest) c = std::nearbyint(c);
          if (c < lo || c > hi) {
            if (padding_ == Padding::kBorder)
              c = std::clamp(c, 0.0, double(len - 1));
            else if (padding_ == Padding::kReflection)
              c = reflect(c, lo, hi);
          }
          int64_t* id = &idx[d * 4];
          double* wd = &wt[d * 4];
          if (mode_ == GridMode::kNearest) {
            id[0] = std::isfinite(c) ? tap_index(int64_t(c), len, lo, hi) : -1;
            wd[0] = 1;
          } else {
            const double fl = std::floor(c);
            const int64_t base = std::isfinite(fl) ? int64_t(fl) : -(int64_t(1) << 40);
            const double t = c - fl;
            if (mode_ == GridMode::kLinear) {
              wd[0] = 1 - t;
              wd[1] = t;
              for (int k = 0; k < 2; ++k) id[k] = tap_index(base + k, len, lo, hi);
            } else {
              cubic_weights(t, wd);
              for (int k = 0; k < 4; ++k) id[k] = tap_index(base - 1 + k, len, lo, hi);
            }
          }
        }
        // Expand the per-dim taps into their product.
        for (int64_t t = 0; t < taps; ++t) {
          int64_t rem = t, o = 0;
          double wprod = 1;
          for (size_t d = r; d-- > 0;) {
            const int64_t k = rem % taps1;
            rem /= taps1;
            const int64_t i = idx[d * 4 + size_t(k)];
            if (i < 0 || o < 0)
              o = -1;
            else
              o += i * in_stride[d];
            wprod *= wt[d * 4 + size_t(k)];
          }
          off[size_t(t)] = o;
          w[size_t(t)] = A(wprod);
        }
        for (int64_t c = 0; c < C; ++c) {
          const T* xc = xp + (n * C + c) * in_sp;
          A acc = 0;
          for (int64_t t = 0; t < taps; ++t)
            if (off[size_t(t)] >= 0) acc += w[size_t(t)] * A(xc[off[size_t(t)]]);
          yp[(n * C + c) * out_sp + p] = to_storage<T>(acc);
        }
      }
    }
  }

  GridMode mode_;
  Padding padding_;
  bool align_;
};

// ---------------------------------------------------------------- AffineGrid

class AffineGridKernel final : public Kernel {
 public:
  explicit AffineGridKernel(bool align) : align_(align) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor& theta = *ctx.input(0);
    std::vector<int64_t> size;
    NXRT_RETURN_IF_ERROR(read_int_list(*ctx.input(1), size, "size"));
    if (size.size() != 4 && size.size() != 5)
      return invalid_argument("size must have 4 (2-D) or 5 (3-D) elements, got ", size.size());
    const int64_t r = int64_t(size.size()) - 2;
    const int64_t N = size[0];
    for (int64_t s : size)
      if (s < 0) return invalid_argument("size has a negative value ", s);
    if (theta.shape() != Shape{N, r, r + 1})
      return invalid_argument("theta shape ", theta.shape().to_string(), " must be [", N, ",", r,
                              ",", r + 1, "]");
    Shape out{N};
    for (int64_t d = 2; d < int64_t(size.size()); ++d) out.push_back(size[size_t(d)]);
    out.push_back(r);
    if (checked_numel(out.span()) < 0)
      return invalid_argument("output shape ", out.to_string(), " is too large");
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, out));
    switch (theta.dtype()) {
      NXRT_CASES_FLOAT(run<T>(theta, size, *y); return Status())
      default:
        break;
    }
    return not_implemented("type ", tensor_type_name(theta.dtype()), " is not supported");
  }

 private:
  double base_coord(int64_t i, int64_t len) const {
    if (align_) return len <= 1 ? 0.0 : -1.0 + 2.0 * double(i) / double(len - 1);
    return (2.0 * double(i) + 1.0) / double(len) - 1.0;
  }

  template <typename T>
  void run(const Tensor& theta, const std::vector<int64_t>& size, Tensor& y) const {
    using A = typename Compute<T>::type;
    const int64_t r = int64_t(size.size()) - 2;
    const int64_t N = size[0];
    const int64_t D = r == 3 ? size[2] : 1, H = size[size_t(r)], W = size[size_t(r + 1)];
    const T* th = theta.data<T>();
    T* out = y.data<T>();
    for (int64_t n = 0; n < N; ++n) {
      const T* m = th + n * r * (r + 1);
      for (int64_t z = 0; z < D; ++z)
        for (int64_t h = 0; h < H; ++h)
          for (int64_t w = 0; w < W; ++w) {
            // Homogeneous base point (x, y[, z], 1) with x along W.
            A p[4] = {A(base_coord(w, W)), A(base_coord(h, H)), A(r == 3 ? base_coord(z, D) : 1.0),
                      A(1)};
            if (r == 2) p[2] = A(1);
            for (int64_t k = 0; k < r; ++k) {
              A acc = 0;
              for (int64_t j = 0; j <= r; ++j) acc += A(m[k * (r + 1) + j]) * p[j];
              *out++ = to_storage<T>(acc);
            }
          }
    }
  }

  bool align_;
};

// ---------------------------------------------------------------- RoiAlign

class RoiAlignKernel final : public Kernel {
 public:
  RoiAlignKernel(bool max_mode, int64_t out_h, int64_t out_w, int64_t sampling, float spatial_scale,
                 bool half_pixel)
      : max_mode_(max_mode),
        out_h_(out_h),
        out_w_(out_w),
        sampling_(sampling),
        spatial_scale_(spatial_scale),
        half_pixel_(half_pixel) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    const Tensor& rois = *ctx.input(1);
    const Tensor& batch_idx = *ctx.input(2);
    if (x.rank() != 4) return invalid_argument("X must be 4-D, got ", x.shape().to_string());
    if (rois.rank() != 2 || rois.shape()[1] != 4)
      return invalid_argument("rois must be [num_rois, 4], got ", rois.shape().to_string());
    const int64_t R = rois.shape()[0];
    std::vector<int64_t> bidx;
    NXRT_RETURN_IF_ERROR(read_int_list(batch_idx, bidx, "batch_indices"));
    if (int64_t(bidx.size()) != R)
      return invalid_argument("batch_indices has ", bidx.size(), " entries, expected ", R);
    for (int64_t b : bidx)
      if (b < 0 || b >= x.shape()[0])
        return invalid_argument("batch index ", b, " is out of range for batch size ",
                                x.shape()[0]);
    if (rois.dtype() != x.dtype()) return invalid_argument("rois type differs from X type");
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, Shape{R, x.shape()[1], out_h_, out_w_}));
    switch (x.dtype()) {
      NXRT_CASES_FLOAT(run<T>(x, rois, bidx, *y); return Status())
      default:
        break;
    }
    return not_implemented("type ", tensor_type_name(x.dtype()), " is not supported");
  }

 private:
  struct Sample {
    int64_t pos[4] = {0, 0, 0, 0};
    double w[4] = {0, 0, 0, 0};
  };

  template <typename T>
  void run(const Tensor& x, const Tensor& rois, const std::vector<int64_t>& bidx, Tensor& y) const {
    using A = typename Compute<T>::type;
    const int64_t C = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
    const int64_t R = rois.shape()[0];
    const T* xp = x.data<T>();
    const T* rp = rois.data<T>();
    T* yp = y.data<T>();
    const double offset = half_pixel_ ? 0.5 : 0.0;
    std::vector<Sample> samples;
    for (int64_t n = 0; n < R; ++n) {
      const double x1 = double(rp[n * 4 + 0]) * spatial_scale_ - offset;
      const double y1 = double(rp[n * 4 + 1]) * spatial_scale_ - offset;
      const double x2 = double(rp[n * 4 + 2]) * spatial_scale_ - offset;
      const double y2 = double(rp[n * 4 + 3]) * spatial_scale_ - offset;
      double rw = x2 - x1, rh = y2 - y1;
      if (!half_pixel_) {
        // The legacy mode forces malformed ROIs to be at least 1x1.
        rw = std::max(rw, 1.0);
        rh = std::max(rh, 1.0);
      }
      const double bin_h = rh / double(out_h_), bin_w = rw / double(out_w_);
      const int64_t grid_h = sampling_ > 0 ? sampling_ : int64_t(std::ceil(rh / double(out_h_)));
      const int64_t grid_w = sampling_ > 0 ? sampling_ : int64_t(std::ceil(rw / double(out_w_)));
      const int64_t gh = std::max<int64_t>(grid_h, 0), gw = std::max<int64_t>(grid_w, 0);
      const double count = double(std::max<int64_t>(gh * gw, 1));
      samples.assign(size_t(out_h_ * out_w_ * gh * gw), Sample());
      size_t si = 0;
      for (int64_t ph = 0; ph < out_h_; ++ph)
        for (int64_t pw = 0; pw < out_w_; ++pw)
          for (int64_t iy = 0; iy < gh; ++iy) {
            const double yy = y1 + double(ph) * bin_h + (double(iy) + 0.5) * bin_h / double(gh);
            for (int64_t ix = 0; ix < gw; ++ix, ++si) {
              const double xx = x1 + double(pw) * bin_w + (double(ix) + 0.5) * bin_w / double(gw);
              if (yy < -1.0 || yy > double(H) || xx < -1.0 || xx > double(W))
                continue;  // zero weights
              double sy = std::max(yy, 0.0), sx = std::max(xx, 0.0);
              int64_t y_lo = int64_t(sy), x_lo = int64_t(sx), y_hi, x_hi;
              if (y_lo >= H - 1) {
                y_hi = y_lo = H - 1;
                sy = double(y_lo);
              } else {
                y_hi = y_lo + 1;
              }
              if (x_lo >= W - 1) {
                x_hi = x_lo = W - 1;
                sx = double(x_lo);
              } else {
                x_hi = x_lo + 1;
              }
              const double ly = sy - double(y_lo), lx = sx - double(x_lo), hy = 1 - ly, hx = 1 - lx;
              Sample& s = samples[si];
              s.pos[0] = y_lo * W + x_lo;
              s.pos[1] = y_lo * W + x_hi;
              s.pos[2] = y_hi * W + x_lo;
              s.pos[3] = y_hi * W + x_hi;
              s.w[0] = hy * hx;
              s.w[1] = hy * lx;
              s.w[2] = ly * hx;
              s.w[3] = ly * lx;
            }
          }
      for (int64_t c = 0; c < C; ++c) {
        const T* xc = xp + (bidx[size_t(n)] * C + c) * H * W;
        T* yc = yp + (n * C + c) * out_h_ * out_w_;
        const Sample* s = samples.data();
        for (int64_t b = 0; b < out_h_ * out_w_; ++b) {
          A acc = 0;
          bool first = true;
          for (int64_t k = 0; k < gh * gw; ++k, ++s) {
            A v[4];
            for (int j = 0; j < 4; ++j) v[j] = A(s->w[j]) * A(xc[s->pos[j]]);
            if (max_mode_) {
              // onnxruntime's (and the reference's) max mode takes the largest weighted
              // corner of each sample, not the max of interpolated values.
              const A m = std::max(std::max(v[0], v[1]), std::max(v[2], v[3]));
              acc = first ? m : std::max(acc, m);
              first = false;
            } else {
              acc += v[0] + v[1] + v[2] + v[3];
            }
          }
          yc[b] = to_storage<T>(max_mode_ ? acc : acc / A(count));
        }
      }
    }
  }

  bool max_mode_;
  int64_t out_h_, out_w_, sampling_;
  double spatial_scale_;
  bool half_pixel_;
};

}  // namespace

Expected<KernelPtr> create_grid_sample(KernelInit& init) {
  AttrReader attrs(init.node);
  const std::string mode = attrs.get_string("mode", init.opset >= 20 ? "linear" : "bilinear");
  const std::string padding = attrs.get_string("padding_mode", "zeros");
  const bool align = attrs.get_int("align_corners", 0) != 0;
  NXRT_RETURN_IF_ERROR(attrs.status());
  GridMode m;
  if (mode == "nearest")
    m = GridMode::kNearest;
  else if (mode == "linear" || mode == "bilinear")
    m = GridMode::kLinear;
  else if (mode == "cubic" || mode == "bicubic")
    m = GridMode::kCubic;
  else
    return init.error(StatusCode::kInvalidGraph, "unsupported mode '", mode, "'");
  Padding p;
  if (padding == "zeros")
    p = Padding::kZeros;
  else if (padding == "border")
    p = Padding::kBorder;
  else if (padding == "reflection")
    p = Padding::kReflection;
  else
    return init.error(StatusCode::kInvalidGraph, "unsupported padding_mode '", padding, "'");
  if (!is_float_type(init.input_type(0))) return init.unsupported_type(0);
  if (!is_float_type(init.input_type(1))) return init.unsupported_type(1);
  init.set_all_outputs(init.input_type(0));
  return make_kernel<GridSampleKernel>(m, p, align);
}

Expected<KernelPtr> create_affine_grid(KernelInit& init) {
  AttrReader attrs(init.node);
  const bool align = attrs.get_int("align_corners", 0) != 0;
  NXRT_RETURN_IF_ERROR(attrs.status());
  if (!is_float_type(init.input_type(0))) return init.unsupported_type(0);
  init.set_all_outputs(init.input_type(0));
  return make_kernel<AffineGridKernel>(align);
}

Expected<KernelPtr> create_roi_align(KernelInit& init) {
  AttrReader attrs(init.node);
  const std::string mode = attrs.get_string("mode", "avg");
  const int64_t out_h = attrs.get_int("output_height", 1);
  const int64_t out_w = attrs.get_int("output_width", 1);
  const int64_t sampling = attrs.get_int("sampling_ratio", 0);
  const float scale = attrs.get_float("spatial_scale", 1.0f);
  const std::string coord = attrs.get_string("coordinate_transformation_mode",
                                             init.opset >= 16 ? "half_pixel" : "output_half_pixel");
  NXRT_RETURN_IF_ERROR(attrs.status());
  if (mode != "avg" && mode != "max")
    return init.error(StatusCode::kInvalidGraph, "unsupported mode '", mode, "'");
  if (coord != "half_pixel" && coord != "output_half_pixel")
    return init.error(StatusCode::kInvalidGraph, "unsupported coordinate_transformation_mode '",
                      coord, "'");
  if (out_h <= 0 || out_w <= 0 || sampling < 0)
    return init.error(StatusCode::kInvalidGraph,
                      "output_height/output_width must be positive and sampling_ratio >= 0");
  if (!is_float_type(init.input_type(0))) return init.unsupported_type(0);
  init.set_all_outputs(init.input_type(0));
  return make_kernel<RoiAlignKernel>(mode == "max", out_h, out_w, sampling, scale,
                                     coord == "half_pixel");
}

}  // namespace nxrt::cpu
