#include "ep/cpu/gemm/nbits_gemv.h"

#include <algorithm>

#include "ep/cpu/gemm/gemm.h"
#include "ep/cpu/x86_simd.h"

namespace nxrt::gemm {
namespace {

constexpr int64_t kChunk = 32;  // elements of one 16-byte run of codes
constexpr int64_t kPrefetchBytes = 2048;

// One output: per chunk, the dot of its codes with the prepared x, times the block's
// scale; per block, the zero point times the block's sum of x.
float row_portable(const NBitsWeights& w, const float* xp, int64_t n) {
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

// The 32 codes of one chunk as four vectors of 8 floats: byte order for 8 bits; for 4 bits
// the low nibbles (even elements) then the high ones (odd elements). Each 16 bytes are
// broadcast to both 128-bit halves and a byte shuffle puts 8 of them into the 8 dword
// lanes (zeros above): two single-cycle instructions per 8 codes, where widening with
// vpmovzxbd needed a lane-crossing one after moving the bytes down.
template <int Bits>
__attribute__((target("avx2,fma"), always_inline)) inline void chunk_codes(const uint8_t* q,
                                                                           __m256 (&f)[4]) {
  const __m256i first8 =
      _mm256_setr_epi8(0, -1, -1, -1, 1, -1, -1, -1, 2, -1, -1, -1, 3, -1, -1, -1, 4, -1, -1, -1, 5,
                       -1, -1, -1, 6, -1, -1, -1, 7, -1, -1, -1);
  const __m256i next8 = _mm256_add_epi32(first8, _mm256_set1_epi32(8));
  const __m256i v =
      _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q)));
  const __m256i a = _mm256_shuffle_epi8(v, first8), b = _mm256_shuffle_epi8(v, next8);
  if constexpr (Bits == 8) {
    const __m256i w =
        _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q + 16)));
    f[0] = _mm256_cvtepi32_ps(a);
    f[1] = _mm256_cvtepi32_ps(b);
    f[2] = _mm256_cvtepi32_ps(_mm256_shuffle_epi8(w, first8));
    f[3] = _mm256_cvtepi32_ps(_mm256_shuffle_epi8(w, next8));
  } else {
    const __m256i low4 = _mm256_set1_epi32(15);
    f[0] = _mm256_cvtepi32_ps(_mm256_and_si256(a, low4));
    f[1] = _mm256_cvtepi32_ps(_mm256_and_si256(b, low4));
    f[2] = _mm256_cvtepi32_ps(_mm256_srli_epi32(a, 4));  // a byte's high nibble: no mask
    f[3] = _mm256_cvtepi32_ps(_mm256_srli_epi32(b, 4));
  }
}

// Each code times its block's scale, times x, into four accumulators: four independent
// chains of one FMA per chunk. (Summing a block's products first and scaling the sum
// once chains every block's FMAs behind the previous block's: half the speed.)
template <int Bits>
__attribute__((target("avx2,fma"))) void rows_avx2(const NBitsWeights& w, const float* xp,
                                                   int64_t n0, int64_t n1, float* y) {
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
        // Codes a few rows ahead, a cache line at a time: the weights of a decode step
        // come from L3 or memory, and the hardware prefetcher alone keeps this loop
        // waiting (576 x 1536 4-bit weights, 90 of them: 178 -> 68 us each).
        if ((chunk * kChunkBytes) % 64 == 0)
          _mm_prefetch(reinterpret_cast<const char*>(codes + chunk * kChunkBytes) + kPrefetchBytes,
                       _MM_HINT_T0);
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

// R rows at once: each chunk's codes decoded and scaled once, then one FMA per row and
// 8 codes into two accumulators per row (R = 4: 8 accumulators, 4 decoded vectors, the
// scale and an x load fit the 16 ymm registers).
template <int Bits, int R>
__attribute__((target("avx2,fma"))) void multi_rows_avx2(const NBitsWeights& w, const float* xp,
                                                         int64_t stride, int64_t n0, int64_t n1,
                                                         float* y, int64_t ldy) {
  const int64_t blocks = w.K / w.block_size, chunks_per_block = w.block_size / kChunk;
  constexpr int64_t kChunkBytes = kChunk * Bits / 8;
  for (int64_t n = n0; n < n1; ++n) {
    const uint8_t* codes = w.codes + n * (w.K * Bits / 8);
    __m256 acc[R][2];
    for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
    float zero_terms[R] = {};
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t at = n * blocks + b;
      const __m256 scale = _mm256_set1_ps(w.scale[at]);
      for (int64_t c = 0; c < chunks_per_block; ++c) {
        const int64_t chunk = b * chunks_per_block + c;
        if ((chunk * kChunkBytes) % 64 == 0)
          _mm_prefetch(reinterpret_cast<const char*>(codes + chunk * kChunkBytes) + kPrefetchBytes,
                       _MM_HINT_T0);
        __m256 f[4];
        chunk_codes<Bits>(codes + chunk * kChunkBytes, f);
        for (int i = 0; i < 4; ++i) f[i] = _mm256_mul_ps(f[i], scale);
        for (int r = 0; r < R; ++r) {
          const float* x = xp + r * stride + chunk * kChunk;
          for (int i = 0; i < 4; ++i)
            acc[r][i & 1] = _mm256_fmadd_ps(f[i], _mm256_loadu_ps(x + 8 * i), acc[r][i & 1]);
        }
      }
      for (int r = 0; r < R; ++r) zero_terms[r] += w.neg_zp_scale[at] * xp[r * stride + w.K + b];
    }
    for (int r = 0; r < R; ++r) {
      const __m256 all = _mm256_add_ps(acc[r][0], acc[r][1]);
      __m128 s = _mm_add_ps(_mm256_castps256_ps128(all), _mm256_extractf128_ps(all, 1));
      s = _mm_add_ps(s, _mm_movehl_ps(s, s));
      s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
      y[r * ldy + n] = _mm_cvtss_f32(s) + zero_terms[r];
    }
  }
}

// AVX-512. The product is bound by the float work of decoding, and on CPUs with one
// 512-bit FMA unit every float instruction shares one port. So 4-bit codes are decoded
// by a lookup, not a conversion: per block a 16-entry table of (code - zero point) *
// scale (one FMA over 0..15), and vpermps (the shuffle port) maps each code to its
// weight, zero point and scale included; a chunk then costs two lookups and two FMAs
// per row. A chunk's 32 codes widen with one vpmovzxbd from 16 bytes: the low nibbles
// (the even elements) index the table as they are, since vpermps reads only an index's
// low 4 bits, and a shift brings the high ones down. 8-bit codes convert and scale.
template <int Bits, int R, int A, int First>
__attribute__((target("avx512f"), always_inline)) inline void chunk_rows(
    const uint8_t* codes, const float* scale, const float* neg_zp_scale, int shift, const float* xp,
    int64_t stride, int64_t c, __m512 (&acc)[R][A]) {
  constexpr int64_t kChunkBytes = kChunk * Bits / 8;
  // Codes a few rows ahead, a cache line at a time (see rows_avx2).
  if ((c * kChunkBytes) % 64 == 0)
    _mm_prefetch(reinterpret_cast<const char*>(codes + c * kChunkBytes) + kPrefetchBytes,
                 _MM_HINT_T0);
  const uint8_t* q = codes + c * kChunkBytes;
  const int64_t block = c >> shift;
  const __m512i a = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q)));
  __m512 low, high;
  if constexpr (Bits == 4) {
    const __m512 codes16 = _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512 table =
        _mm512_fmadd_ps(codes16, _mm512_set1_ps(scale[block]), _mm512_set1_ps(neg_zp_scale[block]));
    low = _mm512_permutexvar_ps(a, table);
    high = _mm512_permutexvar_ps(_mm512_srli_epi32(a, 4), table);
  } else {
    const __m512i b =
        _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q + 16)));
    const __m512 s = _mm512_set1_ps(scale[block]);
    low = _mm512_mul_ps(_mm512_cvtepi32_ps(a), s);
    high = _mm512_mul_ps(_mm512_cvtepi32_ps(b), s);
  }
  for (int r = 0; r < R; ++r) {
    const float* x = xp + r * stride + c * kChunk;
    acc[r][First] = _mm512_fmadd_ps(low, _mm512_loadu_ps(x), acc[r][First]);
    acc[r][First + 1] = _mm512_fmadd_ps(high, _mm512_loadu_ps(x + 16), acc[r][First + 1]);
  }
}

// R rows (1 to 4): each chunk decoded once, then two FMAs per row, into four accumulators
// per row (low and high halves, even and odd chunks) so a chain gets one FMA every two
// chunks, less than the FMA's latency.
template <int Bits, int R>
__attribute__((target("avx512f"))) void rows_avx512(const NBitsWeights& w, const float* xp,
                                                    int64_t stride, int64_t n0, int64_t n1,
                                                    float* y, int64_t ldy) {
  const int64_t blocks = w.K / w.block_size, chunks = w.K / kChunk;
  int shift = 0;  // chunk -> block: block_size / 32 is a power of two
  while ((kChunk << shift) < w.block_size) ++shift;
  for (int64_t n = n0; n < n1; ++n) {
    const uint8_t* codes = w.codes + n * (w.K * Bits / 8);
    const float* scale = w.scale + n * blocks;
    const float* neg_zp_scale = w.neg_zp_scale + n * blocks;
    constexpr int A = 4;
    __m512 acc[R][A];
    for (int r = 0; r < R; ++r)
      for (int i = 0; i < A; ++i) acc[r][i] = _mm512_setzero_ps();
    int64_t c = 0;
    for (; c + 2 <= chunks; c += 2) {
      chunk_rows<Bits, R, A, 0>(codes, scale, neg_zp_scale, shift, xp, stride, c, acc);
      chunk_rows<Bits, R, A, A - 2>(codes, scale, neg_zp_scale, shift, xp, stride, c + 1, acc);
    }
    if (c < chunks)
      chunk_rows<Bits, R, A, 0>(codes, scale, neg_zp_scale, shift, xp, stride, c, acc);
    for (int r = 0; r < R; ++r) {
      float zero_terms = 0.0f;  // 8 bits: per block, -zero_point * scale times x's sum
      if constexpr (Bits == 8)
        for (int64_t b = 0; b < blocks; ++b)
          zero_terms += neg_zp_scale[b] * xp[r * stride + w.K + b];
      const __m512 sum =
          _mm512_add_ps(_mm512_add_ps(acc[r][0], acc[r][1]), _mm512_add_ps(acc[r][2], acc[r][3]));
      y[r * ldy + n] = _mm512_reduce_add_ps(sum) + zero_terms;
    }
  }
}

// One row through rows_avx2 (four accumulators), in multi_rows_avx2's signature.
template <int Bits>
void one_row_avx2(const NBitsWeights& w, const float* xp, int64_t, int64_t n0, int64_t n1, float* y,
                  int64_t) {
  rows_avx2<Bits>(w, xp, n0, n1, y);
}

template <int Bits>
void multi_rows_dispatch(const NBitsWeights& w, const float* xp, int64_t stride, int64_t rows,
                         int64_t n0, int64_t n1, float* y, int64_t ldy, bool avx512) {
  using Rows =
      void (*)(const NBitsWeights&, const float*, int64_t, int64_t, int64_t, float*, int64_t);
  // By rows - 1 (1 to kNBitsRowsAtOnce).
  static constexpr Rows kAvx512[] = {rows_avx512<Bits, 1>, rows_avx512<Bits, 2>,
                                     rows_avx512<Bits, 3>, rows_avx512<Bits, 4>};
  static constexpr Rows kAvx2[] = {one_row_avx2<Bits>, multi_rows_avx2<Bits, 2>,
                                   multi_rows_avx2<Bits, 3>, multi_rows_avx2<Bits, 4>};
  const size_t at = size_t(std::clamp<int64_t>(rows, 1, kNBitsRowsAtOnce) - 1);
  (avx512 ? kAvx512 : kAvx2)[at](w, xp, stride, n0, n1, y, ldy);
}
#endif

// The kernel a call takes: `requested` (kAuto: the best here), limited to what runs here.
MicroKernel nbits_kernel(MicroKernel requested) {
  const MicroKernel k = requested == MicroKernel::kAuto ? best_kernel() : requested;
  if ((k == MicroKernel::kAvx512 || k == MicroKernel::kAvx512x48) && has_avx512f())
    return MicroKernel::kAvx512;
  if (k != MicroKernel::kPortable && has_avx2_fma()) return MicroKernel::kAvx2;
  return MicroKernel::kPortable;
}

}  // namespace

void nbits_gemm_rows(const NBitsWeights& w, const float* prepared, int64_t prepared_stride,
                     int64_t rows, int64_t n0, int64_t n1, float* y, int64_t ldy,
                     MicroKernel kernel) {
#if defined(__x86_64__) || defined(__i386__)
  if (const MicroKernel k = nbits_kernel(kernel); k != MicroKernel::kPortable) {
    const bool avx512 = k == MicroKernel::kAvx512;
    return w.bits == 8
               ? multi_rows_dispatch<8>(w, prepared, prepared_stride, rows, n0, n1, y, ldy, avx512)
               : multi_rows_dispatch<4>(w, prepared, prepared_stride, rows, n0, n1, y, ldy, avx512);
  }
#else
  (void)kernel;
#endif
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t n = n0; n < n1; ++n)
      y[r * ldy + n] = row_portable(w, prepared + r * prepared_stride, n);
}

void nbits_prepare_row(const float* x, int64_t K, int64_t block_size, int64_t bits,
                       float* prepared) {
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

void nbits_gemv(const NBitsWeights& w, const float* prepared, int64_t n0, int64_t n1, float* y,
                MicroKernel kernel) {
  nbits_gemm_rows(w, prepared, 0, 1, n0, n1, y, 0, kernel);
}

}  // namespace nxrt::gemm
