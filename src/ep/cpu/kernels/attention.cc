// Attention (opset 23/24) and RotaryEmbedding (opset 23, and com.microsoft's form).
//
// Attention runs per (batch, kv head): the K/V history (past ++ new) is laid out once as
// contiguous [T, head] rows in the compute type, then every query head of the group
// computes its score rows, bias (mask + causal + padding), softcap and softmax, and
// accumulates P·V row by row so the inner loops stream contiguous memory.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "ep/cpu/kernels/common.h"

namespace nxrt::cpu {
namespace {

template <typename T>
struct Compute {
  using type = float;
};
template <>
struct Compute<double> {
  using type = double;
};

template <typename A, typename T>
T to_storage(A v) {
  if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>)
    return T(float(v));
  else
    return T(v);
}

struct AttentionConfig {
  bool is_causal = false;
  int64_t q_heads = 0, kv_heads = 0;  // 0: not given (4-D inputs)
  int64_t qk_mode = 0;
  float scale = 0;  // 0: 1/sqrt(head_size)
  bool has_scale = false;
  float softcap = 0;
  int64_t left_window = -1, right_window = -1;  // opset 25 sliding window; -1: unbounded
};

// A tensor viewed as [batch, heads, seq, width] through strides: 4-D inputs are
// already in that layout, 3-D ones are [batch, seq, heads * width].
struct HeadView {
  int64_t batch = 0, heads = 0, seq = 0, width = 0;
  int64_t sb = 0, sh = 0, ss = 0;
  int64_t offset(int64_t b, int64_t h, int64_t s) const { return b * sb + h * sh + s * ss; }
};

Status make_view(const Tensor& t, int64_t heads_attr, const char* what, HeadView& v) {
  const Shape& s = t.shape();
  if (s.size() == 4) {
    v.batch = s[0];
    v.heads = s[1];
    v.seq = s[2];
    v.width = s[3];
    v.ss = v.width;
    v.sh = v.seq * v.ss;
    v.sb = v.heads * v.sh;
    return Status();
  }
  if (s.size() != 3)
    return invalid_argument(what, " must be 3-D or 4-D, got shape ", s.to_string());
  if (heads_attr <= 0)
    return invalid_argument(what,
                            " is 3-D, which needs the q_num_heads and kv_num_heads attributes");
  if (s[2] % heads_attr != 0)
    return invalid_argument(what, " hidden size ", s[2], " is not divisible by its ", heads_attr,
                            " heads");
  v.batch = s[0];
  v.seq = s[1];
  v.heads = heads_attr;
  v.width = s[2] / heads_attr;
  v.sh = v.width;
  v.ss = s[2];
  v.sb = v.seq * v.ss;
  return Status();
}

// Strides of the mask broadcast onto [batch, q_heads, q_seq, mask_len].
struct MaskView {
  int64_t sb = 0, sh = 0, ss = 0, len = 0;
};

Status make_mask_view(const Tensor& m, int64_t batch, int64_t heads, int64_t q_seq, int64_t total,
                      MaskView& v) {
  const Shape& s = m.shape();
  if (s.size() < 2 || s.size() > 4)
    return invalid_argument("attn_mask must have rank 2 to 4, got shape ", s.to_string());
  v.len = s.back();
  if (v.len > total)
    return invalid_argument("attn_mask last dim ", v.len, " exceeds the total key length ", total);
  const int64_t target[3] = {batch, heads, q_seq};
  int64_t stride = v.len;
  int64_t strides[3] = {0, 0, 0};
  for (int k = 2; k >= 0; --k) {
    const int64_t md = int64_t(s.size()) - 1 - (3 - k);  // mask dim aligned with target k
    if (md < 0) break;
    const int64_t dim = s[size_t(md)];
    if (dim != target[k] && dim != 1)
      return invalid_argument("attn_mask shape ", s.to_string(), " does not broadcast to [", batch,
                              ",", heads, ",", q_seq, ",", total, "]");
    strides[k] = dim == 1 ? 0 : stride;
    stride *= dim;
  }
  v.sb = strides[0];
  v.sh = strides[1];
  v.ss = strides[2];
  return Status();
}

// Independent partial sums let the compiler vectorize the reduction without
// reassociating floating point on its own.
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

template <typename T>
class AttentionKernel final : public Kernel {
  using A = typename Compute<T>::type;

 public:
  explicit AttentionKernel(AttentionConfig cfg) : cfg_(cfg) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor& q_t = *ctx.input(0);
    const Tensor& k_t = *ctx.input(1);
    const Tensor& v_t = *ctx.input(2);
    const Tensor* mask_t = ctx.input(3);
    const Tensor* past_k_t = ctx.input(4);
    const Tensor* past_v_t = ctx.input(5);
    const Tensor* nonpad_t = ctx.input(6);
    if (q_t.rank() != k_t.rank() || q_t.rank() != v_t.rank())
      return invalid_argument("Q, K and V must have the same rank, got ", q_t.shape().to_string(),
                              ", ", k_t.shape().to_string(), ", ", v_t.shape().to_string());
    HeadView q, k, v;
    NXRT_RETURN_IF_ERROR(make_view(q_t, cfg_.q_heads, "Q", q));
    NXRT_RETURN_IF_ERROR(make_view(k_t, cfg_.kv_heads, "K", k));
    NXRT_RETURN_IF_ERROR(make_view(v_t, cfg_.kv_heads, "V", v));
    const int64_t B = q.batch, Hq = q.heads, Sq = q.seq, D = q.width;
    const int64_t Hkv = k.heads, Skv = k.seq, Dv = v.width;
    if (k.batch != B || v.batch != B) return invalid_argument("Q, K and V batch sizes differ");
    if (k.width != D)
      return invalid_argument("K head size ", k.width, " differs from Q head size ", D);
    if (v.heads != Hkv || v.seq != Skv)
      return invalid_argument("V heads/sequence (", v.heads, ", ", v.seq, ") differ from K's (",
                              Hkv, ", ", Skv, ")");
    if (Hkv <= 0 || Hq % Hkv != 0)
      return invalid_argument("q_num_heads ", Hq, " is not a multiple of kv_num_heads ", Hkv);
    if ((past_k_t == nullptr) != (past_v_t == nullptr))
      return invalid_argument("past_key and past_value must be given together");
    int64_t P = 0;
    if (past_k_t) {
      const Shape& pk = past_k_t->shape();
      const Shape& pv = past_v_t->shape();
      if (pk.size() != 4 || pk[0] != B || pk[1] != Hkv || pk[3] != D)
        return invalid_argument("past_key shape ", pk.to_string(), " must be [", B, ",", Hkv,
                                ",past,", D, "]");
      P = pk[2];
      if (pv.size() != 4 || pv[0] != B || pv[1] != Hkv || pv[2] != P || pv[3] != Dv)
        return invalid_argument("past_value shape ", pv.to_string(), " must be [", B, ",", Hkv, ",",
                                P, ",", Dv, "]");
      if (nonpad_t)
        return invalid_argument("nonpad_kv_seqlen cannot be combined with past_key/past_value");
    }
    const int64_t T_len = P + Skv;
    std::vector<int64_t> nonpad;
    if (nonpad_t) {
      NXRT_RETURN_IF_ERROR(read_int_list(*nonpad_t, nonpad, "nonpad_kv_seqlen"));
      if (int64_t(nonpad.size()) != B)
        return invalid_argument("nonpad_kv_seqlen has ", nonpad.size(),
                                " entries, expected batch size ", B);
      for (int64_t n : nonpad)
        if (n < 0 || n > T_len)
          return invalid_argument("nonpad_kv_seqlen value ", n, " is outside [0, ", T_len, "]");
    }
    MaskView mv;
    if (mask_t) {
      if (mask_t->dtype() != DataType::kBool && mask_t->dtype() != q_t.dtype())
        return invalid_argument("attn_mask must be bool or ", dtype_name(q_t.dtype()));
      NXRT_RETURN_IF_ERROR(make_mask_view(*mask_t, B, Hq, Sq, T_len, mv));
    }

    Shape y_shape = q_t.rank() == 4 ? Shape{B, Hq, Sq, Dv} : Shape{B, Sq, Hq * Dv};
    NXRT_ASSIGN_OR_RETURN(Tensor * y_t, ctx.output(0, y_shape));
    Tensor* present_k = nullptr;
    Tensor* present_v = nullptr;
    Tensor* qk_out = nullptr;
    if (ctx.num_outputs() > 1) {
      NXRT_ASSIGN_OR_RETURN(present_k, ctx.output(1, Shape{B, Hkv, T_len, D}));
    }
    if (ctx.num_outputs() > 2) {
      NXRT_ASSIGN_OR_RETURN(present_v, ctx.output(2, Shape{B, Hkv, T_len, Dv}));
    }
    if (ctx.num_outputs() > 3) {
      NXRT_ASSIGN_OR_RETURN(qk_out, ctx.output(3, Shape{B, Hq, Sq, T_len}));
    }

    const T* qp = q_t.data<T>();
    const T* kp = k_t.data<T>();
    const T* vp = v_t.data<T>();
    const T* pkp = past_k_t ? past_k_t->data<T>() : nullptr;
    const T* pvp = past_v_t ? past_v_t->data<T>() : nullptr;
    T* yp = y_t->data<T>();
    const A scale = cfg_.has_scale ? A(cfg_.scale) : A(1) / std::sqrt(A(D));
    const A softcap = A(cfg_.softcap);
    const A neg_inf = -std::numeric_limits<A>::infinity();
    const int64_t group = Hq / Hkv;
    HeadView y;
    if (y_shape.size() == 4) {
      y = {B, Hq, Sq, Dv, Hq * Sq * Dv, Sq * Dv, Dv};
    } else {
      y = {B, Hq, Sq, Dv, Sq * Hq * Dv, Dv, Hq * Dv};
    }

    const size_t tn = size_t(T_len);
    std::vector<A> kbuf(tn * size_t(D)), vbuf(tn * size_t(Dv)), qrow(static_cast<size_t>(D));
    std::vector<A> raw(tn), capped(tn), bias(tn), prob(tn), acc(static_cast<size_t>(Dv));
    for (int64_t b = 0; b < B; ++b) {
      for (int64_t g = 0; g < Hkv; ++g) {
        // K/V history for this head: past rows, then the new ones.
        for (int64_t t = 0; t < P; ++t) {
          const T* pk = pkp + ((b * Hkv + g) * P + t) * D;
          const T* pv = pvp + ((b * Hkv + g) * P + t) * Dv;
          for (int64_t d = 0; d < D; ++d) kbuf[size_t(t * D + d)] = A(pk[d]);
          for (int64_t d = 0; d < Dv; ++d) vbuf[size_t(t * Dv + d)] = A(pv[d]);
        }
        for (int64_t t = 0; t < Skv; ++t) {
          const T* nk = kp + k.offset(b, g, t);
          const T* nv = vp + v.offset(b, g, t);
          for (int64_t d = 0; d < D; ++d) kbuf[size_t((P + t) * D + d)] = A(nk[d]);
          for (int64_t d = 0; d < Dv; ++d) vbuf[size_t((P + t) * Dv + d)] = A(nv[d]);
        }
        if (present_k) {
          T* dst = present_k->data<T>() + (b * Hkv + g) * T_len * D;
          for (int64_t i = 0; i < T_len * D; ++i) dst[i] = to_storage<A, T>(kbuf[size_t(i)]);
        }
        if (present_v) {
          T* dst = present_v->data<T>() + (b * Hkv + g) * T_len * Dv;
          for (int64_t i = 0; i < T_len * Dv; ++i) dst[i] = to_storage<A, T>(vbuf[size_t(i)]);
        }
        for (int64_t hg = 0; hg < group; ++hg) {
          const int64_t h = g * group + hg;
          for (int64_t i = 0; i < Sq; ++i) {
            const T* qi = qp + q.offset(b, h, i);
            for (int64_t d = 0; d < D; ++d) qrow[size_t(d)] = A(qi[d]) * scale;
            for (int64_t t = 0; t < T_len; ++t) {
              const A* kt = &kbuf[size_t(t * D)];
              const A s = dot(qrow.data(), kt, D);
              raw[size_t(t)] = s;
              capped[size_t(t)] = softcap > 0 ? softcap * std::tanh(s / softcap) : s;
            }
            fill_bias(b, h, i, Sq, P, T_len, mask_t, mv, nonpad, neg_inf, bias.data());
            // A row whose bias is -inf everywhere attends to nothing: it yields zeros.
            bool all_masked = true;
            for (int64_t t = 0; t < T_len && all_masked; ++t)
              all_masked = bias[size_t(t)] == neg_inf;
            A mx = neg_inf;
            for (int64_t t = 0; t < T_len; ++t) {
              prob[size_t(t)] = capped[size_t(t)] + bias[size_t(t)];
              mx = std::max(mx, prob[size_t(t)]);
            }
            if (T_len == 0 || all_masked || mx == neg_inf) {
              std::fill(prob.begin(), prob.end(), A(0));
            } else {
              A sum = 0;
              for (int64_t t = 0; t < T_len; ++t) {
                const A e = std::exp(prob[size_t(t)] - mx);
                prob[size_t(t)] = e;
                sum += e;
              }
              const A inv = A(1) / sum;
              for (int64_t t = 0; t < T_len; ++t) prob[size_t(t)] *= inv;
            }
            if (qk_out) {
              T* dst = qk_out->data<T>() + ((b * Hq + h) * Sq + i) * T_len;
              for (int64_t t = 0; t < T_len; ++t) {
                A val = raw[size_t(t)];
                if (cfg_.qk_mode == 1)
                  val = capped[size_t(t)];
                else if (cfg_.qk_mode == 2)
                  val = capped[size_t(t)] + bias[size_t(t)];
                else if (cfg_.qk_mode == 3)
                  val = prob[size_t(t)];
                dst[t] = to_storage<A, T>(val);
              }
            }
            std::fill(acc.begin(), acc.end(), A(0));
            for (int64_t t = 0; t < T_len; ++t) {
              const A p = prob[size_t(t)];
              if (p == A(0)) continue;
              const A* vt = &vbuf[size_t(t * Dv)];
              for (int64_t d = 0; d < Dv; ++d) acc[size_t(d)] += p * vt[d];
            }
            T* yi = yp + y.offset(b, h, i);
            for (int64_t d = 0; d < Dv; ++d) yi[d] = to_storage<A, T>(acc[size_t(d)]);
          }
        }
      }
    }
    return Status();
  }

 private:
  // Additive bias of query row i: the mask (padded with -inf past its length), the
  // causal frontier (bottom-right aligned: key t is visible when t <= i + offset) and
  // the key padding of nonpad_kv_seqlen.
  void fill_bias(int64_t b, int64_t h, int64_t i, int64_t Sq, int64_t P, int64_t T_len,
                 const Tensor* mask_t, const MaskView& mv, const std::vector<int64_t>& nonpad,
                 A neg_inf, A* bias) const {
    if (mask_t) {
      const int64_t off = b * mv.sb + h * mv.sh + i * mv.ss;
      if (mask_t->dtype() == DataType::kBool) {
        const bool* m = mask_t->data<bool>() + off;
        for (int64_t t = 0; t < mv.len; ++t) bias[t] = m[t] ? A(0) : neg_inf;
      } else {
        const T* m = mask_t->data<T>() + off;
        for (int64_t t = 0; t < mv.len; ++t) bias[t] = A(m[t]);
      }
      for (int64_t t = mv.len; t < T_len; ++t) bias[t] = neg_inf;
    } else {
      std::fill(bias, bias + T_len, A(0));
    }
    if (cfg_.is_causal) {
      const int64_t offset = past_offset(b, Sq, P, nonpad);
      for (int64_t t = std::max<int64_t>(0, i + offset + 1); t < T_len; ++t) bias[t] += neg_inf;
    }
    if (cfg_.left_window >= 0 || cfg_.right_window >= 0) {
      const int64_t p = i + past_offset(b, Sq, P, nonpad);
      for (int64_t t = 0; t < T_len; ++t) {
        const int64_t diff = p - t;
        if ((cfg_.left_window >= 0 && diff > cfg_.left_window) ||
            (cfg_.right_window >= 0 && -diff > cfg_.right_window))
          bias[t] += neg_inf;
      }
    }
    if (!nonpad.empty())
      for (int64_t t = nonpad[size_t(b)]; t < T_len; ++t) bias[t] += neg_inf;
  }

  static int64_t past_offset(int64_t b, int64_t Sq, int64_t P, const std::vector<int64_t>& nonpad) {
    if (P > 0) return P;
    if (!nonpad.empty()) return nonpad[size_t(b)] - Sq;
    return 0;
  }

  AttentionConfig cfg_;
};

// ONNX's inputs are (X, cos_cache, sin_cache, position_ids?); com.microsoft's
// (input, position_ids, cos_cache, sin_cache), whose position_ids may also be one value
// (the first position, the others following it) and whose 3-D input without num_heads has
// heads of the caches' rotary width.
template <typename T>
class RotaryKernel final : public Kernel {
  using A = typename Compute<T>::type;

 public:
  RotaryKernel(bool interleaved, int64_t rotary_dim, int64_t num_heads, bool contrib)
      : interleaved_(interleaved),
        rotary_dim_(rotary_dim),
        num_heads_(num_heads),
        contrib_(contrib) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor& x_t = *ctx.input(0);
    const Tensor& cos_t = *ctx.input(contrib_ ? 2 : 1);
    const Tensor& sin_t = *ctx.input(contrib_ ? 3 : 2);
    const Tensor* pos_t = ctx.input(contrib_ ? 1 : 3);
    int64_t heads = num_heads_;
    if (contrib_ && heads == 0 && x_t.rank() == 3 && cos_t.rank() == 2 && cos_t.shape()[1] > 0)
      heads = x_t.shape()[2] / (2 * cos_t.shape()[1]);
    HeadView x;
    NXRT_RETURN_IF_ERROR(make_view(x_t, heads, "input", x));
    const int64_t B = x.batch, S = x.seq, H = x.heads, D = x.width;
    const int64_t rot = rotary_dim_ > 0 ? rotary_dim_ : D;
    if (rot > D || rot % 2 != 0)
      return invalid_argument("rotary_embedding_dim ", rot,
                              " must be even and at most the head size ", D);
    const int64_t half = rot / 2;
    if (cos_t.shape() != sin_t.shape())
      return invalid_argument("cos_cache shape ", cos_t.shape().to_string(),
                              " differs from sin_cache shape ", sin_t.shape().to_string());
    std::vector<int64_t> pos;
    int64_t max_pos = 0;
    const bool first_position = contrib_ && pos_t && pos_t->numel() == 1;
    if (pos_t) {
      if (pos_t->shape() != Shape{B, S} && !first_position)
        return invalid_argument("position_ids shape ", pos_t->shape().to_string(), " must be [", B,
                                ",", S, "]");
      if (cos_t.rank() != 2 || cos_t.shape()[1] != half)
        return invalid_argument("cos_cache shape ", cos_t.shape().to_string(),
                                " must be [max_position, ", half, "]");
      max_pos = cos_t.shape()[0];
      NXRT_RETURN_IF_ERROR(read_flat_ints(*pos_t, pos));
      if (first_position) {
        const int64_t p0 = pos[0];
        pos.resize(size_t(B * S));
        for (int64_t i = 0; i < B * S; ++i) pos[size_t(i)] = p0 + i % S;
      }
      for (int64_t p : pos)
        if (p < 0 || p >= max_pos)
          return invalid_argument("position id ", p, " is outside the cache of ", max_pos,
                                  " positions");
    } else if (cos_t.shape() != Shape{B, S, half}) {
      return invalid_argument("cos_cache shape ", cos_t.shape().to_string(), " must be [", B, ",",
                              S, ",", half, "] without position_ids");
    }
    NXRT_ASSIGN_OR_RETURN(Tensor * y_t, ctx.output(0, x_t.shape()));
    const T* xp = x_t.data<T>();
    const T* cp = cos_t.data<T>();
    const T* sp = sin_t.data<T>();
    T* yp = y_t->data<T>();
    for (int64_t b = 0; b < B; ++b)
      for (int64_t s = 0; s < S; ++s) {
        const int64_t row = pos_t ? pos[size_t(b * S + s)] : b * S + s;
        const T* c = cp + row * half;
        const T* sn = sp + row * half;
        for (int64_t h = 0; h < H; ++h) {
          const int64_t off = x.offset(b, h, s);
          const T* in = xp + off;
          T* out = yp + off;
          for (int64_t j = 0; j < half; ++j) {
            const int64_t i1 = interleaved_ ? 2 * j : j;
            const int64_t i2 = interleaved_ ? 2 * j + 1 : j + half;
            const A x1 = A(in[i1]), x2 = A(in[i2]), cj = A(c[j]), sj = A(sn[j]);
            out[i1] = to_storage<A, T>(cj * x1 - sj * x2);
            out[i2] = to_storage<A, T>(sj * x1 + cj * x2);
          }
          for (int64_t d = rot; d < D; ++d) out[d] = in[d];
        }
      }
    return Status();
  }

 private:
  static Status read_flat_ints(const Tensor& t, std::vector<int64_t>& out) {
    out.resize(size_t(t.numel()));
    if (t.dtype() != DataType::kInt64) return invalid_argument("position_ids must be int64");
    std::copy(t.data<int64_t>(), t.data<int64_t>() + t.numel(), out.begin());
    return Status();
  }

  bool interleaved_;
  int64_t rotary_dim_, num_heads_;
  bool contrib_;
};

Expected<KernelPtr> make_rotary(KernelInit& init, bool contrib) {
  AttrReader attrs(init.node);
  const bool interleaved = attrs.get_int("interleaved", 0) != 0;
  const int64_t rotary_dim = attrs.get_int("rotary_embedding_dim", 0);
  const int64_t num_heads = attrs.get_int("num_heads", 0);
  const bool packed = contrib && attrs.get_int("is_packed_batching", 0) != 0;
  NXRT_RETURN_IF_ERROR(attrs.status());
  if (rotary_dim < 0 || num_heads < 0)
    return init.error(StatusCode::kInvalidGraph,
                      "rotary_embedding_dim and num_heads must not be negative");
  if (packed)
    return init.error(StatusCode::kNotImplemented, "is_packed_batching = 1 is not supported");
  const DataType t = init.input_type(0);
  for (size_t i : {contrib ? 2 : 1, contrib ? 3 : 2})
    if (init.input_type(i) != t)
      return init.error(StatusCode::kInvalidGraph, "input ", i, " has type ",
                        dtype_name(init.input_type(i)), ", expected ", dtype_name(t));
  init.set_all_outputs(t);
  switch (t) {
    NXRT_CASES_FLOAT(
        return make_kernel<RotaryKernel<T>>(interleaved, rotary_dim, num_heads, contrib))
    default:
      break;
  }
  return init.unsupported_type(0);
}

}  // namespace

Expected<KernelPtr> create_attention(KernelInit& init) {
  AttrReader attrs(init.node);
  AttentionConfig cfg;
  cfg.is_causal = attrs.get_int("is_causal", 0) != 0;
  cfg.q_heads = attrs.get_int("q_num_heads", 0);
  cfg.kv_heads = attrs.get_int("kv_num_heads", 0);
  cfg.qk_mode = attrs.get_int("qk_matmul_output_mode", 0);
  cfg.has_scale = attrs.has("scale");
  cfg.scale = attrs.get_float("scale", 0.0f);
  cfg.softcap = attrs.get_float("softcap", 0.0f);
  cfg.left_window = attrs.get_int("left_window_size", -1);
  cfg.right_window = attrs.get_int("right_window_size", -1);
  NXRT_RETURN_IF_ERROR(attrs.status());
  if (cfg.left_window < -1 || cfg.right_window < -1)
    return init.error(StatusCode::kInvalidGraph,
                      "left/right_window_size must be -1 or non-negative");
  if (cfg.qk_mode < 0 || cfg.qk_mode > 3)
    return init.error(StatusCode::kInvalidGraph, "qk_matmul_output_mode ", cfg.qk_mode,
                      " is not 0-3");
  if (cfg.q_heads < 0 || cfg.kv_heads < 0)
    return init.error(StatusCode::kInvalidGraph, "q_num_heads/kv_num_heads must be positive");
  const DataType t = init.input_type(0);
  for (size_t i = 1; i < 3; ++i)
    if (init.input_type(i) != t)
      return init.error(StatusCode::kInvalidGraph, "input ", i, " has type ",
                        dtype_name(init.input_type(i)), ", expected ", dtype_name(t));
  for (size_t i = 4; i < 6; ++i)
    if (init.has_input(i) && init.input_type(i) != t)
      return init.error(StatusCode::kInvalidGraph, "input ", i, " has type ",
                        dtype_name(init.input_type(i)), ", expected ", dtype_name(t));
  if (init.has_input(3) && init.input_type(3) != t && init.input_type(3) != DataType::kBool)
    return init.error(StatusCode::kInvalidGraph, "attn_mask must be bool or ", dtype_name(t));
  if (init.has_input(6) && init.input_type(6) != DataType::kInt64)
    return init.error(StatusCode::kInvalidGraph, "nonpad_kv_seqlen must be int64");
  init.set_all_outputs(t);
  switch (t) {
    NXRT_CASES_FLOAT(return make_kernel<AttentionKernel<T>>(cfg))
    default:
      break;
  }
  return init.unsupported_type(0);
}

Expected<KernelPtr> create_rotary_embedding(KernelInit& init) { return make_rotary(init, false); }

Expected<KernelPtr> create_contrib_rotary_embedding(KernelInit& init) {
  return make_rotary(init, true);
}

}  // namespace nxrt::cpu
