// DeformConv (deformable convolution, with the v2 modulation mask) for any number of
// spatial dims. Each kernel tap samples the input at its regular window position plus a
// per-output-position offset, by multilinear interpolation that reads zeros outside the
// input, then scales the sample by the mask. The samples fill an im2col-style column
// matrix, contracted with the weights by one GEMM per group. float16/bfloat16 compute in
// float, double in double.
#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "ep/cpu/gemm/gemm.h"
#include "ep/cpu/kernels/conv_geometry.h"

namespace nxrt::cpu {
namespace {

// Column-matrix elements per chunk of output positions: bounds the scratch for large
// images while keeping each GEMM wide.
constexpr int64_t kColumnBudget = int64_t(1) << 21;

template <typename A>
void gemm_acc(int64_t M, int64_t N, int64_t K, const A* a, int64_t lda, const A* b, int64_t ldb,
              A* c, int64_t ldc) {
  if constexpr (std::is_same_v<A, float>)
    gemm::sgemm(false, false, M, N, K, 1.0f, a, lda, b, ldb, 1.0f, c, ldc);
  else
    gemm::gemm_simple<A>(false, false, M, N, K, A(1), a, lda, b, ldb, A(1), c, ldc);
}

// The tensor's elements as A: the data itself when it already is A, else a widened copy.
template <typename T, typename A>
const A* as_acc(const Tensor* t, std::vector<A>& storage) {
  if (!t) return nullptr;
  if constexpr (std::is_same_v<T, A>) {
    return t->data<A>();
  } else {
    const T* p = t->data<T>();
    storage.resize(size_t(t->numel()));
    for (int64_t i = 0; i < t->numel(); ++i) storage[size_t(i)] = A(float(p[i]));
    return storage.data();
  }
}

// Everything a call needs about the shapes, resolved and checked once.
struct Geometry {
  size_t r = 0;                 // spatial rank
  int64_t n = 0, c = 0, m = 0;  // batch, input channels, output channels
  int64_t group = 1, offset_group = 1;
  int64_t in_size = 0, out_size = 0, k_size = 0;
  Window win;
  std::vector<int64_t> in_stride;  // element strides of X's spatial dims
};

class DeformConvKernel final : public Kernel {
 public:
  DeformConvKernel(DataType dtype, WindowAttrs attrs, int64_t group, int64_t offset_group)
      : dtype_(dtype), attrs_(std::move(attrs)), group_(group), offset_group_(offset_group) {}

  Status compute(KernelContext& ctx) const override {
    Geometry g;
    NXRT_RETURN_IF_ERROR(resolve(ctx, g));
    Shape out_shape{g.n, g.m};
    for (int64_t d : g.win.out) out_shape.push_back(d);
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, out_shape));
    switch (dtype_) {
      NXRT_CASE(kFloat, return run<T, float>(ctx, g, *y))
      NXRT_CASE(kFloat16, return run<T, float>(ctx, g, *y))
      NXRT_CASE(kBFloat16, return run<T, float>(ctx, g, *y))
      NXRT_CASE(kDouble, return run<T, double>(ctx, g, *y))
      default:
        break;
    }
    return not_implemented("type ", tensor_type_name(dtype_), " is not supported");
  }

 private:
  Status resolve(KernelContext& ctx, Geometry& g) const {
    const Tensor* x = ctx.input(0);
    const Tensor* w = ctx.input(1);
    const Tensor* offset = ctx.input(2);
    if (!x || !w || !offset) return invalid_argument("inputs X, W and offset are required");
    const Shape& xs = x->shape();
    const Shape& ws = w->shape();
    if (xs.size() < 3)
      return invalid_argument("X must have shape [N, C, D1, ...], got ", xs.to_string());
    if (ws.size() != xs.size())
      return invalid_argument("W has shape ", ws.to_string(), "; expected rank ", xs.size(),
                              " like X ", xs.to_string());
    g.r = xs.size() - 2;
    g.n = xs[0];
    g.c = xs[1];
    g.m = ws[0];
    g.group = group_;
    g.offset_group = offset_group_;
    if (ws[1] * group_ != g.c)
      return invalid_argument("X has ", g.c, " channels but W ", ws.to_string(), " with group ",
                              group_, " expects ", ws[1] * group_);
    if (g.m % group_ != 0)
      return invalid_argument("output channels ", g.m, " are not divisible by group ", group_);
    if (g.c % offset_group_ != 0)
      return invalid_argument("input channels ", g.c, " are not divisible by offset_group ",
                              offset_group_);
    std::vector<int64_t> kernel(ws.begin() + 2, ws.end());
    if (!attrs_.kernel_shape.empty() && attrs_.kernel_shape != kernel)
      return invalid_argument("kernel_shape ", Shape(attrs_.kernel_shape).to_string(),
                              " does not match W's spatial dims ", Shape(kernel).to_string());
    NXRT_RETURN_IF_ERROR(
        resolve_window(attrs_, std::vector<int64_t>(xs.begin() + 2, xs.end()), kernel, g.win));
    g.in_size = g.win.in_size();
    g.out_size = g.win.out_size();
    g.k_size = g.win.kernel_size();
    g.in_stride.assign(g.r, 1);
    for (size_t d = g.r - 1; d-- > 0;) g.in_stride[d] = g.in_stride[d + 1] * g.win.in[d + 1];

    auto expect_shape = [&](const Tensor& t, int64_t channels, const char* what) -> Status {
      Shape want{g.n, channels};
      for (int64_t d : g.win.out) want.push_back(d);
      if (!(t.shape() == want))
        return invalid_argument(what, " has shape ", t.shape().to_string(), "; expected ",
                                want.to_string());
      return Status();
    };
    NXRT_RETURN_IF_ERROR(expect_shape(*offset, offset_group_ * g.k_size * int64_t(g.r), "offset"));
    if (const Tensor* mask = ctx.input(4))
      NXRT_RETURN_IF_ERROR(expect_shape(*mask, offset_group_ * g.k_size, "mask"));
    if (const Tensor* b = ctx.input(3)) {
      if (b->rank() != 1 || b->shape()[0] != g.m)
        return invalid_argument("B has shape ", b->shape().to_string(), "; expected [", g.m, "]");
    }
    return Status();
  }

  template <typename T, typename A>
  Status run(KernelContext& ctx, const Geometry& g, Tensor& y) const {
    const int64_t N = g.n, C = g.c, M = g.m, O = g.out_size, K = g.k_size, I = g.in_size;
    const size_t r = g.r;
    if (y.numel() == 0) return Status();
    std::vector<A> xs, ws, os, ms, bs, ys;
    const A* x = as_acc<T, A>(ctx.input(0), xs);
    const A* w = as_acc<T, A>(ctx.input(1), ws);
    const A* offset = as_acc<T, A>(ctx.input(2), os);
    const A* mask = as_acc<T, A>(ctx.input(4), ms);
    const A* bias = as_acc<T, A>(ctx.input(3), bs);
    A* out;
    if constexpr (std::is_same_v<T, A>) {
      out = y.data<A>();
    } else {
      ys.resize(size_t(y.numel()));
      out = ys.data();
    }
    // The GEMMs accumulate onto the bias.
    for (int64_t i = 0; i < N * M; ++i)
      std::fill(out + i * O, out + (i + 1) * O, bias ? bias[i % M] : A(0));

    const int64_t icg = C / g.group, ocg = M / g.group;
    const int64_t cpo = C / g.offset_group;  // channels per offset group
    const int64_t reduce = icg * K;
    // Regular (offset-free) sampling position of each output position and kernel tap.
    std::vector<int64_t> base(size_t(O) * r), tap(size_t(K) * r);
    for (int64_t o = 0; o < O; ++o) {
      int64_t rest = o;
      for (size_t d = r; d-- > 0;) {
        base[size_t(o) * r + d] = (rest % g.win.out[d]) * g.win.stride[d] - g.win.pad_begin[d];
        rest /= g.win.out[d];
      }
    }
    for (int64_t k = 0; k < K; ++k) {
      int64_t rest = k;
      for (size_t d = r; d-- > 0;) {
        tap[size_t(k) * r + d] = (rest % g.win.kernel[d]) * g.win.dilation[d];
        rest /= g.win.kernel[d];
      }
    }

    const size_t corners = size_t(1) << r;
    const int64_t chunk = std::clamp<int64_t>(kColumnBudget / std::max<int64_t>(C * K, 1), 1, O);
    std::vector<A> col(size_t(C * K * chunk));
    std::vector<int64_t> corner_index(size_t(chunk) * corners);
    std::vector<A> corner_weight(size_t(chunk) * corners);
    std::vector<int64_t> lo(r);
    std::vector<A> frac(r);
    std::vector<uint8_t> ok_lo(r), ok_hi(r);

    for (int64_t n = 0; n < N; ++n) {
      const A* xn = x + n * C * I;
      for (int64_t o0 = 0; o0 < O; o0 += chunk) {
        const int64_t ob = std::min(chunk, O - o0);
        for (int64_t og = 0; og < g.offset_group; ++og) {
          for (int64_t k = 0; k < K; ++k) {
            const int64_t row = (n * g.offset_group + og) * K + k;
            const A* off = offset + row * int64_t(r) * O;  // [r][O] for this tap
            const A* mk = mask ? mask + row * O : nullptr;
            // Interpolation corners and weights of this tap at each output position;
            // shared by all channels of the offset group.
            for (int64_t j = 0; j < ob; ++j) {
              const int64_t o = o0 + j;
              int64_t* idx = corner_index.data() + size_t(j) * corners;
              A* wt = corner_weight.data() + size_t(j) * corners;
              bool outside = false;
              for (size_t d = 0; d < r && !outside; ++d) {
                const A p =
                    A(base[size_t(o) * r + d] + tap[size_t(k) * r + d]) + off[int64_t(d) * O + o];
                // Points at or beyond one pixel outside the input touch no input element;
                // NaN offsets land here too.
                if (!(p > A(-1) && p < A(g.win.in[d]))) {
                  outside = true;
                  break;
                }
                const A fl = std::floor(p);
                lo[d] = int64_t(fl);
                frac[d] = p - fl;
                ok_lo[d] = lo[d] >= 0;
                ok_hi[d] = lo[d] + 1 < g.win.in[d];
              }
              const A scale = mk ? mk[o] : A(1);
              for (size_t cn = 0; cn < corners; ++cn) {
                if (outside) {
                  idx[cn] = 0;
                  wt[cn] = A(0);
                  continue;
                }
                int64_t at = 0;
                A weight = scale;
                bool valid = true;
                for (size_t d = 0; d < r; ++d) {
                  const bool hi = (cn >> (r - 1 - d)) & 1;
                  valid &= hi ? ok_hi[d] != 0 : ok_lo[d] != 0;
                  at += (lo[d] + int64_t(hi)) * g.in_stride[d];
                  weight *= hi ? frac[d] : A(1) - frac[d];
                }
                idx[cn] = valid ? at : 0;
                wt[cn] = valid ? weight : A(0);
              }
            }
            for (int64_t c = og * cpo; c < (og + 1) * cpo; ++c) {
              const A* xc = xn + c * I;
              A* dst = col.data() + (c * K + k) * ob;
              for (int64_t j = 0; j < ob; ++j) {
                const int64_t* idx = corner_index.data() + size_t(j) * corners;
                const A* wt = corner_weight.data() + size_t(j) * corners;
                A acc = A(0);
                for (size_t cn = 0; cn < corners; ++cn) acc += wt[cn] * xc[idx[cn]];
                dst[j] = acc;
              }
            }
          }
        }
        if (reduce == 0) continue;
        for (int64_t gi = 0; gi < g.group; ++gi)
          gemm_acc<A>(ocg, ob, reduce, w + gi * ocg * reduce, reduce, col.data() + gi * reduce * ob,
                      ob, out + (n * M + gi * ocg) * O + o0, O);
      }
    }
    if constexpr (!std::is_same_v<T, A>) {
      T* py = y.data<T>();
      for (int64_t i = 0; i < y.numel(); ++i) py[i] = T(float(ys[size_t(i)]));
    }
    return Status();
  }

  DataType dtype_;
  WindowAttrs attrs_;
  int64_t group_, offset_group_;
};

}  // namespace

Expected<KernelPtr> create_deform_conv(KernelInit& init) {
  AttrReader attrs(init.node);
  WindowAttrs w;
  Status st = read_window_attrs(attrs, false, w);
  if (!st.ok()) return init.error(st.code(), st.message());
  const int64_t group = attrs.get_int("group", 1);
  const int64_t offset_group = attrs.get_int("offset_group", 1);
  NXRT_RETURN_IF_ERROR(attrs.status());
  if (w.auto_pad != AutoPad::kNotSet)
    return init.error(StatusCode::kInvalidGraph, "DeformConv has no auto_pad attribute");
  if (group <= 0) return init.error(StatusCode::kInvalidGraph, "group must be positive");
  if (offset_group <= 0)
    return init.error(StatusCode::kInvalidGraph, "offset_group must be positive");
  const DataType t = init.input_type(0);
  if (!is_float_type(t)) return init.unsupported_type(0);
  for (size_t i = 1; i < 5; ++i) {
    if (i >= 3 && !init.has_input(i)) continue;
    if (init.input_type(i) != t) return init.unsupported_type(i);
  }
  init.set_all_outputs(t);
  return make_kernel<DeformConvKernel>(t, std::move(w), group, offset_group);
}

}  // namespace nxrt::cpu
