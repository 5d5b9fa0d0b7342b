#include "ops/sym_shape.h"

#include <limits>

namespace nxrt::ops {

std::string SymDim::text() const {
  if (known()) return std::to_string(value);
  return symbol.empty() ? "?" : symbol;
}

SymShape SymShape::of_ints(std::span<const int64_t> values) {
  SymShape s = of_rank(values.size());
  for (size_t i = 0; i < values.size(); ++i) s.dims[i] = SymDim::of(values[i]);
  return s;
}

bool SymShape::fully_known() const {
  if (!rank_known) return false;
  for (const SymDim& d : dims)
    if (!d.known()) return false;
  return true;
}

std::optional<std::vector<int64_t>> SymShape::ints() const {
  if (!fully_known()) return std::nullopt;
  std::vector<int64_t> out;
  out.reserve(dims.size());
  for (const SymDim& d : dims) out.push_back(d.value);
  return out;
}

std::optional<int64_t> SymShape::numel() const {
  if (!fully_known()) return std::nullopt;
  int64_t n = 1;
  for (const SymDim& d : dims) {
    if (d.value != 0 && n > std::numeric_limits<int64_t>::max() / d.value) return std::nullopt;
    n *= d.value;
  }
  return n;
}

std::string SymShape::text() const {
  if (!rank_known) return "?";
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ",";
    s += dims[i].text();
  }
  return s + "]";
}

std::optional<std::vector<int64_t>> ValueFacts::int_elements() const {
  if (!elements) return std::nullopt;
  std::vector<int64_t> out;
  out.reserve(elements->size());
  for (const SymDim& d : *elements) {
    if (!d.known()) return std::nullopt;
    out.push_back(d.value);
  }
  return out;
}

namespace {

// One output dimension of numpy broadcasting.
Expected<SymDim> broadcast_dim(const SymDim& a, const SymDim& b) {
  if (a.known() && a.value == 1) return b;
  if (b.known() && b.value == 1) return a;
  if (a.known() && b.known()) {
    if (a.value != b.value) return invalid_argument("dimensions ", a.value, " and ", b.value);
    return a;
  }
  // A number other than 1 decides it: the other side must equal it or be 1.
  if (a.known()) return a;
  if (b.known()) return b;
  if (a.same_as(b)) return a;
  return SymDim{};
}

}  // namespace

Expected<SymShape> broadcast_shapes(const SymShape& a, const SymShape& b) {
  if (!a.rank_known || !b.rank_known) return SymShape::unknown();
  const size_t rank = std::max(a.rank(), b.rank());
  SymShape out = SymShape::of_rank(rank);
  for (size_t i = 0; i < rank; ++i) {
    const size_t from_end = rank - 1 - i;
    SymDim da = from_end < a.rank() ? a.dims[a.rank() - 1 - from_end] : SymDim::of(1);
    SymDim db = from_end < b.rank() ? b.dims[b.rank() - 1 - from_end] : SymDim::of(1);
    Expected<SymDim> d = broadcast_dim(da, db);
    if (!d.ok())
      return invalid_argument("shapes ", a.text(), " and ", b.text(),
                              " do not broadcast: ", d.status().message(), " at axis ", i);
    out.dims[i] = std::move(*d);
  }
  return out;
}

Expected<SymShape> merge_shapes(const SymShape& a, const SymShape& b) {
  if (!a.rank_known) return b;
  if (!b.rank_known) return a;
  if (a.rank() != b.rank())
    return invalid_argument("rank ", a.rank(), " ", a.text(), " against rank ", b.rank(), " ",
                            b.text());
  SymShape out = a;
  for (size_t i = 0; i < a.rank(); ++i) {
    const SymDim& da = a.dims[i];
    const SymDim& db = b.dims[i];
    if (da.known() && db.known() && da.value != db.value)
      return invalid_argument(a.text(), " against ", b.text(), " at axis ", i);
    if (!da.known() && (db.known() || da.is_unknown())) out.dims[i] = db;
  }
  return out;
}

SymDim product(std::span<const SymDim> dims) {
  int64_t known = 1;
  const SymDim* symbolic = nullptr;
  for (const SymDim& d : dims) {
    if (d.known()) {
      if (d.value != 0 && known > std::numeric_limits<int64_t>::max() / d.value) return {};
      known *= d.value;
    } else if (d.symbol.empty() || symbolic) {
      return {};
    } else {
      symbolic = &d;
    }
  }
  if (!symbolic) return SymDim::of(known);
  if (known == 0) return SymDim::of(0);
  return known == 1 ? *symbolic : SymDim{};
}

}  // namespace nxrt::ops
