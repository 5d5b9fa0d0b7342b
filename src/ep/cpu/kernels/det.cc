// Det: the determinant of each trailing square matrix.
#include <cmath>

#include "ep/cpu/kernels/common.h"

namespace nxrt::cpu {
namespace {

// Determinant of each trailing [n, n] matrix by LU factorisation with partial pivoting,
// in double.
template <typename T>
void determinants(const T* x, int64_t count, int64_t n, T* y) {
  std::vector<double> a(size_t(n * n));
  for (int64_t m = 0; m < count; ++m) {
    const T* src = x + m * n * n;
    for (int64_t i = 0; i < n * n; ++i) a[size_t(i)] = double(wide_t<T>(src[i]));
    double det = 1.0;
    for (int64_t k = 0; k < n && det != 0.0; ++k) {
      int64_t p = k;
      for (int64_t i = k + 1; i < n; ++i)
        if (std::abs(a[size_t(i * n + k)]) > std::abs(a[size_t(p * n + k)])) p = i;
      const double pivot = a[size_t(p * n + k)];
      if (pivot == 0.0) {
        det = 0.0;
        break;
      }
      if (p != k) {
        for (int64_t j = 0; j < n; ++j) std::swap(a[size_t(k * n + j)], a[size_t(p * n + j)]);
        det = -det;
      }
      det *= pivot;
      for (int64_t i = k + 1; i < n; ++i) {
        const double f = a[size_t(i * n + k)] / pivot;
        if (f == 0.0) continue;
        for (int64_t j = k + 1; j < n; ++j) a[size_t(i * n + j)] -= f * a[size_t(k * n + j)];
      }
    }
    y[m] = narrow<T>(det);
  }
}

class DetKernel final : public Kernel {
 public:
  explicit DetKernel(DataType dtype) : dtype_(dtype) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    const size_t r = x.rank();
    if (r < 2 || x.shape()[r - 1] != x.shape()[r - 2])
      return invalid_argument("input must be [..., M, M], got ", x.shape().to_string());
    const int64_t n = x.shape()[r - 1];
    Shape out(std::span<const int64_t>(x.shape().begin(), r - 2));
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, out));
    switch (dtype_) {
      NXRT_CASES_FLOAT(determinants<T>(x.data<T>(), y->numel(), n, y->data<T>()))
      default:
        return not_implemented("type ", dtype_name(dtype_), " is not supported");
    }
    return Status();
  }

 private:
  DataType dtype_;
};

}  // namespace

Expected<KernelPtr> create_det(KernelInit& init) {
  const DataType t = init.input_type(0);
  if (!is_float_type(t)) return init.unsupported_type(0);
  init.set_all_outputs(t);
  return make_kernel<DetKernel>(t);
}

}  // namespace nxrt::cpu
