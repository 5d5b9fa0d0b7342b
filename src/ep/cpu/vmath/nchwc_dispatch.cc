// The public NCHWc entry points (nchwc.h): each forwards to the kernels of the widest
// instruction set this CPU has, chosen once.
#include "ep/cpu/vmath/nchwc_isa.h"

namespace nxrt::vmath {
namespace {

// vmath's choice, so NXRT_VMATH=avx2 (or portable) caps these kernels too.
const NchwcKernels* pick_kernels() {
  if (uses_avx512()) return nchwc_kernels_avx512();
  if (uses_avx2()) return nchwc_kernels_avx2();
  return nullptr;
}

const NchwcKernels& kernels() {
  static const NchwcKernels* const k = pick_kernels();
  return *k;  // callers checked nchwc_available()
}

}  // namespace

bool nchwc_available() {
  static const bool yes = pick_kernels() != nullptr;
  return yes;
}

void nchwc_conv(const NchwcConvArgs& a, int64_t block0, int64_t block1, int64_t pos0,
                int64_t pos1) {
  kernels().conv(a, block0, block1, pos0, pos1);
}

void nchwc_depthwise(const NchwcWindowArgs& a, const float* w, const NchwcEpilogue& e,
                     int64_t block0, int64_t block1, int64_t row0, int64_t row1) {
  kernels().depthwise(a, w, e, block0, block1, row0, row1);
}

void nchwc_pool(const NchwcWindowArgs& a, NchwcPool kind, int64_t block0, int64_t block1,
                int64_t row0, int64_t row1) {
  kernels().pool(a, kind, block0, block1, row0, row1);
}

void nchwc_winograd_input(const float* x, int64_t blocks, int64_t block0, int64_t block1,
                          const NchwcWinogradTiles& g, float* v) {
  kernels().winograd_input(x, blocks, block0, block1, g, v);
}

void nchwc_winograd_output(const float* m, int64_t blocks, int64_t block0, int64_t block1,
                           const NchwcWinogradTiles& g, const NchwcEpilogue& e, float* y) {
  kernels().winograd_output(m, blocks, block0, block1, g, e, y);
}

void nchwc_affine(const float* x, int64_t positions, const float* scale, const float* shift,
                  bool has_activation, Unary activation, const UnaryParams& params, float* y) {
  kernels().affine(x, positions, scale, shift, has_activation, activation, params, y);
}

void nchwc_block_to_planes(const float* x, int64_t positions, int64_t lanes, float* y) {
  kernels().block_to_planes(x, positions, lanes, y);
}

void nchwc_planes_to_block(const float* x, int64_t positions, int64_t plane_stride, int64_t lanes,
                           float* y) {
  kernels().planes_to_block(x, positions, plane_stride, lanes, y);
}

}  // namespace nxrt::vmath
