// Normalizations over contiguous blocks: LayerNormalization, RMSNormalization,
// GroupNormalization and InstanceNormalization; com.microsoft GroupNorm and SkipGroupNorm.
//
// Each normalizes rows of the input viewed as [rows, len] (a row is everything from
// `axis` on, one group, or one channel) with the row's mean and variance, then applies a
// scale and bias. Statistics use two passes over the (cache-resident) row, which is more
// accurate than E[x^2] - E[x]^2. They are computed in float (double for double inputs or
// a double stash_type); halves are widened on load.
#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "ep/cpu/kernels/common.h"

namespace nxrt::cpu {
namespace {

// Copies a float tensor of any float dtype into a vector of A.
template <typename A>
Status load_values(const Tensor& t, std::vector<A>& out) {
  out.resize(size_t(t.numel()));
  switch (t.dtype()) {
    NXRT_CASES_FLOAT({
      const T* p = t.data<T>();
      for (size_t i = 0; i < out.size(); ++i) {
        if constexpr (std::is_same_v<T, double> || std::is_same_v<T, float>)
          out[i] = A(p[i]);
        else
          out[i] = A(float(p[i]));
      }
    })
    default:
      return invalid_argument("type ", tensor_type_name(t.dtype()), " is not a float type");
  }
  return Status();
}

// Expands `t` to the (row-major) shape `dims` by unidirectional broadcasting: `t` may
// have fewer dims, size-1 dims, or extra leading 1s. `what` names it in errors.
template <typename A>
Status expand_param(const Tensor& t, std::span<const int64_t> dims, const char* what,
                    std::vector<A>& out) {
  std::vector<A> values;
  NXRT_RETURN_IF_ERROR(load_values(t, values));
  const Shape& s = t.shape();
  const size_t rank = dims.size();
  const auto mismatch = [&] {
    return invalid_argument(what, " of shape ", s.to_string(), " does not broadcast to ",
                            Shape(dims).to_string());
  };
  if (s.size() > rank) {
    for (size_t d = 0; d < s.size() - rank; ++d)
      if (s[d] != 1) return mismatch();
  }
  std::vector<int64_t> strides(rank, 0);
  int64_t stride = 1;
  for (size_t d = 0; d < rank; ++d) {
    const size_t k = rank - 1 - d;  // dim of `dims`, from the right
    if (d >= s.size()) break;
    const int64_t sd = s[s.size() - 1 - d];
    if (sd != 1 && sd != dims[k]) return mismatch();
    strides[k] = sd == 1 ? 0 : stride;
    stride *= sd;
  }
  int64_t total = 1;
  for (int64_t d : dims) total *= d;
  if (t.numel() == total) {  // nothing is broadcast: the layouts agree
    out = std::move(values);
    return Status();
  }
  out.resize(size_t(total));
  std::vector<int64_t> index(rank, 0);
  int64_t off = 0;
  for (int64_t i = 0; i < total; ++i) {
    out[size_t(i)] = values[size_t(off)];
    for (size_t d = rank; d-- > 0;) {
      if (++index[d] < dims[d]) {
        off += strides[d];
        break;
      }
      off -= strides[d] * (dims[d] - 1);
      index[d] = 0;
    }
  }
  return Status();
}

// Mean and 1/sqrt(var + eps) of a row; with kRms the mean is taken as 0. Both sums run
// in eight partial sums: one running sum is a serial chain of adds that does not vectorize
// (and rounds off more).
template <bool kRms, typename A, typename T>
inline void row_stats(const T* x, int64_t n, A eps, A& mean, A& inv) {
  constexpr int kParts = 8;
  A m = 0;
  if constexpr (!kRms) {
    A part[kParts] = {};
    int64_t k = 0;
    for (; k + kParts <= n; k += kParts)
      for (int j = 0; j < kParts; ++j) part[j] += A(x[k + j]);
    for (; k < n; ++k) part[0] += A(x[k]);
    for (int j = 0; j < kParts; ++j) m += part[j];
    m /= A(n);
  }
  A part[kParts] = {};
  int64_t k = 0;
  for (; k + kParts <= n; k += kParts)
    for (int j = 0; j < kParts; ++j) {
      const A d = A(x[k + j]) - m;
      part[j] += d * d;
    }
  for (; k < n; ++k) part[0] += (A(x[k]) - m) * (A(x[k]) - m);
  A v = 0;
  for (int j = 0; j < kParts; ++j) v += part[j];
  v /= A(n);
  mean = m;
  inv = A(1) / std::sqrt(v + eps);
}

// Float LayerNormalization / RMSNormalization with a per-element scale and bias as long
// as the row (the common case: [batch, tokens, hidden] over hidden): statistics in partial
// sums, rows split across the run's threads, no copies of the parameters.
template <bool kRms>
void norm_rows_f32(const float* x, float* y, int64_t rows, int64_t len, const float* scale,
                   const float* bias, float eps, float* mean_out, float* inv_out) {
  const size_t pieces =
      std::min(parallel_pieces(double(rows * len), double(1 << 14)), size_t(rows));
  parallel_for(pieces, [&](size_t piece) {
    const int64_t r0 = rows * int64_t(piece) / int64_t(pieces);
    const int64_t r1 = rows * int64_t(piece + 1) / int64_t(pieces);
    for (int64_t r = r0; r < r1; ++r) {
      const float* xr = x + r * len;
      float* yr = y + r * len;
      float mean, inv;
      row_stats<kRms>(xr, len, eps, mean, inv);
      if (bias) {
        for (int64_t i = 0; i < len; ++i) yr[i] = (xr[i] - mean) * inv * scale[i] + bias[i];
      } else {
        for (int64_t i = 0; i < len; ++i) yr[i] = (xr[i] - mean) * inv * scale[i];
      }
      if (mean_out) mean_out[r] = mean;
      if (inv_out) inv_out[r] = inv;
    }
  });
}

bool compute_in_double(DataType x, DataType stash) {
  return x == DataType::kDouble || stash == DataType::kDouble;
}

// ---- LayerNormalization and RMSNormalization ----

template <bool kRms>
class AxisNormKernel final : public Kernel {
 public:
  AxisNormKernel(DataType dtype, DataType stash, int64_t axis, float epsilon)
      : dtype_(dtype), stash_(stash), axis_(axis), epsilon_(epsilon) {}

  Status compute(KernelContext& ctx) const override {
    if (compute_in_double(dtype_, stash_)) return run<double>(ctx);
    return run<float>(ctx);
  }

 private:
  template <typename A>
  Status run(KernelContext& ctx) const {
    const Tensor& x = *ctx.input(0);
    const int64_t rank = int64_t(x.rank());
    int64_t axis = axis_;
    if (!normalize_axis(axis, rank))
      return invalid_argument("axis ", axis_, " is out of range for an input of rank ", rank);
    const Shape& s = x.shape();
    const int64_t rows = s.product(0, size_t(axis));
    const int64_t len = s.product(size_t(axis), s.size());
    const std::span<const int64_t> norm_dims = s.span().subspan(size_t(axis));
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, s));
    // Mean and InvStdDev keep the leading dims and 1 for each normalized one.
    Tensor* mean_out = nullptr;
    Tensor* inv_out = nullptr;
    // (RMS: com.microsoft SimplifiedLayerNormalization's optional output 1 is InvStdDev.)
    if (ctx.num_outputs() > 1) {
      Shape stat_shape = s;
      for (size_t d = size_t(axis); d < s.size(); ++d) stat_shape[d] = 1;
      if (kRms) {
        NXRT_ASSIGN_OR_RETURN(inv_out, ctx.output(1, stat_shape));
      } else {
        NXRT_ASSIGN_OR_RETURN(mean_out, ctx.output(1, stat_shape));
        if (ctx.num_outputs() > 2) {
          NXRT_ASSIGN_OR_RETURN(inv_out, ctx.output(2, stat_shape));
        }
      }
    }
    const Tensor* b = kRms ? nullptr : ctx.input(2);
    if constexpr (std::is_same_v<A, float>) {
      // Float data, float statistics (stash_type) and parameters with the normalized dims'
      // shape (leading 1s dropped): read in place, rows on the run's threads.
      const auto per_element = [&](const Tensor& p) {
        if (p.dtype() != DataType::kFloat || p.numel() != len || p.rank() > norm_dims.size())
          return false;
        for (size_t i = 0; i < p.rank(); ++i)
          if (p.shape()[p.rank() - 1 - i] != norm_dims[norm_dims.size() - 1 - i]) return false;
        return true;
      };
      const Tensor& sc = *ctx.input(1);
      if (dtype_ == DataType::kFloat && stash_ == DataType::kFloat && len > 0 && per_element(sc) &&
          (!b || per_element(*b))) {
        norm_rows_f32<kRms>(x.data<float>(), y->data<float>(), rows, len, sc.data<float>(),
                            b ? b->data<float>() : nullptr, epsilon_,
                            mean_out ? mean_out->data<float>() : nullptr,
                            inv_out ? inv_out->data<float>() : nullptr);
        return Status();
      }
    }
    std::vector<A> scale, bias;
    NXRT_RETURN_IF_ERROR(expand_param(*ctx.input(1), norm_dims, "scale", scale));
    if (b) NXRT_RETURN_IF_ERROR(expand_param(*b, norm_dims, "bias", bias));
    if (len == 0) {
      // Nothing to normalize; statistics of empty rows are NaN.
      for (int64_t r = 0; r < rows; ++r) {
        if (mean_out) NXRT_RETURN_IF_ERROR(store_stat(mean_out, r, A(NAN)));
        if (inv_out) NXRT_RETURN_IF_ERROR(store_stat(inv_out, r, A(NAN)));
      }
      return Status();
    }
    const A eps = A(epsilon_);
    switch (dtype_) {
      NXRT_CASES_FLOAT({
        const T* px = x.data<T>();
        T* py = y->data<T>();
        for (int64_t r = 0; r < rows; ++r) {
          const T* xr = px + r * len;
          T* yr = py + r * len;
          A mean, inv;
          row_stats<kRms>(xr, len, eps, mean, inv);
          if (b) {
            for (int64_t i = 0; i < len; ++i)
              yr[i] = narrow<T>((A(xr[i]) - mean) * inv * scale[size_t(i)] + bias[size_t(i)]);
          } else {
            for (int64_t i = 0; i < len; ++i)
              yr[i] = narrow<T>((A(xr[i]) - mean) * inv * scale[size_t(i)]);
          }
          if (mean_out) NXRT_RETURN_IF_ERROR(store_stat(mean_out, r, mean));
          if (inv_out) NXRT_RETURN_IF_ERROR(store_stat(inv_out, r, inv));
        }
      })
      default:
        return not_implemented("type ", tensor_type_name(dtype_), " is not supported");
    }
    return Status();
  }

  template <typename A>
  static Status store_stat(Tensor* t, int64_t i, A v) {
    switch (t->dtype()) {
      NXRT_CASES_FLOAT(t->data<T>()[i] = narrow<T>(v))
      default:
        return not_implemented("statistics type ", tensor_type_name(t->dtype()));
    }
    return Status();
  }

  DataType dtype_;
  DataType stash_;
  int64_t axis_;
  float epsilon_;
};

Expected<DataType> stash_type(KernelInit& init, AttrReader& attrs) {
  const int64_t raw = attrs.get_int("stash_type", 1);
  const DataType t = dtype_is_known(int32_t(raw)) ? DataType(raw) : DataType::kUndefined;
  if (!is_float_type(t))
    return init.error(StatusCode::kInvalidGraph, "stash_type ", raw, " is not a float type");
  return t;
}

template <bool kRms>
Expected<KernelPtr> create_axis_norm(KernelInit& init) {
  const DataType t = init.input_type(0);
  if (!is_float_type(t)) return init.unsupported_type(0);
  if (!is_float_type(init.input_type(1))) return init.unsupported_type(1);
  if (!kRms && init.has_input(2) && !is_float_type(init.input_type(2)))
    return init.unsupported_type(2);
  AttrReader attrs(init.node);
  const int64_t axis = attrs.get_int("axis", -1);
  const float epsilon = attrs.get_float("epsilon", 1e-5f);
  NXRT_ASSIGN_OR_RETURN(DataType stash, stash_type(init, attrs));
  NXRT_RETURN_IF_ERROR(attrs.status());
  init.set_all_outputs(stash);
  init.output_types[0] = t;
  return make_kernel<AxisNormKernel<kRms>>(t, stash, axis, epsilon);
}

// ---- GroupNormalization and InstanceNormalization ----

// Normalizes X [N, C, spatial...] over groups of `C / groups` channels. Scale and bias
// hold one value per channel, or per group (GroupNormalization-18).
class ChannelGroupKernel final : public Kernel {
 public:
  ChannelGroupKernel(DataType dtype, DataType stash, int64_t groups, float epsilon, bool per_group)
      : dtype_(dtype), stash_(stash), groups_(groups), epsilon_(epsilon), per_group_(per_group) {}

  Status compute(KernelContext& ctx) const override {
    if (compute_in_double(dtype_, stash_)) return run<double>(ctx);
    return run<float>(ctx);
  }

 private:
  template <typename A>
  Status run(KernelContext& ctx) const {
    const Tensor& x = *ctx.input(0);
    const Shape& s = x.shape();
    if (s.size() < 2) return invalid_argument("input must have rank >= 2, got ", s.to_string());
    const int64_t n = s[0];
    const int64_t c = s[1];
    const int64_t spatial = s.product(2, s.size());
    // groups_ == 0: one group per channel (InstanceNormalization)
    const int64_t groups = groups_ == 0 ? c : groups_;
    if (groups <= 0 || c % groups != 0)
      return invalid_argument(c, " channels cannot be split into ", groups, " groups");
    const int64_t params = per_group_ ? groups : c;
    std::vector<A> scale, bias;
    NXRT_RETURN_IF_ERROR(load_values(*ctx.input(1), scale));
    NXRT_RETURN_IF_ERROR(load_values(*ctx.input(2), bias));
    if (int64_t(scale.size()) != params || int64_t(bias.size()) != params)
      return invalid_argument("scale and bias need ", params, " values, got ", scale.size(),
                              " and ", bias.size());
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, s));
    const int64_t per = c / groups;
    const int64_t len = per * spatial;
    if (len == 0) return Status();
    const A eps = A(epsilon_);
    switch (dtype_) {
      NXRT_CASES_FLOAT({
        const T* px = x.data<T>();
        T* py = y->data<T>();
        for (int64_t row = 0; row < n * groups; ++row) {
          const int64_t g = row % groups;
          const T* xr = px + row * len;
          T* yr = py + row * len;
          A mean, inv;
          row_stats<false>(xr, len, eps, mean, inv);
          for (int64_t k = 0; k < per; ++k) {
            const size_t p = size_t(per_group_ ? g : g * per + k);
            const A a = inv * scale[p];
            const A b = bias[p] - mean * a;  // y = x * a + b
            const T* xc = xr + k * spatial;
            T* yc = yr + k * spatial;
            for (int64_t i = 0; i < spatial; ++i) yc[i] = narrow<T>(A(xc[i]) * a + b);
          }
        }
      })
      default:
        return not_implemented("type ", tensor_type_name(dtype_), " is not supported");
    }
    return Status();
  }

  DataType dtype_;
  DataType stash_;
  int64_t groups_;
  float epsilon_;
  bool per_group_;
};

// com.microsoft GroupNorm and SkipGroupNorm, onnxruntime's ops for diffusion models (its
// CUDA provider has them, its CPU provider does not): X [N, H, W, C] channels last
// (GroupNorm also channels first, channels_last = 0) normalized over each group of
// C / groups channels and all positions, then gamma * y + beta per channel and, with
// activation 1, SiLU. SkipGroupNorm normalizes S = X + skip (+ bias), skip [N, H, W, C] or
// [N, 1, 1, C], and returns S as its second output when asked.
class DiffusionGroupNormKernel final : public Kernel {
 public:
  DiffusionGroupNormKernel(DataType dtype, int64_t groups, float epsilon, bool silu,
                           bool channels_last, bool skip, bool sum_wanted)
      : dtype_(dtype),
        groups_(groups),
        epsilon_(epsilon),
        silu_(silu),
        channels_last_(channels_last),
        skip_(skip),
        sum_wanted_(sum_wanted) {}

  Status compute(KernelContext& ctx) const override {
    switch (dtype_) {
      case DataType::kFloat:
        return run<float>(ctx);
      case DataType::kFloat16:
        return run<Float16>(ctx);
      case DataType::kBFloat16:
        return run<BFloat16>(ctx);
      default:
        return not_implemented("type ", tensor_type_name(dtype_), " is not supported");
    }
  }

 private:
  template <typename T>
  Status run(KernelContext& ctx) const {
    const Tensor& x = *ctx.input(0);
    const Shape& s = x.shape();
    if (s.size() != 4)
      return invalid_argument("input X must be 4-D [N, H, W, C], got ", s.to_string());
    const int64_t n = s[0], c = channels_last_ ? s[3] : s[1];
    const int64_t positions = channels_last_ ? s[1] * s[2] : s[2] * s[3];
    if (c % groups_ != 0)
      return invalid_argument(c, " channels cannot be split into ", groups_, " groups");
    std::vector<float> gamma, beta, bias;
    NXRT_RETURN_IF_ERROR(load_values(*ctx.input(1), gamma));
    NXRT_RETURN_IF_ERROR(load_values(*ctx.input(2), beta));
    if (int64_t(gamma.size()) != c || int64_t(beta.size()) != c)
      return invalid_argument("gamma and beta need ", c, " values, got ", gamma.size(), " and ",
                              beta.size());
    const T* skip = nullptr;
    bool skip_per_image = false;  // skip [N, 1, 1, C]: one row of C per image
    if (skip_) {
      const Tensor& k = *ctx.input(3);
      if (k.dtype() != dtype_)
        return invalid_argument("skip must be ", tensor_type_name(dtype_), " like X, got ",
                                tensor_type_name(k.dtype()));
      skip_per_image = k.shape() == Shape{n, 1, 1, c};
      if (k.shape() != s && !skip_per_image)
        return invalid_argument("skip must be ", s.to_string(), " or [", n, ",1,1,", c, "], got ",
                                k.shape().to_string());
      skip = k.data<T>();
      if (const Tensor* b = ctx.input(4)) {
        NXRT_RETURN_IF_ERROR(load_values(*b, bias));
        if (int64_t(bias.size()) != c || b->rank() != 1)
          return invalid_argument("bias must be [", c, "], got ", b->shape().to_string());
      }
    }
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, s));
    Tensor* sum = nullptr;
    if (sum_wanted_) {
      NXRT_ASSIGN_OR_RETURN(sum, ctx.output(1, s));
    }
    const int64_t per = c / groups_;
    if (n * positions * c == 0) return Status();
    const T* px = x.data<T>();
    T* py = y->data<T>();
    T* ps = sum ? sum->data<T>() : nullptr;
    // Element (image, position, channel) and its value: X, plus skip and bias.
    auto at = [&](int64_t image, int64_t p, int64_t ch) {
      return channels_last_ ? (image * positions + p) * c + ch : (image * c + ch) * positions + p;
    };
    auto value = [&](int64_t image, int64_t p, int64_t ch) {
      float v = float(px[at(image, p, ch)]);
      if (skip) {
        v += float(skip[skip_per_image ? image * c + ch : at(image, p, ch)]);
        if (!bias.empty()) v += bias[size_t(ch)];
      }
      return v;
    };
    // One (image, group) per task: its own channels of Y and S.
    parallel_for(size_t(n * groups_), [&](size_t task) {
      const int64_t image = int64_t(task) / groups_, c0 = int64_t(task) % groups_ * per;
      double total = 0;
      for (int64_t p = 0; p < positions; ++p)
        for (int64_t ch = c0; ch < c0 + per; ++ch) total += value(image, p, ch);
      const double count = double(positions * per), mean = total / count;
      double squares = 0;
      for (int64_t p = 0; p < positions; ++p)
        for (int64_t ch = c0; ch < c0 + per; ++ch) {
          const double d = value(image, p, ch) - mean;
          squares += d * d;
        }
      const float inv = float(1.0 / std::sqrt(squares / count + double(epsilon_)));
      const float m = float(mean);
      for (int64_t p = 0; p < positions; ++p)
        for (int64_t ch = c0; ch < c0 + per; ++ch) {
          const float v = value(image, p, ch);
          const int64_t i = at(image, p, ch);
          if (ps) ps[i] = narrow<T>(v);
          float r = (v - m) * inv * gamma[size_t(ch)] + beta[size_t(ch)];
          if (silu_) r = r / (1.0f + std::exp(-r));
          py[i] = narrow<T>(r);
        }
    });
    return Status();
  }

  DataType dtype_;
  int64_t groups_;
  float epsilon_;
  bool silu_, channels_last_, skip_, sum_wanted_;
};

Expected<KernelPtr> create_diffusion_group_norm(KernelInit& init, bool skip) {
  const DataType t = init.input_type(0);
  if (t != DataType::kFloat && t != DataType::kFloat16 && t != DataType::kBFloat16)
    return init.unsupported_type(0);
  for (size_t i = 1; i < 3; ++i)
    if (!is_float_type(init.input_type(i))) return init.unsupported_type(i);
  if (skip && init.has_input(4) && !is_float_type(init.input_type(4)))
    return init.unsupported_type(4);
  AttrReader attrs(init.node);
  const int64_t groups = attrs.require_int("groups");
  const int64_t activation = attrs.require_int("activation");
  const float epsilon = attrs.get_float("epsilon", 1e-5f);
  const int64_t channels_last = attrs.get_int("channels_last", 1);
  NXRT_RETURN_IF_ERROR(attrs.status());
  if (groups <= 0)
    return init.error(StatusCode::kInvalidGraph, "groups must be positive, got ", groups);
  if (activation != 0 && activation != 1)
    return init.error(StatusCode::kInvalidGraph, "activation must be 0 (none) or 1 (SiLU), got ",
                      activation);
  if (channels_last != 0 && channels_last != 1)
    return init.error(StatusCode::kInvalidGraph, "channels_last must be 0 or 1, got ",
                      channels_last);
  if (skip && channels_last == 0)
    return init.error(StatusCode::kInvalidGraph, "SkipGroupNorm takes channels-last X only");
  if (skip && !init.has_input(3))
    return init.error(StatusCode::kInvalidGraph, "SkipGroupNorm needs its skip input");
  init.set_all_outputs(t);
  return make_kernel<DiffusionGroupNormKernel>(t, groups, epsilon, activation == 1,
                                               channels_last == 1, skip,
                                               skip && output_wanted(init, 1));
}

Status check_float_inputs(KernelInit& init, size_t count) {
  for (size_t i = 0; i < count; ++i)
    if (!is_float_type(init.input_type(i))) return init.unsupported_type(i);
  return Status();
}

}  // namespace

Expected<KernelPtr> create_layer_normalization(KernelInit& init) {
  return create_axis_norm<false>(init);
}
Expected<KernelPtr> create_rms_normalization(KernelInit& init) {
  return create_axis_norm<true>(init);
}

Expected<KernelPtr> create_group_normalization(KernelInit& init) {
  NXRT_RETURN_IF_ERROR(check_float_inputs(init, 3));
  AttrReader attrs(init.node);
  const int64_t groups = attrs.require_int("num_groups");
  const float epsilon = attrs.get_float("epsilon", 1e-5f);
  DataType stash = DataType::kFloat;
  if (init.opset >= 21) {
    NXRT_ASSIGN_OR_RETURN(stash, stash_type(init, attrs));
  }
  NXRT_RETURN_IF_ERROR(attrs.status());
  if (groups <= 0)
    return init.error(StatusCode::kInvalidGraph, "num_groups must be positive, got ", groups);
  const DataType t = init.input_type(0);
  init.set_all_outputs(t);
  // Opset 18 took one scale and bias per group; 21 takes one per channel.
  return make_kernel<ChannelGroupKernel>(t, stash, groups, epsilon, init.opset < 21);
}

Expected<KernelPtr> create_group_norm_nhwc(KernelInit& init) {
  return create_diffusion_group_norm(init, false);
}

Expected<KernelPtr> create_skip_group_norm(KernelInit& init) {
  return create_diffusion_group_norm(init, true);
}

Expected<KernelPtr> create_instance_normalization(KernelInit& init) {
  NXRT_RETURN_IF_ERROR(check_float_inputs(init, 3));
  AttrReader attrs(init.node);
  const float epsilon = attrs.get_float("epsilon", 1e-5f);
  NXRT_RETURN_IF_ERROR(attrs.status());
  const DataType t = init.input_type(0);
  init.set_all_outputs(t);
  return make_kernel<ChannelGroupKernel>(t, DataType::kFloat, 0, epsilon, false);
}

}  // namespace nxrt::cpu
