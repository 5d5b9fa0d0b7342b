// Convolutions that are a short-time Fourier transform (conv_dft.cc).
#pragma once

#include "ep/cpu/kernels/conv_geometry.h"
#include "ep/kernel.h"

namespace nxrt::cpu {

// `general` itself, or, when the constant `weight` is a windowed DFT basis (and the
// attributes leave the convolution a plain 1-D one), a kernel that runs an FFT per frame
// and hands every other case (other inputs at run time) to `general`.
KernelPtr maybe_dft_conv(KernelPtr general, const WindowAttrs& attrs, int64_t group,
                         const Tensor* weight, bool has_bias);

}  // namespace nxrt::cpu
