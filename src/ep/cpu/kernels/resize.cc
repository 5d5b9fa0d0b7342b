// Resize (opsets 10-19+) and its deprecated alias Upsample (7, 9).
//
// Interpolation is separable, so the kernel never evaluates an N-D stencil per output
// element: per resized axis it builds a table of source taps and weights (one row per
// output coordinate), then nearest mode gathers through the tables in one sweep while
// linear/cubic run one 1-D pass per resized axis. Identity axes are skipped entirely.
// The tables depend only on the input shape and the scales/sizes/roi values, so the
// kernel keeps the last ones it built: warm runs with the same shapes neither plan nor
// allocate.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <type_traits>

#include "ep/cpu/kernels/common.h"

namespace nxrt::cpu {
namespace {

enum class Mode { kNearest, kLinear, kCubic };
enum class Coord {
  kHalfPixel,
  kPytorchHalfPixel,
  kAlignCorners,
  kAsymmetric,
  kTfCropAndResize,
  kHalfPixelSymmetric,
  kTfHalfPixelForNn
};
// kSimple is the rounding of Resize-10 and Upsample, which predate nearest_mode:
// ceil when downsampling, truncation otherwise (what onnxruntime does).
enum class Nearest { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil, kSimple };
enum class Policy { kStretch, kNotLarger, kNotSmaller };
// Where the scales/sizes come from, which changed across versions.
enum class Layout { kUpsampleAttr, kScalesAt1, kRoiScalesSizes };

struct ResizeConfig {
  Layout layout = Layout::kRoiScalesSizes;
  Mode mode = Mode::kNearest;
  Coord coord = Coord::kHalfPixel;
  Nearest nearest = Nearest::kRoundPreferFloor;
  double cubic_a = -0.75;
  bool exclude_outside = false;
  double extrapolation = 0.0;
  bool antialias = false;
  Policy policy = Policy::kStretch;
  std::vector<int64_t> axes;  // empty: all axes
  std::vector<float> attr_scales;
};

// Per-axis sampling table: for output coordinate o, taps [o*taps, (o+1)*taps) give the
// source index and weight. Nearest uses one tap; index -1 marks an extrapolated output.
struct AxisPlan {
  bool identity = true;
  int64_t taps = 1;
  std::vector<int64_t> index;
  std::vector<double> weight;
  std::vector<float> weight_f;  // the same weights for float accumulation
  std::vector<uint8_t> extrapolate;
};

// A plan's weights in the accumulator type.
template <typename A>
const A* weights_as(const AxisPlan& p) {
  if constexpr (std::is_same_v<A, float>)
    return p.weight_f.data();
  else
    return p.weight.data();
}

double source_coord(const ResizeConfig& cfg, int64_t y, double scale, int64_t in, int64_t out,
                    double roi_start, double roi_end) {
  // The spec's length_resized is the output's (integer) length: align_corners and
  // tf_crop_and_resize divide by out - 1 (onnxruntime too). Only half_pixel_symmetric uses
  // the real-valued output_width, scale * in, which differs when a scale does not divide
  // evenly. (onnx.reference, and the backend test data made with it, divide by
  // scale * in - 1: see known_failures.txt.)
  const double out_len = scale * double(in);
  const double yd = double(y);
  switch (cfg.coord) {
    case Coord::kHalfPixel:
      return (yd + 0.5) / scale - 0.5;
    case Coord::kPytorchHalfPixel:
      return out > 1 ? (yd + 0.5) / scale - 0.5 : 0.0;
    case Coord::kAlignCorners:
      return out == 1 ? 0.0 : yd * double(in - 1) / double(out - 1);
    case Coord::kAsymmetric:
      return yd / scale;
    case Coord::kTfHalfPixelForNn:
      return (yd + 0.5) / scale;
    case Coord::kTfCropAndResize: {
      const double span = (roi_end - roi_start) * double(in - 1);
      const double x = out == 1 ? span / 2 : yd * span / double(out - 1);
      return x + roi_start * double(in - 1);
    }
    case Coord::kHalfPixelSymmetric: {
      const double adjustment = double(out) / out_len;
      const double offset = double(in) / 2 * (1 - adjustment);
      return offset + (yd + 0.5) / scale - 0.5;
    }
  }
  return 0.0;
}

double cubic_kernel(double x, double a) {
  x = std::fabs(x);
  if (x <= 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0.0;
}

AxisPlan build_plan(const ResizeConfig& cfg, int64_t in, int64_t out, double scale,
                    double roi_start, double roi_end) {
  AxisPlan p;
  const bool tf_crop = cfg.coord == Coord::kTfCropAndResize;
  p.identity = out == in && scale == 1.0 && (!tf_crop || (roi_start == 0.0 && roi_end == 1.0));
  if (p.identity) return p;
  if (tf_crop) p.extrapolate.assign(size_t(out), 0);
  if (cfg.mode == Mode::kNearest) {
    p.taps = 1;
    p.index.resize(size_t(out));
    for (int64_t y = 0; y < out; ++y) {
      const double x = source_coord(cfg, y, scale, in, out, roi_start, roi_end);
      if (tf_crop && (x < 0 || x > double(in - 1))) {
        p.index[size_t(y)] = -1;
        continue;
      }
      const double fl = std::floor(x);
      const double frac = x - fl;
      double pick = x;
      if (frac != 0) {
        switch (cfg.nearest) {
          case Nearest::kRoundPreferFloor:
            pick = frac <= 0.5 ? fl : fl + 1;
            break;
          case Nearest::kRoundPreferCeil:
            pick = frac < 0.5 ? fl : fl + 1;
            break;
          case Nearest::kFloor:
            pick = fl;
            break;
          case Nearest::kCeil:
            pick = fl + 1;
            break;
          case Nearest::kSimple:
            pick = scale < 1.0 ? fl + 1 : std::trunc(x);
            break;
        }
      }
      p.index[size_t(y)] = int64_t(std::clamp(pick, 0.0, double(in - 1)));
    }
    return p;
  }
  // Antialiasing widens the kernel by 1/scale when downsampling so every input pixel
  // contributes (a low-pass filter); otherwise the support is 2 (linear) or 4 (cubic).
  const double s = cfg.antialias ? std::min(scale, 1.0) : 1.0;
  const double radius = cfg.mode == Mode::kLinear ? 1.0 : 2.0;
  const int64_t first_rel = int64_t(std::floor(-radius / s)) + 1;  // 0 or -1 without antialias
  const int64_t taps = 2 - 2 * first_rel;
  p.taps = taps;
  p.index.resize(size_t(out * taps));
  p.weight.resize(size_t(out * taps));
  for (int64_t y = 0; y < out; ++y) {
    const double x = source_coord(cfg, y, scale, in, out, roi_start, roi_end);
    if (tf_crop && (x < 0 || x > double(in - 1))) p.extrapolate[size_t(y)] = 1;
    // Prefer the pixel left of x: an integral x counts as ratio 1 from x - 1.
    double base = std::floor(x);
    if (base == x) base -= 1;
    const double ratio = x - base;
    int64_t* idx = &p.index[size_t(y * taps)];
    double* w = &p.weight[size_t(y * taps)];
    double sum = 0;
    for (int64_t k = 0; k < taps; ++k) {
      const double rel = double(first_rel + k);
      const double d = (rel - ratio) * s;
      double wk = cfg.mode == Mode::kLinear ? std::max(0.0, 1.0 - std::fabs(d))
                                            : cubic_kernel(d, cfg.cubic_a);
      const int64_t src = int64_t(base) + first_rel + k;
      if (cfg.exclude_outside && (src < 0 || src >= in)) wk = 0;
      idx[k] = std::clamp<int64_t>(src, 0, in - 1);
      w[k] = wk;
      sum += wk;
    }
    if ((cfg.antialias || cfg.exclude_outside) && sum != 0)
      for (int64_t k = 0; k < taps; ++k) w[k] /= sum;
  }
  p.weight_f.assign(p.weight.begin(), p.weight.end());
  return p;
}

// Integer outputs are rounded half-to-even, so they accumulate in double: float error
// would move exact .5 ties to either side.
template <typename T>
struct AccOf {
  using type = double;
};
template <>
struct AccOf<float> {
  using type = float;
};
template <>
struct AccOf<Float16> {
  using type = float;
};
template <>
struct AccOf<BFloat16> {
  using type = float;
};

template <typename D, typename A>
D store(A v) {
  if constexpr (std::is_integral_v<D>) {
    const double r = std::nearbyint(double(v));  // half to even, as numpy's round
    if (!(r >= double(std::numeric_limits<D>::lowest()))) return std::numeric_limits<D>::lowest();
    if (r >= double(std::numeric_limits<D>::max())) return std::numeric_limits<D>::max();
    return D(r);
  } else if constexpr (std::is_same_v<D, Float16> || std::is_same_v<D, BFloat16>) {
    return D(float(v));
  } else {
    return D(v);
  }
}

// One 1-D pass: src is [outer, in, inner], dst is [outer, out, inner].
template <typename S, typename D, typename A>
void interpolate_pass(const S* src, D* dst, int64_t outer, int64_t in, int64_t out, int64_t inner,
                      const AxisPlan& p, A extrap) {
  const int64_t taps = p.taps;
  A* row = std::is_same_v<D, A> ? nullptr : thread_scratch<A>(size_t(inner), 2);
  const A* w = weights_as<A>(p);
  for (int64_t b = 0; b < outer; ++b) {
    const S* sb = src + b * in * inner;
    D* db = dst + b * out * inner;
    for (int64_t y = 0; y < out; ++y) {
      const int64_t* idx = &p.index[size_t(y * taps)];
      const A* wy = &w[size_t(y * taps)];
      D* d = db + y * inner;
      const bool ext = !p.extrapolate.empty() && p.extrapolate[size_t(y)];
      if (inner == 1) {
        A acc = 0;
        if (ext)
          acc = extrap;
        else
          for (int64_t k = 0; k < taps; ++k) acc += wy[k] * A(sb[idx[k]]);
        *d = store<D>(acc);
        continue;
      }
      A* acc;
      if constexpr (std::is_same_v<D, A>)
        acc = d;
      else
        acc = row;
      if (ext) {
        std::fill(acc, acc + inner, extrap);
      } else {
        std::fill(acc, acc + inner, A(0));
        for (int64_t k = 0; k < taps; ++k) {
          const A wk = wy[k];
          if (wk == A(0)) continue;
          const S* s = sb + idx[k] * inner;
          for (int64_t i = 0; i < inner; ++i) acc[i] += wk * A(s[i]);
        }
      }
      if constexpr (!std::is_same_v<D, A>)
        for (int64_t i = 0; i < inner; ++i) d[i] = store<D>(acc[i]);
    }
  }
}

template <typename T>
void run_interpolate(const Tensor& x, Tensor& y, const std::vector<AxisPlan>& plans,
                     double extrapolation) {
  using A = typename AccOf<T>::type;
  const Shape& in_shape = x.shape();
  const size_t rank = in_shape.size();
  SmallVec<int64_t> active;
  for (size_t d = 0; d < rank; ++d)
    if (!plans[d].identity) active.push_back(int64_t(d));
  if (active.empty()) {
    copy_elements(x.dtype(), x.raw(), y.raw(), x.numel());
    return;
  }
  Shape cur = in_shape;
  const A* cur_acc = nullptr;
  for (size_t i = 0; i < active.size(); ++i) {
    const size_t d = size_t(active[i]);
    const int64_t outer = cur.product(0, d), in = cur[d], inner = cur.product(d + 1, rank);
    const int64_t out = y.shape()[d];
    const bool first = i == 0, last = i + 1 == active.size();
    // Intermediate passes alternate between two scratch buffers (slots 0 and 1).
    A* next = last ? nullptr : thread_scratch<A>(size_t(outer * out * inner), i % 2);
    if (first && last)
      interpolate_pass(x.data<T>(), y.data<T>(), outer, in, out, inner, plans[d], A(extrapolation));
    else if (first)
      interpolate_pass(x.data<T>(), next, outer, in, out, inner, plans[d], A(extrapolation));
    else if (last)
      interpolate_pass(cur_acc, y.data<T>(), outer, in, out, inner, plans[d], A(extrapolation));
    else
      interpolate_pass(cur_acc, next, outer, in, out, inner, plans[d], A(extrapolation));
    cur[d] = out;
    cur_acc = next;
  }
}

// Nearest: every output element copies one source element (or the extrapolation value).
// Trailing axes the resize leaves as they are move as one element of `chunk` values (the
// 16 lanes of a channel-blocked map): one copy each instead of one per value.
template <typename T>
void run_nearest(const Tensor& x, Tensor& y, const std::vector<AxisPlan>& plans, T extrap) {
  const Shape& in_shape = x.shape();
  const Shape& out_shape = y.shape();
  size_t rank = in_shape.size();
  const T* src = x.data<T>();
  T* dst = y.data<T>();
  if (rank == 0) {
    dst[0] = src[0];
    return;
  }
  SmallVec<int64_t> in_stride(rank, 1);
  for (size_t d = rank - 1; d-- > 0;) in_stride[d] = in_stride[d + 1] * in_shape[d + 1];
  int64_t chunk = 1;
  while (rank > 1 && plans[rank - 1].identity) chunk *= in_shape[--rank];
  auto src_index = [&](size_t d, int64_t o) {
    return plans[d].identity ? o : plans[d].index[size_t(o)];
  };
  const int64_t width = out_shape[rank - 1], row = width * chunk;
  const int64_t rows = y.numel() / std::max<int64_t>(row, 1);
  if (row == 0 || rows == 0) return;
  SmallVec<int64_t> pos(rank, 0);
  int64_t prev_base = std::numeric_limits<int64_t>::min();
  const AxisPlan& last = plans[rank - 1];
  for (int64_t r = 0; r < rows; ++r) {
    T* drow = dst + r * row;
    int64_t base = 0;
    bool ext = false;
    for (size_t d = 0; d + 1 < rank; ++d) {
      const int64_t s = src_index(d, pos[d]);
      if (s < 0) ext = true;
      base += s * in_stride[d];
    }
    if (ext) {
      std::fill(drow, drow + row, extrap);
    } else if (base == prev_base && r > 0) {
      // Upsampling repeats source rows: copy the row just written.
      std::copy(drow - row, drow, drow);
    } else {
      const T* srow = src + base;
      if (last.identity) {
        std::copy(srow, srow + row, drow);
      } else if (chunk == 1) {
        const int64_t* idx = last.index.data();
        for (int64_t w = 0; w < width; ++w) drow[w] = idx[w] < 0 ? extrap : srow[idx[w]];
      } else {
        const int64_t* idx = last.index.data();
        for (int64_t w = 0; w < width; ++w) {
          T* d = drow + w * chunk;
          if (idx[w] < 0)
            std::fill(d, d + chunk, extrap);
          else
            std::copy(srow + idx[w] * chunk, srow + (idx[w] + 1) * chunk, d);
        }
      }
    }
    prev_base = ext ? std::numeric_limits<int64_t>::min() : base;
    for (size_t d = rank - 1; d-- > 0;) {
      if (++pos[d] < out_shape[d]) break;
      pos[d] = 0;
    }
  }
}

Status read_float_list(const Tensor& t, std::vector<double>& out, const char* what) {
  if (t.rank() > 1)
    return invalid_argument(what, " must be 1-D, got shape ", t.shape().to_string());
  const int64_t n = t.numel();
  out.resize(size_t(n));
  switch (t.dtype()) {
    NXRT_CASES_FLOAT(for (int64_t i = 0; i < n; ++i) out[size_t(i)] = double(t.data<T>()[i]))
    default:
      return invalid_argument(what, " must be a float tensor, got ", dtype_name(t.dtype()));
  }
  return Status();
}

// What one input shape and one set of roi/scales/sizes values make of a Resize: the
// output shape and each dimension's sampling table.
struct ResizePlan {
  Shape in_shape;
  std::vector<std::byte> params;  // per parameter input: dtype, element count, raw bytes
  Shape out_shape;
  std::vector<AxisPlan> axes;  // by dimension
};

// The key bytes of a parameter input (or of its absence), appended to `key` or compared
// with `key` at `offset` (advancing it) without allocating.
void append_param(std::vector<std::byte>& key, const Tensor* t) {
  const int64_t header[2] = {t ? int64_t(t->dtype()) : -1, t ? t->numel() : -1};
  const auto* h = reinterpret_cast<const std::byte*>(header);
  key.insert(key.end(), h, h + sizeof(header));
  if (t && t->numel() > 0) {
    const auto* data = static_cast<const std::byte*>(t->raw());
    key.insert(key.end(), data, data + t->nbytes());
  }
}
bool param_matches(const std::vector<std::byte>& key, size_t& offset, const Tensor* t) {
  const int64_t header[2] = {t ? int64_t(t->dtype()) : -1, t ? t->numel() : -1};
  const size_t bytes = sizeof(header) + (t && t->numel() > 0 ? t->nbytes() : 0);
  if (offset + bytes > key.size() || std::memcmp(key.data() + offset, header, sizeof(header)))
    return false;
  if (bytes > sizeof(header) &&
      std::memcmp(key.data() + offset + sizeof(header), t->raw(), bytes - sizeof(header)))
    return false;
  offset += bytes;
  return true;
}

class ResizeKernel final : public Kernel {
 public:
  explicit ResizeKernel(ResizeConfig cfg) : cfg_(std::move(cfg)) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    const Tensor* params[3] = {nullptr, nullptr, nullptr};  // roi, scales, sizes
    if (cfg_.layout == Layout::kScalesAt1) {
      params[1] = ctx.input(1);
      if (!params[1]) return invalid_argument("the scales input is required");
    } else if (cfg_.layout == Layout::kRoiScalesSizes) {
      for (size_t i = 0; i < 3; ++i) params[i] = ctx.input(i + 1);
    }
    std::shared_ptr<const ResizePlan> plan;
    {
      std::lock_guard<std::mutex> lock(cache_mutex_);
      plan = cache_;
    }
    if (!plan || !plan_matches(*plan, x.shape(), params)) {
      auto fresh = std::make_shared<ResizePlan>();
      NXRT_RETURN_IF_ERROR(make_plan(x.shape(), params, *fresh));
      plan = fresh;
      std::lock_guard<std::mutex> lock(cache_mutex_);
      cache_ = plan;
    }
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, plan->out_shape));
    if (y->numel() == 0) return Status();
    if (cfg_.mode == Mode::kNearest) {
      switch (x.dtype()) {
        NXRT_CASES_NUMERIC(run_nearest<T>(x, *y, plan->axes, store<T>(cfg_.extrapolation));
                           return Status())
        NXRT_CASE(kBool, run_nearest<T>(x, *y, plan->axes, cfg_.extrapolation != 0);
                  return Status())
        default:
          break;
      }
    } else {
      switch (x.dtype()) {
        NXRT_CASES_NUMERIC(run_interpolate<T>(x, *y, plan->axes, cfg_.extrapolation);
                           return Status())
        default:
          break;
      }
    }
    return not_implemented("type ", tensor_type_name(x.dtype()), " is not supported");
  }

 private:
  static bool plan_matches(const ResizePlan& plan, const Shape& in_shape,
                           const Tensor* const (&params)[3]) {
    if (!(plan.in_shape == in_shape)) return false;
    size_t offset = 0;
    for (const Tensor* t : params)
      if (!param_matches(plan.params, offset, t)) return false;
    return offset == plan.params.size();
  }

  Status make_plan(const Shape& in_shape, const Tensor* const (&params)[3],
                   ResizePlan& plan) const {
    const int64_t rank = int64_t(in_shape.size());
    std::vector<double> scales, roi;
    std::vector<int64_t> sizes;
    const Tensor* roi_t = params[0];
    const Tensor* scales_t = params[1];
    const Tensor* sizes_t = params[2];
    if (cfg_.layout == Layout::kUpsampleAttr)
      scales.assign(cfg_.attr_scales.begin(), cfg_.attr_scales.end());
    if (scales_t && scales_t->numel() > 0)
      NXRT_RETURN_IF_ERROR(read_float_list(*scales_t, scales, "scales"));
    if (sizes_t && sizes_t->numel() > 0)
      NXRT_RETURN_IF_ERROR(read_int_list(*sizes_t, sizes, "sizes"));
    if (roi_t && roi_t->numel() > 0 && cfg_.coord == Coord::kTfCropAndResize)
      NXRT_RETURN_IF_ERROR(read_float_list(*roi_t, roi, "roi"));
    if (!scales.empty() && !sizes.empty())
      return invalid_argument("only one of scales and sizes may be given");
    if (scales.empty() && sizes.empty())
      return invalid_argument("one of scales and sizes must be given (non-empty)");

    std::vector<int64_t> axes = cfg_.axes;
    if (axes.empty()) {
      for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
    } else {
      std::vector<bool> seen(size_t(rank), false);
      for (int64_t& a : axes) {
        if (!normalize_axis(a, rank))
          return invalid_argument("axis ", a, " is out of range for rank ", rank);
        if (seen[size_t(a)]) return invalid_argument("axis ", a, " appears twice in axes");
        seen[size_t(a)] = true;
      }
    }
    const size_t n_axes = axes.size();
    const size_t given = scales.empty() ? sizes.size() : scales.size();
    if (given != n_axes)
      return invalid_argument(scales.empty() ? "sizes" : "scales", " has ", given,
                              " elements, expected ", n_axes, " (input rank ", rank, ")");
    if (!roi.empty() && roi.size() != 2 * n_axes)
      return invalid_argument("roi has ", roi.size(), " elements, expected ", 2 * n_axes);

    std::vector<double> scale(size_t(rank), 1.0), roi_start(size_t(rank), 0.0),
        roi_end(size_t(rank), 1.0);
    Shape out_shape = in_shape;
    for (size_t i = 0; i < n_axes; ++i) {
      const size_t d = size_t(axes[i]);
      if (!roi.empty()) {
        roi_start[d] = roi[i];
        roi_end[d] = roi[n_axes + i];
      }
      if (!scales.empty()) {
        const double s = scales[i];
        if (!(s > 0) || !std::isfinite(s))
          return invalid_argument("scale ", s, " must be positive and finite");
        const double o = std::floor(s * double(in_shape[d]));
        if (o > double(int64_t(1) << 40))
          return invalid_argument("scale ", s, " gives an absurd output size");
        scale[d] = s;
        out_shape[d] = int64_t(o);
      } else {
        if (sizes[i] < 0) return invalid_argument("sizes has a negative value ", sizes[i]);
        if (in_shape[d] == 0 && sizes[i] != 0)
          return invalid_argument("cannot resize an empty axis ", d, " to ", sizes[i]);
        out_shape[d] = sizes[i];
        scale[d] = in_shape[d] == 0 ? 1.0 : double(sizes[i]) / double(in_shape[d]);
      }
    }
    if (!sizes.empty() && cfg_.policy != Policy::kStretch) {
      double s = cfg_.policy == Policy::kNotLarger ? std::numeric_limits<double>::infinity() : 0.0;
      for (int64_t a : axes)
        s = cfg_.policy == Policy::kNotLarger ? std::min(s, scale[size_t(a)])
                                              : std::max(s, scale[size_t(a)]);
      for (int64_t a : axes) {
        scale[size_t(a)] = s;
        out_shape[size_t(a)] = int64_t(s * double(in_shape[size_t(a)]) + 0.5);
      }
    }
    if (checked_numel(out_shape.span()) < 0)
      return invalid_argument("output shape ", out_shape.to_string(), " is too large");

    plan.in_shape = in_shape;
    plan.params.clear();
    for (const Tensor* t : params) append_param(plan.params, t);
    plan.out_shape = out_shape;
    plan.axes.resize(size_t(rank));
    for (int64_t d = 0; d < rank; ++d)
      plan.axes[size_t(d)] = build_plan(cfg_, in_shape[size_t(d)], out_shape[size_t(d)],
                                        scale[size_t(d)], roi_start[size_t(d)], roi_end[size_t(d)]);
    return Status();
  }

  ResizeConfig cfg_;
  // The last plan built; runs with other shapes or values build their own and replace it.
  mutable std::mutex cache_mutex_;
  mutable std::shared_ptr<const ResizePlan> cache_;
};

Status parse_mode(AttrReader& attrs, ResizeConfig& cfg, bool allow_cubic) {
  const std::string mode = attrs.get_string("mode", "nearest");
  if (mode == "nearest")
    cfg.mode = Mode::kNearest;
  else if (mode == "linear" || mode == "bilinear" || mode == "trilinear")
    cfg.mode = Mode::kLinear;
  else if (mode == "cubic" && allow_cubic)
    cfg.mode = Mode::kCubic;
  else
    return invalid_graph("unsupported mode '", mode, "'");
  return Status();
}

Status check_input_types(const KernelInit& init) {
  const DataType t = init.input_type(0);
  if (!is_float_type(t) && !is_integer_type(t) && t != DataType::kBool)
    return init.unsupported_type(0);
  return Status();
}

}  // namespace

Expected<KernelPtr> create_resize(KernelInit& init) {
  NXRT_RETURN_IF_ERROR(check_input_types(init));
  AttrReader attrs(init.node);
  ResizeConfig cfg;
  Status st = parse_mode(attrs, cfg, init.opset >= 11);
  if (!st.ok()) return init.error(StatusCode::kInvalidGraph, st.message());
  if (init.opset < 11) {
    cfg.layout = Layout::kScalesAt1;
    cfg.coord = Coord::kAsymmetric;
    cfg.nearest = Nearest::kSimple;
  } else {
    cfg.layout = Layout::kRoiScalesSizes;
    const std::string coord = attrs.get_string("coordinate_transformation_mode", "half_pixel");
    if (coord == "half_pixel")
      cfg.coord = Coord::kHalfPixel;
    else if (coord == "pytorch_half_pixel")
      cfg.coord = Coord::kPytorchHalfPixel;
    else if (coord == "align_corners")
      cfg.coord = Coord::kAlignCorners;
    else if (coord == "asymmetric")
      cfg.coord = Coord::kAsymmetric;
    else if (coord == "tf_crop_and_resize")
      cfg.coord = Coord::kTfCropAndResize;
    else if (coord == "half_pixel_symmetric" && init.opset >= 19)
      cfg.coord = Coord::kHalfPixelSymmetric;
    else if (coord == "tf_half_pixel_for_nn" && init.opset < 13)
      cfg.coord = Coord::kTfHalfPixelForNn;
    else
      return init.error(StatusCode::kInvalidGraph, "unsupported coordinate_transformation_mode '",
                        coord, "'");
    const std::string nearest = attrs.get_string("nearest_mode", "round_prefer_floor");
    if (nearest == "round_prefer_floor")
      cfg.nearest = Nearest::kRoundPreferFloor;
    else if (nearest == "round_prefer_ceil")
      cfg.nearest = Nearest::kRoundPreferCeil;
    else if (nearest == "floor")
      cfg.nearest = Nearest::kFloor;
    else if (nearest == "ceil")
      cfg.nearest = Nearest::kCeil;
    else
      return init.error(StatusCode::kInvalidGraph, "unsupported nearest_mode '", nearest, "'");
    cfg.cubic_a = attrs.get_float("cubic_coeff_a", -0.75f);
    cfg.exclude_outside = attrs.get_int("exclude_outside", 0) != 0;
    cfg.extrapolation = attrs.get_float("extrapolation_value", 0.0f);
  }
  if (init.opset >= 18) {
    cfg.antialias = attrs.get_int("antialias", 0) != 0;
    cfg.axes = attrs.get_ints("axes");
    const std::string policy = attrs.get_string("keep_aspect_ratio_policy", "stretch");
    if (policy == "stretch")
      cfg.policy = Policy::kStretch;
    else if (policy == "not_larger")
      cfg.policy = Policy::kNotLarger;
    else if (policy == "not_smaller")
      cfg.policy = Policy::kNotSmaller;
    else
      return init.error(StatusCode::kInvalidGraph, "unsupported keep_aspect_ratio_policy '", policy,
                        "'");
  }
  NXRT_RETURN_IF_ERROR(attrs.status());
  if (cfg.mode != Mode::kNearest && init.input_type(0) == DataType::kBool)
    return init.error(StatusCode::kNotImplemented,
                      "linear/cubic resize of bool tensors is not supported");
  init.set_all_outputs(init.input_type(0));
  return make_kernel<ResizeKernel>(std::move(cfg));
}

Expected<KernelPtr> create_upsample(KernelInit& init) {
  NXRT_RETURN_IF_ERROR(check_input_types(init));
  AttrReader attrs(init.node);
  ResizeConfig cfg;
  Status st = parse_mode(attrs, cfg, false);
  if (!st.ok()) return init.error(StatusCode::kInvalidGraph, st.message());
  cfg.coord = Coord::kAsymmetric;
  cfg.nearest = Nearest::kSimple;
  if (init.opset < 9) {
    cfg.layout = Layout::kUpsampleAttr;
    cfg.attr_scales = attrs.get_floats("scales");
    if (cfg.attr_scales.empty())
      return init.error(StatusCode::kInvalidGraph, "needs the scales attribute");
  } else {
    cfg.layout = Layout::kScalesAt1;
  }
  NXRT_RETURN_IF_ERROR(attrs.status());
  if (cfg.mode != Mode::kNearest && init.input_type(0) == DataType::kBool)
    return init.error(StatusCode::kNotImplemented,
                      "linear upsampling of bool tensors is not supported");
  init.set_all_outputs(init.input_type(0));
  return make_kernel<ResizeKernel>(std::move(cfg));
}

}  // namespace nxrt::cpu
