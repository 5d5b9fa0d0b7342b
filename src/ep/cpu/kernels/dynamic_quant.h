// DynamicQuantizeLinear's per-tensor parameters, shared by the kernels that quantize a
// float activation to uint8 at run time (DynamicQuantizeLinear, com.microsoft
// DynamicQuantizeMatMul).
#pragma once

#include <cstdint>

namespace nxrt::cpu {

struct DynamicQuantParams {
  float scale = 1.0f;
  float zero_point = 0.0f;  // an integer in [0, 255]
};

// The uint8 scale and zero point of x[0..n): the range [min(x, 0), max(x, 0)] (NaN
// skipped) over 255 steps, the zero point 0 - min / scale rounded half to even. Quantize
// with vmath::quantize_8bit(x, n, scale, zero_point, false, y).
DynamicQuantParams dynamic_quant_params(const float* x, int64_t n);

}  // namespace nxrt::cpu
