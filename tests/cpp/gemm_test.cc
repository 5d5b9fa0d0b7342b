// The packed/blocked SGEMM against the reference loops, on sizes that exercise every
// edge tile, both micro-kernels, transposes, alpha/beta and strided C.
#include "ep/cpu/gemm/gemm.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

namespace {

using nxrt::gemm::MicroKernel;

struct Case {
  int64_t m, n, k;
};

std::vector<float> random_vec(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

void check(MicroKernel kernel, const Case& c, bool ta, bool tb, float alpha, float beta,
           int64_t ldc_pad) {
  const int64_t lda = ta ? c.m : c.k, ldb = tb ? c.k : c.n, ldc = c.n + ldc_pad;
  const auto a = random_vec(size_t(c.m * c.k), 1);
  const auto b = random_vec(size_t(c.k * c.n), 2);
  auto expect = random_vec(size_t(c.m * ldc), 3);
  auto got = expect;
  nxrt::gemm::sgemm_reference(ta, tb, c.m, c.n, c.k, alpha, a.data(), lda, b.data(), ldb, beta,
                              expect.data(), ldc);
  nxrt::gemm::sgemm(ta, tb, c.m, c.n, c.k, alpha, a.data(), lda, b.data(), ldb, beta, got.data(),
                    ldc, kernel);
  const float tol = 1e-5f * float(c.k + 4);
  for (int64_t i = 0; i < c.m; ++i)
    for (int64_t j = 0; j < ldc; ++j)
      ASSERT_NEAR(got[size_t(i * ldc + j)], expect[size_t(i * ldc + j)], tol)
          << "m=" << c.m << " n=" << c.n << " k=" << c.k << " ta=" << ta << " tb=" << tb
          << " at (" << i << "," << j << ")";
}

void check_all(MicroKernel kernel) {
  const Case cases[] = {{1, 1, 1},   {7, 13, 5},   {33, 65, 17}, {1, 40, 9},   {40, 1, 9},
                        {6, 16, 300}, {97, 131, 259}, {200, 2100, 3}, {12, 24, 513}};
  for (const Case& c : cases)
    for (int t = 0; t < 4; ++t) {
      check(kernel, c, t & 1, t & 2, 1.0f, 0.0f, 0);
      check(kernel, c, t & 1, t & 2, 0.5f, -1.5f, 3);
    }
}

TEST(Gemm, AutoMatchesReference) { check_all(MicroKernel::kAuto); }
TEST(Gemm, PortableMatchesReference) { check_all(MicroKernel::kPortable); }
TEST(Gemm, Avx2MatchesReference) {
  if (!nxrt::gemm::has_avx2_fma()) GTEST_SKIP() << "no AVX2+FMA on this CPU";
  check_all(MicroKernel::kAvx2);
}

TEST(Gemm, BetaZeroIgnoresNaN) {
  std::vector<float> a(4 * 4, 1.0f), b(4 * 4, 1.0f), c(4 * 4, std::nanf(""));
  nxrt::gemm::sgemm(false, false, 4, 4, 4, 1.0f, a.data(), 4, b.data(), 4, 0.0f, c.data(), 4);
  for (float v : c) EXPECT_EQ(v, 4.0f);
}

TEST(Gemm, DoubleSimple) {
  const double a[] = {1, 2, 3, 4, 5, 6};  // 2x3
  const double b[] = {1, 0, 0, 1, 1, 1};  // 3x2
  double c[4] = {};
  nxrt::gemm::gemm_simple<double>(false, false, 2, 2, 3, 1.0, a, 3, b, 2, 0.0, c, 2);
  EXPECT_EQ(c[0], 4);
  EXPECT_EQ(c[1], 5);
  EXPECT_EQ(c[2], 10);
  EXPECT_EQ(c[3], 11);
}

// Prints GFLOP/s for 256^3 and a conv-like shape (not a pass/fail criterion: machines differ).
TEST(Gemm, Throughput256) {
  const int64_t n = 256;
  const auto a = random_vec(size_t(n * n), 1), b = random_vec(size_t(n * n), 2);
  std::vector<float> c(size_t(n * n));
  for (MicroKernel kernel : {MicroKernel::kAuto, MicroKernel::kPortable}) {
    nxrt::gemm::sgemm(false, false, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n,
                      kernel);
    const int reps = 50;
    const auto t0 = std::chrono::steady_clock::now();
    for (int r = 0; r < reps; ++r)
      nxrt::gemm::sgemm(false, false, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(),
                        n, kernel);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("sgemm 256^3 %s: %.1f GFLOP/s\n",
                kernel == MicroKernel::kAuto ? "auto" : "portable",
                2.0 * double(n * n * n) * reps / s * 1e-9);
  }
  // A 1x1 convolution: 64 output channels, 256 input channels, 56x56 positions.
  const int64_t M = 64, N = 3136, K = 256;
  const auto w = random_vec(size_t(M * K), 4), x = random_vec(size_t(K * N), 5);
  std::vector<float> y(size_t(M * N));
  const int reps = 20;
  const auto t0 = std::chrono::steady_clock::now();
  for (int r = 0; r < reps; ++r)
    nxrt::gemm::sgemm(false, false, M, N, K, 1.0f, w.data(), K, x.data(), N, 0.0f, y.data(), N);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("sgemm 64x3136x256: %.1f GFLOP/s\n", 2.0 * double(M * N * K) * reps / s * 1e-9);
}

}  // namespace
