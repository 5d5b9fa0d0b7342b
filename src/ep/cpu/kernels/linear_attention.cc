// LinearAttention (opset 27): recurrent linear attention with the linear, gated, delta
// and gated_delta (Gated DeltaNet) update rules, and grouped KV heads.
//
// On a CPU the token-by-token recurrence is already the work-optimal form (T * d_k * d_v
// per head), so the chunk_size hint is ignored. Each (batch, kv head) keeps its d_k x d_v
// state in float, row-major by key dim, so the decay, the delta read-back (S^T k), the
// rank-1 write and the query read all stream along contiguous d_v rows.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "ep/cpu/kernels/common.h"

namespace nxrt::cpu {
namespace {

bool is_supported_float(DataType t) {
  return t == DataType::kFloat || t == DataType::kFloat16 || t == DataType::kBFloat16;
}

// q/k/v/decay/beta and the state may use different float types (T vs S); rows are
// widened to float on load and rounded on store, so one code path serves all of them.
void load(const Tensor& t, int64_t offset, int64_t n, float* dst) {
  switch (t.dtype()) {
    case DataType::kFloat: {
      const float* p = t.data<float>() + offset;
      for (int64_t i = 0; i < n; ++i) dst[i] = p[i];
      break;
    }
    case DataType::kFloat16: {
      const Float16* p = t.data<Float16>() + offset;
      for (int64_t i = 0; i < n; ++i) dst[i] = float(p[i]);
      break;
    }
    case DataType::kBFloat16: {
      const BFloat16* p = t.data<BFloat16>() + offset;
      for (int64_t i = 0; i < n; ++i) dst[i] = float(p[i]);
      break;
    }
    default:
      break;  // rejected at prepare
  }
}

void store(Tensor& t, int64_t offset, int64_t n, const float* src) {
  switch (t.dtype()) {
    case DataType::kFloat: {
      float* p = t.data<float>() + offset;
      for (int64_t i = 0; i < n; ++i) p[i] = src[i];
      break;
    }
    case DataType::kFloat16: {
      Float16* p = t.data<Float16>() + offset;
      for (int64_t i = 0; i < n; ++i) p[i] = Float16(src[i]);
      break;
    }
    case DataType::kBFloat16: {
      BFloat16* p = t.data<BFloat16>() + offset;
      for (int64_t i = 0; i < n; ++i) p[i] = BFloat16(src[i]);
      break;
    }
    default:
      break;
  }
}

struct LinearAttentionConfig {
  int64_t q_heads = 0, kv_heads = 0;
  float scale = 0;  // 0: 1/sqrt(d_k)
  bool gated = false, delta = false;
};

class LinearAttentionKernel final : public Kernel {
 public:
  explicit LinearAttentionKernel(LinearAttentionConfig cfg) : cfg_(cfg) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor& q = *ctx.input(0);
    const Tensor& k = *ctx.input(1);
    const Tensor& v = *ctx.input(2);
    const Tensor* past = ctx.input(3);
    const Tensor* decay = ctx.input(4);
    const Tensor* beta = ctx.input(5);
    const int64_t Hq = cfg_.q_heads, Hkv = cfg_.kv_heads;
    if (q.rank() != 3 || k.rank() != 3 || v.rank() != 3)
      return invalid_argument("query, key and value must be rank 3 (B, T, H*D), got ",
                              q.shape().to_string(), ", ", k.shape().to_string(), ", ",
                              v.shape().to_string());
    const int64_t B = q.shape()[0], T = q.shape()[1];
    for (const Tensor* t : {&k, &v})
      if (t->shape()[0] != B || t->shape()[1] != T)
        return invalid_argument(
            "query, key and value batch/sequence dims differ: ", q.shape().to_string(), ", ",
            k.shape().to_string(), ", ", v.shape().to_string());
    if (q.shape()[2] % Hq != 0)
      return invalid_argument("query hidden size ", q.shape()[2],
                              " is not divisible by q_num_heads ", Hq);
    const int64_t dk = q.shape()[2] / Hq;
    if (k.shape()[2] != Hkv * dk)
      return invalid_argument("key hidden size ", k.shape()[2],
                              " must be kv_num_heads * d_k = ", Hkv * dk);
    if (v.shape()[2] % Hkv != 0)
      return invalid_argument("value hidden size ", v.shape()[2],
                              " is not divisible by kv_num_heads ", Hkv);
    const int64_t dv = v.shape()[2] / Hkv;
    if (past && past->shape() != Shape{B, Hkv, dk, dv})
      return invalid_argument("past_state shape ", past->shape().to_string(), " must be (", B, ", ",
                              Hkv, ", ", dk, ", ", dv, ")");
    if (cfg_.gated && !decay)
      return invalid_argument("the gated update rules need the decay input");
    if (cfg_.delta && !beta) return invalid_argument("the delta update rules need the beta input");
    bool decay_per_key = false;
    if (decay) {
      const Shape& s = decay->shape();
      if (s.size() != 3 || s[0] != B || s[1] != T || (s[2] != Hkv && s[2] != Hkv * dk))
        return invalid_argument("decay shape ", s.to_string(), " must be (", B, ", ", T, ", ", Hkv,
                                ") or (", B, ", ", T, ", ", Hkv * dk, ")");
      decay_per_key = s[2] == Hkv * dk && dk != 1;
    }
    bool beta_per_head = false;
    if (beta) {
      const Shape& s = beta->shape();
      if (s.size() != 3 || s[0] != B || s[1] != T || (s[2] != Hkv && s[2] != 1))
        return invalid_argument("beta shape ", s.to_string(), " must be (", B, ", ", T, ", ", Hkv,
                                ") or (", B, ", ", T, ", 1)");
      beta_per_head = s[2] == Hkv;
    }

    NXRT_ASSIGN_OR_RETURN(Tensor * out, ctx.output(0, Shape{B, T, Hq * dv}));
    Tensor* present = nullptr;
    if (ctx.num_outputs() > 1) {
      NXRT_ASSIGN_OR_RETURN(present, ctx.output(1, Shape{B, Hkv, dk, dv}));
    }

    const float scale = cfg_.scale != 0.0f ? cfg_.scale : 1.0f / std::sqrt(float(dk));
    const int64_t group = Hq / Hkv;
    const size_t nk = size_t(dk), nv = size_t(dv);
    std::vector<float> state(nk * nv), kt(nk), vt(nv), qt(nk), ot(nv), gate(nk), read(nv);
    const int64_t decay_width = decay ? decay->shape()[2] : 0;
    const int64_t beta_width = beta ? beta->shape()[2] : 0;

    for (int64_t b = 0; b < B; ++b) {
      for (int64_t g = 0; g < Hkv; ++g) {
        if (past)
          load(*past, (b * Hkv + g) * dk * dv, dk * dv, state.data());
        else
          std::fill(state.begin(), state.end(), 0.0f);
        for (int64_t t = 0; t < T; ++t) {
          const int64_t row = b * T + t;
          load(k, row * Hkv * dk + g * dk, dk, kt.data());
          load(v, row * Hkv * dv + g * dv, dv, vt.data());
          if (cfg_.gated) {
            if (decay_per_key) {
              load(*decay, row * decay_width + g * dk, dk, gate.data());
            } else {
              float d = 0;
              load(*decay, row * decay_width + g, 1, &d);
              std::fill(gate.begin(), gate.end(), d);
            }
            for (size_t i = 0; i < nk; ++i) {
              const float e = std::exp(gate[i]);
              float* s = &state[i * nv];
              for (size_t m = 0; m < nv; ++m) s[m] *= e;
            }
          }
          if (cfg_.delta) {
            // The write replaces what the (decayed) state recalls for this key.
            std::fill(read.begin(), read.end(), 0.0f);
            for (size_t i = 0; i < nk; ++i) {
              const float ki = kt[i];
              const float* s = &state[i * nv];
              for (size_t m = 0; m < nv; ++m) read[m] += s[m] * ki;
            }
            float bt = 0;
            load(*beta, row * beta_width + (beta_per_head ? g : 0), 1, &bt);
            for (size_t m = 0; m < nv; ++m) vt[m] = bt * (vt[m] - read[m]);
          }
          for (size_t i = 0; i < nk; ++i) {
            const float ki = kt[i];
            float* s = &state[i * nv];
            for (size_t m = 0; m < nv; ++m) s[m] += ki * vt[m];
          }
          for (int64_t hg = 0; hg < group; ++hg) {
            const int64_t h = g * group + hg;
            load(q, row * Hq * dk + h * dk, dk, qt.data());
            std::fill(ot.begin(), ot.end(), 0.0f);
            for (size_t i = 0; i < nk; ++i) {
              const float qi = qt[i] * scale;
              const float* s = &state[i * nv];
              for (size_t m = 0; m < nv; ++m) ot[m] += qi * s[m];
            }
            store(*out, row * Hq * dv + h * dv, dv, ot.data());
          }
        }
        if (present) store(*present, (b * Hkv + g) * dk * dv, dk * dv, state.data());
      }
    }
    return Status();
  }

 private:
  LinearAttentionConfig cfg_;
};

}  // namespace

Expected<KernelPtr> create_linear_attention(KernelInit& init) {
  AttrReader attrs(init.node);
  LinearAttentionConfig cfg;
  cfg.q_heads = attrs.require_int("q_num_heads");
  cfg.kv_heads = attrs.require_int("kv_num_heads");
  cfg.scale = attrs.get_float("scale", 0.0f);
  const std::string rule = attrs.get_string("update_rule", "gated_delta");
  attrs.get_int("chunk_size", 64);  // a GPU tiling hint; read so a wrong type is reported
  NXRT_RETURN_IF_ERROR(attrs.status());
  if (rule != "linear" && rule != "gated" && rule != "delta" && rule != "gated_delta")
    return init.error(StatusCode::kInvalidGraph, "update_rule '", rule,
                      "' is not one of 'linear', 'gated', 'delta', 'gated_delta'");
  if (cfg.q_heads <= 0 || cfg.kv_heads <= 0 || cfg.q_heads % cfg.kv_heads != 0)
    return init.error(StatusCode::kInvalidGraph, "q_num_heads (", cfg.q_heads,
                      ") must be a positive multiple of kv_num_heads (", cfg.kv_heads, ")");
  if (!std::isfinite(cfg.scale))
    return init.error(StatusCode::kInvalidGraph, "scale must be finite");
  cfg.gated = rule == "gated" || rule == "gated_delta";
  cfg.delta = rule == "delta" || rule == "gated_delta";
  if (init.num_inputs() < 3 || !init.has_input(0) || !init.has_input(1) || !init.has_input(2))
    return init.error(StatusCode::kInvalidGraph, "needs the query, key and value inputs");
  if (cfg.gated != init.has_input(4))
    return init.error(StatusCode::kInvalidGraph, "update_rule '", rule,
                      cfg.gated ? "' requires" : "' does not take", " the decay input");
  if (cfg.delta != init.has_input(5))
    return init.error(StatusCode::kInvalidGraph, "update_rule '", rule,
                      cfg.delta ? "' requires" : "' does not take", " the beta input");
  const DataType t = init.input_type(0);
  if (!is_supported_float(t)) return init.unsupported_type(0);
  for (size_t i : {size_t(1), size_t(2), size_t(4), size_t(5)})
    if (init.has_input(i) && init.input_type(i) != t)
      return init.error(StatusCode::kInvalidGraph, "input ", i, " has type ",
                        tensor_type_name(init.input_type(i)), ", expected ", tensor_type_name(t),
                        " like query");
  if (init.has_input(3) && !is_supported_float(init.input_type(3))) return init.unsupported_type(3);
  init.output_types[0] = t;
  // With no past_state nothing names the state type S; it then follows the activations.
  if (init.output_types.size() > 1)
    init.output_types[1] = init.has_input(3) ? init.input_type(3) : t;
  return make_kernel<LinearAttentionKernel>(cfg);
}

}  // namespace nxrt::cpu
