// Per-ISA entry points of vmath, chosen by vmath.cc.
#pragma once

#include "ep/cpu/vmath/vmath.h"

namespace nxrt::vmath::detail {

void unary_avx2(Unary fn, const UnaryParams& p, const float* x, float* y, size_t n);

}  // namespace nxrt::vmath::detail
