// depthwise_plane and pool_plane (vmath.h) on AVX2 for strides 1 and 2: eight outputs of a
// row per vector, read with whole loads wherever the plane (or its slack) holds the floats
// a vector's taps reach; the few outputs past that are computed one by one in the same
// order of operations, so every output rounds as its vector neighbours do.
#include <cmath>

#include "ep/cpu/vmath/vmath_internal.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#include <algorithm>

#include "ep/cpu/vmath/target_region.h"
#include "ep/cpu/vmath/vmath_avx2_lanes.h"

NXRT_TARGET_BEGIN("avx2,fma")

namespace nxrt::vmath::detail {
namespace {

// Elements p[i * S] for i < 8 (S = 1 or 2): the caller knows the 8 * S floats are readable.
template <int S>
inline __m256 load8(const float* p) {
  if constexpr (S == 1) {
    return _mm256_loadu_ps(p);
  } else {
    // The even elements of each 128-bit half of both loads, then the halves in order.
    const __m256 even = _mm256_shuffle_ps(_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8), 0x88);
    return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(even), 0xD8));
  }
}

// Runs every output row of a plane: vec(p) gives the eight outputs whose windows start at
// p, p + S, ...; one(p) the single output whose window starts at p. A row's last outputs
// go as one more vector overlapping the one before (recomputing a few outputs
// identically) when the row holds eight; narrower rows store part of a vector when its
// reads stay readable; the rest go one by one.
template <int S, typename Vec, typename One>
inline void plane_rows(const float* x, int64_t ld, const PoolWindow& w, float* out, Vec vec,
                       One one) {
  const int64_t readable = ((w.OH - 1) * w.SH + (w.KH - 1) * w.DH) * ld + (w.OW - 1) * w.SW +
                           (w.KW - 1) * w.DW + 1 + w.slack;
  const int64_t reach = (w.KH - 1) * w.DH * ld + (w.KW - 1) * w.DW + 8 * S;
  auto fits = [&](const float* p) { return (p - x) + reach <= readable; };
  for (int64_t oh = 0; oh < w.OH; ++oh) {
    const float* top = x + oh * w.SH * ld;
    float* dst = out + oh * w.out_stride();
    int64_t o = 0;
    for (; o + 8 <= w.OW && fits(top + o * S); o += 8) _mm256_storeu_ps(dst + o, vec(top + o * S));
    if (o < w.OW && w.OW >= 8 && fits(top + (w.OW - 8) * S)) {
      _mm256_storeu_ps(dst + w.OW - 8, vec(top + (w.OW - 8) * S));
      o = w.OW;
    }
    if (o < w.OW && fits(top + o * S)) {
      alignas(32) float part[8];
      _mm256_store_ps(part, vec(top + o * S));
      std::copy(part, part + (w.OW - o), dst + o);
      o = w.OW;
    }
    for (; o < w.OW; ++o) dst[o] = one(top + o * S);
  }
}

template <int S, bool MAX>
void pool_plane_fixed(const float* x, int64_t ld, const PoolWindow& w, float scale, float* out) {
  const __m256 vscale = _mm256_set1_ps(scale);
  auto vec = [&](const float* p) {
    __m256 acc = load8<S>(p);
    for (int64_t kh = 0; kh < w.KH; ++kh) {
      const float* row = p + kh * w.DH * ld;
      for (int64_t kw = kh == 0 ? 1 : 0; kw < w.KW; ++kw) {
        const __m256 v = load8<S>(row + kw * w.DW);
        acc = MAX ? avx2_lanes::max_keep_nan_ps(acc, v) : _mm256_add_ps(acc, v);
      }
    }
    return MAX ? acc : _mm256_mul_ps(acc, vscale);
  };
  auto one = [&](const float* p) {
    float acc = p[0];
    for (int64_t kh = 0; kh < w.KH; ++kh) {
      const float* row = p + kh * w.DH * ld;
      for (int64_t kw = kh == 0 ? 1 : 0; kw < w.KW; ++kw) {
        const float v = row[kw * w.DW];
        acc = MAX ? max_keep_nan(acc, v) : acc + v;
      }
    }
    return MAX ? acc : acc * scale;
  };
  plane_rows<S>(x, ld, w, out, vec, one);
}

// Any window: two sums (even and odd taps) halve the FMA latency chain.
template <int S>
void depthwise_plane_fixed(const float* x, int64_t ld, const PoolWindow& w, const float* weights,
                           float* out) {
  auto vec = [&](const float* p) {
    __m256 even = _mm256_setzero_ps(), odd = _mm256_setzero_ps();
    bool on_even = true;
    for (int64_t kh = 0; kh < w.KH; ++kh) {
      const float* row = p + kh * w.DH * ld;
      for (int64_t kw = 0; kw < w.KW; ++kw, on_even = !on_even) {
        const __m256 term = load8<S>(row + kw * w.DW);
        const __m256 k = _mm256_set1_ps(weights[kh * w.KW + kw]);
        if (on_even) {
          even = _mm256_fmadd_ps(k, term, even);
        } else {
          odd = _mm256_fmadd_ps(k, term, odd);
        }
      }
    }
    return _mm256_add_ps(even, odd);
  };
  auto one = [&](const float* p) {
    float even = 0.0f, odd = 0.0f;
    bool on_even = true;
    for (int64_t kh = 0; kh < w.KH; ++kh)
      for (int64_t kw = 0; kw < w.KW; ++kw, on_even = !on_even) {
        float& sum = on_even ? even : odd;
        sum = std::fma(weights[kh * w.KW + kw], p[kh * w.DH * ld + kw * w.DW], sum);
      }
    return even + odd;
  };
  plane_rows<S>(x, ld, w, out, vec, one);
}

// The common 3 x 3 window of adjacent taps: the nine weights stay in registers, each
// window row is summed apart (three FMAs deep) before the rows are added.
template <int S>
void depthwise_plane_3x3(const float* x, int64_t ld, const PoolWindow& w, const float* weights,
                         float* out) {
  __m256 k[9];
  for (int i = 0; i < 9; ++i) k[i] = _mm256_set1_ps(weights[i]);
  auto vec = [&](const float* p) {
    __m256 rows[3];
    for (int kh = 0; kh < 3; ++kh) {
      const float* row = p + kh * ld;
      __m256 acc = _mm256_mul_ps(k[3 * kh], load8<S>(row));
      acc = _mm256_fmadd_ps(k[3 * kh + 1], load8<S>(row + 1), acc);
      rows[kh] = _mm256_fmadd_ps(k[3 * kh + 2], load8<S>(row + 2), acc);
    }
    return _mm256_add_ps(_mm256_add_ps(rows[0], rows[1]), rows[2]);
  };
  auto one = [&](const float* p) {
    float rows[3];
    for (int kh = 0; kh < 3; ++kh) {
      const float* row = p + kh * ld;
      const float acc = std::fma(weights[3 * kh + 1], row[1], weights[3 * kh] * row[0]);
      rows[kh] = std::fma(weights[3 * kh + 2], row[2], acc);
    }
    return rows[0] + rows[1] + rows[2];
  };
  plane_rows<S>(x, ld, w, out, vec, one);
}

}  // namespace

bool depthwise_plane_avx2(const float* x, int64_t ld, const PoolWindow& w, const float* weights,
                          float* out) {
  const bool k3x3 = w.KH == 3 && w.KW == 3 && w.DH == 1 && w.DW == 1;
  if (k3x3 && w.SW == 1) return depthwise_plane_3x3<1>(x, ld, w, weights, out), true;
  if (k3x3 && w.SW == 2) return depthwise_plane_3x3<2>(x, ld, w, weights, out), true;
  if (w.SW == 1) return depthwise_plane_fixed<1>(x, ld, w, weights, out), true;
  if (w.SW == 2) return depthwise_plane_fixed<2>(x, ld, w, weights, out), true;
  return false;
}

bool pool_plane_avx2(bool max, const float* x, int64_t ld, const PoolWindow& w, float scale,
                     float* out) {
  if (w.SW == 1) {
    max ? pool_plane_fixed<1, true>(x, ld, w, scale, out)
        : pool_plane_fixed<1, false>(x, ld, w, scale, out);
    return true;
  }
  if (w.SW == 2) {
    max ? pool_plane_fixed<2, true>(x, ld, w, scale, out)
        : pool_plane_fixed<2, false>(x, ld, w, scale, out);
    return true;
  }
  return false;
}

}  // namespace nxrt::vmath::detail

NXRT_TARGET_END

#else

namespace nxrt::vmath::detail {
bool depthwise_plane_avx2(const float*, int64_t, const PoolWindow&, const float*, float*) {
  return false;
}
bool pool_plane_avx2(bool, const float*, int64_t, const PoolWindow&, float, float*) {
  return false;
}
}  // namespace nxrt::vmath::detail

#endif
