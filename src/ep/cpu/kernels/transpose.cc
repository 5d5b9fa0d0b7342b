// Transpose. Output dims whose input axes stay adjacent are merged and size-1 dims dropped
// first, so most real permutations reduce to a plain copy, contiguous row copies, or a
// (batched) 2-D transpose, which is done in cache-sized tiles. What remains walks the output
// in order with an odometer that keeps the input offset incrementally (no per-element
// division).
#include <algorithm>
#include <vector>

#include "ep/cpu/kernels/element_copy.h"

namespace nxrt::cpu {
namespace {

struct TransposePlan {
  std::vector<int64_t> dims;     // merged output dims (at least one)
  std::vector<int64_t> strides;  // input element stride of each merged output dim
};

TransposePlan plan_transpose(const Shape& in, std::span<const int64_t> perm) {
  const size_t rank = in.size();
  std::vector<int64_t> in_stride(rank, 1);
  for (size_t d = rank; d-- > 1;) in_stride[d - 1] = in_stride[d] * in[d];
  TransposePlan p;
  for (size_t i = 0; i < rank; ++i) {
    const size_t a = size_t(perm[i]);
    const int64_t n = in[a];
    if (n == 1) continue;
    // The previous output dim is the input axis just outside this one: one run.
    if (!p.dims.empty() && p.strides.back() == in_stride[a] * n) {
      p.dims.back() *= n;
      p.strides.back() = in_stride[a];
    } else {
      p.dims.push_back(n);
      p.strides.push_back(in_stride[a]);
    }
  }
  if (p.dims.empty()) {
    p.dims.push_back(1);
    p.strides.push_back(1);
  }
  return p;
}

template <typename T>
void transpose_typed(const T* src, T* dst, const TransposePlan& p, int64_t numel) {
  const size_t r = p.dims.size();
  const int64_t last = p.dims[r - 1];
  const int64_t last_stride = p.strides[r - 1];
  if (r == 1 && last_stride == 1) {
    copy_run(src, dst, numel);
    return;
  }
  // Input's innermost axis second-to-last in the output: a batch of 2-D transposes.
  const bool tiled = r >= 2 && last_stride != 1 && p.strides[r - 2] == 1;
  const size_t inner_rank = tiled ? 2 : 1;
  const size_t outer_rank = r - inner_rank;
  const int64_t inner = tiled ? p.dims[r - 2] * last : last;
  std::vector<int64_t> index(outer_rank, 0);
  int64_t offset = 0;
  for (int64_t out = 0; out < numel; out += inner) {
    const T* in = src + offset;
    T* o = dst + out;
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
}

class TransposeKernel final : public Kernel {
 public:
  TransposeKernel(DataType dtype, std::vector<int64_t> perm, bool has_perm)
      : dtype_(dtype), perm_(std::move(perm)), has_perm_(has_perm) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    const size_t rank = x.rank();
    std::vector<int64_t> perm = perm_;
    if (!has_perm_) {
      perm.resize(rank);
      for (size_t i = 0; i < rank; ++i) perm[i] = int64_t(rank - 1 - i);
    }
    if (perm.size() != rank)
      return invalid_argument("perm has ", perm.size(), " entries but the input has rank ", rank);
    std::vector<bool> seen(rank, false);
    Shape out_shape;
    out_shape.resize(rank);
    for (size_t i = 0; i < rank; ++i) {
      int64_t a = perm[i];
      if (!normalize_axis(a, int64_t(rank)) || seen[size_t(a)])
        return invalid_argument("perm ", Shape(perm_).to_string(),
                                " is not a permutation of the input's ", rank, " axes");
      seen[size_t(a)] = true;
      perm[i] = a;
      out_shape[i] = x.shape()[size_t(a)];
    }
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, out_shape));
    const int64_t numel = x.numel();
    if (numel == 0) return Status();
    const TransposePlan plan = plan_transpose(x.shape(), perm);
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
