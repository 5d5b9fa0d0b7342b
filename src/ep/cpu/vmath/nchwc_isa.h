// The NCHWc kernels of one instruction set as a table, so that nchwc.cc picks AVX-512 or
// AVX2 once per process and the kernels themselves are written once (nchwc_kernels.inc).
#pragma once

#include "ep/cpu/vmath/nchwc.h"

namespace nxrt::vmath {

struct NchwcKernels {
  void (*conv)(const NchwcConvArgs&, int64_t, int64_t, int64_t, int64_t);
  void (*depthwise)(const NchwcWindowArgs&, const float*, const NchwcEpilogue&, int64_t, int64_t,
                    int64_t, int64_t);
  void (*pool)(const NchwcWindowArgs&, NchwcPool, int64_t, int64_t, int64_t, int64_t);
  void (*winograd_input)(const float*, int64_t, int64_t, int64_t, const NchwcWinogradTiles&,
                         float*);
  void (*winograd_output)(const float*, int64_t, int64_t, int64_t, const NchwcWinogradTiles&,
                          const NchwcEpilogue&, float*);
  void (*affine)(const float*, int64_t, const float*, const float*, bool, Unary, const UnaryParams&,
                 float*);
  void (*block_to_planes)(const float*, int64_t, int64_t, float*);
  void (*planes_to_block)(const float*, int64_t, int64_t, int64_t, float*);
};

// Only call when gemm::has_avx512f() / gemm::has_avx2_fma(); null on other targets.
const NchwcKernels* nchwc_kernels_avx512();
const NchwcKernels* nchwc_kernels_avx2();

}  // namespace nxrt::vmath
