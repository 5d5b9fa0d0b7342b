// Shape rules of nxrt's own ops, the ones graph passes write (optimizer/passes): the
// channel-blocked layout's ops, whose tensors are [N, ceil(C/16), H, W, 16] (section
// "Channel-blocked layout" of docs/ARCHITECTURE.md), and OneHotMatMul.
#include "ops/shape_rules.h"

namespace nxrt::ops::rules {
namespace {

constexpr int64_t kBlock = 16;  // channels per block, as optimizer/passes/layout_nchwc.cc

SymDim blocks_of(const SymDim& channels) {
  return channels.known() ? SymDim::of((channels.value + kBlock - 1) / kBlock) : SymDim{};
}

// Runs the plain op's rule on input 0 seen as [N, ?, H, W] (blocked or plain), and gives
// its result [N, C, Ho, Wo] back blocked, with `blocks` channel blocks (or C's, when unset).
Status on_plain_layout(InferContext& ctx, ShapeRule plain_rule,
                       std::optional<SymDim> blocks = std::nullopt) {
  const SymShape& x = ctx.shape(0);
  if (!x.rank_known) return Status();
  if (x.rank() != 4 && x.rank() != 5)
    return ctx.conflict("input ", x.text(), " is neither [N, C, H, W] nor blocked");
  ValueFacts plain;
  plain.shape = SymShape::of({x.dims[0], SymDim{}, x.dims[2], x.dims[3]});
  std::vector<const ValueFacts*> inputs = {&plain};
  std::vector<const Tensor*> constants = {nullptr};
  for (size_t i = 1; i < ctx.num_inputs(); ++i) {
    inputs.push_back(ctx.has_input(i) ? &ctx.input(i) : nullptr);
    constants.push_back(ctx.constant(i));
  }
  InferContext plain_ctx(ctx.node(), ctx.opset(), std::move(inputs), std::move(constants));
  NXRT_RETURN_IF_ERROR(plain_rule(plain_ctx));
  const SymShape& out = plain_ctx.outputs()[0].shape;
  if (!out.rank_known || out.rank() != 4) return Status();
  const SymDim b = blocks ? *blocks : blocks_of(out.dims[1]);
  ctx.set_shape(0, SymShape::of({out.dims[0], b, out.dims[2], out.dims[3], SymDim::of(kBlock)}));
  return Status();
}

// The channel blocks of a blocked input 0, unknown for a plain one.
SymDim input_blocks(InferContext& ctx) {
  const SymShape& x = ctx.shape(0);
  return x.rank_known && x.rank() == 5 ? x.dims[1] : SymDim{};
}

}  // namespace

// Output channels come from the weights, [M, C/group, kh, kw].
Status nchwc_conv(InferContext& ctx) { return on_plain_layout(ctx, conv); }

Status nchwc_pool(InferContext& ctx) { return on_plain_layout(ctx, pool, input_blocks(ctx)); }

Status nchwc_global_pool(InferContext& ctx) {
  return on_plain_layout(ctx, global_pool, input_blocks(ctx));
}

// [N, Cb, H, W, 16] to [N, channels, H, W].
Status nchwc_to_nchw(InferContext& ctx) {
  const SymShape& x = ctx.shape(0);
  if (!x.rank_known) return Status();
  if (x.rank() != 5) return ctx.conflict("input ", x.text(), " is not blocked");
  const int64_t channels = ctx.attrs().get_int("channels", -1);
  const SymDim c = channels >= 0 ? SymDim::of(channels) : SymDim{};
  ctx.set_shape(0, SymShape::of({x.dims[0], c, x.dims[2], x.dims[3]}));
  return Status();
}

// MatMul(Cast(Equal(A, R)), W): A and R broadcast to [..., K]; W is [K, N].
Status one_hot_matmul(InferContext& ctx) {
  const SymShape& w = ctx.shape(2);
  if (!w.rank_known || w.rank() != 2) return Status();
  auto rows = broadcast_shapes(ctx.shape(0), ctx.shape(1));
  if (!rows) return ctx.conflict(rows.status().message());
  SymShape out = std::move(rows).value();
  if (!out.rank_known || out.rank() == 0) return Status();
  out.dims.back() = w.dims[1];
  ctx.set_shape(0, std::move(out));
  return Status();
}

// FusedAttention: [B, H, S, Dv] (out_layout "bhsd") or [B, S, H, Dv] ("bshd"), with B and
// H broadcast over query, key, value and the bias's leading dims, as its kernel does.
Status fused_attention(InferContext& ctx) {
  const char* layouts[] = {"q_layout", "k_layout", "v_layout"};
  std::optional<SymShape> batch_heads;
  for (size_t i = 0; i < 4; ++i) {
    if (!ctx.has_input(i)) {
      if (i < 3) return Status();
      continue;
    }
    const SymShape& s = ctx.shape(i);
    if (!s.rank_known || (i < 3 && s.rank() != 4) || s.rank() > 4) return Status();
    SymShape bh = SymShape::of({SymDim::of(1), SymDim::of(1)});
    if (i < 3) {
      const bool bshd = ctx.attrs().get_string(layouts[i], "bhsd") == "bshd";
      bh.dims = {s.dims[0], s.dims[bshd ? 2 : 1]};
    } else {
      for (size_t d = 0; d + 2 < s.rank(); ++d) bh.dims[4 - s.rank() + d] = s.dims[d];
    }
    if (!batch_heads) {
      batch_heads = std::move(bh);
      continue;
    }
    auto joined = broadcast_shapes(*batch_heads, bh);
    if (!joined) return ctx.conflict(joined.status().message());
    batch_heads = std::move(joined).value();
  }
  const bool q_bshd = ctx.attrs().get_string("q_layout", "bhsd") == "bshd";
  const SymDim S = ctx.shape(0).dims[q_bshd ? 1 : 2], Dv = ctx.shape(2).dims[3];
  const SymDim &B = batch_heads->dims[0], &H = batch_heads->dims[1];
  const bool out_bshd = ctx.attrs().get_string("out_layout", "bhsd") == "bshd";
  ctx.set_shape(0, out_bshd ? SymShape::of({B, S, H, Dv}) : SymShape::of({B, H, S, Dv}));
  return Status();
}

}  // namespace nxrt::ops::rules
