// nxrt OneHotMatMul(A, R, W): MatMul(Cast<float>(Equal(A, R)), W), the one-hot embedding
// lookup that TensorFlow and JAX exports spell out (Magika's byte embedding). A holds
// integer indices whose last dimension is 1 (or K: one index per class), R the constant
// class values [1, ..., 1, K], W float [K, N]. Each output row is the sum of the rows of W
// whose class equals the index: one row copied (or zeros) for the usual R = 0 ... K - 1,
// instead of a K-deep product over a mostly-zero matrix. fuse_one_hot_matmul makes it only for a W
// without infinities or NaNs, where 0 * W[k] adds exactly nothing and the copy equals the product.
#include <algorithm>
#include <cstring>

#include "core/parallel.h"
#include "ep/cpu/kernels/common.h"

namespace nxrt::cpu {
namespace {

class OneHotMatMulKernel final : public Kernel {
 public:
  Status compute(KernelContext& ctx) const override {
    const Tensor& a = *ctx.input(0);
    const Tensor& r = *ctx.input(1);
    const Tensor& w = *ctx.input(2);
    if (a.dtype() != r.dtype())
      return invalid_argument("inputs A and R must share a type, got ", tensor_type_name(a.dtype()),
                              " and ", tensor_type_name(r.dtype()));
    if (w.dtype() != DataType::kFloat || w.rank() != 2)
      return invalid_argument("input W must be a float matrix, got ", tensor_type_name(w.dtype()),
                              " ", w.shape().to_string());
    const int64_t K = w.shape()[0], N = w.shape()[1];
    if (r.rank() == 0 || r.shape().back() != K || r.numel() != K)
      return invalid_argument("input R ", r.shape().to_string(), " must be [1, ..., 1, ", K,
                              "], one class value per row of W ", w.shape().to_string());
    const Shape* shapes[2] = {&a.shape(), &r.shape()};
    Shape out;
    if (!broadcast_shapes(shapes, out))
      return invalid_argument("inputs A ", a.shape().to_string(), " and R ", r.shape().to_string(),
                              " do not broadcast");
    const int64_t rows = out.product(0, out.size() - 1);
    const int64_t a_last = a.rank() == 0 ? 1 : a.shape().back();
    out[out.size() - 1] = N;
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, out));
    switch (a.dtype()) {
      case DataType::kInt32:
        gather(a.data<int32_t>(), a_last, r.data<int32_t>(), K, w.data<float>(), N,
               y->data<float>(), rows);
        break;
      case DataType::kInt64:
        gather(a.data<int64_t>(), a_last, r.data<int64_t>(), K, w.data<float>(), N,
               y->data<float>(), rows);
        break;
      default:
        return not_implemented("OneHotMatMul of ", tensor_type_name(a.dtype()), " input A");
    }
    return Status();
  }

 private:
  // Row i of y: the sum of W[k] over the classes k with R[k] equal to A's index (A[i] when
  // A's last dimension is 1, A[i][k] when it is K), in order of k as the product adds
  // them. With R = 0, 1, ..., K - 1 and one index per row that is W[A[i]].
  template <typename T>
  static void gather(const T* a, int64_t a_last, const T* r, int64_t K, const float* w, int64_t N,
                     float* y, int64_t rows) {
    bool counting = a_last == 1;
    for (int64_t k = 0; k < K && counting; ++k) counting = r[k] == T(k);
    // Row copies are memory-bound: a piece of at least 64K floats is worth a thread.
    const int64_t pieces = std::min<int64_t>(
        rows, int64_t(parallel_pieces(double(rows) * double(N), double(1 << 16))));
    parallel_for(size_t(pieces), [&](size_t piece) {
      const int64_t i0 = rows * int64_t(piece) / pieces, i1 = rows * int64_t(piece + 1) / pieces;
      for (int64_t i = i0; i < i1; ++i) {
        float* row = y + i * N;
        if (counting) {
          const T v = a[i];
          if (v >= T(0) && v < T(K))
            std::memcpy(row, w + int64_t(v) * N, size_t(N) * sizeof(float));
          else
            std::fill(row, row + N, 0.0f);
          continue;
        }
        std::fill(row, row + N, 0.0f);
        for (int64_t k = 0; k < K; ++k)
          if (r[k] == a[a_last == 1 ? i : i * K + k])
            for (int64_t n = 0; n < N; ++n) row[n] += w[k * N + n];
      }
    });
  }
};

}  // namespace

Expected<KernelPtr> create_one_hot_matmul(KernelInit& init) {
  const DataType t = init.input_type(0);
  if (t != DataType::kInt32 && t != DataType::kInt64) return init.unsupported_type(0);
  if (init.input_type(1) != t) return init.unsupported_type(1);
  if (init.input_type(2) != DataType::kFloat) return init.unsupported_type(2);
  init.set_all_outputs(DataType::kFloat);
  return make_kernel<OneHotMatMulKernel>();
}

}  // namespace nxrt::cpu
