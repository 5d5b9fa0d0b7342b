// Shape rules of ops that create, move or select data without arithmetic on it.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <set>

#include "ops/shape_rules.h"

namespace nxrt::ops::rules {
namespace {

// Keeps `elements` on output 0 when few enough.
void set_elements(InferContext& ctx, std::vector<SymDim> elements) {
  if (elements.size() <= kMaxTrackedElements) ctx.output(0).elements = std::move(elements);
}

std::vector<int64_t> row_major_strides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) strides[i - 1] = strides[i] * dims[i];
  return strides;
}

// Tracked elements of a strided view of `from`: output element at index (i0, i1, ...) of
// `out_dims` is from[base + sum(ik * strides[k])]. Sets nothing when too many.
void gather_strided(const std::vector<SymDim>& from, const std::vector<int64_t>& out_dims,
                    const std::vector<int64_t>& strides, int64_t base, ValueFacts& out) {
  int64_t n = 1;
  for (int64_t d : out_dims) n *= d;
  if (n < 0 || size_t(n) > kMaxTrackedElements) return;
  std::vector<SymDim> picked;
  std::vector<int64_t> index(out_dims.size(), 0);
  for (int64_t k = 0; k < n; ++k) {
    int64_t offset = base;
    for (size_t i = 0; i < index.size(); ++i) {
      std::optional<int64_t> step = checked_mul(index[i], strides[i]);
      std::optional<int64_t> next = step ? checked_add(offset, *step) : std::nullopt;
      if (!next) return;
      offset = *next;
    }
    if (offset < 0 || size_t(offset) >= from.size()) return;
    picked.push_back(from[size_t(offset)]);
    for (size_t i = index.size(); i-- > 0;) {
      if (++index[i] < out_dims[i]) break;
      index[i] = 0;
    }
  }
  out.elements = std::move(picked);
}

// The rank a 1-D shape tensor of length `d` gives, when plausible (a malformed model may
// declare a shape input of any length).
std::optional<size_t> rank_from(const SymShape& shape_input) {
  constexpr int64_t kMaxRank = 64;
  if (!shape_input.fully_known() || shape_input.rank() != 1) return std::nullopt;
  const int64_t n = shape_input.dims[0].value;
  if (n < 0 || n > kMaxRank) return std::nullopt;
  return size_t(n);
}

// A dimension times a number: symbolic dims survive only a factor of 1.
SymDim scaled(const SymDim& d, int64_t factor) {
  if (d.known()) return dim_or_unknown(checked_mul(d.value, factor));
  return factor == 1 ? d : SymDim{};
}

// A dimension divided by a number that must divide it.
Expected<SymDim> divided(const SymDim& d, int64_t divisor, const char* what) {
  if (divisor <= 0) return invalid_argument(what, " ", divisor, " is not positive");
  if (!d.known()) return divisor == 1 ? d : SymDim{};
  if (d.value % divisor != 0)
    return invalid_argument("dimension ", d.value, " is not a multiple of ", what, " ", divisor);
  return SymDim::of(d.value / divisor);
}

// Axes of an op that lists them in an attribute before `input_since` and as input
// `input_index` from then on. nullopt when given by a value inference cannot read; an
// empty vector when not given at all.
std::optional<std::vector<int64_t>> axes_of(InferContext& ctx, int64_t input_since,
                                            size_t input_index) {
  if (ctx.opset() < input_since) return ctx.attrs().get_ints("axes");
  if (!ctx.has_input(input_index)) return std::vector<int64_t>{};
  return ctx.ints(input_index);
}

// A product of dimensions as (numbers multiplied, symbols, unknown seen).
struct DimProduct {
  int64_t known = 1;
  std::multiset<std::string> symbols;
  bool unknown = false;

  void add(const SymDim& d) {
    if (d.known()) {
      std::optional<int64_t> p = checked_mul(known, d.value);
      if (p)
        known = *p;
      else
        unknown = true;
    } else if (d.symbol.empty())
      unknown = true;
    else
      symbols.insert(d.symbol);
  }
};

// The -1 of a Reshape target: the input's size over the other output dims.
Expected<SymDim> inferred_dim(const SymShape& input, const std::vector<SymDim>& others) {
  DimProduct in, out;
  for (const SymDim& d : input.dims) in.add(d);
  for (const SymDim& d : others) out.add(d);
  if (in.unknown || out.unknown) return SymDim{};
  for (const std::string& s : out.symbols) {
    auto it = in.symbols.find(s);
    if (it == in.symbols.end()) return SymDim{};
    in.symbols.erase(it);
  }
  if (!in.symbols.empty())
    return in.symbols.size() == 1 && in.known == out.known ? SymDim::named(*in.symbols.begin())
                                                           : SymDim{};
  if (out.known == 0) return SymDim{};
  if (in.known % out.known != 0)
    return invalid_argument("cannot reshape ", input.text(), ": ", in.known,
                            " elements are not a multiple of ", out.known);
  return SymDim::of(in.known / out.known);
}

}  // namespace

Status shape_of(InferContext& ctx) {
  const SymShape& in = ctx.shape(0);
  if (!in.rank_known) {
    ctx.set_shape(0, SymShape::of_rank(1));
    return Status();
  }
  const int64_t rank = int64_t(in.rank());
  auto clamp = [rank](int64_t v) { return std::clamp(v < 0 ? v + rank : v, int64_t{0}, rank); };
  const int64_t start = clamp(ctx.attrs().get_int("start", 0));
  const int64_t end = clamp(ctx.attrs().get_int("end", rank));
  std::vector<SymDim> dims;
  for (int64_t i = start; i < end; ++i) dims.push_back(in.dims[size_t(i)]);
  ctx.set_shape(0, SymShape::of_ints(std::vector<int64_t>{int64_t(dims.size())}));
  set_elements(ctx, std::move(dims));
  return Status();
}

Status size_of(InferContext& ctx) {
  ctx.set_shape(0, SymShape::scalar());
  if (ctx.shape(0).rank_known) {
    SymDim n = product(ctx.shape(0).dims);
    if (!n.is_unknown()) set_elements(ctx, {n});
  }
  return Status();
}

Status constant(InferContext& ctx) {
  const ir::Node& node = ctx.node();
  if (const ir::Attribute* a = node.find_attribute("value")) {
    ctx.output(0) = constant_facts(a->t);
  } else if (const ir::Attribute* a = node.find_attribute("value_int")) {
    ctx.set_shape(0, SymShape::scalar());
    set_elements(ctx, {SymDim::of(a->i)});
  } else if (const ir::Attribute* a = node.find_attribute("value_ints")) {
    ctx.set_shape(0, SymShape::of_ints(std::vector<int64_t>{int64_t(a->ints.size())}));
    std::vector<SymDim> elements;
    for (int64_t v : a->ints) elements.push_back(SymDim::of(v));
    set_elements(ctx, std::move(elements));
  } else if (node.find_attribute("value_float") || node.find_attribute("value_string")) {
    ctx.set_shape(0, SymShape::scalar());
  } else if (const ir::Attribute* a = node.find_attribute("value_floats")) {
    ctx.set_shape(0, SymShape::of_ints(std::vector<int64_t>{int64_t(a->floats.size())}));
  } else if (const ir::Attribute* a = node.find_attribute("value_strings")) {
    ctx.set_shape(0, SymShape::of_ints(std::vector<int64_t>{int64_t(a->strings.size())}));
  }
  return Status();
}

Status constant_of_shape(InferContext& ctx) {
  if (std::optional<std::vector<SymDim>> dims = ctx.elements(0)) {
    for (const SymDim& d : *dims)
      if (d.known() && d.value < 0)
        return ctx.conflict("the shape input holds the negative dimension ", d.value);
    ctx.set_shape(0, SymShape::of(std::move(*dims)));
    // An integer fill (shape code pads with ConstantOfShape(..., value=int64 0)).
    const ir::Attribute* value = ctx.node().find_attribute("value");
    std::optional<int64_t> n = ctx.output(0).shape.numel();
    if (value && n && size_t(*n) <= kMaxTrackedElements && value->t.numel() == 1) {
      ValueFacts fill = constant_facts(value->t);
      if (fill.elements) set_elements(ctx, std::vector<SymDim>(size_t(*n), (*fill.elements)[0]));
    }
  } else if (std::optional<size_t> rank = rank_from(ctx.shape(0))) {
    ctx.set_shape(0, SymShape::of_rank(*rank));
  }
  return Status();
}

Status reshape(InferContext& ctx) {
  const SymShape& in = ctx.shape(0);
  std::optional<std::vector<SymDim>> target;
  if (ctx.opset() < 5) {
    std::vector<SymDim> t;
    for (int64_t v : ctx.attrs().get_ints("shape")) t.push_back(SymDim::of(v));
    target = std::move(t);
  } else {
    target = ctx.elements(1);
  }
  if (!target) {
    if (std::optional<size_t> rank = rank_from(ctx.shape(1)))
      ctx.set_shape(0, SymShape::of_rank(*rank));
    return Status();
  }
  const bool allow_zero = ctx.opset() >= 14 && ctx.attrs().get_int("allowzero", 0) != 0;
  std::vector<SymDim> out(target->size());
  std::optional<size_t> infer_at;
  for (size_t j = 0; j < target->size(); ++j) {
    const SymDim& t = (*target)[j];
    if (!t.known()) {
      out[j] = t;
    } else if (t.value == 0 && !allow_zero) {
      if (in.rank_known && j >= in.rank())
        return ctx.conflict("target dim ", j, " is 0 (copy) but the input ", in.text(),
                            " has rank ", in.rank());
      if (in.rank_known) out[j] = in.dims[j];
    } else if (t.value == -1) {
      if (infer_at) return ctx.conflict("the target shape has more than one -1");
      infer_at = j;
    } else if (t.value < 0) {
      return ctx.conflict("target dim ", j, " is ", t.value);
    } else {
      out[j] = t;
    }
  }
  if (infer_at && in.rank_known) {
    std::vector<SymDim> others;
    for (size_t j = 0; j < out.size(); ++j)
      if (j != *infer_at) others.push_back(out[j]);
    NXRT_ASSIGN_OR_RETURN(out[*infer_at], inferred_dim(in, others));
  }
  SymShape result = SymShape::of(std::move(out));
  if (std::optional<int64_t> n_in = in.numel(), n_out = result.numel(); n_in && n_out)
    if (*n_in != *n_out)
      return ctx.conflict("cannot reshape ", in.text(), " (", *n_in, " elements) to ",
                          result.text(), " (", *n_out, ")");
  ctx.set_shape(0, std::move(result));
  ctx.output(0).elements = ctx.input(0).elements;  // row-major order is kept
  return Status();
}

Status flatten(InferContext& ctx) {
  const SymShape& in = ctx.shape(0);
  if (!in.rank_known) {
    ctx.set_shape(0, SymShape::of_rank(2));
    return Status();
  }
  int64_t axis = ctx.attrs().get_int("axis", 1);
  const int64_t rank = int64_t(in.rank());
  if (axis < -rank || axis > rank)
    return ctx.conflict("axis ", axis, " is out of range for rank ", rank);
  if (axis < 0) axis += rank;
  std::span<const SymDim> dims(in.dims);
  ctx.set_shape(
      0, SymShape::of({product(dims.first(size_t(axis))), product(dims.subspan(size_t(axis)))}));
  return Status();
}

Status squeeze(InferContext& ctx) {
  const SymShape& in = ctx.shape(0);
  std::optional<std::vector<int64_t>> axes = axes_of(ctx, 13, 1);
  if (!in.rank_known || !axes) return Status();
  std::vector<bool> drop(in.rank(), false);
  if (axes->empty()) {
    for (size_t i = 0; i < in.rank(); ++i) {
      if (!in.dims[i].known()) return Status();  // a symbol may be 1 at run time
      drop[i] = in.dims[i].value == 1;
    }
  } else {
    for (int64_t a : *axes) {
      NXRT_ASSIGN_OR_RETURN(size_t i, axis_index(a, in.rank()));
      if (in.dims[i].known() && in.dims[i].value != 1)
        return ctx.conflict("cannot squeeze axis ", a, " of ", in.text(), ": its size is not 1");
      drop[i] = true;
    }
  }
  std::vector<SymDim> out;
  for (size_t i = 0; i < in.rank(); ++i)
    if (!drop[i]) out.push_back(in.dims[i]);
  ctx.set_shape(0, SymShape::of(std::move(out)));
  ctx.output(0).elements = ctx.input(0).elements;
  return Status();
}

Status unsqueeze(InferContext& ctx) {
  const SymShape& in = ctx.shape(0);
  std::optional<std::vector<int64_t>> axes = axes_of(ctx, 13, 1);
  if (!in.rank_known || !axes) return Status();
  const size_t rank = in.rank() + axes->size();
  std::vector<bool> inserted(rank, false);
  for (int64_t a : *axes) {
    NXRT_ASSIGN_OR_RETURN(size_t i, axis_index(a, rank));
    if (inserted[i]) return ctx.conflict("axis ", a, " is listed twice");
    inserted[i] = true;
  }
  SymShape out = SymShape::of_rank(rank);
  for (size_t i = 0, from = 0; i < rank; ++i)
    out.dims[i] = inserted[i] ? SymDim::of(1) : in.dims[from++];
  ctx.set_shape(0, std::move(out));
  ctx.output(0).elements = ctx.input(0).elements;
  return Status();
}

Status transpose(InferContext& ctx) {
  const SymShape& in = ctx.shape(0);
  if (!in.rank_known) return Status();
  std::vector<int64_t> perm = ctx.attrs().get_ints("perm");
  if (perm.empty())
    for (size_t i = in.rank(); i-- > 0;) perm.push_back(int64_t(i));
  if (perm.size() != in.rank())
    return ctx.conflict("perm has ", perm.size(), " entries for input ", in.text());
  SymShape out = SymShape::of_rank(in.rank());
  for (size_t i = 0; i < perm.size(); ++i) {
    NXRT_ASSIGN_OR_RETURN(size_t from, axis_index(perm[i], in.rank(), "perm entry"));
    out.dims[i] = in.dims[from];
  }
  ctx.set_shape(0, out);
  std::optional<std::vector<int64_t>> dims = in.ints();
  if (dims && ctx.input(0).elements) {
    std::vector<size_t> source(ctx.input(0).elements->size());
    const std::vector<int64_t> in_strides = row_major_strides(*dims);
    std::vector<int64_t> out_dims = *out.ints(), out_strides(perm.size());
    for (size_t i = 0; i < perm.size(); ++i)
      out_strides[i] = in_strides[size_t(perm[i] < 0 ? perm[i] + int64_t(perm.size()) : perm[i])];
    gather_strided(*ctx.input(0).elements, out_dims, out_strides, 0, ctx.output(0));
  }
  return Status();
}

Status expand(InferContext& ctx) {
  SymShape target;
  if (std::optional<std::vector<SymDim>> dims = ctx.elements(1))
    target = SymShape::of(std::move(*dims));
  else if (std::optional<size_t> rank = rank_from(ctx.shape(1)))
    target = SymShape::of_rank(*rank);
  NXRT_ASSIGN_OR_RETURN(SymShape out, broadcast_shapes(ctx.shape(0), target));
  ctx.set_shape(0, std::move(out));
  return Status();
}

Status concat(InferContext& ctx) {
  std::vector<const SymShape*> parts;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) continue;
    if (!ctx.shape(i).rank_known) return Status();
    parts.push_back(&ctx.shape(i));
  }
  if (parts.empty()) return Status();
  const size_t rank = parts[0]->rank();
  NXRT_ASSIGN_OR_RETURN(size_t axis, axis_index(ctx.attrs().get_int("axis", 0), rank));
  SymShape out = *parts[0];
  std::vector<SymDim> along;
  for (const SymShape* p : parts) {
    if (p->rank() != rank)
      return ctx.conflict("inputs of rank ", rank, " ", parts[0]->text(), " and ", p->rank(), " ",
                          p->text());
    along.push_back(p->dims[axis]);
    for (size_t i = 0; i < rank; ++i) {
      if (i == axis) continue;
      const SymDim &a = out.dims[i], &b = p->dims[i];
      if (a.known() && b.known() && a.value != b.value)
        return ctx.conflict("inputs ", parts[0]->text(), " and ", p->text(), " differ at axis ", i);
      if (!a.known() && (b.known() || a.is_unknown())) out.dims[i] = b;
    }
  }
  // The size along the axis: the sum of the parts, when all are numbers (a single symbol
  // beside empty parts stays that symbol).
  int64_t sum = 0;
  const SymDim* only_symbol = nullptr;
  bool unknown = false;
  for (const SymDim& d : along) {
    if (d.known()) {
      std::optional<int64_t> s = checked_add(sum, d.value);
      if (s)
        sum = *s;
      else
        unknown = true;
    } else if (!d.symbol.empty() && !only_symbol) {
      only_symbol = &d;
    } else {
      unknown = true;
    }
  }
  out.dims[axis] = unknown       ? SymDim{}
                   : only_symbol ? (sum == 0 ? *only_symbol : SymDim{})
                                 : SymDim::of(sum);
  ctx.set_shape(0, std::move(out));
  if (axis == 0) {  // row-major: the parts' elements one after the other
    std::vector<SymDim> joined;
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      if (!ctx.has_input(i)) continue;
      std::optional<std::vector<SymDim>> e = ctx.elements(i);
      if (!e) return Status();
      joined.insert(joined.end(), e->begin(), e->end());
    }
    set_elements(ctx, std::move(joined));
  }
  return Status();
}

Status split(InferContext& ctx) {
  const SymShape& in = ctx.shape(0);
  if (!in.rank_known) return Status();
  NXRT_ASSIGN_OR_RETURN(size_t axis, axis_index(ctx.attrs().get_int("axis", 0), in.rank()));
  const size_t n = ctx.num_outputs();
  if (n == 0) return Status();
  std::optional<std::vector<int64_t>> sizes;
  const bool sizes_by_input = ctx.has_input(1) && (ctx.opset() >= 13 || ctx.opset() < 2);
  if (sizes_by_input) {
    sizes = ctx.ints(1);
  } else if (ctx.opset() < 13 && ctx.attrs().has("split")) {
    sizes = ctx.attrs().get_ints("split");
  } else if (in.dims[axis].known()) {
    const int64_t d = in.dims[axis].value;
    const int64_t chunk = d / int64_t(n) + (d % int64_t(n) != 0);
    if (ctx.opset() < 18 && d % int64_t(n) != 0)
      return ctx.conflict("dimension ", d, " of axis ", axis, " does not split into ", n,
                          " equal parts");
    sizes.emplace();
    for (size_t i = 0; i < n; ++i)
      sizes->push_back(std::clamp(d - chunk * int64_t(i), int64_t{0}, chunk));
  }
  for (size_t i = 0; i < n; ++i) {
    SymShape out = in;
    out.dims[axis] = sizes && i < sizes->size() ? SymDim::of((*sizes)[i]) : SymDim{};
    ctx.set_shape(i, std::move(out));
  }
  if (sizes && sizes->size() != n)
    return ctx.conflict("split lists ", sizes->size(), " sizes for ", n, " outputs");
  if (sizes && in.dims[axis].known()) {
    int64_t total = 0;
    for (int64_t s : *sizes) total += s;
    if (total != in.dims[axis].value)
      return ctx.conflict("split sizes sum to ", total, " but axis ", axis, " of ", in.text(),
                          " has ", in.dims[axis].value);
  }
  return Status();
}

Status slice(InferContext& ctx) {
  const SymShape& in = ctx.shape(0);
  if (!in.rank_known) return Status();
  std::optional<std::vector<int64_t>> starts, ends, axes, steps;
  if (ctx.opset() < 10) {
    starts = ctx.attrs().get_ints("starts");
    ends = ctx.attrs().get_ints("ends");
    axes = ctx.attrs().get_ints("axes");
  } else {
    starts = ctx.ints(1);
    ends = ctx.ints(2);
    axes = ctx.has_input(3) ? ctx.ints(3) : std::vector<int64_t>{};
    steps = ctx.has_input(4) ? ctx.ints(4) : std::vector<int64_t>{};
  }
  SymShape out = in;
  if (!starts || !ends || !axes || (ctx.opset() >= 10 && !steps)) {
    // Which axes change is known only from the axes input (or all may change).
    if (axes && !axes->empty()) {
      for (int64_t a : *axes) {
        NXRT_ASSIGN_OR_RETURN(size_t i, axis_index(a, in.rank()));
        out.dims[i] = SymDim{};
      }
    } else {
      out = SymShape::of_rank(in.rank());
    }
    ctx.set_shape(0, std::move(out));
    return Status();
  }
  if (starts->size() != ends->size())
    return ctx.conflict("starts has ", starts->size(), " entries and ends ", ends->size());
  if (axes->empty())
    for (size_t i = 0; i < starts->size(); ++i) axes->push_back(int64_t(i));
  if (steps->empty()) steps->assign(starts->size(), 1);
  if (axes->size() != starts->size() || steps->size() != starts->size())
    return ctx.conflict("starts, ends, axes and steps differ in length");
  std::vector<std::array<int64_t, 3>> picked(in.rank(), {0, 0, 0});  // start, step, count
  std::vector<bool> sliced(in.rank(), false);
  bool picks_known = true;
  for (size_t k = 0; k < axes->size(); ++k) {
    NXRT_ASSIGN_OR_RETURN(size_t i, axis_index((*axes)[k], in.rank()));
    int64_t start = (*starts)[k], end = (*ends)[k];
    const int64_t step = (*steps)[k];
    if (step == 0) return ctx.conflict("step of axis ", (*axes)[k], " is 0");
    const SymDim& d = in.dims[i];
    if (!d.known()) {
      const bool whole = start == 0 && step == 1 && end >= std::numeric_limits<int32_t>::max();
      out.dims[i] = whole ? d : SymDim{};
      picks_known = false;
      continue;
    }
    const int64_t n = d.value;
    if (start < 0) start += n;
    if (end < 0) end += n;
    int64_t count;
    if (step > 0) {
      start = std::clamp(start, int64_t{0}, n);
      end = std::clamp(end, int64_t{0}, n);
      count = end > start ? (end - start - 1) / step + 1 : 0;
    } else {
      start = std::clamp(start, int64_t{0}, n - 1);
      end = std::clamp(end, int64_t{-1}, n - 1);
      // In 128 bits: -step overflows for INT64_MIN.
      count = start > end ? int64_t((__int128(start) - end - 1) / -__int128(step) + 1) : 0;
    }
    out.dims[i] = SymDim::of(count);
    picked[i] = {start, step, count};
    sliced[i] = true;
  }
  ctx.set_shape(0, out);
  std::optional<std::vector<int64_t>> dims = in.ints();
  if (picks_known && dims && ctx.input(0).elements) {
    const std::vector<int64_t> strides = row_major_strides(*dims);
    std::vector<int64_t> out_dims = *dims, out_strides = strides;
    int64_t base = 0;
    for (size_t i = 0; i < in.rank(); ++i) {
      if (!sliced[i]) continue;
      auto [start, step, count] = picked[i];
      out_dims[i] = count;
      std::optional<int64_t> stride = checked_mul(step, strides[i]);
      std::optional<int64_t> offset = checked_mul(start, strides[i]);
      if (!stride || !offset || !checked_add(base, *offset)) return Status();
      out_strides[i] = *stride;
      base += *offset;
    }
    gather_strided(*ctx.input(0).elements, out_dims, out_strides, base, ctx.output(0));
  }
  return Status();
}

Status gather(InferContext& ctx) {
  const SymShape &data = ctx.shape(0), &indices = ctx.shape(1);
  if (!data.rank_known || !indices.rank_known) return Status();
  if (data.rank() == 0) return ctx.conflict("data is a scalar");
  NXRT_ASSIGN_OR_RETURN(size_t axis, axis_index(ctx.attrs().get_int("axis", 0), data.rank()));
  std::vector<SymDim> out(data.dims.begin(), data.dims.begin() + ptrdiff_t(axis));
  out.insert(out.end(), indices.dims.begin(), indices.dims.end());
  out.insert(out.end(), data.dims.begin() + ptrdiff_t(axis) + 1, data.dims.end());
  ctx.set_shape(0, SymShape::of(std::move(out)));
  // Tracked elements: rows of axis 0 picked in the indices' order.
  std::optional<std::vector<int64_t>> dims = data.ints();
  if (axis != 0 || !dims || !ctx.input(0).elements) return Status();
  std::optional<std::vector<int64_t>> picks = ctx.ints(1);
  if (!picks) return Status();
  const std::vector<SymDim>& from = *ctx.input(0).elements;
  const int64_t rows = (*dims)[0];
  if (std::optional<int64_t> count = data.numel(); !count || size_t(*count) != from.size())
    return Status();
  const size_t row = rows > 0 ? from.size() / size_t(rows) : 0;
  std::vector<SymDim> chosen;
  for (int64_t j : *picks) {
    if (j < -rows || j >= rows)
      return ctx.conflict("index ", j, " is out of range for axis 0 of ", data.text());
    const size_t first = size_t(j < 0 ? j + rows : j) * row;
    chosen.insert(chosen.end(), from.begin() + ptrdiff_t(first),
                  from.begin() + ptrdiff_t(first + row));
  }
  set_elements(ctx, std::move(chosen));
  return Status();
}

Status gather_elements(InferContext& ctx) {
  ctx.set_shape(0, ctx.shape(1));
  return Status();
}

Status gather_nd(InferContext& ctx) {
  const SymShape &data = ctx.shape(0), &indices = ctx.shape(1);
  if (!data.rank_known || !indices.rank_known || indices.rank() == 0) return Status();
  const SymDim& last = indices.dims.back();
  if (!last.known()) return Status();
  const size_t batch = size_t(std::max<int64_t>(0, ctx.attrs().get_int("batch_dims", 0)));
  if (batch + size_t(last.value) > data.rank())
    return ctx.conflict("indices ", indices.text(), " index past the rank of data ", data.text());
  std::vector<SymDim> out(indices.dims.begin(), indices.dims.end() - 1);
  out.insert(out.end(), data.dims.begin() + ptrdiff_t(batch + size_t(last.value)), data.dims.end());
  ctx.set_shape(0, SymShape::of(std::move(out)));
  return Status();
}

Status tile(InferContext& ctx) {
  const SymShape& in = ctx.shape(0);
  if (!in.rank_known) return Status();
  std::optional<std::vector<int64_t>> repeats = ctx.ints(1);
  if (!repeats) {
    ctx.set_shape(0, SymShape::of_rank(in.rank()));
    return Status();
  }
  if (repeats->size() != in.rank())
    return ctx.conflict("repeats has ", repeats->size(), " entries for input ", in.text());
  SymShape out = in;
  for (size_t i = 0; i < in.rank(); ++i) out.dims[i] = scaled(in.dims[i], (*repeats)[i]);
  ctx.set_shape(0, std::move(out));
  return Status();
}

Status pad(InferContext& ctx) {
  const SymShape& in = ctx.shape(0);
  if (!in.rank_known) return Status();
  std::optional<std::vector<int64_t>> pads =
      ctx.opset() < 11 ? std::optional(ctx.attrs().get_ints(ctx.opset() < 2 ? "paddings" : "pads"))
                       : ctx.ints(1);
  std::optional<std::vector<int64_t>> axes = std::vector<int64_t>{};
  if (ctx.opset() >= 18 && ctx.has_input(3)) axes = ctx.ints(3);
  if (!pads || !axes) {
    ctx.set_shape(0, SymShape::of_rank(in.rank()));
    return Status();
  }
  if (axes->empty())
    for (size_t i = 0; i < in.rank(); ++i) axes->push_back(int64_t(i));
  if (pads->size() != 2 * axes->size())
    return ctx.conflict("pads has ", pads->size(), " entries for ", axes->size(), " axes");
  SymShape out = in;
  for (size_t k = 0; k < axes->size(); ++k) {
    NXRT_ASSIGN_OR_RETURN(size_t i, axis_index((*axes)[k], in.rank()));
    const std::optional<int64_t> grow = checked_add((*pads)[k], (*pads)[k + axes->size()]);
    const SymDim& d = in.dims[i];
    const std::optional<int64_t> size =
        grow && d.known() ? checked_add(d.value, *grow) : std::nullopt;
    if (size && *size < 0)
      return ctx.conflict("pads ", *grow, " on axis ", i, " of ", in.text(),
                          " leave a negative size");
    out.dims[i] = d.known() ? dim_or_unknown(size) : grow == 0 ? d : SymDim{};
  }
  ctx.set_shape(0, std::move(out));
  return Status();
}

Status range(InferContext& ctx) {
  ctx.set_shape(0, SymShape::of_rank(1));
  std::optional<std::vector<double>> start = ctx.numbers(0), limit = ctx.numbers(1),
                                     delta = ctx.numbers(2);
  if (!start || !limit || !delta || start->size() != 1 || limit->size() != 1 || delta->size() != 1)
    return Status();
  const double s = (*start)[0], l = (*limit)[0], d = (*delta)[0];
  if (d == 0) return ctx.conflict("delta is 0");
  const double count = std::max(0.0, std::ceil((l - s) / d));
  if (!(count < 1e15)) return ctx.conflict("the range holds ", count, " elements");
  ctx.set_shape(0, SymShape::of_ints(std::vector<int64_t>{int64_t(count)}));
  if (!(std::fabs(s) < 9e18) || !(std::fabs(d) < 9e18)) return Status();
  std::optional<std::vector<int64_t>> is = ctx.ints(0);
  if (is && ctx.ints(2) && size_t(count) <= kMaxTrackedElements) {
    std::vector<SymDim> values;
    for (int64_t i = 0; i < int64_t(count); ++i)
      values.push_back(dim_or_unknown(checked_add(int64_t(s), i * int64_t(d))));
    set_elements(ctx, std::move(values));
  }
  return Status();
}

Status depth_space(InferContext& ctx) {
  const SymShape& in = ctx.shape(0);
  if (!in.rank_known) return Status();
  if (in.rank() != 4) return ctx.conflict("input ", in.text(), " is not 4-D");
  const int64_t b = ctx.attrs().get_int("blocksize", 0);
  if (b <= 0 || b > (int64_t(1) << 31)) return ctx.conflict("blocksize ", b, " is out of range");
  if (ctx.node().op_type == "DepthToSpace") {
    NXRT_ASSIGN_OR_RETURN(SymDim c, divided(in.dims[1], b * b, "blocksize squared"));
    ctx.set_shape(0, SymShape::of({in.dims[0], c, scaled(in.dims[2], b), scaled(in.dims[3], b)}));
    return Status();
  }
  NXRT_ASSIGN_OR_RETURN(SymDim h, divided(in.dims[2], b, "blocksize"));
  NXRT_ASSIGN_OR_RETURN(SymDim w, divided(in.dims[3], b, "blocksize"));
  ctx.set_shape(0, SymShape::of({in.dims[0], scaled(in.dims[1], b * b), h, w}));
  return Status();
}

Status one_hot(InferContext& ctx) {
  const SymShape& indices = ctx.shape(0);
  if (!indices.rank_known) return Status();
  const size_t rank = indices.rank() + 1;
  NXRT_ASSIGN_OR_RETURN(size_t axis, axis_index(ctx.attrs().get_int("axis", -1), rank));
  SymDim depth;
  if (std::optional<std::vector<double>> d = ctx.numbers(1); d && d->size() == 1) {
    if (!((*d)[0] >= 1)) return ctx.conflict("depth ", (*d)[0], " is below 1");
    if (!((*d)[0] < 9e18)) return Status();
    depth = SymDim::of(int64_t((*d)[0]));
  }
  std::vector<SymDim> out = indices.dims;
  out.insert(out.begin() + ptrdiff_t(axis), depth);
  ctx.set_shape(0, SymShape::of(std::move(out)));
  return Status();
}

Status non_zero(InferContext& ctx) {
  SymShape out = SymShape::of_rank(2);
  if (ctx.shape(0).rank_known) out.dims[0] = SymDim::of(int64_t(ctx.shape(0).rank()));
  ctx.set_shape(0, std::move(out));
  return Status();
}

Status non_max_suppression(InferContext& ctx) {
  ctx.set_shape(0, SymShape::of({SymDim{}, SymDim::of(3)}));
  return Status();
}

Status top_k(InferContext& ctx) {
  const SymShape& in = ctx.shape(0);
  if (!in.rank_known) return Status();
  NXRT_ASSIGN_OR_RETURN(size_t axis, axis_index(ctx.attrs().get_int("axis", -1), in.rank()));
  SymDim k;
  if (ctx.opset() < 10) {
    k = SymDim::of(ctx.attrs().get_int("k", 0));
  } else if (std::optional<std::vector<int64_t>> given = ctx.ints(1); given && given->size() == 1) {
    k = SymDim::of((*given)[0]);
  }
  if (k.known() && in.dims[axis].known() && k.value > in.dims[axis].value)
    return ctx.conflict("k ", k.value, " exceeds axis ", axis, " of ", in.text());
  SymShape out = in;
  out.dims[axis] = k;
  ctx.set_shape(0, out);
  ctx.set_shape(1, out);
  return Status();
}

}  // namespace nxrt::ops::rules
