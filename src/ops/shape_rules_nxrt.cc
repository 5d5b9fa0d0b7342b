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

}  // namespace nxrt::ops::rules
