// Signal processing: DFT, STFT, the Hann/Hamming/Blackman windows and MelWeightMatrix.
// Transforms compute in double whatever the storage type: float16 inputs would lose
// most of their bits to the accumulation of a long transform otherwise.
#include <cmath>
#include <complex>
#include <numbers>
#include <string>
#include <type_traits>

#include "ep/cpu/kernels/common.h"

namespace nxrt::cpu {
namespace {

using cd = std::complex<double>;

template <typename T>
double to_double(T v) {
  if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>)
    return double(float(v));
  else
    return double(v);
}

template <typename T>
T from_double(double v) {
  if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>)
    return T(float(v));
  else if constexpr (std::is_same_v<T, bool>)
    return v != 0.0;
  else
    return T(v);
}

// Reads a one-element integer tensor (a size, length or step).
Status read_scalar_int(const Tensor& t, const char* what, int64_t& out) {
  if (t.numel() != 1)
    return invalid_argument(what, " must hold one value, got shape ", t.shape().to_string());
  switch (t.dtype()) {
    case DataType::kInt64:
      out = *t.data<int64_t>();
      return Status();
    case DataType::kInt32:
      out = *t.data<int32_t>();
      return Status();
    default:
      return invalid_argument(what, " must be int32 or int64, got ", dtype_name(t.dtype()));
  }
}

Status read_scalar_float(const Tensor& t, const char* what, double& out) {
  if (t.numel() != 1)
    return invalid_argument(what, " must hold one value, got shape ", t.shape().to_string());
  switch (t.dtype()) {
    NXRT_CASES_FLOAT(out = to_double(*t.data<T>()); return Status())
    default:
      return invalid_argument(what, " must be a float type, got ", dtype_name(t.dtype()));
  }
}

// Power-of-two radix-2 FFT over a table built once per length.
class Radix2 {
 public:
  explicit Radix2(size_t m) : m_(m), rev_(m), tw_(m / 2) {
    int bits = 0;
    while ((size_t(1) << bits) < m) ++bits;
    for (size_t i = 0; i < m; ++i) {
      size_t r = 0;
      for (int b = 0; b < bits; ++b) r |= ((i >> b) & 1u) << (bits - 1 - b);
      rev_[i] = r;
    }
    for (size_t k = 0; k < m / 2; ++k)
      tw_[k] = std::polar(1.0, -2.0 * std::numbers::pi * double(k) / double(m));
  }

  // In-place forward transform of m_ values.
  void run(cd* a) const {
    for (size_t i = 0; i < m_; ++i)
      if (i < rev_[i]) std::swap(a[i], a[rev_[i]]);
    for (size_t len = 2; len <= m_; len <<= 1) {
      const size_t half = len / 2, step = m_ / len;
      for (size_t start = 0; start < m_; start += len)
        for (size_t j = 0; j < half; ++j) {
          const cd t = a[start + j + half] * tw_[j * step];
          a[start + j + half] = a[start + j] - t;
          a[start + j] += t;
        }
    }
  }

 private:
  size_t m_;
  std::vector<size_t> rev_;
  std::vector<cd> tw_;
};

// Forward DFT of one length n, exp(-2*pi*i*j*k/n) convention. Power-of-two lengths go
// straight to radix-2; any other length uses Bluestein's chirp-z identity, which turns
// the DFT into a circular convolution of power-of-two length, keeping O(n log n).
class Fft {
 public:
  explicit Fft(size_t n) : n_(n) {
    if ((n & (n - 1)) == 0) {
      m_ = n;
      pow2_ = true;
      radix_ = std::make_unique<Radix2>(n);
      return;
    }
    m_ = 1;
    while (m_ < 2 * n - 1) m_ <<= 1;
    radix_ = std::make_unique<Radix2>(m_);
    // w_k = exp(-i*pi*k^2/n); k^2 is kept modulo 2n so the angle stays small and exact.
    chirp_.resize(n);
    size_t k2 = 0;
    for (size_t k = 0; k < n; ++k) {
      chirp_[k] = std::polar(1.0, -std::numbers::pi * double(k2) / double(n));
      k2 = (k2 + 2 * k + 1) % (2 * n);
    }
    kernel_.assign(m_, cd(0, 0));
    kernel_[0] = std::conj(chirp_[0]);
    for (size_t k = 1; k < n; ++k) kernel_[k] = kernel_[m_ - k] = std::conj(chirp_[k]);
    radix_->run(kernel_.data());
  }

  // Scratch length run() needs.
  size_t scratch_size() const { return pow2_ ? 0 : m_; }

  // Transforms a[0..n) in place.
  void run(cd* a, cd* scratch) const {
    if (pow2_) {
      radix_->run(a);
      return;
    }
    for (size_t k = 0; k < n_; ++k) scratch[k] = a[k] * chirp_[k];
    std::fill(scratch + n_, scratch + m_, cd(0, 0));
    radix_->run(scratch);
    // inverse transform of the product via conj(fft(conj(.)))
    for (size_t k = 0; k < m_; ++k) scratch[k] = std::conj(scratch[k] * kernel_[k]);
    radix_->run(scratch);
    const double scale = 1.0 / double(m_);
    for (size_t k = 0; k < n_; ++k) a[k] = std::conj(scratch[k]) * scale * chirp_[k];
  }

  // Inverse transform without the 1/n factor.
  void run_inverse(cd* a, cd* scratch) const {
    for (size_t k = 0; k < n_; ++k) a[k] = std::conj(a[k]);
    run(a, scratch);
    for (size_t k = 0; k < n_; ++k) a[k] = std::conj(a[k]);
  }

 private:
  size_t n_, m_ = 0;
  bool pow2_ = false;
  std::unique_ptr<Radix2> radix_;
  std::vector<cd> chirp_, kernel_;
};

// One DFT along `axis` of x ([..., 1|2]); see DftKernel for the shapes.
struct DftSpec {
  int64_t axis = 0;
  int64_t length = 0;  // transform length n
  bool inverse = false, onesided = false;
};

template <typename T>
void run_dft(const Tensor& x, const DftSpec& s, Tensor& y) {
  const Shape& in = x.shape();
  const size_t r = in.size();
  const int64_t c = in[r - 1];
  const int64_t outer = in.product(0, size_t(s.axis));
  const int64_t inner = in.product(size_t(s.axis) + 1, r - 1);
  const int64_t n_in = in[size_t(s.axis)];
  const int64_t n = s.length;
  const int64_t n_out = y.shape()[size_t(s.axis)];
  const int64_t c_out = y.shape()[r - 1];
  const bool irfft = s.inverse && s.onesided;
  const Fft fft{size_t(n)};
  std::vector<cd> buf(static_cast<size_t>(n)), scratch(fft.scratch_size());
  const T* px = x.data<T>();
  T* py = y.data<T>();
  const double scale = s.inverse ? 1.0 / double(n) : 1.0;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      const T* src = px + (o * n_in * inner + i) * c;
      auto load = [&](int64_t k) {
        const T* e = src + k * inner * c;
        return cd(to_double(e[0]), c == 2 ? to_double(e[1]) : 0.0);
      };
      if (irfft) {
        // Rebuild the full spectrum from its one-sided half (Hermitian symmetry).
        const int64_t half = n / 2 + 1;
        for (int64_t k = 0; k < half; ++k) buf[size_t(k)] = k < n_in ? load(k) : cd(0, 0);
        for (int64_t k = half; k < n; ++k) buf[size_t(k)] = std::conj(buf[size_t(n - k)]);
      } else {
        const int64_t copy = std::min(n, n_in);
        for (int64_t k = 0; k < copy; ++k) buf[size_t(k)] = load(k);
        std::fill(buf.begin() + copy, buf.end(), cd(0, 0));
      }
      if (s.inverse)
        fft.run_inverse(buf.data(), scratch.data());
      else
        fft.run(buf.data(), scratch.data());
      T* dst = py + (o * n_out * inner + i) * c_out;
      for (int64_t k = 0; k < n_out; ++k) {
        T* e = dst + k * inner * c_out;
        const cd v = buf[size_t(k)] * scale;
        e[0] = from_double<T>(v.real());
        if (c_out == 2) e[1] = from_double<T>(v.imag());
      }
    }
}

// DFT-17 takes the axis as an attribute (default 1), DFT-20 as optional input 2
// (default -2). Output: the axis dim becomes n (n/2+1 for a forward one-sided
// transform) and the trailing dim 2, or 1 for the inverse one-sided (real) transform.
class DftKernel final : public Kernel {
 public:
  DftKernel(DataType dtype, int64_t axis, bool axis_input, bool inverse, bool onesided)
      : dtype_(dtype),
        axis_(axis),
        axis_input_(axis_input),
        inverse_(inverse),
        onesided_(onesided) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    const int64_t r = int64_t(x.rank());
    if (r < 2) return invalid_argument("input must have rank >= 2, got ", x.shape().to_string());
    const int64_t c = x.shape()[size_t(r - 1)];
    if (c != 1 && c != 2)
      return invalid_argument("the last input dim must be 1 (real) or 2 (complex), got ", c);
    DftSpec s;
    s.inverse = inverse_;
    s.onesided = onesided_;
    s.axis = axis_;
    if (axis_input_ && ctx.input(2))
      NXRT_RETURN_IF_ERROR(read_scalar_int(*ctx.input(2), "axis", s.axis));
    const int64_t given_axis = s.axis;
    if (s.axis < 0) s.axis += r;
    if (s.axis < 0 || s.axis > r - 2)
      return invalid_argument("axis ", given_axis, " is out of range for input rank ", r,
                              " (the last dim holds real/imaginary parts)");
    const int64_t n_in = x.shape()[size_t(s.axis)];
    if (const Tensor* len = ctx.input(1)) {
      NXRT_RETURN_IF_ERROR(read_scalar_int(*len, "dft_length", s.length));
      if (s.length <= 0) return invalid_argument("dft_length must be positive, got ", s.length);
    } else {
      s.length = inverse_ && onesided_ ? 2 * (n_in - 1) : n_in;
      if (s.length <= 0)
        return invalid_argument("the signal along axis ", s.axis, " is too short (", n_in,
                                ") to take a transform of");
    }
    if (s.length > (int64_t(1) << 40))
      return invalid_argument("dft_length ", s.length, " is too large");
    Shape out = x.shape();
    out[size_t(s.axis)] = onesided_ && !inverse_ ? s.length / 2 + 1 : s.length;
    out[size_t(r - 1)] = inverse_ && onesided_ ? 1 : 2;
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, out));
    if (y->numel() == 0) return Status();
    switch (dtype_) {
      NXRT_CASES_FLOAT(run_dft<T>(x, s, *y))
      default:
        return not_implemented("type ", dtype_name(dtype_), " is not supported");
    }
    return Status();
  }

 private:
  DataType dtype_;
  int64_t axis_;
  bool axis_input_, inverse_, onesided_;
};

template <typename T>
void run_stft(const Tensor& x, const T* window, int64_t frame_length, int64_t step, Tensor& y) {
  const int64_t batch = x.shape()[0], len = x.shape()[1], c = x.rank() == 3 ? x.shape()[2] : 1;
  const int64_t frames = y.shape()[1], bins = y.shape()[2];
  const Fft fft{size_t(frame_length)};
  std::vector<cd> buf(static_cast<size_t>(frame_length)), scratch(fft.scratch_size());
  std::vector<double> w(static_cast<size_t>(frame_length), 1.0);
  if (window)
    for (int64_t k = 0; k < frame_length; ++k) w[size_t(k)] = to_double(window[k]);
  const T* px = x.data<T>();
  T* py = y.data<T>();
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t f = 0; f < frames; ++f) {
      const T* src = px + (b * len + f * step) * c;
      for (int64_t k = 0; k < frame_length; ++k)
        buf[size_t(k)] =
            cd(to_double(src[k * c]), c == 2 ? to_double(src[k * c + 1]) : 0.0) * w[size_t(k)];
      fft.run(buf.data(), scratch.data());
      T* dst = py + (b * frames + f) * bins * 2;
      for (int64_t k = 0; k < bins; ++k) {
        dst[2 * k] = from_double<T>(buf[size_t(k)].real());
        dst[2 * k + 1] = from_double<T>(buf[size_t(k)].imag());
      }
    }
}

// signal [batch, length, 1|2] -> [batch, frames, bins, 2]. A real signal may also come as
// [batch, length], which onnxruntime accepts too (exporters write it: kokoro's vocoder).
class StftKernel final : public Kernel {
 public:
  StftKernel(DataType dtype, bool onesided) : dtype_(dtype), onesided_(onesided) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    if ((x.rank() != 3 && x.rank() != 2) ||
        (x.rank() == 3 && x.shape()[2] != 1 && x.shape()[2] != 2))
      return invalid_argument(
          "signal must have shape [batch, length, 1 or 2] or [batch, length], got ",
          x.shape().to_string());
    const int64_t len = x.shape()[1];
    int64_t step = 0;
    NXRT_RETURN_IF_ERROR(read_scalar_int(*ctx.input(1), "frame_step", step));
    if (step <= 0) return invalid_argument("frame_step must be positive, got ", step);
    const Tensor* window = ctx.input(2);
    if (window && window->rank() != 1)
      return invalid_argument("window must be 1-D, got ", window->shape().to_string());
    int64_t frame_length = window ? window->shape()[0] : len;
    if (const Tensor* fl = ctx.input(3)) {
      NXRT_RETURN_IF_ERROR(read_scalar_int(*fl, "frame_length", frame_length));
      if (window && window->shape()[0] != frame_length)
        return invalid_argument("window has ", window->shape()[0], " values but frame_length is ",
                                frame_length);
    }
    if (frame_length <= 0 || frame_length > len)
      return invalid_argument("frame_length ", frame_length, " must be in [1, ", len,
                              "] (the signal length)");
    const int64_t frames = 1 + (len - frame_length) / step;
    const int64_t bins = onesided_ ? frame_length / 2 + 1 : frame_length;
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, Shape{x.shape()[0], frames, bins, 2}));
    if (y->numel() == 0) return Status();
    switch (dtype_) {
      NXRT_CASES_FLOAT(run_stft<T>(x, window ? window->data<T>() : nullptr, frame_length, step, *y))
      default:
        return not_implemented("type ", dtype_name(dtype_), " is not supported");
    }
    return Status();
  }

 private:
  DataType dtype_;
  bool onesided_;
};

enum class WindowKind { kHann, kHamming, kBlackman };

class WindowKernel final : public Kernel {
 public:
  WindowKernel(WindowKind kind, DataType out, bool periodic)
      : kind_(kind), out_(out), periodic_(periodic) {}

  Status compute(KernelContext& ctx) const override {
    int64_t size = 0;
    NXRT_RETURN_IF_ERROR(read_scalar_int(*ctx.input(0), "size", size));
    if (size < 0) return invalid_argument("size must not be negative, got ", size);
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, Shape{size}));
    // A symmetric window divides by size-1; a one-point window is just 1 then.
    const double denom = double(periodic_ ? size : size - 1);
    const double two_pi = 2.0 * std::numbers::pi;
    auto value = [&](int64_t i) -> double {
      if (denom == 0.0) return 1.0;
      const double t = double(i) / denom;
      switch (kind_) {
        case WindowKind::kHann: {
          const double s = std::sin(std::numbers::pi * t);
          return s * s;
        }
        case WindowKind::kHamming:
          return 25.0 / 46.0 - (21.0 / 46.0) * std::cos(two_pi * t);
        case WindowKind::kBlackman:
          return 0.42 - 0.5 * std::cos(two_pi * t) + 0.08 * std::cos(2.0 * two_pi * t);
      }
      return 0.0;
    };
    switch (out_) {
      NXRT_CASES_NUMERIC(for (int64_t i = 0; i < size; ++i) y->data<T>()[i] =
                             from_double<T>(value(i)))
      default:
        return not_implemented("output type ", dtype_name(out_), " is not supported");
    }
    return Status();
  }

 private:
  WindowKind kind_;
  DataType out_;
  bool periodic_;
};

// Triangular mel filters over the bins of a one-sided DFT, laid out [bins, num_mel_bins].
// Follows the ONNX reference: mel(f) = 2595*log10(1 + f/700), num_mel_bins + 2 edges
// spaced evenly in mel, each mapped to a bin index floor((dft_length + 1) * hz / rate).
class MelWeightMatrixKernel final : public Kernel {
 public:
  explicit MelWeightMatrixKernel(DataType out) : out_(out) {}

  Status compute(KernelContext& ctx) const override {
    int64_t mels = 0, dft_length = 0, rate = 0;
    double lower = 0, upper = 0;
    NXRT_RETURN_IF_ERROR(read_scalar_int(*ctx.input(0), "num_mel_bins", mels));
    NXRT_RETURN_IF_ERROR(read_scalar_int(*ctx.input(1), "dft_length", dft_length));
    NXRT_RETURN_IF_ERROR(read_scalar_int(*ctx.input(2), "sample_rate", rate));
    NXRT_RETURN_IF_ERROR(read_scalar_float(*ctx.input(3), "lower_edge_hertz", lower));
    NXRT_RETURN_IF_ERROR(read_scalar_float(*ctx.input(4), "upper_edge_hertz", upper));
    if (mels <= 0 || dft_length <= 0 || rate <= 0)
      return invalid_argument("num_mel_bins (", mels, "), dft_length (", dft_length,
                              ") and sample_rate (", rate, ") must be positive");
    if (!(lower >= 0.0) || !(upper > lower))
      return invalid_argument("need 0 <= lower_edge_hertz < upper_edge_hertz, got ", lower, " and ",
                              upper);
    const int64_t bins = dft_length / 2 + 1;
    if (mels > (int64_t(1) << 24) || bins * mels > (int64_t(1) << 32))
      return invalid_argument("mel weight matrix of ", bins, " x ", mels, " is too large");
    const double low_mel = 2595.0 * std::log10(1.0 + lower / 700.0);
    const double high_mel = 2595.0 * std::log10(1.0 + upper / 700.0);
    const double mel_step = (high_mel - low_mel) / double(mels + 2);
    std::vector<int64_t> edge(size_t(mels + 2));
    for (int64_t i = 0; i < mels + 2; ++i) {
      const double hz = 700.0 * (std::pow(10.0, (double(i) * mel_step + low_mel) / 2595.0) - 1.0);
      edge[size_t(i)] = int64_t(std::floor(double(dft_length + 1) * hz / double(rate)));
      if (edge[size_t(i)] < 0 || edge[size_t(i)] >= bins)
        return invalid_argument("upper_edge_hertz ", upper, " lies above the highest frequency (",
                                double(rate) / 2, " Hz) of a ", dft_length, "-point DFT");
    }
    std::vector<double> w(size_t(bins * mels), 0.0);
    for (int64_t m = 0; m < mels; ++m) {
      const int64_t lo = edge[size_t(m)], mid = edge[size_t(m + 1)], hi = edge[size_t(m + 2)];
      if (mid == lo) {
        w[size_t(mid * mels + m)] = 1.0;
      } else {
        for (int64_t j = lo; j <= mid; ++j)
          w[size_t(j * mels + m)] = double(j - lo) / double(mid - lo);
      }
      for (int64_t j = mid; j < hi; ++j)
        w[size_t(j * mels + m)] = double(hi - j) / double(hi - mid);
    }
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, Shape{bins, mels}));
    switch (out_) {
      NXRT_CASES_NUMERIC(for (size_t i = 0; i < w.size(); ++i) y->data<T>()[i] =
                             from_double<T>(w[i]))
      default:
        return not_implemented("output type ", dtype_name(out_), " is not supported");
    }
    return Status();
  }

 private:
  DataType out_;
};

Status check_int_input(KernelInit& init, size_t i) {
  const DataType t = init.input_type(i);
  if (t != DataType::kInt32 && t != DataType::kInt64) return init.unsupported_type(i);
  return Status();
}

// output_datatype attribute: any numeric type.
Expected<DataType> output_datatype(KernelInit& init, AttrReader& attrs) {
  const int64_t raw = attrs.get_int("output_datatype", int64_t(DataType::kFloat));
  NXRT_RETURN_IF_ERROR(attrs.status());
  const DataType t = DataType(raw);
  if (!dtype_is_known(int32_t(raw)) || !(is_float_type(t) || is_integer_type(t)))
    return init.error(StatusCode::kInvalidGraph, "output_datatype ", raw, " is not a numeric type");
  return t;
}

Expected<KernelPtr> create_window(KernelInit& init, WindowKind kind) {
  AttrReader attrs(init.node);
  const bool periodic = attrs.get_int("periodic", 1) != 0;
  NXRT_ASSIGN_OR_RETURN(DataType out, output_datatype(init, attrs));
  NXRT_RETURN_IF_ERROR(check_int_input(init, 0));
  init.set_all_outputs(out);
  return make_kernel<WindowKernel>(kind, out, periodic);
}

}  // namespace

Expected<KernelPtr> create_dft(KernelInit& init) {
  AttrReader attrs(init.node);
  const bool axis_input = init.opset >= 20;
  const int64_t axis = axis_input ? -2 : attrs.get_int("axis", 1);
  const bool inverse = attrs.get_int("inverse", 0) != 0;
  const bool onesided = attrs.get_int("onesided", 0) != 0;
  NXRT_RETURN_IF_ERROR(attrs.status());
  const DataType t = init.input_type(0);
  if (!is_float_type(t)) return init.unsupported_type(0);
  if (init.has_input(1)) NXRT_RETURN_IF_ERROR(check_int_input(init, 1));
  if (axis_input && init.has_input(2)) NXRT_RETURN_IF_ERROR(check_int_input(init, 2));
  init.set_all_outputs(t);
  return make_kernel<DftKernel>(t, axis, axis_input, inverse, onesided);
}

Expected<KernelPtr> create_stft(KernelInit& init) {
  AttrReader attrs(init.node);
  const bool onesided = attrs.get_int("onesided", 1) != 0;
  NXRT_RETURN_IF_ERROR(attrs.status());
  const DataType t = init.input_type(0);
  if (!is_float_type(t)) return init.unsupported_type(0);
  NXRT_RETURN_IF_ERROR(check_int_input(init, 1));
  if (init.has_input(2) && init.input_type(2) != t)
    return init.error(StatusCode::kInvalidGraph, "window has type ",
                      tensor_type_name(init.input_type(2)), ", expected ", tensor_type_name(t));
  if (init.has_input(3)) NXRT_RETURN_IF_ERROR(check_int_input(init, 3));
  init.set_all_outputs(t);
  return make_kernel<StftKernel>(t, onesided);
}

Expected<KernelPtr> create_hann_window(KernelInit& init) {
  return create_window(init, WindowKind::kHann);
}
Expected<KernelPtr> create_hamming_window(KernelInit& init) {
  return create_window(init, WindowKind::kHamming);
}
Expected<KernelPtr> create_blackman_window(KernelInit& init) {
  return create_window(init, WindowKind::kBlackman);
}

Expected<KernelPtr> create_mel_weight_matrix(KernelInit& init) {
  AttrReader attrs(init.node);
  NXRT_ASSIGN_OR_RETURN(DataType out, output_datatype(init, attrs));
  for (size_t i = 0; i < 3; ++i) NXRT_RETURN_IF_ERROR(check_int_input(init, i));
  for (size_t i = 3; i < 5; ++i)
    if (!is_float_type(init.input_type(i))) return init.unsupported_type(i);
  init.set_all_outputs(out);
  return make_kernel<MelWeightMatrixKernel>(out);
}

}  // namespace nxrt::cpu
