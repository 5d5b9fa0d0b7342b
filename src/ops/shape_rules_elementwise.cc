// Shape rules of ops whose outputs keep an input's shape or broadcast their inputs.
#include <algorithm>

#include "core/dtype.h"
#include "ops/shape_rules.h"

namespace nxrt::ops::rules {
namespace {

// Shape arithmetic on tracked elements (Shape -> Mul -> Reshape): numbers combine, and a
// symbol passes through the neutral element of the op.
// A computed element: a number, or nothing when it overflowed.
std::optional<SymDim> number(std::optional<int64_t> v) {
  return v ? std::optional<SymDim>(SymDim::of(*v)) : std::nullopt;
}

std::optional<SymDim> combine(std::string_view op, const SymDim& a, const SymDim& b) {
  const bool both = a.known() && b.known();
  auto is = [](const SymDim& d, int64_t v) { return d.known() && d.value == v; };
  if (op == "Add") {
    if (both) return number(checked_add(a.value, b.value));
    if (is(a, 0)) return b;
    if (is(b, 0)) return a;
  } else if (op == "Sub") {
    if (both) return number(checked_sub(a.value, b.value));
    if (is(b, 0)) return a;
  } else if (op == "Mul") {
    if (both) return number(checked_mul(a.value, b.value));
    if (is(a, 1)) return b;
    if (is(b, 1)) return a;
  } else if (op == "Div") {
    if (both && b.value != 0 && !(b.value == -1 && a.value == INT64_MIN))
      return SymDim::of(a.value / b.value);
    if (is(b, 1)) return a;
  } else if (op == "Equal") {
    if (both) return SymDim::of(a.value == b.value ? 1 : 0);
    if (a.same_as(b)) return SymDim::of(1);
  } else if (op == "Max") {
    if (both) return SymDim::of(std::max(a.value, b.value));
  } else if (op == "Min") {
    if (both) return SymDim::of(std::min(a.value, b.value));
  }
  return std::nullopt;
}

// Elements of a binary op over two tracked tensors of the same size, or one of a single
// element; nullopt when any element stays unknown.
std::optional<std::vector<SymDim>> combine_elements(InferContext& ctx) {
  if (ctx.num_inputs() != 2) return std::nullopt;
  std::optional<std::vector<SymDim>> a = ctx.elements(0), b = ctx.elements(1);
  if (!a || !b) return std::nullopt;
  if (a->size() != b->size() && a->size() != 1 && b->size() != 1) return std::nullopt;
  const size_t n = std::max(a->size(), b->size());
  std::vector<SymDim> out;
  for (size_t i = 0; i < n; ++i) {
    std::optional<SymDim> v =
        combine(ctx.node().op_type, (*a)[a->size() == 1 ? 0 : i], (*b)[b->size() == 1 ? 0 : i]);
    if (!v) return std::nullopt;
    out.push_back(std::move(*v));
  }
  return out;
}

}  // namespace

Expected<size_t> axis_index(int64_t axis, size_t rank, const char* what) {
  const int64_t r = int64_t(rank);
  if (axis < -r || axis >= r)
    return invalid_argument(what, " ", axis, " is out of range for rank ", rank);
  return size_t(axis < 0 ? axis + r : axis);
}

Status same_as_input(InferContext& ctx) {
  for (size_t i = 0; i < ctx.num_outputs(); ++i) ctx.set_shape(i, ctx.shape(0));
  return Status();
}

Status identity(InferContext& ctx) {
  ctx.output(0) = ctx.input(0);
  if (!ctx.output(0).elements) ctx.output(0).elements = ctx.elements(0);
  if (ctx.output(0).elements && ctx.output(0).elements->size() > kMaxTrackedElements)
    ctx.output(0).elements.reset();
  return Status();
}

Status broadcast_inputs(InferContext& ctx) {
  SymShape out;
  bool first = true;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) continue;
    if (first) {
      out = ctx.shape(i);
      first = false;
      continue;
    }
    NXRT_ASSIGN_OR_RETURN(out, broadcast_shapes(out, ctx.shape(i)));
  }
  for (size_t i = 0; i < ctx.num_outputs(); ++i) ctx.set_shape(i, out);
  if (std::optional<int64_t> n = out.numel(); n && size_t(*n) <= kMaxTrackedElements) {
    ctx.output(0).elements = combine_elements(ctx);
    if (ctx.output(0).elements && ctx.output(0).elements->size() != size_t(*n))
      ctx.output(0).elements.reset();
  }
  return Status();
}

Status legacy_broadcast(InferContext& ctx) {
  if (ctx.opset() >= 7) return broadcast_inputs(ctx);
  return same_as_input(ctx);
}

Status where(InferContext& ctx) {
  NXRT_ASSIGN_OR_RETURN(SymShape out, broadcast_shapes(ctx.shape(0), ctx.shape(1)));
  NXRT_ASSIGN_OR_RETURN(out, broadcast_shapes(out, ctx.shape(2)));
  ctx.set_shape(0, out);
  std::optional<int64_t> count = out.numel();
  if (!count || size_t(*count) > kMaxTrackedElements) return Status();
  std::optional<std::vector<SymDim>> c = ctx.elements(0), x = ctx.elements(1), y = ctx.elements(2);
  if (!c || !x || !y) return Status();
  const size_t n = size_t(*count);
  auto at = [n](const std::vector<SymDim>& v, size_t i) -> const SymDim* {
    if (v.size() == 1) return &v[0];
    return v.size() == n ? &v[i] : nullptr;
  };
  std::vector<SymDim> picked;
  for (size_t i = 0; i < n; ++i) {
    const SymDim *ci = at(*c, i), *xi = at(*x, i), *yi = at(*y, i);
    if (!ci || !xi || !yi || !ci->known()) return Status();
    picked.push_back(ci->value ? *xi : *yi);
  }
  ctx.output(0).elements = std::move(picked);
  return Status();
}

Status cast(InferContext& ctx) {
  ctx.set_shape(0, ctx.shape(0));
  const int64_t to = ctx.attrs().get_int("to", 0);
  if (is_integer_type(DataType(to))) {
    ctx.output(0).elements = ctx.elements(0);
  } else if (DataType(to) == DataType::kBool) {  // a condition made from a size
    std::optional<std::vector<int64_t>> v = ctx.ints(0);
    if (v && v->size() <= kMaxTrackedElements) {
      std::vector<SymDim> flags;
      for (int64_t x : *v) flags.push_back(SymDim::of(x != 0));
      ctx.output(0).elements = std::move(flags);
    }
  }
  return Status();
}

Status logical_not(InferContext& ctx) {
  ctx.set_shape(0, ctx.shape(0));
  if (std::optional<std::vector<int64_t>> v = ctx.input(0).int_elements()) {
    std::vector<SymDim> flipped;
    for (int64_t x : *v) flipped.push_back(SymDim::of(x == 0));
    ctx.output(0).elements = std::move(flipped);
  }
  return Status();
}

Status dynamic_quantize(InferContext& ctx) {
  ctx.set_shape(0, ctx.shape(0));
  for (size_t i = 1; i < ctx.num_outputs(); ++i) ctx.set_shape(i, SymShape::scalar());
  return Status();
}

Status layer_normalization(InferContext& ctx) {
  const SymShape& x = ctx.shape(0);
  ctx.set_shape(0, x);
  if (!x.rank_known || ctx.num_outputs() < 2) return Status();
  NXRT_ASSIGN_OR_RETURN(size_t axis, axis_index(ctx.attrs().get_int("axis", -1), x.rank()));
  SymShape stats = x;
  for (size_t i = axis; i < x.rank(); ++i) stats.dims[i] = SymDim::of(1);
  for (size_t i = 1; i < ctx.num_outputs(); ++i) ctx.set_shape(i, stats);
  return Status();
}

Status skip_layer_normalization(InferContext& ctx) {
  ctx.set_shape(0, ctx.shape(0));
  if (ctx.num_outputs() > 3) ctx.set_shape(3, ctx.shape(0));
  return Status();
}

Status batch_normalization(InferContext& ctx) {
  const SymShape& x = ctx.shape(0);
  ctx.set_shape(0, x);
  if (x.rank_known && x.rank() >= 2)
    for (size_t i = 1; i < ctx.num_outputs(); ++i) ctx.set_shape(i, SymShape::of({x.dims[1]}));
  return Status();
}

}  // namespace nxrt::ops::rules
