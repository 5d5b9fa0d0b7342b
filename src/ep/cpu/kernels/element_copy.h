// Helpers for the data-movement kernels (Concat, Split, Transpose, Slice, Gather*, Expand,
// Tile, Where): they move elements without looking at their values, so they dispatch on the
// element's byte size (one instantiation serves float, int32, uint32, ...) and treat strings
// apart, copying them element by element.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

#include "ep/cpu/kernels/common.h"

namespace nxrt::cpu {

// out[i * out_stride + j] = in[i + j * col_stride] for a rows x cols output, in square
// tiles so both the reads (down input columns) and the writes stay within cache.
template <typename T>
void transpose_2d(const T* in, T* out, int64_t rows, int64_t cols, int64_t col_stride,
                  int64_t out_stride) {
  constexpr int64_t kTile = 32;
  for (int64_t i0 = 0; i0 < rows; i0 += kTile) {
    const int64_t i1 = std::min(rows, i0 + kTile);
    for (int64_t j0 = 0; j0 < cols; j0 += kTile) {
      const int64_t j1 = std::min(cols, j0 + kTile);
      for (int64_t i = i0; i < i1; ++i) {
        T* o = out + i * out_stride;
        const T* s = in + i;
        for (int64_t j = j0; j < j1; ++j) o[j] = s[j * col_stride];
      }
    }
  }
}

template <typename T>
struct TypeTag {
  using type = T;
};

// Bytes one element occupies in memory (sizeof(std::string) for strings); 0 for types
// the movers cannot address (sub-byte types).
inline size_t element_bytes(DataType t) {
  return t == DataType::kString ? sizeof(std::string) : dtype_size(t);
}

// True when the movers can handle `t`.
inline bool movable_type(DataType t) { return t != DataType::kUndefined && element_bytes(t) != 0; }

// Calls fn(TypeTag<T>{}) with T = std::string or an unsigned integer of the element's
// size; returns fn's Status, or an error for types it cannot move.
template <typename Fn>
Status visit_by_element_size(DataType t, Fn&& fn) {
  if (t == DataType::kString) return fn(TypeTag<std::string>{});
  switch (dtype_size(t)) {
    case 1:
      return fn(TypeTag<uint8_t>{});
    case 2:
      return fn(TypeTag<uint16_t>{});
    case 4:
      return fn(TypeTag<uint32_t>{});
    case 8:
      return fn(TypeTag<uint64_t>{});
    case 16: {
      struct Pair {
        uint64_t lo, hi;
      };  // complex128
      return fn(TypeTag<Pair>{});
    }
    default:
      break;
  }
  return not_implemented("type ", tensor_type_name(t), " is not supported");
}

// Copies `count` contiguous elements (strings are assigned, everything else memcpy'd).
template <typename T>
inline void copy_run(const T* src, T* dst, int64_t count) {
  if constexpr (std::is_same_v<T, std::string>) {
    for (int64_t i = 0; i < count; ++i) dst[i] = src[i];
  } else {
    if (count > 0) std::memcpy(dst, src, size_t(count) * sizeof(T));
  }
}

// Copies `count` elements of `bytes` each; strings are copied as objects.
inline void copy_run(DataType t, size_t bytes, const void* src, int64_t src_index, void* dst,
                     int64_t dst_index, int64_t count) {
  copy_elements(t, static_cast<const char*>(src) + size_t(src_index) * bytes,
                static_cast<char*>(dst) + size_t(dst_index) * bytes, count);
}

}  // namespace nxrt::cpu
