// Softmax, LogSoftmax and Hardmax.
//
// Before opset 13 these coerce the input to 2-D at `axis` (default 1) and normalize each
// row of the flattened [outer, rest] matrix; from 13 they work along the single axis
// `axis` (default -1). Both are the same loop over [outer, n, inner] blocks: the old
// semantics is simply n = product of the trailing dims and inner = 1.
// The max is subtracted before exp, so large inputs do not overflow.
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "ep/cpu/kernels/common.h"
#include "ep/cpu/kernels/softmax_rows.h"
#include "ep/cpu/vmath/vmath.h"

namespace nxrt::cpu {
namespace {

enum class SoftKind { kSoftmax, kLogSoftmax, kHardmax };

// Rows up to this long take soft_short_rows_f32.
constexpr int64_t kShortRow = 16;

// e[k] = exp(src[k] - m) for k < n; e may be src.
void exp_shifted_f32(const float* src, float m, float* e, int64_t n) {
  for (int64_t k = 0; k < n; ++k) e[k] = src[k] - m;
  vmath::unary(vmath::Unary::kExp, {}, e, e, size_t(n));
}

// e[k] = exp(x[k] - m) for k < n; returns their sum.
template <typename T, typename A>
A exp_shifted(const T* x, A m, A* e, int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    exp_shifted_f32(x, m, e, n);
  } else if constexpr (std::is_same_v<A, float>) {
    for (int64_t k = 0; k < n; ++k) e[k] = float(x[k]);
    exp_shifted_f32(e, m, e, n);
  } else {
    for (int64_t k = 0; k < n; ++k) e[k] = std::exp(A(x[k]) - m);
  }
  return partial_sum(e, n);
}

// True when v should replace the running max m; NaN counts as the largest (numpy's
// argmax), and ties keep the first.
template <typename A>
inline bool hard_better(A v, A m) {
  if (std::isnan(m)) return false;
  return std::isnan(v) || v > m;
}

template <SoftKind K, typename T>
void soft_rows(const T* x, T* y, int64_t rows, int64_t n) {
  using A = wide_t<T>;
  std::vector<A> scratch;
  if constexpr (!std::is_same_v<T, A>) scratch.resize(size_t(n));
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * n;
    T* yr = y + r * n;
    if constexpr (K == SoftKind::kHardmax) {
      A m = A(xr[0]);
      int64_t at = 0;
      for (int64_t k = 1; k < n; ++k)
        if (hard_better(A(xr[k]), m)) {
          m = A(xr[k]);
          at = k;
        }
      for (int64_t k = 0; k < n; ++k) yr[k] = narrow<T>(A(k == at ? 1 : 0));
      continue;
    }
    A m;
    if constexpr (std::is_same_v<T, float>) {
      m = vmath::max_value(xr, size_t(n));
    } else {
      m = A(xr[0]);
      for (int64_t k = 1; k < n; ++k) m = std::max(m, A(xr[k]));
    }
    if (!std::isfinite(m)) m = std::isnan(m) ? m : A(0);  // keep inf inputs from making NaN
    A* e;
    if constexpr (std::is_same_v<T, A>)
      e = yr;
    else
      e = scratch.data();
    const A sum = exp_shifted(xr, m, e, n);
    if constexpr (K == SoftKind::kSoftmax) {
      const A inv = A(1) / sum;
      for (int64_t k = 0; k < n; ++k) yr[k] = narrow<T>(e[k] * inv);
    } else {
      // (x - max) - log(sum), in this order: near-zero outputs keep their digits.
      const A log_sum = std::log(sum);
      for (int64_t k = 0; k < n; ++k) yr[k] = narrow<T>((A(xr[k]) - m) - log_sum);
    }
  }
}

// Float Softmax / LogSoftmax of short rows (a detector's 2 class scores per position):
// blocks of rows at a time, with one vectorized exp per block instead of a few calls per
// row, which cost more than the row's arithmetic.
template <SoftKind K>
void soft_short_rows_f32(const float* x, float* y, int64_t rows, int64_t n) {
  constexpr int64_t kBlockRows = 256;
  float shift[kBlockRows];
  for (int64_t r0 = 0; r0 < rows; r0 += kBlockRows) {
    const int64_t count = std::min(kBlockRows, rows - r0);
    const float* xb = x + r0 * n;
    float* yb = y + r0 * n;
    for (int64_t r = 0; r < count; ++r) {
      const float* xr = xb + r * n;
      float m = xr[0];
      for (int64_t k = 1; k < n; ++k) m = (std::isnan(m) || xr[k] <= m) ? m : xr[k];
      if (!std::isfinite(m)) m = std::isnan(m) ? m : 0.0f;  // as soft_rows
      shift[r] = m;
      for (int64_t k = 0; k < n; ++k) yb[r * n + k] = xr[k] - m;
    }
    vmath::unary(vmath::Unary::kExp, {}, yb, yb, size_t(count * n));
    for (int64_t r = 0; r < count; ++r) {
      float* yr = yb + r * n;
      float sum = 0.0f;
      for (int64_t k = 0; k < n; ++k) sum += yr[k];
      if constexpr (K == SoftKind::kSoftmax) {
        const float inv = 1.0f / sum;
        for (int64_t k = 0; k < n; ++k) yr[k] *= inv;
      } else {
        // (x - max) - log(sum), in this order: near-zero outputs keep their digits.
        const float log_sum = std::log(sum);
        for (int64_t k = 0; k < n; ++k) yr[k] = (xb[r * n + k] - shift[r]) - log_sum;
      }
    }
  }
}

// NaN results to 0: nxrt SafeSoftmax, PyTorch's Where(IsNaN(softmax), 0, softmax) after a
// fully masked attention row (every score -inf) or a NaN input. For the paths outside
// vmath::softmax_rows, which does it in its own last pass (this loop stays scalar).
template <typename T>
void zero_nans(T* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const T v = y[i];
    y[i] = v == v ? v : T(0);
  }
}

// The float Softmax/LogSoftmax fast paths: short rows in blocks, longer ones through
// vmath::softmax_rows (max, exp with its sum, and scale, one vector pass each; NaNs zeroed
// in the last when nan_to_zero). False when neither applies.
template <SoftKind K, typename T>
bool soft_rows_f32(const T* x, T* y, int64_t rows, int64_t n, bool nan_to_zero) {
  if constexpr (std::is_same_v<T, float> && K != SoftKind::kHardmax) {
    if (n <= kShortRow) {
      soft_short_rows_f32<K>(x, y, rows, n);
      if (nan_to_zero) zero_nans(y, rows * n);
      return true;
    }
    return vmath::softmax_rows(K == SoftKind::kLogSoftmax, x, y, rows, n, nan_to_zero);
  }
  return false;
}

// Rows of n contiguous elements, each normalized on its own: the float fast paths where
// they apply, else the general loop.
template <SoftKind K, typename T>
void soft_contiguous(const T* x, T* y, int64_t rows, int64_t n, bool nan_to_zero) {
  if (soft_rows_f32<K>(x, y, rows, n, nan_to_zero)) return;
  soft_rows<K>(x, y, rows, n);
  if (nan_to_zero) zero_nans(y, rows * n);
}

// Strided axis: each block is [n, inner]; per-column state lives in small vectors and
// every pass reads whole rows of `inner` contiguous elements.
template <SoftKind K, typename T>
void soft_strided(const T* x, T* y, int64_t outer, int64_t n, int64_t inner) {
  using A = wide_t<T>;
  std::vector<A> m(static_cast<size_t>(inner)), sum(static_cast<size_t>(inner));
  std::vector<int64_t> at(static_cast<size_t>(inner));
  std::vector<A> scratch;
  if constexpr (!std::is_same_v<T, A>) scratch.resize(size_t(n * inner));
  for (int64_t o = 0; o < outer; ++o) {
    const T* xb = x + o * n * inner;
    T* yb = y + o * n * inner;
    for (int64_t j = 0; j < inner; ++j) {
      m[size_t(j)] = A(xb[j]);
      at[size_t(j)] = 0;
    }
    for (int64_t k = 1; k < n; ++k) {
      const T* r = xb + k * inner;
      for (int64_t j = 0; j < inner; ++j) {
        const A v = A(r[j]);
        if constexpr (K == SoftKind::kHardmax) {
          if (hard_better(v, m[size_t(j)])) {
            m[size_t(j)] = v;
            at[size_t(j)] = k;
          }
        } else {
          m[size_t(j)] = std::max(m[size_t(j)], v);
        }
      }
    }
    if constexpr (K == SoftKind::kHardmax) {
      for (int64_t k = 0; k < n; ++k)
        for (int64_t j = 0; j < inner; ++j)
          yb[k * inner + j] = narrow<T>(A(at[size_t(j)] == k ? 1 : 0));
      continue;
    }
    for (A& v : m)
      if (!std::isfinite(v) && !std::isnan(v)) v = A(0);
    A* e;
    if constexpr (std::is_same_v<T, A>)
      e = yb;
    else
      e = scratch.data();
    std::fill(sum.begin(), sum.end(), A(0));
    for (int64_t k = 0; k < n; ++k)
      for (int64_t j = 0; j < inner; ++j) e[k * inner + j] = A(xb[k * inner + j]) - m[size_t(j)];
    if constexpr (std::is_same_v<A, float>) {
      exp_shifted_f32(e, 0.0f, e, n * inner);
    } else {
      for (int64_t i = 0; i < n * inner; ++i) e[i] = std::exp(e[i]);
    }
    for (int64_t k = 0; k < n; ++k)
      for (int64_t j = 0; j < inner; ++j) sum[size_t(j)] += e[k * inner + j];
    if constexpr (K == SoftKind::kSoftmax) {
      for (A& s : sum) s = A(1) / s;
      for (int64_t k = 0; k < n; ++k)
        for (int64_t j = 0; j < inner; ++j)
          yb[k * inner + j] = narrow<T>(e[k * inner + j] * sum[size_t(j)]);
    } else {
      for (A& v : sum) v = std::log(v);
      for (int64_t k = 0; k < n; ++k)
        for (int64_t j = 0; j < inner; ++j)
          yb[k * inner + j] = narrow<T>((A(xb[k * inner + j]) - m[size_t(j)]) - sum[size_t(j)]);
    }
  }
}

template <SoftKind K>
class SoftKernel final : public Kernel {
 public:
  SoftKernel(DataType dtype, int64_t axis, bool coerce_2d, bool nan_to_zero = false)
      : dtype_(dtype), axis_(axis), coerce_2d_(coerce_2d), nan_to_zero_(nan_to_zero) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    const int64_t rank = int64_t(x.rank());
    int64_t axis = axis_;
    // The 2-D coercion also accepts axis == rank (a single column of everything).
    const bool in_range =
        coerce_2d_ ? (axis >= -rank && axis <= rank) : (axis >= -rank && axis < rank);
    if (!in_range)
      return invalid_argument("axis ", axis_, " is out of range for an input of rank ", rank);
    if (axis < 0) axis += rank;
    const Shape& s = x.shape();
    const int64_t outer = s.product(0, size_t(axis));
    const int64_t n = coerce_2d_ ? s.product(size_t(axis), s.size()) : s[size_t(axis)];
    const int64_t inner = coerce_2d_ ? 1 : s.product(size_t(axis) + 1, s.size());
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, s));
    if (outer * n * inner == 0) return Status();
    switch (dtype_) {
      NXRT_CASES_FLOAT({
        if (inner == 1) {
          // Rows are independent: big inputs (2^15 elements a piece at least) are split
          // across the run's threads.
          parallel_ranges(outer, double(1 << 15) / double(n), [&](size_t, int64_t r0, int64_t r1) {
            soft_contiguous<K>(x.data<T>() + r0 * n, y->data<T>() + r0 * n, r1 - r0, n,
                               nan_to_zero_);
          });
        } else {
          soft_strided<K>(x.data<T>(), y->data<T>(), outer, n, inner);
          if (nan_to_zero_) zero_nans(y->data<T>(), outer * n * inner);
        }
      })
      default:
        return not_implemented("type ", tensor_type_name(dtype_), " is not supported");
    }
    return Status();
  }

 private:
  DataType dtype_;
  int64_t axis_;
  bool coerce_2d_;
  bool nan_to_zero_;
};

template <SoftKind K>
Expected<KernelPtr> create_soft(KernelInit& init) {
  const DataType t = init.input_type(0);
  if (!is_float_type(t)) return init.unsupported_type(0);
  const bool coerce_2d = init.opset < 13;
  AttrReader attrs(init.node);
  const int64_t axis = attrs.get_int("axis", coerce_2d ? 1 : -1);
  NXRT_RETURN_IF_ERROR(attrs.status());
  init.set_all_outputs(t);
  return make_kernel<SoftKernel<K>>(t, axis, coerce_2d);
}

}  // namespace

void softmax_float_rows(const float* x, float* y, int64_t rows, int64_t n, bool nan_to_zero) {
  soft_contiguous<SoftKind::kSoftmax>(x, y, rows, n, nan_to_zero);
}

Expected<KernelPtr> create_softmax(KernelInit& init) {
  return create_soft<SoftKind::kSoftmax>(init);
}
// nxrt SafeSoftmax(X, axis): Softmax (opset 13 semantics) with NaN results replaced by 0,
// what fuse_safe_softmax makes of Where(IsNaN(Softmax(X)), 0, Softmax(X)).
Expected<KernelPtr> create_safe_softmax(KernelInit& init) {
  const DataType t = init.input_type(0);
  if (!is_float_type(t)) return init.unsupported_type(0);
  AttrReader attrs(init.node);
  const int64_t axis = attrs.get_int("axis", -1);
  NXRT_RETURN_IF_ERROR(attrs.status());
  init.set_all_outputs(t);
  return make_kernel<SoftKernel<SoftKind::kSoftmax>>(t, axis, false, true);
}
Expected<KernelPtr> create_log_softmax(KernelInit& init) {
  return create_soft<SoftKind::kLogSoftmax>(init);
}
Expected<KernelPtr> create_hardmax(KernelInit& init) {
  return create_soft<SoftKind::kHardmax>(init);
}

}  // namespace nxrt::cpu
