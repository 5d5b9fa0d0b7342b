// 8-bit integer GEMM: C = (A - a_zero) * (B - b_zero) exactly in int32, for MatMulInteger
// and the fused QDQ MatMul (MatMulIntegerToFloat), which then scales C to float.
//
// B (K x N, uint8 or int8) is packed once into the layout of the AVX-512 VNNI kernel:
// 16-column panels, each 4 consecutive k of a column in one 32-bit lane (vpdpbusd
// multiplies unsigned bytes of A by signed bytes of B and sums each group of four into
// an int32 lane). Signed A and unsigned B are moved into those domains by flipping their
// top bit (a + 128, b - 128); the zero points and the row/column sums undo the shift:
//   sum (a - za)(b - zb) = sum a'b' - za' sum b' - zb' sum a' + K za' zb',
// with a' = a + 128 (when A is signed), za' = za + 128, b' = b - 128 (when B is unsigned),
// zb' = zb - 128. CPUs without AVX-512 VNNI but with AVX2 run an AVX2 kernel on the same
// layout (A widened to int16, B's bytes sign extended as loaded, vpmaddwd: exact, as
// vpmaddubsw's int16 pair sums could saturate); other CPUs run a portable kernel.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

namespace nxrt::gemm {

// True when this CPU runs the AVX-512 VNNI kernel (NXRT_QGEMM=avx2 or portable caps it).
bool has_avx512_vnni();
// True when this CPU has AVX2, for the AVX2 kernel (NXRT_QGEMM=portable caps it).
bool has_avx2();

enum class QKernel;

class PackedQuantB {
 public:
  PackedQuantB() = default;
  // B[k * ldb + j]; b_zero holds N values or 1 (shared); is_signed: int8, else uint8.
  static PackedQuantB pack(int64_t K, int64_t N, const void* B, int64_t ldb, bool is_signed,
                           const int32_t* b_zero, int64_t b_zero_count);
  // The same into this object, reusing its buffers: B operands packed per run (attention's
  // K and V) then do not allocate once the buffers have grown.
  void repack(int64_t K, int64_t N, const void* B, int64_t ldb, bool is_signed,
              const int32_t* b_zero, int64_t b_zero_count);

  bool empty() const { return data_.empty(); }
  int64_t rows() const { return K_; }
  int64_t cols() const { return N_; }
  bool is_signed() const { return signed_; }

 private:
  friend void qgemm(int64_t, const void*, int64_t, bool, int32_t, const PackedQuantB&, int32_t*,
                    int64_t, QKernel);
  friend void qgemm_float(int64_t, const void*, int64_t, bool, int32_t, const PackedQuantB&,
                          const float*, const float*, float*, int64_t, QKernel);
  int64_t K_ = 0, N_ = 0, K4_ = 0, panels_ = 0;
  bool signed_ = false;
  std::vector<int8_t> data_;      // panels_ x (K4_ / 4) groups x 64 bytes
  std::vector<int32_t> col_sum_;  // sum over k of b' per column
  std::vector<int32_t> zero_;     // zb' per column
};

// kAuto: the best kernel of this CPU. kAvx2 (tests): the AVX2 kernel, or the portable one
// on CPUs without AVX2. kPortable (tests): the portable kernel.
enum class QKernel { kAuto, kAvx2, kPortable };  // declared before PackedQuantB

// C[i * ldc + j] = sum_k (A[i * lda + k] - a_zero) * (B[k][j] - b_zero[j]) for M rows.
// A is int8 when a_signed, else uint8. Splits rows over the run's threads.
void qgemm(int64_t M, const void* A, int64_t lda, bool a_signed, int32_t a_zero,
           const PackedQuantB& B, int32_t* C, int64_t ldc, QKernel kernel = QKernel::kAuto);

// Y[i * ldy + j] = float(the qgemm result) * col_scale[j] (+ col_bias[j]): the float
// output of a QDQ MatMul, written as each block of rows finishes (no int32 pass).
void qgemm_float(int64_t M, const void* A, int64_t lda, bool a_signed, int32_t a_zero,
                 const PackedQuantB& B, const float* col_scale, const float* col_bias, float* Y,
                 int64_t ldy, QKernel kernel = QKernel::kAuto);

// The same with plain loops (the oracle for tests).
void qgemm_reference(int64_t M, int64_t N, int64_t K, const void* A, int64_t lda, bool a_signed,
                     int32_t a_zero, const void* B, int64_t ldb, bool b_signed,
                     const int32_t* b_zero, int64_t b_zero_count, int32_t* C, int64_t ldc);

}  // namespace nxrt::gemm
