#include "ep/cpu/gemm/nbits_gemv.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "ep/cpu/gemm/gemm.h"

namespace nxrt::gemm {
namespace {

constexpr int64_t kChunk = 32;  // elements of one 16-byte run of codes

// One output: per chunk, the dot of its codes with the prepared x, times the block's
// scale; per block, the zero point times the block's sum of x.
float q4_row_portable(const Q4Weights& w, const float* xp, int64_t n) {
  const int64_t blocks = w.K / w.block_size, chunks_per_block = w.block_size / kChunk;
  const int64_t chunk_bytes = kChunk * w.bits / 8;
  const uint8_t* codes = w.codes + n * (w.K * w.bits / 8);
  const float* sums = xp + w.K;
  float total = 0.0f;
  for (int64_t b = 0; b < blocks; ++b) {
    float dot = 0.0f;
    for (int64_t c = 0; c < chunks_per_block; ++c) {
      const int64_t chunk = b * chunks_per_block + c;
      const uint8_t* q = codes + chunk * chunk_bytes;
      const float* x = xp + chunk * kChunk;
      if (w.bits == 8) {
        for (int i = 0; i < 32; ++i) dot += float(q[i]) * x[i];
      } else {
        for (int i = 0; i < 16; ++i) dot += float(q[i] & 15) * x[i] + float(q[i] >> 4) * x[16 + i];
      }
    }
    total += dot * w.scale[n * blocks + b] + w.neg_zp_scale[n * blocks + b] * sums[b];
  }
  return total;
}

#if defined(__x86_64__) || defined(__i386__)
__attribute__((target("avx2,fma"))) inline __m256 codes_to_floats(__m128i bytes) {
  return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(bytes));
}

// The 32 codes of one chunk as four vectors of 8 floats: byte order for 8 bits; for 4 bits
// the low nibbles (even elements) then the high ones (odd elements).
template <int Bits>
__attribute__((target("avx2,fma"), always_inline)) inline void chunk_codes(const uint8_t* q,
                                                                           __m256 (&f)[4]) {
  __m128i part[4];
  if constexpr (Bits == 8) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q + 16));
    part[0] = a, part[1] = _mm_srli_si128(a, 8), part[2] = b, part[3] = _mm_srli_si128(b, 8);
  } else {
    const __m128i low4 = _mm_set1_epi8(15);
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
    const __m128i lo = _mm_and_si128(v, low4), hi = _mm_and_si128(_mm_srli_epi16(v, 4), low4);
    part[0] = lo, part[1] = _mm_srli_si128(lo, 8), part[2] = hi, part[3] = _mm_srli_si128(hi, 8);
  }
  for (int i = 0; i < 4; ++i) f[i] = codes_to_floats(part[i]);
}

// Each code times its block's scale, times x, into four accumulators: four independent
// chains of one FMA per chunk. (Summing a block's products first and scaling the sum
// once chains every block's FMAs behind the previous block's: half the speed.)
template <int Bits>
__attribute__((target("avx2,fma"))) void rows_avx2(const Q4Weights& w, const float* xp, int64_t n0,
                                                   int64_t n1, float* y) {
  const int64_t blocks = w.K / w.block_size, chunks_per_block = w.block_size / kChunk;
  constexpr int64_t kChunkBytes = kChunk * Bits / 8;
  const float* sums = xp + w.K;
  for (int64_t n = n0; n < n1; ++n) {
    const uint8_t* codes = w.codes + n * (w.K * Bits / 8);
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
                     _mm256_setzero_ps()};
    float zero_terms = 0.0f;
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t at = n * blocks + b;
      const __m256 scale = _mm256_set1_ps(w.scale[at]);
      for (int64_t c = 0; c < chunks_per_block; ++c) {
        const int64_t chunk = b * chunks_per_block + c;
        __m256 f[4];
        chunk_codes<Bits>(codes + chunk * kChunkBytes, f);
        const float* x = xp + chunk * kChunk;
        for (int i = 0; i < 4; ++i)
          acc[i] = _mm256_fmadd_ps(_mm256_mul_ps(f[i], scale), _mm256_loadu_ps(x + 8 * i), acc[i]);
      }
      zero_terms += w.neg_zp_scale[at] * sums[b];
    }
    const __m256 all = _mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3]));
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(all), _mm256_extractf128_ps(all, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
    y[n] = _mm_cvtss_f32(s) + zero_terms;
  }
}
#endif

}  // namespace

void q4_prepare_row(const float* x, int64_t K, int64_t block_size, int64_t bits, float* prepared) {
  for (int64_t c = 0; c < K; c += kChunk)
    for (int i = 0; i < 16; ++i) {
      prepared[c + i] = bits == 8 ? x[c + i] : x[c + 2 * i];
      prepared[c + 16 + i] = bits == 8 ? x[c + 16 + i] : x[c + 2 * i + 1];
    }
  float* sums = prepared + K;
  for (int64_t b = 0; b < K / block_size; ++b) {
    float s = 0.0f;
    for (int64_t k = b * block_size; k < (b + 1) * block_size; ++k) s += x[k];
    sums[b] = s;
  }
}

void q4_gemv(const Q4Weights& w, const float* prepared, int64_t n0, int64_t n1, float* y) {
#if defined(__x86_64__) || defined(__i386__)
  // NXRT_GEMM_KERNEL=portable (best_kernel) takes the portable loop, for tests.
  if (has_avx2_fma() && best_kernel() != MicroKernel::kPortable)
    return w.bits == 8 ? rows_avx2<8>(w, prepared, n0, n1, y)
                       : rows_avx2<4>(w, prepared, n0, n1, y);
#endif
  for (int64_t n = n0; n < n1; ++n) y[n] = q4_row_portable(w, prepared, n);
}

}  // namespace nxrt::gemm
