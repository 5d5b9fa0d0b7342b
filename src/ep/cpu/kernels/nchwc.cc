// nxrt's NCHWc ops, which the layout_nchwc pass puts in place of float32 2-D convolutions
// and the pools and reorders around them (vmath/nchwc.h for the layout):
//   NchwcConv(X, W, B?, Z?): Conv or FusedConv (activation, post_scale/post_shift, a sum
//     input Z in the blocked layout). X is plain [N, C, H, W] or blocked
//     [N, ceil(C/16), H, W, 16]; Y is blocked. W must be constant: it is blocked once.
//   NchwcMaxPool / NchwcAveragePool: the ONNX pools' attributes, blocked in and out.
//   NchwcGlobalAveragePool / NchwcGlobalMaxPool: [N, Cb, H, W, 16] -> [N, Cb, 1, 1, 16].
//   NchwcToNchw(X; channels): blocked back to plain, dropping the padding channels.
#include "ep/cpu/vmath/nchwc.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "core/parallel.h"
#include "ep/cpu/kernels/common.h"
#include "ep/cpu/kernels/conv_geometry.h"
#include "ep/cpu/kernels/fused_activation.h"
#include "ep/cpu/vmath/winograd.h"

namespace nxrt::cpu {
namespace {

constexpr int64_t kB = vmath::kNchwcBlock;
// Multiply-adds (or window taps) below which a piece of work stays on one thread.
constexpr double kMinWork = double(1 << 20);
// Below this much work in all, even independent items stay on the calling thread: waking
// another costs more than it saves. Between the two, items still go to the threads whole
// (a 64 x 56 x 56 pool is worth it). An OCR direction classifier's small reorders,
// pools and depthwise layers (0.55 ms a run) took 0.61-0.63 ms on 2 threads, 0.56-0.57
// with this floor; the zoo's small CNNs did not move beyond the VM's noise.
constexpr double kMinHandOffWork = double(1 << 18);
// Channels from which a 3x3 stride-1 convolution takes Winograd. Measured with F(4x4,
// 3x3) against the direct tiles, one conv alone: 16 -> 16 on 112x112 0.77x the time,
// 16 -> 32 on 56x56 0.69x, 16 -> 64 on 55x55 0.61x, 128 -> 32 on 28x28 0.42x; 8 -> 32
// 1.0x and 8 -> 16 1.11x (half of each 16-lane input block empty). In models: densenet121
// 0.87x (its 128 -> 32 layers), squeezenet 0.95x, ddddocr 0.95x.
constexpr int64_t kWinogradMinInputs = 16, kWinogradMinOutputs = 16;

// The calling core's L2 size (glibc reads it from the CPU), 1 MiB when unknown.
int64_t l2_cache_bytes() {
  static const int64_t bytes = [] {
    const long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
    return l2 > 0 ? int64_t(l2) : int64_t(1) << 20;
  }();
  return bytes;
}
// Input x output channels up to which a Winograd convolution takes F(4x4, 3x3).
constexpr int64_t kWinogradF43MaxWeights = 128 * 256;

int64_t blocks_of(int64_t channels) { return (channels + kB - 1) / kB; }

// fn(item) for the independent items [0, n): on the run's threads from kMinHandOffWork
// of work in all, else on this thread.
template <typename Fn>
void parallel_items(size_t n, double work, Fn&& fn) {
  if (work < kMinHandOffWork) {
    for (size_t item = 0; item < n; ++item) fn(item);
    return;
  }
  parallel_for(n, fn);
}

// Splits [0, rows) of `items` independent (image, block group) items into about
// `pieces` tasks and runs fn(item, row0, row1) for each on the run's threads.
template <typename Fn>
void parallel_rows(int64_t items, int64_t rows, double work, Fn fn) {
  const int64_t pieces = int64_t(parallel_pieces(work, kMinWork));
  // Several tasks per thread when there are few items: uneven items then even out.
  const int64_t wanted = pieces > 1 ? 4 * pieces : 1;
  const int64_t chunks = std::clamp<int64_t>((wanted + items - 1) / items, 1, rows);
  const int64_t per = (rows + chunks - 1) / chunks;
  const int64_t row_tasks = (rows + per - 1) / per;
  parallel_items(size_t(items * row_tasks), work, [&](size_t task) {
    const int64_t item = int64_t(task) / row_tasks, r0 = int64_t(task) % row_tasks * per;
    fn(item, r0, std::min(rows, r0 + per));
  });
}

// The spatial dims and channel blocks of a blocked [N, Cb, H, W, 16] tensor.
Status check_blocked(const Tensor& x, const char* what) {
  if (x.dtype() != DataType::kFloat || x.rank() != 5 || x.shape()[4] != kB)
    return invalid_argument(what, " must be a float tensor [N, C/16, H, W, 16], got ",
                            tensor_type_name(x.dtype()), " ", x.shape().to_string());
  return Status();
}

// Bias B (null: none) of `channels` floats into `out`, zero-padded to whole blocks.
Status padded_bias(const Tensor* b, int64_t channels, float* out) {
  std::fill(out, out + blocks_of(channels) * kB, 0.0f);
  if (!b) return Status();
  if (b->dtype() != DataType::kFloat || b->numel() != channels)
    return invalid_argument("bias B must hold ", channels, " float values, got ",
                            tensor_type_name(b->dtype()), " ", b->shape().to_string());
  std::copy(b->data<float>(), b->data<float>() + channels, out);
  return Status();
}

// A resolved 2-D window as the blocked depthwise and pool kernels take it.
vmath::NchwcWindowArgs window_args(const Window& win) {
  vmath::NchwcWindowArgs a;
  a.in_h = win.in[0];
  a.in_w = win.in[1];
  a.kernel_h = win.kernel[0];
  a.kernel_w = win.kernel[1];
  a.stride_h = win.stride[0];
  a.stride_w = win.stride[1];
  a.dilation_h = win.dilation[0];
  a.dilation_w = win.dilation[1];
  a.pad_top = win.pad_begin[0];
  a.pad_left = win.pad_begin[1];
  a.pad_bottom = win.pad_end[0];
  a.pad_right = win.pad_end[1];
  a.out_h = win.out[0];
  a.out_w = win.out[1];
  return a;
}

class NchwcConvKernel final : public Kernel {
 public:
  NchwcConvKernel(WindowAttrs attrs, bool depthwise, int64_t winograd, int64_t out_channels,
                  int64_t in_channels, std::vector<int64_t> kernel, Tensor weights,
                  vmath::NchwcEpilogue epilogue, bool has_sum, std::vector<float> constant_bias)
      : attrs_(std::move(attrs)),
        depthwise_(depthwise),
        winograd_(winograd),
        zero_bias_(size_t(blocks_of(out_channels) * kB), 0.0f),
        out_channels_(out_channels),
        in_channels_(in_channels),
        kernel_(std::move(kernel)),
        weights_(std::move(weights)),
        epilogue_(epilogue),
        has_sum_(has_sum),
        constant_bias_(std::move(constant_bias)) {}

  // Every path reads Z's element just before it writes Y's at the same place (direct
  // tiles at their first input chunk, depthwise rows and Winograd output tiles in their
  // epilogue), so Y may take over a Z that dies here.
  std::optional<size_t> output0_overwrites_input() const override {
    return has_sum_ ? std::optional<size_t>(3) : std::nullopt;
  }

  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    bool blocked = x.rank() == 5;
    if (x.dtype() != DataType::kFloat || (x.rank() != 4 && !blocked) ||
        (blocked && x.shape()[4] != kB))
      return invalid_argument("input X must be float [N, C, H, W] or [N, C/16, H, W, 16], got ",
                              tensor_type_name(x.dtype()), " ", x.shape().to_string());
    const int64_t N = x.shape()[0];
    const int64_t C = blocked ? x.shape()[1] * kB : x.shape()[1];
    const int64_t weight_channels = depthwise_ ? out_channels_ : in_channels_;
    if (blocked ? x.shape()[1] != blocks_of(weight_channels) : C != weight_channels)
      return invalid_argument("input X ", x.shape().to_string(), " does not hold the ",
                              weight_channels, " channels the weights expect");
    const int64_t in_spatial[2] = {x.shape()[2], x.shape()[3]};
    vmath::NchwcEpilogue e = epilogue_;
    Window win;
    NXRT_RETURN_IF_ERROR(resolve_window(attrs_, in_spatial, kernel_, win));
    const int64_t OH = win.out[0], OW = win.out[1], Mb = blocks_of(out_channels_);
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, Shape{N, Mb, OH, OW, kB}));
    const Tensor* z = has_sum_ ? ctx.input(3) : nullptr;
    if (z && (z->dtype() != DataType::kFloat || z->shape() != y->shape()))
      return invalid_argument("the sum input Z is ", tensor_type_name(z->dtype()), " ",
                              z->shape().to_string(), "; it must be float ",
                              y->shape().to_string());
    if (y->numel() == 0) return Status();
    // Bias in blocks of 16, zero-padded: a constant one once at creation, one fed per run
    // into thread scratch (a warm run does not allocate).
    e.bias = constant_bias_.data();
    if (constant_bias_.empty()) {
      float* bias = thread_scratch<float>(size_t(Mb * kB), 1);
      NXRT_RETURN_IF_ERROR(padded_bias(ctx.input(2), out_channels_, bias));
      e.bias = bias;
    }
    const int64_t H = in_spatial[0], W = in_spatial[1];
    const int64_t in_image = x.numel() / std::max<int64_t>(N, 1), out_image = Mb * OH * OW * kB;
    if (winograd_ > 0) {
      run_winograd(x, blocked, win, e, z, *y);
      return Status();
    }
    if (depthwise_) {
      if (!blocked) return invalid_argument("a depthwise NchwcConv needs a blocked input X");
      vmath::NchwcWindowArgs a = window_args(win);
      parallel_rows(N * Mb, OH, double(y->numel() * win.kernel_size()),
                    [&](int64_t item, int64_t r0, int64_t r1) {
                      const int64_t n = item / Mb, b = item % Mb;
                      vmath::NchwcWindowArgs ai = a;
                      ai.x = x.data<float>() + n * in_image;
                      ai.y = y->data<float>() + n * out_image;
                      vmath::NchwcEpilogue ei = e;
                      ei.z = z ? z->data<float>() + n * out_image : nullptr;
                      vmath::nchwc_depthwise(ai, weights_.data<float>(), ei, b, b + 1, r0, r1);
                    });
      return Status();
    }
    // Dense. A blocked input is read in place (the tiles read zeros for taps in the
    // padding); a plain one, with padding, through a zero-bordered copy. A plain input of
    // more than 16 channels under a window of several taps and no padding is blocked first
    // (scratch): its planes a power-of-two apart put every lane of a tile in the same few
    // L1 sets (Magika's 256-channel 5x1 conv on 512 rows: 13.1 -> 10.5 ms alone, the model
    // 0.80-0.88x on Zen 3). Pointwise convs and padded ones measured no faster so.
    const float* source = x.data<float>();
    const bool unpadded = win.pad_begin[0] == 0 && win.pad_begin[1] == 0 && win.pad_end[0] == 0 &&
                          win.pad_end[1] == 0;
    if (!blocked && in_channels_ > kB && unpadded && win.kernel_size() > 1) {
      float* copy = thread_scratch<float>(size_t(N * blocks_of(in_channels_) * H * W * kB), 2);
      to_blocked(x.data<float>(), N, in_channels_, H * W, copy);
      source = copy;
      blocked = true;
    }
    const int64_t PT = win.pad_begin[0], PL = win.pad_begin[1];
    int64_t HP = H, WP = W;
    if (!blocked) {
      HP = std::max(H + PT + win.pad_end[0],
                    (OH - 1) * win.stride[0] + (win.kernel[0] - 1) * win.dilation[0] + 1);
      WP = std::max(W + PL + win.pad_end[1],
                    (OW - 1) * win.stride[1] + (win.kernel[1] - 1) * win.dilation[1] + 1);
    }
    const bool copied = HP != H || WP != W || (!blocked && (PT != 0 || PL != 0));
    const int64_t planes = blocked ? blocks_of(C) : C;  // planes of (16 or 1) lanes
    const int64_t lanes = blocked ? kB : 1;
    if (copied) {
      float* copy = thread_scratch<float>(size_t(N * planes * HP * WP * lanes), 0);
      parallel_rows(N * planes, 1, double(N * planes * HP * WP * lanes) * 8,
                    [&](int64_t plane, int64_t, int64_t) {
                      pad_plane(source + plane * H * W * lanes, copy + plane * HP * WP * lanes, H,
                                W, HP, WP, PT, PL, lanes);
                    });
      source = copy;
    }
    vmath::NchwcConvArgs a;
    a.x_block_stride = HP * WP * kB;
    a.x_lane_stride = blocked ? 1 : HP * WP;
    a.x_col_stride = lanes;
    a.x_row_stride = WP * lanes;
    a.in_channels = in_channels_;
    a.in_h = HP;
    a.in_w = WP;
    a.pad_top = copied ? 0 : PT;
    a.pad_left = copied ? 0 : PL;
    a.kernel_h = win.kernel[0];
    a.kernel_w = win.kernel[1];
    a.stride_h = win.stride[0];
    a.stride_w = win.stride[1];
    a.dilation_h = win.dilation[0];
    a.dilation_w = win.dilation[1];
    a.out_h = OH;
    a.out_w = OW;
    a.w = weights_.data<float>();
    a.epilogue = e;
    // Tasks take whole units of output positions (rows run together); the last unit takes
    // the remainder, so no task is left a sliver of a tile.
    constexpr int64_t kUnit = 12;
    const int64_t positions = OH * OW, units = std::max<int64_t>(1, positions / kUnit);
    const int64_t groups = (Mb + 3) / 4;  // the micro-kernel's 4 output blocks at a time
    const double macs =
        double(N) * double(out_channels_) * double(C) * double(OH * OW) * double(win.kernel_size());
    parallel_rows(N * groups, units, macs, [&](int64_t item, int64_t u0, int64_t u1) {
      const int64_t n = item / groups, g = item % groups;
      vmath::NchwcConvArgs ai = a;
      ai.x = source + n * planes * HP * WP * lanes;
      ai.y = y->data<float>() + n * out_image;
      ai.epilogue.z = z ? z->data<float>() + n * out_image : nullptr;
      const int64_t b0 = 4 * g, b1 = std::min(Mb, 4 * g + 4);
      vmath::nchwc_conv(ai, b0, b1, u0 * kUnit, u1 == units ? positions : u1 * kUnit);
    });
    return Status();
  }

 private:
  // The 3x3 stride-1 convolution by Winograd F(4x4, 3x3) or F(2x2, 3x3) (vmath/nchwc.h):
  // per chunk of tiles, on the thread that takes it, the input tiles transformed into 36
  // (16) matrices [C][tiles] (blocked), as many blocked 1x1 products with the transformed
  // weights, and the products transformed back into Y through the epilogue. 36
  // multiply-adds per 16 outputs per channel pair (16 per 4) instead of 144 (36).
  void run_winograd(const Tensor& x, bool blocked, const Window& win, const vmath::NchwcEpilogue& e,
                    const Tensor* z, Tensor& y) const {
    const int64_t N = x.shape()[0], H = win.in[0], W = win.in[1];
    const int64_t Cb = blocks_of(in_channels_), Mb = blocks_of(out_channels_);
    const float* source = x.data<float>();
    if (!blocked) {  // a plain input (no blocked producer): blocked once into scratch
      float* copy = thread_scratch<float>(size_t(N * Cb * H * W * kB), 0);
      to_blocked(x.data<float>(), N, in_channels_, H * W, copy);
      source = copy;
    }
    vmath::NchwcWinogradTiles g;
    g.in_h = H;
    g.in_w = W;
    g.pad_top = win.pad_begin[0];
    g.pad_left = win.pad_begin[1];
    g.out_h = win.out[0];
    g.out_w = win.out[1];
    g.tile = winograd_;
    g.tiles_w = (g.out_w + g.tile - 1) / g.tile;
    const int64_t tiles = (g.out_h + g.tile - 1) / g.tile * g.tiles_w;
    const int64_t matrices = (g.tile + 2) * (g.tile + 2);
    // Chunks whose transformed tiles and products stay within about 1 MiB (16 values of
    // 16 lanes per tile and channel block), cut finer when there are threads to feed.
    int64_t chunk = std::max<int64_t>(8, (int64_t(1) << 20) / ((Cb + Mb) * matrices * kB * 4));
    const double macs = double(N * tiles) * double(in_channels_ * out_channels_) * double(matrices);
    const int64_t width = int64_t(parallel_pieces(macs, kMinWork));
    // Few chunks (deep layers on small maps) and transformed weights beyond half a core's
    // L2: the threads split the output blocks of each chunk instead of cutting the chunks
    // finer. Each then reads its share of the weights once for wide products; the input
    // transform, small next to the products, is repeated per share. Cutting the tiles
    // finer would leave thin products that each stream all the weights (inception_v2's
    // 3x3 layers on 14x14 and 7x7 maps, 2 threads: 20-30% faster split, 1.7-2.4 MB of
    // weights; the whole model 9%).
    const double weight_bytes = double(matrices) * double(Cb * Mb) * kB * kB * sizeof(float);
    const int64_t whole_chunks = N * ((tiles + chunk - 1) / chunk);
    const int64_t parts =
        width > 1 && weight_bytes > 0.5 * double(l2_cache_bytes()) && whole_chunks < 2 * width
            ? std::min(width, Mb)
            : 1;
    if (width > 1 && parts == 1) {
      // As many chunks of an image as a multiple of the threads, so they finish together.
      int64_t per_image = (tiles + chunk - 1) / chunk;
      if (N < width) per_image = (per_image + width - 1) / width * width;
      chunk = std::max<int64_t>(8, (tiles + per_image - 1) / per_image);
    }
    chunk = std::min(chunk, tiles);
    const int64_t in_image = Cb * H * W * kB, out_image = Mb * g.out_h * g.out_w * kB;
    // The 16 products of a chunk, blocks [b0, b1) of the outputs, as blocked 1x1
    // convolutions over its tiles.
    auto products = [&](const float* v, float* m, int64_t count, int64_t xi, int64_t b0,
                        int64_t b1) {
      vmath::NchwcConvArgs p;
      p.x = v + xi * Cb * count * kB;
      p.x_block_stride = count * kB;
      p.x_lane_stride = 1;
      p.x_col_stride = kB;
      p.x_row_stride = count * kB;
      p.in_channels = in_channels_;
      p.in_h = 1;
      p.in_w = count;
      p.out_h = 1;
      p.out_w = count;
      p.w = weights_.data<float>() + xi * Mb * Cb * kB * kB;
      p.y = m + xi * Mb * count * kB;
      p.epilogue.bias = zero_bias_.data();
      vmath::nchwc_conv(p, b0, b1, 0, count);
    };
    const int64_t chunks = (tiles + chunk - 1) / chunk;
    parallel_items(size_t(N * chunks * parts), macs, [&](size_t task) {
      const int64_t part = int64_t(task) % parts, n = int64_t(task) / parts / chunks,
                    c = int64_t(task) / parts % chunks;
      const int64_t b0 = Mb * part / parts, b1 = Mb * (part + 1) / parts;
      vmath::NchwcWinogradTiles gc = g;
      gc.first = c * chunk;
      gc.count = std::min(chunk, tiles - gc.first);
      float* v = thread_scratch<float>(size_t(matrices * Cb * gc.count * kB), 2);
      float* m = thread_scratch<float>(size_t(matrices * Mb * gc.count * kB), 3);
      vmath::nchwc_winograd_input(source + n * in_image, Cb, 0, Cb, gc, v);
      for (int64_t xi = 0; xi < matrices; ++xi) products(v, m, gc.count, xi, b0, b1);
      vmath::NchwcEpilogue ei = e;
      ei.z = z ? z->data<float>() + n * out_image : nullptr;
      vmath::nchwc_winograd_output(m, Mb, b0, b1, gc, ei, y.data<float>() + n * out_image);
    });
  }

  // Plain [N, C, positions] to blocked [N, ceil(C/16), positions, 16], padding lanes zero,
  // a block per task.
  static void to_blocked(const float* x, int64_t N, int64_t C, int64_t positions, float* out) {
    const int64_t Cb = blocks_of(C);
    parallel_items(size_t(N * Cb), double(N * Cb * positions * kB) * 2, [&](size_t task) {
      const int64_t n = int64_t(task) / Cb, b = int64_t(task) % Cb;
      vmath::nchwc_planes_to_block(x + (n * C + b * kB) * positions, positions, positions,
                                   std::min(kB, C - b * kB), out + int64_t(task) * positions * kB);
    });
  }

  static void pad_plane(const float* src, float* dst, int64_t H, int64_t W, int64_t HP, int64_t WP,
                        int64_t PT, int64_t PL, int64_t lanes) {
    const int64_t row = WP * lanes;
    std::fill(dst, dst + PT * row, 0.0f);
    for (int64_t h = 0; h < H; ++h) {
      float* d = dst + (PT + h) * row;
      std::fill(d, d + PL * lanes, 0.0f);
      std::memcpy(d + PL * lanes, src + h * W * lanes, size_t(W * lanes) * sizeof(float));
      std::fill(d + (PL + W) * lanes, d + row, 0.0f);
    }
    std::fill(dst + (PT + H) * row, dst + HP * row, 0.0f);
  }

  WindowAttrs attrs_;
  bool depthwise_;
  int64_t winograd_;              // 0, or Winograd's output tile (2 or 4): weights_ then
                                  // holds its 16 or 36 transformed matrices
  std::vector<float> zero_bias_;  // the Winograd products' bias
  int64_t out_channels_, in_channels_;
  std::vector<int64_t> kernel_;
  Tensor weights_;  // blocked (vmath/nchwc.h); 64-byte aligned, as the tiles' loads want
  vmath::NchwcEpilogue epilogue_;
  bool has_sum_;
  std::vector<float> constant_bias_;  // B padded to whole blocks when it is a constant
};

// Winograd for a dense 3x3 stride-1 convolution with enough channels that the tile
// transforms cost less than the multiply-adds they save: the output tile, 4 (F(4x4, 3x3))
// or 2 (F(2x2, 3x3)), 0 for none. NXRT_NCHWC_NO_WINOGRAD=1 keeps the direct tiles and
// NXRT_WINOGRAD_TILE=2 the smaller tiles (to compare).
int64_t winograd_tile(const WindowAttrs& w, bool depthwise, int64_t KH, int64_t KW, int64_t C,
                      int64_t M) {
  static const bool disabled = std::getenv("NXRT_NCHWC_NO_WINOGRAD") != nullptr;
  static const char* forced = std::getenv("NXRT_WINOGRAD_TILE");
  auto ones = [](const std::vector<int64_t>& v) {
    return std::all_of(v.begin(), v.end(), [](int64_t s) { return s == 1; });
  };
  const bool eligible = !disabled && !depthwise && KH == 3 && KW == 3 && ones(w.strides) &&
                        ones(w.dilations) && C >= kWinogradMinInputs && M >= kWinogradMinOutputs;
  if (!eligible) return 0;
  if (forced) return std::strcmp(forced, "2") == 0 ? 2 : 4;
  // F(4x4, 3x3) holds 36 transformed matrices of C x M weights, which deep layers stream
  // for few tiles (their maps are small): alone, 512 x 512 on 7 x 7 took 1.54 ms with it
  // against 1.23 with F(2x2, 3x3), and inside ResNet-50 256 x 256 on 14 x 14 took 10-20%
  // longer; up to 128 x 256 it wins (64 x 64 on 56 x 56 in ResNet-50: 0.95 -> 0.57 ms;
  // 32 x 128 on 27 x 27 alone: 364 -> 195 us).
  return C * M <= kWinogradF43MaxWeights ? 4 : 2;
}

}  // namespace

Expected<KernelPtr> create_nchwc_conv(KernelInit& init) {
  AttrReader attrs(init.node);
  WindowAttrs window;
  int64_t group = 1;
  NXRT_RETURN_IF_ERROR(read_conv_attrs(init, attrs, window, group));
  for (size_t i = 0; i < 4; ++i)
    if (init.has_input(i) && init.input_type(i) != DataType::kFloat)
      return init.unsupported_type(i);
  const Tensor* w = init.constant_input(1);
  if (!w || w->dtype() != DataType::kFloat || w->rank() != 4)
    return init.error(StatusCode::kInvalidGraph,
                      "NchwcConv needs constant float weights W [M, C, kh, kw]");
  const int64_t M = w->shape()[0], Cg = w->shape()[1], KH = w->shape()[2], KW = w->shape()[3];
  if (w->numel() == 0)
    return init.error(StatusCode::kInvalidGraph, "NchwcConv weights W ", w->shape().to_string(),
                      " are empty");
  const bool depthwise = group > 1;
  if (depthwise && (Cg != 1 || group != M))
    return init.error(StatusCode::kInvalidGraph, "NchwcConv takes group 1 or depthwise (group ",
                      "= M, one input channel each); got group ", group, " and W ",
                      w->shape().to_string());
  if (!window.kernel_shape.empty() &&
      (window.kernel_shape.size() != 2 || window.kernel_shape[0] != KH ||
       window.kernel_shape[1] != KW))
    return init.error(StatusCode::kInvalidGraph, "kernel_shape does not match W ",
                      w->shape().to_string());
  NXRT_ASSIGN_OR_RETURN(const std::optional<FusedActivation> fused,
                        read_fused_activation(init, attrs, "NchwcConv"));
  vmath::NchwcEpilogue e;
  if (fused) {
    e.has_activation = true;
    e.activation = fused->fn;
    e.params = fused->params;
  }
  e.post_scale = attrs.get_float("post_scale", 1.0f);
  e.post_shift = attrs.get_float("post_shift", 0.0f);
  NXRT_RETURN_IF_ERROR(attrs.status());
  const int64_t Mb = blocks_of(M), Cb = blocks_of(Cg), taps = KH * KW;
  const float* src = w->data<float>();
  const int64_t winograd = winograd_tile(window, depthwise, KH, KW, Cg, M);
  const int64_t matrices = (winograd + 2) * (winograd + 2);
  // Blocked weights, zero-padded: depthwise [Mb][kh][kw][16], dense
  // [Mb][Cb][kh][kw][16 inputs][16 outputs], Winograd [16 or 36][Mb][Cb][16 inputs][16
  // outputs].
  const int64_t count =
      depthwise ? Mb * taps * kB : (winograd > 0 ? matrices : taps) * Mb * Cb * kB * kB;
  NXRT_ASSIGN_OR_RETURN(Tensor blocked, Tensor::allocate(DataType::kFloat, Shape{count}));
  float* dst = blocked.data<float>();
  if (depthwise) {
    for (int64_t m = 0; m < M; ++m)
      for (int64_t t = 0; t < taps; ++t) dst[(m / kB * taps + t) * kB + m % kB] = src[m * taps + t];
  } else if (winograd > 0) {
    float u[vmath::kWinogradF43Matrices];
    const int64_t matrix = Mb * Cb * kB * kB;
    for (int64_t m = 0; m < M; ++m)
      for (int64_t c = 0; c < Cg; ++c) {
        if (winograd == 4)
          vmath::winograd_f43_filter(src + (m * Cg + c) * 9, u, 1);
        else
          vmath::winograd_f23_filter(src + (m * Cg + c) * 9, u, 1);
        for (int64_t xi = 0; xi < matrices; ++xi)
          dst[xi * matrix + ((m / kB * Cb + c / kB) * kB + c % kB) * kB + m % kB] = u[xi];
      }
  } else {
    for (int64_t m = 0; m < M; ++m)
      for (int64_t c = 0; c < Cg; ++c)
        for (int64_t t = 0; t < taps; ++t)
          dst[(((m / kB * Cb + c / kB) * taps + t) * kB + c % kB) * kB + m % kB] =
              src[(m * Cg + c) * taps + t];
  }
  init.absorb_constant(1);
  init.set_all_outputs(DataType::kFloat);
  std::vector<float> constant_bias;
  if (const Tensor* b = init.constant_input(2)) {
    constant_bias.resize(size_t(Mb * kB));
    Status st = padded_bias(b, M, constant_bias.data());
    if (!st.ok()) return init.error(st.code(), st.message());
  }
  return make_kernel<NchwcConvKernel>(std::move(window), depthwise, winograd, M, Cg,
                                      std::vector<int64_t>{KH, KW}, std::move(blocked), e,
                                      init.has_input(3), std::move(constant_bias));
}

namespace {

class NchwcPoolKernel final : public Kernel {
 public:
  NchwcPoolKernel(WindowAttrs attrs, vmath::NchwcPool kind)
      : attrs_(std::move(attrs)), kind_(kind) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    NXRT_RETURN_IF_ERROR(check_blocked(x, "input X"));
    const int64_t N = x.shape()[0], Cb = x.shape()[1];
    const int64_t in_spatial[2] = {x.shape()[2], x.shape()[3]};
    Window win;
    NXRT_RETURN_IF_ERROR(resolve_window(attrs_, in_spatial, attrs_.kernel_shape, win));
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, Shape{N, Cb, win.out[0], win.out[1], kB}));
    if (y->numel() == 0) return Status();
    vmath::NchwcWindowArgs a = window_args(win);
    a.x = x.data<float>();
    a.y = y->data<float>();
    // Images and blocks are one run of planes: plane p is block p of the first image.
    parallel_rows(N * Cb, a.out_h, double(y->numel() * win.kernel_size()),
                  [&](int64_t plane, int64_t r0, int64_t r1) {
                    vmath::nchwc_pool(a, kind_, plane, plane + 1, r0, r1);
                  });
    return Status();
  }

 private:
  WindowAttrs attrs_;
  vmath::NchwcPool kind_;
};

class NchwcGlobalPoolKernel final : public Kernel {
 public:
  explicit NchwcGlobalPoolKernel(bool max) : max_(max) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    NXRT_RETURN_IF_ERROR(check_blocked(x, "input X"));
    const Shape& s = x.shape();
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, Shape{s[0], s[1], 1, 1, kB}));
    const int64_t planes = s[0] * s[1], positions = s[2] * s[3];
    const float* px = x.data<float>();
    float* py = y->data<float>();
    parallel_rows(planes, 1, double(x.numel()) * 4, [&](int64_t p, int64_t, int64_t) {
      float acc[kB];
      const float* src = px + p * positions * kB;
      for (int64_t l = 0; l < kB; ++l) acc[l] = max_ ? -__builtin_inff() : 0.0f;
      for (int64_t i = 0; i < positions; ++i)
        for (int64_t l = 0; l < kB; ++l)
          acc[l] = max_ ? std::max(acc[l], src[i * kB + l]) : acc[l] + src[i * kB + l];
      for (int64_t l = 0; l < kB; ++l)
        py[p * kB + l] = max_ || positions == 0 ? acc[l] : acc[l] / float(positions);
    });
    return Status();
  }

 private:
  bool max_;
};

// y = act(x * scale[c] + shift[c]) on the blocked layout: nxrt ChannelAffine (a
// BatchNormalization no convolution took, with its Mul/Add/activation) between blocked
// ops. The per-channel constants are padded to whole blocks once.
class NchwcChannelAffineKernel final : public Kernel {
 public:
  NchwcChannelAffineKernel(std::vector<float> scale, std::vector<float> shift,
                           std::optional<FusedActivation> activation)
      : scale_(std::move(scale)), shift_(std::move(shift)), activation_(activation) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    NXRT_RETURN_IF_ERROR(check_blocked(x, "input X"));
    const Shape& s = x.shape();
    if (s[1] * kB != int64_t(scale_.size()))
      return invalid_argument("input X ", s.to_string(), " does not hold the ", scale_.size(),
                              " padded channels of the scale");
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, s));
    const int64_t planes = s[0] * s[1], positions = s[2] * s[3];
    const float* px = x.data<float>();
    float* py = y->data<float>();
    const bool act = activation_.has_value();
    const vmath::Unary fn = act ? activation_->fn : vmath::Unary::kIdentity;
    const vmath::UnaryParams params = act ? activation_->params : vmath::UnaryParams{};
    parallel_rows(planes, 1, double(x.numel()) * 2, [&](int64_t plane, int64_t, int64_t) {
      const int64_t b = plane % s[1];
      vmath::nchwc_affine(px + plane * positions * kB, positions, scale_.data() + b * kB,
                          shift_.data() + b * kB, act, fn, params, py + plane * positions * kB);
    });
    return Status();
  }

 private:
  std::vector<float> scale_, shift_;
  std::optional<FusedActivation> activation_;
};

class NchwcToNchwKernel final : public Kernel {
 public:
  explicit NchwcToNchwKernel(int64_t channels) : channels_(channels) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    NXRT_RETURN_IF_ERROR(check_blocked(x, "input X"));
    const Shape& s = x.shape();
    if (blocks_of(channels_) != s[1])
      return invalid_argument("input X ", s.to_string(), " does not hold ", channels_, " channels");
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, Shape{s[0], channels_, s[2], s[3]}));
    const int64_t positions = s[2] * s[3], N = s[0], C = channels_;
    const float* px = x.data<float>();
    float* py = y->data<float>();
    parallel_rows(N * s[1], 1, double(x.numel()) * 2, [&](int64_t item, int64_t, int64_t) {
      const int64_t n = item / s[1], b = item % s[1];
      const int64_t lanes = std::min(kB, C - b * kB);
      vmath::nchwc_block_to_planes(px + item * positions * kB, positions, lanes,
                                   py + (n * C + b * kB) * positions);
    });
    return Status();
  }

 private:
  int64_t channels_;
};

}  // namespace

Expected<KernelPtr> create_nchwc_max_pool(KernelInit& init) {
  AttrReader attrs(init.node);
  WindowAttrs w;
  Status st = read_window_attrs(attrs, true, w);
  if (!st.ok()) return init.error(st.code(), st.message());
  if (w.kernel_shape.size() != 2)
    return init.error(StatusCode::kInvalidGraph, "needs a 2-D kernel_shape");
  if (init.input_type(0) != DataType::kFloat) return init.unsupported_type(0);
  init.set_all_outputs(DataType::kFloat);
  return make_kernel<NchwcPoolKernel>(std::move(w), vmath::NchwcPool::kMax);
}

Expected<KernelPtr> create_nchwc_average_pool(KernelInit& init) {
  AttrReader attrs(init.node);
  WindowAttrs w;
  const bool include_pad = attrs.get_int("count_include_pad", 0) != 0;
  Status st = read_window_attrs(attrs, true, w);
  if (!st.ok()) return init.error(st.code(), st.message());
  if (w.kernel_shape.size() != 2)
    return init.error(StatusCode::kInvalidGraph, "needs a 2-D kernel_shape");
  if (init.input_type(0) != DataType::kFloat) return init.unsupported_type(0);
  init.set_all_outputs(DataType::kFloat);
  return make_kernel<NchwcPoolKernel>(std::move(w), include_pad
                                                        ? vmath::NchwcPool::kAverageIncludePad
                                                        : vmath::NchwcPool::kAverage);
}

Expected<KernelPtr> create_nchwc_global_average_pool(KernelInit& init) {
  if (init.input_type(0) != DataType::kFloat) return init.unsupported_type(0);
  init.set_all_outputs(DataType::kFloat);
  return make_kernel<NchwcGlobalPoolKernel>(false);
}

Expected<KernelPtr> create_nchwc_global_max_pool(KernelInit& init) {
  if (init.input_type(0) != DataType::kFloat) return init.unsupported_type(0);
  init.set_all_outputs(DataType::kFloat);
  return make_kernel<NchwcGlobalPoolKernel>(true);
}

Expected<KernelPtr> create_nchwc_channel_affine(KernelInit& init) {
  if (init.input_type(0) != DataType::kFloat) return init.unsupported_type(0);
  const Tensor* scale = init.constant_input(1);
  const Tensor* shift = init.constant_input(2);
  if (!scale || !shift || scale->dtype() != DataType::kFloat ||
      shift->dtype() != DataType::kFloat || scale->numel() != shift->numel())
    return init.error(StatusCode::kInvalidGraph,
                      "NchwcChannelAffine needs constant float scale and shift of one length");
  AttrReader attrs(init.node);
  NXRT_ASSIGN_OR_RETURN(std::optional<FusedActivation> activation,
                        read_fused_activation(init, attrs, "NchwcChannelAffine"));
  const int64_t C = scale->numel();
  std::vector<float> a(size_t(blocks_of(C) * kB), 0.0f), b(a.size(), 0.0f);
  std::copy(scale->data<float>(), scale->data<float>() + C, a.begin());
  std::copy(shift->data<float>(), shift->data<float>() + C, b.begin());
  init.set_all_outputs(DataType::kFloat);
  return make_kernel<NchwcChannelAffineKernel>(std::move(a), std::move(b), activation);
}

Expected<KernelPtr> create_nchwc_to_nchw(KernelInit& init) {
  AttrReader attrs(init.node);
  const int64_t channels = attrs.get_int("channels", -1);
  NXRT_RETURN_IF_ERROR(attrs.status());
  if (channels <= 0)
    return init.error(StatusCode::kInvalidGraph, "needs a positive 'channels' attribute");
  if (init.input_type(0) != DataType::kFloat) return init.unsupported_type(0);
  init.set_all_outputs(DataType::kFloat);
  return make_kernel<NchwcToNchwKernel>(channels);
}

}  // namespace nxrt::cpu
