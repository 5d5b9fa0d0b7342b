// Winograd F(2x2, 3x3) transforms for 3x3 stride-1 convolutions (Lavin and Gray, "Fast
// Algorithms for Convolutional Neural Networks", 2015). Each 2x2 block of outputs comes
// from the 4x4 input tile d around it: Y = A^T [(G g G^T) . (B^T d B)] A, so a
// convolution becomes 16 products of the transformed weights (M x C) and the
// transformed tiles (C x tiles): 16 multiply-adds per 4 outputs instead of 36.
//   B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1],  G = [1 0 0; .5 .5 .5; .5 -.5 .5; 0 0 1],
//   A^T = [1 1 1 0; 0 1 -1 -1].
// The element (k, l) of a 4x4 transform is matrix xi = 4k + l of the 16.
// The tile transforms work on 16 tiles of a tile row at once, one per lane, and exist
// for AVX-512 only: call them only when gemm::has_avx512f().
#pragma once

#include <cstdint>

namespace nxrt::vmath {

constexpr int kWinogradMatrices = 16;

// G g G^T of one 3x3 filter g (row-major) into u[xi * u_step] for xi in [0, 16).
void winograd_f23_filter(const float* g, float* u, int64_t u_step);

// F(4x4, 3x3), same paper, interpolation points 0, +-1, +-2 (and infinity): 6x6 input
// tiles, 36 products per 16 outputs (2.25 per output and channel pair, against 4 for
// F(2x2, 3x3) and 9 direct).
//   B^T = [4 0 -5 0 1 0; 0 -4 -4 1 1 0; 0 4 -4 -1 1 0; 0 -2 -1 2 1 0; 0 2 -1 -2 1 0;
//          0 4 0 -5 0 1],
//   G = [1/4 0 0; -1/6 -1/6 -1/6; -1/6 1/6 -1/6; 1/24 1/12 1/6; 1/24 -1/12 1/6; 0 0 1],
//   A^T = [1 1 1 1 1 0; 0 1 -1 2 -2 0; 0 1 1 4 4 0; 0 1 -1 8 -8 1].
// Element (k, l) of a 6x6 transform is matrix xi = 6k + l of the 36.
constexpr int kWinogradF43Matrices = 36;

// G g G^T of one 3x3 filter g (row-major) into u[xi * u_step] for xi in [0, 36), computed
// in double (the sixths and twenty-fourths round once).
void winograd_f43_filter(const float* g, float* u, int64_t u_step);

// B^T d B of tiles j in [0, count) (count <= 16), tile j's 4x4 input at p + 2j (rows ld
// floats apart; p already at the tile row's first input row and first tile's column):
// value xi of tile j to v[xi * v_step + j]. Reads 34 floats of each of the 4 rows from p.
void winograd_f23_input(const float* p, int64_t ld, int64_t count, float* v, int64_t v_step);

// What the output transform does to each output before storing it:
// min(hi, max(lo, y * scale + shift + z)), z (rows ldz apart, at the same place as y) when
// not null.
struct WinogradEpilogue {
  float scale = 1.0f, shift = 0.0f;
  float lo = -__builtin_inff(), hi = __builtin_inff();
  const float* z = nullptr;
  int64_t ldz = 0;
};

// A^T M A of tiles j in [0, count), their 16 products at m[xi * m_step + j]: the 2x2
// outputs of tile j to y[r * ldy + 2j + c], only rows r < rows and columns 2j + c < cols.
void winograd_f23_output(const float* m, int64_t m_step, int64_t count, float* y, int64_t ldy,
                         int64_t rows, int64_t cols, const WinogradEpilogue& e);

}  // namespace nxrt::vmath
