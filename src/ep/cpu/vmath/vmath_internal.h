// Per-ISA entry points of vmath, chosen by vmath.cc, and the portable implementations
// they share: a vector kernel finishes the elements past its last whole vector with the
// portable one, and builds without the ISA forward to it.
#pragma once

#include "ep/cpu/vmath/vmath.h"

namespace nxrt::vmath::detail {

// Largest stride the 32-bit gather offsets of eight lanes (lane * stride) can express.
constexpr int64_t kMaxGatherStride = (int64_t(1) << 28) - 1;

void reduce_rows_portable(bool max, const float* const* rows, size_t nrows, float* out,
                          size_t begin, size_t end);
void reduce_taps_portable(bool max, const float* r, size_t count, int64_t stride, int64_t taps,
                          int64_t dilation, float scale, float* out);
void quantize_8bit_portable(const float* x, size_t n, float scale, float zero_point, bool is_signed,
                            void* y);
void dequantize_8bit_portable(const void* x, bool is_signed, size_t n, float scale,
                              float zero_point, float* y);
void depthwise_row_portable(const float* const* rows, const float* const* w, size_t nrows,
                            int64_t first, int64_t taps, int64_t stride, int64_t dilation,
                            float* out, size_t begin, size_t end);

float max_value_portable(const float* x, size_t begin, size_t end, float m);
float max_value_avx2(const float* x, size_t n);
void unary_avx2(Unary fn, const UnaryParams& p, const float* x, float* y, size_t n);
void unary_avx512(Unary fn, const UnaryParams& p, const float* x, float* y, size_t n);
// True when every x[i] is finite and |x[i]| <= limit (the vector sin/cos range).
bool all_within_avx2(const float* x, size_t n, float limit);
bool all_within_avx512(const float* x, size_t n, float limit);
void quantize_8bit_avx512(const float* x, size_t n, float scale, float zero_point, bool is_signed,
                          void* y);
void dequantize_8bit_avx512(const void* x, bool is_signed, size_t n, float scale, float zero_point,
                            float* y);
void unary_affine_avx2(Unary fn, const UnaryParams& p, float scale, float shift, const float* x,
                       float* y, size_t n);
void unary_affine_avx512(Unary fn, const UnaryParams& p, float scale, float shift, const float* x,
                         float* y, size_t n);
void reduce_rows_avx2(bool max, const float* const* rows, size_t nrows, float* out, size_t n);
void quantize_8bit_avx2(const float* x, size_t n, float scale, float zero_point, bool is_signed,
                        void* y);
void dequantize_8bit_avx2(const void* x, bool is_signed, size_t n, float scale, float zero_point,
                          float* y);
// stride <= kMaxGatherStride for these two.
void depthwise_row_avx2(const float* const* rows, const float* const* w, size_t nrows,
                        int64_t first, int64_t taps, int64_t stride, int64_t dilation, float* out,
                        size_t count);
void reduce_taps_avx2(bool max, const float* r, size_t count, int64_t stride, int64_t taps,
                      int64_t dilation, float scale, float* out);
// Strides 1 and 2 (vmath_plane_avx2.cc); false, doing nothing, for other strides.
bool depthwise_plane_avx2(const float* x, int64_t ld, const PoolWindow& w, const float* weights,
                          float* out);
bool pool_plane_avx2(bool max, const float* x, int64_t ld, const PoolWindow& w, float scale,
                     float* out);
void reduce_rows_avx512(bool max, const float* const* rows, size_t nrows, float* out, size_t n);
// Strides below 2^27 (int32 gather offsets).
void pad_planes_avx512(const float* x, int64_t planes, int64_t H, int64_t W, int64_t top,
                       int64_t left, int64_t HP, int64_t WP, int64_t dst_stride, float fill,
                       float* out);
void softmax_rows_avx512(bool log, const float* x, float* y, int64_t rows, int64_t n,
                         bool nan_to_zero);
void softmax_rows_avx2(bool log, const float* x, float* y, int64_t rows, int64_t n,
                       bool nan_to_zero);
// OW <= 16.
void window_rows_avx512(const float* plane, int64_t H, int64_t W, int64_t ih0, int64_t ih_step,
                        int64_t rows, int64_t off, int64_t lo, int64_t hi, int64_t OW, float* out);
// count <= 16, step 1 or 2, taps <= 16.
void depthwise_short_rows_avx512(const float* x, int64_t width, int64_t channels, const float* w,
                                 int64_t taps, int64_t step, int64_t pad, int64_t count, float* y);
void channel_affine_clamp_portable(float* y, int64_t channels, int64_t cols, int64_t ld,
                                   const float* scale, const float* bias, float lo, float hi);
// cols a power of two up to 8, rows dense (ld == cols).
void channel_affine_clamp_avx2(float* y, int64_t channels, int64_t cols, const float* scale,
                               const float* bias, float lo, float hi);
// count <= 4, step 1 or 2.
void strided_rows_avx2(const float* x, int64_t ld, int64_t rows, int64_t off, int64_t step,
                       int64_t lo, int64_t hi, int64_t count, float* out, int64_t out_ld);
// cols a power of two, at most 16, rows dense (ld == cols).
void channel_affine_clamp_avx512(float* y, int64_t channels, int64_t cols, const float* scale,
                                 const float* bias, float lo, float hi);
// count <= 16, step 1 or 2.
void strided_rows_avx512(const float* x, int64_t ld, int64_t rows, int64_t off, int64_t step,
                         int64_t lo, int64_t hi, int64_t count, float* out, int64_t out_ld);
void depthwise_plane_avx512(const float* x, int64_t ld, const PoolWindow& w, const float* weights,
                            float* out);
void pool_plane_avx512(bool max, const float* x, int64_t ld, const PoolWindow& w, float scale,
                       float* out);
// Any stride: 1 and 2 load rows, larger ones gather (int32 lane offsets: stride * 15 fits).
void reduce_taps_avx512(bool max, const float* r, size_t count, int64_t stride, int64_t taps,
                        int64_t dilation, float scale, float* out);

}  // namespace nxrt::vmath::detail
