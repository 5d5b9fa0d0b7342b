#include "ep/cpu/kernels/qconv_gemm.h"

#include <algorithm>
#include <cstring>

#include "core/parallel.h"
#include "ep/cpu/kernels/common.h"
#include "ep/cpu/kernels/element_copy.h"

namespace nxrt::cpu {
namespace {

// Positions per chunk: its rows of windows (K bytes each) stay near 256 KiB so they, their
// int32 products and the packed weights share the L2 cache; a multiple of the GEMM's 12
// rows.
int64_t chunk_positions(int64_t K, int64_t P) {
  const int64_t rows = std::clamp<int64_t>((int64_t(1) << 18) / std::max<int64_t>(K, 1), 24, 480);
  return std::min(P, rows / 12 * 12);
}

// Extent of the padded channels-last input that the windows read, per dim.
int64_t padded_extent(int64_t out, int64_t stride, int64_t kernel, int64_t dilation) {
  return (out - 1) * stride + (kernel - 1) * dilation + 1;
}

// xt[(hp * Wp + wp) * C + c] = x[c][hp - PT][wp - PL], or `pad` outside the image, for rows
// [hp0, hp1).
void to_channels_last(const QConvGeometry& g, const uint8_t* x, uint8_t pad, int64_t Wp,
                      int64_t hp0, int64_t hp1, uint8_t* xt) {
  const int64_t C = g.C, plane = g.H * g.W;
  const int64_t w_lo = std::min(g.PL, Wp), w_hi = std::clamp(g.PL + g.W, w_lo, Wp);
  for (int64_t hp = hp0; hp < hp1; ++hp) {
    uint8_t* row = xt + hp * Wp * C;
    const int64_t h = hp - g.PT;
    if (h < 0 || h >= g.H) {
      std::memset(row, pad, size_t(Wp * C));
      continue;
    }
    std::memset(row, pad, size_t(w_lo * C));
    std::memset(row + w_hi * C, pad, size_t((Wp - w_hi) * C));
    transpose_2d(x + h * g.W + (w_lo - g.PL), row + w_lo * C, w_hi - w_lo, C, plane, C);
  }
}

}  // namespace

std::vector<gemm::PackedQuantB> pack_qconv_weights(const QConvGeometry& g, const uint8_t* w,
                                                   bool w_signed, const int32_t* w_zero,
                                                   int64_t w_zero_count) {
  const int64_t Mg = g.M / g.group, Cg = g.C / g.group, taps = g.KH * g.KW, K = Cg * taps;
  std::vector<gemm::PackedQuantB> out;
  std::vector<uint8_t> wt(static_cast<size_t>(K * Mg));
  std::vector<int32_t> zero(static_cast<size_t>(Mg));
  for (int64_t grp = 0; grp < g.group; ++grp) {
    for (int64_t m = 0; m < Mg; ++m) {
      const uint8_t* filter = w + (grp * Mg + m) * K;  // [Cg][taps]
      for (int64_t c = 0; c < Cg; ++c)
        for (int64_t t = 0; t < taps; ++t) wt[size_t((t * Cg + c) * Mg + m)] = filter[c * taps + t];
      zero[size_t(m)] = w_zero_count == 0 ? 0 : w_zero[w_zero_count == 1 ? 0 : grp * Mg + m];
    }
    out.push_back(gemm::PackedQuantB::pack(K, Mg, wt.data(), Mg, w_signed, zero.data(), Mg));
  }
  return out;
}

void run_qconv(const QConvGeometry& g, int64_t N, const uint8_t* x, bool x_signed, int32_t x_zero,
               const std::vector<gemm::PackedQuantB>& packed, int32_t* y) {
  const int64_t Mg = g.M / g.group, Cg = g.C / g.group, K = Cg * g.KH * g.KW;
  const int64_t P = g.OH * g.OW;
  const int64_t Hp = padded_extent(g.OH, g.SH, g.KH, g.DH);
  const int64_t Wp = padded_extent(g.OW, g.SW, g.KW, g.DW);
  // The padding holds x's zero point: 0 once the GEMM subtracts it.
  const uint8_t pad = uint8_t(x_zero);
  uint8_t* xt = thread_scratch<uint8_t>(size_t(Hp * Wp * g.C), 3);
  // One row of taps, adjacent and all channels: a window is one run of xt, so the GEMM
  // reads its rows in place (row p at p * SW * C).
  const bool in_place = g.group == 1 && g.OH == 1 && g.KH == 1 && g.DW == 1;
  const int64_t chunk = chunk_positions(K, P);
  const int64_t chunks = (P + chunk - 1) / chunk;
  for (int64_t n = 0; n < N; ++n) {
    const uint8_t* xn = x + n * g.C * g.H * g.W;
    const size_t row_pieces = parallel_pieces(double(Hp * Wp * g.C), double(1 << 16));
    parallel_for(row_pieces, [&](size_t piece) {
      to_channels_last(g, xn, pad, Wp, Hp * int64_t(piece) / int64_t(row_pieces),
                       Hp * int64_t(piece + 1) / int64_t(row_pieces), xt);
    });
    for (int64_t grp = 0; grp < g.group; ++grp) {
      int32_t* yg = y + (n * g.M + grp * Mg) * P;
      parallel_for(size_t(chunks), [&](size_t c) {
        const ParallelScope serial(nullptr);  // the chunks are the parallel work
        const int64_t p0 = int64_t(c) * chunk, rows = std::min(chunk, P - p0);
        const uint8_t* a = xt + p0 * g.SW * g.C;
        int64_t lda = g.SW * g.C;
        if (!in_place) {
          uint8_t* cols = thread_scratch<uint8_t>(size_t(chunk * K), 1);
          for (int64_t p = p0; p < p0 + rows; ++p) {
            const int64_t oh = p / g.OW, ow = p % g.OW;
            uint8_t* dst = cols + (p - p0) * K;
            for (int64_t kh = 0; kh < g.KH; ++kh) {
              const uint8_t* src = xt + ((oh * g.SH + kh * g.DH) * Wp + ow * g.SW) * g.C + grp * Cg;
              for (int64_t kw = 0; kw < g.KW; ++kw, dst += Cg)
                std::memcpy(dst, src + kw * g.DW * g.C, size_t(Cg));
            }
          }
          a = cols;
          lda = K;
        }
        int32_t* prod = thread_scratch<int32_t>(size_t(chunk * Mg), 2);
        gemm::qgemm(rows, a, lda, x_signed, x_zero, packed[size_t(grp)], prod, Mg);
        transpose_2d(prod, yg + p0, Mg, rows, Mg, P);
      });
    }
  }
}

}  // namespace nxrt::cpu
