// Recurrent ops: RNN, GRU and LSTM (forward, reverse, bidirectional; layout 0 and 1).
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
#include "ep/cpu/kernels/common.h"

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

void sigmoid_inplace(float* x, int64_t n) {
#if NXRT_RNN_X86
  if (gemm::has_avx2_fma()) return sigmoid_avx2(x, n);
#endif
  for (int64_t i = 0; i < n; ++i) x[i] = sigmoid_one(x[i]);
}

void tanh_inplace(float* x, int64_t n) {
#if NXRT_RNN_X86
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
          C *gi = g, *go = g + H, *gf = g + 2 * H, *gc = g + 3 * H;
          C* cb = c.data() + b * H;
          if (peep)
            for (int64_t j = 0; j < H; ++j) {
              gi[j] += peep[j] * cb[j];
              gf[j] += peep[2 * H + j] * cb[j];
            }
          activate(act[0], gi, H, clip);
          if (cfg.input_forget) {
            for (int64_t j = 0; j < H; ++j) gf[j] = C(1) - gi[j];
          } else {
            activate(act[0], gf, H, clip);
          }
          activate(act[1], gc, H, clip);
          for (int64_t j = 0; j < H; ++j) cb[j] = gf[j] * cb[j] + gi[j] * gc[j];
          if (peep)
            for (int64_t j = 0; j < H; ++j) go[j] += peep[H + j] * cb[j];
          activate(act[0], go, H, clip);
          std::copy_n(cb, H, tmp.begin());
          activate(act[2], tmp.data(), H, 0.0f);
          C* hb = h.data() + b * H;
          for (int64_t j = 0; j < H; ++j) hb[j] = go[j] * tmp[size_t(j)];
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

Expected<KernelPtr> create_recurrent(KernelInit& init, Cell cell) {
  AttrReader attrs(init.node);
  Config cfg;
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
  auto wanted = [&](size_t i) {
    return i < init.node.outputs.size() && !init.node.outputs[i].empty();
  };
  cfg.want_y = wanted(0);
  cfg.want_yh = wanted(1);
  cfg.want_yc = wanted(2);
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

}  // namespace

Expected<KernelPtr> create_rnn(KernelInit& init) { return create_recurrent(init, Cell::kRnn); }
Expected<KernelPtr> create_gru(KernelInit& init) { return create_recurrent(init, Cell::kGru); }
Expected<KernelPtr> create_lstm(KernelInit& init) { return create_recurrent(init, Cell::kLstm); }

}  // namespace nxrt::cpu
