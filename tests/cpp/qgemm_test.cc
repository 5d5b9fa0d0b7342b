// The 8-bit GEMM against plain loops: every sign combination of A and B, scalar and
// per-column zero points, sizes with partial row blocks, panels and k groups, 1 and 2
// threads, and each kernel this CPU runs.
#include "ep/cpu/gemm/qgemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/parallel.h"

namespace {

std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (uint8_t& x : v) x = uint8_t(rng());
  return v;
}

void check(int64_t M, int64_t N, int64_t K, bool a_signed, bool b_signed, bool per_column,
           nxrt::gemm::QKernel kernel = nxrt::gemm::QKernel::kAuto) {
  const auto a = random_bytes(size_t(M * K), 1), b = random_bytes(size_t(K * N), 2);
  std::vector<int32_t> zb(per_column ? size_t(N) : 1);
  for (size_t j = 0; j < zb.size(); ++j)
    zb[j] = b_signed ? int32_t(j % 7) - 3 : 120 + int32_t(j % 9);
  const int32_t za = a_signed ? -5 : 131;
  std::vector<int32_t> want(size_t(M * N)), got(size_t(M * N), -1);
  nxrt::gemm::qgemm_reference(M, N, K, a.data(), K, a_signed, za, b.data(), N, b_signed, zb.data(),
                              int64_t(zb.size()), want.data(), N);
  const auto packed =
      nxrt::gemm::PackedQuantB::pack(K, N, b.data(), N, b_signed, zb.data(), int64_t(zb.size()));
  nxrt::gemm::qgemm(M, a.data(), K, a_signed, za, packed, got.data(), N, kernel);
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_EQ(got[i], want[i]) << "M=" << M << " N=" << N << " K=" << K << " a_signed=" << a_signed
                               << " b_signed=" << b_signed << " at " << i;
}

void check_all(nxrt::gemm::QKernel kernel) {
  // Partial row blocks (12, and the AVX2 kernel's 6-row chunks), partial 8-column strips,
  // 16-column panels and 32-column pairs, and K not a multiple of 4.
  const int64_t sizes[][3] = {{1, 1, 1},     {5, 17, 3},    {12, 32, 4},   {13, 33, 9},
                              {40, 70, 131}, {1, 384, 384}, {25, 16, 64},  {70, 100, 200},
                              {33, 48, 640}, {7, 9, 5},     {6, 8, 4},     {11, 41, 13},
                              {2, 63, 1030}, {1, 7, 2},     {19, 24, 258}, {3, 130, 6}};
  for (const auto& s : sizes)
    for (int signs = 0; signs < 4; ++signs)
      for (bool per_column : {false, true})
        check(s[0], s[1], s[2], signs & 1, signs & 2, per_column, kernel);
}

// A and B filled with one value each, zero points 0: the extremes of a'b' (255 x -128 and
// the like), whose pair sums saturate int16 (vpmaddubsw), must come out exact.
void check_extremes(nxrt::gemm::QKernel kernel) {
  const int64_t M = 13, N = 37, K = 259;
  for (bool a_signed : {false, true})
    for (bool b_signed : {false, true})
      for (uint8_t av : {uint8_t(0), uint8_t(127), uint8_t(128), uint8_t(255)})
        for (uint8_t bv : {uint8_t(0), uint8_t(127), uint8_t(128), uint8_t(255)}) {
          const std::vector<uint8_t> a(size_t(M * K), av), b(size_t(K * N), bv);
          const int32_t zb = 0;
          std::vector<int32_t> want(size_t(M * N)), got(size_t(M * N), -1);
          nxrt::gemm::qgemm_reference(M, N, K, a.data(), K, a_signed, 0, b.data(), N, b_signed, &zb,
                                      1, want.data(), N);
          const auto packed = nxrt::gemm::PackedQuantB::pack(K, N, b.data(), N, b_signed, &zb, 1);
          nxrt::gemm::qgemm(M, a.data(), K, a_signed, 0, packed, got.data(), N, kernel);
          ASSERT_EQ(got, want) << "a=" << int(av) << " b=" << int(bv) << " a_signed=" << a_signed
                               << " b_signed=" << b_signed;
        }
}

// Float output: the exact product scaled per column, with and without a bias.
void check_float(nxrt::gemm::QKernel kernel, bool with_bias) {
  const int64_t M = 29, N = 45, K = 70;
  const auto a = random_bytes(size_t(M * K), 3), b = random_bytes(size_t(K * N), 4);
  const int32_t zb = 7;
  std::vector<int32_t> exact(size_t(M * N));
  nxrt::gemm::qgemm_reference(M, N, K, a.data(), K, false, 100, b.data(), N, true, &zb, 1,
                              exact.data(), N);
  std::vector<float> scale(static_cast<size_t>(N)), bias(static_cast<size_t>(N)),
      y(static_cast<size_t>(M * N));
  for (int64_t j = 0; j < N; ++j) {
    scale[size_t(j)] = 0.001f * float(j + 1);
    bias[size_t(j)] = with_bias ? float(j) - 20.0f : 0.0f;
  }
  const auto packed = nxrt::gemm::PackedQuantB::pack(K, N, b.data(), N, true, &zb, 1);
  nxrt::gemm::qgemm_float(M, a.data(), K, false, 100, packed, scale.data(),
                          with_bias ? bias.data() : nullptr, y.data(), N, kernel);
  // The int32 product is exact; scaling and the bias round once or twice (a fused
  // multiply-add where the vector code has one), so allow an ulp of the larger term.
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      const double prod = double(exact[size_t(i * N + j)]) * double(scale[size_t(j)]);
      const double want = prod + double(bias[size_t(j)]);
      ASSERT_NEAR(y[size_t(i * N + j)], want,
                  2e-7 * (std::fabs(prod) + std::fabs(double(bias[size_t(j)]))) + 1e-30);
    }
}

using nxrt::gemm::QKernel;

// The best kernel here (AMX, AVX-512 VNNI or AVX2 as the CPU has them), the AVX2 one
// (portable on CPUs without AVX2), and the portable one.
TEST(Qgemm, MatchesReference) { check_all(QKernel::kAuto); }
TEST(Qgemm, Avx2MatchesReference) { check_all(QKernel::kAvx2); }
TEST(Qgemm, PortableMatchesReference) { check_all(QKernel::kPortable); }

TEST(Qgemm, ExtremeValuesAreExact) {
  for (QKernel kernel : {QKernel::kAuto, QKernel::kAvx2, QKernel::kPortable})
    check_extremes(kernel);
}

TEST(Qgemm, FloatOutputScalesEachColumn) {
  for (QKernel kernel : {QKernel::kAuto, QKernel::kAvx2, QKernel::kPortable})
    for (bool with_bias : {true, false}) check_float(kernel, with_bias);
}

TEST(Qgemm, MatchesReferenceOnTwoThreads) {
  auto pool = nxrt::make_worker_pool(2);
  nxrt::ParallelScope scope(pool.get());
  check(300, 96, 200, false, true, true);
  check(97, 40, 77, true, false, false);
  check(97, 40, 77, true, false, false, QKernel::kAvx2);
}

}  // namespace
