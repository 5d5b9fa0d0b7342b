// Shapes as shape inference knows them before any data flows: each dimension is a number,
// a symbol shared with other dimensions ("batch", from the model's declared inputs), or
// unknown; the rank itself may be unknown. Small integer tensors (what Shape, Gather and
// Concat pass along to Reshape or Expand) also carry their elements in the same form, so
// "reshape x to [batch, -1, 64]" resolves without running the graph.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"

namespace nxrt::ops {

// A dimension, or an element of a tracked integer tensor (which may be negative: the -1
// of a Reshape target).
struct SymDim {
  bool has_value = false;
  int64_t value = 0;   // the number, when has_value
  std::string symbol;  // when the number is not known: a name, or empty for unknown

  static SymDim of(int64_t v) { return SymDim{true, v, {}}; }
  static SymDim named(std::string name) { return SymDim{false, 0, std::move(name)}; }
  bool known() const { return has_value; }
  bool is_unknown() const { return !has_value && symbol.empty(); }
  // Provably the same size: equal numbers or the same symbol.
  bool same_as(const SymDim& other) const {
    return known() ? value == other.value : !symbol.empty() && symbol == other.symbol;
  }
  std::string text() const;  // "3", "batch" or "?"
};

struct SymShape {
  bool rank_known = false;
  std::vector<SymDim> dims;

  static SymShape unknown() { return {}; }
  static SymShape of_rank(size_t rank) { return SymShape{true, std::vector<SymDim>(rank)}; }
  static SymShape of(std::vector<SymDim> d) { return SymShape{true, std::move(d)}; }
  static SymShape of_ints(std::span<const int64_t> values);
  static SymShape scalar() { return SymShape{true, {}}; }

  size_t rank() const { return dims.size(); }
  // Every dimension a number.
  bool fully_known() const;
  std::optional<std::vector<int64_t>> ints() const;
  // Element count when every dimension is a number.
  std::optional<int64_t> numel() const;
  std::string text() const;  // "[1,3,batch,?]", or "?" when the rank is unknown
};

// What shape inference knows of one value.
struct ValueFacts {
  SymShape shape;
  // For integer tensors with few elements: the elements in row-major order, each a number
  // or a symbolic size (the output of Shape on a value of shape [batch, 3] is [batch, 3]).
  std::optional<std::vector<SymDim>> elements;

  // The elements as numbers, when all are known.
  std::optional<std::vector<int64_t>> int_elements() const;
};

// Dimension arithmetic that cannot overflow: nullopt when the result does not fit (sizes
// come from the model file, which may declare any int64).
inline std::optional<int64_t> checked_mul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}
inline std::optional<int64_t> checked_add(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}
inline std::optional<int64_t> checked_sub(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_sub_overflow(a, b, &r)) return std::nullopt;
  return r;
}
// A number or unknown.
inline SymDim dim_or_unknown(std::optional<int64_t> v) { return v ? SymDim::of(*v) : SymDim{}; }

// Tensors this small carry their elements (shape computations stay far below it).
inline constexpr size_t kMaxTrackedElements = 64;

// Numpy broadcasting of two shapes; an error naming both when they cannot broadcast.
Expected<SymShape> broadcast_shapes(const SymShape& a, const SymShape& b);

// Merges two descriptions of one value (inferred and declared): numbers win over symbols,
// symbols over unknown; an error when two numbers differ or the ranks do.
Expected<SymShape> merge_shapes(const SymShape& a, const SymShape& b);

// The size of a product of dimensions: a number when all are numbers, the symbol when
// exactly one is a symbol and the others are 1, unknown otherwise.
SymDim product(std::span<const SymDim> dims);

}  // namespace nxrt::ops
