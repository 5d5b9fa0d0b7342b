// Vectorized float32 math over arrays: the activations and transcendental functions that
// elementwise kernels apply. Each function has an AVX2+FMA implementation, picked at run
// time when the CPU has it, and a portable one in double precision that is also the
// reference the tests compare the vector one against.
//
// The vector versions use polynomial approximations whose error is a few float ulps
// (relative), well inside the ONNX test tolerance (rtol 1e-3, atol 1e-7); NaN inputs give
// NaN outputs, +-inf give the function's limit.
#pragma once

#include <cstddef>
#include <cstdint>

namespace nxrt::vmath {

enum class Unary : uint8_t {
  kExp,
  kTanh,
  kSigmoid,
  kErf,
  kGelu,         // x * Phi(x), exact (erf) form
  kGeluTanh,     // the tanh approximation of Gelu
  kRelu,         // NaN passes through
  kLeakyRelu,    // alpha
  kHardSigmoid,  // max(0, min(1, alpha * x + beta))
  kHardSwish,    // x * max(0, min(1, x / 6 + 1 / 2))
  kSwish,        // x * sigmoid(alpha * x): Swish, SiLU (alpha 1), contrib QuickGelu
  kElu,          // alpha
  kSelu,         // alpha, gamma
  kSqrt,
  kReciprocal,
  kNeg,
  kAbs,
  kClip,  // [alpha, beta]
  kSoftsign,
  kSoftplus,  // ln(1 + e^x)
  kMish,      // x * tanh(softplus(x))
  kLog,       // natural logarithm: 0 -> -inf, negatives -> NaN
  kSin,       // the vector forms reduce |x| <= kSinCosVectorLimit; unary() splits out the rest
  kCos,
  kIdentity,  // x (unary_affine with no activation)
};

// Below this |x| the vector sin and cos reduce x by pi / 2 exactly enough (three-part
// constant, 13-bit quotients); larger inputs (and inf) take the double-precision path.
constexpr float kSinCosVectorLimit = 8192.0f;

struct UnaryParams {
  float alpha = 0, beta = 0, gamma = 0;
};

// y[i] = f(x[i]) for i < n; x and y may be the same array. Uses the best implementation
// this CPU runs.
void unary(Unary fn, const UnaryParams& p, const float* x, float* y, size_t n);

// y[i] = f(x[i] * scale + shift): an activation with the per-channel affine map before it
// (bias, a folded normalization) in one pass. x and y may be the same array.
void unary_affine(Unary fn, const UnaryParams& p, float scale, float shift, const float* x,
                  float* y, size_t n);

// The portable implementation (double-precision libm), for tests and other CPUs.
void unary_reference(Unary fn, const UnaryParams& p, const float* x, float* y, size_t n);
// One element of it: also the definition of each function for float64 tensors.
double reference(Unary fn, const UnaryParams& p, double x);

// The running max of pooling: v replaces m when larger or NaN, and a NaN in m stays.
inline float max_keep_nan(float m, float v) { return m == m && (v > m || v != v) ? v : m; }

// The largest of x[0..n) (n >= 1), NaN when any element is NaN: softmax's row max.
float max_value(const float* x, size_t n);

// out[j] = the max (max_keep_nan) or the sum over r < nrows of rows[r][j], j < n: the
// vertical pass of pooling windows.
void reduce_rows(bool max, const float* const* rows, size_t nrows, float* out, size_t n);

// out[o] = the max (propagating NaN), or the sum times `scale`, of r[o*stride + t*dilation]
// over taps t < taps, for o < count: the horizontal pass of pooling windows that lie
// wholly inside the row.
void reduce_taps(bool max, const float* r, size_t count, int64_t stride, int64_t taps,
                 int64_t dilation, float scale, float* out);

// Pooling of one plane whose every window lies inside it (rows `ld` floats apart):
// out[oh * OW + ow] = the max (propagating NaN), or the sum times `scale`, of the KH x KW
// window at (oh * SH, ow * SW) with dilations DH, DW. One call per plane: the AVX-512 form
// keeps each block of 16 outputs in a register over the whole window (no row buffer, no
// call per row, which dominated on 13 to 55 wide maps).
struct PoolWindow {
  int64_t OH, OW, KH, KW, SH, SW, DH, DW;
  int64_t out_ld = 0;  // floats between output rows; 0: OW (dense)
  // Floats the caller lets a kernel read past the end of the last window (a scratch copy
  // with room after it: see kPlaneSlack), so narrow rows still take whole vector loads.
  int64_t slack = 0;
  int64_t out_stride() const { return out_ld > 0 ? out_ld : OW; }
};
void pool_plane(bool max, const float* x, int64_t ld, const PoolWindow& w, float scale, float* out);

// The slack a plane copy should leave after it for PoolWindow::slack: the 32 floats of a
// stride-2 vector load, rounded up.
constexpr int64_t kPlaneSlack = 64;

// Copies `planes` H x W planes into planes of HP x WP floats (dst_stride floats apart),
// each placed at row `top`, column `left` of a border of `fill`; input rows and columns
// past HP or WP are dropped. The zero-bordered (or -inf bordered) copies that let
// convolution and pooling windows run without border cases, without a memcpy call per
// row (short rows of mobile networks cost more in calls than in bytes).
void pad_planes(const float* x, int64_t planes, int64_t H, int64_t W, int64_t top, int64_t left,
                int64_t HP, int64_t WP, int64_t dst_stride, float fill, float* out);

// Softmax (or LogSoftmax) of `rows` contiguous rows of n floats, in one pass per step
// over each row on AVX-512 or AVX2 (max, exp and sum, scale); false when the CPU lacks
// both (the caller then takes its own path). A row holding NaN gives NaN; infinite maxima are
// replaced by 0 before the shift, as the Softmax kernel defines.
// nan_to_zero: NaN results become 0 (SafeSoftmax), a masked move in the scaling pass.
bool softmax_rows(bool log, const float* x, float* y, int64_t rows, int64_t n,
                  bool nan_to_zero = false);

// Rows of one im2col block at stride 1: out[r * OW + o] (r < rows, o < OW) is
// plane[ih * W + off + o] for ih = ih0 + r * ih_step inside [0, H) and o in [lo, hi), and 0
// elsewhere (the padding). AVX-512 moves a row of up to 16 with one masked load and store
// (the short rows of 7 to 16 wide maps, where a call per row costs more than the copy).
void window_rows(const float* plane, int64_t H, int64_t W, int64_t ih0, int64_t ih_step,
                 int64_t rows, int64_t off, int64_t lo, int64_t hi, int64_t OW, float* out);

// out[r * out_ld + o] = x[r * ld + off + o * step] for o in [lo, hi), and 0 for the other
// o < count, for r < rows: the few-position rows of a 1-D convolution's im2col (audio
// encoders end in rows of 1 to 8). AVX-512 moves a row of up to 16 with one masked load
// (stride 2: two and a permute) and one store, where the plain loops cost a few ns a row.
void strided_rows(const float* x, int64_t ld, int64_t rows, int64_t off, int64_t step, int64_t lo,
                  int64_t hi, int64_t count, float* out, int64_t out_ld);

// y[c * ld + i] = clamp(y[c * ld + i] * scale[c] + bias[c], lo, hi) for c < channels,
// i < cols, with one rounding (a scale of null is 1, a bias of null 0; NaN stays NaN): a
// convolution's epilogue over a block of channels whose rows are a few positions long
// (audio encoders' last layers). With whole rows (ld == cols, a power of two up to 16
// with AVX-512, up to 8 with AVX2) a vector covers 16 / cols (8 / cols) channels, where a
// loop per row cost ~5 cycles an element.
void channel_affine_clamp(float* y, int64_t channels, int64_t cols, int64_t ld, const float* scale,
                          const float* bias, float lo, float hi);

// A 1-D depthwise convolution of short rows (audio encoders: 5-tap filters over 2 to 16
// positions): y[c * count + o] = sum over q < taps of w[c * taps + q] *
// x[c * width + o * step + q - pad], a term counting 0 where its index lies outside
// [0, width), for o < count and c < channels; each sum one fused multiply-add per tap, in
// tap order. With AVX-512 (count <= 16, step 1 or 2, taps <= 16) a row is one register;
// returns false, doing nothing, elsewhere (the caller keeps its loops).
bool depthwise_short_rows(const float* x, int64_t width, int64_t channels, const float* w,
                          int64_t taps, int64_t step, int64_t pad, int64_t count, float* y);

// A depthwise convolution of one plane whose every window lies inside it (rows `ld`
// floats apart): out[oh * OW + ow] = sum over the KH x KW window at (oh * SH, ow * SW)
// (dilations DH, DW) of w[kh * KW + kw] times the input. One call per plane, like
// pool_plane (AVX-512: sixteen outputs in a register over the whole window).
void depthwise_plane(const float* x, int64_t ld, const PoolWindow& w, const float* weights,
                     float* out);

// QuantizeLinear to 8 bits: y = saturate(round_half_even(x / scale) + zero_point) with
// x / scale in float and a NaN result giving 0, as the QuantizeLinear kernel defines it.
// y is uint8_t or int8_t storage.
void quantize_8bit(const float* x, size_t n, float scale, float zero_point, bool is_signed,
                   void* y);
// DequantizeLinear from 8 bits: y = (float(x) - zero_point) * scale.
void dequantize_8bit(const void* x, bool is_signed, size_t n, float scale, float zero_point,
                     float* y);

// out[o] = sum over r < nrows, q < taps of w[r][q] * rows[r][first + o*stride + q*dilation],
// for o < count: one output row of a depthwise convolution whose windows lie inside the
// input rows (w[r] is the kernel row that meets input row rows[r]).
void depthwise_row(const float* const* rows, const float* const* w, size_t nrows, int64_t first,
                   int64_t taps, int64_t stride, int64_t dilation, float* out, size_t count);

// True when the AVX2+FMA implementations run here. NXRT_VMATH=portable in the
// environment (read once) forces the portable ones, to compare whole models.
bool uses_avx2();
// True when unary() runs its AVX-512 implementation (AVX-512F and DQ present, and not
// capped by NXRT_VMATH=avx2 or =portable).
bool uses_avx512();

}  // namespace nxrt::vmath
