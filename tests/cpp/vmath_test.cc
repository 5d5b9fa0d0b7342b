// The vector math (AVX2 and AVX-512 polynomials) against the double-precision reference, over a
// dense sweep of each function's interesting range plus the special values, at a tolerance tighter
// than the ONNX tests' (rtol 1e-3, atol 1e-7): relative 2e-6, absolute 1e-7.
#include "ep/cpu/vmath/vmath.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "ep/cpu/vmath/vmath_internal.h"

namespace {

using nxrt::vmath::Unary;

std::vector<float> sweep() {
  std::vector<float> x;
  for (float v = -20.0f; v <= 20.0f; v += 0.00731f) x.push_back(v);
  for (float v = 1e-8f; v < 1.0f; v *= 1.37f) {
    x.push_back(v);
    x.push_back(-v);
  }
  for (float v :
       {0.0f, -0.0f, 0.4f, -0.4f, 0.5f, -0.5f, 88.0f, 88.7f, 89.5f, -87.0f, -100.0f, -104.5f, 1e30f,
        -1e30f, std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity()})
    x.push_back(v);
  x.push_back(1.5f);  // odd count: the tail path runs too
  return x;
}

using UnaryImpl = void (*)(Unary, const nxrt::vmath::UnaryParams&, const float*, float*, size_t);

// Every vector implementation this CPU runs, by name.
std::vector<std::pair<const char*, UnaryImpl>> implementations() {
  std::vector<std::pair<const char*, UnaryImpl>> out;
  if (nxrt::vmath::uses_avx2()) out.push_back({"avx2", &nxrt::vmath::detail::unary_avx2});
  if (nxrt::vmath::uses_avx512()) out.push_back({"avx512", &nxrt::vmath::detail::unary_avx512});
  return out;
}

void expect_close_with(UnaryImpl impl, Unary fn, nxrt::vmath::UnaryParams p, const char* name) {
  const std::vector<float> x = sweep();
  std::vector<float> got(x.size()), want(x.size());
  impl(fn, p, x.data(), got.data(), x.size());
  nxrt::vmath::unary_reference(fn, p, x.data(), want.data(), x.size());
  int bad = 0;
  for (size_t i = 0; i < x.size() && bad < 5; ++i) {
    const double w = want[i], g = got[i];
    if (std::isnan(w) || std::isnan(g)) {
      bad += std::isnan(w) != std::isnan(g);
      EXPECT_EQ(std::isnan(w), std::isnan(g)) << name << "(" << x[i] << ")";
      continue;
    }
    if (std::isinf(w) || std::isinf(g)) {
      bad += w != g;
      EXPECT_EQ(w, g) << name << "(" << x[i] << ")";
      continue;
    }
    const bool ok = std::fabs(g - w) <= 1e-7 + 2e-6 * std::fabs(w);
    bad += !ok;
    EXPECT_TRUE(ok) << name << "(" << x[i] << "): got " << g << ", want " << w;
  }
}

void expect_close(Unary fn, nxrt::vmath::UnaryParams p, const char* name) {
  for (const auto& [isa, impl] : implementations()) {
    SCOPED_TRACE(isa);
    expect_close_with(impl, fn, p, name);
  }
}

TEST(Vmath, MatchesReference) {
  if (!nxrt::vmath::uses_avx2()) GTEST_SKIP() << "no AVX2 here: unary() is the reference";
  expect_close(Unary::kExp, {}, "exp");
  expect_close(Unary::kTanh, {}, "tanh");
  expect_close(Unary::kSigmoid, {}, "sigmoid");
  expect_close(Unary::kErf, {}, "erf");
  expect_close(Unary::kGelu, {}, "gelu");
  expect_close(Unary::kGeluTanh, {}, "gelu_tanh");
  expect_close(Unary::kRelu, {}, "relu");
  expect_close(Unary::kLeakyRelu, {0.01f, 0, 0}, "leaky_relu");
  expect_close(Unary::kHardSigmoid, {0.2f, 0.5f, 0}, "hard_sigmoid");
  expect_close(Unary::kHardSwish, {}, "hard_swish");
  expect_close(Unary::kSwish, {1.0f, 0, 0}, "silu");
  expect_close(Unary::kSwish, {1.702f, 0, 0}, "quick_gelu");
  expect_close(Unary::kElu, {1.0f, 0, 0}, "elu");
  expect_close(Unary::kSelu, {1.6732632f, 0, 1.0507010f}, "selu");
  expect_close(Unary::kSqrt, {}, "sqrt");
  expect_close(Unary::kReciprocal, {}, "reciprocal");
  expect_close(Unary::kNeg, {}, "neg");
  expect_close(Unary::kAbs, {}, "abs");
  expect_close(Unary::kClip, {-1.0f, 6.0f, 0}, "clip");
  expect_close(Unary::kSoftsign, {}, "softsign");
  expect_close(Unary::kSoftplus, {}, "softplus");
  expect_close(Unary::kMish, {}, "mish");
  expect_close(Unary::kLog, {}, "log");
}

// log's special cases and subnormal inputs, against libm in double.
TEST(Vmath, LogCoversSubnormalsZerosAndNonFinite) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> x = {0.0f,
                          -0.0f,
                          -1.0f,
                          -inf,
                          inf,
                          std::numeric_limits<float>::quiet_NaN(),
                          1.0f,
                          2.0f,
                          0.5f,
                          1.41421354f,
                          1.41421366f,
                          0.70710677f,
                          3.4e38f,
                          std::numeric_limits<float>::min(),
                          std::numeric_limits<float>::denorm_min()};
  for (float v = 1e-44f; v < 1e-37f; v *= 3.1f) x.push_back(v);
  for (float v = 0.9f; v < 1.1f; v += 0.0137f) x.push_back(v);
  for (const auto& [isa, impl] : implementations()) {
    SCOPED_TRACE(isa);
    std::vector<float> got(x.size());
    impl(Unary::kLog, {}, x.data(), got.data(), x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      const double want = std::log(double(x[i]));
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(got[i])) << x[i];
      } else if (std::isinf(want)) {
        EXPECT_EQ(double(got[i]), want) << x[i];
      } else {
        EXPECT_NEAR(got[i], want, 1e-7 + 2e-7 * std::fabs(want)) << x[i];
      }
    }
  }
}

TEST(Vmath, AffineAppliesScaleAndShiftFirst) {
  const std::vector<float> x = sweep();
  for (Unary fn : {Unary::kIdentity, Unary::kRelu, Unary::kSwish, Unary::kSigmoid, Unary::kClip}) {
    const nxrt::vmath::UnaryParams p{fn == Unary::kClip ? -1.0f : 1.0f, 6.0f, 0};
    std::vector<float> got(x.size());
    nxrt::vmath::unary_affine(fn, p, 0.75f, -0.5f, x.data(), got.data(), x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      const double want = nxrt::vmath::reference(fn, p, double(std::fma(x[i], 0.75f, -0.5f)));
      if (std::isnan(want) || std::isinf(want)) continue;
      ASSERT_NEAR(got[i], want, 1e-7 + 2e-6 * std::fabs(want)) << int(fn) << " at " << x[i];
    }
  }
}

// The vector exp, erf and Gelu never produce a subnormal (they flush below FLT_MIN to 0):
// arithmetic that makes one takes a microcode assist per instruction on Intel cores, which
// made a Gelu layer whose inputs reached -13 run 13x slower. Every x that underflows,
// through the tails of each function, in both signs.
TEST(Vmath, NoSubnormalResults) {
  std::vector<float> x;
  for (float v = 80.0f; v <= 110.0f; v += 0.01f) {
    x.push_back(v);
    x.push_back(-v);
  }
  for (float v = 8.0f; v <= 16.0f; v += 0.001f) {
    x.push_back(v);
    x.push_back(-v);
  }
  std::vector<float> y(x.size());
  for (Unary fn : {Unary::kExp, Unary::kSigmoid, Unary::kErf, Unary::kGelu}) {
    for (const auto& [isa, impl] : implementations()) {
      impl(fn, {}, x.data(), y.data(), x.size());
      for (size_t i = 0; i < x.size(); ++i)
        ASSERT_NE(std::fpclassify(y[i]), FP_SUBNORMAL)
            << isa << " " << int(fn) << "(" << x[i] << ") = " << y[i];
    }
  }
}

TEST(Vmath, NanPropagates) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (Unary fn : {Unary::kExp, Unary::kTanh, Unary::kSigmoid, Unary::kErf, Unary::kGelu,
                   Unary::kRelu, Unary::kClip, Unary::kHardSigmoid}) {
    for (const auto& [isa, impl] : implementations()) {
      float x[3] = {1.0f, nan, -1.0f}, y[3];
      impl(fn, {0.2f, 0.5f, 1.0f}, x, y, 3);
      EXPECT_TRUE(std::isnan(y[1])) << isa << " " << int(fn);
      EXPECT_FALSE(std::isnan(y[0])) << isa << " " << int(fn);
    }
  }
}

// unary() runs sin and cos in the vector form and recomputes inputs outside its range (a
// large phase, inf or NaN, in the vector part or the tail) in double precision. Each
// placement must still give every element's value, in place too, and each value must not
// depend on its neighbours: the array in pieces gives the same bits.
TEST(Vmath, SinCosBlocksWithOutOfRangeValues) {
  if (!nxrt::vmath::uses_avx2()) GTEST_SKIP() << "no AVX2 here: unary() is the reference";
  const float specials[] = {std::numeric_limits<float>::quiet_NaN(),
                            std::numeric_limits<float>::infinity(), 1e6f, -9000.0f};
  for (Unary fn : {Unary::kSin, Unary::kCos}) {
    for (float special : specials) {
      for (size_t at : {size_t(0), size_t(17), size_t(1500), size_t(2050)}) {
        std::vector<float> x(2051), got(x.size()), want(x.size());
        for (size_t i = 0; i < x.size(); ++i) x[i] = float(i % 97) * 0.37f - 18.0f;
        x[at] = special;
        nxrt::vmath::unary(fn, {}, x.data(), got.data(), x.size());
        nxrt::vmath::unary_reference(fn, {}, x.data(), want.data(), x.size());
        std::vector<float> pieces = x;  // in place, 77 at a time
        for (size_t i = 0; i < x.size(); i += 77)
          nxrt::vmath::unary(fn, {}, pieces.data() + i, pieces.data() + i,
                             std::min<size_t>(77, x.size() - i));
        EXPECT_EQ(0, std::memcmp(pieces.data(), got.data(), x.size() * sizeof(float)))
            << "special " << special << " at " << at;
        for (size_t i = 0; i < x.size(); ++i) {
          if (std::isnan(want[i])) {
            EXPECT_TRUE(std::isnan(got[i])) << "x = " << x[i];
          } else {
            EXPECT_NEAR(got[i], want[i], 1e-7 + 2e-6 * std::fabs(want[i])) << "x = " << x[i];
          }
        }
      }
    }
  }
}

}  // namespace

// The array primitives of pooling, depthwise convolution and quantization: the dispatched
// (vector) implementation against the portable one, over lengths with every tail, strides,
// dilations and NaNs. Sums may differ in the last bits only where the order differs.
namespace array_primitives {

using namespace nxrt::vmath;

std::vector<float> data(size_t n, uint32_t seed) {
  std::vector<float> v(n);
  uint32_t s = seed;
  for (float& x : v) {
    s = s * 1664525u + 1013904223u;
    x = float(int32_t(s >> 8) % 2001 - 1000) / 250.0f;
  }
  v[3] = std::numeric_limits<float>::quiet_NaN();
  return v;
}

void expect_same(const std::vector<float>& got, const std::vector<float>& want, const char* what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << what << " at " << i;
    } else {
      EXPECT_NEAR(got[i], want[i], 1e-5f * (1.0f + std::fabs(want[i]))) << what << " at " << i;
    }
  }
}

TEST(VmathArrays, MaxValueFindsTheLargestAndPropagatesNaN) {
  std::vector<float> x = data(300, 5);
  x[3] = 1.0f;  // data() puts a NaN there
  for (size_t n : {1, 5, 31, 32, 33, 100, 300}) {
    float want = x[0];
    for (size_t i = 1; i < n; ++i) want = std::max(want, x[i]);
    EXPECT_EQ(max_value(x.data(), n), want) << n;
  }
  x[250] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(std::isnan(max_value(x.data(), 300)));
  x[250] = 1e30f;
  EXPECT_EQ(max_value(x.data(), 300), 1e30f);
}

TEST(VmathArrays, MatchPortable) {
  const std::vector<float> x = data(4000, 1);
  for (size_t n : {1, 7, 8, 9, 23, 64}) {
    const float* rows[3] = {x.data() + 100, x.data(), x.data() + 1000};
    std::vector<float> got(n), want(n);
    for (bool max : {true, false}) {
      reduce_rows(max, rows, 3, got.data(), n);
      detail::reduce_rows_portable(max, rows, 3, want.data(), 0, n);
      expect_same(got, want, max ? "reduce_rows max" : "reduce_rows sum");
    }
    for (int64_t stride : {1, 2, 3}) {
      for (bool max : {true, false}) {
        reduce_taps(max, x.data(), n, stride, 3, 2, 1.0f / 3, got.data());
        detail::reduce_taps_portable(max, x.data(), n, stride, 3, 2, 1.0f / 3, want.data());
        expect_same(got, want, max ? "reduce_taps max" : "reduce_taps sum");
      }
      const float w0[3] = {0.5f, -1.0f, 2.0f}, w1[3] = {1.5f, 0.25f, -0.75f};
      const float* w[2] = {w0, w1};
      depthwise_row(rows, w, 2, 5, 3, stride, 2, got.data(), n);
      detail::depthwise_row_portable(rows, w, 2, 5, 3, stride, 2, want.data(), 0, n);
      expect_same(got, want, "depthwise_row");
    }
    for (bool is_signed : {false, true}) {
      std::vector<uint8_t> q(n), q_want(n);
      quantize_8bit(x.data(), n, 0.02f, is_signed ? -3.0f : 120.0f, is_signed, q.data());
      detail::quantize_8bit_portable(x.data(), n, 0.02f, is_signed ? -3.0f : 120.0f, is_signed,
                                     q_want.data());
      EXPECT_EQ(q, q_want) << "quantize_8bit, n " << n;
      dequantize_8bit(q.data(), is_signed, n, 0.02f, 5.0f, got.data());
      detail::dequantize_8bit_portable(q.data(), is_signed, n, 0.02f, 5.0f, want.data());
      expect_same(got, want, "dequantize_8bit");
      if (uses_avx2()) {  // the AVX2 forms too, when the dispatch picked AVX-512
        detail::quantize_8bit_avx2(x.data(), n, 0.02f, is_signed ? -3.0f : 120.0f, is_signed,
                                   q.data());
        EXPECT_EQ(q, q_want) << "quantize_8bit_avx2, n " << n;
        detail::dequantize_8bit_avx2(q.data(), is_signed, n, 0.02f, 5.0f, got.data());
        expect_same(got, want, "dequantize_8bit_avx2");
      }
    }
  }
}

// The vector QuantizeLinear multiplies by the scale's reciprocal and divides only where
// the quotient is near a half-integer: at exact ties and one float either side of them,
// over scales whose reciprocal is inexact, subnormal or infinite, the bytes must be the
// division's.
TEST(VmathArrays, QuantizeMatchesDivisionAtHalfIntegers) {
  for (float scale : {0.02f, 0.1f, 1.0f / 3.0f, 0.0078125f, 7.3e-5f, 3.0f, 1e-39f, 3e38f}) {
    std::vector<float> x;
    for (int k = -300; k <= 300; ++k) {
      const float tie = (float(k) + 0.5f) * scale;
      x.push_back(tie);
      x.push_back(std::nextafter(tie, 1e30f));
      x.push_back(std::nextafter(tie, -1e30f));
    }
    for (float v : {0.0f, -0.0f, 1e30f, -1e30f, std::numeric_limits<float>::infinity(),
                    std::numeric_limits<float>::quiet_NaN(), 1e-30f})
      x.push_back(v);
    for (bool is_signed : {false, true}) {
      std::vector<uint8_t> got(x.size()), want(x.size());
      quantize_8bit(x.data(), x.size(), scale, is_signed ? 0.0f : 128.0f, is_signed, got.data());
      detail::quantize_8bit_portable(x.data(), x.size(), scale, is_signed ? 0.0f : 128.0f,
                                     is_signed, want.data());
      for (size_t i = 0; i < x.size(); ++i)
        ASSERT_EQ(got[i], want[i]) << "scale " << scale << " x " << x[i] << " signed " << is_signed;
    }
  }
}

// pool_plane against windows taken element by element: max exactly, averages within
// rounding (the sums run in another order).
TEST(VmathArrays, PoolPlaneMatchesWindows) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  const PoolWindow shapes[] = {{55, 55, 3, 3, 2, 2, 1, 1},
                               {13, 37, 3, 3, 1, 1, 1, 1},
                               {7, 20, 2, 3, 2, 3, 2, 1},
                               {5, 17, 3, 2, 3, 4, 1, 2}};
  for (const PoolWindow& w : shapes) {
    const int64_t H = (w.OH - 1) * w.SH + (w.KH - 1) * w.DH + 1;
    const int64_t W = (w.OW - 1) * w.SW + (w.KW - 1) * w.DW + 1, ld = W + 3;
    std::vector<float> x(size_t(H * ld));
    for (float& v : x) v = dist(rng);
    x[size_t(ld + 1)] = std::numeric_limits<float>::quiet_NaN();
    for (bool max : {true, false}) {
      std::vector<float> got(size_t(w.OH * w.OW));
      pool_plane(max, x.data(), ld, w, 1.0f / float(w.KH * w.KW), got.data());
      for (int64_t oh = 0; oh < w.OH; ++oh)
        for (int64_t ow = 0; ow < w.OW; ++ow) {
          float acc = max ? -std::numeric_limits<float>::infinity() : 0.0f;
          for (int64_t kh = 0; kh < w.KH; ++kh)
            for (int64_t kw = 0; kw < w.KW; ++kw) {
              const float v = x[size_t((oh * w.SH + kh * w.DH) * ld + ow * w.SW + kw * w.DW)];
              acc = max ? max_keep_nan(acc, v) : acc + v;
            }
          if (!max) acc /= float(w.KH * w.KW);
          const float g = got[size_t(oh * w.OW + ow)];
          if (std::isnan(acc)) {
            EXPECT_TRUE(std::isnan(g)) << oh << "," << ow;
          } else if (max) {
            EXPECT_EQ(g, acc) << oh << "," << ow;
          } else {
            EXPECT_NEAR(g, acc, 1e-5f) << oh << "," << ow;
          }
        }
    }
  }
}

// depthwise_plane against the window sums taken element by element (within rounding: the
// vector form sums even and odd taps separately).
TEST(VmathArrays, DepthwisePlaneMatchesWindows) {
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  const PoolWindow shapes[] = {{14, 14, 3, 3, 1, 1, 1, 1},
                               {28, 40, 3, 3, 2, 2, 1, 1},
                               {7, 33, 5, 5, 1, 1, 2, 2},
                               {5, 17, 3, 2, 3, 3, 1, 2}};
  for (const PoolWindow& w : shapes) {
    const int64_t H = (w.OH - 1) * w.SH + (w.KH - 1) * w.DH + 1;
    const int64_t W = (w.OW - 1) * w.SW + (w.KW - 1) * w.DW + 1, ld = W + 2;
    std::vector<float> x(size_t(H * ld)), k(size_t(w.KH * w.KW));
    for (float& v : x) v = dist(rng);
    for (float& v : k) v = dist(rng);
    std::vector<float> got(size_t(w.OH * w.OW));
    depthwise_plane(x.data(), ld, w, k.data(), got.data());
    for (int64_t oh = 0; oh < w.OH; ++oh)
      for (int64_t ow = 0; ow < w.OW; ++ow) {
        double acc = 0.0;
        for (int64_t kh = 0; kh < w.KH; ++kh)
          for (int64_t kw = 0; kw < w.KW; ++kw)
            acc += double(k[size_t(kh * w.KW + kw)]) *
                   double(x[size_t((oh * w.SH + kh * w.DH) * ld + ow * w.SW + kw * w.DW)]);
        EXPECT_NEAR(got[size_t(oh * w.OW + ow)], acc, 1e-4) << oh << "," << ow;
      }
  }
}

// The im2col rows of few-position 1-D convolutions: every (stride, span, padding) case,
// the rows surrounded by sentinels so a read or write outside them would show.
TEST(VmathArrays, StridedRowsCopyTheWindowAndZeroThePadding) {
  const int64_t rows = 5, ld = 40, out_ld = 24;
  std::vector<float> x(size_t(rows * ld + 64), std::numeric_limits<float>::quiet_NaN());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < 20; ++i) x[size_t(32 + r * ld + i)] = float(r * 100 + i);
  const float* base = x.data() + 32;  // row r's element i at base[r * ld + i], i < 20
  for (int64_t step : {1, 2, 3})
    for (int64_t count : {1, 2, 4, 7, 16})
      for (int64_t off : {-2, -1, 0, 1})
        for (int64_t lo = 0; lo <= count; ++lo)
          for (int64_t hi = lo; hi <= count; ++hi) {
            // Only windows that lie inside the row: [lo, hi) maps to [0, 20).
            if (hi > lo && (off + lo * step < 0 || off + (hi - 1) * step >= 20)) continue;
            std::vector<float> got(size_t(rows * out_ld), -7.0f);
            strided_rows(base, ld, rows, off, step, lo, hi, count, got.data(), out_ld);
            for (int64_t r = 0; r < rows; ++r)
              for (int64_t o = 0; o < out_ld; ++o) {
                const float want = o >= count          ? -7.0f
                                   : o >= lo && o < hi ? float(r * 100 + off + o * step)
                                                       : 0.0f;
                ASSERT_EQ(got[size_t(r * out_ld + o)], want)
                    << "step " << step << " count " << count << " off " << off << " lo " << lo
                    << " hi " << hi << " row " << r << " lane " << o;
              }
          }
}

// Short-row 1-D depthwise convolutions against a double sum, over strides, paddings that
// clip either end or both, tap counts and widths; false (and untouched output) where the
// vector form does not apply.
TEST(VmathArrays, DepthwiseShortRowsMatchTheWindowSums) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  const int64_t channels = 5;
  for (int64_t step : {1, 2})
    for (int64_t taps : {1, 3, 5, 7})
      for (int64_t width : {1, 4, 9, 20})
        for (int64_t pad : {0, 1, 2, 4}) {
          const int64_t count = (width + 2 * pad - taps) / step + 1;
          if (count < 1) continue;
          std::vector<float> x(size_t(channels * width)), w(size_t(channels * taps));
          for (float& v : x) v = dist(rng);
          for (float& v : w) v = dist(rng);
          std::vector<float> y(size_t(channels * count + 4), -7.0f);
          if (!depthwise_short_rows(x.data(), width, channels, w.data(), taps, step, pad, count,
                                    y.data())) {
            EXPECT_TRUE(!uses_avx512() || count > 16) << count;
            continue;
          }
          for (int64_t c = 0; c < channels; ++c)
            for (int64_t o = 0; o < count; ++o) {
              double want = 0.0;
              for (int64_t q = 0; q < taps; ++q) {
                const int64_t i = o * step + q - pad;
                if (i >= 0 && i < width)
                  want += double(w[size_t(c * taps + q)]) * double(x[size_t(c * width + i)]);
              }
              EXPECT_NEAR(y[size_t(c * count + o)], want, 1e-5)
                  << "step " << step << " taps " << taps << " width " << width << " pad " << pad
                  << " channel " << c << " position " << o;
            }
          for (size_t i = size_t(channels * count); i < y.size(); ++i) EXPECT_EQ(y[i], -7.0f);
        }
}

}  // namespace array_primitives

// The few-position convolution epilogue: every row length (whole rows, which AVX-512 runs
// a vector of channels at a time, and rows inside longer ones), with and without scale and
// bias, against the definition; NaN passes through the clamp.
TEST(VmathArrays, ChannelAffineClampMatchesTheDefinition) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  for (int64_t cols : {1, 2, 3, 4, 5, 8, 16}) {
    for (int64_t ld : {cols, cols + 3}) {
      for (bool with_scale : {false, true}) {
        const int64_t channels = 37;
        std::vector<float> y(size_t(channels * ld)), scale(channels), bias(channels);
        for (float& v : y) v = dist(rng);
        for (float& v : scale) v = dist(rng);
        for (float& v : bias) v = dist(rng);
        y[size_t(ld)] = std::numeric_limits<float>::quiet_NaN();  // channel 1, position 0
        std::vector<float> expect = y;
        const float lo = -0.5f, hi = 1.25f;
        for (int64_t c = 0; c < channels; ++c)
          for (int64_t i = 0; i < cols; ++i) {
            float& v = expect[size_t(c * ld + i)];
            v = with_scale ? std::fma(v, scale[size_t(c)], bias[size_t(c)]) : v + bias[size_t(c)];
            if (!std::isnan(v)) v = std::min(hi, std::max(lo, v));
          }
        nxrt::vmath::channel_affine_clamp(y.data(), channels, cols, ld,
                                          with_scale ? scale.data() : nullptr, bias.data(), lo, hi);
        for (size_t k = 0; k < y.size(); ++k) {
          if (std::isnan(expect[k])) {
            EXPECT_TRUE(std::isnan(y[k])) << "cols " << cols << " ld " << ld << " at " << k;
          } else {
            EXPECT_EQ(y[k], expect[k]) << "cols " << cols << " ld " << ld << " at " << k;
          }
        }
      }
    }
  }
}
