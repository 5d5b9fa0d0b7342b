// The vector math (AVX2 polynomials) against the double-precision reference, over a dense
// sweep of each function's interesting range plus the special values, at a tolerance
// tighter than the ONNX tests' (rtol 1e-3, atol 1e-7): relative 2e-6, absolute 1e-7.
#include "ep/cpu/vmath/vmath.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

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

void expect_close(Unary fn, nxrt::vmath::UnaryParams p, const char* name) {
  const std::vector<float> x = sweep();
  std::vector<float> got(x.size()), want(x.size());
  nxrt::vmath::unary(fn, p, x.data(), got.data(), x.size());
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
  expect_close(Unary::kSilu, {}, "silu");
  expect_close(Unary::kElu, {1.0f, 0, 0}, "elu");
  expect_close(Unary::kSelu, {1.6732632f, 0, 1.0507010f}, "selu");
  expect_close(Unary::kSqrt, {}, "sqrt");
  expect_close(Unary::kReciprocal, {}, "reciprocal");
  expect_close(Unary::kNeg, {}, "neg");
  expect_close(Unary::kAbs, {}, "abs");
  expect_close(Unary::kClip, {-1.0f, 6.0f, 0}, "clip");
  expect_close(Unary::kSoftsign, {}, "softsign");
}

TEST(Vmath, NanPropagates) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (Unary fn : {Unary::kExp, Unary::kTanh, Unary::kSigmoid, Unary::kErf, Unary::kGelu,
                   Unary::kRelu, Unary::kClip, Unary::kHardSigmoid}) {
    float x[3] = {1.0f, nan, -1.0f}, y[3];
    nxrt::vmath::unary(fn, {0.2f, 0.5f, 1.0f}, x, y, 3);
    EXPECT_TRUE(std::isnan(y[1])) << int(fn);
    EXPECT_FALSE(std::isnan(y[0])) << int(fn);
  }
}

}  // namespace
