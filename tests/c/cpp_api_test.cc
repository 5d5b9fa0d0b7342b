// Tests of the header-only C++ layer (nxrt.hpp). Built twice: with -fno-exceptions (the
// default, Status/Result mode) and with NXRT_CPP_EXCEPTIONS (throwing mode).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "nxrt/nxrt.hpp"

#define SILERO NXRT_SHARED_DIR "/models/silero_vad_v5.onnx"

#define CHECK(cond)                                                                 \
  do {                                                                              \
    if (!(cond)) {                                                                  \
      std::fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      std::exit(1);                                                                 \
    }                                                                               \
  } while (0)

namespace {

void fill(float* samples) {
  for (int i = 0; i < 512; ++i)
    samples[i] = 0.5f * float(std::sin(i * 2.0 * 3.14159265358979 * 440.0 / 16000.0));
}

void test_common() {
  CHECK(nxrt::version() == nxrt_get_version());
  nxrt::Env env = nxrt::Env::create().value();
  auto options = nxrt::SessionOptions::create().value();
  CHECK(options.set_intra_op_threads(1).ok());
  CHECK(options.set_graph_optimization_level(NXRT_OPT_ALL).ok());
  nxrt::Session session = nxrt::Session::create(env, SILERO, &options).value();

  CHECK(session.input_count() == 3 && session.output_count() == 2);
  const auto inputs = session.inputs();
  CHECK(inputs[0].name == "input" && inputs[2].dtype == NXRT_DTYPE_INT64);
  CHECK(inputs[1].has_shape && inputs[1].shape == (std::vector<int64_t>{2, -1, 128}));
  CHECK(session.output(1).name == "stateN");

  float samples[512];
  fill(samples);
  float state[256] = {};
  int64_t sr = 16000;
  auto input = nxrt::Tensor::view(samples, {1, 512}).value();
  auto state_t = nxrt::Tensor::view(state, {2, 1, 128}).value();
  auto sr_t = nxrt::Tensor::view(&sr, 1, {}).value();
  CHECK(input.shape() == (std::vector<int64_t>{1, 512}) && input.dtype() == NXRT_DTYPE_FLOAT);

  auto outputs = session.run({{"input", &input}, {"state", &state_t}, {"sr", &sr_t}}).value();
  CHECK(outputs.size() == 2);
  CHECK(std::fabs(outputs[0].data<float>()[0] - 0.1242754f) < 1e-4f);
  CHECK(outputs[0].data<int64_t>() == nullptr);  // typed access checks the dtype

  // Bound outputs, written in place: the next state goes straight back into the feed
  // buffer's twin, and a moved-from tensor is left empty.
  float prob = -1;
  float next_state[256];
  auto prob_t = nxrt::Tensor::view(&prob, 1, {1, 1}).value();
  auto next_t = nxrt::Tensor::view(next_state, {2, 1, 128}).value();
  nxrt::Status s = session.run_into({{"input", &input}, {"state", &state_t}, {"sr", &sr_t}},
                                    {"output", "stateN"}, {&prob_t, &next_t});
  CHECK(s.ok());
  CHECK(prob == outputs[0].data<float>()[0]);
  CHECK(std::memcmp(next_state, outputs[1].raw(), sizeof next_state) == 0);

  nxrt::Tensor moved = std::move(prob_t);
  CHECK(moved.get() != nullptr && prob_t.get() == nullptr);

  auto allocated = nxrt::Tensor::allocate(NXRT_DTYPE_INT32, {3}).value();
  CHECK(allocated.element_count() == 3 && allocated.data<int32_t>()[2] == 0);
}

#ifndef NXRT_CPP_EXCEPTIONS
void test_errors_without_exceptions() {
  nxrt::Env env = nxrt::Env::create().value();
  auto missing = nxrt::Session::create(env, "/no/such/model.onnx");
  CHECK(!missing.ok() && missing.status().code() == NXRT_NO_SUCH_FILE);
  CHECK(missing.status().message().find("model.onnx") != std::string::npos);
  CHECK(missing.status().to_string().rfind("NoSuchFile: ", 0) == 0);

  nxrt::Session session = nxrt::Session::create(env, SILERO).value();
  float samples[512] = {};
  auto input = nxrt::Tensor::view(samples, {1, 512}).value();
  auto r = session.run({{"input", &input}});
  CHECK(!r.ok() && r.status().code() == NXRT_INVALID_ARGUMENT);
  CHECK(r.status().message().find("missing") != std::string::npos);

  auto bad = nxrt::Tensor::view(samples, {2, 512});
  CHECK(!bad.ok() && bad.status().message().find("too small") != std::string::npos);
  auto options = nxrt::SessionOptions::create().value();
  CHECK(options.set_inter_op_threads(-3).code() == NXRT_INVALID_ARGUMENT);
}
#else
void test_errors_with_exceptions() {
  nxrt::Env env = nxrt::Env::create().value();
  bool thrown = false;
  try {
    auto missing = nxrt::Session::create(env, "/no/such/model.onnx");
    (void)missing;
  } catch (const nxrt::Exception& e) {
    thrown = true;
    CHECK(e.code() == NXRT_NO_SUCH_FILE);
    CHECK(std::string(e.what()).find("NoSuchFile") != std::string::npos);
  }
  CHECK(thrown);

  nxrt::Session session = nxrt::Session::create(env, SILERO).value();
  float samples[512] = {};
  auto input = nxrt::Tensor::view(samples, {1, 512}).value();
  thrown = false;
  try {
    auto outputs = session.run({{"input", &input}});
    (void)outputs;
  } catch (const std::exception& e) {  // also a std::runtime_error
    thrown = std::string(e.what()).find("missing") != std::string::npos;
  }
  CHECK(thrown);
}
#endif

}  // namespace

int main() {
  test_common();
#ifndef NXRT_CPP_EXCEPTIONS
  test_errors_without_exceptions();
  std::printf("cpp_api_test (no exceptions): ok\n");
#else
  test_errors_with_exceptions();
  std::printf("cpp_api_test (exceptions): ok\n");
#endif
  return 0;
}
