// 8-bit GEMM driver: A is shifted to uint8 (widened to int16 for the AVX2 kernel) a block
// of rows at a time (rows padded to a multiple of four k with zeros, which meet zero-padded
// B), the kernel computes the raw sums a'b', and the zero-point correction turns them into
// the exact result.
#include "ep/cpu/gemm/qgemm.h"

#include <emmintrin.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "core/parallel.h"
#include "core/scratch.h"
#include "ep/cpu/gemm/qgemm_internal.h"

namespace nxrt::gemm {
namespace detail {
namespace {

void qkernel_portable(int64_t k4, const uint8_t* a, int64_t lda, const int8_t* b,
                      int64_t panel_bytes, int32_t* c, int64_t ldc, int64_t mr, int64_t nr) {
  for (int64_t i = 0; i < mr; ++i)
    for (int64_t j = 0; j < nr; ++j) {
      const int8_t* panel = b + (j / kQPanel) * panel_bytes;
      const int64_t lane = j % kQPanel;
      int32_t acc = 0;
      for (int64_t k = 0; k < k4; ++k)
        acc += int32_t(a[i * lda + k]) * int32_t(panel[(k / 4) * 64 + lane * 4 + k % 4]);
      c[i * ldc + j] = acc;
    }
}

// AMX tiles when the CPU and OS allow them (NXRT_QGEMM=vnni, avx2 or portable caps the
// choice); B is then packed 64 k deep.
bool use_amx() {
  static const bool yes = [] {
    const char* env = std::getenv("NXRT_QGEMM");
    if (env && std::strcmp(env, "vnni") == 0) return false;
    return has_avx512_vnni() && amx_available();
  }();
  return yes;
}

// The kernel family of one call; each has its own row preparation and finishing.
enum class QPath { kPortable, kAvx2, kVnni, kAmx };

QPath pick_path(QKernel which, int64_t K4) {
  if (which == QKernel::kPortable) return QPath::kPortable;
  if (which == QKernel::kAvx2) return has_avx2() ? QPath::kAvx2 : QPath::kPortable;
  // AMX needs B packed 64 k deep (it is whenever use_amx() holds).
  if (K4 % 64 == 0 && use_amx()) return QPath::kAmx;
  if (has_avx512_vnni()) return QPath::kVnni;
  return has_avx2() ? QPath::kAvx2 : QPath::kPortable;
}

// a' rows (uint8, zero padded to K4) and their sums, in plain loops.
void prepare_rows_portable(const uint8_t* src, int64_t lda, int64_t rows, int64_t K, int64_t K4,
                           uint8_t flip, uint8_t* dst, int32_t* row_sum) {
  for (int64_t i = 0; i < rows; ++i) {
    uint8_t* d = dst + i * K4;
    const uint8_t* s = src + i * lda;
    int32_t sum = 0;
    for (int64_t k = 0; k < K; ++k) {
      d[k] = uint8_t(s[k] ^ flip);
      sum += d[k];
    }
    for (int64_t k = K; k < K4; ++k) d[k] = 0;
    row_sum[i] = sum;
  }
}

// finish_row_avx512 in plain loops.
void finish_row_portable(const int32_t* raw, const int32_t* terms, const int32_t* zero,
                         int32_t row_sum, int64_t n, int32_t* c_out, float* y, const float* scale,
                         const float* bias) {
  if (!y) {
    for (int64_t j = 0; j < n; ++j) c_out[j] = raw[j] + terms[j] - zero[j] * row_sum;
    return;
  }
  for (int64_t j = 0; j < n; ++j) {
    const float v = float(raw[j] + terms[j] - zero[j] * row_sum) * scale[j];
    y[j] = bias ? v + bias[j] : v;
  }
}

using FinishRowFn = void (*)(const int32_t*, const int32_t*, const int32_t*, int32_t, int64_t,
                             int32_t*, float*, const float*, const float*);

FinishRowFn finish_row_for(QPath path) {
  switch (path) {
    case QPath::kPortable:
      return &finish_row_portable;
    case QPath::kAvx2:
      return &finish_row_avx2;
    default:
      return &finish_row_avx512;
  }
}

// One thread's block of A rows in the form its kernel reads: a' as uint8, or for AVX2
// widened to int16. Runs the kernel over all N columns of the block into c.
struct RowBlock {
  QPath path;
  int64_t K, K4;
  uint8_t flip;
  uint8_t* bytes;  // the kernel's rows, for the byte paths
  int16_t* wide;   // or as int16 pairs, for the AVX2 path

  void prepare(const uint8_t* src, int64_t lda, int64_t mr, int32_t* row_sum) {
    switch (path) {
      case QPath::kPortable:
        return prepare_rows_portable(src, lda, mr, K, K4, flip, bytes, row_sum);
      case QPath::kAvx2:
        return prepare_rows_avx2(src, lda, mr, K, K4, flip, wide, row_sum);
      default:
        return prepare_rows_avx512(src, lda, mr, K, K4, flip, bytes, row_sum);
    }
  }

  void multiply(const int8_t* panels, int64_t N, int32_t* c, int64_t ldc, int64_t mr) const {
    const QKernelFn kernel = path == QPath::kPortable ? &qkernel_portable
                             : path == QPath::kAmx    ? &qkernel_amx
                                                      : &qkernel_avx512_vnni;
    for (int64_t j = 0; j < N; j += 2 * kQPanel) {
      const int8_t* b = panels + (j / kQPanel) * K4 * kQPanel;
      const int64_t nr = std::min<int64_t>(2 * kQPanel, N - j);
      if (path == QPath::kAvx2)
        qkernel_avx2(K4, wide, K4, b, K4 * kQPanel, c + j, ldc, mr, nr);
      else
        kernel(K4, bytes, K4, b, K4 * kQPanel, c + j, ldc, mr, nr);
    }
  }
};

// Multiply-adds below which rows are not split across threads.
constexpr double kMinQMacsPerPiece = double(1 << 20);

}  // namespace
}  // namespace detail

namespace detail {

void pack_quant_panels(const uint8_t* B, int64_t ldb, int64_t K, int64_t N, int64_t K4,
                       uint8_t flip, int8_t* out) {
  const __m128i vflip = _mm_set1_epi8(char(flip));
  for (int64_t j0 = 0; j0 < N; j0 += kQPanel) {
    int8_t* panel = out + (j0 / kQPanel) * K4 * kQPanel;
    const int64_t lanes = std::min(kQPanel, N - j0);
    int64_t k = 0;
    if (lanes == kQPanel) {
      // Four rows of 16 bytes interleaved byte by byte, then by pairs: each column's four
      // k land in one 32-bit lane.
      for (; k + 4 <= K; k += 4) {
        const uint8_t* src = B + k * ldb + j0;
        auto row = [&](int64_t r) {
          return _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + r * ldb)),
                               vflip);
        };
        const __m128i r0 = row(0), r1 = row(1), r2 = row(2), r3 = row(3);
        const __m128i lo01 = _mm_unpacklo_epi8(r0, r1), hi01 = _mm_unpackhi_epi8(r0, r1);
        const __m128i lo23 = _mm_unpacklo_epi8(r2, r3), hi23 = _mm_unpackhi_epi8(r2, r3);
        auto* dst = reinterpret_cast<__m128i*>(panel + k / 4 * 64);
        _mm_storeu_si128(dst + 0, _mm_unpacklo_epi16(lo01, lo23));
        _mm_storeu_si128(dst + 1, _mm_unpackhi_epi16(lo01, lo23));
        _mm_storeu_si128(dst + 2, _mm_unpacklo_epi16(hi01, hi23));
        _mm_storeu_si128(dst + 3, _mm_unpackhi_epi16(hi01, hi23));
      }
    }
    for (; k < K; ++k)
      for (int64_t lane = 0; lane < lanes; ++lane)
        panel[k / 4 * 64 + lane * 4 + k % 4] = int8_t(B[k * ldb + j0 + lane] ^ flip);
  }
}

}  // namespace detail

bool has_avx512_vnni() {
#if defined(__x86_64__) || defined(__i386__)
  static const bool yes = [] {
    const char* env = std::getenv("NXRT_QGEMM");
    if (env && (std::strcmp(env, "avx2") == 0 || std::strcmp(env, "portable") == 0)) return false;
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vnni");
  }();
  return yes;
#else
  return false;
#endif
}

bool has_avx2() {
#if defined(__x86_64__) || defined(__i386__)
  static const bool yes = [] {
    const char* env = std::getenv("NXRT_QGEMM");
    if (env && std::strcmp(env, "portable") == 0) return false;
    return __builtin_cpu_supports("avx2") != 0;
  }();
  return yes;
#else
  return false;
#endif
}

PackedQuantB PackedQuantB::pack(int64_t K, int64_t N, const void* B, int64_t ldb, bool is_signed,
                                const int32_t* b_zero, int64_t b_zero_count) {
  PackedQuantB p;
  p.repack(K, N, B, ldb, is_signed, b_zero, b_zero_count);
  return p;
}

void PackedQuantB::repack(int64_t K, int64_t N, const void* B, int64_t ldb, bool is_signed,
                          const int32_t* b_zero, int64_t b_zero_count) {
  using detail::kQPanel;
  PackedQuantB& p = *this;
  p.K_ = K;
  p.N_ = N;
  const int64_t depth_step = detail::use_amx() ? 64 : 4;
  p.K4_ = (K + depth_step - 1) / depth_step * depth_step;
  p.panels_ = (N + kQPanel - 1) / kQPanel;
  p.signed_ = is_signed;
  p.data_.assign(size_t(p.panels_ * p.K4_ * kQPanel), 0);
  p.col_sum_.assign(size_t(N), 0);
  p.zero_.assign(size_t(N), 0);
  const auto* bytes = static_cast<const uint8_t*>(B);
  // b' = b - 128 for uint8 (the top bit flipped, as a signed byte), b for int8.
  const uint8_t flip = is_signed ? 0 : 0x80;
  detail::pack_quant_panels(bytes, ldb, K, N, p.K4_, flip, p.data_.data());
  // Column sums row by row (contiguous, so the loop vectorizes).
  for (int64_t k = 0; k < K; ++k) {
    const uint8_t* row = bytes + k * ldb;
    int32_t* sum = p.col_sum_.data();
    for (int64_t j = 0; j < N; ++j) sum[j] += int8_t(row[j] ^ flip);
  }
  for (int64_t j = 0; j < N; ++j) {
    const int32_t zb = b_zero_count == 0 ? 0 : b_zero[b_zero_count == 1 ? 0 : j];
    p.zero_[size_t(j)] = is_signed ? zb : zb - 128;
  }
}

namespace detail {

// The float form of the result, for qgemm_float.
struct FloatOut {
  float* y;
  int64_t ldy;
  const float* scale;  // per column
  const float* bias;   // per column, or null
};

// Shared by qgemm and qgemm_float: C gets the exact int32 result, or, with `out`, each
// block of rows is finished in a per-thread int32 tile and written to out->y as float.
void run_qgemm(int64_t M, const void* A, int64_t lda, bool a_signed, int32_t a_zero,
               const int8_t* panels, const int32_t* col_sum, const int32_t* col_zero, int64_t N,
               int64_t K, int64_t K4, int32_t* C, int64_t ldc, const FloatOut* out, QKernel which) {
  const QPath path = pick_path(which, K4);
  const FinishRowFn finish_row = finish_row_for(path);
  const int64_t block_rows = path == QPath::kAmx ? kQRowsAmx : kQRows;
  const int32_t za = a_signed ? a_zero + 128 : a_zero;
  const uint8_t flip = a_signed ? 0x80 : 0;
  const auto* a_bytes = static_cast<const uint8_t*>(A);
  // The correction's per-column part, -za' sum b' + K za' zb', once per call.
  int32_t* col_term = scratch<int32_t>(ScratchSlot::kQgemmColumnTerms, size_t(N));
  for (int64_t j = 0; j < N; ++j) col_term[j] = -za * col_sum[j] + int32_t(K) * za * col_zero[j];
  const int64_t blocks = (M + block_rows - 1) / block_rows;
  const size_t pieces = std::min<size_t>(
      parallel_pieces(double(M) * double(N) * double(K), kMinQMacsPerPiece), size_t(blocks));
  const int64_t per_piece = (blocks + int64_t(pieces) - 1) / int64_t(pieces);
  const int32_t* terms = col_term;
  parallel_for(pieces, [&](size_t piece) {
    // This thread's block of A rows as its kernel reads them and their sums, and for
    // float output the int32 tile of the block.
    uint8_t* bytes = nullptr;
    int16_t* wide = nullptr;
    if (path == QPath::kAvx2)
      wide = scratch<int16_t>(ScratchSlot::kQgemmRows, size_t(block_rows * K4));
    else
      bytes = scratch<uint8_t>(ScratchSlot::kQgemmRows, size_t(block_rows * K4));
    int32_t* tile =
        out ? scratch<int32_t>(ScratchSlot::kQgemmTile, size_t(block_rows * N)) : nullptr;
    RowBlock rows{path, K, K4, flip, bytes, wide};
    int32_t row_sum[kQRowsAmx];
    if (path == QPath::kAmx) amx_configure();
    const int64_t b0 = int64_t(piece) * per_piece, b1 = std::min(blocks, b0 + per_piece);
    for (int64_t blk = b0; blk < b1; ++blk) {
      const int64_t i0 = blk * block_rows, mr = std::min(block_rows, M - i0);
      rows.prepare(a_bytes + i0 * lda, lda, mr, row_sum);
      int32_t* c = out ? tile : C + i0 * ldc;
      const int64_t ld = out ? N : ldc;
      rows.multiply(panels, N, c, ld, mr);
      // sum a'b' - za' sum b' - zb' sum a' + K za' zb'.
      for (int64_t i = 0; i < mr; ++i)
        finish_row(c + i * ld, terms, col_zero, row_sum[i], N, c + i * ld,
                   out ? out->y + (i0 + i) * out->ldy : nullptr, out ? out->scale : nullptr,
                   out ? out->bias : nullptr);
    }
    if (path == QPath::kAmx) amx_release();
  });
}

}  // namespace detail

void qgemm(int64_t M, const void* A, int64_t lda, bool a_signed, int32_t a_zero,
           const PackedQuantB& B, int32_t* C, int64_t ldc, QKernel which) {
  if (M <= 0 || B.N_ <= 0) return;
  detail::run_qgemm(M, A, lda, a_signed, a_zero, B.data_.data(), B.col_sum_.data(), B.zero_.data(),
                    B.N_, B.K_, B.K4_, C, ldc, nullptr, which);
}

void qgemm_float(int64_t M, const void* A, int64_t lda, bool a_signed, int32_t a_zero,
                 const PackedQuantB& B, const float* col_scale, const float* col_bias, float* Y,
                 int64_t ldy, QKernel which) {
  if (M <= 0 || B.N_ <= 0) return;
  const detail::FloatOut out{Y, ldy, col_scale, col_bias};
  detail::run_qgemm(M, A, lda, a_signed, a_zero, B.data_.data(), B.col_sum_.data(), B.zero_.data(),
                    B.N_, B.K_, B.K4_, nullptr, 0, &out, which);
}

void qgemm_reference(int64_t M, int64_t N, int64_t K, const void* A, int64_t lda, bool a_signed,
                     int32_t a_zero, const void* B, int64_t ldb, bool b_signed,
                     const int32_t* b_zero, int64_t b_zero_count, int32_t* C, int64_t ldc) {
  auto value = [](const void* p, int64_t i, bool is_signed) {
    return is_signed ? int32_t(static_cast<const int8_t*>(p)[i])
                     : int32_t(static_cast<const uint8_t*>(p)[i]);
  };
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      const int32_t zb = b_zero_count == 0 ? 0 : b_zero[b_zero_count == 1 ? 0 : j];
      int32_t acc = 0;
      for (int64_t k = 0; k < K; ++k)
        acc += (value(A, i * lda + k, a_signed) - a_zero) * (value(B, k * ldb + j, b_signed) - zb);
      C[i * ldc + j] = acc;
    }
}

}  // namespace nxrt::gemm
