// Convolutions and pools on the channel-blocked layout NCHWc: a tensor [N, C, H, W] stored
// as [N, ceil(C/16), H, W, 16], sixteen channels of one position side by side. One
// AVX-512 register then holds a position's 16 channels, so a convolution is an outer
// product per input channel (one broadcast input value times 16 output channels' weights)
// with the sums of several positions and output blocks kept in registers, and a pool
// runs on whole registers. No im2col, no packing per run: the weights are blocked once.
// On AVX2 a block is two 8-lane registers: the same layout, smaller tiles.
//
// Call these only when nchwc_available() (the layout pass does not rewrite a model
// otherwise).
#pragma once

#include <cstdint>

#include "ep/cpu/vmath/vmath.h"

namespace nxrt::vmath {

constexpr int64_t kNchwcBlock = 16;

// Whether this CPU runs the blocked kernels (AVX-512F, or AVX2 with FMA).
bool nchwc_available();

// What a convolution does to each finished output before storing it:
// post(act(sum + bias + z)) with post(v) = v * post_scale + post_shift.
struct NchwcEpilogue {
  const float* bias = nullptr;  // blocks of 16 per output block (zero-padded); never null
  const float* z = nullptr;     // a sum input laid out like y, or null
  bool has_activation = false;
  Unary activation = Unary::kIdentity;
  UnaryParams params;
  float post_scale = 1.0f, post_shift = 0.0f;
};

// A dense 2-D convolution of one image. The input is either blocked (x_lane_stride 1,
// x_col_stride 16) or plain NCHW planes (x_lane_stride = plane size, x_col_stride 1), read
// as blocks of 16 channels, the last one partial when in_channels is not a multiple of
// 16. Window taps in the padding read zeros; only a blocked input may have padding (a
// plain one must come padded: pad_top = pad_left = 0 and every window inside).
struct NchwcConvArgs {
  const float* x = nullptr;
  int64_t x_block_stride = 0, x_lane_stride = 0, x_col_stride = 0, x_row_stride = 0;
  int64_t in_channels = 0;
  int64_t in_h = 0, in_w = 0, pad_top = 0, pad_left = 0;
  int64_t kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1;
  int64_t out_h = 0, out_w = 0;
  // [ceil(M/16)][ceil(C/16)][kernel_h][kernel_w][16 inputs][16 outputs], zero-padded.
  const float* w = nullptr;
  float* y = nullptr;  // [ceil(M/16)][out_h][out_w][16]
  NchwcEpilogue epilogue;
};

// Output blocks [block0, block1) and positions [pos0, pos1) (of the out_h x out_w plane,
// row by row) of the convolution.
void nchwc_conv(const NchwcConvArgs& a, int64_t block0, int64_t block1, int64_t pos0, int64_t pos1);

// A depthwise 2-D convolution (one input channel per output) or a pool of one image, both
// in the blocked layout, unpadded input: windows are clipped at the borders.
struct NchwcWindowArgs {
  const float* x = nullptr;  // [blocks][in_h][in_w][16]
  int64_t in_h = 0, in_w = 0;
  int64_t kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1;
  int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  int64_t out_h = 0, out_w = 0;
  float* y = nullptr;  // [blocks][out_h][out_w][16]
};

// Depthwise: w is [blocks][kernel_h][kernel_w][16].
void nchwc_depthwise(const NchwcWindowArgs& a, const float* w, const NchwcEpilogue& e,
                     int64_t block0, int64_t block1, int64_t row0, int64_t row1);

enum class NchwcPool { kMax, kAverage, kAverageIncludePad };
void nchwc_pool(const NchwcWindowArgs& a, NchwcPool kind, int64_t block0, int64_t block1,
                int64_t row0, int64_t row1);

// Winograd F(2x2, 3x3) or F(4x4, 3x3) on the blocked layout (vmath/winograd.h has the
// transforms): the 3x3 stride-1 convolution as 16 (or 36) products of [tiles][C] by
// [C][M], each a 1x1 blocked convolution (nchwc_conv) over the tiles. Tile t of an image
// is its s x s output block (t / tiles_w, t % tiles_w), s = `tile`; its (s + 2)^2 input
// window starts at (s * row - pad_top, s * column - pad_left), zeros outside the input.
struct NchwcWinogradTiles {
  int64_t in_h = 0, in_w = 0, pad_top = 0, pad_left = 0;
  int64_t out_h = 0, out_w = 0;
  int64_t tile = 2;     // outputs per tile side: 2 (16 matrices) or 4 (36)
  int64_t tiles_w = 0;  // ceil(out_w / tile)
  int64_t first = 0;    // the first tile of this chunk
  int64_t count = 0;    // tiles in the chunk
  // Rows of v and m (one per value and block) hold `row_tiles` tiles from tile
  // `row_first`, so threads can transform parts of one row; 0: the chunk's own count.
  int64_t row_first = 0, row_tiles = 0;
  int64_t row_length() const { return row_tiles ? row_tiles : count; }
  int64_t row_offset() const { return row_tiles ? first - row_first : 0; }
};

// Input tiles of blocks [block0, block1) of x ([blocks][in_h][in_w][16]) to
// v[((xi * blocks + b) * row + offset + t) * 16 + lane] (row = g.row_length(), offset =
// g.row_offset()), xi the 16 (or 36) transformed values.
void nchwc_winograd_input(const float* x, int64_t blocks, int64_t block0, int64_t block1,
                          const NchwcWinogradTiles& g, float* v);

// The products m[((xi * blocks + b) * row + offset + t) * 16 + lane] of blocks [block0, block1)
// back to the tile x tile outputs of y ([blocks][out_h][out_w][16]), through the epilogue
// (e.bias, e.z at y's layout).
void nchwc_winograd_output(const float* m, int64_t blocks, int64_t block0, int64_t block1,
                           const NchwcWinogradTiles& g, const NchwcEpilogue& e, float* y);

// y = act(x * scale[lane] + shift[lane]) over one block [positions][16] (act: Relu in
// registers, others through unary()); x and y may be the same.
void nchwc_affine(const float* x, int64_t positions, const float* scale, const float* shift,
                  bool has_activation, Unary activation, const UnaryParams& params, float* y);

// One block [positions][16] of a blocked tensor to its first `lanes` channel planes:
// y[l * positions + p] = x[p * 16 + l].
void nchwc_block_to_planes(const float* x, int64_t positions, int64_t lanes, float* y);

// The other way: `lanes` (<= 16) channel planes, plane_stride apart, to one block
// [positions][16], the lanes past them zero: y[p * 16 + l] = x[l * plane_stride + p].
void nchwc_planes_to_block(const float* x, int64_t positions, int64_t plane_stride, int64_t lanes,
                           float* y);

}  // namespace nxrt::vmath
