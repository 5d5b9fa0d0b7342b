// MatMulNBits' 8-bit-A product (gemm/nbits_q8.h): the VNNI kernels against the plain-loop
// reference on the same quantized rows, the quantization's error against the float
// product, results independent of the rows computed alongside, and NaN carried through.
#include "ep/cpu/gemm/nbits_q8.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

namespace {

struct Case {
  int64_t K, N, block_size, bits = 4;
};

struct Problem {
  Case c;
  std::vector<uint8_t> codes;
  std::vector<float> scale, zero, neg_zp_scale, x;
  std::vector<uint8_t> zero_point;
  int64_t rows;

  Problem(Case shape, int64_t row_count, uint32_t seed) : c(shape), rows(row_count) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
    codes.resize(size_t(c.N * c.K * c.bits / 8));
    for (uint8_t& b : codes) b = uint8_t(rng());
    const size_t blocks = size_t(c.N * c.K / c.block_size);
    for (size_t i = 0; i < blocks; ++i) {
      scale.push_back(0.01f + 0.1f * std::fabs(unit(rng)));
      zero_point.push_back(uint8_t(rng() % (1u << c.bits)));
      zero.push_back(float(zero_point.back()));
      neg_zp_scale.push_back(-zero.back() * scale.back());
    }
    for (int64_t i = 0; i < rows * c.K; ++i) x.push_back(unit(rng) * (i % 7 == 0 ? 4.0f : 1.0f));
  }
  nxrt::gemm::NBitsWeights weights() const {
    return {c.N, c.K, c.block_size, c.bits, codes.data(), scale.data(), neg_zp_scale.data()};
  }
  std::vector<uint8_t> prepare() const {
    const int64_t row_bytes = nxrt::gemm::nbits_q8_row_bytes(c.K, c.block_size);
    std::vector<uint8_t> out(size_t(row_bytes * rows));
    for (int64_t r = 0; r < rows; ++r)
      nxrt::gemm::nbits_q8_prepare(x.data() + r * c.K, c.K, c.block_size,
                                   out.data() + r * row_bytes);
    return out;
  }
  nxrt::gemm::NBitsQ8Strips strips() const {
    return nxrt::gemm::NBitsQ8Strips::pack(c.N, c.K, c.block_size, c.bits, codes.data(),
                                           scale.data(), zero_point.data());
  }
  float weight(int64_t n, int64_t k) const {
    const size_t b = size_t(n * (c.K / c.block_size) + k / c.block_size);
    if (c.bits == 8) return (float(codes[size_t(n * c.K + k)]) - zero[b]) * scale[b];
    const uint8_t byte = codes[size_t(n * c.K / 2 + k / 2)];
    return (float(k % 2 ? byte >> 4 : byte & 15) - zero[b]) * scale[b];
  }
};

const Case kCases[] = {
    {96, 37, 32},      // no whole group of 128: only a 3-chunk tail
    {576, 29, 32},     // SmolLM2's hidden size: 4 groups and a 2-chunk tail
    {256, 21, 64},     // two blocks per group
    {384, 9, 128},     // one block per group
    {512, 11, 256},    // a block across two groups
    {576, 29, 32, 8},  // 8-bit codes
    {256, 21, 64, 8},
};

// The strips against the reference on the same 8-bit rows (the same quantization, sums in
// another order), over threads' split of the strips; and each row alone gives the same
// bits as among the others.
TEST(NBitsQ8, KernelMatchesReferenceOnTheSameRows) {
  using nxrt::gemm::MicroKernel;
  for (MicroKernel kernel : {MicroKernel::kAvx512, MicroKernel::kAvx2}) {
    if (!nxrt::gemm::nbits_q8_available(kernel)) continue;
    for (const Case& c : kCases)
      for (int64_t rows : {1, 2, 5, 8, 13}) {
        const Problem p(c, rows, uint32_t(c.K + rows));
        const auto strips = p.strips();
        const auto prepared = p.prepare();
        const int64_t row_bytes = nxrt::gemm::nbits_q8_row_bytes(c.K, c.block_size);
        std::vector<float> got(size_t(rows * c.N), -7.0f), want(got.size());
        nxrt::gemm::nbits_q8_gemm(strips, prepared.data(), rows, 0, 1, got.data(), c.N, kernel);
        nxrt::gemm::nbits_q8_gemm(strips, prepared.data(), rows, 1, strips.strips(), got.data(),
                                  c.N, kernel);
        nxrt::gemm::nbits_q8_gemm_reference(p.weights(), prepared.data(), rows, want.data(), c.N);
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t n = 0; n < c.N; ++n) {
            double magnitude = 0.0;
            for (int64_t k = 0; k < c.K; ++k)
              magnitude += std::fabs(double(p.x[size_t(r * c.K + k)]) * p.weight(n, k));
            const size_t i = size_t(r * c.N + n);
            EXPECT_NEAR(got[i], want[i], 1e-5 * magnitude)
                << "kernel " << int(kernel) << " K " << c.K << " block " << c.block_size << " rows "
                << rows << " row " << r << " output " << n;
          }
        for (int64_t r : {int64_t(0), rows - 1}) {
          std::vector<float> alone(size_t(c.N), -7.0f);
          nxrt::gemm::nbits_q8_gemm(strips, prepared.data() + r * row_bytes, 1, 0, strips.strips(),
                                    alone.data(), c.N, kernel);
          for (int64_t n = 0; n < c.N; ++n)
            EXPECT_EQ(alone[size_t(n)], got[size_t(r * c.N + n)])
                << "kernel " << int(kernel) << " row " << r << " output " << n;
        }
      }
  }
}

// AVX2 makes the same integer sums with other instructions and the same float operations
// per output: the same bits as AVX-512, so a model's results do not depend on which runs.
TEST(NBitsQ8, Avx2GivesTheSameBitsAsAvx512) {
  using nxrt::gemm::MicroKernel;
  if (!nxrt::gemm::nbits_q8_available(MicroKernel::kAvx512) ||
      !nxrt::gemm::nbits_q8_available(MicroKernel::kAvx2))
    GTEST_SKIP() << "needs AVX-512 VNNI";
  for (const Case& c : kCases) {
    const Problem p(c, 7, uint32_t(c.K * 3));
    const auto strips = p.strips();
    const auto prepared = p.prepare();
    std::vector<float> avx512(size_t(7 * c.N)), avx2(avx512.size());
    nxrt::gemm::nbits_q8_gemm(strips, prepared.data(), 7, 0, strips.strips(), avx512.data(), c.N,
                              MicroKernel::kAvx512);
    nxrt::gemm::nbits_q8_gemm(strips, prepared.data(), 7, 0, strips.strips(), avx2.data(), c.N,
                              MicroKernel::kAvx2);
    for (size_t i = 0; i < avx512.size(); ++i)
      EXPECT_EQ(avx2[i], avx512[i]) << "K " << c.K << " block " << c.block_size << " at " << i;
  }
}

// The 8-bit rows stay within their rounding of the float product: each x moves by at most
// half its block's step (max |x| / 254).
TEST(NBitsQ8, ReferenceStaysWithinTheQuantizationError) {
  for (const Case& c : kCases) {
    const Problem p(c, 2, uint32_t(c.N));
    const auto prepared = p.prepare();
    std::vector<float> y(size_t(2 * c.N));
    nxrt::gemm::nbits_q8_gemm_reference(p.weights(), prepared.data(), 2, y.data(), c.N);
    for (int64_t r = 0; r < 2; ++r)
      for (int64_t n = 0; n < c.N; ++n) {
        double exact = 0.0, bound = 0.0;
        for (int64_t k0 = 0; k0 < c.K; k0 += c.block_size) {
          double max_abs = 0.0;
          for (int64_t k = k0; k < k0 + c.block_size; ++k)
            max_abs = std::max(max_abs, std::fabs(double(p.x[size_t(r * c.K + k)])));
          for (int64_t k = k0; k < k0 + c.block_size; ++k) {
            exact += double(p.x[size_t(r * c.K + k)]) * p.weight(n, k);
            bound += max_abs / 254.0 * std::fabs(p.weight(n, k)) * 1.001;
          }
        }
        EXPECT_NEAR(y[size_t(r * c.N + n)], exact, bound + 1e-4)
            << "K " << c.K << " block " << c.block_size << " output " << n;
        EXPECT_GT(bound, 0.0);
      }
  }
}

// Each value rounds to the nearest step (ties to even, as lrint), whichever code runs.
TEST(NBitsQ8, QuantizeRoundsToNearest) {
  std::mt19937 rng(4);
  std::uniform_real_distribution<float> unit(-3.0f, 3.0f);
  for (int trial = 0; trial < 50; ++trial) {
    float x[32];
    for (float& v : x) v = unit(rng);
    if (trial == 2)
      for (float& v : x) v = 0.0f;
    int8_t q[32];
    const float scale = nxrt::gemm::nbits_q8_quantize(x, 32, q);
    float max_abs = 0.0f;
    for (float v : x) max_abs = std::max(max_abs, std::fabs(v));
    EXPECT_EQ(scale, max_abs / 127.0f);
    const float inverse = max_abs > 0.0f ? 127.0f / max_abs : 0.0f;
    for (int i = 0; i < 32; ++i) EXPECT_EQ(q[i], int8_t(std::lrint(x[i] * inverse))) << i;
  }
}

TEST(NBitsQ8, NonFiniteInputGivesNaN) {
  const Case c{128, 3, 32};
  Problem p(c, 1, 3);
  p.x[40] = std::numeric_limits<float>::infinity();
  const auto prepared = p.prepare();
  std::vector<float> y(size_t(c.N));
  nxrt::gemm::nbits_q8_gemm_reference(p.weights(), prepared.data(), 1, y.data(), c.N);
  for (float v : y) EXPECT_TRUE(std::isnan(v));
  for (auto kernel : {nxrt::gemm::MicroKernel::kAvx512, nxrt::gemm::MicroKernel::kAvx2}) {
    if (!nxrt::gemm::nbits_q8_available(kernel)) continue;
    const auto strips = p.strips();
    nxrt::gemm::nbits_q8_gemm(strips, prepared.data(), 1, 0, strips.strips(), y.data(), c.N,
                              kernel);
    for (float v : y) EXPECT_TRUE(std::isnan(v));
  }
}

}  // namespace
