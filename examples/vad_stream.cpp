// Streaming voice activity detection with the nxrt C++ API (nxrt.hpp, no exceptions):
// reads a 16 kHz mono 16-bit WAV file, runs Silero VAD v5 on it frame by frame as audio
// would arrive from a microphone, and prints each speech segment as soon as it has ended.
//
//   vad_stream_cpp silero_vad_v5.onnx speech.wav
//
// The per-frame loop allocates nothing: the input tensors are views over fixed buffers,
// the outputs are bound (run_into), and the recurrent state ping-pongs between two
// tensors instead of being copied.
#include <array>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "nxrt/nxrt.hpp"

#include "common/vad_segmenter.h"
#include "common/wav_reader.h"

namespace {

constexpr int kSampleRate = 16000;
constexpr int kFrame = 512;   // 32 ms: the frame size Silero VAD v5 expects at 16 kHz
constexpr int kContext = 64;  // Silero prepends the previous frame's last 64 samples
constexpr int kStateSize = 2 * 1 * 128;

// Owns the WAV samples.
struct Audio {
  wav_audio wav{};
  ~Audio() { wav_audio_free(&wav); }
};

void print_segment(const vad_segment& s) {
  std::printf("segment: %.3f s -> %.3f s\n", double(s.start) / kSampleRate, double(s.end) / kSampleRate);
  std::fflush(stdout);
}

int fail(const char* what, const nxrt::Status& status) {
  std::fprintf(stderr, "vad_stream_cpp: %s: %s\n", what, status.to_string().c_str());
  return 1;
}

// Silero VAD v5 with its recurrent state, fed one frame at a time.
class SileroVad {
 public:
  static nxrt::Result<SileroVad> open(const nxrt::Env& env, const std::string& path) {
    auto options = nxrt::SessionOptions::create();
    if (!options) return options.status();
    // One thread each: the app owns its threads; nxrt runs on the caller's.
    if (auto s = options->set_intra_op_threads(1); !s.ok()) return s;
    if (auto s = options->set_inter_op_threads(1); !s.ok()) return s;
    auto session = nxrt::Session::create(env, path, &*options);
    if (!session) return session.status();
    SileroVad vad(std::move(*session));
    if (auto s = vad.bind(); !s.ok()) return s;
    return vad;
  }

  // Speech probability of the next kFrame samples (scaled to [-1, 1)).
  nxrt::Result<float> process(const float* samples) {
    Buffers& b = *buffers_;
    std::memmove(b.input.data(), b.input.data() + kFrame, kContext * sizeof(float));
    std::memcpy(b.input.data() + kContext, samples, kFrame * sizeof(float));
    const nxrt::NamedInput inputs[] = {{"input", &input_t_}, {"state", &state_t_[current_]}, {"sr", &sr_t_}};
    static const char* const output_names[] = {"output", "stateN"};
    nxrt::Tensor* const outputs[] = {&prob_t_, &state_t_[1 - current_]};
    nxrt::Status s = session_.run_into(inputs, 3, output_names, outputs, 2);
    if (!s.ok()) return s;
    current_ = 1 - current_;
    return b.prob[0];
  }

 private:
  // The tensors are views of these; kept on the heap so SileroVad can move freely.
  struct Buffers {
    std::array<float, kContext + kFrame> input{};
    std::array<std::array<float, kStateSize>, 2> state{};
    std::array<float, 1> prob{};
    int64_t sr = kSampleRate;
  };

  explicit SileroVad(nxrt::Session session)
      : session_(std::move(session)), buffers_(std::make_unique<Buffers>()) {}

  nxrt::Status bind() {
    if (session_.input_count() != 3 || session_.output_count() != 2)
      return nxrt::Status(NXRT_INVALID_ARGUMENT, "not Silero VAD v5 (inputs input/state/sr, outputs output/stateN)");
    Buffers& b = *buffers_;
    auto input = nxrt::Tensor::view(b.input.data(), b.input.size(), {1, kContext + kFrame});
    auto sr = nxrt::Tensor::view(&b.sr, 1, {});
    auto prob = nxrt::Tensor::view(b.prob.data(), b.prob.size(), {1, 1});
    auto s0 = nxrt::Tensor::view(b.state[0].data(), b.state[0].size(), {2, 1, 128});
    auto s1 = nxrt::Tensor::view(b.state[1].data(), b.state[1].size(), {2, 1, 128});
    for (const nxrt::Status* s : {&input.status(), &sr.status(), &prob.status(), &s0.status(), &s1.status()})
      if (!s->ok()) return *s;
    input_t_ = std::move(*input);
    sr_t_ = std::move(*sr);
    prob_t_ = std::move(*prob);
    state_t_[0] = std::move(*s0);
    state_t_[1] = std::move(*s1);
    return nxrt::Status();
  }

  nxrt::Session session_;
  std::unique_ptr<Buffers> buffers_;
  nxrt::Tensor input_t_, sr_t_, prob_t_;
  nxrt::Tensor state_t_[2];
  int current_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s SILERO_VAD_V5.onnx AUDIO.wav (16 kHz mono 16-bit PCM)\n", argv[0]);
    return 2;
  }
  Audio audio;
  char message[512];
  if (wav_read_pcm16_mono(argv[2], kSampleRate, &audio.wav, message, sizeof(message)) != 0) {
    std::fprintf(stderr, "vad_stream_cpp: %s\n", message);
    return 1;
  }
  auto env = nxrt::Env::create();
  if (!env) return fail("environment", env.status());
  auto vad = SileroVad::open(*env, argv[1]);
  if (!vad) return fail("loading the model", vad.status());

  vad_segmenter seg;
  vad_segmenter_init(&seg, kSampleRate);
  const size_t frames = (audio.wav.count + kFrame - 1) / kFrame;
  std::printf("audio: %s, %.3f s, %zu frames of %d samples\n", argv[2], double(audio.wav.count) / kSampleRate,
              frames, kFrame);
  std::array<float, kFrame> frame{};
  std::chrono::duration<double> run_time{0};
  int segments = 0;
  vad_segment segment;
  for (size_t f = 0; f < frames; ++f) {
    const size_t offset = f * kFrame;
    for (size_t i = 0; i < kFrame; ++i)  // the last frame is zero-padded
      frame[i] = offset + i < audio.wav.count ? float(audio.wav.samples[offset + i]) / 32768.0f : 0.0f;
    auto start = std::chrono::steady_clock::now();
    auto prob = vad->process(frame.data());
    run_time += std::chrono::steady_clock::now() - start;
    if (!prob) return fail("run", prob.status());
    if (vad_segmenter_push(&seg, *prob, kFrame, &segment)) {
      print_segment(segment);
      ++segments;
    }
  }
  if (vad_segmenter_finish(&seg, int64_t(audio.wav.count), &segment)) {
    print_segment(segment);
    ++segments;
  }
  std::printf("done: %d speech segment(s); %.1f us per 32 ms frame on average\n", segments,
              frames ? run_time.count() * 1e6 / double(frames) : 0.0);
  return 0;
}
