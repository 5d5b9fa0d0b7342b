// Helpers shared by CPU kernels: broadcasting, reading shape-like inputs, factories.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <type_traits>
#include <vector>

#include "core/half.h"
#include "core/parallel.h"
#include "core/scratch.h"
#include "ep/kernel.h"

namespace nxrt::cpu {

// float16/bfloat16 (or any float-convertible) values widened to float.
template <typename T>
std::vector<float> widen(const T* p, int64_t n) {
  std::vector<float> out(size_t(n > 0 ? n : 0));
  for (size_t i = 0; i < out.size(); ++i) out[i] = float(p[i]);
  return out;
}

// x[0] + ... + x[n - 1] in eight independent partial sums: the compiler vectorizes it
// without reassociating on its own, and it rounds off less than one running sum.
template <typename A>
A partial_sum(const A* x, int64_t n) {
  A part[8] = {};
  int64_t k = 0;
  for (; k + 8 <= n; k += 8)
    for (int j = 0; j < 8; ++j) part[j] += x[k + j];
  for (; k < n; ++k) part[0] += x[k];
  return ((part[0] + part[1]) + (part[2] + part[3])) + ((part[4] + part[5]) + (part[6] + part[7]));
}

// A value computed in a wider type A stored as T: float16 and bfloat16 round from float,
// every other type converts directly.
template <typename T, typename A>
inline T narrow(A v) {
  if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>)
    return T(float(v));
  else
    return T(v);
}

// A float, float16 or bfloat16 tensor's values as float: its own data for float (no
// copy), else widened into `wide`; nullptr for other types. For packing constant weights.
inline const float* float_data(const Tensor& t, std::vector<float>& wide) {
  switch (t.dtype()) {
    case DataType::kFloat:
      return t.data<float>();
    case DataType::kFloat16:
      wide = widen(t.data<Float16>(), t.numel());
      return wide.data();
    case DataType::kBFloat16:
      wide = widen(t.data<BFloat16>(), t.numel());
      return wide.data();
    default:
      return nullptr;
  }
}

// A vector whose first N elements live inline, for the per-call index lists of compute()
// (axes, starts, strides, per-dim counters): ranks real models use fit, so a warm run
// does not touch the heap; longer lists spill to it. Trivially copyable elements only.
template <typename T, size_t N = 8>
class SmallVec {
  static_assert(std::is_trivially_copyable_v<T>, "SmallVec holds plain values");

 public:
  SmallVec() = default;
  explicit SmallVec(size_t n, const T& fill = T()) { resize(n, fill); }
  SmallVec(std::initializer_list<T> list) { assign(list.begin(), list.end()); }
  SmallVec(const std::vector<T>& v) { assign(v.begin(), v.end()); }  // NOLINT: a copy
  SmallVec(const SmallVec& other) { assign(other.begin(), other.end()); }
  SmallVec& operator=(const SmallVec& other) {
    if (this != &other) assign(other.begin(), other.end());
    return *this;
  }
  SmallVec& operator=(const std::vector<T>& v) {
    assign(v.begin(), v.end());
    return *this;
  }

  template <typename It>
  void assign(It first, It last) {
    size_ = 0;
    reserve(size_t(std::distance(first, last)));
    for (; first != last; ++first) data()[size_++] = *first;
  }
  void assign(size_t n, const T& value) {
    size_ = 0;
    resize(n, value);
  }
  void reserve(size_t n) {
    if (n <= capacity()) return;
    auto grown = std::make_unique<T[]>(n);
    std::copy(data(), data() + size_, grown.get());
    heap_ = std::move(grown);
    heap_capacity_ = n;
  }
  void resize(size_t n, const T& fill = T()) {
    reserve(n);
    for (size_t i = size_; i < n; ++i) data()[i] = fill;
    size_ = n;
  }
  void push_back(const T& value) {
    if (size_ == capacity()) reserve(size_ * 2);
    data()[size_++] = value;
  }
  void clear() { size_ = 0; }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  size_t capacity() const { return heap_ ? heap_capacity_ : N; }
  T* data() { return heap_ ? heap_.get() : inline_; }
  const T* data() const { return heap_ ? heap_.get() : inline_; }
  T& operator[](size_t i) { return data()[i]; }
  const T& operator[](size_t i) const { return data()[i]; }
  T& back() { return data()[size_ - 1]; }
  const T& back() const { return data()[size_ - 1]; }
  T* begin() { return data(); }
  T* end() { return data() + size_; }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size_; }
  operator std::span<const T>() const { return {data(), size_}; }  // NOLINT

 private:
  T inline_[N] = {};
  size_t size_ = 0;
  size_t heap_capacity_ = 0;
  std::unique_ptr<T[]> heap_;
};

// Whether the node names output i (optional outputs may be omitted or named "").
inline bool output_wanted(const KernelInit& init, size_t i) {
  return i < init.node.outputs.size() && !init.node.outputs[i].empty();
}

// A kernel's per-thread scratch (core/scratch.h): `slot` (0..3) tells apart buffers
// needed at the same time. Only leaf code (no subgraphs, no other kernels while it is in
// use) may hold it; the GEMM and vector routines a kernel calls use slots of their own.
template <typename T>
T* thread_scratch(size_t count, size_t slot = 0) {
  return scratch<T>(ScratchSlot(size_t(ScratchSlot::kKernel0) + (slot & 3)), count);
}

// numpy broadcasting of several shapes; false when they are incompatible.
bool broadcast_shapes(std::span<const Shape* const> shapes, Shape& out);

// Iteration plan for an elementwise op over broadcast inputs. Adjacent dims that
// broadcast the same way are merged so the inner loop is as long as possible. The lists
// are inline for the ranks and input counts real models use, so planning per run does
// not allocate.
struct BroadcastPlan {
  SmallVec<int64_t> dims;         // collapsed output dims (at least one)
  SmallVec<int64_t, 24> strides;  // [d * inputs + k]: input k's element stride on dim d (0 = bcast)
  size_t inputs = 0;
  int64_t numel = 0;
  int64_t stride(size_t k, size_t d) const { return strides[d * inputs + k]; }
};
BroadcastPlan make_broadcast_plan(const Shape& out, std::span<const Shape* const> inputs);

// Calls body(offsets, out_offset, count, steps) for inner runs [run_begin, run_end) (a
// run is one stretch of the last collapsed dim); offsets[k] is the element offset into
// input k and steps[k] its stride (0 or 1, or the merged stride).
template <typename Body>
void for_each_broadcast_run(const BroadcastPlan& plan, int64_t run_begin, int64_t run_end,
                            Body&& body) {
  const size_t rank = plan.dims.size();
  const size_t n_in = plan.inputs;
  if (plan.numel == 0 || run_begin >= run_end) return;
  const int64_t inner = plan.dims[rank - 1];
  SmallVec<int64_t> offsets(n_in, 0), steps(n_in), index(rank, 0);
  for (size_t k = 0; k < n_in; ++k) steps[k] = plan.stride(k, rank - 1);
  // The odometer at run_begin.
  int64_t rest = run_begin;
  for (size_t d = rank - 1; d-- > 0;) {
    index[d] = rest % plan.dims[d];
    rest /= plan.dims[d];
    for (size_t k = 0; k < n_in; ++k) offsets[k] += index[d] * plan.stride(k, d);
  }
  const int64_t end = std::min(plan.numel, run_end * inner);
  for (int64_t out = run_begin * inner; out < end; out += inner) {
    body(offsets.data(), out, inner, steps.data());
    // advance the odometer over the outer dims
    for (size_t d = rank - 1; d-- > 0;) {
      if (++index[d] < plan.dims[d]) {
        for (size_t k = 0; k < n_in; ++k) offsets[k] += plan.stride(k, d);
        break;
      }
      for (size_t k = 0; k < n_in; ++k) offsets[k] -= plan.stride(k, d) * (plan.dims[d] - 1);
      index[d] = 0;
    }
  }
}

// All runs.
template <typename Body>
void for_each_broadcast_run(const BroadcastPlan& plan, Body&& body) {
  const int64_t inner = plan.dims.empty() ? 1 : plan.dims[plan.dims.size() - 1];
  for_each_broadcast_run(plan, 0, inner > 0 ? plan.numel / inner : 0, body);
}

// out = fn(a, b) elementwise over numpy-broadcast inputs, written to output 0. `expect`,
// when given, is the output shape the op requires (PRelu: the first input's shape).
template <typename A, typename B, typename Out, typename Fn>
Status broadcast_binary(KernelContext& ctx, const Tensor& a, const Tensor& b, Fn fn,
                        const Shape* expect = nullptr) {
  const Shape* shapes[] = {&a.shape(), &b.shape()};
  const bool same = a.shape() == b.shape();
  Shape out_shape;
  if (same) out_shape = a.shape();  // the common case needs no broadcasting rules
  if ((!same && !broadcast_shapes(shapes, out_shape)) || (expect && !(out_shape == *expect)))
    return invalid_argument(
        "shapes ", a.shape().to_string(), " and ", b.shape().to_string(),
        expect ? " do not broadcast to the first input's shape" : " cannot be broadcast together");
  NXRT_ASSIGN_OR_RETURN(Tensor * out, ctx.output(0, out_shape));
  const A* pa = a.data<A>();
  const B* pb = b.data<B>();
  Out* po = out->data<Out>();
  // Same shapes, or a scalar on one side: one flat loop, split across the run's threads
  // when large (these ops are memory-bound; a piece is at least 64K elements).
  const int64_t n = out->numel();
  const bool scalar_b = !same && b.numel() == 1 && a.shape() == out_shape;
  const bool scalar_a = !same && !scalar_b && a.numel() == 1 && b.shape() == out_shape;
  if (same || scalar_a || scalar_b) {
    const int64_t pieces = int64_t(parallel_pieces(double(n), double(1 << 16)));
    const int64_t block = (n + pieces - 1) / pieces;
    parallel_for(size_t(pieces), [&](size_t piece) {
      const int64_t begin = int64_t(piece) * block, end = std::min(n, begin + block);
      if (same) {
        for (int64_t i = begin; i < end; ++i) po[i] = fn(pa[i], pb[i]);
      } else if (scalar_b) {
        const B yv = *pb;
        for (int64_t i = begin; i < end; ++i) po[i] = fn(pa[i], yv);
      } else {
        const A xv = *pa;
        for (int64_t i = begin; i < end; ++i) po[i] = fn(xv, pb[i]);
      }
    });
    return Status();
  }
  const BroadcastPlan plan = make_broadcast_plan(out_shape, shapes);
  auto run = [&](const int64_t* off, int64_t o, int64_t count, const int64_t* step) {
    const A* x = pa + off[0];
    const B* y = pb + off[1];
    Out* z = po + o;
    // The common runs (both contiguous, or one side a broadcast scalar) get loops the
    // compiler can vectorize; anything else walks with strides.
    if (step[0] == 1 && step[1] == 1) {
      for (int64_t i = 0; i < count; ++i) z[i] = fn(x[i], y[i]);
    } else if (step[0] == 1 && step[1] == 0) {
      const B yv = *y;
      for (int64_t i = 0; i < count; ++i) z[i] = fn(x[i], yv);
    } else if (step[0] == 0 && step[1] == 1) {
      const A xv = *x;
      for (int64_t i = 0; i < count; ++i) z[i] = fn(xv, y[i]);
    } else {
      for (int64_t i = 0; i < count; ++i) z[i] = fn(x[i * step[0]], y[i * step[1]]);
    }
  };
  // Large outputs: whole runs split across the run's threads.
  const int64_t inner = plan.dims[plan.dims.size() - 1];
  const int64_t runs = inner > 0 ? n / inner : 0;
  const int64_t pieces =
      std::min<int64_t>(int64_t(parallel_pieces(double(n), double(1 << 16))), runs);
  if (pieces <= 1) {
    for_each_broadcast_run(plan, run);
    return Status();
  }
  const int64_t per_piece = (runs + pieces - 1) / pieces;
  parallel_for(size_t(pieces), [&](size_t piece) {
    const int64_t r0 = int64_t(piece) * per_piece;
    for_each_broadcast_run(plan, r0, std::min(runs, r0 + per_piece), run);
  });
  return Status();
}

// Reads a 1-D (or scalar) int32/int64 tensor such as a shape, axes or pads input.
// Copies an int32/int64 tensor's values into `out` (std::vector or SmallVec of int64_t);
// false, leaving `out` as it was, for other dtypes.
template <typename Out>
bool copy_int_values(const Tensor& t, Out& out) {
  const int64_t n = t.numel();
  if (t.dtype() == DataType::kInt64) {
    out.resize(size_t(n));
    for (int64_t i = 0; i < n; ++i) out[size_t(i)] = t.data<int64_t>()[i];
  } else if (t.dtype() == DataType::kInt32) {
    out.resize(size_t(n));
    for (int64_t i = 0; i < n; ++i) out[size_t(i)] = t.data<int32_t>()[i];
  } else {
    return false;
  }
  return true;
}

// Reads a 1-D (or scalar) int32/int64 tensor such as a shape, axes or pads input.
template <typename Out>
Status read_int_list(const Tensor& t, Out& out, const char* what) {
  if (t.rank() > 1)
    return invalid_argument(what, " must be a 1-D tensor, got shape ", t.shape().to_string());
  if (!copy_int_values(t, out))
    return invalid_argument(what, " must be int64 or int32, got ", dtype_name(t.dtype()));
  return Status();
}

// Makes a kernel object, boxed as the factory's result.
template <typename K, typename... Args>
Expected<KernelPtr> make_kernel(Args&&... args) {
  return KernelPtr(std::make_unique<K>(std::forward<Args>(args)...));
}

// Element type of input 0 unless it is missing; for ops whose output dtype follows it.
inline DataType first_input_type(const KernelInit& init) { return init.input_type(0); }

}  // namespace nxrt::cpu
