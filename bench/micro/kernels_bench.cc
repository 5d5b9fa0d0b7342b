// Kernel micro-benchmarks (Google Benchmark), one thread unless a benchmark says
// otherwise: the float GEMM (square, and the shapes convolutions hand it), the blocked
// (NCHWc) convolution, the 8-bit GEMM, and elementwise ops on 1M floats through the eager
// path a model's node takes.
// Counters: GFLOP/s (2 per multiply-add) or GOP/s, and GB/s for the elementwise ops
// (bytes read plus bytes written). Compare them with the machine's measured peaks in
// docs/PERFORMANCE.md.
//
//   build/bench/micro/nxrt_kernels_bench [--benchmark_filter=REGEX]
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <tuple>
#include <vector>

#include "core/parallel.h"
#include "eager/eager.h"
#include "ep/cpu/gemm/gemm.h"
#include "ep/cpu/gemm/nbits_gemv.h"
#include "ep/cpu/gemm/nbits_q8.h"
#include "ep/cpu/gemm/nbits_strips.h"
#include "ep/cpu/gemm/qgemm.h"
#include "ep/cpu/vmath/nchwc.h"

namespace {

using nxrt::gemm::PackedMatrix;

std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// Floats on 64-byte boundaries, as the runtime's arena and blocked weights are (unaligned
// vectors split loads and stores across cache lines and understate the kernels).
struct AlignedFloats {
  explicit AlignedFloats(const std::vector<float>& v) : data_(v.size() + 16) {
    offset_ = (64 - reinterpret_cast<uintptr_t>(data_.data()) % 64) % 64 / sizeof(float);
    std::copy(v.begin(), v.end(), data_.begin() + std::ptrdiff_t(offset_));
  }
  float* data() { return data_.data() + offset_; }
  std::vector<float> data_;
  size_t offset_ = 0;
};

void set_flops(benchmark::State& state, double macs) {
  state.counters["GFLOP/s"] = benchmark::Counter(
      2.0 * macs, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}

// C = A * B, all row-major and unpacked (both operands packed per call).
void BM_Sgemm(benchmark::State& state) {
  const int64_t n = state.range(0);
  const auto a = random_floats(size_t(n * n), 1), b = random_floats(size_t(n * n), 2);
  std::vector<float> c(size_t(n * n));
  for (auto _ : state) {
    nxrt::gemm::sgemm(false, false, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
    benchmark::DoNotOptimize(c.data());
  }
  set_flops(state, double(n) * double(n) * double(n));
}
BENCHMARK(BM_Sgemm)->Arg(256)->Arg(512)->Arg(1024)->Unit(benchmark::kMicrosecond);

// Each micro-kernel the CPU runs (not only the dispatched one) on 256^3 and on a large
// 1x1 convolution's product (64 outputs, 3136 positions, 256 inputs): args kernel, M, N, K.
void BM_SgemmPerKernel(benchmark::State& state) {
  const auto kernel = nxrt::gemm::MicroKernel(state.range(0));
  if (!nxrt::gemm::kernel_available(kernel)) {
    state.SkipWithError("micro-kernel not available on this CPU");
    return;
  }
  const int64_t M = state.range(1), N = state.range(2), K = state.range(3);
  const auto a = random_floats(size_t(M * K), 1), b = random_floats(size_t(K * N), 2);
  std::vector<float> c(size_t(M * N));
  for (auto _ : state) {
    nxrt::gemm::sgemm(false, false, M, N, K, 1.0f, a.data(), K, b.data(), N, 0.0f, c.data(), N,
                      kernel);
    benchmark::DoNotOptimize(c.data());
  }
  set_flops(state, double(M) * double(N) * double(K));
}
void per_kernel_shapes(benchmark::internal::Benchmark* b) {
  using nxrt::gemm::MicroKernel;
  for (MicroKernel k :
       {MicroKernel::kPortable, MicroKernel::kAvx2, MicroKernel::kAvx512, MicroKernel::kAvx512x48})
    for (auto [m, n, k_] : {std::tuple{256, 256, 256}, std::tuple{64, 3136, 256}})
      b->Args({int64_t(k), m, n, k_});
}
BENCHMARK(BM_SgemmPerKernel)->Apply(per_kernel_shapes)->Unit(benchmark::kMicrosecond);

// The small convolutions of the audio models (Silero, openWakeWord) and an LSTM step's gate
// product with their weights packed once as the right operand (Y = W * col computed as
// col^T * W^T): args M (outputs), N (positions), K (inputs x taps).
void BM_SgemmPackedRightSmallConv(benchmark::State& state) {
  const int64_t M = state.range(0), N = state.range(1), K = state.range(2);
  const auto w = random_floats(size_t(M * K), 6), col = random_floats(size_t(K * N), 7);
  std::vector<float> y(size_t(M * N));
  const auto wt = PackedMatrix::pack_right(true, K, M, w.data(), K);
  for (auto _ : state) {
    nxrt::gemm::sgemm_packed_right(true, N, 1.0f, col.data(), N, wt, 0.0f, y.data(), N, true);
    benchmark::DoNotOptimize(y.data());
  }
  set_flops(state, double(M) * double(N) * double(K));
}
BENCHMARK(BM_SgemmPackedRightSmallConv)
    ->Args({258, 4, 256})
    ->Args({128, 4, 387})
    ->Args({64, 2, 384})
    ->Args({257, 5, 512})
    ->Args({512, 1, 128})
    ->Unit(benchmark::kMicrosecond);

// A convolution's product after im2col: constant weights (M x K, packed once) times a
// K x N column matrix read in place.
void BM_SgemmPackedLeft(benchmark::State& state) {
  const int64_t M = state.range(0), K = state.range(1), N = state.range(2);
  const auto w = random_floats(size_t(M * K), 1), col = random_floats(size_t(K * N), 2);
  const PackedMatrix packed = PackedMatrix::pack_left(false, M, K, w.data(), K);
  std::vector<float> c(size_t(M * N));
  for (auto _ : state) {
    nxrt::gemm::sgemm_packed_left(packed, false, N, 1.0f, col.data(), N, 0.0f, c.data(), N);
    benchmark::DoNotOptimize(c.data());
  }
  set_flops(state, double(M) * double(K) * double(N));
}
// (out channels, in channels * taps, positions): resnet's 1x1 64->256 at 56x56, a 3x3
// 256 -> 256 at 14x14, squeezenet's 3x3 16 -> 64 at 55x55 and its last 1x1 conv.
BENCHMARK(BM_SgemmPackedLeft)
    ->Args({256, 64, 3136})
    ->Args({256, 2304, 196})
    ->Args({64, 144, 3025})
    ->Args({1008, 512, 169})
    ->Unit(benchmark::kMicrosecond);

// A stride-1 3x3 convolution the way Conv runs it: B's rows are shifted views of a
// zero-bordered input (C planes of (H + 2) x (W + 2)), so nothing is copied per tap.
void BM_SgemmRowsConv3x3(benchmark::State& state) {
  const int64_t M = state.range(0), C = state.range(1), H = state.range(2), W = H;
  const int64_t WP = W + 2, HP = H + 2, plane = HP * WP, K = C * 9, N = H * WP;
  const auto w = random_floats(size_t(M * K), 1);
  auto x = random_floats(size_t(C * plane + 64 + 2), 2);
  const PackedMatrix packed = PackedMatrix::pack_left(false, M, K, w.data(), K);
  std::vector<const float*> rows;
  for (int64_t c = 0; c < C; ++c)
    for (int64_t kh = 0; kh < 3; ++kh)
      for (int64_t kw = 0; kw < 3; ++kw) rows.push_back(x.data() + c * plane + kh * WP + kw);
  std::vector<float> out(size_t(M * (N + 16)));
  if (!nxrt::gemm::sgemm_packed_left_rows(packed, N, rows.data(), 0, out.data(), N + 16)) {
    state.SkipWithError("no AVX-512 or AVX2 on this CPU: the row-pointer GEMM does not run");
    return;
  }
  for (auto _ : state) {
    nxrt::gemm::sgemm_packed_left_rows(packed, N, rows.data(), 0, out.data(), N + 16);
    benchmark::DoNotOptimize(out.data());
  }
  set_flops(state, double(M) * double(K) * double(H * W));  // useful work only
}
BENCHMARK(BM_SgemmRowsConv3x3)
    ->Args({64, 64, 56})
    ->Args({256, 256, 14})
    ->Args({128, 128, 28})
    ->Unit(benchmark::kMicrosecond);

// A convolution on the channel-blocked layout (NCHWc) the way a model runs it: blocked
// input, weights blocked once, bias and ReLU in the epilogue, one image, padding K / 2.
// Args: input channels, output channels, input size (square), kernel size, stride,
// threads. ResNet-50's 1x1 and 3x3 layers.
void BM_NchwcConv(benchmark::State& state) {
  const int64_t C = state.range(0), M = state.range(1), H = state.range(2), K = state.range(3),
                S = state.range(4), threads = state.range(5);
  if (!nxrt::vmath::nchwc_available()) {
    state.SkipWithError("no AVX-512 or AVX2 on this CPU: the blocked layout is off");
    return;
  }
  constexpr int64_t B = nxrt::vmath::kNchwcBlock;
  const int64_t cb = (C + B - 1) / B, mb = (M + B - 1) / B, pad = K / 2;
  const int64_t OH = (H + 2 * pad - K) / S + 1;
  AlignedFloats x(random_floats(size_t(cb * H * H * B), 1));
  AlignedFloats w(random_floats(size_t(mb * cb * K * K * B * B), 2));
  AlignedFloats bias(random_floats(size_t(mb * B), 3));
  AlignedFloats y(std::vector<float>(size_t(mb * OH * OH * B)));
  nxrt::vmath::NchwcConvArgs a;
  a.x = x.data();
  a.x_block_stride = H * H * B;
  a.x_lane_stride = 1;
  a.x_col_stride = B;
  a.x_row_stride = H * B;
  a.in_channels = C;
  a.in_h = a.in_w = H;
  a.pad_top = a.pad_left = pad;
  a.kernel_h = a.kernel_w = K;
  a.stride_h = a.stride_w = S;
  a.out_h = a.out_w = OH;
  a.w = w.data();
  a.y = y.data();
  a.epilogue.bias = bias.data();
  a.epilogue.has_activation = true;
  a.epilogue.activation = nxrt::vmath::Unary::kRelu;
  auto pool = nxrt::make_worker_pool(int(threads));
  nxrt::ParallelScope scope(pool.get());
  for (auto _ : state) {
    // Output blocks split between the threads, as NchwcConv splits a wide layer.
    nxrt::parallel_for(threads, [&](int64_t t) {
      nxrt::vmath::nchwc_conv(a, mb * t / threads, mb * (t + 1) / threads, 0, OH * OH);
    });
    benchmark::DoNotOptimize(y.data());
  }
  set_flops(state, double(M) * double(C) * double(K * K) * double(OH * OH));
}
BENCHMARK(BM_NchwcConv)
    ->Args({64, 64, 8, 1, 1, 1})
    ->Args({256, 64, 12, 1, 1, 1})
    ->Args({64, 256, 56, 1, 1, 1})
    ->Args({512, 1000, 13, 1, 1, 1})
    ->Args({256, 128, 56, 1, 1, 1})
    ->Args({256, 512, 56, 1, 2, 1})
    ->Args({1024, 256, 14, 1, 1, 1})
    ->Args({128, 128, 56, 3, 2, 1})
    ->Args({512, 512, 7, 3, 1, 1})
    ->Args({256, 128, 56, 1, 1, 2})
    ->Args({1024, 256, 14, 1, 1, 2})
    ->Args({128, 128, 56, 3, 2, 2})
    ->Args({512, 512, 7, 3, 1, 2})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// The float GEMM on two threads (a worker pool installed for the calling thread).
void BM_SgemmTwoThreads(benchmark::State& state) {
  const int64_t n = state.range(0);
  const auto a = random_floats(size_t(n * n), 1), b = random_floats(size_t(n * n), 2);
  std::vector<float> c(size_t(n * n));
  auto pool = nxrt::make_worker_pool(2);
  nxrt::ParallelScope scope(pool.get());
  for (auto _ : state) {
    nxrt::gemm::sgemm(false, false, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
    benchmark::DoNotOptimize(c.data());
  }
  set_flops(state, double(n) * double(n) * double(n));
}
BENCHMARK(BM_SgemmTwoThreads)->Arg(512)->Arg(1024)->Unit(benchmark::kMicrosecond)->UseRealTime();

// uint8 A times int8 B (packed once), int32 C.
void BM_Qgemm(benchmark::State& state) {
  const int64_t n = state.range(0);
  std::mt19937 rng(3);
  std::vector<uint8_t> a(size_t(n * n));
  std::vector<int8_t> b(size_t(n * n));
  for (auto& v : a) v = uint8_t(rng());
  for (auto& v : b) v = int8_t(rng());
  const int32_t zero = 0;
  const auto packed = nxrt::gemm::PackedQuantB::pack(n, n, b.data(), n, true, &zero, 1);
  std::vector<int32_t> c(size_t(n * n));
  for (auto _ : state) {
    nxrt::gemm::qgemm(n, a.data(), n, false, 128, packed, c.data(), n);
    benchmark::DoNotOptimize(c.data());
  }
  state.counters["GOP/s"] = benchmark::Counter(2.0 * double(n) * double(n) * double(n),
                                               benchmark::Counter::kIsIterationInvariantRate,
                                               benchmark::Counter::kIs1000);
}
BENCHMARK(BM_Qgemm)->Arg(256)->Arg(512)->Arg(1024)->Unit(benchmark::kMicrosecond);

// The 4-bit block-quantized product of a decode step (MatMulNBits, block 32) on
// SmolLM2-135M's feed-forward shape, K = 576, N = 1536, per kernel (arg 0: 1 AVX2 rows and
// 2 AVX-512 rows, up to 4; 3 the AVX-512 strips' tiles, what MatMulNBits does for more
// rows; 0 the float GEMM on a dequantized, packed copy, what it does for more rows
// without AVX-512; 4 and 5 the 8-bit A of accuracy_level 4, AVX-512 VNNI and AVX2,
// any number of rows) and rows (arg 1). The weights (442 KiB of codes) stay in L2, so this
// measures the unpacking, not memory.
void BM_NBitsRows(benchmark::State& state) {
  const auto kernel =
      state.range(0) == 1 ? nxrt::gemm::MicroKernel::kAvx2 : nxrt::gemm::MicroKernel::kAvx512;
  const int64_t K = 576, N = 1536, block = 32, rows = state.range(1);
  if (state.range(0) == 0) {
    const auto weights = random_floats(size_t(N * K), 9);
    const auto a = random_floats(size_t(rows * K), 10);
    std::vector<float> out(size_t(rows * N));
    const auto packed = PackedMatrix::pack_right(true, K, N, weights.data(), K);
    for (auto _ : state) {
      nxrt::gemm::sgemm_packed_right(false, rows, 1.0f, a.data(), K, packed, 0.0f, out.data(), N);
      benchmark::DoNotOptimize(out.data());
    }
    return;
  }
  std::mt19937 rng(5);
  std::vector<uint8_t> codes(size_t(N * K / 2));
  for (auto& c : codes) c = uint8_t(rng());
  const auto scale = random_floats(size_t(N * K / block), 6);
  const auto neg_zp_scale = random_floats(size_t(N * K / block), 7);
  const auto x = random_floats(size_t(K * rows), 8);
  state.counters["codes GB/s"] =
      benchmark::Counter(double(codes.size()), benchmark::Counter::kIsIterationInvariantRate,
                         benchmark::Counter::kIs1000);
  if (state.range(0) == 3) {  // AVX-512 strips (nbits_strips.h), any number of rows
    if (!nxrt::gemm::nbits_strips_available()) {
      state.SkipWithError("needs AVX-512");
      return;
    }
    const auto w = nxrt::gemm::NBitsStrips::pack(N, K, block, 4, codes.data(), scale.data(),
                                                 neg_zp_scale.data());
    std::vector<float> xp(size_t(nxrt::gemm::nbits_strips_x_floats(rows, K)));
    std::vector<float> scratch(size_t(nxrt::gemm::nbits_strips_scratch_floats(K)));
    std::vector<float> y(size_t(N * rows));
    for (auto _ : state) {
      nxrt::gemm::nbits_strips_prepare(x.data(), rows, K, xp.data());
      nxrt::gemm::nbits_strips_gemm(w, xp.data(), rows, 0, w.strips(), y.data(), N, scratch.data());
      benchmark::DoNotOptimize(y.data());
    }
    return;
  }
  if (state.range(0) >= 4) {  // 8-bit A (nbits_q8.h), any number of rows
    const auto q8 =
        state.range(0) == 4 ? nxrt::gemm::MicroKernel::kAvx512 : nxrt::gemm::MicroKernel::kAvx2;
    if (!nxrt::gemm::nbits_q8_available(q8)) {
      state.SkipWithError("kernel not available on this CPU");
      return;
    }
    std::vector<uint8_t> zero_point(scale.size());
    for (auto& z : zero_point) z = uint8_t(rng() % 16);
    const auto w = nxrt::gemm::NBitsQ8Strips::pack(N, K, block, 4, codes.data(), scale.data(),
                                                   zero_point.data());
    const int64_t row_bytes = nxrt::gemm::nbits_q8_row_bytes(K, block);
    std::vector<uint8_t> prepared(size_t(row_bytes * rows));
    std::vector<float> y(size_t(N * rows));
    for (auto _ : state) {
      for (int64_t r = 0; r < rows; ++r)
        nxrt::gemm::nbits_q8_prepare(x.data() + r * K, K, block, prepared.data() + r * row_bytes);
      nxrt::gemm::nbits_q8_gemm(w, prepared.data(), rows, 0, w.strips(), y.data(), N, q8);
      benchmark::DoNotOptimize(y.data());
    }
    return;
  }
  if (!nxrt::gemm::kernel_available(kernel) || rows > nxrt::gemm::kNBitsRowsAtOnce) {
    state.SkipWithError("kernel not available on this CPU, or too many rows for it");
    return;
  }
  const int64_t stride = nxrt::gemm::nbits_prepared_floats(K, block);
  std::vector<float> prepared(size_t(stride * rows)), y(size_t(N * rows));
  for (int64_t r = 0; r < rows; ++r)
    nxrt::gemm::nbits_prepare_row(x.data() + r * K, K, block, 4, prepared.data() + r * stride);
  const nxrt::gemm::NBitsWeights w{N, K, block, 4, codes.data(), scale.data(), neg_zp_scale.data()};
  for (auto _ : state) {
    nxrt::gemm::nbits_gemm_rows(w, prepared.data(), stride, rows, 0, N, y.data(), N, kernel);
    benchmark::DoNotOptimize(y.data());
  }
}
BENCHMARK(BM_NBitsRows)
    ->ArgsProduct({{0, 1, 2, 3, 4, 5}, {1, 2, 4, 8, 16, 32, 64}})
    ->Unit(benchmark::kMicrosecond);

// One ONNX op on float tensors of 1M elements through nxrt's eager path (the kernel a
// session runs, planned once and cached). Binary ops take two same-shape inputs.
// Inputs are uniform in [-1, 1], or in (0, 1] for `positive` (Log, Sqrt); every function here
// is branch-free per vector, so its speed does not depend on the values.
void run_elementwise(benchmark::State& state, const char* op, size_t inputs, int opset = 17,
                     bool positive = false) {
  constexpr int64_t kCount = int64_t(1) << 20;
  nxrt::eager::OpSpec spec;
  spec.op_type = op;
  spec.opset = opset;
  std::vector<nxrt::Value> values;
  std::vector<std::vector<float>> data;
  for (size_t i = 0; i < inputs; ++i) {
    data.push_back(random_floats(size_t(kCount), uint32_t(i + 1)));
    if (positive)
      for (float& v : data.back()) v = std::max(std::fabs(v), 1e-6f);
    spec.input_types.push_back(nxrt::DataType::kFloat);
    values.emplace_back(
        nxrt::Tensor(nxrt::DataType::kFloat, nxrt::Shape{kCount}, data.back().data()));
  }
  std::vector<nxrt::Value> outputs;
  for (auto _ : state) {
    outputs.clear();
    const nxrt::Status st = nxrt::eager::run(spec, values, outputs);
    if (!st.ok()) {
      state.SkipWithError(st.message().c_str());
      return;
    }
  }
  state.counters["GB/s"] = benchmark::Counter(double((inputs + 1) * kCount * sizeof(float)),
                                              benchmark::Counter::kIsIterationInvariantRate,
                                              benchmark::Counter::kIs1000);
}
#define NXRT_ELEMENTWISE(OP, ...)                                                     \
  void BM_##OP(benchmark::State& state) { run_elementwise(state, #OP, __VA_ARGS__); } \
  BENCHMARK(BM_##OP)->Unit(benchmark::kMicrosecond)
NXRT_ELEMENTWISE(Relu, 1);
NXRT_ELEMENTWISE(Sigmoid, 1);
NXRT_ELEMENTWISE(Tanh, 1);
NXRT_ELEMENTWISE(Erf, 1);
NXRT_ELEMENTWISE(Gelu, 1, 20);
NXRT_ELEMENTWISE(HardSwish, 1);
NXRT_ELEMENTWISE(HardSigmoid, 1);
NXRT_ELEMENTWISE(Exp, 1);
NXRT_ELEMENTWISE(Sin, 1);
NXRT_ELEMENTWISE(Log, 1, 17, true);
NXRT_ELEMENTWISE(Sqrt, 1, 17, true);
NXRT_ELEMENTWISE(Softplus, 1);
NXRT_ELEMENTWISE(Mish, 1, 18);
NXRT_ELEMENTWISE(Add, 2);
NXRT_ELEMENTWISE(Sub, 2);
NXRT_ELEMENTWISE(Mul, 2);
NXRT_ELEMENTWISE(Div, 2);
#undef NXRT_ELEMENTWISE

}  // namespace

BENCHMARK_MAIN();
