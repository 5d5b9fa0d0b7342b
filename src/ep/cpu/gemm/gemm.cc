// GEMM driver (Goto/BLIS loop order): for each NC-wide column block of B and KC-deep
// slice of K, B is packed once into NR-wide k-major panels sized for L2/L3; for each
// MC-tall row block of A, A is packed into MR-tall panels that stay in L2 while the
// micro-kernel sweeps them against every B panel (one B panel lives in L1).
// A PackedMatrix holds an operand already in that layout (all K slices, all panels), so
// products with constant weights skip its packing.
#include "ep/cpu/gemm/gemm.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>

#if defined(__SSE2__)
#include <xmmintrin.h>
#endif

#include "core/parallel.h"
#include "core/scratch.h"
#include "ep/cpu/gemm/gemm_internal.h"

namespace nxrt::gemm {
namespace detail {
namespace {

// Depth of a packed slice: a kernel's A and B panels, kc deep, stay in L1 while it
// sweeps them. Deeper slices store and reload C less often: with the 32- and 48-wide
// AVX-512 tiles, 256 deep (a 32-KiB B panel on 48 KiB of L1) is 5-15% faster than 128 on
// 256-1024 square products; the AVX2 and portable tiles keep 128 (their 16-wide panel:
// 8 KiB, measured on 32 KiB L1s).
constexpr int64_t kKC = 128;
template <int NR>
constexpr int64_t depth_for() {
  return NR >= 32 ? 2 * kKC : kKC;
}
constexpr int64_t kMC = 96;    // rows of A packed at once (multiple of every MR)
constexpr int64_t kNC = 1536;  // columns of B packed at once (multiple of every NR)
// At most this many floats of B per (column block, K slice): the block is read once per
// A panel, so it must stay in L2 (2 MiB on the machines measured) beside A and C.
constexpr int64_t kBlockFloats = int64_t(1) << 18;  // 1 MiB

// Columns per block for slices kc deep: kNC, fewer for deep slices, a multiple of NR.
int64_t block_columns(int64_t kc, int64_t NR) {
  return std::max(NR, std::min(kNC, kBlockFloats / std::max<int64_t>(kc, 1)) / NR * NR);
}

// Portable R x 8 tile (MR = 4): 8 accumulator vectors with SSE2, so it stays in
// registers on the x86-64 baseline; fixed-size loops GCC unrolls and vectorizes.
template <int R>
void portable_tile(int64_t kc, const float* a, int64_t ak, const float* b, int64_t b_row, float* c,
                   int64_t rs_c, int64_t cs_c, float alpha, float beta, int64_t nr) {
  float acc[R][8] = {};
  for (int64_t k = 0; k < kc; ++k) {
#pragma GCC unroll 4
    for (int i = 0; i < R; ++i) {
      const float av = a[k * ak + i];
#pragma GCC unroll 8
      for (int j = 0; j < 8; ++j) acc[i][j] += av * b[k * b_row + j];
    }
  }
  store_tile(&acc[0][0], 8, c, rs_c, cs_c, alpha, beta, R, nr);
}

void micro_kernel_portable_4x8(int64_t kc, const float* a, int64_t ak, const float* b,
                               int64_t b_row, int64_t b_panel, float* c, int64_t rs_c, int64_t cs_c,
                               float alpha, float beta, int64_t mr, int64_t nr) {
  for (int64_t j = 0; j < nr; j += 8, b += b_panel, c += 8 * cs_c) {
    const int64_t w = std::min<int64_t>(8, nr - j);
    switch (mr) {
      case 1:
        portable_tile<1>(kc, a, ak, b, b_row, c, rs_c, cs_c, alpha, beta, w);
        break;
      case 2:
        portable_tile<2>(kc, a, ak, b, b_row, c, rs_c, cs_c, alpha, beta, w);
        break;
      case 3:
        portable_tile<3>(kc, a, ak, b, b_row, c, rs_c, cs_c, alpha, beta, w);
        break;
      default:
        portable_tile<4>(kc, a, ak, b, b_row, c, rs_c, cs_c, alpha, beta, w);
        break;
    }
  }
}

// Calls fn.template operator()<MR, NR>(kernel) for an available kernel.
template <typename Fn>
void with_kernel(MicroKernel k, Fn&& fn) {
  switch (k) {
    case MicroKernel::kAvx512:
      return fn.template operator()<12, 32>(&micro_kernel_avx512_12x32);
    case MicroKernel::kAvx512x48:
      return fn.template operator()<8, 48>(&micro_kernel_avx512_8x48);
    case MicroKernel::kAvx2:
      return fn.template operator()<6, 16>(&micro_kernel_avx2_6x16);
    default:
      return fn.template operator()<4, 8>(&micro_kernel_portable_4x8);
  }
}

// Share of an M x N product's tiles that hold real rows and columns.
double tile_use(int64_t M, int64_t N, int64_t MR, int64_t NR) {
  return double(M) / double((M + MR - 1) / MR * MR) * double(N) / double((N + NR - 1) / NR * NR);
}

// The kernel for kAuto: best_kernel(), and between the two AVX-512 shapes the one that
// wastes less of the product's edge tiles (M or N unknown: pass a large value).
MicroKernel resolve(MicroKernel k, int64_t M = int64_t(1) << 20, int64_t N = int64_t(1) << 20) {
  if (k == MicroKernel::kAuto) {
    const MicroKernel best = best_kernel();
    if (best == MicroKernel::kAvx512 && tile_use(M, N, 8, 48) > tile_use(M, N, 12, 32) + 0.01)
      return MicroKernel::kAvx512x48;
    return best;
  }
  return kernel_available(k) ? k : MicroKernel::kPortable;
}

float* aligned_floats(size_t n) {
  const size_t bytes = (std::max<size_t>(n, 1) * sizeof(float) + 63) / 64 * 64;
  return static_cast<float*>(std::aligned_alloc(64, bytes));
}

// Packs `count` panel lines x depth [0, kc) into W-wide panels (line i of panel p at
// out[p * kc * W + k * W + i]), zero-padding the last panel. `lines_contiguous`: the
// source holds element (line i, depth k) at src[k * ld + i] (rows stream), otherwise at
// src[i * ld + k]. A and B panels differ only in which layout is which.
template <int W>
void pack_panels(bool lines_contiguous, const float* src, int64_t ld, int64_t count, int64_t kc,
                 float* out) {
  const int64_t full = count / W * W;
  if (lines_contiguous) {
    // Walk the source rows so it streams; the panels being written stay in cache.
    for (int64_t k = 0; k < kc; ++k) {
      const float* row = src + k * ld;
      float* dst = out + k * W;
      // A fixed-width copy the compiler inlines and vectorizes; a memcpy call per
      // 64-128 bytes cost more than the copy (seen in conv profiles).
      for (int64_t i0 = 0; i0 < full; i0 += W, dst += kc * W) {
#pragma GCC unroll 32
        for (int j = 0; j < W; ++j) dst[j] = row[i0 + j];
      }
      if (full < count) {
        for (int64_t i = 0; i < count - full; ++i) dst[i] = row[full + i];
        for (int64_t i = count - full; i < W; ++i) dst[i] = 0.0f;
      }
    }
    return;
  }
  for (int64_t i0 = 0; i0 < count; i0 += W) {
    const int64_t lines = std::min<int64_t>(W, count - i0);
    int64_t i = 0;
#if defined(__SSE2__)
    // Four lines at a time, 4 x 4 blocks transposed in registers: a strided store per
    // element cost as much as a small product (a row-major A of every MatMul).
    for (; i + 4 <= lines; i += 4) {
      const float* l0 = src + (i0 + i) * ld;
      int64_t k = 0;
      for (; k + 4 <= kc; k += 4) {
        __m128 r0 = _mm_loadu_ps(l0 + k), r1 = _mm_loadu_ps(l0 + ld + k);
        __m128 r2 = _mm_loadu_ps(l0 + 2 * ld + k), r3 = _mm_loadu_ps(l0 + 3 * ld + k);
        _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
        _mm_storeu_ps(out + k * W + i, r0);
        _mm_storeu_ps(out + (k + 1) * W + i, r1);
        _mm_storeu_ps(out + (k + 2) * W + i, r2);
        _mm_storeu_ps(out + (k + 3) * W + i, r3);
      }
      for (; k < kc; ++k)
        for (int64_t j = 0; j < 4; ++j) out[k * W + i + j] = l0[j * ld + k];
    }
#endif
    for (; i < lines; ++i) {
      const float* line = src + (i0 + i) * ld;
      for (int64_t k = 0; k < kc; ++k) out[k * W + i] = line[k];
    }
    for (int64_t i = lines; i < W; ++i)
      for (int64_t k = 0; k < kc; ++k) out[k * W + i] = 0.0f;
    out += kc * W;
  }
}

// Rows [0, mc) x depth [0, kc) of op(A) (already offset) into MR-row panels.
template <int MR>
void pack_a(bool trans, const float* A, int64_t lda, int64_t mc, int64_t kc, float* out) {
  pack_panels<MR>(trans, A, lda, mc, kc, out);  // op(A)(i, k) = A[k][i] when transposed
}

// Depth [0, kc) x columns [0, nc) of op(B) (already offset) into NR-column panels.
template <int NR>
void pack_b(bool trans, const float* B, int64_t ldb, int64_t kc, int64_t nc, float* out) {
  pack_panels<NR>(!trans, B, ldb, nc, kc, out);  // op(B)(k, j) = B[k][j] when not transposed
}

// One operand: a plain matrix (packed per call) or a PackedMatrix.
struct Operand {
  const float* p = nullptr;
  int64_t ld = 0;
  bool trans = false;
  const PackedMatrix* packed = nullptr;
  // Of a packed operand: the first row (left) or column (right) used, a whole number of
  // panels in, so threads can split a product along a packed operand.
  int64_t first = 0;
};

// Whether a row-major B with rows `ld` floats apart can be read in place by the
// micro-kernel instead of being packed. A panel's kc rows must spread over the L1 cache's
// sets: with a stride that is a multiple of a large power of two they all land in a few
// sets and evict each other. Rows that do not start on a cache line are fine: the
// kernels are bound by their FMAs, and a split load costs less than packing every
// element (a 1x1 conv of 55x55 positions: a third faster).
bool b_readable_in_place(int64_t ld) {
  constexpr int64_t kSetSpan = 4096;  // bytes: L1 sets x line size
  int64_t stride = ld * int64_t(sizeof(float)) % kSetSpan, span = kSetSpan;
  while (stride != 0) {  // gcd(stride, span)
    const int64_t t = span % stride;
    span = stride;
    stride = t;
  }
  return span <= 256;  // at least 16 of the 64 sets
}

// Row length (floats) up to which a transposed A is read in place: 256 floats keep a
// panel's rows within 1 KiB of each other, so kc of them fit L1 and its TLB.
constexpr int64_t kInPlaceTransposedLd = 256;

template <int MR, int NR>
void blocked_gemm(MicroKernelFn kernel, int64_t M, int64_t N, int64_t K, float alpha,
                  const Operand& A, const Operand& B, float beta, float* C, int64_t rs_c,
                  int64_t cs_c) {
  // A is read in place when it already is k-major: a single row (ak = 1), or a transposed
  // A (ak = lda) that is one panel or whose rows are short (a thin convolution's column
  // matrix, positions x K): each panel then reads MR consecutive floats per k, its kc rows
  // a few lines apart, which costs the kernel nothing next to packing them first.
  const bool a_direct =
      !A.packed && ((M <= MR && (A.trans || M == 1)) || (A.trans && A.ld <= kInPlaceTransposedLd));
  const bool a_pack = !A.packed && !a_direct;
  // A row-major B is read in place (no packing pass) for its whole NR-wide panels; only
  // its last, partial panel is packed (zero padded).
  const bool b_direct = !B.packed && !B.trans && N >= NR && b_readable_in_place(B.ld);
  // K slices as deep as a packed operand's (pack_left can choose its depth).
  const int64_t KC = A.packed ? A.packed->depth() : B.packed ? B.packed->depth() : depth_for<NR>();
  const int64_t kc_max = std::min<int64_t>(KC, K);
  float* pa = nullptr;
  float* pb = nullptr;
  if (a_pack) {
    const int64_t mc_max = std::min<int64_t>(kMC, (M + MR - 1) / MR * MR);
    pa = scratch<float>(ScratchSlot::kGemmPanelA, size_t(mc_max * kc_max));
  }
  if (b_direct) {
    pb = scratch<float>(ScratchSlot::kGemmPanelB, size_t(NR * kc_max));
  }
  const int64_t NC = block_columns(kc_max, NR);
  if (!b_direct && !B.packed) {
    const int64_t nc_max = std::min<int64_t>(NC, (N + NR - 1) / NR * NR);
    pb = scratch<float>(ScratchSlot::kGemmPanelB, size_t(nc_max * kc_max));
  }

  for (int64_t jc = 0; jc < N; jc += NC) {
    const int64_t nc = std::min(NC, N - jc);
    for (int64_t pc = 0; pc < K; pc += KC) {
      const int64_t kc = std::min(KC, K - pc);
      // Later K slices accumulate onto the first one's result.
      const float beta_k = pc == 0 ? beta : 1.0f;
      const float* bs;
      // Panels [0, whole) of this block are read in place; the rest from packed `bs`.
      int64_t whole = 0;
      const float* b_in_place = nullptr;
      if (b_direct) {
        b_in_place = B.p + pc * B.ld + jc;
        whole = nc / NR * NR;
        if (whole < nc) pack_b<NR>(false, b_in_place + whole, B.ld, kc, nc - whole, pb);
        bs = pb;  // the packed tail, which starts at column `whole`
      } else if (B.packed) {
        bs = B.packed->data() + pc * B.packed->padded() + (B.first + jc) * kc;
      } else {
        pack_b<NR>(B.trans, B.trans ? B.p + jc * B.ld + pc : B.p + pc * B.ld + jc, B.ld, kc, nc,
                   pb);
        bs = pb;
      }
      for (int64_t ic = 0; ic < M; ic += kMC) {
        const int64_t mc = std::min(kMC, M - ic);
        const float* as;
        int64_t ak = MR, a_step = kc * MR;  // element stride over k; offset per panel
        if (A.packed) {
          as = A.packed->data() + pc * A.packed->padded() + (A.first + ic) * kc;
        } else if (a_direct) {
          as = A.trans ? A.p + pc * A.ld + ic : A.p + pc;
          ak = A.trans ? A.ld : 1;
          a_step = A.trans ? MR : 0;  // panels MR columns apart (a single row: one panel)
        } else {
          pack_a<MR>(A.trans, A.trans ? A.p + pc * A.ld + ic : A.p + ic * A.ld + pc, A.ld, mc, kc,
                     pa);
          as = pa;
        }
        // One A panel: hand the kernel several B panels (thin tiles run them together).
        // Each A panel (in L1) sweeps the whole B block (in L2) before the next one:
        // its C tiles then follow each other along the same MR rows, a few sequential
        // write streams the prefetchers follow. B panel outside, A panels inside would
        // keep the B panel in L1 but write C in mc scattered rows at a time, each line
        // a cache miss once C is larger than L2 (a 1x1 conv's 56x56 output: half speed).
        const int64_t width = NR * (mc <= MR ? kPanelGroup : 1);
        auto sweep = [&](int64_t j0, int64_t j1, bool in_place) {
          const int64_t b_row = in_place ? B.ld : NR, b_panel = in_place ? NR : kc * NR;
          for (int64_t ir = 0; ir < mc; ir += MR) {
            const int64_t mr = std::min<int64_t>(MR, mc - ir);
            for (int64_t jr = j0; jr < j1; jr += width) {
              const int64_t nr = std::min<int64_t>(width, j1 - jr);
              const float* bp = in_place ? b_in_place + jr : bs + (jr - whole) * kc;
              kernel(kc, as + ir / MR * a_step, ak, bp, b_row, b_panel,
                     C + (ic + ir) * rs_c + (jc + jr) * cs_c, rs_c, cs_c, alpha, beta_k, mr, nr);
            }
          }
        };
        sweep(0, whole, true);
        sweep(whole, nc, false);
      }
    }
  }
}

// Below this many multiply-adds per piece a thread hand-off costs more than it saves
// (about 50 us of work on one core).
constexpr double kMinMacsPerPiece = double(1 << 20);
constexpr int64_t kStreamedRows = 8;

// blocked_gemm on the run's threads (core/parallel.h): C is cut into row ranges when A
// is at least as large as B, else into column ranges, aligned to the micro-tile, so each
// thread streams (and packs) only its share of the larger one; a packed operand is cut
// at its panels. A tie goes to rows: each thread then packs all of B, whose panels are
// row copies, rather than all of A, whose panels gather MR rows (512 square on 2
// threads: 1.70x -> 1.82-1.86x one thread; 1024 1.85x -> 1.97x). Serial when the product
// is small or no Parallel is installed.
template <int MR, int NR>
void parallel_gemm(MicroKernelFn kernel, int64_t M, int64_t N, int64_t K, float alpha,
                   const Operand& A, const Operand& B, float beta, float* C, int64_t rs_c,
                   int64_t cs_c) {
  const bool by_cols = N > M;
  const int64_t extent = by_cols ? N : M, tile = by_cols ? NR : MR;
  // A product of a few rows is bound by streaming B, not by its multiply-adds: it costs
  // about what kStreamedRows rows would at full FMA speed (a decode step's 576 x 576
  // weights take ~80 us from memory although they hold only 0.3 M multiply-adds).
  const double rows = double(std::max<int64_t>(M, kStreamedRows));
  size_t pieces = parallel_pieces(rows * double(N) * double(K), kMinMacsPerPiece);
  pieces = std::min<size_t>(pieces, size_t((extent + tile - 1) / tile));
  if (pieces <= 1) return blocked_gemm<MR, NR>(kernel, M, N, K, alpha, A, B, beta, C, rs_c, cs_c);
  const int64_t step = ((extent + int64_t(pieces) - 1) / int64_t(pieces) + tile - 1) / tile * tile;
  parallel_for(size_t((extent + step - 1) / step), [&](size_t piece) {
    const int64_t begin = int64_t(piece) * step, count = std::min(step, extent - begin);
    if (by_cols) {
      Operand b = B;
      if (B.packed)
        b.first = B.first + begin;
      else
        b.p = B.trans ? B.p + begin * B.ld : B.p + begin;
      blocked_gemm<MR, NR>(kernel, M, count, K, alpha, A, b, beta, C + begin * cs_c, rs_c, cs_c);
    } else {
      Operand a = A;
      if (A.packed)
        a.first = A.first + begin;
      else
        a.p = A.trans ? A.p + begin : A.p + begin * A.ld;
      blocked_gemm<MR, NR>(kernel, count, N, K, alpha, a, B, beta, C + begin * rs_c, rs_c, cs_c);
    }
  });
}

// Dot product with independent partial sums, so it vectorizes without reassociation
// flags (a single running sum is one serial chain of adds).
float dot(const float* a, const float* b, int64_t n) {
  float acc[16] = {};
  int64_t k = 0;
  for (; k + 16 <= n; k += 16)
    for (int j = 0; j < 16; ++j) acc[j] += a[k + j] * b[k + j];
  float s = 0.0f;
  for (; k < n; ++k) s += a[k] * b[k];
  for (int j = 0; j < 16; ++j) s += acc[j];
  return s;
}

// One output row (M == 1): packing B would cost as much as the product itself.
void gemv_row(bool trans_a, bool trans_b, int64_t N, int64_t K, float alpha, const float* A,
              int64_t lda, const float* B, int64_t ldb, float beta, float* C) {
  if (trans_a && lda != 1) {
    // A strided row: gather it once so the inner loops stream.
    float* row = scratch<float>(ScratchSlot::kGemmRow, size_t(K));
    for (int64_t k = 0; k < K; ++k) row[k] = A[k * lda];
    A = row;
  }
  if (trans_b) {
    for (int64_t j = 0; j < N; ++j) {
      const float acc = dot(A, B + j * ldb, K);
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
    const float a = alpha * A[k];
    const float* b = B + k * ldb;
    for (int64_t j = 0; j < N; ++j) C[j] += a * b[j];
  }
}

void scale_c(int64_t M, int64_t N, float beta, float* C, int64_t rs_c, int64_t cs_c) {
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      float& c = C[i * rs_c + j * cs_c];
      c = beta == 0.0f ? 0.0f : beta * c;
    }
}

}  // namespace
}  // namespace detail

int64_t in_place_ld(int64_t cols) {
  int64_t ld = (cols + 15) / 16 * 16;
  while (!detail::b_readable_in_place(ld)) ld += 16;
  return ld;
}

bool readable_in_place(int64_t ld) { return detail::b_readable_in_place(ld); }

MicroKernel pick_kernel(int64_t M, int64_t N) { return detail::resolve(MicroKernel::kAuto, M, N); }

bool has_avx2_fma() {
#if defined(__x86_64__) || defined(__i386__)
  static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return yes;
#else
  return false;
#endif
}

bool has_avx512f() {
#if defined(__x86_64__) || defined(__i386__)
  // libgcc also checks that the OS saves the zmm state (XCR0) before reporting it.
  static const bool yes = __builtin_cpu_supports("avx512f");
  return yes;
#else
  return false;
#endif
}

bool kernel_available(MicroKernel kernel) {
  switch (kernel) {
    case MicroKernel::kAvx512:
    case MicroKernel::kAvx512x48:
      return has_avx512f();
    case MicroKernel::kAvx2:
      return has_avx2_fma();
    default:
      return true;
  }
}

MicroKernel best_kernel() {
  // NXRT_GEMM_KERNEL=avx2|portable caps the choice (for comparing kernels on a model).
  static const MicroKernel best = [] {
    const char* env = std::getenv("NXRT_GEMM_KERNEL");
    const bool cap_avx2 = env && std::strcmp(env, "avx2") == 0;
    const bool cap_portable = env && std::strcmp(env, "portable") == 0;
    if (!cap_avx2 && !cap_portable && has_avx512f()) return MicroKernel::kAvx512;
    if (!cap_portable && has_avx2_fma()) return MicroKernel::kAvx2;
    return MicroKernel::kPortable;
  }();
  return best;
}

void sgemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
           int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc,
           MicroKernel kernel) {
  if (M <= 0 || N <= 0) return;
  if (K <= 0 || alpha == 0.0f) return detail::scale_c(M, N, beta, C, ldc, 1);
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
  const detail::Operand a{A, lda, trans_a, nullptr}, b{B, ldb, trans_b, nullptr};
  detail::with_kernel(detail::resolve(kernel, M, N), [&]<int MR, int NR>(detail::MicroKernelFn fn) {
    detail::parallel_gemm<MR, NR>(fn, M, N, K, alpha, a, b, beta, C, ldc, 1);
  });
}

PackedMatrix PackedMatrix::pack_left(bool trans, int64_t M, int64_t K, const float* A, int64_t lda,
                                     MicroKernel kernel, int64_t depth) {
  PackedMatrix p;
  p.left_ = true;
  p.rows_ = M;
  p.cols_ = K;
  p.kernel_ = detail::resolve(kernel, M);
  detail::with_kernel(p.kernel_, [&]<int MR, int NR>(detail::MicroKernelFn) {
    p.depth_ = depth > 0 ? depth : detail::depth_for<NR>();
    p.padded_ = (M + MR - 1) / MR * MR;
    p.data_ = std::shared_ptr<float>(detail::aligned_floats(size_t(p.padded_ * K)), &std::free);
    for (int64_t pc = 0; pc < K; pc += p.depth_)
      detail::pack_a<MR>(trans, trans ? A + pc * lda : A + pc, lda, M, std::min(p.depth_, K - pc),
                         p.data_.get() + pc * p.padded_);
  });
  return p;
}

int64_t PackedMatrix::row_tile() const {
  int64_t mr = 1;
  detail::with_kernel(kernel_, [&]<int MR, int>(detail::MicroKernelFn) { mr = MR; });
  return mr;
}

bool sgemm_packed_left_rows(const PackedMatrix& A, int64_t N, const float* const* b_rows,
                            int64_t col0, float* C, int64_t ldc, int64_t m_begin, int64_t m_end,
                            const ConvOutput* conv) {
  using RowsKernel = void (*)(int64_t, const float*, int64_t, const float* const*, int64_t, float*,
                              int64_t, float, int64_t, int64_t);
  using ConvKernel =
      void (*)(int64_t, const float*, int64_t, const float* const*, int64_t, const float*, int64_t,
               float, int64_t, int64_t, const ConvOutput&, int64_t);
  RowsKernel kernel = nullptr;
  ConvKernel conv_kernel = nullptr;
  int64_t MR = 0, NR = 0;
  if (A.kernel() == MicroKernel::kAvx512) {
    kernel = &detail::micro_kernel_avx512_rows_12x32;
    conv_kernel = &detail::micro_kernel_avx512_rows_conv_12x32;
    MR = 12;
    NR = 32;
  } else if (A.kernel() == MicroKernel::kAvx512x48) {
    kernel = &detail::micro_kernel_avx512_rows_8x48;
    conv_kernel = &detail::micro_kernel_avx512_rows_conv_8x48;
    MR = 8;
    NR = 48;
  } else if (A.kernel() == MicroKernel::kAvx2) {
    kernel = &detail::micro_kernel_avx2_rows_6x16;
    conv_kernel = &detail::micro_kernel_avx2_rows_conv_6x16;
    MR = 6;
    NR = 16;
  } else {
    return false;
  }
  const int64_t M = m_end < 0 ? A.rows() : std::min(m_end, A.rows()), K = A.cols();
  if (M <= m_begin || N <= 0) return true;
  // The loop order of blocked_gemm without packing B: per column block, K slice and
  // block of A rows, each A panel sweeps the block's columns.
  const int64_t NC = detail::block_columns(A.depth(), NR);
  for (int64_t jc = 0; jc < N; jc += NC) {
    const int64_t nc = std::min(NC, N - jc);
    for (int64_t pc = 0; pc < K; pc += A.depth()) {
      const int64_t kc = std::min(A.depth(), K - pc);
      const float beta = pc == 0 ? 0.0f : 1.0f;
      const float* as = A.data() + pc * A.padded();
      for (int64_t ic = m_begin; ic < M; ic += detail::kMC) {
        const int64_t mc = std::min(detail::kMC, M - ic);
        const int64_t width = NR * (mc <= MR ? detail::kPanelGroup : 1);
        for (int64_t ir = 0; ir < mc; ir += MR) {
          for (int64_t jr = 0; jr < nc; jr += width) {
            const int64_t nr = std::min(width, nc - jr);
            float* c = C + (ic + ir) * ldc + jc + jr;
            if (conv && pc + kc >= K)
              conv_kernel(kc, as + (ic + ir) * kc, MR, b_rows + pc, col0 + jc + jr, c, ldc, beta,
                          std::min(MR, mc - ir), nr, *conv, ic + ir);
            else
              kernel(kc, as + (ic + ir) * kc, MR, b_rows + pc, col0 + jc + jr, c, ldc, beta,
                     std::min(MR, mc - ir), nr);
          }
        }
      }
    }
  }
  return true;
}

PackedMatrix PackedMatrix::pack_right(bool trans, int64_t K, int64_t N, const float* B, int64_t ldb,
                                      MicroKernel kernel, int64_t depth) {
  PackedMatrix p;
  p.left_ = false;
  p.rows_ = K;
  p.cols_ = N;
  p.kernel_ = detail::resolve(kernel, int64_t(1) << 20, N);
  detail::with_kernel(p.kernel_, [&]<int, int NR>(detail::MicroKernelFn) {
    p.depth_ = depth > 0 ? depth : detail::depth_for<NR>();
    p.padded_ = (N + NR - 1) / NR * NR;
    p.data_ = std::shared_ptr<float>(detail::aligned_floats(size_t(p.padded_ * K)), &std::free);
    for (int64_t pc = 0; pc < K; pc += p.depth_)
      detail::pack_b<NR>(trans, trans ? B + pc : B + pc * ldb, ldb, std::min(p.depth_, K - pc), N,
                         p.data_.get() + pc * p.padded_);
  });
  return p;
}

void sgemm_packed_left(const PackedMatrix& A, bool trans_b, int64_t N, float alpha, const float* B,
                       int64_t ldb, float beta, float* C, int64_t ldc) {
  const int64_t M = A.rows(), K = A.cols();
  if (M <= 0 || N <= 0) return;
  if (K <= 0 || alpha == 0.0f) return detail::scale_c(M, N, beta, C, ldc, 1);
  const detail::Operand a{nullptr, 0, false, &A}, b{B, ldb, trans_b, nullptr};
  detail::with_kernel(A.kernel(), [&]<int MR, int NR>(detail::MicroKernelFn fn) {
    detail::parallel_gemm<MR, NR>(fn, M, N, K, alpha, a, b, beta, C, ldc, 1);
  });
}

void sgemm_packed_right(bool trans_a, int64_t M, float alpha, const float* A, int64_t lda,
                        const PackedMatrix& B, float beta, float* C, int64_t ldc, bool trans_c) {
  const int64_t K = B.rows(), N = B.cols();
  const int64_t rs_c = trans_c ? 1 : ldc, cs_c = trans_c ? ldc : 1;
  if (M <= 0 || N <= 0) return;
  if (K <= 0 || alpha == 0.0f) return detail::scale_c(M, N, beta, C, rs_c, cs_c);
  const detail::Operand a{A, lda, trans_a, nullptr}, b{nullptr, 0, false, &B};
  detail::with_kernel(B.kernel(), [&]<int MR, int NR>(detail::MicroKernelFn fn) {
    detail::parallel_gemm<MR, NR>(fn, M, N, K, alpha, a, b, beta, C, rs_c, cs_c);
  });
}

void sgemm_reference(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                     const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
                     int64_t ldc) {
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
