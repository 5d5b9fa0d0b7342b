// The Softmax kernel's row function, for fused kernels that normalize rows of their own
// (FusedAttention's scores) and must give the bits Softmax and SafeSoftmax give.
#pragma once

#include <cstdint>

namespace nxrt::cpu {

// Softmax over each of `rows` contiguous rows of n floats (y may be x): short rows in
// blocks, longer ones by vmath's vector passes, the scalar loop on CPUs without AVX2; an
// infinite maximum shifts by 0. NaN results become 0 when nan_to_zero (SafeSoftmax).
void softmax_float_rows(const float* x, float* y, int64_t rows, int64_t n, bool nan_to_zero);

}  // namespace nxrt::cpu
