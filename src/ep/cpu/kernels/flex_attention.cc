// FlexAttention (ai.onnx.preview opset 1): rank-4 scaled dot-product attention with
// optional score_mod / prob_mod subgraphs applied to the whole (B, Hq, L, S) score and
// probability tensors, and grouped KV heads.
//
// Without modifiers each (batch, kv head) is processed row by row with O(S) scratch.
// A modifier sees the full tensor, so then the scores are materialized once, handed to
// the subgraph in softmax_precision, and read back before the next stage. A float16 or
// bfloat16 softmax_precision fixes what the modifiers see; the arithmetic itself stays
// in float, which is at least as accurate as the precision asked for.
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <type_traits>
#include <vector>

#include "ep/cpu/kernels/common.h"

namespace nxrt::cpu {
namespace {

template <typename A, typename T>
T to_storage(A v) {
  if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>)
    return T(float(v));
  else
    return T(v);
}

// Independent partial sums let the compiler vectorize without reassociating on its own.
template <typename A>
A dot(const A* a, const A* b, int64_t n) {
  A part[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; ++k) part[k] += a[i + k] * b[i + k];
  A s = ((part[0] + part[1]) + (part[2] + part[3])) + ((part[4] + part[5]) + (part[6] + part[7]));
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

// In-place softmax of one row. A row that is -inf everywhere yields NaN, exactly as
// the Softmax of the op's function definition does.
template <typename A>
void softmax_row(A* row, int64_t n) {
  if (n == 0) return;
  A mx = -std::numeric_limits<A>::infinity();
  for (int64_t s = 0; s < n; ++s) mx = std::max(mx, row[s]);
  A sum = 0;
  for (int64_t s = 0; s < n; ++s) {
    row[s] = std::exp(row[s] - mx);
    sum += row[s];
  }
  const A inv = A(1) / sum;
  for (int64_t s = 0; s < n; ++s) row[s] *= inv;
}

// Conversions between the compute buffer and a modifier's tensor of another float type.
template <typename A>
void narrow_into(const std::vector<A>& buf, Tensor& t) {
  switch (t.dtype()) {
    NXRT_CASES_FLOAT(for (size_t i = 0; i < buf.size(); ++i) t.data<T>()[i] =
                         to_storage<A, T>(buf[i]))
    default:
      break;
  }
}

template <typename A>
void widen_from(const Tensor& t, std::vector<A>& buf) {
  switch (t.dtype()) {
    NXRT_CASES_FLOAT(for (size_t i = 0; i < buf.size(); ++i) buf[i] =
                         static_cast<A>(t.data<T>()[i]))
    default:
      break;
  }
}

struct FlexConfig {
  bool has_scale = false;
  float scale = 0;
  DataType precision = DataType::kFloat;  // element type the modifiers see
  std::optional<CompiledSubgraph> score_mod, prob_mod;
};

template <typename T, typename A>
class FlexAttentionKernel final : public Kernel {
 public:
  explicit FlexAttentionKernel(FlexConfig cfg) : cfg_(std::move(cfg)) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor& q_t = *ctx.input(0);
    const Tensor& k_t = *ctx.input(1);
    const Tensor& v_t = *ctx.input(2);
    if (q_t.rank() != 4 || k_t.rank() != 4 || v_t.rank() != 4)
      return invalid_argument("Q, K and V must be rank 4, got ", q_t.shape().to_string(), ", ",
                              k_t.shape().to_string(), ", ", v_t.shape().to_string());
    const Shape& qs = q_t.shape();
    const Shape& ks = k_t.shape();
    const Shape& vs = v_t.shape();
    const int64_t B = qs[0], Hq = qs[1], L = qs[2], E = qs[3];
    const int64_t Hkv = ks[1], S = ks[2], Ev = vs[3];
    if (ks[0] != B || vs[0] != B) return invalid_argument("Q, K and V batch sizes differ");
    if (ks[3] != E) return invalid_argument("K head size ", ks[3], " differs from Q head size ", E);
    if (vs[1] != Hkv || vs[2] != S)
      return invalid_argument("V heads/sequence (", vs[1], ", ", vs[2], ") differ from K's (", Hkv,
                              ", ", S, ")");
    if (Hkv <= 0 || Hq % Hkv != 0)
      return invalid_argument("Q heads (", Hq, ") must be a multiple of K/V heads (", Hkv, ")");
    NXRT_ASSIGN_OR_RETURN(Tensor * y_t, ctx.output(0, Shape{B, Hq, L, Ev}));

    Work w{q_t.data<T>(),
           k_t.data<T>(),
           v_t.data<T>(),
           y_t->data<T>(),
           B,
           Hq,
           L,
           E,
           Hkv,
           S,
           Ev,
           cfg_.has_scale ? A(cfg_.scale) : A(1) / std::sqrt(A(E))};
    if (!cfg_.score_mod && !cfg_.prob_mod) return fused(w);
    return staged(ctx, w);
  }

 private:
  struct Work {
    const T *q, *k, *v;
    T* y;
    int64_t B, Hq, L, E, Hkv, S, Ev;
    A scale;
  };

  // K and V of one (batch, kv head) widened to the compute type, contiguous by position.
  static void load_kv(const Work& w, int64_t b, int64_t g, std::vector<A>& kb, std::vector<A>& vb) {
    const T* kp = w.k + (b * w.Hkv + g) * w.S * w.E;
    const T* vp = w.v + (b * w.Hkv + g) * w.S * w.Ev;
    for (int64_t i = 0; i < w.S * w.E; ++i) kb[size_t(i)] = static_cast<A>(kp[i]);
    for (int64_t i = 0; i < w.S * w.Ev; ++i) vb[size_t(i)] = static_cast<A>(vp[i]);
  }

  static void score_row(const Work& w, int64_t b, int64_t h, int64_t i, const std::vector<A>& kb,
                        std::vector<A>& qrow, A* out) {
    const T* qi = w.q + ((b * w.Hq + h) * w.L + i) * w.E;
    for (int64_t d = 0; d < w.E; ++d) qrow[size_t(d)] = static_cast<A>(qi[d]);
    for (int64_t s = 0; s < w.S; ++s)
      out[s] = dot(qrow.data(), &kb[size_t(s * w.E)], w.E) * w.scale;
  }

  static void apply_v(const Work& w, int64_t b, int64_t h, int64_t i, const A* prob,
                      const std::vector<A>& vb, std::vector<A>& acc) {
    std::fill(acc.begin(), acc.end(), A(0));
    for (int64_t s = 0; s < w.S; ++s) {
      const A p = prob[s];
      const A* vr = &vb[size_t(s * w.Ev)];
      for (int64_t d = 0; d < w.Ev; ++d) acc[size_t(d)] += p * vr[d];
    }
    T* yi = w.y + ((b * w.Hq + h) * w.L + i) * w.Ev;
    for (int64_t d = 0; d < w.Ev; ++d) yi[d] = to_storage<A, T>(acc[size_t(d)]);
  }

  Status fused(const Work& w) const {
    std::vector<A> kb(size_t(w.S * w.E)), vb(size_t(w.S * w.Ev));
    std::vector<A> qrow(static_cast<size_t>(w.E)), row(static_cast<size_t>(w.S)),
        acc(static_cast<size_t>(w.Ev));
    const int64_t group = w.Hq / w.Hkv;
    for (int64_t b = 0; b < w.B; ++b)
      for (int64_t g = 0; g < w.Hkv; ++g) {
        load_kv(w, b, g, kb, vb);
        for (int64_t h = g * group; h < (g + 1) * group; ++h)
          for (int64_t i = 0; i < w.L; ++i) {
            score_row(w, b, h, i, kb, qrow, row.data());
            softmax_row(row.data(), w.S);
            apply_v(w, b, h, i, row.data(), vb, acc);
          }
      }
    return Status();
  }

  // Runs a modifier on `buf` (shape B, Hq, L, S) in place, converting to and from the
  // precision the subgraph was compiled for.
  Status run_mod(KernelContext& ctx, const CompiledSubgraph& graph, const char* what,
                 const Shape& shape, std::vector<A>& buf) const {
    Tensor in;
    if (cfg_.precision == kDTypeOf<A>) {
      in = Tensor(cfg_.precision, shape, buf.data());
    } else {
      NXRT_ASSIGN_OR_RETURN(in, Tensor::allocate(cfg_.precision, shape));
      narrow_into(buf, in);
    }
    std::vector<Tensor> outs;
    const Tensor* feeds[1] = {&in};
    NXRT_RETURN_IF_ERROR(ctx.run_subgraph(graph, feeds, outs));
    if (outs.size() != 1)
      return invalid_argument(what, " produced ", outs.size(), " outputs, expected 1");
    const Tensor& out = outs[0];
    if (out.shape() != shape)
      return invalid_argument(what, " returned shape ", out.shape().to_string(), ", expected ",
                              shape.to_string());
    if (out.dtype() != cfg_.precision)
      return invalid_argument(what, " returned ", tensor_type_name(out.dtype()), ", expected ",
                              tensor_type_name(cfg_.precision));
    widen_from(out, buf);
    return Status();
  }

  Status staged(KernelContext& ctx, const Work& w) const {
    const Shape shape{w.B, w.Hq, w.L, w.S};
    NXRT_ASSIGN_OR_RETURN(size_t bytes, tensor_bytes(kDTypeOf<A>, shape, "the score tensor"));
    std::vector<A> scores(bytes / sizeof(A));
    std::vector<A> kb(size_t(w.S * w.E)), vb(size_t(w.S * w.Ev));
    std::vector<A> qrow(static_cast<size_t>(w.E)), acc(static_cast<size_t>(w.Ev));
    const int64_t group = w.Hq / w.Hkv;
    auto row_of = [&](int64_t b, int64_t h, int64_t i) {
      return scores.data() + ((b * w.Hq + h) * w.L + i) * w.S;
    };
    for (int64_t b = 0; b < w.B; ++b)
      for (int64_t g = 0; g < w.Hkv; ++g) {
        load_kv(w, b, g, kb, vb);
        for (int64_t h = g * group; h < (g + 1) * group; ++h)
          for (int64_t i = 0; i < w.L; ++i) score_row(w, b, h, i, kb, qrow, row_of(b, h, i));
      }
    if (cfg_.score_mod)
      NXRT_RETURN_IF_ERROR(run_mod(ctx, *cfg_.score_mod, "score_mod", shape, scores));
    for (int64_t r = 0; r < w.B * w.Hq * w.L; ++r) softmax_row(scores.data() + r * w.S, w.S);
    if (cfg_.prob_mod)
      NXRT_RETURN_IF_ERROR(run_mod(ctx, *cfg_.prob_mod, "prob_mod", shape, scores));
    for (int64_t b = 0; b < w.B; ++b)
      for (int64_t g = 0; g < w.Hkv; ++g) {
        load_kv(w, b, g, kb, vb);
        for (int64_t h = g * group; h < (g + 1) * group; ++h)
          for (int64_t i = 0; i < w.L; ++i) apply_v(w, b, h, i, row_of(b, h, i), vb, acc);
      }
    return Status();
  }

  FlexConfig cfg_;
};

// Compiles an optional modifier: one input and one output of the softmax precision.
Status compile_mod(KernelInit& init, const ir::Graph* graph, const char* name, DataType precision,
                   std::optional<CompiledSubgraph>& out) {
  if (!graph) return Status();
  if (graph->inputs.size() != 1)
    return init.error(StatusCode::kInvalidGraph, name, " must have exactly 1 input, has ",
                      graph->inputs.size());
  const DataType declared = graph->inputs[0].type.elem_type;
  if (declared != DataType::kUndefined && declared != precision)
    return init.error(StatusCode::kInvalidGraph, name, " declares its input as ",
                      tensor_type_name(declared), " but receives the softmax precision ",
                      tensor_type_name(precision));
  NXRT_ASSIGN_OR_RETURN(
      out, init.subgraphs->compile(*graph, init.implicit_inputs, init.implicit_types, {precision}));
  if (out->outputs.size() != 1 || out->output_types.size() != 1)
    return init.error(StatusCode::kInvalidGraph, name, " must have exactly 1 output, has ",
                      out->outputs.size());
  if (out->output_kinds.size() == 1 && out->output_kinds[0] != ValueKind::kTensor)
    return init.error(StatusCode::kInvalidGraph, name, " must return a tensor");
  const DataType t = out->output_types[0];
  if (t != DataType::kUndefined && t != precision)
    return init.error(StatusCode::kInvalidGraph, name, " returns ", tensor_type_name(t),
                      " but must return the softmax precision ", tensor_type_name(precision));
  return Status();
}

}  // namespace

Expected<KernelPtr> create_flex_attention(KernelInit& init) {
  AttrReader attrs(init.node);
  FlexConfig cfg;
  cfg.has_scale = attrs.has("scale");
  cfg.scale = attrs.get_float("scale", 0.0f);
  const bool has_precision = attrs.has("softmax_precision");
  const int64_t precision = attrs.get_int("softmax_precision", 0);
  const ir::Graph* score_mod = attrs.get_graph("score_mod");
  const ir::Graph* prob_mod = attrs.get_graph("prob_mod");
  NXRT_RETURN_IF_ERROR(attrs.status());
  if (init.num_inputs() != 3 || !init.has_input(0) || !init.has_input(1) || !init.has_input(2))
    return init.error(StatusCode::kInvalidGraph, "needs exactly the Q, K and V inputs");
  const DataType t = init.input_type(0);
  if (t != DataType::kFloat && t != DataType::kDouble && t != DataType::kFloat16 &&
      t != DataType::kBFloat16)
    return init.unsupported_type(0);
  for (size_t i = 1; i < 3; ++i)
    if (init.input_type(i) != t)
      return init.error(StatusCode::kInvalidGraph, "input ", i, " has type ",
                        tensor_type_name(init.input_type(i)), ", expected ", tensor_type_name(t));
  if (cfg.has_scale && !std::isfinite(cfg.scale))
    return init.error(StatusCode::kInvalidGraph, "scale must be finite");
  cfg.precision = t == DataType::kDouble ? DataType::kDouble : DataType::kFloat;
  if (has_precision) {
    const DataType p = static_cast<DataType>(precision);
    if (p != DataType::kFloat && p != DataType::kDouble && p != DataType::kFloat16 &&
        p != DataType::kBFloat16)
      return init.error(StatusCode::kInvalidGraph, "softmax_precision ", precision,
                        " is not float, float16, bfloat16 or double");
    cfg.precision = p;
  }
  NXRT_RETURN_IF_ERROR(compile_mod(init, score_mod, "score_mod", cfg.precision, cfg.score_mod));
  NXRT_RETURN_IF_ERROR(compile_mod(init, prob_mod, "prob_mod", cfg.precision, cfg.prob_mod));
  init.output_types[0] = t;
  // Half precisions are stored narrow but computed in float; double stays double.
  const bool wide = cfg.precision == DataType::kDouble;
  switch (t) {
    NXRT_CASES_FLOAT(if (wide) return make_kernel<FlexAttentionKernel<T, double>>(std::move(cfg));
                     return make_kernel<FlexAttentionKernel<T, float>>(std::move(cfg)))
    default:
      break;
  }
  return init.unsupported_type(0);
}

}  // namespace nxrt::cpu
