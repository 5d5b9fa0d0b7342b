#include "ep/cpu/vmath/vmath.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <vector>

#include "core/scratch.h"
#include "ep/cpu/gemm/gemm.h"
#include "ep/cpu/vmath/vmath_internal.h"

namespace nxrt::vmath {
namespace {

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

bool pick_avx2() {
  const char* env = std::getenv("NXRT_VMATH");
  if (env && std::strcmp(env, "portable") == 0) return false;
  return gemm::has_avx2_fma();
}

bool pick_avx512() {
  const char* env = std::getenv("NXRT_VMATH");
  if (env && std::strcmp(env, "avx2") == 0) return false;
#if defined(__x86_64__) || defined(__i386__)
  return uses_avx2() && gemm::has_avx512f() && __builtin_cpu_supports("avx512dq");
#else
  return false;
#endif
}

}  // namespace

bool uses_avx2() {
  static const bool yes = pick_avx2();
  return yes;
}

bool uses_avx512() {
  static const bool yes = pick_avx512();
  return yes;
}

double reference(Unary fn, const UnaryParams& p, double x) {
  switch (fn) {
    case Unary::kExp:
      return std::exp(x);
    case Unary::kTanh:
      return std::tanh(x);
    case Unary::kSigmoid:
      return sigmoid(x);
    case Unary::kErf:
      return std::erf(x);
    case Unary::kGelu:
      return 0.5 * x * (1.0 + std::erf(x * M_SQRT1_2));
    case Unary::kGeluTanh:
      return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
    case Unary::kRelu:
      return x < 0 ? 0.0 : x;  // NaN passes through
    case Unary::kLeakyRelu:
      return x < 0 ? x * double(p.alpha) : x;
    case Unary::kHardSigmoid: {
      const double v = double(p.alpha) * x + double(p.beta);
      if (std::isnan(v)) return v;  // (std::max/min would make NaN 1; the vectors keep it)
      return std::max(0.0, std::min(1.0, v));
    }
    case Unary::kHardSwish:
      return x * std::max(0.0, std::min(1.0, x / 6.0 + 0.5));
    case Unary::kSwish:
      return x * sigmoid(double(p.alpha) * x);
    case Unary::kElu:
      return x < 0 ? double(p.alpha) * (std::exp(x) - 1.0) : x;
    case Unary::kSelu:
      return double(p.gamma) * (x > 0 ? x : double(p.alpha) * std::exp(x) - double(p.alpha));
    case Unary::kSqrt:
      return std::sqrt(x);
    case Unary::kReciprocal:
      return 1.0 / x;
    case Unary::kSin:
      return std::sin(x);
    case Unary::kCos:
      return std::cos(x);
    case Unary::kNeg:
      return -x;
    case Unary::kAbs:
      return std::fabs(x);
    case Unary::kClip:
      if (std::isnan(x)) return x;
      return std::min(double(p.beta), std::max(double(p.alpha), x));
    case Unary::kSoftplus:
      return x > 30 ? x : std::log1p(std::exp(x));
    case Unary::kMish:
      return x * std::tanh(x > 30 ? x : std::log1p(std::exp(x)));
    case Unary::kSoftsign:
      return x / (1.0 + std::fabs(x));
    case Unary::kLog:
      return std::log(x);
    case Unary::kIdentity:
      return x;
  }
  return x;
}

void unary_reference(Unary fn, const UnaryParams& p, const float* x, float* y, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] = float(reference(fn, p, double(x[i])));
}

namespace detail {

void reduce_rows_portable(bool max, const float* const* rows, size_t nrows, float* out,
                          size_t begin, size_t end) {
  for (size_t j = begin; j < end; ++j) {
    float acc = rows[0][j];
    for (size_t r = 1; r < nrows; ++r) acc = max ? max_keep_nan(acc, rows[r][j]) : acc + rows[r][j];
    out[j] = acc;
  }
}

void reduce_taps_portable(bool max, const float* r, size_t count, int64_t stride, int64_t taps,
                          int64_t dilation, float scale, float* out) {
  for (size_t o = 0; o < count; ++o) {
    const float* p = r + int64_t(o) * stride;
    float acc = p[0];
    for (int64_t t = 1; t < taps; ++t)
      acc = max ? max_keep_nan(acc, p[t * dilation]) : acc + p[t * dilation];
    out[o] = max ? acc : acc * scale;
  }
}

namespace {
template <typename Q>
void quantize_typed(const float* x, size_t n, float scale, float zero_point, Q* y) {
  constexpr float lo = std::is_signed_v<Q> ? -128.0f : 0.0f;
  constexpr float hi = std::is_signed_v<Q> ? 127.0f : 255.0f;
  for (size_t i = 0; i < n; ++i) {
    float r = std::nearbyint(x[i] / scale) + zero_point;
    if (std::isnan(r)) r = 0;
    y[i] = Q(std::clamp(r, lo, hi));
  }
}
}  // namespace

void quantize_8bit_portable(const float* x, size_t n, float scale, float zero_point, bool is_signed,
                            void* y) {
  if (is_signed)
    quantize_typed(x, n, scale, zero_point, static_cast<int8_t*>(y));
  else
    quantize_typed(x, n, scale, zero_point, static_cast<uint8_t*>(y));
}

void dequantize_8bit_portable(const void* x, bool is_signed, size_t n, float scale,
                              float zero_point, float* y) {
  for (size_t i = 0; i < n; ++i) {
    const float v = is_signed ? float(static_cast<const int8_t*>(x)[i])
                              : float(static_cast<const uint8_t*>(x)[i]);
    y[i] = (v - zero_point) * scale;
  }
}

void depthwise_row_portable(const float* const* rows, const float* const* w, size_t nrows,
                            int64_t first, int64_t taps, int64_t stride, int64_t dilation,
                            float* out, size_t begin, size_t end) {
  for (size_t o = begin; o < end; ++o) {
    float acc = 0.0f;
    for (size_t r = 0; r < nrows; ++r)
      for (int64_t q = 0; q < taps; ++q)
        acc += w[r][q] * rows[r][first + int64_t(o) * stride + q * dilation];
    out[o] = acc;
  }
}

}  // namespace detail

void reduce_rows(bool max, const float* const* rows, size_t nrows, float* out, size_t n) {
  if (uses_avx512()) return detail::reduce_rows_avx512(max, rows, nrows, out, n);
  if (uses_avx2()) return detail::reduce_rows_avx2(max, rows, nrows, out, n);
  detail::reduce_rows_portable(max, rows, nrows, out, 0, n);
}

void reduce_taps(bool max, const float* r, size_t count, int64_t stride, int64_t taps,
                 int64_t dilation, float scale, float* out) {
  if (uses_avx512() && stride < (int64_t(1) << 27))  // stride * 15 in an int32 lane
    return detail::reduce_taps_avx512(max, r, count, stride, taps, dilation, scale, out);
  if (uses_avx2() && stride <= detail::kMaxGatherStride)
    return detail::reduce_taps_avx2(max, r, count, stride, taps, dilation, scale, out);
  detail::reduce_taps_portable(max, r, count, stride, taps, dilation, scale, out);
}

void pool_plane(bool max, const float* x, int64_t ld, const PoolWindow& w, float scale,
                float* out) {
  if (uses_avx512() && w.SW < (int64_t(1) << 27))
    return detail::pool_plane_avx512(max, x, ld, w, scale, out);
  if (uses_avx2() && detail::pool_plane_avx2(max, x, ld, w, scale, out)) return;
  // Elsewhere separably, per output row: the window's rows into one, then its taps.
  const int64_t width = (w.OW - 1) * w.SW + (w.KW - 1) * w.DW + 1;
  float* row = scratch<float>(ScratchSlot::kVmathRow, size_t(width));
  const float** rows = scratch<const float*>(ScratchSlot::kVmathRowPointers, size_t(w.KH));
  for (int64_t oh = 0; oh < w.OH; ++oh) {
    for (int64_t kh = 0; kh < w.KH; ++kh) rows[kh] = x + (oh * w.SH + kh * w.DH) * ld;
    reduce_rows(max, rows, size_t(w.KH), row, size_t(width));
    reduce_taps(max, row, size_t(w.OW), w.SW, w.KW, w.DW, scale, out + oh * w.out_stride());
  }
}

void pad_planes(const float* x, int64_t planes, int64_t H, int64_t W, int64_t top, int64_t left,
                int64_t HP, int64_t WP, int64_t dst_stride, float fill, float* out) {
  if (uses_avx512())
    return detail::pad_planes_avx512(x, planes, H, W, top, left, HP, WP, dst_stride, fill, out);
  const int64_t rows = std::min(H, HP - top), cols = std::min(W, WP - left);
  for (int64_t p = 0; p < planes; ++p) {
    float* dst = out + p * dst_stride;
    std::fill(dst, dst + HP * WP, fill);
    for (int64_t h = 0; h < rows; ++h)
      std::copy(x + (p * H + h) * W, x + (p * H + h) * W + cols, dst + (h + top) * WP + left);
  }
}

bool softmax_rows(bool log, const float* x, float* y, int64_t rows, int64_t n, bool nan_to_zero) {
  if (n <= 0) return false;
  if (uses_avx512()) {
    detail::softmax_rows_avx512(log, x, y, rows, n, nan_to_zero);
    return true;
  }
  if (!uses_avx2()) return false;
  detail::softmax_rows_avx2(log, x, y, rows, n, nan_to_zero);
  return true;
}

void window_rows(const float* plane, int64_t H, int64_t W, int64_t ih0, int64_t ih_step,
                 int64_t rows, int64_t off, int64_t lo, int64_t hi, int64_t OW, float* out) {
  if (OW <= 16 && uses_avx512())
    return detail::window_rows_avx512(plane, H, W, ih0, ih_step, rows, off, lo, hi, OW, out);
  for (int64_t r = 0; r < rows; ++r, out += OW) {
    const int64_t ih = ih0 + r * ih_step;
    if (ih < 0 || ih >= H || hi <= lo) {
      std::fill(out, out + OW, 0.0f);
      continue;
    }
    std::fill(out, out + lo, 0.0f);
    std::copy(plane + ih * W + off + lo, plane + ih * W + off + hi, out + lo);
    std::fill(out + hi, out + OW, 0.0f);
  }
}

bool depthwise_short_rows(const float* x, int64_t width, int64_t channels, const float* w,
                          int64_t taps, int64_t step, int64_t pad, int64_t count, float* y) {
  if (count > 16 || count < 1 || taps > 16 || taps < 1 || (step != 1 && step != 2) ||
      !uses_avx512())
    return false;
  detail::depthwise_short_rows_avx512(x, width, channels, w, taps, step, pad, count, y);
  return true;
}

void strided_rows(const float* x, int64_t ld, int64_t rows, int64_t off, int64_t step, int64_t lo,
                  int64_t hi, int64_t count, float* out, int64_t out_ld) {
  if (count <= 16 && (step == 1 || step == 2) && uses_avx512())
    return detail::strided_rows_avx512(x, ld, rows, off, step, lo, hi, count, out, out_ld);
  if (count <= 4 && (step == 1 || step == 2) && uses_avx2())
    return detail::strided_rows_avx2(x, ld, rows, off, step, lo, hi, count, out, out_ld);
  for (int64_t r = 0; r < rows; ++r) {
    const float* src = x + r * ld + off;
    float* dst = out + r * out_ld;
    for (int64_t o = 0; o < count; ++o) dst[o] = o >= lo && o < hi ? src[o * step] : 0.0f;
  }
}

namespace detail {
void channel_affine_clamp_portable(float* y, int64_t channels, int64_t cols, int64_t ld,
                                   const float* scale, const float* bias, float lo, float hi) {
  for (int64_t c = 0; c < channels; ++c) {
    const float s = scale ? scale[c] : 1.0f;
    const float b = bias ? bias[c] : 0.0f;
    float* row = y + c * ld;
    for (int64_t i = 0; i < cols; ++i) {
      // (A scale of 1 adds exactly what the fused multiply-add would, without the libm
      // call the baseline ISA makes of it.)
      float v = s == 1.0f ? row[i] + b : std::fma(row[i], s, b);
      v = v < lo ? lo : v;  // NaN stays NaN, as in the vector version
      row[i] = v > hi ? hi : v;
    }
  }
}
}  // namespace detail

void channel_affine_clamp(float* y, int64_t channels, int64_t cols, int64_t ld, const float* scale,
                          const float* bias, float lo, float hi) {
  const bool whole_rows = ld == cols && cols > 0 && (cols & (cols - 1)) == 0;
  if (whole_rows && cols <= 16 && uses_avx512())
    return detail::channel_affine_clamp_avx512(y, channels, cols, scale, bias, lo, hi);
  if (whole_rows && cols <= 8 && uses_avx2())
    return detail::channel_affine_clamp_avx2(y, channels, cols, scale, bias, lo, hi);
  detail::channel_affine_clamp_portable(y, channels, cols, ld, scale, bias, lo, hi);
}

void depthwise_plane(const float* x, int64_t ld, const PoolWindow& w, const float* weights,
                     float* out) {
  if (uses_avx512() && w.SW < (int64_t(1) << 27))
    return detail::depthwise_plane_avx512(x, ld, w, weights, out);
  if (uses_avx2() && detail::depthwise_plane_avx2(x, ld, w, weights, out)) return;
  // Elsewhere one output row at a time.
  const float** rows = scratch<const float*>(ScratchSlot::kVmathRowPointers, size_t(w.KH));
  const float** wrows = scratch<const float*>(ScratchSlot::kVmathWeightRows, size_t(w.KH));
  for (int64_t kh = 0; kh < w.KH; ++kh) wrows[kh] = weights + kh * w.KW;
  for (int64_t oh = 0; oh < w.OH; ++oh) {
    for (int64_t kh = 0; kh < w.KH; ++kh) rows[kh] = x + (oh * w.SH + kh * w.DH) * ld;
    depthwise_row(rows, wrows, size_t(w.KH), 0, w.KW, w.SW, w.DW, out + oh * w.out_stride(),
                  size_t(w.OW));
  }
}

void quantize_8bit(const float* x, size_t n, float scale, float zero_point, bool is_signed,
                   void* y) {
  if (uses_avx512()) return detail::quantize_8bit_avx512(x, n, scale, zero_point, is_signed, y);
  if (uses_avx2()) return detail::quantize_8bit_avx2(x, n, scale, zero_point, is_signed, y);
  detail::quantize_8bit_portable(x, n, scale, zero_point, is_signed, y);
}

void dequantize_8bit(const void* x, bool is_signed, size_t n, float scale, float zero_point,
                     float* y) {
  if (uses_avx512()) return detail::dequantize_8bit_avx512(x, is_signed, n, scale, zero_point, y);
  if (uses_avx2()) return detail::dequantize_8bit_avx2(x, is_signed, n, scale, zero_point, y);
  detail::dequantize_8bit_portable(x, is_signed, n, scale, zero_point, y);
}

void depthwise_row(const float* const* rows, const float* const* w, size_t nrows, int64_t first,
                   int64_t taps, int64_t stride, int64_t dilation, float* out, size_t count) {
  if (uses_avx2() && stride <= detail::kMaxGatherStride)
    return detail::depthwise_row_avx2(rows, w, nrows, first, taps, stride, dilation, out, count);
  detail::depthwise_row_portable(rows, w, nrows, first, taps, stride, dilation, out, 0, count);
}

namespace detail {
float max_value_portable(const float* x, size_t begin, size_t end, float m) {
  for (size_t i = begin; i < end; ++i) m = max_keep_nan(m, x[i]);
  return m;
}
}  // namespace detail

float max_value(const float* x, size_t n) {
  if (uses_avx2()) return detail::max_value_avx2(x, n);
  return detail::max_value_portable(x, 1, n, x[0]);
}

void unary_affine(Unary fn, const UnaryParams& p, float scale, float shift, const float* x,
                  float* y, size_t n) {
  if (fn == Unary::kSin || fn == Unary::kCos) {  // no fused form: the reference
    for (size_t i = 0; i < n; ++i)
      y[i] = float(reference(fn, p, double(std::fma(x[i], scale, shift))));
    return;
  }
  if (uses_avx512())
    detail::unary_affine_avx512(fn, p, scale, shift, x, y, n);
  else if (uses_avx2())
    detail::unary_affine_avx2(fn, p, scale, shift, x, y, n);
  else
    for (size_t i = 0; i < n; ++i)
      y[i] = float(reference(fn, p, double(std::fma(x[i], scale, shift))));
}

void unary(Unary fn, const UnaryParams& p, const float* x, float* y, size_t n) {
  if ((fn == Unary::kSin || fn == Unary::kCos) && (uses_avx512() || uses_avx2())) {
    // The vector forms run on every block; inputs outside their range (large phases, inf,
    // NaN) are then recomputed one by one in double precision. Each result depends on its
    // own input only, not on its neighbours, so it is the same bits however a tensor is
    // split into calls (threads, chunks, fused kernels).
    constexpr size_t kBlock = 1024;
    float outside[kBlock];
    uint16_t at[kBlock];
    for (size_t i = 0; i < n; i += kBlock) {
      const size_t m = std::min(kBlock, n - i);
      const bool inside = uses_avx512() ? detail::all_within_avx512(x + i, m, kSinCosVectorLimit)
                                        : detail::all_within_avx2(x + i, m, kSinCosVectorLimit);
      size_t count = 0;
      if (!inside)  // kept before the vector pass, which may write over x (y == x)
        for (size_t j = 0; j < m; ++j)
          if (!(std::fabs(x[i + j]) <= kSinCosVectorLimit)) {
            outside[count] = x[i + j];
            at[count++] = uint16_t(j);
          }
      if (uses_avx512())
        detail::unary_avx512(fn, p, x + i, y + i, m);
      else
        detail::unary_avx2(fn, p, x + i, y + i, m);
      for (size_t c = 0; c < count; ++c) unary_reference(fn, p, &outside[c], &y[i + at[c]], 1);
    }
    return;
  }
  if (uses_avx512())
    detail::unary_avx512(fn, p, x, y, n);
  else if (uses_avx2())
    detail::unary_avx2(fn, p, x, y, n);
  else
    unary_reference(fn, p, x, y, n);
}

}  // namespace nxrt::vmath
