// A 1-D convolution whose constant weight is a windowed DFT basis runs as one FFT per
// output frame. Audio models export the short-time Fourier transform that way (a Conv1d
// over rows w[n] cos(2 pi k n / N) and w[n] sin(2 pi k n / N), stride the hop; Silero VAD
// among them): N log N work per frame instead of N^2, and no 2(N/2 + 1) x N weight matrix
// streamed through the cache on every run (264 KB of Silero's 1.2 MB per frame).
//
// Detected when the kernel is made: weight [2F, 1, N] with F = N/2 + 1 and N a power of
// two, one input channel, group 1, dilation 1, no bias; row k < F is w[n] cos(2 pi k n / N)
// and row F + k is s w[n] sin(2 pi k n / N), one sign s for all, each weight within
// kTolerance of that (w is row 0). The basis then matches the weights to their float
// rounding, so the FFT's results are the convolution's to float rounding. Anything else
// (other inputs at run time, an overridden weight) goes to the general convolution.
#include "ep/cpu/kernels/conv_dft.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "core/parallel.h"
#include "ep/cpu/kernels/conv_geometry.h"

namespace nxrt::cpu {
namespace {

// Weight error allowed against the basis, relative to the window's largest value: two
// float32 ulps of it. An exporter that computed the basis in float32 from large angles
// (errors near 1e-5) is not an FFT to float precision and keeps the convolution.
constexpr double kTolerance = 2.4e-7;
// Frames transformed together: the columns of the scratch arrays (frames innermost, so
// every butterfly is a vector loop over frames).
constexpr int64_t kFrameChunk = 64;

// Frames per pass through the butterflies: one SSE register of floats (a GCC/Clang vector
// type, so every butterfly is a handful of vector instructions on any x86-64).
constexpr int kLanes = 4;
typedef float Lanes __attribute__((vector_size(kLanes * sizeof(float))));

bool is_power_of_two(int64_t n) { return n > 0 && (n & (n - 1)) == 0; }

class DftConvKernel final : public Kernel {
 public:
  DftConvKernel(KernelPtr general, WindowAttrs attrs, Tensor weight, std::vector<float> window,
                float sin_sign)
      : general_(std::move(general)),
        attrs_(std::move(attrs)),
        weight_(std::move(weight)),
        window_(std::move(window)),
        sin_sign_(sin_sign) {
    const int64_t n = int64_t(window_.size());
    for (int64_t j = 0; j <= n / 2; ++j) {
      const double angle = 2.0 * std::numbers::pi * double(j) / double(n);
      cos_.push_back(float(std::cos(angle)));
      sin_.push_back(float(std::sin(angle)));
    }
    // The N real samples go through an N/2-point complex FFT (even samples as real parts,
    // odd ones as imaginary parts), then one pass splits its result into the N-point one.
    const int64_t half = n / 2;
    int64_t bits = 0;
    while ((int64_t(1) << bits) < half) ++bits;
    for (int64_t i = 0; i < half; ++i) {
      int64_t r = 0;
      for (int64_t b = 0; b < bits; ++b) r |= ((i >> b) & 1) << (bits - 1 - b);
      reversed_.push_back(r);
    }
  }

  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    const Tensor* w = ctx.input(1);
    const int64_t n = int64_t(window_.size());
    if (x.dtype() != DataType::kFloat || x.rank() != 3 || x.shape()[1] != 1 || !w ||
        w->raw() != weight_.raw() || ctx.input(2))
      return general_->compute(ctx);
    Window win;
    const int64_t length = x.shape()[2];
    const int64_t kernel = n;
    if (!resolve_window(attrs_, std::span<const int64_t>(&length, 1),
                        std::span<const int64_t>(&kernel, 1), win)
             .ok())
      return general_->compute(ctx);
    const int64_t batches = x.shape()[0], frames = win.out[0];
    const int64_t bins = n / 2 + 1;
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, Shape{batches, 2 * bins, frames}));
    if (y->numel() == 0) return Status();
    const int64_t chunks = (frames + kFrameChunk - 1) / kFrameChunk;
    const auto run_chunk = [&](size_t piece) {
      const int64_t b = int64_t(piece) / chunks, t0 = int64_t(piece) % chunks * kFrameChunk;
      transform(x.data<float>() + b * length, length, win.stride[0], win.pad_begin[0], t0,
                std::min(kFrameChunk, frames - t0), frames,
                y->data<float>() + b * 2 * bins * frames);
    };
    const size_t pieces = size_t(batches * chunks);
    const double work = double(pieces) * double(kFrameChunk) * double(n) * 8.0;
    if (pieces > 1 && parallel_pieces(work, double(1 << 16)) > 1)
      parallel_for(pieces, run_chunk);
    else
      for (size_t p = 0; p < pieces; ++p) run_chunk(p);
    return Status();
  }

  bool may_alias_input0() const override { return general_->may_alias_input0(); }

 private:
  // Frames [t0, t0 + count) of one batch's signal into columns t0.. of y ([2F, frames]),
  // count <= kFrameChunk. Frames go kLanes at a time through the butterflies, one lane
  // each: fixed-size loops the compiler turns into vector instructions.
  void transform(const float* x, int64_t length, int64_t stride, int64_t pad, int64_t t0,
                 int64_t count, int64_t frames, float* y) const {
    const int64_t n = int64_t(window_.size());
    const int64_t half = n / 2;
    Lanes* re = reinterpret_cast<Lanes*>(thread_scratch<float>(size_t(n * kLanes)));
    Lanes* im = re + half;
    const int64_t bins = n / 2 + 1;
    const float im_sign = -sin_sign_;
    for (int64_t g = 0; g < count; g += kLanes) {
      const int64_t lanes = std::min<int64_t>(kLanes, count - g);
      // z[m] = w x[2m] + i w x[2m+1] in bit-reversed order (zeros outside the signal: the
      // pads, and the lanes past the last frame).
      for (int64_t m = 0; m < half; ++m) {
        Lanes& zr = re[reversed_[size_t(m)]];
        Lanes& zi = im[reversed_[size_t(m)]];
        for (int64_t l = 0; l < kLanes; ++l) {
          const int64_t at = (t0 + g + l) * stride - pad + 2 * m;
          zr[l] = l < lanes && at >= 0 && at < length ? x[at] * window_[size_t(2 * m)] : 0.0f;
          zi[l] = l < lanes && at + 1 >= 0 && at + 1 < length
                      ? x[at + 1] * window_[size_t(2 * m + 1)]
                      : 0.0f;
        }
      }
      butterflies(re, im, half);
      // X[k] = E[k] + e^{-2 pi i k / N} O[k], E and O the transforms of the even and odd
      // samples: E = (Z[k] + conj Z[M-k]) / 2, O = (Z[k] - conj Z[M-k]) / 2i. Rows k < F
      // take Re X[k]; rows F + k take s * sum w x sin = -s Im X[k].
      for (int64_t k = 0; k < bins; ++k) {
        const Lanes ar = re[k % half], ai = im[k % half];
        const Lanes br = re[(half - k) % half], bi = -im[(half - k) % half];
        const Lanes er = (ar + br) * 0.5f, ei = (ai + bi) * 0.5f;
        const Lanes o_r = (ai - bi) * 0.5f, o_i = (br - ar) * 0.5f;
        const float c = cos_[size_t(k)], s = sin_[size_t(k)];
        const Lanes xr = er + o_r * c + o_i * s;
        const Lanes xi = (ei + o_i * c - o_r * s) * im_sign;
        float* cos_row = y + k * frames + t0 + g;
        float* sin_row = y + (bins + k) * frames + t0 + g;
        for (int64_t l = 0; l < lanes; ++l) {
          cos_row[l] = xr[l];
          sin_row[l] = xi[l];
        }
      }
    }
  }

  // In-place radix-2 FFT of `size` bit-reversed points, e^{-2 pi i j / len} per stage
  // (the twiddle tables hold the N-point angles: j * N / len).
  void butterflies(Lanes* __restrict re, Lanes* __restrict im, int64_t size) const {
    const int64_t n = int64_t(window_.size());
    for (int64_t len = 2; len <= size; len *= 2) {
      const int64_t half = len / 2, step = n / len;
      for (int64_t start = 0; start < size; start += len)
        for (int64_t j = 0; j < half; ++j) {
          const float c = cos_[size_t(j * step)], s = sin_[size_t(j * step)];
          const Lanes ar = re[start + j], ai = im[start + j];
          const Lanes br = re[start + j + half], bi = im[start + j + half];
          const Lanes xr = br * c + bi * s;
          const Lanes xi = bi * c - br * s;
          re[start + j + half] = ar - xr;
          im[start + j + half] = ai - xi;
          re[start + j] = ar + xr;
          im[start + j] = ai + xi;
        }
    }
  }

  KernelPtr general_;
  WindowAttrs attrs_;
  Tensor weight_;
  std::vector<float> window_, cos_, sin_;
  std::vector<int64_t> reversed_;
  float sin_sign_;
};

// The window and the sign of the sine rows when `w` ([2F, 1, N]) is a windowed DFT basis.
bool read_dft_basis(const Tensor& w, std::vector<float>& window, float& sin_sign) {
  if (w.dtype() != DataType::kFloat || w.rank() != 3 || w.shape()[1] != 1) return false;
  const int64_t n = w.shape()[2], bins = n / 2 + 1;
  if (n < 8 || !is_power_of_two(n) || w.shape()[0] != 2 * bins) return false;
  const float* p = w.data<float>();
  window.assign(p, p + n);  // row 0: cos(0) = 1
  double peak = 0;
  for (float v : window) peak = std::max(peak, std::fabs(double(v)));
  if (!(peak > 0) || !std::isfinite(peak)) return false;
  const double tol = kTolerance * peak;
  // The sign from the sine row of bin 1 (sin(2 pi n / N) is far from zero at n = N/4).
  const double probe = double(p[(bins + 1) * n + n / 4]);
  const double want = double(window[size_t(n / 4)]);
  if (std::fabs(want) <= tol) return false;
  sin_sign = probe * want > 0 ? 1.0f : -1.0f;
  for (int64_t k = 0; k < bins; ++k)
    for (int64_t i = 0; i < n; ++i) {
      // k * i mod N keeps the angle small, so the reference is exact in double.
      const double angle = 2.0 * std::numbers::pi * double((k * i) % n) / double(n);
      const double wi = double(window[size_t(i)]);
      if (std::fabs(double(p[k * n + i]) - wi * std::cos(angle)) > tol ||
          std::fabs(double(p[(bins + k) * n + i]) - sin_sign * wi * std::sin(angle)) > tol)
        return false;
    }
  return true;
}

}  // namespace

KernelPtr maybe_dft_conv(KernelPtr general, const WindowAttrs& attrs, int64_t group,
                         const Tensor* weight, bool has_bias) {
  if (!weight || group != 1 || has_bias) return general;
  for (int64_t d : attrs.dilations)
    if (d != 1) return general;
  if (!attrs.kernel_shape.empty() && (attrs.kernel_shape.size() != 1 || weight->rank() != 3 ||
                                      attrs.kernel_shape[0] != weight->shape()[2]))
    return general;
  std::vector<float> window;
  float sin_sign = 1.0f;
  if (!read_dft_basis(*weight, window, sin_sign)) return general;
  return std::make_unique<DftConvKernel>(std::move(general), attrs, *weight, std::move(window),
                                         sin_sign);
}

}  // namespace nxrt::cpu
