// Single-precision GEMM for the CPU kernels: C = alpha * op(A) * op(B) + beta * C with
// row-major operands. The fast path packs panels of A and B into cache-sized blocks and
// runs a register-tiled micro-kernel picked at run time: AVX-512F (12 x 32 or 8 x 48, by
// shape) or AVX2+FMA
// (6 x 16) when the CPU has them, else a portable one the compiler vectorizes for the
// baseline ISA. Constant operands can be packed once (PackedMatrix).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

namespace nxrt::gemm {

// kAvx512 is 12 x 32, kAvx512x48 is 8 x 48; kAuto picks between them by the product's
// shape (the one leaving less of its last row and column tiles empty).
enum class MicroKernel { kAuto, kPortable, kAvx2, kAvx512, kAvx512x48 };

// op(A) is M x K (A is K x M when trans_a), op(B) is K x N (B is N x K when trans_b).
// lda/ldb/ldc are row strides in elements. beta == 0 ignores C's old contents (NaN too).
// A kernel the CPU lacks falls back to the portable one.
void sgemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
           int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc,
           MicroKernel kernel = MicroKernel::kAuto);

// A row stride (>= cols) for a B the caller writes itself (im2col) that sgemm then reads
// in place, without packing it, when the buffer is 64-byte aligned.
int64_t in_place_ld(int64_t cols);

// Whether rows `ld` floats apart spread over the L1 cache's sets, so a GEMM can read
// them in place (in_place_ld's test).
bool readable_in_place(int64_t ld);

// The kernel kAuto picks for an M x N product on this CPU.
MicroKernel pick_kernel(int64_t M, int64_t N);

// Straightforward loops; the oracle for tests.
void sgemm_reference(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                     const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
                     int64_t ldc);

// True when this CPU runs the AVX2+FMA micro-kernel.
// The first 64-byte boundary inside `storage` (allocated 63 bytes longer than needed):
// packed weights that vector loads read as whole cache lines.
inline const uint8_t* first_cache_line(const std::vector<uint8_t>& storage) {
  const auto at = reinterpret_cast<uintptr_t>(storage.data());
  return storage.data() + ((64 - at % 64) % 64);
}

bool has_avx2_fma();
// True when this CPU (and OS) run the AVX-512F micro-kernel.
bool has_avx512f();
// Whether `kernel` runs here (kAuto and kPortable always do).
bool kernel_available(MicroKernel kernel);
// The kernel kAuto stands for on this CPU. The environment variable NXRT_GEMM_KERNEL=avx2
// or =portable caps it (read once), to compare kernels on whole models.
MicroKernel best_kernel();

// One operand of a product, packed once into a micro-kernel's panel layout (constant
// weights: pack at prepare, multiply on every run). Immutable after packing, so one
// object serves concurrent products. A "left" matrix is op(A) (M x K), a "right" one
// op(B) (K x N); the layout suits only the kernel it was packed for.
class PackedMatrix {
 public:
  PackedMatrix() = default;
  // depth: the K slice the products run (0: the GEMM's default). Deeper slices write
  // each block of C fewer times, which pays when B's rows are few distinct cache lines
  // (sgemm_packed_left_rows over a convolution's shifted rows).
  static PackedMatrix pack_left(bool trans, int64_t M, int64_t K, const float* A, int64_t lda,
                                MicroKernel kernel = MicroKernel::kAuto, int64_t depth = 0);
  static PackedMatrix pack_right(bool trans, int64_t K, int64_t N, const float* B, int64_t ldb,
                                 MicroKernel kernel = MicroKernel::kAuto, int64_t depth = 0);

  bool empty() const { return data_ == nullptr; }
  bool is_left() const { return left_; }
  int64_t rows() const { return rows_; }  // of op(X)
  int64_t cols() const { return cols_; }
  MicroKernel kernel() const { return kernel_; }
  const float* data() const { return data_.get(); }
  // Columns (right) or rows (left) rounded up to whole panels: the size of one K slice.
  int64_t padded() const { return padded_; }
  int64_t depth() const { return depth_; }  // of a K slice
  // Rows of op(A) per panel of a left matrix (the micro-kernel's MR): where a product
  // may be split by rows.
  int64_t row_tile() const;

 private:
  std::shared_ptr<float> data_;
  bool left_ = false;
  int64_t rows_ = 0, cols_ = 0, padded_ = 0, depth_ = 128;
  MicroKernel kernel_ = MicroKernel::kPortable;
};

// C = alpha * A * op(B) + beta * C with A from pack_left (M x K).
void sgemm_packed_left(const PackedMatrix& A, bool trans_b, int64_t N, float alpha, const float* B,
                       int64_t ldb, float beta, float* C, int64_t ldc);

// Where sgemm_packed_left_rows puts a direct convolution's product instead of C: the
// product's row m is output channel m (at y + m * plane); its column p is output position
// (p / wp, p % wp) of a row laid out wp wide, of which the first ow are kept and stored at
// (p / wp) * ow + p % wp. Each kept value is v * scale[m] + shift[m] (scale, shift null:
// 1 and 0), plus z at the same place as in y when z is given (a residual sum), clamped to
// [lo, hi] (a Relu: 0 and inf), NaN kept.
struct ConvOutput {
  float* y = nullptr;
  int64_t plane = 0, wp = 0, ow = 0;
  const float* scale = nullptr;
  const float* shift = nullptr;
  const float* z = nullptr;
  float lo = -__builtin_inff(), hi = __builtin_inff();
};

// C (M x N, row stride ldc) = A * B with A from pack_left and B given by row: element
// (k, j) at b_rows[k][col0 + j]. B is never copied, so its rows may overlap (the shifted
// input rows of a direct convolution, or the channel planes of a 1x1 one). Only columns
// [col0, col0 + N) of each row are read. Single-threaded. False (nothing
// computed) when A was not packed for an AVX-512 or AVX2 kernel.
// Only rows [m_begin, m_end) of C when given (m_begin a multiple of A.row_tile(); m_end
// -1 for all): threads can split a product by rows, each streaming its share of A.
// With `conv`, the last K slice writes its rows to the convolution's output (C then only
// holds the earlier slices' sums, and is not written at all when K fits one slice).
bool sgemm_packed_left_rows(const PackedMatrix& A, int64_t N, const float* const* b_rows,
                            int64_t col0, float* C, int64_t ldc, int64_t m_begin = 0,
                            int64_t m_end = -1, const ConvOutput* conv = nullptr);

// C = alpha * op(A) * B + beta * C with B from pack_right (K x N). With trans_c,
// C is stored transposed: element (i, j) at C[j * ldc + i] (a weight W packed as W^T
// then computes W * X into row-major C with the wide, vectorized side along W's rows).
void sgemm_packed_right(bool trans_a, int64_t M, float alpha, const float* A, int64_t lda,
                        const PackedMatrix& B, float beta, float* C, int64_t ldc,
                        bool trans_c = false);

// Any other element type (double, integers): loops ordered so the inner one streams
// rows of B and C, blocked over K so a block of B rows stays in cache.
template <typename T>
void gemm_simple(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, T alpha, const T* A,
                 int64_t lda, const T* B, int64_t ldb, T beta, T* C, int64_t ldc) {
  for (int64_t i = 0; i < M; ++i) {
    T* c = C + i * ldc;
    if (beta == T(0)) {
      for (int64_t j = 0; j < N; ++j) c[j] = T(0);
    } else if (beta != T(1)) {
      for (int64_t j = 0; j < N; ++j) c[j] = T(beta * c[j]);
    }
  }
  if (trans_b) {
    // Rows of B are columns of op(B): dot products stream both operands.
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        T acc = T(0);
        const T* b = B + j * ldb;
        for (int64_t k = 0; k < K; ++k)
          acc = T(acc + (trans_a ? A[k * lda + i] : A[i * lda + k]) * b[k]);
        C[i * ldc + j] = T(C[i * ldc + j] + alpha * acc);
      }
    return;
  }
  constexpr int64_t kBlock = 128;
  for (int64_t k0 = 0; k0 < K; k0 += kBlock) {
    const int64_t k1 = k0 + kBlock < K ? k0 + kBlock : K;
    for (int64_t i = 0; i < M; ++i) {
      T* c = C + i * ldc;
      for (int64_t k = k0; k < k1; ++k) {
        const T a = T(alpha * (trans_a ? A[k * lda + i] : A[i * lda + k]));
        const T* b = B + k * ldb;
        for (int64_t j = 0; j < N; ++j) c[j] = T(c[j] + a * b[j]);
      }
    }
  }
}

}  // namespace nxrt::gemm
