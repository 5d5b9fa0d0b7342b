// The 8-bit convolution (ConvInteger) of 1-D and 2-D inputs on the 8-bit GEMM, through a
// channels-last copy of the input: each output position's window is then KH * KW runs of
// Cg contiguous bytes (one run when taps are adjacent), so building the GEMM's rows is a
// few memcpy calls instead of a byte-by-byte gather, and it happens per chunk of positions
// that stays in cache together with its product.
#pragma once

#include <cstdint>
#include <vector>

#include "ep/cpu/gemm/qgemm.h"

namespace nxrt::cpu {

// Geometry of one 2-D convolution (1-D: H = OH = KH = SH = DH = 1, PT = 0).
struct QConvGeometry {
  int64_t C = 0, M = 0, group = 1;
  int64_t H = 1, W = 1, OH = 1, OW = 1;
  int64_t KH = 1, KW = 1, SH = 1, SW = 1, DH = 1, DW = 1, PT = 0, PL = 0;
};

// W [M, C / group, KH, KW] (bytes, int8 when w_signed) packed per group as the GEMM's B,
// rows in (kh, kw, c) order to match the channels-last windows; w_zero holds 1 or M
// values (null: 0).
std::vector<gemm::PackedQuantB> pack_qconv_weights(const QConvGeometry& g, const uint8_t* w,
                                                   bool w_signed, const int32_t* w_zero,
                                                   int64_t w_zero_count);

// y [N, M, OH * OW] (int32) = (x - x_zero) conv (w - w_zero) for x [N, C, H, W] bytes.
void run_qconv(const QConvGeometry& g, int64_t N, const uint8_t* x, bool x_signed, int32_t x_zero,
               const std::vector<gemm::PackedQuantB>& packed, int32_t* y);

}  // namespace nxrt::cpu
