#include "ep/cpu/gemm/nbits_q8.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "ep/cpu/gemm/gemm.h"
#include "ep/cpu/gemm/qgemm.h"
#include "ep/cpu/x86_simd.h"

namespace nxrt::gemm {
namespace {

constexpr int64_t kChunk = 32;      // k per x scale, and per 256 bytes of a strip's codes
constexpr int64_t kRowsAtOnce = 8;  // rows sharing each strip's decoded codes
constexpr int64_t kPrefetchBytes = 4096;

// Where the parts of a prepared row lie (bytes from its start).
struct RowLayout {
  int64_t K, blocks;
  RowLayout(int64_t k, int64_t block_size) : K(k), blocks(k / block_size) {}
  int64_t scales_at() const { return (K + 63) / 64 * 64; }
  int64_t sums_at() const { return scales_at() + K / kChunk * int64_t(sizeof(float)); }
  int64_t bytes() const { return (sums_at() + blocks * int64_t(sizeof(float)) + 63) / 64 * 64; }
};

// The 4-bit code of element k of row n.
inline uint8_t code_at(const uint8_t* codes, int64_t K, int64_t bits, int64_t n, int64_t k) {
  if (bits == 8) return codes[n * K + k];
  const uint8_t byte = codes[n * (K / 2) + k / 2];
  return k % 2 ? byte >> 4 : byte & 15;
}

float quantize_portable(const float* x, int64_t count, int8_t* q) {
  float max_abs = 0.0f;
  bool finite = true;
  for (int64_t i = 0; i < count; ++i) {
    finite = finite && std::isfinite(x[i]);
    max_abs = std::max(max_abs, std::fabs(x[i]));
  }
  const float inverse = finite && max_abs > 0.0f ? 127.0f / max_abs : 0.0f;
  for (int64_t i = 0; i < count; ++i) q[i] = int8_t(std::lrint(x[i] * inverse));
  return finite ? max_abs / 127.0f : std::numeric_limits<float>::quiet_NaN();
}

#if defined(__x86_64__) || defined(__i386__)
// The same 16 at a time: vcvtps2dq rounds as lrint does (to nearest even).
__attribute__((target("avx512f,avx512bw"))) float quantize_avx512(const float* x, int64_t count,
                                                                  int8_t* q) {
  const __m512 infinity = _mm512_set1_ps(std::numeric_limits<float>::infinity());
  __m512 max_abs = _mm512_setzero_ps();
  __mmask16 not_finite = 0;
  for (int64_t i = 0; i < count; i += 16) {
    const __m512 a = _mm512_abs_ps(_mm512_loadu_ps(x + i));
    not_finite |= _mm512_cmp_ps_mask(a, infinity, _CMP_NLT_UQ);
    max_abs = _mm512_max_ps(max_abs, a);
  }
  if (not_finite) {
    std::memset(q, 0, size_t(count));
    return std::numeric_limits<float>::quiet_NaN();
  }
  const float largest = _mm512_reduce_max_ps(max_abs);
  const __m512 inverse = _mm512_set1_ps(largest > 0.0f ? 127.0f / largest : 0.0f);
  for (int64_t i = 0; i < count; i += 16)
    _mm_storeu_si128(
        reinterpret_cast<__m128i*>(q + i),
        _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(x + i), inverse))));
  return largest / 127.0f;
}
#endif

#if defined(__x86_64__) || defined(__i386__)

inline int32_t four_bytes(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

// R rows against one strip: per 32 k, the 256 bytes of codes split into 4 vectors of low
// and 4 of high nibbles, then per row 8 vpdpbusd against x's 4 values broadcast, the 32-bit
// sums converted, times x's scale, times the 16 outputs' block scales into the row's
// accumulator; per block, the offsets times the block's sum of x'.
template <int Bits, int R>
__attribute__((target("avx512f,avx512bw,avx512vnni"))) void strip_rows(
    const NBitsQ8Strips& w, int64_t strip, const uint8_t* prepared, int64_t row_bytes,
    int64_t outputs, float* y, int64_t ldy) {
  const RowLayout layout(w.K, w.block_size);
  const int64_t chunks_per_block = w.block_size / kChunk;
  const __m512i low4 = _mm512_set1_epi8(15);
  __m512 acc[R];
  for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_ps();
  for (int64_t b = 0; b < layout.blocks; ++b) {
    const uint8_t* block_scales = w.scales(strip, b);
    const __m512 scale = _mm512_loadu_ps(block_scales);
    // zero point x scale: the offsets, subtracted per block times the block's sum of x'.
    const __m512 zero_scale =
        _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(
                          _mm_loadu_si128(reinterpret_cast<const __m128i*>(block_scales + 64)))),
                      scale);
    for (int64_t cc = 0; cc < chunks_per_block; ++cc) {
      const int64_t c = b * chunks_per_block + cc;
      const uint8_t* q = w.codes(strip, c);
      // The codes a few blocks ahead, a line at a time: a decode step streams them from
      // memory, and the hardware prefetcher alone leaves this loop waiting.
      for (int line = 0; line < 4 * Bits / 4; ++line)
        _mm_prefetch(reinterpret_cast<const char*>(q) + kPrefetchBytes + 64 * line, _MM_HINT_T0);
      // low[j]: the codes of k 8j..8j+3, high[j]: 8j+4..8j+7.
      __m512i low[4], high[4];
      for (int j = 0; j < 4; ++j) {
        if constexpr (Bits == 4) {
          const __m512i v = _mm512_load_si512(q + 64 * j);
          low[j] = _mm512_and_si512(v, low4);
          high[j] = _mm512_and_si512(_mm512_srli_epi16(v, 4), low4);
        } else {
          low[j] = _mm512_load_si512(q + 128 * j);
          high[j] = _mm512_load_si512(q + 128 * j + 64);
        }
      }
      for (int r = 0; r < R; ++r) {
        const uint8_t* row = prepared + r * row_bytes;
        const auto* x = reinterpret_cast<const int8_t*>(row) + c * kChunk;
        // Two chains of four (a vpdpbusd waits for the one before it in its chain).
        __m512i sum_low = _mm512_setzero_si512(), sum_high = _mm512_setzero_si512();
        for (int j = 0; j < 4; ++j) {
          sum_low = _mm512_dpbusd_epi32(sum_low, low[j], _mm512_set1_epi32(four_bytes(x + 8 * j)));
          sum_high =
              _mm512_dpbusd_epi32(sum_high, high[j], _mm512_set1_epi32(four_bytes(x + 8 * j + 4)));
        }
        const __m512i sum = _mm512_add_epi32(sum_low, sum_high);
        const float x_scale = reinterpret_cast<const float*>(row + layout.scales_at())[c];
        acc[r] = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(sum), _mm512_set1_ps(x_scale)),
                                 scale, acc[r]);
      }
    }
    for (int r = 0; r < R; ++r) {
      const float sum =
          reinterpret_cast<const float*>(prepared + r * row_bytes + layout.sums_at())[b];
      acc[r] = _mm512_fnmadd_ps(zero_scale, _mm512_set1_ps(sum), acc[r]);
    }
  }
  const auto mask = __mmask16((1u << outputs) - 1);
  for (int r = 0; r < R; ++r)
    _mm512_mask_storeu_ps(y + r * ldy + strip * kNBitsQ8StripOutputs, mask, acc[r]);
}

// The same on AVX2, each half of the strip (8 outputs) in turn: vpmaddubsw multiplies the
// codes (unsigned) by x (signed) and adds pairs into 16-bit sums (each at most 2 x 15 x
// 127, so a chunk's 8 add without overflow), vpmaddwd by ones makes them the 32-bit sums
// of 4 products vpdpbusd gives. The integer sums and every float operation per output are
// the AVX-512 kernel's, so the results are the same bits.
template <int Bits, int R>
__attribute__((target("avx2,fma"))) void strip_rows_avx2(const NBitsQ8Strips& w, int64_t strip,
                                                         const uint8_t* prepared, int64_t row_bytes,
                                                         int64_t outputs, float* y, int64_t ldy) {
  const RowLayout layout(w.K, w.block_size);
  const int64_t chunks_per_block = w.block_size / kChunk;
  const __m256i low4 = _mm256_set1_epi8(15);
  const __m256i ones = _mm256_set1_epi16(1);
  alignas(32) float out[R][kNBitsQ8StripOutputs];
  for (int half = 0; half < 2; ++half) {
    __m256 acc[R];
    for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_ps();
    for (int64_t b = 0; b < layout.blocks; ++b) {
      const uint8_t* block_scales = w.scales(strip, b);
      const __m256 scale = _mm256_loadu_ps(reinterpret_cast<const float*>(block_scales) + 8 * half);
      const __m256 zero_scale = _mm256_mul_ps(
          _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(
              _mm_loadl_epi64(reinterpret_cast<const __m128i*>(block_scales + 64 + 8 * half)))),
          scale);
      for (int64_t cc = 0; cc < chunks_per_block; ++cc) {
        const int64_t c = b * chunks_per_block + cc;
        const uint8_t* q = w.codes(strip, c);
        if (half == 0)
          for (int line = 0; line < 4 * Bits / 4; ++line)
            _mm_prefetch(reinterpret_cast<const char*>(q) + kPrefetchBytes + 64 * line,
                         _MM_HINT_T0);
        if constexpr (Bits == 8) {
          // 8-bit codes (up to 255) would overflow vpmaddubsw's pairs: each splits into
          // nibbles, code = 16 high + low, and the high sums are weighted by 16 in 32 bits.
          const __m256i sixteens = _mm256_set1_epi16(16);
          for (int r = 0; r < R; ++r) {
            const uint8_t* row = prepared + r * row_bytes;
            const auto* x = reinterpret_cast<const int8_t*>(row) + c * kChunk;
            __m256i low_pairs = _mm256_setzero_si256(), high_pairs = _mm256_setzero_si256();
            for (int m = 0; m < 8; ++m) {
              const __m256i v =
                  _mm256_load_si256(reinterpret_cast<const __m256i*>(q + 64 * m + 32 * half));
              const __m256i xm = _mm256_set1_epi32(four_bytes(x + 4 * m));
              low_pairs =
                  _mm256_add_epi16(low_pairs, _mm256_maddubs_epi16(_mm256_and_si256(v, low4), xm));
              high_pairs = _mm256_add_epi16(
                  high_pairs,
                  _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(v, 4), low4), xm));
            }
            const __m256i sum = _mm256_add_epi32(_mm256_madd_epi16(low_pairs, ones),
                                                 _mm256_madd_epi16(high_pairs, sixteens));
            const float x_scale = reinterpret_cast<const float*>(row + layout.scales_at())[c];
            acc[r] = _mm256_fmadd_ps(
                _mm256_mul_ps(_mm256_cvtepi32_ps(sum), _mm256_set1_ps(x_scale)), scale, acc[r]);
          }
          continue;
        }
        __m256i low[4], high[4];
        for (int j = 0; j < 4; ++j) {
          const __m256i v =
              _mm256_load_si256(reinterpret_cast<const __m256i*>(q + 64 * j + 32 * half));
          low[j] = _mm256_and_si256(v, low4);
          high[j] = _mm256_and_si256(_mm256_srli_epi16(v, 4), low4);
        }
        for (int r = 0; r < R; ++r) {
          const uint8_t* row = prepared + r * row_bytes;
          const auto* x = reinterpret_cast<const int8_t*>(row) + c * kChunk;
          __m256i pairs = _mm256_setzero_si256();
          for (int j = 0; j < 4; ++j) {
            pairs = _mm256_add_epi16(
                pairs, _mm256_maddubs_epi16(low[j], _mm256_set1_epi32(four_bytes(x + 8 * j))));
            pairs = _mm256_add_epi16(
                pairs, _mm256_maddubs_epi16(high[j], _mm256_set1_epi32(four_bytes(x + 8 * j + 4))));
          }
          const __m256i sum = _mm256_madd_epi16(pairs, ones);
          const float x_scale = reinterpret_cast<const float*>(row + layout.scales_at())[c];
          acc[r] = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(sum), _mm256_set1_ps(x_scale)),
                                   scale, acc[r]);
        }
      }
      for (int r = 0; r < R; ++r) {
        const float sum =
            reinterpret_cast<const float*>(prepared + r * row_bytes + layout.sums_at())[b];
        acc[r] = _mm256_fnmadd_ps(zero_scale, _mm256_set1_ps(sum), acc[r]);
      }
    }
    for (int r = 0; r < R; ++r) _mm256_store_ps(out[r] + 8 * half, acc[r]);
  }
  for (int r = 0; r < R; ++r)
    std::memcpy(y + r * ldy + strip * kNBitsQ8StripOutputs, out[r],
                size_t(outputs) * sizeof(float));
}

#endif

}  // namespace

namespace {

enum class Q8Path { kNone, kAvx2, kAvx512 };

// The kernel a call takes: `requested` (kAuto: the best here), limited to what runs here.
Q8Path q8_path(MicroKernel requested) {
#if defined(__x86_64__) || defined(__i386__)
  const MicroKernel k = requested == MicroKernel::kAuto ? best_kernel() : requested;
  if ((k == MicroKernel::kAvx512 || k == MicroKernel::kAvx512x48) && has_avx512f() &&
      has_avx512_vnni())
    return Q8Path::kAvx512;
  if (k != MicroKernel::kPortable && has_avx2_fma()) return Q8Path::kAvx2;
#else
  (void)requested;
#endif
  return Q8Path::kNone;
}

}  // namespace

bool nbits_q8_available(MicroKernel kernel) { return q8_path(kernel) != Q8Path::kNone; }

float nbits_q8_quantize(const float* x, int64_t count, int8_t* q) {
#if defined(__x86_64__) || defined(__i386__)
  static const bool avx512 = has_avx512_vnni();
  if (avx512) return quantize_avx512(x, count, q);
#endif
  return quantize_portable(x, count, q);
}

NBitsQ8Strips NBitsQ8Strips::pack(int64_t N, int64_t K, int64_t block_size, int64_t bits,
                                  const uint8_t* codes, const float* scale,
                                  const uint8_t* zero_point) {
  NBitsQ8Strips w;
  w.N = N;
  w.K = K;
  w.block_size = block_size;
  w.bits = bits;
  const int64_t blocks = w.blocks();
  w.storage.assign(size_t(w.strips() * w.strip_bytes() + 64), 0);
  auto* base = const_cast<uint8_t*>(w.data());
  for (int64_t n = 0; n < N; ++n) {  // padding outputs keep zero codes and scales
    const int64_t s = n / kNBitsQ8StripOutputs, o = n % kNBitsQ8StripOutputs;
    uint8_t* strip = base + s * w.strip_bytes();
    for (int64_t b = 0; b < blocks; ++b) {
      uint8_t* block_scales = strip + b * kScaleBytes;
      std::memcpy(block_scales + o * int64_t(sizeof(float)), scale + n * blocks + b, sizeof(float));
      block_scales[64 + o] = zero_point[n * blocks + b];
    }
    for (int64_t c = 0; c < K / kChunk; ++c) {
      uint8_t* dst = strip + w.codes_at() + c * w.chunk_bytes() + o * 4;
      if (bits == 8) {  // vector m: k = 4m + t at byte 4 * o + t
        const uint8_t* src = codes + n * K + c * kChunk;
        for (int64_t m = 0; m < 8; ++m)
          for (int64_t t = 0; t < 4; ++t) dst[m * 64 + t] = src[4 * m + t];
        continue;
      }
      const uint8_t* src = codes + n * (K / 2) + c * (kChunk / 2);
      uint8_t code[kChunk];
      for (int64_t i = 0; i < kChunk / 2; ++i) {
        code[2 * i] = src[i] & 15;
        code[2 * i + 1] = src[i] >> 4;
      }
      // Vector j: k = 8j + t (t < 4) in the low nibble of byte 4 * o + t, 8j + 4 + t in
      // its high one.
      for (int64_t j = 0; j < 4; ++j)
        for (int64_t t = 0; t < 4; ++t)
          dst[j * 64 + t] = uint8_t(code[8 * j + t] | (code[8 * j + 4 + t] << 4));
    }
  }
  return w;
}

int64_t nbits_q8_row_bytes(int64_t K, int64_t block_size) {
  return RowLayout(K, block_size).bytes();
}

void nbits_q8_prepare(const float* x, int64_t K, int64_t block_size, uint8_t* row) {
  const RowLayout layout(K, block_size);
  std::memset(row, 0, size_t(layout.bytes()));
  auto* values = reinterpret_cast<int8_t*>(row);
  auto* scales = reinterpret_cast<float*>(row + layout.scales_at());
  auto* sums = reinterpret_cast<float*>(row + layout.sums_at());
  for (int64_t b = 0; b < layout.blocks; ++b) {
    const float scale = nbits_q8_quantize(x + b * block_size, block_size, values + b * block_size);
    int32_t sum = 0;
    for (int64_t i = b * block_size; i < (b + 1) * block_size; ++i) sum += values[i];
    sums[b] = float(sum) * scale;
    for (int64_t c = b * block_size / kChunk; c < (b + 1) * block_size / kChunk; ++c)
      scales[c] = scale;
  }
}

void nbits_q8_gemm(const NBitsQ8Strips& w, const uint8_t* prepared, int64_t rows, int64_t s0,
                   int64_t s1, float* y, int64_t ldy, MicroKernel kernel) {
#if defined(__x86_64__) || defined(__i386__)
  using Rows =
      void (*)(const NBitsQ8Strips&, int64_t, const uint8_t*, int64_t, int64_t, float*, int64_t);
  static constexpr Rows kAvx512[2][8] = {
      {strip_rows<4, 1>, strip_rows<4, 2>, strip_rows<4, 3>, strip_rows<4, 4>, strip_rows<4, 5>,
       strip_rows<4, 6>, strip_rows<4, 7>, strip_rows<4, 8>},
      {strip_rows<8, 1>, strip_rows<8, 2>, strip_rows<8, 3>, strip_rows<8, 4>, strip_rows<8, 5>,
       strip_rows<8, 6>, strip_rows<8, 7>, strip_rows<8, 8>}};
  static constexpr Rows kAvx2[2][4] = {
      {strip_rows_avx2<4, 1>, strip_rows_avx2<4, 2>, strip_rows_avx2<4, 3>, strip_rows_avx2<4, 4>},
      {strip_rows_avx2<8, 1>, strip_rows_avx2<8, 2>, strip_rows_avx2<8, 3>, strip_rows_avx2<8, 4>}};
  const bool avx512 = q8_path(kernel) == Q8Path::kAvx512;
  const size_t eight_bits = w.bits == 8 ? 1 : 0;
  const Rows* kernels = avx512 ? kAvx512[eight_bits] : kAvx2[eight_bits];
  // Rows sharing each strip's decoded codes (AVX2's 16 registers hold 4 rows' sums).
  const int64_t at_once = avx512 ? kRowsAtOnce : 4;
  const int64_t row_bytes = nbits_q8_row_bytes(w.K, w.block_size);
  for (int64_t s = s0; s < s1; ++s) {
    const int64_t outputs = std::min(kNBitsQ8StripOutputs, w.N - s * kNBitsQ8StripOutputs);
    for (int64_t r = 0; r < rows; r += at_once) {
      const int64_t now = std::min(at_once, rows - r);
      kernels[now - 1](w, s, prepared + r * row_bytes, row_bytes, outputs, y + r * ldy, ldy);
    }
  }
#else
  (void)w, (void)prepared, (void)rows, (void)s0, (void)s1, (void)y, (void)ldy, (void)kernel;
#endif
}

void nbits_q8_gemm_reference(const NBitsWeights& w, const uint8_t* prepared, int64_t rows, float* y,
                             int64_t ldy) {
  const RowLayout layout(w.K, w.block_size);
  for (int64_t r = 0; r < rows; ++r) {
    const uint8_t* row = prepared + r * layout.bytes();
    const auto* values = reinterpret_cast<const int8_t*>(row);
    const auto* scales = reinterpret_cast<const float*>(row + layout.scales_at());
    const auto* sums = reinterpret_cast<const float*>(row + layout.sums_at());
    for (int64_t n = 0; n < w.N; ++n) {
      float total = 0.0f;
      for (int64_t c = 0; c < w.K / kChunk; ++c) {
        int32_t dot = 0;
        for (int64_t k = c * kChunk; k < (c + 1) * kChunk; ++k)
          dot += code_at(w.codes, w.K, w.bits, n, k) * values[k];
        total += float(dot) * scales[c] * w.scale[n * layout.blocks + c * kChunk / w.block_size];
      }
      for (int64_t b = 0; b < layout.blocks; ++b)
        total += w.neg_zp_scale[n * layout.blocks + b] * sums[b];
      y[r * ldy + n] = total;
    }
  }
}

}  // namespace nxrt::gemm
