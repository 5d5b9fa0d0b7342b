// Shape rules of the compute ops: products, convolutions, pooling, reductions, resizing,
// recurrent and attention ops.
#include <cmath>
#include <limits>
#include <map>
#include <string>

#include "ops/shape_rules.h"

namespace nxrt::ops::rules {
namespace {

std::vector<SymDim> last_dims_swapped(std::vector<SymDim> dims, bool swap) {
  if (swap && dims.size() >= 2) std::swap(dims[dims.size() - 1], dims[dims.size() - 2]);
  return dims;
}

// numpy matmul of two shapes (1-D operands promoted and their axis dropped again).
Expected<SymShape> matmul_shape(const SymShape& a, const SymShape& b) {
  if (!a.rank_known || !b.rank_known) return SymShape::unknown();
  if (a.rank() == 0 || b.rank() == 0) return invalid_argument("a MatMul operand is a scalar");
  std::vector<SymDim> a2 = a.dims, b2 = b.dims;
  if (a.rank() == 1) a2.insert(a2.begin(), SymDim::of(1));
  if (b.rank() == 1) b2.push_back(SymDim::of(1));
  const SymDim &ka = a2.back(), &kb = b2[b2.size() - 2];
  if (ka.known() && kb.known() && ka.value != kb.value)
    return invalid_argument("inner dimensions differ: ", a.text(), " times ", b.text());
  SymShape batch_a = SymShape::of({a2.begin(), a2.end() - 2});
  SymShape batch_b = SymShape::of({b2.begin(), b2.end() - 2});
  NXRT_ASSIGN_OR_RETURN(SymShape out, broadcast_shapes(batch_a, batch_b));
  if (a.rank() > 1) out.dims.push_back(a2[a2.size() - 2]);
  if (b.rank() > 1) out.dims.push_back(b2.back());
  return out;
}

// Integer attribute list of `n` entries, `fallback` each when absent.
std::vector<int64_t> ints_or(InferContext& ctx, const char* name, size_t n, int64_t fallback) {
  std::vector<int64_t> v = ctx.attrs().get_ints(name);
  if (v.empty()) v.assign(n, fallback);
  return v;
}

// One spatial output size of a sliding window (convolution or pooling).
Expected<SymDim> window_output(const SymDim& in, int64_t kernel, int64_t stride, int64_t dilation,
                               int64_t pad_begin, int64_t pad_end, const std::string& auto_pad,
                               bool ceil_mode) {
  if (kernel < 1 || stride < 1 || dilation < 1)
    return invalid_argument("kernel ", kernel, ", stride ", stride, " and dilation ", dilation,
                            " must be positive");
  const std::optional<int64_t> spread = checked_mul(kernel - 1, dilation);
  const std::optional<int64_t> window = spread ? checked_add(*spread, 1) : std::nullopt;
  if (!window) return SymDim{};
  const int64_t span = *window;
  if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    if (!in.known()) return stride == 1 ? in : SymDim{};
    return SymDim::of(in.value / stride + (in.value % stride != 0));
  }
  if (auto_pad == "VALID") pad_begin = pad_end = 0;
  const std::optional<int64_t> pads = checked_add(pad_begin, pad_end);
  if (!pads) return SymDim{};
  if (!in.known()) return stride == 1 && span - 1 == *pads ? in : SymDim{};
  const std::optional<int64_t> padded = checked_add(in.value, *pads);
  if (!padded || !checked_add(in.value, pad_begin)) return SymDim{};
  const int64_t room = *padded - span;
  if (room < 0)
    return invalid_argument("a window of ", span, " does not fit the padded input of ", *padded);
  int64_t out = (ceil_mode ? (room + stride - 1) / stride : room / stride) + 1;
  // The last window must start inside the input or its leading padding.
  if (ceil_mode && (out - 1) * stride >= in.value + pad_begin) --out;
  return SymDim::of(out);
}

// Shared by Conv and pooling: N, then `channels`, then each spatial size.
Status sliding_window(InferContext& ctx, const SymShape& x, std::vector<int64_t> kernel,
                      const SymDim& channels, bool ceil_mode) {
  const size_t n = x.rank() - 2;
  if (kernel.size() != n)
    return ctx.conflict("kernel_shape has ", kernel.size(), " entries for input ", x.text());
  const std::vector<int64_t> strides = ints_or(ctx, "strides", n, 1);
  const std::vector<int64_t> dilations = ints_or(ctx, "dilations", n, 1);
  const std::vector<int64_t> pads = ints_or(ctx, "pads", 2 * n, 0);
  const std::string auto_pad = ctx.attrs().get_string("auto_pad", "NOTSET");
  if (strides.size() != n || dilations.size() != n || pads.size() != 2 * n)
    return ctx.conflict("strides, dilations or pads do not match ", n, " spatial axes");
  SymShape out = SymShape::of_rank(x.rank());
  out.dims[0] = x.dims[0];
  out.dims[1] = channels;
  for (size_t i = 0; i < n; ++i) {
    NXRT_ASSIGN_OR_RETURN(out.dims[2 + i],
                          window_output(x.dims[2 + i], kernel[i], strides[i], dilations[i], pads[i],
                                        pads[n + i], auto_pad, ceil_mode));
  }
  for (size_t i = 0; i < ctx.num_outputs(); ++i) ctx.set_shape(i, out);
  return Status();
}

Status conv_of(InferContext& ctx, size_t x_index, size_t w_index) {
  const SymShape &x = ctx.shape(x_index), &w = ctx.shape(w_index);
  if (!x.rank_known) return Status();
  if (x.rank() < 3) return ctx.conflict("input ", x.text(), " has no spatial axes");
  std::vector<int64_t> kernel = ctx.attrs().get_ints("kernel_shape");
  if (kernel.empty()) {
    if (!w.rank_known) return Status();
    for (size_t i = 2; i < w.rank(); ++i) {
      if (!w.dims[i].known()) return Status();
      kernel.push_back(w.dims[i].value);
    }
  }
  const SymDim channels = w.rank_known && w.rank() >= 1 ? w.dims[0] : SymDim{};
  return sliding_window(ctx, x, kernel, channels, false);
}

}  // namespace

Status matmul(InferContext& ctx) {
  NXRT_ASSIGN_OR_RETURN(SymShape out, matmul_shape(ctx.shape(0), ctx.shape(1)));
  ctx.set_shape(0, std::move(out));
  return Status();
}

Status matmul_quantized(InferContext& ctx) {
  NXRT_ASSIGN_OR_RETURN(SymShape out, matmul_shape(ctx.shape(0), ctx.shape(3)));
  ctx.set_shape(0, std::move(out));
  return Status();
}

Status matmul_nbits(InferContext& ctx) {
  const SymShape& a = ctx.shape(0);
  if (!a.rank_known || a.rank() == 0) return Status();
  SymShape out = a;
  out.dims.back() = SymDim::of(ctx.attrs().get_int("N", 0));
  ctx.set_shape(0, std::move(out));
  return Status();
}

Status fused_matmul(InferContext& ctx) {
  if (ctx.attrs().get_int("transBatchA", 0) || ctx.attrs().get_int("transBatchB", 0))
    return Status();
  SymShape a = ctx.shape(0), b = ctx.shape(1);
  if (!a.rank_known || !b.rank_known) return Status();
  a.dims = last_dims_swapped(a.dims, ctx.attrs().get_int("transA", 0) != 0);
  b.dims = last_dims_swapped(b.dims, ctx.attrs().get_int("transB", 0) != 0);
  NXRT_ASSIGN_OR_RETURN(SymShape out, matmul_shape(a, b));
  ctx.set_shape(0, std::move(out));
  return Status();
}

Status gemm(InferContext& ctx) {
  const SymShape &a = ctx.shape(0), &b = ctx.shape(1);
  if (!a.rank_known || !b.rank_known) return Status();
  if (a.rank() != 2 || b.rank() != 2)
    return ctx.conflict("A ", a.text(), " and B ", b.text(), " must be 2-D");
  const bool ta = ctx.attrs().get_int("transA", 0) != 0;
  const bool tb = ctx.attrs().get_int("transB", 0) != 0;
  const SymDim &m = a.dims[ta ? 1 : 0], &ka = a.dims[ta ? 0 : 1];
  const SymDim &kb = b.dims[tb ? 1 : 0], &n = b.dims[tb ? 0 : 1];
  if (ka.known() && kb.known() && ka.value != kb.value)
    return ctx.conflict("inner dimensions differ: A ", a.text(), " and B ", b.text());
  ctx.set_shape(0, SymShape::of({m, n}));
  return Status();
}

Status conv(InferContext& ctx) { return conv_of(ctx, 0, 1); }

Status conv_quantized(InferContext& ctx) { return conv_of(ctx, 0, 3); }

Status conv_transpose(InferContext& ctx) {
  const SymShape &x = ctx.shape(0), &w = ctx.shape(1);
  if (!x.rank_known || !w.rank_known) return Status();
  if (x.rank() < 3 || w.rank() != x.rank())
    return ctx.conflict("input ", x.text(), " and weights ", w.text(), " do not match");
  const size_t n = x.rank() - 2;
  const int64_t group = ctx.attrs().get_int("group", 1);
  SymShape out = SymShape::of_rank(x.rank());
  out.dims[0] = x.dims[0];
  out.dims[1] = w.dims[1].known() ? dim_or_unknown(checked_mul(w.dims[1].value, group)) : SymDim{};
  std::vector<int64_t> given = ctx.attrs().get_ints("output_shape");
  if (!given.empty()) {
    if (given.size() != n && given.size() != n + 2)
      return ctx.conflict("output_shape has ", given.size(), " entries for ", n, " spatial axes");
    for (size_t i = 0; i < n; ++i) out.dims[2 + i] = SymDim::of(given[given.size() - n + i]);
    ctx.set_shape(0, std::move(out));
    return Status();
  }
  std::vector<int64_t> kernel = ctx.attrs().get_ints("kernel_shape");
  if (kernel.empty())
    for (size_t i = 2; i < w.rank(); ++i)
      kernel.push_back(w.dims[i].known() ? w.dims[i].value : -1);
  const std::vector<int64_t> strides = ints_or(ctx, "strides", n, 1);
  const std::vector<int64_t> dilations = ints_or(ctx, "dilations", n, 1);
  const std::vector<int64_t> pads = ints_or(ctx, "pads", 2 * n, 0);
  const std::vector<int64_t> extra = ints_or(ctx, "output_padding", n, 0);
  const std::string auto_pad = ctx.attrs().get_string("auto_pad", "NOTSET");
  if (kernel.size() != n || strides.size() != n || dilations.size() != n || pads.size() != 2 * n ||
      extra.size() != n)
    return ctx.conflict("kernel_shape, strides, dilations, pads or output_padding do not match ", n,
                        " spatial axes");
  for (size_t i = 0; i < n; ++i) {
    const SymDim& in = x.dims[2 + i];
    if (kernel[i] < 0) continue;
    // In 128 bits: attributes may hold any int64; a size that does not fit is unknown.
    const __int128 span = __int128(kernel[i] - 1) * dilations[i] + 1;
    __int128 size = -1;
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      if (in.known())
        size = __int128(in.value) * strides[i];
      else if (strides[i] == 1)
        out.dims[2 + i] = in;
    } else {
      const __int128 trim = auto_pad == "VALID" ? 0 : __int128(pads[i]) + pads[n + i];
      if (in.known())
        size = __int128(strides[i]) * (in.value - 1) + extra[i] + span - trim;
      else if (strides[i] == 1 && extra[i] == 0 && span - 1 == trim)
        out.dims[2 + i] = in;
    }
    if (size >= 0 && size <= std::numeric_limits<int64_t>::max())
      out.dims[2 + i] = SymDim::of(int64_t(size));
  }
  ctx.set_shape(0, std::move(out));
  return Status();
}

Status pool(InferContext& ctx) {
  const SymShape& x = ctx.shape(0);
  if (!x.rank_known) return Status();
  if (x.rank() < 3) return ctx.conflict("input ", x.text(), " has no spatial axes");
  return sliding_window(ctx, x, ctx.attrs().get_ints("kernel_shape"), x.dims[1],
                        ctx.attrs().get_int("ceil_mode", 0) != 0);
}

Status global_pool(InferContext& ctx) {
  const SymShape& x = ctx.shape(0);
  if (!x.rank_known) return Status();
  if (x.rank() < 2) return ctx.conflict("input ", x.text(), " has no channel axis");
  SymShape out = x;
  for (size_t i = 2; i < x.rank(); ++i) out.dims[i] = SymDim::of(1);
  ctx.set_shape(0, std::move(out));
  return Status();
}

Status reduce(InferContext& ctx) {
  const SymShape& x = ctx.shape(0);
  if (!x.rank_known) return Status();
  const std::string& op = ctx.node().op_type;
  const int64_t axes_input_since = op == "ReduceSum" ? 13 : 18;
  const bool keep = ctx.attrs().get_int("keepdims", 1) != 0;
  std::optional<std::vector<int64_t>> axes;
  if (ctx.opset() < axes_input_since)
    axes = ctx.attrs().get_ints("axes");
  else
    axes = ctx.has_input(1) ? ctx.ints(1) : std::vector<int64_t>{};
  if (!axes) {
    if (keep) ctx.set_shape(0, SymShape::of_rank(x.rank()));
    return Status();
  }
  std::vector<bool> reduced(x.rank(), axes->empty());
  if (axes->empty() && ctx.opset() >= axes_input_since &&
      ctx.attrs().get_int("noop_with_empty_axes", 0) != 0)
    reduced.assign(x.rank(), false);
  for (int64_t a : *axes) {
    NXRT_ASSIGN_OR_RETURN(size_t i, axis_index(a, x.rank()));
    reduced[i] = true;
  }
  std::vector<SymDim> out;
  for (size_t i = 0; i < x.rank(); ++i) {
    if (!reduced[i])
      out.push_back(x.dims[i]);
    else if (keep)
      out.push_back(SymDim::of(1));
  }
  ctx.set_shape(0, SymShape::of(std::move(out)));
  return Status();
}

Status arg_reduce(InferContext& ctx) {
  const SymShape& x = ctx.shape(0);
  if (!x.rank_known) return Status();
  NXRT_ASSIGN_OR_RETURN(size_t axis, axis_index(ctx.attrs().get_int("axis", 0), x.rank()));
  SymShape out = x;
  if (ctx.attrs().get_int("keepdims", 1) != 0)
    out.dims[axis] = SymDim::of(1);
  else
    out.dims.erase(out.dims.begin() + ptrdiff_t(axis));
  ctx.set_shape(0, std::move(out));
  return Status();
}

Status resize(InferContext& ctx) {
  const SymShape& x = ctx.shape(0);
  if (!x.rank_known) return Status();
  const bool upsample = ctx.node().op_type == "Upsample";
  const int64_t opset = ctx.opset();
  std::optional<std::vector<double>> scales;
  std::optional<std::vector<int64_t>> sizes;
  if (upsample && opset < 9) {
    std::vector<float> s = ctx.attrs().get_floats("scales");
    scales = std::vector<double>(s.begin(), s.end());
  } else if (upsample || opset < 11) {
    scales = ctx.numbers(1);
  } else {
    if (ctx.has_input(3)) sizes = ctx.ints(3);
    if (ctx.has_input(2)) scales = ctx.numbers(2);
  }
  if (sizes && sizes->empty()) sizes.reset();
  if (scales && scales->empty()) scales.reset();
  std::vector<int64_t> axes = ctx.attrs().get_ints("axes");
  const size_t listed = sizes ? sizes->size() : scales ? scales->size() : 0;
  if (axes.empty())
    for (size_t i = 0; i < listed; ++i) axes.push_back(int64_t(i));
  const bool cropped =
      ctx.attrs().get_string("coordinate_transformation_mode") == "tf_crop_and_resize";
  const std::string policy = ctx.attrs().get_string("keep_aspect_ratio_policy", "stretch");
  if ((!sizes && !scales) || cropped || (sizes && policy != "stretch")) {
    ctx.set_shape(0, SymShape::of_rank(x.rank()));
    return Status();
  }
  if (axes.size() != listed)
    return ctx.conflict(sizes ? "sizes" : "scales", " has ", listed, " entries for ", axes.size(),
                        " axes");
  SymShape out = x;
  for (size_t k = 0; k < axes.size(); ++k) {
    NXRT_ASSIGN_OR_RETURN(size_t i, axis_index(axes[k], x.rank()));
    if (sizes) {
      out.dims[i] = SymDim::of((*sizes)[k]);
      continue;
    }
    const double s = (*scales)[k];
    if (!(s > 0)) return ctx.conflict("scale ", s, " of axis ", i, " is not positive");
    const SymDim& d = x.dims[i];
    const double size = d.known() ? std::floor(double(d.value) * s) : -1.0;
    out.dims[i] = d.known() ? (size < 9e18 ? SymDim::of(int64_t(size)) : SymDim{})
                  : s == 1  ? d
                            : SymDim{};
  }
  ctx.set_shape(0, std::move(out));
  return Status();
}

Status recurrent(InferContext& ctx) {
  const SymShape &x = ctx.shape(0), &r = ctx.shape(2);
  if (!x.rank_known) return Status();
  if (x.rank() != 3) return ctx.conflict("input ", x.text(), " is not 3-D");
  const bool batch_first = ctx.opset() >= 14 && ctx.attrs().get_int("layout", 0) != 0;
  const SymDim seq = x.dims[batch_first ? 1 : 0], batch = x.dims[batch_first ? 0 : 1];
  const int64_t directions =
      ctx.attrs().get_string("direction", "forward") == "bidirectional" ? 2 : 1;
  SymDim hidden;
  if (ctx.attrs().has("hidden_size"))
    hidden = SymDim::of(ctx.attrs().get_int("hidden_size", 0));
  else if (r.rank_known && r.rank() == 3)
    hidden = r.dims[2];
  const SymDim nd = SymDim::of(directions);
  ctx.set_shape(0, batch_first ? SymShape::of({batch, seq, nd, hidden})
                               : SymShape::of({seq, nd, batch, hidden}));
  const SymShape last =
      batch_first ? SymShape::of({batch, nd, hidden}) : SymShape::of({nd, batch, hidden});
  for (size_t i = 1; i < ctx.num_outputs(); ++i) ctx.set_shape(i, last);
  return Status();
}

Status packed_attention(InferContext& ctx) {
  const SymShape &x = ctx.shape(0), &w = ctx.shape(1);
  if (!x.rank_known || x.rank() != 3) return Status();
  SymDim v;
  std::vector<int64_t> sizes = ctx.attrs().get_ints("qkv_hidden_sizes");
  if (sizes.size() == 3)
    v = SymDim::of(sizes[2]);
  else if (w.rank_known && w.rank() == 2 && w.dims[1].known())
    v = SymDim::of(w.dims[1].value / 3);
  ctx.set_shape(0, SymShape::of({x.dims[0], x.dims[1], v}));
  return Status();
}

Status multi_head_attention(InferContext& ctx) {
  const SymShape &q = ctx.shape(0), &value = ctx.shape(2);
  if (!q.rank_known || q.rank() != 3) return Status();
  SymDim v;
  if (value.rank_known && value.rank() == 3) {
    v = value.dims[2];
  } else if (value.rank_known && value.rank() == 4 && value.dims[1].known() &&
             value.dims[3].known()) {
    v = dim_or_unknown(checked_mul(value.dims[1].value, value.dims[3].value));
  }
  ctx.set_shape(0, SymShape::of({q.dims[0], q.dims[1], v}));
  return Status();
}

Status onnx_attention(InferContext& ctx) {
  const SymShape &q = ctx.shape(0), &v = ctx.shape(2);
  if (!q.rank_known || !v.rank_known) return Status();
  if (q.rank() == 4 && v.rank() == 4) {
    ctx.set_shape(0, SymShape::of({q.dims[0], q.dims[1], q.dims[2], v.dims[3]}));
  } else if (q.rank() == 3 && v.rank() == 3) {
    // [B, S, q_heads * head] with the value head size of V's [B, L, kv_heads * v_head].
    const int64_t q_heads = ctx.attrs().get_int("q_num_heads", 0);
    const int64_t kv_heads = ctx.attrs().get_int("kv_num_heads", 0);
    SymDim hidden;
    if (q_heads > 0 && kv_heads > 0 && v.dims[2].known() && v.dims[2].value % kv_heads == 0)
      hidden = SymDim::of(v.dims[2].value / kv_heads * q_heads);
    ctx.set_shape(0, SymShape::of({q.dims[0], q.dims[1], hidden}));
  }
  return Status();
}

Status grid_sample(InferContext& ctx) {
  const SymShape &x = ctx.shape(0), &grid = ctx.shape(1);
  if (!x.rank_known || !grid.rank_known || x.rank() < 3 || grid.rank() != x.rank()) return Status();
  std::vector<SymDim> out = {x.dims[0], x.dims[1]};
  out.insert(out.end(), grid.dims.begin() + 1, grid.dims.end() - 1);
  ctx.set_shape(0, SymShape::of(std::move(out)));
  return Status();
}

Status classification_loss(InferContext& ctx) {
  const SymShape& scores = ctx.shape(0);
  if (!scores.rank_known || scores.rank() < 2) return Status();
  if (ctx.attrs().get_string("reduction", "mean") == "none") {
    std::vector<SymDim> per_item = {scores.dims[0]};
    per_item.insert(per_item.end(), scores.dims.begin() + 2, scores.dims.end());
    ctx.set_shape(0, SymShape::of(std::move(per_item)));
  } else {
    ctx.set_shape(0, SymShape::scalar());
  }
  if (ctx.num_outputs() > 1) ctx.set_shape(1, scores);  // SoftmaxCrossEntropyLoss log_prob
  return Status();
}

Status einsum(InferContext& ctx) {
  std::string eq;
  for (char c : ctx.attrs().get_string("equation"))
    if (c != ' ') eq += c;
  if (eq.find("...") != std::string::npos) return Status();  // broadcast dims: not yet
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms(1);
  for (char c : lhs) {
    if (c == ',')
      terms.emplace_back();
    else
      terms.back() += c;
  }
  if (terms.size() != ctx.num_inputs())
    return ctx.conflict("the equation names ", terms.size(), " operands");
  std::map<char, SymDim> sizes;
  std::map<char, int> count;
  for (size_t t = 0; t < terms.size(); ++t) {
    const SymShape& s = ctx.shape(t);
    if (s.rank_known && s.rank() != terms[t].size())
      return ctx.conflict("operand ", t, " ", s.text(), " does not have ", terms[t].size(),
                          " axes");
    for (size_t i = 0; i < terms[t].size(); ++i) {
      const char c = terms[t][i];
      ++count[c];
      SymDim d = s.rank_known ? s.dims[i] : SymDim{};
      auto [it, fresh] = sizes.emplace(c, d);
      if (fresh || (d.known() && d.value == 1)) continue;
      if (it->second.known() && it->second.value == 1)
        it->second = d;  // broadcast of 1
      else if (it->second.known() && d.known() && it->second.value != d.value)
        return ctx.conflict("axis '", c, "' is ", it->second.value, " and ", d.value);
      else if (!it->second.known())
        it->second = d;
    }
  }
  std::string out_letters;
  if (arrow != std::string::npos) {
    out_letters = eq.substr(arrow + 2);
  } else {
    for (const auto& [c, n] : count)
      if (n == 1) out_letters += c;  // implicit output: letters seen once, sorted
  }
  std::vector<SymDim> out;
  for (char c : out_letters) {
    auto it = sizes.find(c);
    if (it == sizes.end()) return ctx.conflict("output axis '", c, "' is on no operand");
    out.push_back(it->second);
  }
  ctx.set_shape(0, SymShape::of(std::move(out)));
  return Status();
}

}  // namespace nxrt::ops::rules
