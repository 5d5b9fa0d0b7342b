// AVX2 path of the 8-bit GEMM, exact in int32 on the packed layout of the VNNI kernel.
//
// AVX2 has no byte dot product that is exact for uint8 x int8: vpmaddubsw sums pairs of
// products in int16 and saturates (255 * -128 * 2 does not fit). So A rows are widened to
// int16 once per block of rows, B's bytes are sign extended to int16 as they are loaded,
// and vpmaddwd multiplies and sums pairs into int32 (|a' b'| <= 255 * 128, a pair sum
// fits with room to spare). A 16-byte group of a panel holds four columns x four k;
// widened, vpmaddwd leaves two partial sums per column (k 0-1 and k 2-3), which stay
// apart in the accumulators and are added pairwise once, when the tile is stored.
//
// Only these functions are compiled for AVX2 (target attribute), so the library still
// runs on CPUs without it; the driver picks them at run time.
#include <immintrin.h>

#include <algorithm>

#include "ep/cpu/gemm/qgemm_internal.h"

namespace nxrt::gemm::detail {
namespace {

// Rows and columns of the register tile: 6 rows x 8 columns hold 12 accumulators, 2
// widened B vectors and one A broadcast in the 16 ymm registers. Each B load (a
// shuffle-port sign extension) then feeds 6 vpmaddwd.
constexpr int kTileRows = 6;
constexpr int64_t kTileCols = 8;

// Four k of one int16 A row, repeated in each 64-bit quarter: the multiplier of four
// columns' four k in a widened B vector.
__attribute__((target("avx2"), always_inline)) inline __m256i broadcast_four(const int16_t* p) {
  int64_t four;
  __builtin_memcpy(&four, p, sizeof(four));
  return _mm256_set1_epi64x(four);
}

// Adds each column's two partial sums: lo holds columns 0-3, hi 4-7, as (k 0-1, k 2-3)
// pairs with columns 0-1 (4-5) in the low 128 bits. vphaddd works per 128-bit half, which
// leaves columns 0 1 4 5 | 2 3 6 7; the permute puts them in order.
__attribute__((target("avx2"), always_inline)) inline __m256i sum_pairs(__m256i lo, __m256i hi) {
  return _mm256_permute4x64_epi64(_mm256_hadd_epi32(lo, hi), 0xD8);
}

// Stores the first n (< 8) int32 of v.
__attribute__((target("avx2"), always_inline)) inline void store_partial(int32_t* dst, __m256i v,
                                                                         int64_t n) {
  alignas(32) int32_t spill[kTileCols];
  _mm256_store_si256(reinterpret_cast<__m256i*>(spill), v);
  std::copy_n(spill, n, dst);
}

// R rows x 8 columns (nc of them stored) starting at byte offset `lane_bytes` of each
// 64-byte group of panel b; a holds R int16 rows lda apart.
template <int R>
__attribute__((target("avx2"), always_inline)) inline void qtile(int64_t k4, const int16_t* a,
                                                                 int64_t lda, const int8_t* b,
                                                                 int32_t* c, int64_t ldc,
                                                                 int64_t nc) {
  __m256i acc[R][2];
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_si256();
  for (int64_t g = 0; g < k4; g += 4) {
    const int8_t* group = b + g * kQPanel;
    const __m256i b0 =
        _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(group)));
    const __m256i b1 =
        _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(group + 16)));
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      const __m256i av = broadcast_four(a + r * lda + g);
      acc[r][0] = _mm256_add_epi32(acc[r][0], _mm256_madd_epi16(av, b0));
      acc[r][1] = _mm256_add_epi32(acc[r][1], _mm256_madd_epi16(av, b1));
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) {
    const __m256i v = sum_pairs(acc[r][0], acc[r][1]);
    if (nc == kTileCols)
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(c + r * ldc), v);
    else
      store_partial(c + r * ldc, v, nc);
  }
}

// Up to kTileRows rows of one 8-column strip.
__attribute__((target("avx2"))) void qtile_rows(int64_t k4, const int16_t* a, int64_t lda,
                                                const int8_t* b, int32_t* c, int64_t ldc,
                                                int64_t mr, int64_t nc) {
  switch (mr) {
    case 1:
      return qtile<1>(k4, a, lda, b, c, ldc, nc);
    case 2:
      return qtile<2>(k4, a, lda, b, c, ldc, nc);
    case 3:
      return qtile<3>(k4, a, lda, b, c, ldc, nc);
    case 4:
      return qtile<4>(k4, a, lda, b, c, ldc, nc);
    case 5:
      return qtile<5>(k4, a, lda, b, c, ldc, nc);
    default:
      return qtile<6>(k4, a, lda, b, c, ldc, nc);
  }
}

__attribute__((target("avx2"), always_inline)) inline __m256i load(const int32_t* p) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}

}  // namespace

__attribute__((target("avx2"))) void qkernel_avx2(int64_t k4, const int16_t* a, int64_t lda,
                                                  const int8_t* b, int64_t panel_bytes, int32_t* c,
                                                  int64_t ldc, int64_t mr, int64_t nr) {
  // Strips of 8 columns; the packed padding makes reading a whole strip safe, only the
  // stores stop at nr. The row chunks of a strip reuse its B from L1.
  for (int64_t j = 0; j < nr; j += kTileCols) {
    const int8_t* strip = b + (j / kQPanel) * panel_bytes + (j % kQPanel) * 4;
    const int64_t nc = std::min(kTileCols, nr - j);
    for (int64_t i = 0; i < mr; i += kTileRows)
      qtile_rows(k4, a + i * lda, lda, strip, c + i * ldc + j, ldc,
                 std::min<int64_t>(kTileRows, mr - i), nc);
  }
}

__attribute__((target("avx2"))) void prepare_rows_avx2(const uint8_t* src, int64_t lda,
                                                       int64_t rows, int64_t K, int64_t K4,
                                                       uint8_t flip, int16_t* dst,
                                                       int32_t* row_sum) {
  const __m128i vflip = _mm_set1_epi8(char(flip));
  for (int64_t i = 0; i < rows; ++i) {
    const uint8_t* s = src + i * lda;
    int16_t* d = dst + i * K4;
    __m256i sums = _mm256_setzero_si256();  // 32-bit partial sums (int16 pairs summed)
    int64_t k = 0;
    for (; k + 16 <= K; k += 16) {
      const __m128i v =
          _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + k)), vflip);
      const __m256i w = _mm256_cvtepu8_epi16(v);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + k), w);
      sums = _mm256_add_epi32(sums, _mm256_madd_epi16(w, _mm256_set1_epi16(1)));
    }
    const __m128i half =
        _mm_add_epi32(_mm256_castsi256_si128(sums), _mm256_extracti128_si256(sums, 1));
    const __m128i quarter = _mm_add_epi32(half, _mm_unpackhi_epi64(half, half));
    int32_t sum = _mm_cvtsi128_si32(quarter) + _mm_extract_epi32(quarter, 1);
    for (; k < K; ++k) {
      d[k] = int16_t(s[k] ^ flip);
      sum += d[k];
    }
    for (; k < K4; ++k) d[k] = 0;
    row_sum[i] = sum;
  }
}

__attribute__((target("avx2"))) void finish_row_avx2(const int32_t* raw, const int32_t* terms,
                                                     const int32_t* zero, int32_t row_sum,
                                                     int64_t n, int32_t* c_out, float* y,
                                                     const float* scale, const float* bias) {
  const __m256i rs = _mm256_set1_epi32(row_sum);
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    __m256i v = _mm256_add_epi32(load(raw + j), load(terms + j));
    v = _mm256_sub_epi32(v, _mm256_mullo_epi32(load(zero + j), rs));
    if (!y) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(c_out + j), v);
      continue;
    }
    // A multiply, then an add, as the scalar tail rounds.
    __m256 f = _mm256_mul_ps(_mm256_cvtepi32_ps(v), _mm256_loadu_ps(scale + j));
    if (bias) f = _mm256_add_ps(f, _mm256_loadu_ps(bias + j));
    _mm256_storeu_ps(y + j, f);
  }
  for (; j < n; ++j) {
    const int32_t v = raw[j] + terms[j] - zero[j] * row_sum;
    if (!y) {
      c_out[j] = v;
      continue;
    }
    const float f = float(v) * scale[j];
    y[j] = bias ? f + bias[j] : f;
  }
}

}  // namespace nxrt::gemm::detail
