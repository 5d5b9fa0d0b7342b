// GEMM driver (Goto/BLIS loop order): for each NC-wide column block of B and KC-deep
// slice of K, B is packed once into NR-wide k-major panels sized for L2/L3; for each
// MC-tall row block of A, A is packed into MR-tall panels that stay in L2 while the
// micro-kernel sweeps them against every B panel (one B panel lives in L1).
#include "ep/cpu/gemm/gemm.h"

#include <algorithm>
#include <cstdlib>
#include <memory>

#include "ep/cpu/gemm/gemm_internal.h"

namespace nxrt::gemm {
namespace detail {
namespace {

constexpr int64_t kKC = 256;   // depth of a packed slice: a 16-wide B panel is 16 KiB
constexpr int64_t kMC = 96;    // rows of A packed at once (multiple of both MR values)
constexpr int64_t kNC = 2048;  // columns of B packed at once

// Portable 4 x 8 tile: 8 accumulator vectors with SSE2, so it stays in registers on the
// x86-64 baseline; written as fixed-size loops GCC unrolls and vectorizes.
template <int MR, int NR>
void micro_kernel_portable(int64_t kc, const float* a, const float* b, float* c, int64_t ldc,
                           float alpha, float beta, int64_t mr, int64_t nr) {
  float acc[MR][NR] = {};
  for (int64_t k = 0; k < kc; ++k) {
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      const float av = a[i];
#pragma GCC unroll 16
      for (int j = 0; j < NR; ++j) acc[i][j] += av * b[j];
    }
    a += MR;
    b += NR;
  }
  store_tile(&acc[0][0], NR, c, ldc, alpha, beta, mr, nr);
}

// 64-byte aligned scratch that grows and is reused by the calling thread.
float* scratch(std::unique_ptr<float[], void (*)(void*)>& buf, size_t& cap, size_t n) {
  if (n > cap) {
    const size_t bytes = (n * sizeof(float) + 63) / 64 * 64;
    buf = std::unique_ptr<float[], void (*)(void*)>(
        static_cast<float*>(std::aligned_alloc(64, bytes)), &std::free);
    cap = n;
  }
  return buf.get();
}

// Packs rows [0, mc) x depth [0, kc) of op(A) (already offset) into MR-row panels,
// zero-padding the last panel.
template <int MR>
void pack_a(bool trans, const float* A, int64_t lda, int64_t mc, int64_t kc, float* out) {
  const int64_t full = mc / MR * MR;
  if (trans) {
    // op(A)(i, k) = A[k][i]: walk the rows of A so the source streams.
    for (int64_t k = 0; k < kc; ++k) {
      const float* src = A + k * lda;
      float* dst = out + k * MR;
      for (int64_t i0 = 0; i0 < full; i0 += MR, dst += kc * MR)
        for (int64_t i = 0; i < MR; ++i) dst[i] = src[i0 + i];
      if (full < mc) {
        for (int64_t i = 0; i < mc - full; ++i) dst[i] = src[full + i];
        for (int64_t i = mc - full; i < MR; ++i) dst[i] = 0.0f;
      }
    }
    return;
  }
  for (int64_t i0 = 0; i0 < mc; i0 += MR) {
    const int64_t rows = std::min<int64_t>(MR, mc - i0);
    for (int64_t i = 0; i < rows; ++i) {
      const float* src = A + (i0 + i) * lda;
      for (int64_t k = 0; k < kc; ++k) out[k * MR + i] = src[k];
    }
    for (int64_t i = rows; i < MR; ++i)
      for (int64_t k = 0; k < kc; ++k) out[k * MR + i] = 0.0f;
    out += kc * MR;
  }
}

template <int NR>
void pack_b(bool trans, const float* B, int64_t ldb, int64_t kc, int64_t nc, float* out) {
  const int64_t full = nc / NR * NR;
  if (!trans) {
    // Row by row so the source streams; the panels being written stay in cache.
    for (int64_t k = 0; k < kc; ++k) {
      const float* src = B + k * ldb;
      float* dst = out + k * NR;
      for (int64_t j0 = 0; j0 < full; j0 += NR, dst += kc * NR)
        for (int64_t j = 0; j < NR; ++j) dst[j] = src[j0 + j];
      if (full < nc) {
        for (int64_t j = 0; j < nc - full; ++j) dst[j] = src[full + j];
        for (int64_t j = nc - full; j < NR; ++j) dst[j] = 0.0f;
      }
    }
    return;
  }
  for (int64_t j0 = 0; j0 < nc; j0 += NR) {
    const int64_t cols = std::min<int64_t>(NR, nc - j0);
    for (int64_t j = 0; j < cols; ++j) {
      const float* src = B + (j0 + j) * ldb;
      for (int64_t k = 0; k < kc; ++k) out[k * NR + j] = src[k];
    }
    for (int64_t j = cols; j < NR; ++j)
      for (int64_t k = 0; k < kc; ++k) out[k * NR + j] = 0.0f;
    out += kc * NR;
  }
}

template <int MR, int NR>
void blocked_gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                  const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
                  int64_t ldc, MicroKernelFn kernel) {
  thread_local std::unique_ptr<float[], void (*)(void*)> a_buf(nullptr, &std::free);
  thread_local std::unique_ptr<float[], void (*)(void*)> b_buf(nullptr, &std::free);
  thread_local size_t a_cap = 0, b_cap = 0;
  const int64_t nc_max = std::min<int64_t>(kNC, (N + NR - 1) / NR * NR);
  const int64_t kc_max = std::min<int64_t>(kKC, K);
  const int64_t mc_max = std::min<int64_t>(kMC, (M + MR - 1) / MR * MR);
  float* pa = scratch(a_buf, a_cap, size_t(mc_max * kc_max));
  float* pb = scratch(b_buf, b_cap, size_t(nc_max * kc_max));

  for (int64_t jc = 0; jc < N; jc += kNC) {
    const int64_t nc = std::min(kNC, N - jc);
    for (int64_t pc = 0; pc < K; pc += kKC) {
      const int64_t kc = std::min(kKC, K - pc);
      // Later K slices accumulate onto the first one's result.
      const float beta_k = pc == 0 ? beta : 1.0f;
      pack_b<NR>(trans_b, trans_b ? B + jc * ldb + pc : B + pc * ldb + jc, ldb, kc, nc, pb);
      for (int64_t ic = 0; ic < M; ic += kMC) {
        const int64_t mc = std::min(kMC, M - ic);
        pack_a<MR>(trans_a, trans_a ? A + pc * lda + ic : A + ic * lda + pc, lda, mc, kc, pa);
        for (int64_t jr = 0; jr < nc; jr += NR) {
          const int64_t nr = std::min<int64_t>(NR, nc - jr);
          const float* bp = pb + jr * kc;
          for (int64_t ir = 0; ir < mc; ir += MR) {
            const int64_t mr = std::min<int64_t>(MR, mc - ir);
            kernel(kc, pa + ir * kc, bp, C + (ic + ir) * ldc + jc + jr, ldc, alpha, beta_k, mr,
                   nr);
          }
        }
      }
    }
  }
}

// One output row (M == 1): packing B would cost as much as the product itself.
void gemv_row(bool trans_a, bool trans_b, int64_t N, int64_t K, float alpha, const float* A,
              int64_t lda, const float* B, int64_t ldb, float beta, float* C) {
  auto a_at = [&](int64_t k) { return trans_a ? A[k * lda] : A[k]; };
  if (trans_b) {
    for (int64_t j = 0; j < N; ++j) {
      const float* b = B + j * ldb;
      float acc = 0.0f;
      if (!trans_a) {
        for (int64_t k = 0; k < K; ++k) acc += A[k] * b[k];
      } else {
        for (int64_t k = 0; k < K; ++k) acc += a_at(k) * b[k];
      }
      C[j] = beta == 0.0f ? alpha * acc : alpha * acc + beta * C[j];
    }
    return;
  }
  if (beta == 0.0f) {
    std::fill(C, C + N, 0.0f);
  } else if (beta != 1.0f) {
    for (int64_t j = 0; j < N; ++j) C[j] *= beta;
  }
  for (int64_t k = 0; k < K; ++k) {
    const float a = alpha * a_at(k);
    const float* b = B + k * ldb;
    for (int64_t j = 0; j < N; ++j) C[j] += a * b[j];
  }
}

}  // namespace
}  // namespace detail

bool has_avx2_fma() {
#if defined(__x86_64__) || defined(__i386__)
  static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return yes;
#else
  return false;
#endif
}

void sgemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
           const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
           int64_t ldc, MicroKernel kernel) {
  if (M <= 0 || N <= 0) return;
  if (K <= 0 || alpha == 0.0f) {
    for (int64_t i = 0; i < M; ++i) {
      float* c = C + i * ldc;
      for (int64_t j = 0; j < N; ++j) c[j] = beta == 0.0f ? 0.0f : beta * c[j];
    }
    return;
  }
  if (M == 1 && kernel == MicroKernel::kAuto) {
    detail::gemv_row(trans_a, trans_b, N, K, alpha, A, lda, B, ldb, beta, C);
    return;
  }
  if (N == 1 && ldc == 1 && kernel == MicroKernel::kAuto) {
    // C^T = op(B)^T op(A)^T: one row again, with the operands' roles swapped.
    // op(B) is K x 1; as a 1 x K row its stride is ldb (or 1 when transposed).
    detail::gemv_row(!trans_b, !trans_a, M, K, alpha, B, ldb, A, lda, beta, C);
    return;
  }
  if (kernel == MicroKernel::kAuto)
    kernel = has_avx2_fma() ? MicroKernel::kAvx2 : MicroKernel::kPortable;
  if (kernel == MicroKernel::kAvx2 && has_avx2_fma()) {
    detail::blocked_gemm<6, 16>(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc,
                                &detail::micro_kernel_avx2_6x16);
  } else {
    detail::blocked_gemm<4, 8>(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc,
                               &detail::micro_kernel_portable<4, 8>);
  }
}

void sgemm_reference(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                     const float* A, int64_t lda, const float* B, int64_t ldb, float beta,
                     float* C, int64_t ldc) {
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double acc = 0.0;
      for (int64_t k = 0; k < K; ++k)
        acc += double(trans_a ? A[k * lda + i] : A[i * lda + k]) *
               double(trans_b ? B[j * ldb + k] : B[k * ldb + j]);
      float& c = C[i * ldc + j];
      c = beta == 0.0f ? float(alpha * acc) : float(alpha * acc + double(beta) * c);
    }
}

}  // namespace nxrt::gemm
