// com.microsoft Inverse: the inverse of each square matrix in X [..., N, N] (float, double
// or float16), by Gauss-Jordan elimination with partial pivoting in double. A singular
// matrix yields infinities or NaN, as a division by its zero pivot gives.
#include <cmath>
#include <utility>
#include <vector>

#include "ep/cpu/kernels/common.h"

namespace nxrt::cpu {
namespace {

// Inverts the n x n row-major matrix `a` in place (`inv` receives the result).
void invert(std::vector<double>& a, std::vector<double>& inv, int64_t n) {
  inv.assign(size_t(n * n), 0.0);
  for (int64_t i = 0; i < n; ++i) inv[size_t(i * n + i)] = 1.0;
  for (int64_t col = 0; col < n; ++col) {
    int64_t pivot = col;
    for (int64_t r = col + 1; r < n; ++r)
      if (std::abs(a[size_t(r * n + col)]) > std::abs(a[size_t(pivot * n + col)])) pivot = r;
    if (pivot != col)
      for (int64_t c = 0; c < n; ++c) {
        std::swap(a[size_t(col * n + c)], a[size_t(pivot * n + c)]);
        std::swap(inv[size_t(col * n + c)], inv[size_t(pivot * n + c)]);
      }
    const double d = a[size_t(col * n + col)];
    for (int64_t c = 0; c < n; ++c) {
      a[size_t(col * n + c)] /= d;
      inv[size_t(col * n + c)] /= d;
    }
    for (int64_t r = 0; r < n; ++r) {
      if (r == col) continue;
      const double f = a[size_t(r * n + col)];
      if (f == 0.0) continue;
      for (int64_t c = 0; c < n; ++c) {
        a[size_t(r * n + c)] -= f * a[size_t(col * n + c)];
        inv[size_t(r * n + c)] -= f * inv[size_t(col * n + c)];
      }
    }
  }
}

class InverseKernel final : public Kernel {
 public:
  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    if (x.rank() < 2 || x.shape()[x.rank() - 1] != x.shape()[x.rank() - 2])
      return invalid_argument("X must be [..., N, N], got ", x.shape().to_string());
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, x.shape()));
    const int64_t n = x.shape().back(), size = n * n;
    const int64_t count = size > 0 ? x.numel() / size : 0;
    std::vector<double> a, inv;
    switch (x.dtype()) {
      NXRT_CASES_FLOAT({
        const T* in = x.data<T>();
        T* out = y->data<T>();
        for (int64_t m = 0; m < count; ++m) {
          a.resize(size_t(size));
          for (int64_t i = 0; i < size; ++i) a[size_t(i)] = double(wide_t<T>(in[m * size + i]));
          invert(a, inv, n);
          for (int64_t i = 0; i < size; ++i) out[m * size + i] = narrow<T>(inv[size_t(i)]);
        }
      })
      default:
        return not_implemented("Inverse of ", tensor_type_name(x.dtype()));
    }
    return Status();
  }
};

}  // namespace

Expected<KernelPtr> create_inverse(KernelInit& init) {
  const DataType t = init.input_type(0);
  if (t != DataType::kFloat && t != DataType::kDouble && t != DataType::kFloat16)
    return init.unsupported_type(0);
  init.set_all_outputs(t);
  return make_kernel<InverseKernel>();
}

}  // namespace nxrt::cpu
