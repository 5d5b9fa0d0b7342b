// AVX-512 VNNI kernel of the 8-bit GEMM: 12 rows x 32 columns in 24 int32 accumulators;
// per group of four k, two loads of packed B, a broadcast of four bytes of each A row and
// one vpdpbusd per accumulator. Compiled for AVX-512 VNNI only here (target attribute).
#include <immintrin.h>

#include "ep/cpu/gemm/qgemm_internal.h"

// GCC 12's AVX-512 intrinsics (the reduction's extracts) start from an undefined vector,
// which its flow analysis reports as "may be used uninitialized" (a false positive).
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace nxrt::gemm::detail {
namespace {

// acc += the dot products of a's and b's groups of four bytes. In inline assembly because
// GCC 12 allocates registers badly around the intrinsic's tied accumulator: in the 12 x 32
// tile it copies and spills accumulators every step (661 GOP/s with everything in L1,
// against 970 for this form on a Zen 5 core whose peak is 990).
__attribute__((target("avx512f,avx512vnni"), always_inline)) inline void dot_accumulate(
    __m512i& acc, __m512i a, __m512i b) {
  __asm__("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(a), "v"(b));
}

template <int R>
__attribute__((target("avx512f,avx512vnni"), always_inline)) inline void qtile(
    int64_t k4, const uint8_t* a, int64_t lda, const int8_t* b, int64_t panel_bytes, int32_t* c,
    int64_t ldc, int64_t nr) {
  __m512i acc[R][2];
#pragma GCC unroll 12
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_si512();
  const int8_t* b1 = b + panel_bytes;
  const bool two = nr > kQPanel;
  for (int64_t g = 0; g < k4; g += 4) {
    const __m512i v0 = _mm512_loadu_si512(b + g * kQPanel);
    const __m512i v1 = two ? _mm512_loadu_si512(b1 + g * kQPanel) : _mm512_setzero_si512();
#pragma GCC unroll 12
    for (int r = 0; r < R; ++r) {
      int32_t four;
      __builtin_memcpy(&four, a + r * lda + g, 4);
      const __m512i av = _mm512_set1_epi32(four);
      dot_accumulate(acc[r][0], av, v0);
      dot_accumulate(acc[r][1], av, v1);
    }
  }
  const int64_t n0 = nr < kQPanel ? nr : kQPanel, n1 = nr - n0;
  const __mmask16 m0 = __mmask16((1u << n0) - 1), m1 = __mmask16((1u << n1) - 1);
#pragma GCC unroll 12
  for (int r = 0; r < R; ++r) {
    _mm512_mask_storeu_epi32(c + r * ldc, m0, acc[r][0]);
    if (n1 > 0) _mm512_mask_storeu_epi32(c + r * ldc + kQPanel, m1, acc[r][1]);
  }
}

}  // namespace

__attribute__((target("avx512f,avx512bw"))) void prepare_rows_avx512(const uint8_t* src,
                                                                     int64_t lda, int64_t rows,
                                                                     int64_t K, int64_t K4,
                                                                     uint8_t flip, uint8_t* dst,
                                                                     int32_t* row_sum) {
  const __m512i vflip = _mm512_set1_epi8(char(flip));
  for (int64_t i = 0; i < rows; ++i) {
    const uint8_t* s = src + i * lda;
    uint8_t* d = dst + i * K4;
    __m512i sums = _mm512_setzero_si512();  // eight 64-bit partial sums (vpsadbw)
    int64_t k = 0;
    for (; k + 64 <= K; k += 64) {
      const __m512i v = _mm512_xor_si512(_mm512_loadu_si512(s + k), vflip);
      _mm512_storeu_si512(d + k, v);
      sums = _mm512_add_epi64(sums, _mm512_sad_epu8(v, _mm512_setzero_si512()));
    }
    int32_t sum = int32_t(_mm512_reduce_add_epi64(sums));
    // The last bytes one by one (plain loops: clang 14 cannot compile masked byte moves
    // here), then zeros up to K4.
    for (; k < K; ++k) {
      d[k] = uint8_t(s[k] ^ flip);
      sum += d[k];
    }
    for (; k < K4; ++k) d[k] = 0;
    row_sum[i] = sum;
  }
}

__attribute__((target("avx512f"))) void finish_row_avx512(const int32_t* raw, const int32_t* terms,
                                                          const int32_t* zero, int32_t row_sum,
                                                          int64_t n, int32_t* c_out, float* y,
                                                          const float* scale, const float* bias) {
  const __m512i rs = _mm512_set1_epi32(row_sum);
  for (int64_t j = 0; j < n; j += 16) {
    const __mmask16 m = n - j >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (n - j)) - 1);
    __m512i v = _mm512_maskz_loadu_epi32(m, raw + j);
    v = _mm512_add_epi32(v, _mm512_maskz_loadu_epi32(m, terms + j));
    v = _mm512_sub_epi32(v, _mm512_mullo_epi32(_mm512_maskz_loadu_epi32(m, zero + j), rs));
    if (!y) {
      _mm512_mask_storeu_epi32(c_out + j, m, v);
      continue;
    }
    __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(v), _mm512_maskz_loadu_ps(m, scale + j));
    if (bias) f = _mm512_add_ps(f, _mm512_maskz_loadu_ps(m, bias + j));
    _mm512_mask_storeu_ps(y + j, m, f);
  }
}

__attribute__((target("avx512f,avx512vnni"))) void qkernel_avx512_vnni(int64_t k4, const uint8_t* a,
                                                                       int64_t lda, const int8_t* b,
                                                                       int64_t panel_bytes,
                                                                       int32_t* c, int64_t ldc,
                                                                       int64_t mr, int64_t nr) {
  switch (mr) {
    case 1:
      return qtile<1>(k4, a, lda, b, panel_bytes, c, ldc, nr);
    case 2:
      return qtile<2>(k4, a, lda, b, panel_bytes, c, ldc, nr);
    case 3:
      return qtile<3>(k4, a, lda, b, panel_bytes, c, ldc, nr);
    case 4:
      return qtile<4>(k4, a, lda, b, panel_bytes, c, ldc, nr);
    case 5:
      return qtile<5>(k4, a, lda, b, panel_bytes, c, ldc, nr);
    case 6:
      return qtile<6>(k4, a, lda, b, panel_bytes, c, ldc, nr);
    case 7:
      return qtile<7>(k4, a, lda, b, panel_bytes, c, ldc, nr);
    case 8:
      return qtile<8>(k4, a, lda, b, panel_bytes, c, ldc, nr);
    case 9:
      return qtile<9>(k4, a, lda, b, panel_bytes, c, ldc, nr);
    case 10:
      return qtile<10>(k4, a, lda, b, panel_bytes, c, ldc, nr);
    case 11:
      return qtile<11>(k4, a, lda, b, panel_bytes, c, ldc, nr);
    default:
      return qtile<12>(k4, a, lda, b, panel_bytes, c, ldc, nr);
  }
}

}  // namespace nxrt::gemm::detail
