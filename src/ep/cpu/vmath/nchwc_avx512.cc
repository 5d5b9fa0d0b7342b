// The NCHWc kernels (nchwc_kernels.inc) on AVX-512: one zmm register per position's 16
// channels.
#include "ep/cpu/vmath/nchwc_isa.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#include <algorithm>
#include <utility>

#include "ep/cpu/vmath/target_region.h"

NXRT_TARGET_BEGIN("avx512f,avx2,fma")
#if !defined(__clang__)
// GCC 12's AVX-512 intrinsics start from _mm512_undefined_ps(), which its flow analysis
// reports as "may be used uninitialized" once inlined (a known false positive).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace nxrt::vmath::nchwc_avx512 {
namespace {

using V = __m512;
inline V load(const float* p) { return _mm512_loadu_ps(p); }
inline void store(float* p, V v) { _mm512_storeu_ps(p, v); }
inline V set1(float x) { return _mm512_set1_ps(x); }
inline V vzero() { return _mm512_setzero_ps(); }
inline V fmadd(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
inline V fnmadd(V a, V b, V c) { return _mm512_fnmadd_ps(a, b, c); }
inline V add(V a, V b) { return _mm512_add_ps(a, b); }
inline V sub(V a, V b) { return _mm512_sub_ps(a, b); }
inline V vmax(V a, V b) { return _mm512_max_ps(a, b); }
inline V vdiv(V a, V b) { return _mm512_div_ps(a, b); }

// Accumulators of a dense tile: output blocks x positions <= 24 of the 32 registers,
// leaving room for the weights and the broadcast input.
constexpr int kMaxTileBlocks = 4, kMaxTilePositions = 8, kFullTilePositions = 6;
// Measured on ResNet shapes with a 48 KiB L1: 36 KiB beat 144 KiB by 5-25%, 3x3
// convolutions most.
constexpr int64_t kPassWeightsKiB = 36;
constexpr int kRowPositions = 8;

// r[i] = column i of the 16 x 16 matrix whose row j is r[j] (lane k of r[j] is row j,
// column k): four rounds of pairwise interleaves, 64 shuffles in all.
inline void transpose16(V (&r)[16]) {
  V t[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {
    const __m512d a = _mm512_castps_pd(t[i]), b = _mm512_castps_pd(t[i + 1]),
                  c = _mm512_castps_pd(t[i + 2]), d = _mm512_castps_pd(t[i + 3]);
    r[i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
    r[i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
    r[i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d));
    r[i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d));
  }
  // Each r[i] now holds, per 128-bit lane q, column (i's position in its group) of rows
  // 4q'..: exchange 128-bit lanes across groups of four registers.
  for (int i = 0; i < 4; ++i) {
    t[i] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0x88);
    t[i + 4] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0xDD);
    t[i + 8] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0x88);
    t[i + 12] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0xDD);
  }
  for (int i = 0; i < 4; ++i) {
    r[i] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0x88);
    r[i + 8] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0xDD);
    r[i + 4] = _mm512_shuffle_f32x4(t[i + 4], t[i + 12], 0x88);
    r[i + 12] = _mm512_shuffle_f32x4(t[i + 4], t[i + 12], 0xDD);
  }
}

}  // namespace

#include "ep/cpu/vmath/nchwc_kernels.inc"

}  // namespace nxrt::vmath::nchwc_avx512

#if !defined(__clang__)
#pragma GCC diagnostic pop
#endif
NXRT_TARGET_END

namespace nxrt::vmath {
const NchwcKernels* nchwc_kernels_avx512() { return &nchwc_avx512::kKernels; }
}  // namespace nxrt::vmath

#else

namespace nxrt::vmath {
const NchwcKernels* nchwc_kernels_avx512() { return nullptr; }
}  // namespace nxrt::vmath

#endif
