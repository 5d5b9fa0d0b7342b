// The packed/blocked SGEMM against the reference loops, on sizes that exercise every
// edge tile, both micro-kernels, transposes, alpha/beta and strided C; and the
// block-quantized single-row product (nbits_gemv.h).
#include "ep/cpu/gemm/gemm.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "core/parallel.h"
#include "ep/cpu/gemm/nbits_gemv.h"

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
          << "m=" << c.m << " n=" << c.n << " k=" << c.k << " ta=" << ta << " tb=" << tb << " at ("
          << i << "," << j << ")";
}

void check_all(MicroKernel kernel) {
  const Case cases[] = {{1, 1, 1},    {7, 13, 5},     {33, 65, 17},   {1, 40, 9},   {40, 1, 9},
                        {6, 16, 300}, {97, 131, 259}, {200, 2100, 3}, {12, 24, 513}};
  for (const Case& c : cases)
    for (int t = 0; t < 4; ++t) {
      check(kernel, c, t & 1, t & 2, 1.0f, 0.0f, 0);
      check(kernel, c, t & 1, t & 2, 0.5f, -1.5f, 3);
    }
}

const char* kernel_name(MicroKernel k) {
  switch (k) {
    case MicroKernel::kAuto:
      return "auto";
    case MicroKernel::kPortable:
      return "portable";
    case MicroKernel::kAvx2:
      return "avx2";
    case MicroKernel::kAvx512:
      return "avx512";
    case MicroKernel::kAvx512x48:
      return "avx512x48";
  }
  return "?";
}

// Every micro-kernel this CPU runs, each tested explicitly (not only the dispatched one).
std::vector<MicroKernel> available_kernels() {
  std::vector<MicroKernel> out;
  for (MicroKernel k :
       {MicroKernel::kPortable, MicroKernel::kAvx2, MicroKernel::kAvx512, MicroKernel::kAvx512x48})
    if (nxrt::gemm::kernel_available(k)) out.push_back(k);
  return out;
}

TEST(Gemm, AutoMatchesReference) { check_all(MicroKernel::kAuto); }
TEST(Gemm, PortableMatchesReference) { check_all(MicroKernel::kPortable); }
TEST(Gemm, Avx2MatchesReference) {
  if (!nxrt::gemm::has_avx2_fma()) GTEST_SKIP() << "no AVX2+FMA on this CPU";
  check_all(MicroKernel::kAvx2);
}
TEST(Gemm, Avx512MatchesReference) {
  if (!nxrt::gemm::has_avx512f()) GTEST_SKIP() << "no AVX-512F on this CPU";
  check_all(MicroKernel::kAvx512);
}

TEST(Gemm, Avx512x48MatchesReference) {
  if (!nxrt::gemm::has_avx512f()) GTEST_SKIP() << "no AVX-512F on this CPU";
  check_all(MicroKernel::kAvx512x48);
}

TEST(Gemm, AutoPicksAnAvailableKernel) {
  EXPECT_TRUE(nxrt::gemm::kernel_available(nxrt::gemm::best_kernel()));
  EXPECT_NE(nxrt::gemm::best_kernel(), MicroKernel::kAuto);
}

// Pre-packed operands (left or right, both transposes, C transposed too) against the
// reference, for every available kernel; K > 256 covers several packed K slices.
void check_packed(MicroKernel kernel, const Case& c, bool left, bool ta, bool tb, bool tc,
                  float alpha, float beta, int64_t depth = 0) {
  const int64_t lda = ta ? c.m : c.k, ldb = tb ? c.k : c.n;
  const int64_t ldc = (tc ? c.m : c.n) + 2;
  const auto a = random_vec(size_t(c.m * c.k), 11);
  const auto b = random_vec(size_t(c.k * c.n), 12);
  const int64_t rows_c = tc ? c.n : c.m;
  auto expect = random_vec(size_t(rows_c * ldc), 13);
  auto got = expect;
  if (tc) {
    // C^T = op(B)^T op(A)^T, in the reference's row-major terms.
    nxrt::gemm::sgemm_reference(!tb, !ta, c.n, c.m, c.k, alpha, b.data(), ldb, a.data(), lda, beta,
                                expect.data(), ldc);
  } else {
    nxrt::gemm::sgemm_reference(ta, tb, c.m, c.n, c.k, alpha, a.data(), lda, b.data(), ldb, beta,
                                expect.data(), ldc);
  }
  if (left) {
    const auto pa = nxrt::gemm::PackedMatrix::pack_left(ta, c.m, c.k, a.data(), lda, kernel);
    ASSERT_EQ(pa.kernel(), kernel);
    nxrt::gemm::sgemm_packed_left(pa, tb, c.n, alpha, b.data(), ldb, beta, got.data(), ldc);
  } else {
    const auto pb =
        nxrt::gemm::PackedMatrix::pack_right(tb, c.k, c.n, b.data(), ldb, kernel, depth);
    ASSERT_EQ(pb.kernel(), kernel);
    nxrt::gemm::sgemm_packed_right(ta, c.m, alpha, a.data(), lda, pb, beta, got.data(), ldc, tc);
  }
  const float tol = 1e-5f * float(c.k + 4);
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], expect[i], tol)
        << kernel_name(kernel) << (left ? " left" : " right") << " m=" << c.m << " n=" << c.n
        << " k=" << c.k << " ta=" << ta << " tb=" << tb << " tc=" << tc << " at " << i;
}

TEST(Gemm, PackedMatchesReference) {
  const Case cases[] = {{1, 1, 1},  {1, 512, 128}, {2, 40, 9},    {4, 128, 387},  {3, 258, 256},
                        {7, 13, 5}, {12, 33, 17},  {13, 64, 300}, {97, 131, 259}, {1, 20, 600}};
  for (MicroKernel kernel : available_kernels())
    for (const Case& c : cases)
      for (int t = 0; t < 8; ++t) {
        const bool ta = t & 1, tb = t & 2, tc = t & 4;
        check_packed(kernel, c, false, ta, tb, tc, 1.0f, 0.0f);
        check_packed(kernel, c, false, ta, tb, tc, 0.5f, -1.5f);
        if (!tc) {
          check_packed(kernel, c, true, ta, tb, false, 1.0f, 0.0f);
          check_packed(kernel, c, true, ta, tb, false, -2.0f, 1.0f);
        }
      }
}

// Right operands packed in K slices of another depth than the default: one slice for all
// of K, and slices narrower than it.
TEST(Gemm, PackedRightAtOtherDepthsMatchesReference) {
  const Case cases[] = {{8, 600, 96}, {49, 300, 200}, {16, 40, 130}};
  for (MicroKernel kernel : available_kernels())
    for (const Case& c : cases)
      for (int64_t depth : {c.k, int64_t(64), int64_t(512)})
        for (int t : {0, 5, 6}) {
          const bool ta = t & 1, tb = t & 2, tc = t & 4;
          check_packed(kernel, c, false, ta, tb, tc, 1.0f, 0.0f, depth);
          check_packed(kernel, c, false, ta, tb, tc, 0.5f, -1.5f, depth);
        }
}

// On two threads, products big enough to split: by rows (M > N) and by columns, packed
// operands cut at their panels, partial last pieces.
TEST(Gemm, SplitAcrossThreadsMatchesReference) {
  auto pool = nxrt::make_worker_pool(2);
  nxrt::ParallelScope scope(pool.get());
  const Case cases[] = {
      {301, 70, 257}, {70, 301, 257}, {1000, 49, 200}, {49, 1000, 200}, {256, 196, 1024}};
  for (MicroKernel kernel : available_kernels())
    for (const Case& c : cases)
      for (int t : {0, 3, 5, 6}) {  // the transposes split no differently; a few suffice
        const bool ta = t & 1, tb = t & 2, tc = t & 4;
        check_packed(kernel, c, false, ta, tb, tc, 1.0f, 0.0f);
        if (!tc) check_packed(kernel, c, true, ta, tb, false, 0.5f, -1.5f);
        if (!tc) check(kernel, c, ta, tb, 1.0f, 0.0f, 1);
      }
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

}  // namespace

// The row-pointer GEMM (B given as row pointers, as a direct convolution's shifted input
// rows) on every kernel that has it, plain and with the convolution epilogue: dropped
// columns (wp > ow), scale and shift per row, a sum input and a clamp, over several K
// slices and partial row and column tiles.
void check_rows(MicroKernel kernel, int64_t M, int64_t K, int64_t oh, int64_t wp, int64_t ow) {
  using nxrt::gemm::PackedMatrix;
  const int64_t N = oh * wp;
  const auto a = random_vec(size_t(M * K), 11);
  const auto b = random_vec(size_t(K * N + 64), 12);  // rows overlap, as shifted rows do
  std::vector<const float*> rows(static_cast<size_t>(K));
  for (int64_t k = 0; k < K; ++k) rows[size_t(k)] = b.data() + k * 3 % 64 + k * (N / 4);
  const PackedMatrix packed = PackedMatrix::pack_left(false, M, K, a.data(), K, kernel);
  std::vector<double> want(size_t(M * N), 0.0);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t k = 0; k < K; ++k)
      for (int64_t j = 0; j < N; ++j)
        want[size_t(m * N + j)] += double(a[size_t(m * K + k)]) * rows[size_t(k)][j];
  const float tol = 1e-5f * float(K + 4);
  std::vector<float> c(size_t(M * N), 7.0f);
  if (!nxrt::gemm::sgemm_packed_left_rows(packed, N, rows.data(), 0, c.data(), N)) return;
  for (int64_t i = 0; i < M * N; ++i)
    ASSERT_NEAR(c[size_t(i)], want[size_t(i)], tol) << kernel_name(kernel) << " plain at " << i;
  const int64_t plane = oh * ow;
  const auto scale = random_vec(size_t(M), 13), shift = random_vec(size_t(M), 14);
  const auto z = random_vec(size_t(M * plane), 15);
  std::vector<float> y(size_t(M * plane), -9.0f);
  nxrt::gemm::ConvOutput out;
  out.y = y.data();
  out.plane = plane;
  out.wp = wp;
  out.ow = ow;
  out.scale = scale.data();
  out.shift = shift.data();
  out.z = z.data();
  out.lo = -0.5f;
  out.hi = 2.0f;
  std::fill(c.begin(), c.end(), 7.0f);
  ASSERT_TRUE(
      nxrt::gemm::sgemm_packed_left_rows(packed, N, rows.data(), 0, c.data(), N, 0, -1, &out));
  for (int64_t m = 0; m < M; ++m)
    for (int64_t r = 0; r < oh; ++r)
      for (int64_t col = 0; col < ow; ++col) {
        const size_t at = size_t(m * plane + r * ow + col);
        const double v =
            want[size_t(m * N + r * wp + col)] * scale[size_t(m)] + shift[size_t(m)] + z[at];
        ASSERT_NEAR(y[at], std::clamp(v, -0.5, 2.0), tol * 4)
            << kernel_name(kernel) << " conv at m=" << m << " row " << r << " col " << col;
      }
}

TEST(Gemm, RowPointerProductMatchesReference) {
  for (MicroKernel kernel : {MicroKernel::kAvx2, MicroKernel::kAvx512, MicroKernel::kAvx512x48}) {
    if (!nxrt::gemm::kernel_available(kernel)) continue;
    check_rows(kernel, 13, 20, 3, 21, 19);   // partial tiles, dropped columns
    check_rows(kernel, 6, 300, 2, 40, 40);   // several K slices, no dropped column
    check_rows(kernel, 1, 9, 5, 7, 5);       // one row, narrow planes
    check_rows(kernel, 25, 130, 4, 64, 61);  // wide rows
  }
}

// The single-row product on 4- and 8-bit block-quantized weights (MatMulNBits' layout)
// against the dequantized weights in double, on a row range that starts inside.
namespace {

// `rows` rows of x at once (nbits_gemm_rows), or one through nbits_gemv when rows is 0.
void check_nbits_gemv(nxrt::gemm::MicroKernel kernel, int64_t bits, int64_t K, int64_t N,
                      int64_t block_size, int64_t rows = 0) {
  std::mt19937 rng(uint32_t(bits * 1000 + K + block_size));
  const int64_t blocks = K / block_size, row_bytes = K * bits / 8;
  std::vector<uint8_t> codes(size_t(N * row_bytes));
  for (uint8_t& c : codes) c = uint8_t(rng());
  const auto scale = random_vec(size_t(N * blocks), 7);
  std::vector<float> zero(scale.size()), neg_zp_scale(scale.size());
  for (size_t i = 0; i < zero.size(); ++i) {
    zero[i] = float(rng() % (1u << bits));
    neg_zp_scale[i] = -zero[i] * scale[i];
  }
  const int64_t m_count = std::max<int64_t>(rows, 1);
  const auto x = random_vec(size_t(K * m_count), 8);
  const int64_t stride = nxrt::gemm::nbits_prepared_floats(K, block_size);
  std::vector<float> prepared(size_t(stride * m_count));
  for (int64_t m = 0; m < m_count; ++m)
    nxrt::gemm::nbits_prepare_row(x.data() + m * K, K, block_size, bits,
                                  prepared.data() + m * stride);
  const nxrt::gemm::NBitsWeights w{
      N, K, block_size, bits, codes.data(), scale.data(), neg_zp_scale.data()};
  std::vector<float> y(size_t(N * m_count), -7.0f);
  const int64_t n0 = 3, n1 = N - 2;
  if (rows == 0)
    nxrt::gemm::nbits_gemv(w, prepared.data(), n0, n1, y.data(), kernel);
  else
    nxrt::gemm::nbits_gemm_rows(w, prepared.data(), stride, rows, n0, n1, y.data(), N, kernel);
  for (int64_t m = 0; m < m_count; ++m)
    for (int64_t n = 0; n < N; ++n) {
      const float got = y[size_t(m * N + n)];
      if (n < n0 || n >= n1) {
        EXPECT_EQ(got, -7.0f) << "row " << n << " is outside the range";
        continue;
      }
      double want = 0.0, magnitude = 0.0;
      for (int64_t k = 0; k < K; ++k) {
        const uint8_t byte = codes[size_t(n * row_bytes + k * bits / 8)];
        const int code = bits == 8 ? byte : (k % 2 ? byte >> 4 : byte & 15);
        const size_t b = size_t(n * blocks + k / block_size);
        const double term = double(x[size_t(m * K + k)]) * (code - zero[b]) * scale[b];
        want += term;
        magnitude += std::abs(term);
      }
      EXPECT_NEAR(got, want, 1e-5 * magnitude + 1e-6)
          << "kernel " << int(kernel) << " bits " << bits << " K " << K << " block " << block_size
          << " rows " << rows << " x row " << m << " output " << n;
    }
}

}  // namespace

// Every kernel this CPU runs, one row and each row count it takes at once.
TEST(Gemm, BlockQuantizedRowProductMatchesDequantized) {
  using nxrt::gemm::MicroKernel;
  for (MicroKernel kernel : {MicroKernel::kPortable, MicroKernel::kAvx2, MicroKernel::kAvx512}) {
    if (!nxrt::gemm::kernel_available(kernel)) continue;
    for (int64_t bits : {4, 8})
      for (int64_t rows = 0; rows <= nxrt::gemm::kNBitsRowsAtOnce; ++rows) {
        check_nbits_gemv(kernel, bits, 96, 37, 32, rows);
        check_nbits_gemv(kernel, bits, 256, 21, 64, rows);
        check_nbits_gemv(kernel, bits, 128, 9, 128, rows);
      }
  }
}
