// Tensor dimensions. Dims live inline up to kInlineRank so the hot path does not
// allocate for the ranks real models use; larger ranks spill to the heap.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace nxrt {

class Shape {
 public:
  static constexpr size_t kInlineRank = 8;

  Shape() = default;
  Shape(std::initializer_list<int64_t> dims) { assign(dims.begin(), dims.end()); }
  explicit Shape(std::span<const int64_t> dims) { assign(dims.begin(), dims.end()); }
  explicit Shape(const std::vector<int64_t>& dims) { assign(dims.begin(), dims.end()); }
  Shape(const Shape& other) { copy_from(other); }
  Shape& operator=(const Shape& other) {
    if (this != &other) copy_from(other);
    return *this;
  }
  // Moves take a heap array over and copy only the dims in use: every Tensor built from a
  // Shape, and every Tensor moved, goes through these (without them each was a copy).
  Shape(Shape&& other) noexcept { take(other); }
  Shape& operator=(Shape&& other) noexcept {
    if (this != &other) take(other);
    return *this;
  }

  template <typename It>
  void assign(It first, It last) {
    const size_t n = size_t(std::distance(first, last));
    if (n <= kInlineRank && !heap_) {
      // A bounded loop: an open one became a memmove call, which cost more than the few
      // dims it copies (shapes are made on every node of every run).
      for (size_t i = 0; i < kInlineRank; ++i)
        if (i < n) inline_[i] = *first++;
      rank_ = n;
      return;
    }
    resize(n);
    std::copy(first, last, data());
  }
  void resize(size_t rank, int64_t fill = 0) {
    if (rank > kInlineRank && rank > heap_capacity_) {
      auto grown = std::make_unique<int64_t[]>(rank);
      std::copy(data(), data() + rank_, grown.get());
      heap_ = std::move(grown);
      heap_capacity_ = rank;
    }
    for (size_t i = rank_; i < rank; ++i) data()[i] = fill;
    rank_ = rank;
  }
  void push_back(int64_t dim) {
    resize(rank_ + 1);
    data()[rank_ - 1] = dim;
  }

  size_t size() const { return rank_; }
  size_t rank() const { return rank_; }
  bool empty() const { return rank_ == 0; }
  int64_t* data() { return heap_ ? heap_.get() : inline_; }
  const int64_t* data() const { return heap_ ? heap_.get() : inline_; }
  int64_t& operator[](size_t i) { return data()[i]; }
  int64_t operator[](size_t i) const { return data()[i]; }
  int64_t back() const { return data()[rank_ - 1]; }
  const int64_t* begin() const { return data(); }
  const int64_t* end() const { return data() + rank_; }
  int64_t* begin() { return data(); }
  int64_t* end() { return data() + rank_; }
  std::span<const int64_t> span() const { return {data(), rank_}; }
  std::vector<int64_t> to_vector() const { return {begin(), end()}; }

  // Product of all dims (1 for a scalar). Callers validate dims first (see checked_numel).
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : *this) n *= d;
    return n;
  }
  // Product of dims [first, last).
  int64_t product(size_t first, size_t last) const {
    int64_t n = 1;
    for (size_t i = first; i < last; ++i) n *= data()[i];
    return n;
  }

  friend bool operator==(const Shape& a, const Shape& b) {
    // A plain loop: ranks are small, and std::equal became a memcmp call.
    if (a.size() != b.size()) return false;
    for (size_t d = 0; d < a.size(); ++d)
      if (a[d] != b[d]) return false;
    return true;
  }

  std::string to_string() const;  // "[2,3,4]"

 private:
  void copy_from(const Shape& other) {
    if (!other.heap_ && !heap_) {
      std::memcpy(inline_, other.inline_, sizeof inline_);  // fixed size: inlined
      rank_ = other.rank_;
      return;
    }
    assign(other.begin(), other.end());
  }

  // Leaves `other` empty.
  void take(Shape& other) noexcept {
    if (other.heap_) {
      heap_ = std::move(other.heap_);
      heap_capacity_ = other.heap_capacity_;
    } else {
      heap_.reset();
      heap_capacity_ = 0;
      std::memcpy(inline_, other.inline_, sizeof inline_);  // fixed size: inlined
    }
    rank_ = other.rank_;
    other.heap_capacity_ = 0;
    other.rank_ = 0;
  }

  // Every Shape under kInlineRank copies all of it (a fixed-size copy is a few vector
  // moves), so it is always initialized.
  int64_t inline_[kInlineRank] = {};
  std::unique_ptr<int64_t[]> heap_;
  size_t heap_capacity_ = 0;
  size_t rank_ = 0;
};

// Element count with overflow and negative-dim checks; -1 on failure.
int64_t checked_numel(std::span<const int64_t> dims);

// Normalises a possibly negative axis into [0, rank); false when out of range.
inline bool normalize_axis(int64_t& axis, int64_t rank) {
  if (axis < -rank || axis >= rank) return false;
  if (axis < 0) axis += rank;
  return true;
}

}  // namespace nxrt
