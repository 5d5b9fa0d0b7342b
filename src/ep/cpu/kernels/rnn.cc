// Recurrent ops: RNN, GRU and LSTM (forward, reverse, bidirectional; layout 0 and 1), and
// com.microsoft DynamicQuantizeLSTM (8-bit weights; see its section below).
// The input projection X*W^T for every time step is one matrix product done up front;
// each step then only multiplies the hidden state by R^T. float16/bfloat16 compute in
// float, double in double.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>
#endif

#include "ep/cpu/gemm/gemm.h"
#include "ep/cpu/gemm/qgemm.h"
#include "ep/cpu/kernels/common.h"
#include "ep/cpu/kernels/dynamic_quant.h"
#include "ep/cpu/vmath/vmath.h"

namespace nxrt::cpu {
namespace {

enum class Cell { kRnn, kGru, kLstm };

int64_t gate_count(Cell cell) { return cell == Cell::kRnn ? 1 : cell == Cell::kGru ? 3 : 4; }

// ------------------------------------------------------------------------ fast float math

// The gates' sigmoid/tanh run on AVX2 when the CPU has it (GCC does not vectorize the
// scalar loops: with trapping math it keeps the clamps as branches). The vector code does
// the same IEEE operations in the same order (no FMA), so both give identical results.
#if defined(__GNUC__) && defined(__x86_64__)
#define NXRT_RNN_X86 1
#else
#define NXRT_RNN_X86 0
#endif

// e^x for x in [-88, 88] (callers clamp): x = n*ln2 + r with |r| <= ln2/2, e^r by its
// Taylor series to r^7 (relative error ~5e-9), 2^n assembled in the exponent bits.
// Branch-free so the loops around it vectorize, unlike calls into libm.
inline float exp_reduced(float x) {
  const float t = x * 1.44269504f;
  const float n = (t + 12582912.0f) - 12582912.0f;  // round to nearest (|t| < 2^22)
  float r = x - n * 0.693359375f;                   // ln2 split in two for exactness
  r = r + n * 2.12194440e-4f;
  float p = 1.0f / 5040;
  p = p * r + 1.0f / 720;
  p = p * r + 1.0f / 120;
  p = p * r + 1.0f / 24;
  p = p * r + 1.0f / 6;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  // NaN inputs (x is clamped otherwise) must not reach the int conversion, which is UB.
  const int32_t bits = ((n == n ? int32_t(n) : 0) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return p * scale;
}

inline float sigmoid_one(float x) {
  const float v = std::min(std::max(-x, -88.0f), 88.0f);
  return 1.0f / (1.0f + exp_reduced(v));
}

inline float tanh_one(float v) {
  const float a = std::min(std::abs(v), 44.0f);
  // Near 0, (1 - e) / (1 + e) cancels; the odd series to x^9 is exact to float there.
  const float a2 = a * a;
  float series = 62.0f / 2835;
  series = series * a2 - 17.0f / 315;
  series = series * a2 + 2.0f / 15;
  series = series * a2 - 1.0f / 3;
  series = (series * a2) * a + a;
  const float e = exp_reduced(-2.0f * a);
  const float big = (1.0f - e) / (1.0f + e);
  const float mag = a < 0.25f ? series : big;
  return v < 0.0f ? -mag : mag;
}

#if NXRT_RNN_X86
__attribute__((target("avx2"), always_inline)) inline __m256 splat8(float v) {
  return _mm256_set1_ps(v);
}

// exp_reduced on 8 lanes (same steps; min/max operand order keeps std::min/max's NaNs).
__attribute__((target("avx2"))) inline __m256 exp_reduced8(__m256 x) {
  const __m256 t = _mm256_mul_ps(x, splat8(1.44269504f));
  const __m256 n = _mm256_sub_ps(_mm256_add_ps(t, splat8(12582912.0f)), splat8(12582912.0f));
  __m256 r = _mm256_sub_ps(x, _mm256_mul_ps(n, splat8(0.693359375f)));
  r = _mm256_add_ps(r, _mm256_mul_ps(n, splat8(2.12194440e-4f)));
  __m256 p = splat8(1.0f / 5040);
  for (float k : {1.0f / 720, 1.0f / 120, 1.0f / 24, 1.0f / 6, 0.5f, 1.0f, 1.0f})
    p = _mm256_add_ps(_mm256_mul_ps(p, r), splat8(k));
  const __m256i bits =
      _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvttps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(bits));
}

__attribute__((target("avx2"))) void sigmoid_avx2(float* x, int64_t n) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 neg = _mm256_xor_ps(_mm256_loadu_ps(x + i), sign);
    const __m256 v = _mm256_min_ps(splat8(88.0f), _mm256_max_ps(splat8(-88.0f), neg));
    const __m256 one = _mm256_set1_ps(1.0f);
    _mm256_storeu_ps(x + i, _mm256_div_ps(one, _mm256_add_ps(one, exp_reduced8(v))));
  }
  for (; i < n; ++i) x[i] = sigmoid_one(x[i]);
}

__attribute__((target("avx2"))) void tanh_avx2(float* x, int64_t n) {
  const __m256 sign = splat8(-0.0f);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    const __m256 a = _mm256_min_ps(splat8(44.0f), _mm256_andnot_ps(sign, v));
    const __m256 a2 = _mm256_mul_ps(a, a);
    __m256 series = splat8(62.0f / 2835);
    series = _mm256_sub_ps(_mm256_mul_ps(series, a2), splat8(17.0f / 315));
    series = _mm256_add_ps(_mm256_mul_ps(series, a2), splat8(2.0f / 15));
    series = _mm256_sub_ps(_mm256_mul_ps(series, a2), splat8(1.0f / 3));
    series = _mm256_add_ps(_mm256_mul_ps(_mm256_mul_ps(series, a2), a), a);
    const __m256 e = exp_reduced8(_mm256_mul_ps(splat8(-2.0f), a));
    const __m256 one = splat8(1.0f);
    const __m256 big = _mm256_div_ps(_mm256_sub_ps(one, e), _mm256_add_ps(one, e));
    const __m256 mag = _mm256_blendv_ps(big, series, _mm256_cmp_ps(a, splat8(0.25f), _CMP_LT_OQ));
    const __m256 neg = _mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_LT_OQ);
    _mm256_storeu_ps(x + i, _mm256_blendv_ps(mag, _mm256_xor_ps(mag, sign), neg));
  }
  for (; i < n; ++i) x[i] = tanh_one(x[i]);
}
#endif

// With AVX-512 the gates take vmath's activations (16 lanes, a reciprocal with a Newton
// step instead of a division: a Silero LSTM step spent ~3% of its run in the AVX2 ones).
void sigmoid_inplace(float* x, int64_t n) {
#if NXRT_RNN_X86
  if (vmath::uses_avx512()) return vmath::unary(vmath::Unary::kSigmoid, {}, x, x, size_t(n));
  if (gemm::has_avx2_fma()) return sigmoid_avx2(x, n);
#endif
  for (int64_t i = 0; i < n; ++i) x[i] = sigmoid_one(x[i]);
}

void tanh_inplace(float* x, int64_t n) {
#if NXRT_RNN_X86
  if (vmath::uses_avx512()) return vmath::unary(vmath::Unary::kTanh, {}, x, x, size_t(n));
  if (gemm::has_avx2_fma()) return tanh_avx2(x, n);
#endif
  for (int64_t i = 0; i < n; ++i) x[i] = tanh_one(x[i]);
}

// ------------------------------------------------------------------------ activations

enum class ActKind {
  kSigmoid,
  kTanh,
  kRelu,
  kAffine,
  kLeakyRelu,
  kThresholdedRelu,
  kScaledTanh,
  kHardSigmoid,
  kElu,
  kSoftsign,
  kSoftplus,
};

struct Activation {
  ActKind kind = ActKind::kSigmoid;
  float alpha = 0, beta = 0;
};

// Applies `act` in place; `clip` > 0 bounds its inputs to [-clip, clip] first.
template <typename C>
void activate(const Activation& act, C* x, int64_t n, float clip) {
  if (clip > 0)
    for (int64_t i = 0; i < n; ++i) x[i] = std::min(std::max(x[i], C(-clip)), C(clip));
  const C alpha = C(act.alpha), beta = C(act.beta);
  switch (act.kind) {
    case ActKind::kSigmoid:
      if constexpr (std::is_same_v<C, float>)
        sigmoid_inplace(x, n);
      else
        for (int64_t i = 0; i < n; ++i) x[i] = C(1) / (C(1) + std::exp(-x[i]));
      break;
    case ActKind::kTanh:
      if constexpr (std::is_same_v<C, float>)
        tanh_inplace(x, n);
      else
        for (int64_t i = 0; i < n; ++i) x[i] = std::tanh(x[i]);
      break;
    case ActKind::kRelu:
      for (int64_t i = 0; i < n; ++i) x[i] = std::max(x[i], C(0));
      break;
    case ActKind::kAffine:
      for (int64_t i = 0; i < n; ++i) x[i] = alpha * x[i] + beta;
      break;
    case ActKind::kLeakyRelu:
      for (int64_t i = 0; i < n; ++i) x[i] = x[i] >= C(0) ? x[i] : alpha * x[i];
      break;
    case ActKind::kThresholdedRelu:
      for (int64_t i = 0; i < n; ++i) x[i] = x[i] > alpha ? x[i] : C(0);
      break;
    case ActKind::kScaledTanh:
      for (int64_t i = 0; i < n; ++i) x[i] = alpha * std::tanh(beta * x[i]);
      break;
    case ActKind::kHardSigmoid:
      for (int64_t i = 0; i < n; ++i) x[i] = std::min(std::max(alpha * x[i] + beta, C(0)), C(1));
      break;
    case ActKind::kElu:
      for (int64_t i = 0; i < n; ++i) x[i] = x[i] >= C(0) ? x[i] : alpha * (std::exp(x[i]) - C(1));
      break;
    case ActKind::kSoftsign:
      for (int64_t i = 0; i < n; ++i) x[i] = x[i] / (C(1) + std::abs(x[i]));
      break;
    case ActKind::kSoftplus:
      // log(1 + e^x) without overflow for large x
      for (int64_t i = 0; i < n; ++i)
        x[i] = x[i] > C(0) ? x[i] + std::log1p(std::exp(-x[i])) : std::log1p(std::exp(x[i]));
      break;
  }
}

// Parses the activations attribute, consuming activation_alpha/beta in order for the
// functions that take them (defaults as in onnxruntime when the lists run short).
Status parse_activations(AttrReader& attrs, const std::vector<std::string>& defaults, int64_t dirs,
                         std::vector<Activation>& out) {
  const size_t per_dir = defaults.size();
  std::vector<std::string> names = defaults;
  if (dirs == 2) names.insert(names.end(), defaults.begin(), defaults.end());
  if (attrs.has("activations")) {
    names = attrs.get_strings("activations");
    // A single direction's list is reused for both directions.
    if (dirs == 2 && names.size() == per_dir) names.insert(names.end(), names.begin(), names.end());
  }
  if (names.size() != per_dir * size_t(dirs))
    return invalid_graph("activations has ", names.size(), " entries, expected ",
                         per_dir * size_t(dirs));
  const std::vector<float> alphas = attrs.get_floats("activation_alpha");
  const std::vector<float> betas = attrs.get_floats("activation_beta");
  size_t ai = 0, bi = 0;
  auto take = [](const std::vector<float>& v, size_t& i, float fallback) {
    return i < v.size() ? v[i++] : fallback;
  };
  out.clear();
  for (const std::string& raw : names) {
    std::string name;
    for (char ch : raw) name += char(std::tolower(static_cast<unsigned char>(ch)));
    Activation a;
    if (name == "sigmoid")
      a.kind = ActKind::kSigmoid;
    else if (name == "tanh")
      a.kind = ActKind::kTanh;
    else if (name == "relu")
      a.kind = ActKind::kRelu;
    else if (name == "softsign")
      a.kind = ActKind::kSoftsign;
    else if (name == "softplus")
      a.kind = ActKind::kSoftplus;
    else if (name == "affine") {
      a.kind = ActKind::kAffine;
      a.alpha = take(alphas, ai, 1.0f);
      a.beta = take(betas, bi, 0.0f);
    } else if (name == "leakyrelu") {
      a.kind = ActKind::kLeakyRelu;
      a.alpha = take(alphas, ai, 0.01f);
    } else if (name == "thresholdedrelu") {
      a.kind = ActKind::kThresholdedRelu;
      a.alpha = take(alphas, ai, 1.0f);
    } else if (name == "scaledtanh") {
      a.kind = ActKind::kScaledTanh;
      a.alpha = take(alphas, ai, 1.0f);
      a.beta = take(betas, bi, 1.0f);
    } else if (name == "hardsigmoid") {
      a.kind = ActKind::kHardSigmoid;
      a.alpha = take(alphas, ai, 0.2f);
      a.beta = take(betas, bi, 0.5f);
    } else if (name == "elu") {
      a.kind = ActKind::kElu;
      a.alpha = take(alphas, ai, 1.0f);
    } else {
      return invalid_graph("unknown activation function '", raw, "'");
    }
    out.push_back(a);
  }
  return Status();
}

// ------------------------------------------------------------------------ products

// out[m x n] += x[m x k] * w^T with w stored [n x k] (double; float uses the packed GEMM).
void product_nt(int64_t m, int64_t n, int64_t k, const double* x, const double* w, double* out) {
  if (m == 0 || n == 0 || k == 0) return;
  gemm::gemm_simple<double>(false, true, m, n, k, 1.0, x, k, w, k, 1.0, out, n);
}

// double: R^T ([h x n]) for one direction's R ([n x h]), so the per-step product streams
// its rows (walking R's columns would stride by the gate width and thrash L1 sets).
std::vector<double> transpose_r(const double* r, int64_t n, int64_t h) {
  std::vector<double> out(size_t(n * h));
  for (int64_t j = 0; j < n; ++j)
    for (int64_t p = 0; p < h; ++p) out[size_t(p * n + j)] = r[j * h + p];
  return out;
}

// Column segments of R^T a cell multiplies separately: GRU without linear_before_reset
// needs its h gate apart (it multiplies r .* h, not h).
std::vector<std::pair<int64_t, int64_t>> segments_for(Cell cell, bool lbr, int64_t H) {
  if (cell == Cell::kGru && !lbr) return {{0, 2 * H}, {2 * H, H}};
  return {{0, gate_count(cell) * H}};
}

// float: W^T and the R^T segments as right operands of the packed GEMM.
struct PackedF {
  gemm::PackedMatrix w;               // I x G*H
  std::vector<gemm::PackedMatrix> r;  // H x width, per segment of segments_for()
};

// w is [n x i] and r [n x h], one direction.
gemm::PackedMatrix pack_w_f(const float* w, int64_t n, int64_t i) {
  return gemm::PackedMatrix::pack_right(true, i, n, w, i);
}
std::vector<gemm::PackedMatrix> pack_r_f(const float* r, int64_t h,
                                         const std::vector<std::pair<int64_t, int64_t>>& segs) {
  std::vector<gemm::PackedMatrix> out;
  for (const auto& [col0, width] : segs)
    out.push_back(gemm::PackedMatrix::pack_right(true, h, width, r + col0 * h, h));
  return out;
}

// What prepare packed for one direction (null: pack per run).
struct Prepared {
  const gemm::PackedMatrix* w = nullptr;               // float only
  const std::vector<gemm::PackedMatrix>* r = nullptr;  // float only
  const double* rt = nullptr;                          // double only: R^T
};

// ------------------------------------------------------------------------ the kernel

struct Config {
  Cell cell = Cell::kLstm;
  int64_t dirs = 1;
  bool reverse_only = false;
  int64_t hidden = -1;  // from the attribute; -1 reads it from R
  int64_t layout = 0;
  float clip = 0;
  bool input_forget = false;
  bool linear_before_reset = false;
  std::vector<Activation> acts;  // per direction: f (and g, h)
  size_t acts_per_dir = 1;
  bool want_y = false, want_yh = false, want_yc = false;
  DataType dtype = DataType::kFloat;
};

// Operands in the compute type, shapes checked.
template <typename C>
struct Operands {
  int64_t seq = 0, batch = 0, input = 0, hidden = 0;
  const C *x = nullptr, *w = nullptr, *r = nullptr, *b = nullptr;
  const C *h0 = nullptr, *c0 = nullptr, *p = nullptr;
  SmallVec<int64_t, 16> lens;  // per batch entry; inline so a run does not allocate
  C *y = nullptr, *yh = nullptr, *yc = nullptr;
};

// One LSTM step of one batch entry: g holds the gates' pre-activations (i, o, f, c: the
// input and recurrent products summed). Each gate gets its peephole term (i, o, f, on the
// cell state c) and then `bias` (null: already in g) before its activation, in
// onnxruntime's order; updates c and writes h.
template <typename C>
void lstm_cell(const Config& cfg, const Activation* act, int64_t H, C* g, const C* peep,
               const C* bias, C* c, C* h, C* tmp) {
  C *gi = g, *go = g + H, *gf = g + 2 * H, *gc = g + 3 * H;
  const float clip = cfg.clip;
  if (peep)
    for (int64_t j = 0; j < H; ++j) gi[j] += peep[j] * c[j];
  if (bias)
    for (int64_t j = 0; j < H; ++j) gi[j] += bias[j];
  activate(act[0], gi, H, clip);
  if (cfg.input_forget) {
    for (int64_t j = 0; j < H; ++j) gf[j] = C(1) - gi[j];
  } else {
    if (peep)
      for (int64_t j = 0; j < H; ++j) gf[j] += peep[2 * H + j] * c[j];
    if (bias)
      for (int64_t j = 0; j < H; ++j) gf[j] += bias[2 * H + j];
    activate(act[0], gf, H, clip);
  }
  if (bias)
    for (int64_t j = 0; j < H; ++j) gc[j] += bias[3 * H + j];
  activate(act[1], gc, H, clip);
  for (int64_t j = 0; j < H; ++j) c[j] = gf[j] * c[j] + gi[j] * gc[j];
  if (peep)
    for (int64_t j = 0; j < H; ++j) go[j] += peep[H + j] * c[j];
  if (bias)
    for (int64_t j = 0; j < H; ++j) go[j] += bias[H + j];
  activate(act[0], go, H, clip);
  std::copy_n(c, H, tmp);
  activate(act[2], tmp, H, 0.0f);
  for (int64_t j = 0; j < H; ++j) h[j] = go[j] * tmp[j];
}

template <typename C>
void run_direction(const Config& cfg, const Operands<C>& op, int64_t d, const Prepared& prep) {
  const int64_t S = op.seq, B = op.batch, I = op.input, H = op.hidden;
  const int64_t n = gate_count(cfg.cell) * H;
  const bool backward = cfg.reverse_only || d == 1;
  const bool gru_lbr = cfg.cell == Cell::kGru && cfg.linear_before_reset;
  const int64_t dirs = cfg.dirs;
  // W or R may have no data when the planner freed a constant this kernel packed.
  const C* w = op.w ? op.w + d * n * I : nullptr;
  const C* r = op.r ? op.r + d * n * H : nullptr;
  const C* bias = op.b ? op.b + d * 2 * n : nullptr;
  const bool gru_split = cfg.cell == Cell::kGru && !gru_lbr;

  // The per-run buffers, carved from one block: a per-thread one that is reused unless
  // the sequence is long (then a fresh one, so no thread keeps a huge block alive).
  const size_t sizes[] = {size_t(S * B * n),
                          size_t(B * H),
                          cfg.cell == Cell::kLstm ? size_t(B * H) : 0,
                          size_t(B * n),
                          size_t(H),
                          gru_split ? size_t(B * H) : 0,
                          gru_split ? size_t(B * H) : 0};
  size_t total = 0;
  for (size_t z : sizes) total += z;
  std::vector<C> big;
  C* block;
  if (total <= (size_t(1) << 18)) {
    block = scratch<C>(ScratchSlot::kRecurrentState, total);
  } else {
    big.resize(total);
    block = big.data();
  }
  std::span<C> parts[7];
  for (size_t i = 0; i < 7; ++i) {
    parts[i] = std::span<C>(block, sizes[i]);
    block += sizes[i];
  }
  const std::span<C> xw = parts[0], h = parts[1], c = parts[2], gates = parts[3], tmp = parts[4],
                     rh = parts[5], ghh = parts[6];

  // Input projection with biases folded in, rows in X's own order.
  if (bias && S * B > 0) {
    for (int64_t j = 0; j < n; ++j)
      xw[size_t(j)] = bias[j] + (gru_lbr && j >= 2 * H ? C(0) : bias[n + j]);
    for (int64_t i = 1; i < S * B; ++i) std::copy_n(xw.begin(), n, xw.begin() + i * n);
  } else {
    std::fill(xw.begin(), xw.end(), C(0));
  }
  auto xw_row = [&](int64_t t, int64_t b) {
    return xw.data() + (cfg.layout == 0 ? t * B + b : b * S + t) * n;
  };

  // recur(a, segment, out, ldc): out (B rows, stride ldc) = a (B x H) * that segment of R^T.
  PackedF local_f;
  std::vector<double> local_rt;
  const std::vector<gemm::PackedMatrix>* r_f = prep.r;
  const double* rt = prep.rt;
  if constexpr (std::is_same_v<C, float>) {
    if (S * B > 0 && I > 0) {
      if (!prep.w) local_f.w = pack_w_f(w, n, I);
      gemm::sgemm_packed_right(false, S * B, 1.0f, op.x, I, prep.w ? *prep.w : local_f.w, 1.0f,
                               xw.data(), n);
    }
    if (!r_f) {
      local_f.r = pack_r_f(r, H, segments_for(cfg.cell, cfg.linear_before_reset, H));
      r_f = &local_f.r;
    }
  } else {
    product_nt(S * B, n, I, op.x, w, xw.data());
    if (!rt) {
      local_rt = transpose_r(r, n, H);
      rt = local_rt.data();
    }
  }
  auto recur = [&](const C* a, size_t seg, C* out, int64_t ldc) {
    if constexpr (std::is_same_v<C, float>) {
      gemm::sgemm_packed_right(false, B, 1.0f, a, H, (*r_f)[seg], 0.0f, out, ldc);
    } else {
      // Segments as in segments_for(): GRU without linear_before_reset has two.
      const int64_t col0 = seg == 0 ? 0 : 2 * H, width = seg == 1 ? H : gru_split ? 2 * H : n;
      gemm::gemm_simple<double>(false, false, B, width, H, 1.0, a, H, rt + col0, n, 0.0, out, ldc);
    }
  };

  auto state_at = [&](int64_t b) { return cfg.layout == 0 ? (d * B + b) * H : (b * dirs + d) * H; };
  auto load_state = [&](const C* init, std::span<C> state) {
    if (!init) return std::fill(state.begin(), state.end(), C(0));
    for (int64_t b = 0; b < B; ++b) std::copy_n(init + state_at(b), H, state.begin() + b * H);
  };
  load_state(op.h0, h);
  if (cfg.cell == Cell::kLstm) load_state(op.c0, c);
  std::fill(rh.begin(), rh.end(), C(0));

  const Activation* act = cfg.acts.data() + size_t(d) * cfg.acts_per_dir;
  const float clip = cfg.clip;
  const C* peep = op.p ? op.p + d * 3 * H : nullptr;
  const int64_t max_len = op.lens.empty() ? 0 : *std::max_element(op.lens.begin(), op.lens.end());

  for (int64_t s = 0; s < max_len; ++s) {
    auto time_of = [&](int64_t b) { return backward ? op.lens[size_t(b)] - 1 - s : s; };
    auto active = [&](int64_t b) { return s < op.lens[size_t(b)]; };
    switch (cfg.cell) {
      case Cell::kRnn: {
        recur(h.data(), 0, gates.data(), n);
        for (int64_t b = 0; b < B; ++b) {
          if (!active(b)) continue;
          C* g = gates.data() + b * n;
          const C* xr = xw_row(time_of(b), b);
          for (int64_t j = 0; j < H; ++j) g[j] += xr[j];
          activate(act[0], g, H, clip);
          std::copy_n(g, H, h.begin() + b * H);
        }
        break;
      }
      case Cell::kGru: {
        // gates: z, r, h
        recur(h.data(), 0, gates.data(), n);
        for (int64_t b = 0; b < B; ++b) {
          if (!active(b)) continue;
          C* g = gates.data() + b * n;
          const C* xr = xw_row(time_of(b), b);
          for (int64_t j = 0; j < 2 * H; ++j) g[j] += xr[j];
          activate(act[0], g, 2 * H, clip);
          const C* hb = h.data() + b * H;
          if (gru_lbr) {
            const C* rbh = bias ? bias + n + 2 * H : nullptr;
            for (int64_t j = 0; j < H; ++j)
              g[2 * H + j] = xr[2 * H + j] + g[H + j] * (g[2 * H + j] + (rbh ? rbh[j] : C(0)));
          } else {
            for (int64_t j = 0; j < H; ++j) rh[size_t(b * H + j)] = g[H + j] * hb[j];
          }
        }
        if (!gru_lbr) {
          recur(rh.data(), 1, ghh.data(), H);
          for (int64_t b = 0; b < B; ++b) {
            if (!active(b)) continue;
            const C* xr = xw_row(time_of(b), b);
            C* g = gates.data() + b * n;
            for (int64_t j = 0; j < H; ++j) g[2 * H + j] = xr[2 * H + j] + ghh[size_t(b * H + j)];
          }
        }
        for (int64_t b = 0; b < B; ++b) {
          if (!active(b)) continue;
          C* g = gates.data() + b * n;
          activate(act[1], g + 2 * H, H, clip);
          C* hb = h.data() + b * H;
          for (int64_t j = 0; j < H; ++j) hb[j] = (C(1) - g[j]) * g[2 * H + j] + g[j] * hb[j];
        }
        break;
      }
      case Cell::kLstm: {
        // gates: i, o, f, c; peepholes: i, o, f
        recur(h.data(), 0, gates.data(), n);
        for (int64_t b = 0; b < B; ++b) {
          if (!active(b)) continue;
          C* g = gates.data() + b * n;
          const C* xr = xw_row(time_of(b), b);
          for (int64_t j = 0; j < n; ++j) g[j] += xr[j];
          lstm_cell<C>(cfg, act, H, g, peep, nullptr, c.data() + b * H, h.data() + b * H,
                       tmp.data());
        }
        break;
      }
    }
    if (op.y) {
      for (int64_t b = 0; b < B; ++b) {
        if (!active(b)) continue;
        const int64_t t = time_of(b);
        const int64_t at =
            cfg.layout == 0 ? ((t * dirs + d) * B + b) * H : ((b * S + t) * dirs + d) * H;
        std::copy_n(h.begin() + b * H, H, op.y + at);
      }
    }
  }
  for (int64_t b = 0; b < B; ++b) {
    if (op.yh) std::copy_n(h.begin() + b * H, H, op.yh + state_at(b));
    if (op.yc) std::copy_n(c.begin() + b * H, H, op.yc + state_at(b));
  }
}

// An optional float16/bfloat16 input widened to float (empty when absent).
template <typename T>
std::vector<float> widened(const Tensor* t) {
  return t ? widen(t->data<T>(), t->numel()) : std::vector<float>();
}

class RecurrentKernel final : public Kernel {
 public:
  RecurrentKernel(Config cfg, std::vector<PackedF> packed_f, std::vector<std::vector<double>> rt_d,
                  bool w_packed, bool r_packed)
      : cfg_(std::move(cfg)),
        packed_f_(std::move(packed_f)),
        rt_d_(std::move(rt_d)),
        w_packed_(w_packed),
        r_packed_(r_packed) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    const Tensor& w = *ctx.input(1);
    const Tensor& r = *ctx.input(2);
    const Tensor* bias = ctx.input(3);
    const Tensor* lens_t = ctx.input(4);
    const Tensor* h0 = ctx.input(5);
    const Tensor* c0 = cfg_.cell == Cell::kLstm ? ctx.input(6) : nullptr;
    const Tensor* p = cfg_.cell == Cell::kLstm ? ctx.input(7) : nullptr;
    const int64_t G = gate_count(cfg_.cell), D = cfg_.dirs;

    if (x.rank() != 3) return invalid_argument("X must have rank 3, got ", x.shape().to_string());
    const int64_t S = x.shape()[cfg_.layout == 0 ? 0 : 1];
    const int64_t B = x.shape()[cfg_.layout == 0 ? 1 : 0];
    const int64_t I = x.shape()[2];
    if (r.rank() != 3) return invalid_argument("R must have rank 3, got ", r.shape().to_string());
    const int64_t H = cfg_.hidden >= 0 ? cfg_.hidden : r.shape()[2];
    auto expect = [](const Tensor& t, const Shape& want, const char* what) -> Status {
      if (!(t.shape() == want))
        return invalid_argument(what, " has shape ", t.shape().to_string(), ", expected ",
                                want.to_string());
      return Status();
    };
    NXRT_RETURN_IF_ERROR(expect(w, Shape{D, G * H, I}, "W"));
    NXRT_RETURN_IF_ERROR(expect(r, Shape{D, G * H, H}, "R"));
    if (bias) NXRT_RETURN_IF_ERROR(expect(*bias, Shape{D, 2 * G * H}, "B"));
    const Shape state_shape = cfg_.layout == 0 ? Shape{D, B, H} : Shape{B, D, H};
    if (h0) NXRT_RETURN_IF_ERROR(expect(*h0, state_shape, "initial_h"));
    if (c0) NXRT_RETURN_IF_ERROR(expect(*c0, state_shape, "initial_c"));
    if (p) NXRT_RETURN_IF_ERROR(expect(*p, Shape{D, 3 * H}, "P"));

    SmallVec<int64_t, 16> lens(size_t(B), S);
    if (lens_t) {
      NXRT_RETURN_IF_ERROR(expect(*lens_t, Shape{B}, "sequence_lens"));
      NXRT_RETURN_IF_ERROR(read_int_list(*lens_t, lens, "sequence_lens"));
      for (int64_t l : lens)
        if (l < 0 || l > S)
          return invalid_argument("sequence_lens value ", l, " is outside [0, ", S, "]");
    }

    const Shape y_shape = cfg_.layout == 0 ? Shape{S, D, B, H} : Shape{B, S, D, H};
    if (checked_numel(y_shape.span()) < 0 || checked_numel(Shape{S, B, G * H}.span()) < 0)
      return invalid_argument("sizes are too large");
    Tensor* y = nullptr;
    Tensor* yh = nullptr;
    Tensor* yc = nullptr;
    if (cfg_.want_y) {
      NXRT_ASSIGN_OR_RETURN(y, ctx.output(0, y_shape));
    }
    if (cfg_.want_yh) {
      NXRT_ASSIGN_OR_RETURN(yh, ctx.output(1, state_shape));
    }
    if (cfg_.want_yc) {
      NXRT_ASSIGN_OR_RETURN(yc, ctx.output(2, state_shape));
    }
    const bool padded = std::any_of(lens.begin(), lens.end(), [&](int64_t l) { return l < S; });

    switch (cfg_.dtype) {
      case DataType::kFloat:
        return run_native<float>(S, B, I, H, x, w, r, bias, lens, h0, c0, p, y, yh, yc, padded);
      case DataType::kDouble:
        return run_native<double>(S, B, I, H, x, w, r, bias, lens, h0, c0, p, y, yh, yc, padded);
      case DataType::kFloat16:
        return run_widened<Float16>(S, B, I, H, x, w, r, bias, lens, h0, c0, p, y, yh, yc, padded);
      case DataType::kBFloat16:
        return run_widened<BFloat16>(S, B, I, H, x, w, r, bias, lens, h0, c0, p, y, yh, yc, padded);
      default:
        return not_implemented("type ", tensor_type_name(cfg_.dtype), " is not supported");
    }
  }

 private:
  // W and R were packed only when they are constants, so each run sees those very tensors.
  template <typename C>
  void run_all(Operands<C>& op, bool padded) const {
    if (op.y && padded) std::fill_n(op.y, op.seq * cfg_.dirs * op.batch * op.hidden, C(0));
    const bool w_ok = w_packed_, r_ok = r_packed_;
    for (int64_t d = 0; d < cfg_.dirs; ++d) {
      Prepared prep;
      if constexpr (std::is_same_v<C, float>) {
        if (!packed_f_.empty()) {
          const PackedF& pf = packed_f_[size_t(d)];
          if (w_ok && !pf.w.empty()) prep.w = &pf.w;
          if (r_ok && !pf.r.empty()) prep.r = &pf.r;
        }
      } else {
        if (r_ok && !rt_d_.empty()) prep.rt = rt_d_[size_t(d)].data();
      }
      run_direction(cfg_, op, d, prep);
    }
  }

  template <typename C>
  Status run_native(int64_t S, int64_t B, int64_t I, int64_t H, const Tensor& x, const Tensor& w,
                    const Tensor& r, const Tensor* bias, SmallVec<int64_t, 16>& lens,
                    const Tensor* h0, const Tensor* c0, const Tensor* p, Tensor* y, Tensor* yh,
                    Tensor* yc, bool padded) const {
    Operands<C> op;
    op.seq = S;
    op.batch = B;
    op.input = I;
    op.hidden = H;
    op.x = x.data<C>();
    op.w = w.data<C>();
    op.r = r.data<C>();
    op.b = bias ? bias->data<C>() : nullptr;
    op.h0 = h0 ? h0->data<C>() : nullptr;
    op.c0 = c0 ? c0->data<C>() : nullptr;
    op.p = p ? p->data<C>() : nullptr;
    op.lens = lens;
    op.y = y ? y->data<C>() : nullptr;
    op.yh = yh ? yh->data<C>() : nullptr;
    op.yc = yc ? yc->data<C>() : nullptr;
    run_all(op, padded);
    return Status();
  }

  template <typename T>
  Status run_widened(int64_t S, int64_t B, int64_t I, int64_t H, const Tensor& x, const Tensor& w,
                     const Tensor& r, const Tensor* bias, SmallVec<int64_t, 16>& lens,
                     const Tensor* h0, const Tensor* c0, const Tensor* p, Tensor* y, Tensor* yh,
                     Tensor* yc, bool padded) const {
    const std::vector<float> xf = widened<T>(&x), wf = widened<T>(&w), rf = widened<T>(&r),
                             bf = widened<T>(bias), h0f = widened<T>(h0), c0f = widened<T>(c0),
                             pf = widened<T>(p);
    std::vector<float> yf(y ? size_t(y->numel()) : 0), yhf(yh ? size_t(yh->numel()) : 0),
        ycf(yc ? size_t(yc->numel()) : 0);
    Operands<float> op;
    op.seq = S;
    op.batch = B;
    op.input = I;
    op.hidden = H;
    op.x = xf.data();
    op.w = wf.data();
    op.r = rf.data();
    op.b = bias ? bf.data() : nullptr;
    op.h0 = h0 ? h0f.data() : nullptr;
    op.c0 = c0 ? c0f.data() : nullptr;
    op.p = p ? pf.data() : nullptr;
    op.lens = lens;
    op.y = y ? yf.data() : nullptr;
    op.yh = yh ? yhf.data() : nullptr;
    op.yc = yc ? ycf.data() : nullptr;
    run_all(op, padded);
    auto narrow = [](const std::vector<float>& src, Tensor* dst) {
      if (!dst) return;
      T* out = dst->data<T>();
      for (size_t i = 0; i < src.size(); ++i) out[i] = T(src[i]);
    };
    narrow(yf, y);
    narrow(yhf, yh);
    narrow(ycf, yc);
    return Status();
  }

  Config cfg_;
  std::vector<PackedF> packed_f_;          // float compute: per direction, W^T and/or R^T
  std::vector<std::vector<double>> rt_d_;  // double compute: R^T per direction
  bool w_packed_, r_packed_;               // whether constant W / R were packed at prepare
};

// The attributes every recurrent op shares (DynamicQuantizeLSTM's are LSTM's).
Status read_config(KernelInit& init, Cell cell, Config& cfg) {
  AttrReader attrs(init.node);
  cfg.cell = cell;
  const std::string direction = attrs.get_string("direction", "forward");
  cfg.hidden = attrs.get_int("hidden_size", -1);
  cfg.layout = attrs.get_int("layout", 0);
  cfg.clip = attrs.get_float("clip", 0.0f);
  const bool has_clip = attrs.has("clip");
  cfg.input_forget = attrs.get_int("input_forget", 0) != 0;
  cfg.linear_before_reset = attrs.get_int("linear_before_reset", 0) != 0;
  NXRT_RETURN_IF_ERROR(attrs.status());
  if (direction == "forward" || direction == "reverse") {
    cfg.dirs = 1;
    cfg.reverse_only = direction == "reverse";
  } else if (direction == "bidirectional") {
    cfg.dirs = 2;
  } else {
    return init.error(StatusCode::kInvalidGraph, "direction '", direction,
                      "' is not forward, reverse or bidirectional");
  }
  if (cfg.layout != 0 && cfg.layout != 1)
    return init.error(StatusCode::kInvalidGraph, "layout must be 0 or 1, got ", cfg.layout);
  if (has_clip && !(cfg.clip > 0))
    return init.error(StatusCode::kInvalidGraph, "clip must be positive, got ", cfg.clip);
  if (attrs.has("hidden_size") && cfg.hidden <= 0)
    return init.error(StatusCode::kInvalidGraph, "hidden_size must be positive, got ", cfg.hidden);

  std::vector<std::string> defaults;
  if (cell == Cell::kRnn)
    defaults = {"Tanh"};
  else if (cell == Cell::kGru)
    defaults = {"Sigmoid", "Tanh"};
  else
    defaults = {"Sigmoid", "Tanh", "Tanh"};
  cfg.acts_per_dir = defaults.size();
  Status s = parse_activations(attrs, defaults, cfg.dirs, cfg.acts);
  if (s.ok()) s = attrs.status();
  if (!s.ok()) return init.error(StatusCode::kInvalidGraph, s.message());
  cfg.want_y = output_wanted(init, 0);
  cfg.want_yh = output_wanted(init, 1);
  cfg.want_yc = output_wanted(init, 2);
  return Status();
}

Expected<KernelPtr> create_recurrent(KernelInit& init, Cell cell) {
  Config cfg;
  NXRT_RETURN_IF_ERROR(read_config(init, cell, cfg));
  cfg.dtype = init.input_type(0);
  if (!is_float_type(cfg.dtype)) return init.unsupported_type(0);
  const size_t max_inputs = cell == Cell::kLstm ? 8 : 6;
  if (init.num_inputs() < 3 || init.num_inputs() > max_inputs)
    return init.error(StatusCode::kInvalidGraph, "has ", init.num_inputs(),
                      " inputs, expected 3 to ", max_inputs);
  for (size_t i = 1; i < init.num_inputs(); ++i) {
    if (!init.has_input(i) || i == 4) continue;
    if (init.input_type(i) != cfg.dtype)
      return init.error(StatusCode::kInvalidGraph, "input ", i, " has type ",
                        tensor_type_name(init.input_type(i)), ", expected ",
                        tensor_type_name(cfg.dtype));
  }
  if (!init.has_input(1) || !init.has_input(2))
    return init.error(StatusCode::kInvalidGraph, "W and R are required");
  if (init.has_input(4) && init.input_type(4) != DataType::kInt32 &&
      init.input_type(4) != DataType::kInt64)
    return init.error(StatusCode::kInvalidGraph, "sequence_lens must be int32, got ",
                      tensor_type_name(init.input_type(4)));

  const size_t max_outputs = cell == Cell::kLstm ? 3 : 2;
  if (init.output_types.size() > max_outputs)
    return init.error(StatusCode::kInvalidGraph, "has ", init.output_types.size(),
                      " outputs, at most ", max_outputs, " allowed");
  init.set_all_outputs(cfg.dtype);

  // Pre-pack constant W and R whose shapes fit what compute will check.
  const int64_t G = gate_count(cell);
  const Tensor* r = init.constant_input(2);
  const Tensor* w = init.constant_input(1);
  const bool r_fits = r && r->rank() == 3 && r->shape()[0] == cfg.dirs &&
                      r->shape()[1] == G * r->shape()[2] &&
                      (cfg.hidden < 0 || r->shape()[2] == cfg.hidden);
  const bool w_fits = w && w->rank() == 3 && w->shape()[0] == cfg.dirs && w->shape()[1] % G == 0 &&
                      w->shape()[1] > 0 && (cfg.hidden < 0 || w->shape()[1] == G * cfg.hidden);
  std::vector<PackedF> packed_f;
  std::vector<std::vector<double>> rt_d;
  bool w_packed = false, r_packed = false;
  if (cfg.dtype == DataType::kDouble) {
    if (r_fits) {
      const int64_t n = r->shape()[1], H = r->shape()[2];
      for (int64_t d = 0; d < cfg.dirs; ++d)
        rt_d.push_back(transpose_r(r->data<double>() + d * n * H, n, H));
      r_packed = true;
    }
  } else if (r_fits || w_fits) {
    packed_f.resize(size_t(cfg.dirs));
    if (w_fits && w->numel() > 0) {
      std::vector<float> wide;
      const float* wf = float_data(*w, wide);
      const int64_t n = w->shape()[1], I = w->shape()[2];
      for (int64_t d = 0; d < cfg.dirs; ++d) packed_f[size_t(d)].w = pack_w_f(wf + d * n * I, n, I);
      w_packed = true;
      // float32 compute reads only the packed form; float16/bfloat16 widen W each run.
      if (cfg.dtype == DataType::kFloat) init.absorb_constant(1);
    }
    if (r_fits && r->numel() > 0) {
      std::vector<float> wide;
      const float* rf = float_data(*r, wide);
      const int64_t n = r->shape()[1], H = r->shape()[2];
      for (int64_t d = 0; d < cfg.dirs; ++d)
        packed_f[size_t(d)].r =
            pack_r_f(rf + d * n * H, H, segments_for(cell, cfg.linear_before_reset, H));
      r_packed = true;
      if (cfg.dtype == DataType::kFloat) init.absorb_constant(2);
    }
  }
  return make_kernel<RecurrentKernel>(std::move(cfg), std::move(packed_f), std::move(rt_d),
                                      w_packed, r_packed);
}

// ------------------------------------------------------------------------ DynamicQuantizeLSTM

// com.microsoft DynamicQuantizeLSTM: an LSTM (layout 0) whose W [D, I, 4H] and R [D, H, 4H]
// are 8-bit (int8 or uint8, ONNX's layout transposed) with a scale and a zero point per
// direction ([D]) or per direction and gate column ([D, 4H]). It computes what
// onnxruntime's CPU kernel does: the gate products run in 8 bits on activations quantized
// to uint8 at run time as DynamicQuantizeLinear quantizes (the range [min(v, 0), max(v, 0)]
// over 255 steps, the zero point rounded half to even; dynamic_quant.h):
//  - X once, over the first max(sequence_lens) steps of the whole batch (one scale for
//    both directions): XW = float((X_q - x_zero)(W_q - w_zero)) * (x_scale * w_scale[j]);
//  - h before every step, over the whole batch: HR likewise with h_scale and R. Entries
//    whose sequence has ended are 0 there when Y is an output (onnxruntime reads h back
//    from Y, where they were zeroed) and their last h otherwise;
//  - each gate: (XW + HR) (+ peephole * c) + (Wb + Rb), then the activations as in LSTM.
// The integer products are exact (gemm/qgemm.h); what remains are float rounding and the
// activations' last bits, which can move a value across a quantization step now and then.
// onnxruntime 1.32 quantizes h per block of batch rows, one block per thread, when the
// batch has more than 4 rows or 2 or more with H <= 256; nxrt matches its single-thread
// results. onnxruntime takes one zero point per direction (it refuses per-column ones that
// differ); nxrt also takes them per column. Entries of sequence length 0 get zero Y_h and
// Y_c, as in onnxruntime.

int32_t byte_value(const Tensor& t, int64_t i) {
  return t.dtype() == DataType::kInt8 ? int32_t(t.data<int8_t>()[i])
                                      : int32_t(t.data<uint8_t>()[i]);
}

// Checks W or R ([D, rows, N], rows < 0: any) with its scale and zero point (`zero` may be
// null); `what` names the weight in the message.
Status check_quant_weight(const char* what, const Tensor& q, int64_t D, int64_t rows, int64_t N,
                          const Tensor& scale, const Tensor* zero) {
  const Shape& s = q.shape();
  if (s.rank() != 3 || s[0] != D || (rows >= 0 && s[1] != rows) || s[2] != N)
    return invalid_argument(what, " has shape ", s.to_string(), ", expected [", D, ", ",
                            rows >= 0 ? std::to_string(rows) : std::string("rows"), ", ", N, "]");
  if (scale.dtype() != DataType::kFloat || (scale.numel() != D && scale.numel() != D * N))
    return invalid_argument(what, "'s scale must be float with ", D, " or ", D * N, " values, got ",
                            tensor_type_name(scale.dtype()), " ", scale.shape().to_string());
  if (zero && (zero->dtype() != q.dtype() || zero->numel() != scale.numel()))
    return invalid_argument(what, "'s zero point must be ", tensor_type_name(q.dtype()),
                            " with as many values as its scale (", scale.numel(), "), got ",
                            tensor_type_name(zero->dtype()), " ", zero->shape().to_string());
  return Status();
}

// One direction of W or R packed for the 8-bit GEMM, with its zero point(s).
gemm::PackedQuantB pack_quant_weight(const Tensor& q, const Tensor* zero, int64_t d) {
  const int64_t K = q.shape()[1], N = q.shape()[2];
  const int64_t count = zero ? zero->numel() / q.shape()[0] : 0;  // 1 or N per direction
  SmallVec<int32_t, 16> zeros(size_t(count), 0);
  for (int64_t j = 0; j < count; ++j) zeros[size_t(j)] = byte_value(*zero, d * count + j);
  const auto* bytes = static_cast<const uint8_t*>(q.raw()) + d * K * N;
  return gemm::PackedQuantB::pack(K, N, bytes, N, q.dtype() == DataType::kInt8, zeros.data(),
                                  count);
}

struct QuantOperands {
  int64_t seq = 0, batch = 0, input = 0, hidden = 0;
  int64_t steps = 0;                 // max(sequence_lens): the steps run
  const uint8_t* x_codes = nullptr;  // X's first `steps` steps quantized
  DynamicQuantParams x_params;
  const gemm::PackedQuantB* w = nullptr;  // per direction
  const gemm::PackedQuantB* r = nullptr;
  const float *w_scale = nullptr, *r_scale = nullptr;  // D or D * 4H values
  bool w_per_column = false, r_per_column = false;
  const float *b = nullptr, *h0 = nullptr, *c0 = nullptr, *p = nullptr;
  std::span<const int64_t> lens;
  bool padded = false;  // some sequence is shorter than seq
  float *y = nullptr, *yh = nullptr, *yc = nullptr;
};

void run_quantized_direction(const Config& cfg, const QuantOperands& op, int64_t d) {
  const int64_t B = op.batch, I = op.input, H = op.hidden, N = 4 * H, T = op.steps;
  const bool backward = cfg.reverse_only || d == 1;
  const size_t sizes[] = {size_t(T * B * N), size_t(B * H), size_t(B * H), size_t(B * N),
                          size_t(H),         size_t(N),     size_t(N),     size_t(B * H)};
  constexpr size_t kParts = sizeof(sizes) / sizeof(sizes[0]);
  size_t total = 0;
  for (size_t z : sizes) total += z;
  std::vector<float> big;
  float* block;
  if (total <= (size_t(1) << 18)) {
    block = scratch<float>(ScratchSlot::kRecurrentState, total);
  } else {
    big.resize(total);
    block = big.data();
  }
  float* parts[kParts];
  for (size_t i = 0; i < kParts; ++i) {
    parts[i] = block;
    block += sizes[i];
  }
  float *xw = parts[0], *h = parts[1], *c = parts[2], *gates = parts[3], *tmp = parts[4],
        *col_scale = parts[5], *bias = parts[6], *live_h = parts[7];
  auto* h_codes = thread_scratch<uint8_t>(size_t(B * H), 1);

  // X's product for every step run, rows in X's order.
  const float* ws = op.w_scale + (op.w_per_column ? d * N : d);
  for (int64_t j = 0; j < N; ++j) col_scale[j] = op.x_params.scale * ws[op.w_per_column ? j : 0];
  if (I > 0)
    gemm::qgemm_float(T * B, op.x_codes, I, false, int32_t(op.x_params.zero_point), op.w[d],
                      col_scale, nullptr, xw, N);
  else
    std::fill_n(xw, T * B * N, 0.0f);
  if (op.b)
    for (int64_t j = 0; j < N; ++j) bias[j] = op.b[d * 2 * N + j] + op.b[d * 2 * N + N + j];

  auto state_at = [&](int64_t b) { return (d * B + b) * H; };
  for (int64_t b = 0; b < B; ++b) {
    if (op.h0)
      std::copy_n(op.h0 + state_at(b), H, h + b * H);
    else
      std::fill_n(h + b * H, H, 0.0f);
    if (op.c0)
      std::copy_n(op.c0 + state_at(b), H, c + b * H);
    else
      std::fill_n(c + b * H, H, 0.0f);
  }
  const Activation* act = cfg.acts.data() + size_t(d) * cfg.acts_per_dir;
  const float* peep = op.p ? op.p + d * 3 * H : nullptr;
  const float* rs = op.r_scale + (op.r_per_column ? d * N : d);
  const int64_t dirs = cfg.dirs;

  for (int64_t s = 0; s < T; ++s) {
    auto time_of = [&](int64_t b) { return backward ? op.lens[size_t(b)] - 1 - s : s; };
    auto active = [&](int64_t b) { return s < op.lens[size_t(b)]; };
    // h's range: entries whose sequence ended before the last step read 0 when Y is an
    // output (0 is always in the range, so they are left out).
    const float* range = h;
    int64_t range_n = B * H;
    if (s > 0 && op.y && op.padded) {
      range = live_h;
      range_n = 0;
      for (int64_t b = 0; b < B; ++b)
        if (op.lens[size_t(b)] >= s) {
          std::copy_n(h + b * H, H, live_h + range_n);
          range_n += H;
        }
    }
    const DynamicQuantParams hq = dynamic_quant_params(range, range_n);
    vmath::quantize_8bit(h, size_t(B * H), hq.scale, hq.zero_point, false, h_codes);
    for (int64_t j = 0; j < N; ++j) col_scale[j] = hq.scale * rs[op.r_per_column ? j : 0];
    gemm::qgemm_float(B, h_codes, H, false, int32_t(hq.zero_point), op.r[d], col_scale, nullptr,
                      gates, N);
    for (int64_t b = 0; b < B; ++b) {
      if (!active(b)) continue;
      float* g = gates + b * N;
      const float* xr = xw + (time_of(b) * B + b) * N;
      for (int64_t j = 0; j < N; ++j) g[j] = xr[j] + g[j];
      lstm_cell(cfg, act, H, g, peep, op.b ? bias : nullptr, c + b * H, h + b * H, tmp);
      if (op.y) std::copy_n(h + b * H, H, op.y + ((time_of(b) * dirs + d) * B + b) * H);
    }
  }
  for (int64_t b = 0; b < B; ++b) {
    if (op.lens[size_t(b)] == 0) {
      std::fill_n(h + b * H, H, 0.0f);
      std::fill_n(c + b * H, H, 0.0f);
    }
    if (op.yh) std::copy_n(h + b * H, H, op.yh + state_at(b));
    if (op.yc) std::copy_n(c + b * H, H, op.yc + state_at(b));
  }
}

class DynamicQuantizeLstmKernel final : public Kernel {
 public:
  DynamicQuantizeLstmKernel(Config cfg, std::vector<gemm::PackedQuantB> w,
                            std::vector<gemm::PackedQuantB> r)
      : cfg_(std::move(cfg)), w_(std::move(w)), r_(std::move(r)) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    const Tensor& w = *ctx.input(1);
    const Tensor& r = *ctx.input(2);
    const Tensor* bias = ctx.input(3);
    const Tensor* lens_t = ctx.input(4);
    const Tensor* h0 = ctx.input(5);
    const Tensor* c0 = ctx.input(6);
    const Tensor* p = ctx.input(7);
    const Tensor* w_scale = ctx.input(8);
    const Tensor* w_zero = ctx.input(9);
    const Tensor* r_scale = ctx.input(10);
    const Tensor* r_zero = ctx.input(11);
    const int64_t D = cfg_.dirs;
    if (!w_scale || !r_scale) return invalid_argument("W_scale and R_scale are required");
    if (x.rank() != 3) return invalid_argument("X must have rank 3, got ", x.shape().to_string());
    const int64_t S = x.shape()[0], B = x.shape()[1], I = x.shape()[2];
    if (r.rank() != 3) return invalid_argument("R must have rank 3, got ", r.shape().to_string());
    const int64_t H = cfg_.hidden >= 0 ? cfg_.hidden : r.shape()[1];
    const int64_t N = 4 * H;
    NXRT_RETURN_IF_ERROR(check_quant_weight("W", w, D, I, N, *w_scale, w_zero));
    NXRT_RETURN_IF_ERROR(check_quant_weight("R", r, D, H, N, *r_scale, r_zero));
    auto expect = [](const Tensor& t, const Shape& want, const char* what) -> Status {
      if (!(t.shape() == want))
        return invalid_argument(what, " has shape ", t.shape().to_string(), ", expected ",
                                want.to_string());
      return Status();
    };
    if (bias) NXRT_RETURN_IF_ERROR(expect(*bias, Shape{D, 2 * N}, "B"));
    const Shape state_shape{D, B, H};
    if (h0) NXRT_RETURN_IF_ERROR(expect(*h0, state_shape, "initial_h"));
    if (c0) NXRT_RETURN_IF_ERROR(expect(*c0, state_shape, "initial_c"));
    if (p) NXRT_RETURN_IF_ERROR(expect(*p, Shape{D, 3 * H}, "P"));
    SmallVec<int64_t, 16> lens(size_t(B), S);
    if (lens_t) {
      NXRT_RETURN_IF_ERROR(expect(*lens_t, Shape{B}, "sequence_lens"));
      NXRT_RETURN_IF_ERROR(read_int_list(*lens_t, lens, "sequence_lens"));
      for (int64_t l : lens)
        if (l < 0 || l > S)
          return invalid_argument("sequence_lens value ", l, " is outside [0, ", S, "]");
    }
    const Shape y_shape{S, D, B, H};
    if (checked_numel(y_shape.span()) < 0 || checked_numel(Shape{S, B, N}.span()) < 0)
      return invalid_argument("sizes are too large");
    QuantOperands op;
    if (cfg_.want_y) {
      NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, y_shape));
      op.y = y->data<float>();
    }
    if (cfg_.want_yh) {
      NXRT_ASSIGN_OR_RETURN(Tensor * yh, ctx.output(1, state_shape));
      op.yh = yh->data<float>();
    }
    if (cfg_.want_yc) {
      NXRT_ASSIGN_OR_RETURN(Tensor * yc, ctx.output(2, state_shape));
      op.yc = yc->data<float>();
    }
    op.padded = std::any_of(lens.begin(), lens.end(), [&](int64_t l) { return l < S; });
    if (op.y && op.padded) std::fill_n(op.y, y_shape.numel(), 0.0f);
    const int64_t T = B > 0 ? *std::max_element(lens.begin(), lens.end()) : 0;
    if (T == 0) {  // nothing runs: the states are zero
      if (op.yh) std::fill_n(op.yh, state_shape.numel(), 0.0f);
      if (op.yc) std::fill_n(op.yc, state_shape.numel(), 0.0f);
      return Status();
    }

    // X to uint8 codes, once for both directions.
    const int64_t x_count = T * B * I;
    op.x_params = dynamic_quant_params(x.data<float>(), x_count);
    auto* codes = thread_scratch<uint8_t>(size_t(x_count), 0);
    vmath::quantize_8bit(x.data<float>(), size_t(x_count), op.x_params.scale,
                         op.x_params.zero_point, false, codes);
    op.x_codes = codes;

    // W and R as packed at prepare (constants), else packed now.
    std::vector<gemm::PackedQuantB> fresh_w, fresh_r;
    if (w_.empty())
      for (int64_t d = 0; d < D; ++d) fresh_w.push_back(pack_quant_weight(w, w_zero, d));
    if (r_.empty())
      for (int64_t d = 0; d < D; ++d) fresh_r.push_back(pack_quant_weight(r, r_zero, d));
    op.w = w_.empty() ? fresh_w.data() : w_.data();
    op.r = r_.empty() ? fresh_r.data() : r_.data();

    op.seq = S;
    op.batch = B;
    op.input = I;
    op.hidden = H;
    op.steps = T;
    op.w_scale = w_scale->data<float>();
    op.r_scale = r_scale->data<float>();
    op.w_per_column = w_scale->numel() != D;
    op.r_per_column = r_scale->numel() != D;
    op.b = bias ? bias->data<float>() : nullptr;
    op.h0 = h0 ? h0->data<float>() : nullptr;
    op.c0 = c0 ? c0->data<float>() : nullptr;
    op.p = p ? p->data<float>() : nullptr;
    op.lens = lens;
    // The two directions are independent: one per thread when there are two.
    const double work = double(T) * double(B) * double(I + H) * double(N);
    if (D == 2 && parallel_pieces(2 * work, std::max(work, double(1 << 16))) >= 2)
      parallel_for(2, [&](size_t d) { run_quantized_direction(cfg_, op, int64_t(d)); });
    else
      for (int64_t d = 0; d < D; ++d) run_quantized_direction(cfg_, op, d);
    return Status();
  }

 private:
  Config cfg_;
  std::vector<gemm::PackedQuantB> w_, r_;  // per direction, packed at prepare, or empty
};

Expected<KernelPtr> create_quantized_lstm(KernelInit& init) {
  Config cfg;
  NXRT_RETURN_IF_ERROR(read_config(init, Cell::kLstm, cfg));
  if (cfg.layout != 0)
    return init.error(StatusCode::kInvalidGraph, "layout must be 0, got ", cfg.layout);
  if (init.num_inputs() < 11 || init.num_inputs() > 12)
    return init.error(StatusCode::kInvalidGraph, "has ", init.num_inputs(),
                      " inputs, expected 11 or 12");
  if (init.output_types.size() > 3)
    return init.error(StatusCode::kInvalidGraph, "has ", init.output_types.size(),
                      " outputs, at most 3 allowed");
  if (init.input_type(0) != DataType::kFloat) return init.unsupported_type(0);
  for (size_t i : {1, 2}) {
    const DataType t = init.input_type(i);
    if (t != DataType::kInt8 && t != DataType::kUint8) return init.unsupported_type(i);
    const size_t zero = i == 1 ? 9 : 11;
    if (init.has_input(zero) && init.input_type(zero) != t)
      return init.error(StatusCode::kInvalidGraph, "input ", zero, " (", i == 1 ? "W" : "R",
                        "'s zero point) has type ", tensor_type_name(init.input_type(zero)),
                        ", expected ", tensor_type_name(t));
  }
  for (size_t i : {3, 5, 6, 7, 8, 10})
    if (init.has_input(i) && init.input_type(i) != DataType::kFloat)
      return init.unsupported_type(i);
  if (!init.has_input(8) || !init.has_input(10))
    return init.error(StatusCode::kInvalidGraph, "W_scale and R_scale are required");
  if (init.has_input(4) && init.input_type(4) != DataType::kInt32 &&
      init.input_type(4) != DataType::kInt64)
    return init.error(StatusCode::kInvalidGraph, "sequence_lens must be int32, got ",
                      tensor_type_name(init.input_type(4)));
  init.set_all_outputs(DataType::kFloat);

  // Constant W and R (with constant zero points) are checked and packed now.
  const Tensor* r = init.constant_input(2);
  const int64_t H = cfg.hidden >= 0 ? cfg.hidden : r && r->rank() == 3 ? r->shape()[1] : -1;
  std::vector<gemm::PackedQuantB> packed[2];
  for (size_t i : {1, 2}) {
    const Tensor* q = init.constant_input(i);
    const size_t zero_at = i == 1 ? 9 : 11;
    const Tensor* scale = init.constant_input(i == 1 ? 8 : 10);
    const Tensor* zero = init.has_input(zero_at) ? init.constant_input(zero_at) : nullptr;
    const char* what = i == 1 ? "W" : "R";
    if (!q || H < 0) continue;
    if (scale) {
      const Status st =
          check_quant_weight(what, *q, cfg.dirs, i == 2 ? H : -1, 4 * H, *scale, zero);
      if (!st.ok()) return init.error(StatusCode::kInvalidGraph, st.message());
    }
    if (init.has_input(zero_at) && !zero) continue;  // zero point given at run time
    if (q->rank() != 3 || q->shape()[0] != cfg.dirs || q->shape()[2] != 4 * H) continue;
    if (zero && zero->numel() != cfg.dirs && zero->numel() != cfg.dirs * 4 * H) continue;
    for (int64_t d = 0; d < cfg.dirs; ++d) packed[i - 1].push_back(pack_quant_weight(*q, zero, d));
    init.absorb_constant(i);
  }
  return make_kernel<DynamicQuantizeLstmKernel>(std::move(cfg), std::move(packed[0]),
                                                std::move(packed[1]));
}

}  // namespace

Expected<KernelPtr> create_rnn(KernelInit& init) { return create_recurrent(init, Cell::kRnn); }
Expected<KernelPtr> create_gru(KernelInit& init) { return create_recurrent(init, Cell::kGru); }
Expected<KernelPtr> create_lstm(KernelInit& init) { return create_recurrent(init, Cell::kLstm); }
Expected<KernelPtr> create_dynamic_quantize_lstm(KernelInit& init) {
  return create_quantized_lstm(init);
}

}  // namespace nxrt::cpu
