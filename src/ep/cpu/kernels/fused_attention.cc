// nxrt FusedAttention(Q, K, V, bias?): per (batch, head), softmax(scale * Q K^T + bias) V,
// what fuse_attention makes of the MatMul, scale, Add, Softmax, MatMul chain that PyTorch
// and TensorFlow exports write for attention. Each operand is read where its producer
// left it, in the layout an attribute names, so the head transposes around the chain do
// not run:
//   "bhsd": [batch, heads, rows, head size]  (the chain's own operands)
//   "bshd": [batch, rows, heads, head size]  (what the exports' Transpose(0, 2, 1, 3) reads)
//   "bhds": [batch, heads, head size, rows]  (k_layout only: K^T as the first MatMul read it)
// out_layout is "bhsd" or "bshd" likewise. The scores are scale * (q_scale Q)(k_scale K)^T:
// exports that scale both operands (by the root of 1 / sqrt(head size)) get the same
// roundings as their unfused chain. Batch and head dims broadcast as MatMul's do (1
// or equal); the bias broadcasts to [batch, heads, S, T] as Add's does. safe = 1 turns NaN
// weights into 0, as SafeSoftmax does (a fully masked row gives zeros).
//
// Per (batch, head, block of queries): the scores by one GEMM into per-thread scratch
// small enough to stay in L2, the bias added and the softmax taken there, then one GEMM
// into the output. The scores never make the round trip through memory that the
// unfused chain's [B, H, S, T] tensors do.
#include <algorithm>
#include <string>

#include "ep/cpu/gemm/gemm.h"
#include "ep/cpu/kernels/common.h"
#include "ep/cpu/kernels/softmax_rows.h"
#include "ep/cpu/vmath/vmath.h"
#include "ops/attrs.h"

namespace nxrt::cpu {
namespace {

enum class Layout { kBhsd, kBshd, kBhds };

// A 4-D operand as [batch, heads] matrices of rows x cols with contiguous columns; a
// batch or head dim of 1 is read for every batch or head (stride 0).
struct HeadMatrices {
  const float* data = nullptr;
  int64_t batch = 0, heads = 0, rows = 0, cols = 0;
  int64_t batch_stride = 0, head_stride = 0, row_stride = 0;

  int64_t offset(int64_t b, int64_t h) const {
    return (batch == 1 ? 0 : b * batch_stride) + (heads == 1 ? 0 : h * head_stride);
  }
  const float* at(int64_t b, int64_t h) const { return data + offset(b, h); }
};

HeadMatrices view_of(const Shape& s, Layout layout) {
  HeadMatrices m;
  m.batch = s[0];
  m.cols = s[3];
  m.batch_stride = s[1] * s[2] * s[3];
  if (layout == Layout::kBshd) {
    m.rows = s[1];
    m.heads = s[2];
    m.head_stride = s[3];
    m.row_stride = s[2] * s[3];
  } else {
    m.heads = s[1];
    m.rows = s[2];
    m.head_stride = s[2] * s[3];
    m.row_stride = s[3];
  }
  return m;
}

// The bias as strides over [batch, heads, S, T] (0 where it broadcasts).
struct Bias {
  const float* data = nullptr;
  int64_t batch = 0, head = 0, row = 0, col = 0;
};

// Joins `dim` into the broadcast size `out` (1 or equal, as MatMul and Add broadcast).
bool join_dim(int64_t dim, int64_t& out) {
  if (dim == out || dim == 1) return true;
  if (out != 1) return false;
  out = dim;
  return true;
}

// Scores of a block stay within 64 KB (L2), at most 128 queries a block: a head of up to
// 128 queries and keys is one block, its keys and values packed once.
constexpr int64_t kScoreFloats = 16384;
constexpr int64_t kMaxBlockRows = 128;

struct FusedAttentionAttrs {
  float scale = 1.0f;                    // of the scores, as the GEMM's alpha
  float q_scale = 1.0f, k_scale = 1.0f;  // of the operands, as the exports multiply them
  Layout q = Layout::kBhsd, k = Layout::kBhsd, v = Layout::kBhsd, out = Layout::kBhsd;
  bool safe = false;
};

class FusedAttentionKernel final : public Kernel {
 public:
  explicit FusedAttentionKernel(FusedAttentionAttrs a) : a_(a) {}

  Status compute(KernelContext& ctx) const override {
    const char* names[] = {"query", "key", "value"};
    for (size_t i = 0; i < 3; ++i)
      if (ctx.input(i)->rank() != 4)
        return invalid_argument(names[i], " has shape ", ctx.input(i)->shape().to_string(),
                                "; FusedAttention reads rank-4 operands");
    const HeadMatrices q = view_of(ctx.input(0)->shape(), a_.q);
    const HeadMatrices k = view_of(ctx.input(1)->shape(), a_.k);
    const HeadMatrices v = view_of(ctx.input(2)->shape(), a_.v);
    const bool k_transposed = a_.k == Layout::kBhds;  // rows: head size; cols: keys
    int64_t S = q.rows;
    const int64_t D = q.cols, T = k_transposed ? k.cols : k.rows;
    bool q_rows_repeat = false;
    const int64_t Dv = v.cols;
    if ((k_transposed ? k.rows : k.cols) != D || v.rows != T)
      return invalid_argument("query ", ctx.input(0)->shape().to_string(), ", key ",
                              ctx.input(1)->shape().to_string(), " and value ",
                              ctx.input(2)->shape().to_string(),
                              " do not fit: head sizes or key counts differ");
    int64_t B = 1, H = 1;
    bool fits = true;
    for (const HeadMatrices* m : {&q, &k, &v})
      fits = fits && join_dim(m->batch, B) && join_dim(m->heads, H);
    Bias bias;
    if (const Tensor* t = ctx.input(3)) {
      const Shape& s = t->shape();
      if (s.size() > 4) return invalid_argument("bias of rank ", s.size(), " (at most 4)");
      int64_t dims[4] = {1, 1, 1, 1};
      for (size_t i = 0; i < s.size(); ++i) dims[4 - s.size() + i] = s[i];
      // Rows of the bias beyond a single query repeat that query, as Add broadcasts it.
      if (S == 1 && dims[2] > 1) {
        S = dims[2];
        q_rows_repeat = true;
      }
      fits = fits && join_dim(dims[0], B) && join_dim(dims[1], H);
      if (!fits || (dims[2] != 1 && dims[2] != S) || (dims[3] != 1 && dims[3] != T))
        return invalid_argument("bias shape ", s.to_string(), " does not broadcast to the [", B,
                                ", ", H, ", ", S, ", ", T, "] scores");
      bias.data = t->data<float>();
      bias.col = dims[3] == 1 ? 0 : 1;
      bias.row = dims[2] == 1 ? 0 : dims[3];
      bias.head = dims[1] == 1 ? 0 : dims[2] * dims[3];
      bias.batch = dims[0] == 1 ? 0 : dims[1] * dims[2] * dims[3];
    }
    if (!fits)
      return invalid_argument("batch and head dims of query ", ctx.input(0)->shape().to_string(),
                              ", key ", ctx.input(1)->shape().to_string(), " and value ",
                              ctx.input(2)->shape().to_string(), " do not broadcast");
    const bool out_bshd = a_.out == Layout::kBshd;
    NXRT_ASSIGN_OR_RETURN(Tensor * out,
                          ctx.output(0, out_bshd ? Shape{B, S, H, Dv} : Shape{B, H, S, Dv}));
    if (out->numel() == 0) return Status();
    if (T == 0) {  // no keys: every weighted sum is empty
      std::fill_n(out->data<float>(), size_t(out->numel()), 0.0f);
      return Status();
    }
    Operands ops{q,
                 k,
                 v,
                 view_of(out->shape(), a_.out),
                 out->data<float>(),
                 bias,
                 k_transposed,
                 q_rows_repeat,
                 S,
                 D,
                 T,
                 Dv,
                 H};
    ops.q.data = ctx.input(0)->data<float>();
    ops.k.data = ctx.input(1)->data<float>();
    ops.v.data = ctx.input(2)->data<float>();
    run_blocks(ops, B);
    return Status();
  }

 private:
  struct Operands {
    HeadMatrices q, k, v, y;  // y's layout; its data is `out`
    float* out;
    Bias bias;
    bool k_transposed;
    bool q_rows_repeat;  // one query row, repeated for every row of the bias
    int64_t S, D, T, Dv, H;
  };

  // Splits (batch, head, query block) tasks over the intra-op threads.
  void run_blocks(const Operands& o, int64_t B) const {
    const int64_t block = std::clamp<int64_t>(kScoreFloats / o.T, 1, kMaxBlockRows);
    const int64_t blocks = (o.S + block - 1) / block;
    const size_t tasks = size_t(B * o.H * blocks);
    const double work = double(B * o.H) * double(o.S) * double(o.T) * double(o.D + o.Dv);
    const size_t pieces = std::min(parallel_pieces(work, double(1 << 17)), tasks);
    const size_t per_piece = (tasks + pieces - 1) / pieces;
    parallel_for(pieces, [&](size_t piece) {
      float* scores = scratch<float>(ScratchSlot::kKernel2, size_t(block * o.T));
      ScaledKeys keys;
      const size_t end = std::min(tasks, (piece + 1) * per_piece);
      for (size_t task = piece * per_piece; task < end; ++task) {
        const int64_t i0 = int64_t(task) % blocks * block;
        const int64_t head = int64_t(task) / blocks;
        attend(o, head / o.H, head % o.H, i0, std::min(block, o.S - i0), scores, keys);
      }
    });
  }

  // Queries [i0, i0 + rows) of head h of batch b.
  // A head's keys times k_scale, kept while a thread's consecutive blocks read the same
  // keys.
  struct ScaledKeys {
    const float* source = nullptr;
    const float* data = nullptr;
  };

  void attend(const Operands& o, int64_t b, int64_t h, int64_t i0, int64_t rows, float* scores,
              ScaledKeys& keys) const {
    const int64_t q_rows = o.q_rows_repeat ? 1 : rows;
    const float* q = o.q.at(b, h) + (o.q_rows_repeat ? 0 : i0 * o.q.row_stride);
    int64_t q_ld = o.q.row_stride;
    if (a_.q_scale != 1.0f) {
      q = scaled_copy(q, q_rows, o.D, q_ld, a_.q_scale, ScratchSlot::kKernel1);
      q_ld = o.D;
    }
    const float* k = o.k.at(b, h);
    int64_t k_ld = o.k.row_stride;
    if (a_.k_scale != 1.0f) {
      const int64_t k_cols = o.k_transposed ? o.T : o.D;
      if (keys.source != k) {
        keys.source = k;
        keys.data = scaled_copy(k, o.k_transposed ? o.D : o.T, k_cols, k_ld, a_.k_scale,
                                ScratchSlot::kKernel3);
      }
      k = keys.data;
      k_ld = k_cols;
    }
    // The bias goes into the scores first and the product adds onto it (beta 1): the
    // GEMM's store adds it, not another pass. With scale 1 the sum rounds as the Add does.
    const float* bias =
        o.bias.data ? o.bias.data + b * o.bias.batch + h * o.bias.head + i0 * o.bias.row : nullptr;
    const bool bias_first = bias && !o.q_rows_repeat;
    if (bias_first)
      for (int64_t r = 0; r < rows; ++r) copy_bias_row(bias + r * o.bias.row, o, scores + r * o.T);
    gemm::sgemm(false, !o.k_transposed, q_rows, o.T, o.D, a_.scale, q, q_ld, k, k_ld,
                bias_first ? 1.0f : 0.0f, scores, o.T);
    if (o.q_rows_repeat) {  // one query's scores, repeated, then each row's bias
      for (int64_t r = 1; r < rows; ++r) std::copy_n(scores, o.T, scores + r * o.T);
      for (int64_t r = 0; bias && r < rows; ++r) {
        const float* row = bias + r * o.bias.row;
        float* sr = scores + r * o.T;
        for (int64_t j = 0; j < o.T; ++j) sr[j] += row[j * o.bias.col];
      }
    }
    softmax_float_rows(scores, scores, rows, o.T, a_.safe);
    gemm::sgemm(false, false, rows, o.Dv, o.T, 1.0f, scores, o.T, o.v.at(b, h), o.v.row_stride,
                0.0f, o.out + o.y.offset(b, h) + i0 * o.y.row_stride, o.y.row_stride);
  }

  // rows x cols of x (row stride ld) times `scale`, packed into this thread's `slot`.
  static const float* scaled_copy(const float* x, int64_t rows, int64_t cols, int64_t ld,
                                  float scale, ScratchSlot slot) {
    float* out = scratch<float>(slot, size_t(rows * cols));
    for (int64_t r = 0; r < rows; ++r)
      vmath::unary_affine(vmath::Unary::kIdentity, {}, scale, 0.0f, x + r * ld, out + r * cols,
                          size_t(cols));
    return out;
  }

  // One row of T bias values (a single one repeated when the bias broadcasts over keys).
  static void copy_bias_row(const float* bias, const Operands& o, float* out) {
    if (o.bias.col)
      std::copy_n(bias, o.T, out);
    else
      std::fill_n(out, o.T, bias[0]);
  }

  FusedAttentionAttrs a_;
};

Expected<Layout> read_layout(const KernelInit& init, AttrReader& attrs, const char* name,
                             bool transposed_allowed) {
  const std::string s = attrs.get_string(name, "bhsd");
  if (s == "bhsd") return Layout::kBhsd;
  if (s == "bshd") return Layout::kBshd;
  if (s == "bhds" && transposed_allowed) return Layout::kBhds;
  return init.error(StatusCode::kInvalidGraph, name, " '", s, "' is not one of bhsd, bshd",
                    transposed_allowed ? ", bhds" : "");
}

}  // namespace

Expected<KernelPtr> create_fused_attention(KernelInit& init) {
  for (size_t i = 0; i < 3; ++i)
    if (!init.has_input(i))
      return init.error(StatusCode::kInvalidGraph, "input ", i, " (query, key, value) is missing");
  for (size_t i = 0; i < 4; ++i)
    if (init.has_input(i) && init.input_type(i) != DataType::kFloat)
      return init.unsupported_type(i);
  AttrReader attrs(init.node);
  FusedAttentionAttrs a;
  a.scale = attrs.get_float("scale", 1.0f);
  a.q_scale = attrs.get_float("q_scale", 1.0f);
  a.k_scale = attrs.get_float("k_scale", 1.0f);
  a.safe = attrs.get_int("safe", 0) != 0;
  NXRT_ASSIGN_OR_RETURN(a.q, read_layout(init, attrs, "q_layout", false));
  NXRT_ASSIGN_OR_RETURN(a.k, read_layout(init, attrs, "k_layout", true));
  NXRT_ASSIGN_OR_RETURN(a.v, read_layout(init, attrs, "v_layout", false));
  NXRT_ASSIGN_OR_RETURN(a.out, read_layout(init, attrs, "out_layout", false));
  NXRT_RETURN_IF_ERROR(attrs.status());
  init.set_all_outputs(DataType::kFloat);
  return make_kernel<FusedAttentionKernel>(a);
}

}  // namespace nxrt::cpu
