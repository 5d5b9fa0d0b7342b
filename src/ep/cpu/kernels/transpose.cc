// Transpose. Output dims whose input axes stay adjacent are merged and size-1 dims dropped
// first, so most real permutations reduce to a plain copy, contiguous row copies, or a
// (batched) 2-D transpose, which is done in cache-sized tiles. What remains walks the output
// in order with an odometer that keeps the input offset incrementally (no per-element
// division).
#include <algorithm>
#include <vector>

#include "core/parallel.h"
#include "ep/cpu/kernels/element_copy.h"

namespace nxrt::cpu {
namespace {

struct TransposePlan {
  SmallVec<int64_t> dims;     // merged output dims (at least one)
  SmallVec<int64_t> strides;  // input element stride of each merged output dim
};

TransposePlan plan_transpose(const Shape& in, std::span<const int64_t> perm) {
  const size_t rank = in.size();
  SmallVec<int64_t> in_stride(rank, 1);
  for (size_t d = rank; d-- > 1;) in_stride[d - 1] = in_stride[d] * in[d];
  TransposePlan p;
  for (size_t i = 0; i < rank; ++i) {
    const size_t a = size_t(perm[i]);
    const int64_t n = in[a];
    if (n == 1) continue;
    // The previous output dim is the input axis just outside this one: one run.
    if (p.dims.size() > 0 && p.strides.back() == in_stride[a] * n) {
      p.dims.back() *= n;
      p.strides.back() = in_stride[a];
    } else {
      p.dims.push_back(n);
      p.strides.push_back(in_stride[a]);
    }
  }
  if (p.dims.size() == 0) {
    p.dims.push_back(1);
    p.strides.push_back(1);
  }
  return p;
}

// Elements per piece of a transpose split over the run's threads (a copy of 128 KiB of
// floats, about 10 us).
constexpr double kMinTransposePiece = double(1 << 15);

template <typename T>
void transpose_typed(const T* src, T* dst, const TransposePlan& p, int64_t numel) {
  const size_t r = p.dims.size();
  const int64_t last = p.dims[r - 1];
  const int64_t last_stride = p.strides[r - 1];
  if (r == 1 && last_stride == 1) {
    const size_t pieces = parallel_pieces(double(numel), kMinTransposePiece);
    parallel_for(pieces, [&](size_t i) {
      const int64_t b = numel * int64_t(i) / int64_t(pieces);
      copy_run(src + b, dst + b, numel * int64_t(i + 1) / int64_t(pieces) - b);
    });
    return;
  }
  // Input's innermost axis second-to-last in the output: a batch of 2-D transposes.
  const bool tiled = r >= 2 && last_stride != 1 && p.strides[r - 2] == 1;
  const size_t outer_rank = r - (tiled ? 2 : 1);
  const int64_t inner = tiled ? p.dims[r - 2] * last : last;
  const int64_t steps = numel / inner;
  const size_t pieces =
      std::min<size_t>(parallel_pieces(double(numel), kMinTransposePiece), size_t(steps));
  parallel_for(pieces, [&](size_t piece) {
    const int64_t s0 = steps * int64_t(piece) / int64_t(pieces);
    const int64_t s1 = steps * int64_t(piece + 1) / int64_t(pieces);
    // The odometer at step s0 (outer dims, last fastest) and its input offset.
    SmallVec<int64_t> index(outer_rank, 0);
    int64_t offset = 0;
    for (int64_t rest = s0, d = int64_t(outer_rank) - 1; d >= 0; --d) {
      index[size_t(d)] = rest % p.dims[size_t(d)];
      rest /= p.dims[size_t(d)];
      offset += index[size_t(d)] * p.strides[size_t(d)];
    }
    for (int64_t step = s0; step < s1; ++step) {
      const T* in = src + offset;
      T* o = dst + step * inner;
      if (tiled) {
        transpose_2d(in, o, p.dims[r - 2], last, last_stride, last);
      } else if (last_stride == 1) {
        copy_run(in, o, last);
      } else {
        for (int64_t j = 0; j < last; ++j) o[j] = in[j * last_stride];
      }
      for (size_t d = outer_rank; d-- > 0;) {
        offset += p.strides[d];
        if (++index[d] < p.dims[d]) break;
        offset -= p.strides[d] * p.dims[d];
        index[d] = 0;
      }
    }
  });
}

class TransposeKernel final : public Kernel {
 public:
  TransposeKernel(DataType dtype, std::vector<int64_t> perm, bool has_perm)
      : dtype_(dtype), perm_(std::move(perm)), has_perm_(has_perm) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    const size_t rank = x.rank();
    SmallVec<int64_t> perm = perm_;
    if (!has_perm_) {
      perm.resize(rank);
      for (size_t i = 0; i < rank; ++i) perm[i] = int64_t(rank - 1 - i);
    }
    if (perm.size() != rank)
      return invalid_argument("perm has ", perm.size(), " entries but the input has rank ", rank);
    SmallVec<char> seen(rank, 0);
    Shape out_shape;
    out_shape.resize(rank);
    for (size_t i = 0; i < rank; ++i) {
      int64_t a = perm[i];
      if (!normalize_axis(a, int64_t(rank)) || seen[size_t(a)])
        return invalid_argument("perm ", Shape(perm_).to_string(),
                                " is not a permutation of the input's ", rank, " axes");
      seen[size_t(a)] = 1;
      perm[i] = a;
      out_shape[i] = x.shape()[size_t(a)];
    }
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, out_shape));
    const int64_t numel = x.numel();
    if (numel == 0) return Status();
    const TransposePlan plan =
        plan_transpose(x.shape(), std::span<const int64_t>(perm.data(), perm.size()));
    return visit_by_element_size(dtype_, [&](auto tag) {
      using T = typename decltype(tag)::type;
      transpose_typed(x.data<T>(), y->data<T>(), plan, numel);
      return Status();
    });
  }

 private:
  DataType dtype_;
  std::vector<int64_t> perm_;
  bool has_perm_;
};

}  // namespace

Expected<KernelPtr> create_transpose(KernelInit& init) {
  AttrReader attrs(init.node);
  const bool has_perm = attrs.has("perm");
  std::vector<int64_t> perm = attrs.get_ints("perm");
  NXRT_RETURN_IF_ERROR(attrs.status());
  const DataType t = init.input_type(0);
  if (!movable_type(t)) return init.unsupported_type(0);
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 1; i < sorted.size(); ++i)
    if (sorted[i] == sorted[i - 1])
      return init.error(StatusCode::kInvalidGraph, "perm repeats axis ", sorted[i]);
  init.set_all_outputs(t);
  return make_kernel<TransposeKernel>(t, std::move(perm), has_perm);
}

}  // namespace nxrt::cpu
