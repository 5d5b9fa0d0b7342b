// NonMaxSuppression (10, 11), CenterCropPad (18) and Col2Im (18).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "ep/cpu/kernels/common.h"

namespace nxrt::cpu {
namespace {

// ---------------------------------------------------------------- NonMaxSuppression

struct Box {
  float x_min, y_min, x_max, y_max, area;
};

class NmsKernel final : public Kernel {
 public:
  explicit NmsKernel(bool center_point) : center_point_(center_point) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor& boxes = *ctx.input(0);
    const Tensor& scores = *ctx.input(1);
    if (boxes.rank() != 3 || boxes.shape()[2] != 4)
      return invalid_argument("boxes must be [batches, boxes, 4], got ", boxes.shape().to_string());
    if (scores.rank() != 3 || scores.shape()[0] != boxes.shape()[0] ||
        scores.shape()[2] != boxes.shape()[1])
      return invalid_argument("scores shape ", scores.shape().to_string(),
                              " does not match boxes shape ", boxes.shape().to_string());
    int64_t max_out = 0;
    float iou_threshold = 0, score_threshold = 0;
    bool has_score_threshold = false;
    if (const Tensor* t = ctx.input(2); t && t->numel() > 0) {
      if (t->dtype() != DataType::kInt64)
        return invalid_argument("max_output_boxes_per_class must be int64");
      max_out = std::max<int64_t>(0, t->data<int64_t>()[0]);
    }
    if (const Tensor* t = ctx.input(3); t && t->numel() > 0) iou_threshold = t->data<float>()[0];
    if (const Tensor* t = ctx.input(4); t && t->numel() > 0) {
      score_threshold = t->data<float>()[0];
      has_score_threshold = true;
    }
    if (iou_threshold < 0 || iou_threshold > 1)
      return invalid_argument("iou_threshold ", iou_threshold, " must be in [0, 1]");
    const int64_t B = boxes.shape()[0], C = scores.shape()[1], N = boxes.shape()[1];
    const float* bp = boxes.data<float>();
    const float* sp = scores.data<float>();
    std::vector<int64_t> selected;  // triples
    std::vector<Box> geo(static_cast<size_t>(N));
    std::vector<int64_t> order, kept;
    for (int64_t b = 0; b < B; ++b) {
      for (int64_t i = 0; i < N; ++i) geo[size_t(i)] = box_of(bp + (b * N + i) * 4);
      for (int64_t c = 0; c < C; ++c) {
        const float* s = sp + (b * C + c) * N;
        order.clear();
        for (int64_t i = 0; i < N; ++i)
          if (!has_score_threshold || s[i] > score_threshold) order.push_back(i);
        // Highest score first; equal scores keep the lower box index first.
        std::stable_sort(order.begin(), order.end(),
                         [&](int64_t a, int64_t z) { return s[a] > s[z]; });
        kept.clear();
        for (int64_t i : order) {
          if (int64_t(kept.size()) >= max_out) break;
          bool keep = true;
          for (int64_t k : kept)
            if (suppresses(geo[size_t(i)], geo[size_t(k)], iou_threshold)) {
              keep = false;
              break;
            }
          if (!keep) continue;
          kept.push_back(i);
          selected.insert(selected.end(), {b, c, i});
        }
      }
    }
    const int64_t count = int64_t(selected.size() / 3);
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, Shape{count, 3}));
    std::copy(selected.begin(), selected.end(), y->data<int64_t>());
    return Status();
  }

 private:
  Box box_of(const float* p) const {
    Box b;
    if (center_point_) {
      b.x_min = p[0] - p[2] / 2;
      b.x_max = p[0] + p[2] / 2;
      b.y_min = p[1] - p[3] / 2;
      b.y_max = p[1] + p[3] / 2;
    } else {
      // Corners may come in either order.
      b.y_min = std::min(p[0], p[2]);
      b.y_max = std::max(p[0], p[2]);
      b.x_min = std::min(p[1], p[3]);
      b.x_max = std::max(p[1], p[3]);
    }
    b.area = (b.x_max - b.x_min) * (b.y_max - b.y_min);
    return b;
  }

  static bool suppresses(const Box& a, const Box& b, float threshold) {
    const float ix0 = std::max(a.x_min, b.x_min), ix1 = std::min(a.x_max, b.x_max);
    if (ix1 <= ix0) return false;
    const float iy0 = std::max(a.y_min, b.y_min), iy1 = std::min(a.y_max, b.y_max);
    if (iy1 <= iy0) return false;
    const float inter = (ix1 - ix0) * (iy1 - iy0);
    const float uni = a.area + b.area - inter;
    if (inter <= 0 || a.area <= 0 || b.area <= 0 || uni <= 0) return false;
    return inter / uni > threshold;
  }

  bool center_point_;
};

// ---------------------------------------------------------------- CenterCropPad

class CenterCropPadKernel final : public Kernel {
 public:
  explicit CenterCropPadKernel(std::vector<int64_t> axes) : axes_(std::move(axes)) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    std::vector<int64_t> shape;
    NXRT_RETURN_IF_ERROR(read_int_list(*ctx.input(1), shape, "shape"));
    const int64_t rank = int64_t(x.rank());
    std::vector<int64_t> axes = axes_;
    if (axes.empty())
      for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
    if (shape.size() != axes.size())
      return invalid_argument("shape has ", shape.size(), " elements, expected ", axes.size());
    Shape out = x.shape();
    std::vector<int64_t> src0(size_t(rank), 0), dst0(size_t(rank), 0),
        cnt(x.shape().begin(), x.shape().end());
    std::vector<bool> seen(size_t(rank), false);
    for (size_t i = 0; i < axes.size(); ++i) {
      int64_t a = axes[i];
      if (!normalize_axis(a, rank))
        return invalid_argument("axis ", axes[i], " is out of range for rank ", rank);
      if (seen[size_t(a)]) return invalid_argument("axis ", a, " appears twice");
      seen[size_t(a)] = true;
      const int64_t dim = x.shape()[size_t(a)], want = shape[i];
      if (want < 0) return invalid_argument("shape has a negative value ", want);
      out[size_t(a)] = want;
      // The odd leftover goes to the end, as the spec's reference does.
      if (want < dim)
        src0[size_t(a)] = (dim - want) / 2;
      else
        dst0[size_t(a)] = (want - dim) / 2;
      cnt[size_t(a)] = std::min(dim, want);
    }
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, out));
    const size_t esize = dtype_size(x.dtype());
    std::memset(y->raw(), 0, size_t(y->numel()) * esize);
    if (y->numel() == 0 || x.numel() == 0) return Status();
    for (int64_t c : cnt)
      if (c == 0) return Status();
    if (rank == 0) {
      std::memcpy(y->raw(), x.raw(), esize);
      return Status();
    }
    std::vector<int64_t> sstride(size_t(rank), 1), dstride(size_t(rank), 1);
    for (int64_t d = rank - 1; d-- > 0;) {
      sstride[size_t(d)] = sstride[size_t(d + 1)] * x.shape()[size_t(d + 1)];
      dstride[size_t(d)] = dstride[size_t(d + 1)] * out[size_t(d + 1)];
    }
    const char* sp = static_cast<const char*>(x.raw());
    char* dp = static_cast<char*>(y->raw());
    const size_t run = size_t(cnt[size_t(rank - 1)]) * esize;
    std::vector<int64_t> pos(size_t(rank), 0);
    while (true) {
      int64_t so = 0, d_off = 0;
      for (int64_t d = 0; d < rank; ++d) {
        so += (src0[size_t(d)] + pos[size_t(d)]) * sstride[size_t(d)];
        d_off += (dst0[size_t(d)] + pos[size_t(d)]) * dstride[size_t(d)];
      }
      std::memcpy(dp + size_t(d_off) * esize, sp + size_t(so) * esize, run);
      int64_t d = rank - 1;
      while (d-- > 0) {
        if (++pos[size_t(d)] < cnt[size_t(d)]) break;
        pos[size_t(d)] = 0;
      }
      if (d < 0) break;
    }
    return Status();
  }

 private:
  std::vector<int64_t> axes_;
};

// ---------------------------------------------------------------- Col2Im

class Col2ImKernel final : public Kernel {
 public:
  Col2ImKernel(std::vector<int64_t> dilations, std::vector<int64_t> pads,
               std::vector<int64_t> strides)
      : dilations_(std::move(dilations)), pads_(std::move(pads)), strides_(std::move(strides)) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    std::vector<int64_t> image, block;
    NXRT_RETURN_IF_ERROR(read_int_list(*ctx.input(1), image, "image_shape"));
    NXRT_RETURN_IF_ERROR(read_int_list(*ctx.input(2), block, "block_shape"));
    const size_t r = image.size();
    if (r == 0 || block.size() != r)
      return invalid_argument("image_shape and block_shape must have the same non-zero length");
    std::vector<int64_t> dil = dilations_.empty() ? std::vector<int64_t>(r, 1) : dilations_;
    std::vector<int64_t> str = strides_.empty() ? std::vector<int64_t>(r, 1) : strides_;
    std::vector<int64_t> pad = pads_.empty() ? std::vector<int64_t>(2 * r, 0) : pads_;
    if (dil.size() != r || str.size() != r || pad.size() != 2 * r)
      return invalid_argument("dilations/strides need ", r, " values and pads ", 2 * r);
    if (x.rank() != 3)
      return invalid_argument("input must be [N, C*prod(block_shape), L], got ",
                              x.shape().to_string());
    int64_t kernel = 1;
    for (size_t i = 0; i < r; ++i) {
      if (image[i] <= 0 || block[i] <= 0 || dil[i] <= 0 || str[i] <= 0)
        return invalid_argument("image_shape, block_shape, dilations and strides must be positive");
      kernel *= block[i];
    }
    const int64_t N = x.shape()[0], CK = x.shape()[1], L = x.shape()[2];
    if (CK % kernel != 0)
      return invalid_argument("input dim 1 (", CK, ") is not divisible by the block size ", kernel);
    const int64_t C = CK / kernel;
    std::vector<int64_t> ncol(r);
    int64_t blocks = 1;
    for (size_t i = 0; i < r; ++i) {
      ncol[i] = (image[i] + pad[i] + pad[i + r] - (dil[i] * (block[i] - 1) + 1)) / str[i] + 1;
      if (ncol[i] <= 0) return invalid_argument("the sliding blocks do not fit the padded image");
      blocks *= ncol[i];
    }
    if (blocks != L)
      return invalid_argument("input dim 2 is ", L, " but the image holds ", blocks,
                              " sliding blocks");
    Shape out{N, C};
    for (int64_t d : image) out.push_back(d);
    if (checked_numel(out.span()) < 0)
      return invalid_argument("output shape ", out.to_string(), " is too large");
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, out));
    switch (x.dtype()) {
      NXRT_CASES_NUMERIC(run<T>(x, *y, image, block, dil, pad, str, ncol, C, kernel);
                         return Status())
      default:
        break;
    }
    return not_implemented("type ", tensor_type_name(x.dtype()), " is not supported");
  }

 private:
  template <typename T>
  static void run(const Tensor& x, Tensor& y, const std::vector<int64_t>& image,
                  const std::vector<int64_t>& block, const std::vector<int64_t>& dil,
                  const std::vector<int64_t>& pad, const std::vector<int64_t>& str,
                  const std::vector<int64_t>& ncol, int64_t C, int64_t kernel) {
    const size_t r = image.size();
    const int64_t N = x.shape()[0], L = x.shape()[2];
    int64_t img = 1;
    for (int64_t d : image) img *= d;
    // Accumulate in float for half types so repeated adds do not round each time.
    using A =
        std::conditional_t<std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>, float, T>;
    std::vector<A> acc(static_cast<size_t>(img));
    std::vector<int64_t> koff(r), col(r);
    const T* xp = x.data<T>();
    T* yp = y.data<T>();
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c = 0; c < C; ++c) {
        std::fill(acc.begin(), acc.end(), A(0));
        for (int64_t k = 0; k < kernel; ++k) {
          int64_t rem = k;
          for (size_t i = r; i-- > 0;) {
            koff[i] = rem % block[i];
            rem /= block[i];
          }
          const T* src = xp + ((n * C + c) * kernel + k) * L;
          std::fill(col.begin(), col.end(), 0);
          for (int64_t l = 0; l < L; ++l) {
            int64_t idx = 0;
            bool inside = true;
            for (size_t i = 0; i < r; ++i) {
              const int64_t p = col[i] * str[i] - pad[i] + koff[i] * dil[i];
              if (p < 0 || p >= image[i]) {
                inside = false;
                break;
              }
              idx = idx * image[i] + p;
            }
            if (inside) acc[size_t(idx)] = A(acc[size_t(idx)] + A(src[l]));
            for (size_t i = r; i-- > 0;) {
              if (++col[i] < ncol[i]) break;
              col[i] = 0;
            }
          }
        }
        T* dst = yp + (n * C + c) * img;
        for (int64_t i = 0; i < img; ++i) dst[i] = T(acc[size_t(i)]);
      }
  }

  std::vector<int64_t> dilations_, pads_, strides_;
};

}  // namespace

Expected<KernelPtr> create_non_max_suppression(KernelInit& init) {
  AttrReader attrs(init.node);
  const int64_t center = attrs.get_int("center_point_box", 0);
  NXRT_RETURN_IF_ERROR(attrs.status());
  if (center != 0 && center != 1)
    return init.error(StatusCode::kInvalidGraph, "center_point_box must be 0 or 1");
  if (init.input_type(0) != DataType::kFloat) return init.unsupported_type(0);
  if (init.input_type(1) != DataType::kFloat) return init.unsupported_type(1);
  if (init.has_input(3) && init.input_type(3) != DataType::kFloat) return init.unsupported_type(3);
  if (init.has_input(4) && init.input_type(4) != DataType::kFloat) return init.unsupported_type(4);
  init.set_all_outputs(DataType::kInt64);
  return make_kernel<NmsKernel>(center == 1);
}

Expected<KernelPtr> create_center_crop_pad(KernelInit& init) {
  AttrReader attrs(init.node);
  auto axes = attrs.get_ints("axes");
  NXRT_RETURN_IF_ERROR(attrs.status());
  const DataType t = init.input_type(0);
  if (t == DataType::kString || dtype_size(t) == 0) return init.unsupported_type(0);
  init.set_all_outputs(t);
  return make_kernel<CenterCropPadKernel>(std::move(axes));
}

Expected<KernelPtr> create_col2im(KernelInit& init) {
  AttrReader attrs(init.node);
  auto dilations = attrs.get_ints("dilations");
  auto pads = attrs.get_ints("pads");
  auto strides = attrs.get_ints("strides");
  NXRT_RETURN_IF_ERROR(attrs.status());
  const DataType t = init.input_type(0);
  if (!is_float_type(t) && !is_integer_type(t)) return init.unsupported_type(0);
  init.set_all_outputs(t);
  return make_kernel<Col2ImKernel>(std::move(dilations), std::move(pads), std::move(strides));
}

}  // namespace nxrt::cpu
