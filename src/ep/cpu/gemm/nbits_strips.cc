#include "ep/cpu/gemm/nbits_strips.h"

#include <algorithm>

#include "ep/cpu/gemm/gemm.h"
#include "ep/cpu/x86_simd.h"

namespace nxrt::gemm {
namespace {

constexpr int64_t kChunk = 32;  // codes per chunk: a block holds whole chunks
constexpr int64_t S = kNBitsStripRows;
constexpr int64_t G = kNBitsGroupRows;
constexpr int kNarrowRows = 8;  // the register tile of a group of at most 8 rows

// The weights of strip t of a quad's block: its scale and offset vectors, and the codes
// of byte position j of its chunk c (counted within the block).
struct QuadBlock {
  const uint8_t* base;
  int64_t bytes;  // codes per chunk and row: 16 (4 bits) or 32
  const float* scale(int64_t t) const { return reinterpret_cast<const float*>(base) + t * S; }
  const float* offset(int64_t t) const { return scale(t) + kNBitsQuadStrips * S; }
  const uint8_t* codes(int64_t c, int64_t j, int64_t t) const {
    return base + 2 * kNBitsQuadStrips * S * sizeof(float) +
           ((c * bytes + j) * kNBitsQuadStrips + t) * S;
  }
};

#if defined(__x86_64__) || defined(__i386__)

// A chunk's bytes per row: 16 (4 bits, two codes each) or 32.
template <int Bits>
constexpr int64_t kChunkBytes = kChunk* Bits / 8;

// code * scale + offset for 16 outputs, by one FMA: the weight every path uses.
__attribute__((target("avx512f"), always_inline)) inline __m512 weights(__m512i code, __m512 scale,
                                                                        __m512 offset) {
  return _mm512_fmadd_ps(_mm512_cvtepi32_ps(code), scale, offset);
}

__attribute__((target("avx512f"), always_inline)) inline __m512i widen(const uint8_t* bytes) {
  return _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(bytes)));
}

// Outputs of a strip that exist (the last strip may be partial), as a store mask.
__attribute__((always_inline)) inline __mmask16 strip_mask(int64_t N, int64_t strip) {
  const int64_t valid = std::clamp<int64_t>(N - strip * S, 0, S);
  return __mmask16((1u << valid) - 1u);
}

// The first group of rows (x at xg: element (i, k) at xg[k * 12 + i]) times strips s and
// s + 1 (count 1: s alone), decoding the codes as it goes, in an R x 32 register tile (R:
// 12, or 8 for a group of at most 8 rows, which then spends no FMAs on empty rows; each
// row's sum is the same chain either way). With `tile` it also keeps the decoded weights
// there for the other groups: weight (n, k) at tile[k * 32 + (n - 16 s)] (zero for a
// missing second strip).
template <int Bits, int R>
__attribute__((target("avx512f"))) void first_group(const NBitsStrips& w, int64_t s, int64_t count,
                                                    const float* xg, int64_t rows, float* y,
                                                    int64_t ldy, __mmask16 mask0, __mmask16 mask1,
                                                    float* tile) {
  const int64_t blocks = w.K / w.block_size, chunks_per_block = w.block_size / kChunk;
  constexpr int64_t kBytes = kChunkBytes<Bits>;
  const int64_t q = s / kNBitsQuadStrips, first = s % kNBitsQuadStrips;
  if (tile && count < 2)
    for (int64_t k = 0; k < w.K; ++k) _mm512_storeu_ps(tile + k * 2 * S + S, _mm512_setzero_ps());
  __m512 acc[R][2];
  for (auto& row : acc) row[0] = row[1] = _mm512_setzero_ps();
  for (int64_t b = 0; b < blocks; ++b) {
    const QuadBlock qb{w.block(q, b), kBytes};
    for (int64_t c = 0; c < chunks_per_block; ++c)
      for (int64_t t = 0; t < count; ++t) {
        const __m512 scale = _mm512_loadu_ps(qb.scale(first + t));
        const __m512 offset = _mm512_loadu_ps(qb.offset(first + t));
        for (int64_t j = 0; j < kBytes; ++j) {
          const __m512i v = widen(qb.codes(c, j, first + t));
          constexpr int kCodes = Bits == 4 ? 2 : 1;  // codes per byte, in k order
          for (int h = 0; h < kCodes; ++h) {
            const __m512i code = Bits == 8 ? v
                                           : (h == 0 ? _mm512_and_si512(v, _mm512_set1_epi32(15))
                                                     : _mm512_srli_epi32(v, 4));
            const __m512 wv = weights(code, scale, offset);
            const int64_t k = (b * chunks_per_block + c) * kChunk + kCodes * j + h;
            if (tile) _mm512_storeu_ps(tile + k * 2 * S + t * S, wv);
            const float* x = xg + k * G;
#pragma GCC unroll 12
            for (int i = 0; i < R; ++i)
              acc[i][t] = _mm512_fmadd_ps(_mm512_set1_ps(x[i]), wv, acc[i][t]);
          }
        }
      }
  }
  for (int64_t i = 0; i < rows; ++i) {
    _mm512_mask_storeu_ps(y + i * ldy, mask0, acc[i][0]);
    _mm512_mask_storeu_ps(y + i * ldy + S, mask1, acc[i][1]);
  }
}

// Rows of one group (x at xg: element (i, k) at xg[k * 12 + i]) times a decoded pair of
// strips, in an R x 32 register tile (as in first_group); rows <= R and the strips'
// outputs that exist stored.
template <int R>
__attribute__((target("avx512f"))) void tile_rows(const float* tile, int64_t K, const float* xg,
                                                  int64_t rows, float* y, int64_t ldy,
                                                  __mmask16 mask0, __mmask16 mask1) {
  __m512 acc[R][2];
  for (auto& row : acc) row[0] = row[1] = _mm512_setzero_ps();
  for (int64_t k = 0; k < K; ++k) {
    const __m512 w0 = _mm512_loadu_ps(tile + k * 2 * S);
    const __m512 w1 = _mm512_loadu_ps(tile + k * 2 * S + S);
    const float* x = xg + k * G;
#pragma GCC unroll 12
    for (int i = 0; i < R; ++i) {
      const __m512 a = _mm512_set1_ps(x[i]);
      acc[i][0] = _mm512_fmadd_ps(a, w0, acc[i][0]);
      acc[i][1] = _mm512_fmadd_ps(a, w1, acc[i][1]);
    }
  }
  for (int64_t i = 0; i < rows; ++i) {
    _mm512_mask_storeu_ps(y + i * ldy, mask0, acc[i][0]);
    _mm512_mask_storeu_ps(y + i * ldy + S, mask1, acc[i][1]);
  }
}

template <int Bits>
void strips_gemm(const NBitsStrips& w, const float* xp, int64_t M, int64_t s0, int64_t s1, float* y,
                 int64_t ldy, float* scratch) {
  for (int64_t s = s0; s < s1; s += 2) {
    const int64_t count = std::min<int64_t>(2, s1 - s);
    const __mmask16 mask0 = strip_mask(w.N, s), mask1 = count > 1 ? strip_mask(w.N, s + 1) : 0;
    if (M <= kNarrowRows)
      first_group<Bits, kNarrowRows>(w, s, count, xp, M, y + s * S, ldy, mask0, mask1, nullptr);
    else
      first_group<Bits, G>(w, s, count, xp, std::min(G, M), y + s * S, ldy, mask0, mask1,
                           M > G ? scratch : nullptr);
    for (int64_t g = 1; g * G < M; ++g) {
      const int64_t rows = std::min(G, M - g * G);
      float* yg = y + g * G * ldy + s * S;
      if (rows <= kNarrowRows)
        tile_rows<kNarrowRows>(scratch, w.K, xp + g * w.K * G, rows, yg, ldy, mask0, mask1);
      else
        tile_rows<G>(scratch, w.K, xp + g * w.K * G, rows, yg, ldy, mask0, mask1);
    }
  }
}

#endif

}  // namespace

bool nbits_strips_available() {
#if defined(__x86_64__) || defined(__i386__)
  return best_kernel() == MicroKernel::kAvx512;  // NXRT_GEMM_KERNEL=avx2 turns it off
#else
  return false;
#endif
}

NBitsStrips NBitsStrips::pack(int64_t N, int64_t K, int64_t block_size, int64_t bits,
                              const uint8_t* codes, const float* scale, const float* neg_zp_scale) {
  NBitsStrips w;
  w.N = N, w.K = K, w.block_size = block_size, w.bits = bits;
  const int64_t bytes = kChunk * bits / 8, blocks = K / block_size;
  const int64_t chunks_per_block = block_size / kChunk, row_bytes = K * bits / 8;
  const int64_t quads = (w.strips() + kNBitsQuadStrips - 1) / kNBitsQuadStrips;
  w.storage.assign(size_t(quads * blocks * w.block_bytes() + 64), 0);
  uint8_t* data = const_cast<uint8_t*>(w.data());
  for (int64_t n = 0; n < N; ++n) {
    const int64_t strip = n / S, quad = strip / kNBitsQuadStrips, t = strip % kNBitsQuadStrips;
    for (int64_t b = 0; b < blocks; ++b) {
      uint8_t* base = data + (quad * blocks + b) * w.block_bytes();
      const QuadBlock qb{base, bytes};
      const_cast<float*>(qb.scale(t))[n % S] = scale[n * blocks + b];
      const_cast<float*>(qb.offset(t))[n % S] = neg_zp_scale[n * blocks + b];
      for (int64_t c = 0; c < chunks_per_block; ++c)
        for (int64_t j = 0; j < bytes; ++j)
          const_cast<uint8_t*>(qb.codes(c, j, t))[n % S] =
              codes[n * row_bytes + (b * chunks_per_block + c) * bytes + j];
    }
  }
  return w;
}

void nbits_strips_prepare(const float* x, int64_t M, int64_t K, float* xp) {
  for (int64_t g = 0; g * G < M; ++g)
    for (int64_t k = 0; k < K; ++k)
      for (int64_t i = 0; i < G; ++i) {
        const int64_t m = g * G + i;
        xp[(g * K + k) * G + i] = m < M ? x[m * K + k] : 0.0f;
      }
}

void nbits_strips_gemm(const NBitsStrips& w, const float* xp, int64_t M, int64_t s0, int64_t s1,
                       float* y, int64_t ldy, float* scratch) {
#if defined(__x86_64__) || defined(__i386__)
  if (w.bits == 8)
    strips_gemm<8>(w, xp, M, s0, s1, y, ldy, scratch);
  else
    strips_gemm<4>(w, xp, M, s0, s1, y, ldy, scratch);
#else
  (void)w, (void)xp, (void)M, (void)s0, (void)s1, (void)y, (void)ldy, (void)scratch;
#endif
}

}  // namespace nxrt::gemm
