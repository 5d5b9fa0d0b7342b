// Pad: constant, reflect, edge and wrap modes; pads from the attribute (opset < 11) or
// inputs (pads, constant_value, and from opset 18 axes). Negative pads crop.
#include <algorithm>
#include <string>
#include <type_traits>

#include "ep/cpu/kernels/common.h"

namespace nxrt::cpu {
namespace {

enum class PadMode { kConstant, kReflect, kEdge, kWrap };

// Input coordinate that output coordinate `o` reads along one dim, or -1 for the
// constant. `i = o - begin` is the position relative to the unpadded input; because
// negative pads only crop what positive pads would otherwise add, the mapping is the
// same for both signs.
int64_t map_coord(int64_t o, int64_t begin, int64_t n, PadMode mode) {
  const int64_t i = o - begin;
  if (i >= 0 && i < n) return i;
  switch (mode) {
    case PadMode::kConstant:
      return -1;
    case PadMode::kEdge:
      return i < 0 ? 0 : n - 1;
    case PadMode::kWrap:
      if (i < 0 && i >= -n) return i + n;
      if (i >= n && i < 2 * n) return i - n;
      return ((i % n) + n) % n;
    case PadMode::kReflect: {
      if (n == 1) return 0;
      // One reflection (pads shorter than the axis, the usual case) needs no division.
      if (i < 0 && -i < n) return -i;
      if (i >= n && i < 2 * n - 1) return 2 * (n - 1) - i;
      const int64_t period = 2 * (n - 1);
      int64_t m = ((i % period) + period) % period;
      return m < n ? m : period - m;
    }
  }
  return -1;
}

template <typename T>
T value_from_double(double v) {
  if constexpr (std::is_same_v<T, std::string>)
    return std::string();
  else if constexpr (std::is_same_v<T, bool>)
    return v != 0;
  else
    return T(v);
}

class PadKernel final : public Kernel {
 public:
  PadKernel(DataType dtype, PadMode mode, bool from_inputs, std::vector<int64_t> attr_pads,
            double attr_value)
      : dtype_(dtype),
        mode_(mode),
        from_inputs_(from_inputs),
        attr_pads_(std::move(attr_pads)),
        attr_value_(attr_value) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    const int64_t rank = int64_t(x.rank());
    SmallVec<int64_t, 16> pads = attr_pads_;
    if (from_inputs_) NXRT_RETURN_IF_ERROR(read_int_list(*ctx.input(1), pads, "pads input"));
    // Expand pads given for `axes` to every dim: [begins..., ends...].
    SmallVec<int64_t, 16> full(size_t(2 * rank), 0);
    const Tensor* axes_t = from_inputs_ ? ctx.input(3) : nullptr;
    if (axes_t) {
      SmallVec<int64_t> axes;
      NXRT_RETURN_IF_ERROR(read_int_list(*axes_t, axes, "axes input"));
      if (pads.size() != 2 * axes.size())
        return invalid_argument("pads has ", pads.size(), " values, expected 2 * ", axes.size(),
                                " (axes)");
      SmallVec<bool> seen(size_t(rank), false);
      for (size_t k = 0; k < axes.size(); ++k) {
        int64_t a = axes[k];
        if (!normalize_axis(a, rank))
          return invalid_argument("axis ", axes[k], " is out of range for rank ", rank);
        if (seen[size_t(a)]) return invalid_argument("axis ", axes[k], " appears twice");
        seen[size_t(a)] = true;
        full[size_t(a)] = pads[k];
        full[size_t(a + rank)] = pads[k + axes.size()];
      }
    } else {
      if (int64_t(pads.size()) != 2 * rank)
        return invalid_argument("pads has ", pads.size(), " values, expected ", 2 * rank,
                                " for input of shape ", x.shape().to_string());
      full = pads;
    }
    const Shape& in = x.shape();
    Shape out;
    for (int64_t d = 0; d < rank; ++d) {
      const int64_t b = full[size_t(d)], e = full[size_t(d + rank)];
      const int64_t limit = int64_t(1) << 50;
      if (b > limit || e > limit || b < -limit || e < -limit)
        return invalid_argument("pad ", b, "/", e, " on axis ", d, " is too large");
      const int64_t n = in[size_t(d)] + b + e;
      if (n < 0)
        return invalid_argument("pads ", b, "/", e, " crop more than the ", in[size_t(d)],
                                " elements of axis ", d);
      if (mode_ != PadMode::kConstant && in[size_t(d)] == 0 && n > 0)
        return invalid_argument("cannot pad empty axis ", d, " in a non-constant mode");
      out.push_back(n);
    }
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, out));
    if (y->numel() == 0) return Status();
    // Per-axis coordinate maps make every mode one gather loop. They live one after the
    // other in per-thread scratch, so a warm run does not allocate them.
    CoordMaps maps;
    size_t total = 0;
    for (int64_t d = 0; d < rank; ++d) {
      maps.start.push_back(total);
      total += size_t(out[size_t(d)]);
    }
    int64_t* coords = thread_scratch<int64_t>(total);
    maps.coords = coords;
    for (int64_t d = 0; d < rank; ++d) {
      int64_t* m = coords + maps.start[size_t(d)];
      const int64_t n = out[size_t(d)], begin = full[size_t(d)];
      if (d + 1 < rank) {
        for (int64_t o = 0; o < n; ++o) m[o] = map_coord(o, begin, in[size_t(d)], mode_);
        continue;
      }
      // The last axis' inside is copied whole (gather): only its borders need the map,
      // whose reflect and wrap modes take divisions per coordinate.
      const int64_t lo = std::clamp<int64_t>(begin, 0, n);
      const int64_t hi = std::clamp<int64_t>(begin + in[size_t(d)], lo, n);
      for (int64_t o = 0; o < lo; ++o) m[o] = map_coord(o, begin, in[size_t(d)], mode_);
      for (int64_t o = hi; o < n; ++o) m[o] = map_coord(o, begin, in[size_t(d)], mode_);
    }
    const Tensor* cv = from_inputs_ ? ctx.input(2) : nullptr;
    if (cv && cv->numel() > 1)
      return invalid_argument("constant_value must be a scalar, got shape ",
                              cv->shape().to_string());
    if (cv && cv->numel() == 1 && cv->dtype() != dtype_)
      return invalid_argument("constant_value has type ", dtype_name(cv->dtype()), ", expected ",
                              dtype_name(dtype_));
    switch (dtype_) {
      NXRT_CASES_ALL({
        const T fill = !from_inputs_              ? value_from_double<T>(attr_value_)
                       : (cv && cv->numel() == 1) ? cv->data<T>()[0]
                                                  : value_from_double<T>(0.0);
        gather<T>(x, *y, maps, fill, full[size_t(rank - 1)]);
      })
      default:
        return not_implemented("type ", tensor_type_name(dtype_), " is not supported");
    }
    return Status();
  }

 private:
  // Output coordinate -> input coordinate (-1: padding) per axis, axis d's map starting
  // at coords + start[d].
  struct CoordMaps {
    const int64_t* coords = nullptr;
    SmallVec<size_t> start;
    const int64_t* axis(size_t d) const { return coords + start[d]; }
  };

  template <typename T>
  // begin_last: the last axis' begin pad (its outputs [begin_last, begin_last + n) are
  // the input row, copied whole).
  static void gather(const Tensor& x, Tensor& y, const CoordMaps& maps, const T& fill,
                     int64_t begin_last) {
    const T* src = x.data<T>();
    T* dst = y.data<T>();
    const size_t rank = maps.start.size();
    if (rank == 0) {
      dst[0] = src[0];
      return;
    }
    const Shape& in = x.shape();
    const Shape& out = y.shape();
    SmallVec<int64_t> in_stride(rank, 1);
    for (size_t d = rank - 1; d-- > 0;) in_stride[d] = in_stride[d + 1] * in[d + 1];
    const int64_t* last = maps.axis(rank - 1);
    const int64_t row = out[rank - 1];
    const int64_t rows = y.numel() / row;
    const int64_t copy_lo = std::clamp<int64_t>(begin_last, 0, row);
    const int64_t copy_hi = std::clamp<int64_t>(begin_last + in[rank - 1], copy_lo, row);
    SmallVec<int64_t> idx(rank - 1, 0);
    for (int64_t r = 0; r < rows; ++r) {
      T* out_row = dst + r * row;
      bool inside = true;
      int64_t base = 0;
      for (size_t d = 0; d + 1 < rank; ++d) {
        const int64_t m = maps.axis(d)[idx[d]];
        if (m < 0) {
          inside = false;
          break;
        }
        base += m * in_stride[d];
      }
      if (!inside) {
        for (int64_t j = 0; j < row; ++j) out_row[j] = fill;
      } else {
        const T* in_row = src + base;
        auto mapped = [&](int64_t j0, int64_t j1) {
          for (int64_t j = j0; j < j1; ++j) {
            const int64_t m = last[j];
            out_row[j] = m >= 0 ? in_row[m] : fill;
          }
        };
        mapped(0, copy_lo);
        std::copy(in_row + (copy_lo - begin_last), in_row + (copy_hi - begin_last),
                  out_row + copy_lo);
        mapped(copy_hi, row);
      }
      for (size_t d = rank - 1; d-- > 0;) {
        if (++idx[d] < out[d]) break;
        idx[d] = 0;
      }
    }
  }

  DataType dtype_;
  PadMode mode_;
  bool from_inputs_;
  std::vector<int64_t> attr_pads_;
  double attr_value_;
};

}  // namespace

Expected<KernelPtr> create_pad(KernelInit& init) {
  AttrReader attrs(init.node);
  const std::string mode_name = attrs.get_string("mode", "constant");
  const bool from_inputs = init.opset >= 11;
  std::vector<int64_t> pads;
  double value = 0;
  if (!from_inputs) {
    // Opset 1 called the attribute "paddings".
    pads = attrs.require_ints(init.opset < 2 ? "paddings" : "pads");
    value = attrs.get_float("value", 0.0f);
  }
  NXRT_RETURN_IF_ERROR(attrs.status());
  PadMode mode;
  if (mode_name == "constant")
    mode = PadMode::kConstant;
  else if (mode_name == "reflect")
    mode = PadMode::kReflect;
  else if (mode_name == "edge")
    mode = PadMode::kEdge;
  else if (mode_name == "wrap")
    mode = PadMode::kWrap;
  else
    return init.error(StatusCode::kInvalidGraph, "unknown mode '", mode_name, "'");
  const DataType t = init.input_type(0);
  if (!is_float_type(t) && !is_integer_type(t) && t != DataType::kBool && t != DataType::kString)
    return init.unsupported_type(0);
  if (from_inputs && !init.has_input(1))
    return init.error(StatusCode::kInvalidGraph, "needs the pads input");
  init.set_all_outputs(t);
  return make_kernel<PadKernel>(t, mode, from_inputs, std::move(pads), value);
}

}  // namespace nxrt::cpu
