// The fixed cost of a run through the C API (include/nxrt/nxrt.h), Google Benchmark: a
// chain of N Add nodes on 16 floats (each adds the input again: no pass can fold the
// chain into fewer nodes), one thread, the input a view
// and the output bound to a tensor made once, so a run allocates nothing. The bar
// is under 1 us plus under 0.1 us per node; the time of N = 1 is the fixed cost, the
// slope between N = 10 and N = 100 the cost per node.
//
//   build/bench/micro/nxrt_c_api_bench [--benchmark_filter=REGEX]
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "model_builder.h"  // tests/cpp: writes the model without the onnx package
#include "nxrt/nxrt.h"

namespace {

std::string add_chain(int nodes) {
  std::vector<nxrt::testing::NodeSpec> specs;
  std::string previous = "x";
  for (int i = 0; i < nodes; ++i) {
    std::string out = i + 1 == nodes ? std::string("y") : std::string("v");
    if (i + 1 < nodes) out += std::to_string(i);
    specs.push_back({"Add", {previous, "x"}, {out}});
    previous = out;
  }
  return nxrt::testing::build_model(specs, {"x"}, {"y"}, {}, 17, 8, {{1, 16}});
}

// Stops the benchmark with the library's message when a call fails.
bool ok(benchmark::State& state, nxrt_code code) {
  if (code == NXRT_OK) return true;
  state.SkipWithError(nxrt_last_error_message());
  return false;
}

void BM_CApiAddChain(benchmark::State& state) {
  const int nodes = int(state.range(0));
  const std::string model = add_chain(nodes);
  std::vector<float> x(16, 0.5f);
  const int64_t shape[2] = {1, 16};
  nxrt_env* env = nullptr;
  nxrt_session_options* options = nullptr;
  nxrt_session* session = nullptr;
  nxrt_tensor* input = nullptr;
  nxrt_tensor* output = nullptr;
  // Each step runs only when the ones before it succeeded; everything made is freed below.
  const bool ready =
      ok(state, nxrt_env_create(NXRT_API_VERSION, &env, nullptr)) &&
      ok(state, nxrt_session_options_create(&options, nullptr)) &&
      ok(state, nxrt_session_options_set_intra_op_threads(options, 1, nullptr)) &&
      ok(state, nxrt_session_create_from_memory(env, model.data(), model.size(), options, &session,
                                                nullptr)) &&
      ok(state, nxrt_tensor_create_view(NXRT_DTYPE_FLOAT, shape, 2, x.data(),
                                        x.size() * sizeof(float), &input, nullptr)) &&
      ok(state, nxrt_tensor_create(NXRT_DTYPE_FLOAT, shape, 2, &output, nullptr));
  const char* input_name = "x";
  const char* output_name = "y";
  if (ready) {
    for (auto _ : state) {
      if (!ok(state, nxrt_session_run(session, nullptr, &input_name, &input, 1, &output_name,
                                      &output, 1, nullptr)))
        break;
    }
    const float y0 = static_cast<const float*>(nxrt_tensor_data(output))[0];
    if (y0 != 0.5f * float(nodes + 1)) state.SkipWithError("the chain computed a wrong sum");
    state.counters["nodes"] = nodes;
  }
  nxrt_tensor_destroy(output);
  nxrt_tensor_destroy(input);
  nxrt_session_destroy(session);
  nxrt_session_options_destroy(options);
  nxrt_env_destroy(env);
}
BENCHMARK(BM_CApiAddChain)->Arg(1)->Arg(10)->Arg(100)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
