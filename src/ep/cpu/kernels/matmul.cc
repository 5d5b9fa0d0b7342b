// MatMul (numpy semantics), Gemm, MatMulInteger and com.microsoft MatMulIntegerToFloat.
// float runs on the packed SGEMM; float16/bfloat16 are widened to float; 8-bit products
// with one B matrix run on the 8-bit GEMM (qgemm.h); double and other integer cases use
// the simple blocked loop.
#include <algorithm>
#include <type_traits>
#include <vector>

#include "ep/cpu/gemm/gemm.h"
#include "ep/cpu/gemm/qgemm.h"
#include "ep/cpu/kernels/common.h"
#include "ep/cpu/kernels/fused_activation.h"

namespace nxrt::cpu {
namespace {

template <typename T>
constexpr bool kHalf = std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>;

template <typename T>
void gemm_any(bool ta, bool tb, int64_t M, int64_t N, int64_t K, T alpha, const T* A, int64_t lda,
              const T* B, int64_t ldb, T beta, T* C, int64_t ldc) {
  if constexpr (std::is_same_v<T, float>)
    gemm::sgemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  else
    gemm::gemm_simple<T>(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

// A float16/bfloat16 tensor's values as float.
std::vector<float> widen(const Tensor& t) {
  return t.dtype() == DataType::kFloat16 ? cpu::widen(t.data<Float16>(), t.numel())
                                         : cpu::widen(t.data<BFloat16>(), t.numel());
}

template <typename T>
void narrow_into(const std::vector<float>& src, T* dst) {
  for (size_t i = 0; i < src.size(); ++i) dst[i] = T(src[i]);
}

// Shapes and per-batch element offsets of a numpy matmul: 1-D operands are promoted
// (and the promoted dim dropped from the result), batch dims broadcast.
struct MatMulPlan {
  Shape out;
  int64_t M = 1, N = 1, K = 1;
  // Per batch: offsets into A and B (inline for up to 64 batches, so a warm run of the
  // attention products of most models does not touch the heap).
  SmallVec<int64_t, 64> a_off, b_off;
  bool b_shared = false;  // B is one matrix for every batch
};

Status plan_matmul(const Shape& a, const Shape& b, MatMulPlan& p) {
  if (a.rank() == 0 || b.rank() == 0) return invalid_argument("MatMul inputs must not be scalars");
  const bool a1 = a.rank() == 1, b1 = b.rank() == 1;
  p.M = a1 ? 1 : a[a.rank() - 2];
  p.K = a.back();
  const int64_t kb = b1 ? b[0] : b[b.rank() - 2];
  p.N = b1 ? 1 : b.back();
  if (kb != p.K)
    return invalid_argument("MatMul shapes ", a.to_string(), " and ", b.to_string(),
                            " do not match: ", p.K, " vs ", kb);
  const size_t ra = a1 ? 0 : a.rank() - 2, rb = b1 ? 0 : b.rank() - 2;
  const size_t rank = std::max(ra, rb);
  SmallVec<int64_t> dims(rank), sa(rank, 0), sb(rank, 0);
  int64_t stride_a = p.M * p.K, stride_b = p.K * p.N;
  for (size_t i = rank; i-- > 0;) {
    const int64_t da = i + ra >= rank ? a[i + ra - rank] : 1;
    const int64_t db = i + rb >= rank ? b[i + rb - rank] : 1;
    if (da != db && da != 1 && db != 1)
      return invalid_argument("MatMul batch dims of ", a.to_string(), " and ", b.to_string(),
                              " cannot be broadcast");
    dims[i] = da == 1 ? db : da;
    if (da != 1) sa[i] = stride_a;
    if (db != 1) sb[i] = stride_b;
    stride_a *= da;
    stride_b *= db;
  }
  p.out = Shape(std::span<const int64_t>(dims.data(), dims.size()));
  if (!a1) p.out.push_back(p.M);
  if (!b1) p.out.push_back(p.N);
  if (checked_numel(p.out.span()) < 0) return invalid_argument("MatMul output is too large");
  int64_t batches = 1;
  for (int64_t d : dims) batches *= d;
  p.b_shared = true;
  for (int64_t s : sb) p.b_shared &= s == 0;
  p.a_off.assign(size_t(batches), 0);
  p.b_off.assign(size_t(batches), 0);
  SmallVec<int64_t> idx(rank, 0);
  int64_t oa = 0, ob = 0;
  for (int64_t n = 0; n < batches; ++n) {
    p.a_off[size_t(n)] = oa;
    p.b_off[size_t(n)] = ob;
    for (size_t d = rank; d-- > 0;) {
      oa += sa[d];
      ob += sb[d];
      if (++idx[d] < dims[d]) break;
      oa -= sa[d] * dims[d];
      ob -= sb[d] * dims[d];
      idx[d] = 0;
    }
  }
  return Status();
}

template <typename T>
void run_matmul(const MatMulPlan& p, const T* A, const T* B, T* Y) {
  const int64_t batches = int64_t(p.a_off.size());
  if (p.b_shared && batches > 1) {
    // A's batches are contiguous when they are not broadcast: one tall GEMM.
    bool contiguous = true;
    for (int64_t n = 0; n < batches; ++n) contiguous &= p.a_off[size_t(n)] == n * p.M * p.K;
    if (contiguous) {
      gemm_any<T>(false, false, p.M * batches, p.N, p.K, T(1), A, p.K, B, p.N, T(0), Y, p.N);
      return;
    }
  }
  auto one = [&](size_t n) {
    gemm_any<T>(false, false, p.M, p.N, p.K, T(1), A + p.a_off[n], p.K, B + p.b_off[n], p.N, T(0),
                Y + int64_t(n) * p.M * p.N, p.N);
  };
  // Several small products (attention heads): whole products go to the run's threads,
  // each running serially, rather than splitting each small one.
  const double work = double(batches) * double(p.M) * double(p.N) * double(p.K);
  if (batches > 1 && parallel_pieces(work, double(1 << 20)) > 1) {
    parallel_for(size_t(batches), one);
    return;
  }
  for (int64_t n = 0; n < batches; ++n) one(size_t(n));
}

template <typename T>
void run_matmul_typed(const MatMulPlan& p, const Tensor& a, const Tensor& b, Tensor& y) {
  if constexpr (kHalf<T>) {
    const std::vector<float> fa = widen(a), fb = widen(b);
    std::vector<float> fy(size_t(y.numel()));
    run_matmul<float>(p, fa.data(), fb.data(), fy.data());
    narrow_into(fy, y.data<T>());
  } else {
    run_matmul<T>(p, a.data<T>(), b.data<T>(), y.data<T>());
  }
}

// A constant float/float16/bfloat16 B packed once as the right operand, and the constant
// it came from: compute uses it only for that very tensor.
struct PackedB {
  gemm::PackedMatrix matrix;
  Tensor source;

  bool matches(const Tensor& b) const { return !matrix.empty() && b.raw() == source.raw(); }

  // op(B) is K x N; B is 2-D, stored N x K when trans.
  void pack(const Tensor& b, bool trans) {
    if (b.rank() != 2 || b.numel() == 0) return;
    const int64_t rows = b.shape()[0], cols = b.shape()[1];
    std::vector<float> wide;
    const float* pb = nullptr;
    switch (b.dtype()) {
      case DataType::kFloat:
        pb = b.data<float>();
        break;
      case DataType::kFloat16:
      case DataType::kBFloat16:
        wide = widen(b);
        pb = wide.data();
        break;
      default:
        return;
    }
    matrix = trans ? gemm::PackedMatrix::pack_right(true, cols, rows, pb, cols)
                   : gemm::PackedMatrix::pack_right(false, rows, cols, pb, cols);
    source = b;
  }
};

// A (float) times a packed B, plus beta * Y: batches of A stacked into one tall product
// when contiguous.
void run_matmul_packed(const MatMulPlan& p, const float* A, const gemm::PackedMatrix& B, float* Y,
                       float beta = 0.0f) {
  const int64_t batches = int64_t(p.a_off.size());
  bool contiguous = true;
  for (int64_t n = 0; n < batches; ++n) contiguous &= p.a_off[size_t(n)] == n * p.M * p.K;
  if (contiguous) {
    gemm::sgemm_packed_right(false, p.M * batches, 1.0f, A, p.K, B, beta, Y, p.N);
    return;
  }
  for (int64_t n = 0; n < batches; ++n)
    gemm::sgemm_packed_right(false, p.M, 1.0f, A + p.a_off[size_t(n)], p.K, B, beta,
                             Y + n * p.M * p.N, p.N);
}

// Every row of the [rows, n] matrix y set to bias (n values, or one for all).
void fill_rows(float* y, int64_t rows, int64_t n, const Tensor& bias) {
  const float* b = bias.data<float>();
  for (int64_t r = 0; r < rows; ++r) {
    float* row = y + r * n;
    if (bias.numel() == 1)
      std::fill(row, row + n, b[0]);
    else
      std::copy(b, b + n, row);
  }
}

// Adds bias (n values, or one for all) to every row of the [rows, n] matrix y.
void add_rows(float* y, int64_t rows, int64_t n, const Tensor& bias) {
  const float* b = bias.data<float>();
  const bool one = bias.numel() == 1;
  for (int64_t r = 0; r < rows; ++r) {
    float* row = y + r * n;
    for (int64_t j = 0; j < n; ++j) row[j] += b[one ? 0 : j];
  }
}

// MatMul, and nxrt MatMulBias(A, B, bias) = MatMul(A, B) + bias (float32; bias one value
// or one per column of B, which must then be 2-D): the bias is written into Y before the
// product, which adds onto it, instead of a second pass over Y.
class MatMulKernel final : public Kernel {
 public:
  explicit MatMulKernel(PackedB packed, bool with_bias = false)
      : packed_(std::move(packed)), with_bias_(with_bias) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor& a = *ctx.input(0);
    const Tensor& b = *ctx.input(1);
    MatMulPlan p;
    NXRT_RETURN_IF_ERROR(plan_matmul(a.shape(), b.shape(), p));
    const Tensor* bias = with_bias_ ? ctx.input(2) : nullptr;
    if (with_bias_ && (!bias || bias->dtype() != DataType::kFloat || bias->rank() > 1 ||
                       b.rank() != 2 || (bias->numel() != 1 && bias->numel() != p.N)))
      return invalid_argument(
          "the bias must be float with 1 or ", p.N, " values (B's columns) for a 2-D B; it is ",
          bias ? tensor_type_name(bias->dtype()) : "missing", " ",
          bias ? bias->shape().to_string() : "", " with B ", b.shape().to_string());
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, p.out));
    if (y->numel() == 0) return Status();
    if (bias) {
      const int64_t rows = y->numel() / p.N;
      if (packed_.matches(b)) {
        fill_rows(y->data<float>(), rows, p.N, *bias);
        run_matmul_packed(p, a.data<float>(), packed_.matrix, y->data<float>(), 1.0f);
      } else {
        run_matmul<float>(p, a.data<float>(), b.data<float>(), y->data<float>());
        add_rows(y->data<float>(), rows, p.N, *bias);
      }
      return Status();
    }
    if (packed_.matches(b)) {
      if (a.dtype() == DataType::kFloat) {
        run_matmul_packed(p, a.data<float>(), packed_.matrix, y->data<float>());
      } else {
        const std::vector<float> fa = widen(a);
        std::vector<float> fy(size_t(y->numel()));
        run_matmul_packed(p, fa.data(), packed_.matrix, fy.data());
        if (a.dtype() == DataType::kFloat16)
          narrow_into(fy, y->data<Float16>());
        else
          narrow_into(fy, y->data<BFloat16>());
      }
      return Status();
    }
    switch (a.dtype()) {
      NXRT_CASES_NUMERIC(run_matmul_typed<T>(p, a, b, *y))
      default:
        return not_implemented("MatMul of ", tensor_type_name(a.dtype()));
    }
    return Status();
  }

 private:
  PackedB packed_;
  bool with_bias_;
};

// Also com.microsoft FusedGemm: the same with an activation applied to Y (float only).
class GemmKernel final : public Kernel {
 public:
  GemmKernel(bool ta, bool tb, float alpha, float beta, PackedB packed,
             std::optional<FusedActivation> activation = std::nullopt)
      : ta_(ta),
        tb_(tb),
        alpha_(alpha),
        beta_(beta),
        packed_(std::move(packed)),
        activation_(activation) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor& a = *ctx.input(0);
    const Tensor& b = *ctx.input(1);
    const Tensor* c = ctx.input(2);
    if (a.rank() != 2 || b.rank() != 2)
      return invalid_argument("Gemm inputs must be 2-D, got ", a.shape().to_string(), " and ",
                              b.shape().to_string());
    const int64_t M = ta_ ? a.shape()[1] : a.shape()[0];
    const int64_t K = ta_ ? a.shape()[0] : a.shape()[1];
    const int64_t kb = tb_ ? b.shape()[1] : b.shape()[0];
    const int64_t N = tb_ ? b.shape()[0] : b.shape()[1];
    if (K != kb)
      return invalid_argument("Gemm inner dims differ: ", a.shape().to_string(), " and ",
                              b.shape().to_string(), " with transA=", ta_, " transB=", tb_);
    // C broadcasts one way to [M, N]: its strides per output dim are 0 where it has size 1.
    int64_t cs_row = 0, cs_col = 0;
    if (c) {
      const Shape& cs = c->shape();
      if (cs.rank() > 2) return invalid_argument("Gemm C has rank ", cs.rank());
      const int64_t cm = cs.rank() == 2 ? cs[0] : 1;
      const int64_t cn = cs.rank() >= 1 ? cs.back() : 1;
      if ((cm != 1 && cm != M) || (cn != 1 && cn != N))
        return invalid_argument("Gemm C of shape ", cs.to_string(), " does not broadcast to [", M,
                                ",", N, "]");
      cs_row = cm == 1 ? 0 : cn;
      cs_col = cn == 1 ? 0 : 1;
    }
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, Shape{M, N}));
    if (M == 0 || N == 0) return Status();
    const bool use_c = c && beta_ != 0.0f;
    switch (a.dtype()) {
      NXRT_CASES_NUMERIC(run<T>(a, b, c, *y, M, N, K, use_c, cs_row, cs_col))
      default:
        return not_implemented("Gemm of ", tensor_type_name(a.dtype()));
    }
    if (activation_)
      vmath::unary(activation_->fn, activation_->params, y->data<float>(), y->data<float>(),
                   size_t(M * N));
    return Status();
  }

 private:
  template <typename T>
  void run(const Tensor& a, const Tensor& b, const Tensor* c, Tensor& y, int64_t M, int64_t N,
           int64_t K, bool use_c, int64_t cs_row, int64_t cs_col) const {
    using W = std::conditional_t<kHalf<T>, float, T>;
    std::vector<W> wa, wb, wy;
    const W* pa;
    const W* pb;
    W* py;
    if constexpr (kHalf<T>) {
      wa = widen(a);
      wb = widen(b);
      wy.resize(size_t(M * N));
      pa = wa.data();
      pb = wb.data();
      py = wy.data();
    } else {
      pa = a.data<T>();
      pb = b.data<T>();
      py = y.data<T>();
    }
    if (use_c) {
      const T* pc = c->data<T>();
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) py[i * N + j] = W(pc[i * cs_row + j * cs_col]);
    }
    bool done = false;
    if constexpr (std::is_same_v<W, float>) {
      if (packed_.matches(b)) {
        gemm::sgemm_packed_right(ta_, M, alpha_, pa, a.shape()[1], packed_.matrix,
                                 use_c ? beta_ : 0.0f, py, N);
        done = true;
      }
    }
    if (!done)
      gemm_any<W>(ta_, tb_, M, N, K, W(alpha_), pa, a.shape()[1], pb, b.shape()[1],
                  use_c ? W(beta_) : W(0), py, N);
    if constexpr (kHalf<T>) narrow_into(wy, y.data<T>());
  }

  bool ta_, tb_;
  float alpha_, beta_;
  PackedB packed_;
  std::optional<FusedActivation> activation_;
};

// Zero points: a scalar, or one per row of A (a_zero_point) / column of B (b_zero_point).
Status read_zero_points(const Tensor* zp, int64_t count, const char* what, int32_t* out) {
  std::fill(out, out + count, 0);
  if (!zp) return Status();
  const int64_t n = zp->numel();
  if (n != 1 && n != count)
    return invalid_argument(what, " has ", n, " elements; expected 1 or ", count);
  for (int64_t i = 0; i < count; ++i) {
    const int64_t k = n == 1 ? 0 : i;
    out[i] = zp->dtype() == DataType::kUint8 ? int32_t(zp->data<uint8_t>()[k])
                                             : int32_t(zp->data<int8_t>()[k]);
  }
  return Status();
}

Status read_zero_points(const Tensor* zp, int64_t count, const char* what,
                        std::vector<int32_t>& out) {
  out.resize(size_t(count));
  return read_zero_points(zp, count, what, out.data());
}

template <typename T>
void widen_int(const Tensor& t, std::vector<int32_t>& out) {
  out.resize(size_t(t.numel()));
  const T* p = t.data<T>();
  for (size_t i = 0; i < out.size(); ++i) out[i] = int32_t(p[i]);
}

// Any 8-bit product (batched B, per-row a_zero_point) in int32 loops: both operands
// widened with their zero points subtracted, then a plain int32 GEMM.
void widened_product(const MatMulPlan& p, const Tensor& a, const Tensor& b,
                     const std::vector<int32_t>& za, const std::vector<int32_t>& zb, int32_t* out) {
  std::vector<int32_t> wa, wb;
  if (a.dtype() == DataType::kUint8)
    widen_int<uint8_t>(a, wa);
  else
    widen_int<int8_t>(a, wa);
  if (b.dtype() == DataType::kUint8)
    widen_int<uint8_t>(b, wb);
  else
    widen_int<int8_t>(b, wb);
  for (size_t i = 0; i < wa.size(); ++i) wa[i] -= za[(i / size_t(p.K)) % size_t(p.M)];
  for (size_t i = 0; i < wb.size(); ++i) wb[i] -= zb[i % size_t(p.N)];
  run_matmul<int32_t>(p, wa.data(), wb.data(), out);
}

// An 8-bit product with a single 2-D B (a weight, or any B shared by every batch of A)
// and a scalar a_zero_point: the rows of every batch of A form one M x K matrix for the
// 8-bit GEMM. A constant B is packed once, at prepare.
class QuantProduct {
 public:
  // Packs a constant B with its zero point (null: 0); leaves this empty if B is not 2-D.
  void pack(const Tensor& b, const Tensor* b_zero) {
    if (b.rank() != 2 || (b_zero && b_zero->numel() != 1 && b_zero->numel() != b.shape()[1]))
      return;
    std::vector<int32_t> zb;
    if (!read_zero_points(b_zero, b_zero ? b_zero->numel() : 0, "b_zero_point", zb).ok()) return;
    packed_ = gemm::PackedQuantB::pack(b.shape()[0], b.shape()[1], b.raw(), b.shape()[1],
                                       b.dtype() == DataType::kInt8, zb.data(), int64_t(zb.size()));
    b_ = b.raw();
    b_zero_ = b_zero ? b_zero->raw() : nullptr;
  }

  // True when (a, b, zero points) can take the 8-bit GEMM: a scalar a_zero_point, one
  // b_zero_point or one per column.
  static bool applies(const MatMulPlan& p, const Tensor* a_zero, const Tensor* b_zero) {
    return (!a_zero || a_zero->numel() == 1) &&
           (!b_zero || b_zero->numel() == 1 || b_zero->numel() == p.N);
  }

  // C (rows x N int32) of all batches of A at once; with `scale`, Y = C * scale[j] (+
  // bias[j]) in float instead. A B that differs between batches (attention's products
  // of two activations) is packed per batch, each batch a GEMM of its M rows.
  void run(const MatMulPlan& p, const Tensor& a, const Tensor& b, const Tensor* a_zero,
           const Tensor* b_zero, int32_t* c, const float* scale = nullptr,
           const float* bias = nullptr, float* y = nullptr) const {
    const int32_t za = a_zero ? zero_at(*a_zero) : 0;
    const bool a_signed = a.dtype() == DataType::kInt8, b_signed = b.dtype() == DataType::kInt8;
    const auto* a_bytes = static_cast<const uint8_t*>(a.raw());
    const auto* b_bytes = static_cast<const uint8_t*>(b.raw());
    auto multiply = [&](const gemm::PackedQuantB& packed, int64_t rows, int64_t a_off,
                        int64_t c_off) {
      if (scale)
        gemm::qgemm_float(rows, a_bytes + a_off, p.K, a_signed, za, packed, scale, bias, y + c_off,
                          p.N);
      else
        gemm::qgemm(rows, a_bytes + a_off, p.K, a_signed, za, packed, c + c_off, p.N);
    };
    const int64_t batches = int64_t(p.a_off.size());
    if (p.b_shared && !packed_.empty() && b.raw() == b_ &&
        (b_zero ? b_zero->raw() : nullptr) == b_zero_)
      return multiply(packed_, p.M * batches, 0, 0);
    // B packed per run (an activation: attention's K and V) into this thread's buffers,
    // which stay grown from run to run.
    // (PackedQuantB owns growing buffers of its own, so it stays a thread_local object
    // rather than core/scratch.h memory.)
    thread_local gemm::PackedQuantB fresh;
    const int64_t zb_count = b_zero ? b_zero->numel() : 0;
    int32_t* zb = scratch<int32_t>(ScratchSlot::kMatMulZeroPoints, size_t(zb_count));
    (void)read_zero_points(b_zero, zb_count, "b_zero_point", zb);
    auto pack = [&](int64_t b_off) -> const gemm::PackedQuantB& {
      fresh.repack(p.K, p.N, b_bytes + b_off, p.N, b_signed, zb, zb_count);
      return fresh;
    };
    if (p.b_shared) return multiply(pack(0), p.M * batches, 0, 0);
    for (int64_t i = 0; i < batches; ++i)
      multiply(pack(p.b_off[size_t(i)]), p.M, p.a_off[size_t(i)], i * p.M * p.N);
  }

 private:
  static int32_t zero_at(const Tensor& z) {
    return z.dtype() == DataType::kUint8 ? int32_t(z.data<uint8_t>()[0])
                                         : int32_t(z.data<int8_t>()[0]);
  }
  gemm::PackedQuantB packed_;
  const void* b_ = nullptr;       // the constant B packed_ holds
  const void* b_zero_ = nullptr;  // and its zero point
};

class MatMulIntegerKernel final : public Kernel {
 public:
  explicit MatMulIntegerKernel(QuantProduct product) : product_(std::move(product)) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor& a = *ctx.input(0);
    const Tensor& b = *ctx.input(1);
    MatMulPlan p;
    NXRT_RETURN_IF_ERROR(plan_matmul(a.shape(), b.shape(), p));
    // The 8-bit GEMM takes the zero points as they are; only the widened fallback needs
    // them expanded (which also rejects counts that are neither 1 nor M / N).
    const bool fast = QuantProduct::applies(p, ctx.input(2), ctx.input(3));
    std::vector<int32_t> za, zb;
    if (!fast) {
      NXRT_RETURN_IF_ERROR(read_zero_points(ctx.input(2), p.M, "a_zero_point", za));
      NXRT_RETURN_IF_ERROR(read_zero_points(ctx.input(3), p.N, "b_zero_point", zb));
    }
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, p.out));
    if (y->numel() == 0) return Status();
    if (fast) {
      product_.run(p, a, b, ctx.input(2), ctx.input(3), y->data<int32_t>());
      return Status();
    }
    widened_product(p, a, b, za, zb, y->data<int32_t>());
    return Status();
  }

 private:
  QuantProduct product_;
};

// com.microsoft MatMulIntegerToFloat: (A - a_zero)(B - b_zero) * a_scale * b_scale + bias
// in float, the product exact in int32 (onnxruntime's form of a QDQ MatMul). a_scale is a
// scalar; b_scale, b_zero_point and bias have one value or one per column.
class MatMulIntegerToFloatKernel final : public Kernel {
 public:
  explicit MatMulIntegerToFloatKernel(QuantProduct product) : product_(std::move(product)) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor& a = *ctx.input(0);
    const Tensor& b = *ctx.input(1);
    const Tensor& a_scale = *ctx.input(2);
    const Tensor& b_scale = *ctx.input(3);
    const Tensor* a_zero = ctx.input(4);
    const Tensor* b_zero = ctx.input(5);
    const Tensor* bias = ctx.input(6);
    MatMulPlan p;
    NXRT_RETURN_IF_ERROR(plan_matmul(a.shape(), b.shape(), p));
    if (a_scale.numel() != 1)
      return invalid_argument("a_scale has ", a_scale.numel(), " values; expected 1");
    auto per_column = [&](const Tensor* t, const char* what) -> Status {
      if (t && t->numel() != 1 && t->numel() != p.N)
        return invalid_argument(what, " has ", t->numel(), " values; expected 1 or ", p.N);
      return Status();
    };
    NXRT_RETURN_IF_ERROR(per_column(&b_scale, "b_scale"));
    NXRT_RETURN_IF_ERROR(per_column(b_zero, "b_zero_point"));
    NXRT_RETURN_IF_ERROR(per_column(bias, "bias"));
    if (a_zero && a_zero->numel() != 1)
      return invalid_argument("a_zero_point has ", a_zero->numel(), " values; expected 1");
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, p.out));
    if (y->numel() == 0) return Status();
    const int64_t rows = p.M * int64_t(p.a_off.size());
    // Per column: a_scale * b_scale, and the bias.
    float* scale = scratch<float>(ScratchSlot::kMatMulScale, size_t(p.N));
    const float sa = a_scale.data<float>()[0];
    for (int64_t j = 0; j < p.N; ++j)
      scale[j] = sa * b_scale.data<float>()[b_scale.numel() == 1 ? 0 : j];
    float* shift = nullptr;
    if (bias) {
      shift = scratch<float>(ScratchSlot::kMatMulShift, size_t(p.N));
      for (int64_t j = 0; j < p.N; ++j) shift[j] = bias->data<float>()[bias->numel() == 1 ? 0 : j];
    }
    const float* pb = shift;
    float* out = y->data<float>();
    if (QuantProduct::applies(p, a_zero, b_zero)) {
      product_.run(p, a, b, a_zero, b_zero, nullptr, scale, pb, out);
      return Status();
    }
    std::vector<int32_t> za, zb, acc(size_t(rows * p.N));
    NXRT_RETURN_IF_ERROR(read_zero_points(a_zero, p.M, "a_zero_point", za));
    NXRT_RETURN_IF_ERROR(read_zero_points(b_zero, p.N, "b_zero_point", zb));
    widened_product(p, a, b, za, zb, acc.data());
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < p.N; ++j) {
        const float v = float(acc[size_t(i * p.N + j)]) * scale[size_t(j)];
        out[i * p.N + j] = pb ? v + pb[j] : v;
      }
    return Status();
  }

 private:
  QuantProduct product_;
};

// com.microsoft FusedMatMul: alpha * op(A) op(B), op transposing the last two dims of an
// operand of rank >= 2 when transA / transB is set (the batch-transposing forms are not
// supported). float and double; the transposes are the GEMM's, nothing is copied.
class FusedMatMulKernel final : public Kernel {
 public:
  FusedMatMulKernel(bool ta, bool tb, float alpha) : ta_(ta), tb_(tb), alpha_(alpha) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor& a = *ctx.input(0);
    const Tensor& b = *ctx.input(1);
    const bool ta = ta_ && a.rank() >= 2, tb = tb_ && b.rank() >= 2;
    Shape la = a.shape(), lb = b.shape();
    if (ta) std::swap(la[la.size() - 1], la[la.size() - 2]);
    if (tb) std::swap(lb[lb.size() - 1], lb[lb.size() - 2]);
    MatMulPlan p;
    NXRT_RETURN_IF_ERROR(plan_matmul(la, lb, p));
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, p.out));
    if (y->numel() == 0) return Status();
    if (a.dtype() == DataType::kFloat) return run<float>(p, a, b, *y, ta, tb);
    return run<double>(p, a, b, *y, ta, tb);
  }

 private:
  template <typename T>
  Status run(const MatMulPlan& p, const Tensor& a, const Tensor& b, Tensor& y, bool ta,
             bool tb) const {
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    T* py = y.data<T>();
    for (size_t n = 0; n < p.a_off.size(); ++n)
      gemm_any<T>(ta, tb, p.M, p.N, p.K, T(alpha_), pa + p.a_off[n], ta ? p.M : p.K,
                  pb + p.b_off[n], tb ? p.K : p.N, T(0), py + int64_t(n) * p.M * p.N, p.N);
    return Status();
  }

  bool ta_, tb_;
  float alpha_;
};

bool matmul_type_ok(DataType t) {
  return is_float_type(t) || t == DataType::kInt32 || t == DataType::kInt64 ||
         t == DataType::kUint32 || t == DataType::kUint64;
}

}  // namespace

Expected<KernelPtr> create_matmul(KernelInit& init) {
  const DataType t = init.input_type(0);
  if (init.input_type(1) != t)
    return init.error(StatusCode::kInvalidGraph, "inputs have different types ",
                      tensor_type_name(t), " and ", tensor_type_name(init.input_type(1)));
  if (!matmul_type_ok(t)) return init.unsupported_type(0);
  init.set_all_outputs(t);
  PackedB packed;
  if (const Tensor* b = init.constant_input(1)) packed.pack(*b, false);
  return make_kernel<MatMulKernel>(std::move(packed));
}

Expected<KernelPtr> create_matmul_bias(KernelInit& init) {
  for (size_t i = 0; i < 3; ++i)
    if (init.input_type(i) != DataType::kFloat) return init.unsupported_type(i);
  init.set_all_outputs(DataType::kFloat);
  PackedB packed;
  if (const Tensor* b = init.constant_input(1)) packed.pack(*b, false);
  return make_kernel<MatMulKernel>(std::move(packed), true);
}

Expected<KernelPtr> create_gemm(KernelInit& init) {
  AttrReader attrs(init.node);
  const bool ta = attrs.get_int("transA", 0) != 0;
  const bool tb = attrs.get_int("transB", 0) != 0;
  const float alpha = attrs.get_float("alpha", 1.0f);
  const float beta = attrs.get_float("beta", 1.0f);
  NXRT_RETURN_IF_ERROR(attrs.status());
  const DataType t = init.input_type(0);
  for (size_t i = 1; i < 3; ++i)
    if (init.has_input(i) && init.input_type(i) != t)
      return init.error(StatusCode::kInvalidGraph, "input ", i, " has type ",
                        tensor_type_name(init.input_type(i)), ", expected ", tensor_type_name(t));
  if (!matmul_type_ok(t)) return init.unsupported_type(0);
  init.set_all_outputs(t);
  PackedB packed;
  if (const Tensor* b = init.constant_input(1)) packed.pack(*b, tb);
  return make_kernel<GemmKernel>(ta, tb, alpha, beta, std::move(packed));
}

// com.microsoft FusedGemm: Gemm's attributes plus "activation" with its
// activation_alpha / activation_beta (float only).
Expected<KernelPtr> create_fused_gemm(KernelInit& init) {
  for (size_t i = 0; i < 3; ++i)
    if ((i < 2 || init.has_input(i)) && init.input_type(i) != DataType::kFloat)
      return init.unsupported_type(i);
  AttrReader attrs(init.node);
  const bool ta = attrs.get_int("transA", 0) != 0;
  const bool tb = attrs.get_int("transB", 0) != 0;
  const float alpha = attrs.get_float("alpha", 1.0f);
  const float beta = attrs.get_float("beta", 1.0f);
  const std::string name = attrs.get_string("activation");
  vmath::UnaryParams params;
  params.alpha = attrs.get_float("activation_alpha", name == "LeakyRelu"   ? 0.01f
                                                     : name == "QuickGelu" ? 1.702f
                                                                           : 0.2f);
  params.beta = attrs.get_float("activation_beta", 0.5f);
  NXRT_RETURN_IF_ERROR(attrs.status());
  // onnxruntime's FusedGemm names the parameters activation_alpha / _beta, not
  // activation_params; Clip's bounds would come from elsewhere, so it is left out.
  const std::optional<ActivationKind> kind = activation_kind(name);
  if (!name.empty() && (!kind || kind->fn == vmath::Unary::kClip))
    return init.error(StatusCode::kNotImplemented, "activation '", name,
                      "' is not one FusedGemm supports (Relu, Tanh, Sigmoid, LeakyRelu, "
                      "HardSigmoid, HardSwish, QuickGelu)");
  std::optional<FusedActivation> activation;
  if (kind) activation = FusedActivation{kind->fn, params};
  init.set_all_outputs(DataType::kFloat);
  PackedB packed;
  if (const Tensor* b = init.constant_input(1)) packed.pack(*b, tb);
  return make_kernel<GemmKernel>(ta, tb, alpha, beta, std::move(packed), activation);
}

Expected<KernelPtr> create_fused_matmul(KernelInit& init) {
  const DataType t = init.input_type(0);
  if (t != DataType::kFloat && t != DataType::kDouble) return init.unsupported_type(0);
  if (init.input_type(1) != t) return init.unsupported_type(1);
  AttrReader attrs(init.node);
  const bool ta = attrs.get_int("transA", 0) != 0, tb = attrs.get_int("transB", 0) != 0;
  const bool batch_a = attrs.get_int("transBatchA", 0) != 0;
  const bool batch_b = attrs.get_int("transBatchB", 0) != 0;
  const float alpha = attrs.get_float("alpha", 1.0f);
  NXRT_RETURN_IF_ERROR(attrs.status());
  if (batch_a || batch_b)
    return init.error(StatusCode::kNotImplemented,
                      "transBatchA / transBatchB are not supported by nxrt");
  init.set_all_outputs(t);
  return make_kernel<FusedMatMulKernel>(ta, tb, alpha);
}

Expected<KernelPtr> create_matmul_integer(KernelInit& init) {
  for (size_t i = 0; i < 4; ++i) {
    const DataType t = init.input_type(i);
    if (i >= 2 && t == DataType::kUndefined) continue;
    if (t != DataType::kUint8 && t != DataType::kInt8) return init.unsupported_type(i);
  }
  if (init.has_input(2) && init.input_type(2) != init.input_type(0))
    return init.error(StatusCode::kInvalidGraph, "a_zero_point type differs from A");
  if (init.has_input(3) && init.input_type(3) != init.input_type(1))
    return init.error(StatusCode::kInvalidGraph, "b_zero_point type differs from B");
  init.set_all_outputs(DataType::kInt32);
  QuantProduct product;
  if (const Tensor* b = init.constant_input(1)) {
    const Tensor* b_zero = init.has_input(3) ? init.constant_input(3) : nullptr;
    if (!init.has_input(3) || b_zero) product.pack(*b, b_zero);
  }
  return make_kernel<MatMulIntegerKernel>(std::move(product));
}

Expected<KernelPtr> create_matmul_integer_to_float(KernelInit& init) {
  for (size_t i : {0, 1, 4, 5}) {
    const DataType t = init.input_type(i);
    if (i >= 4 && t == DataType::kUndefined) continue;
    if (t != DataType::kUint8 && t != DataType::kInt8) return init.unsupported_type(i);
  }
  if (init.has_input(4) && init.input_type(4) != init.input_type(0))
    return init.error(StatusCode::kInvalidGraph, "a_zero_point type differs from A");
  if (init.has_input(5) && init.input_type(5) != init.input_type(1))
    return init.error(StatusCode::kInvalidGraph, "b_zero_point type differs from B");
  for (size_t i : {2, 3, 6})
    if ((i < 6 || init.has_input(i)) && init.input_type(i) != DataType::kFloat)
      return init.unsupported_type(i);
  init.set_all_outputs(DataType::kFloat);
  QuantProduct product;
  if (const Tensor* b = init.constant_input(1)) {
    const Tensor* b_zero = init.has_input(5) ? init.constant_input(5) : nullptr;
    if (!init.has_input(5) || b_zero) product.pack(*b, b_zero);
  }
  return make_kernel<MatMulIntegerToFloatKernel>(std::move(product));
}

}  // namespace nxrt::cpu
