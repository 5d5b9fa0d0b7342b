/*
 * Streaming voice activity detection with the nxrt C API: reads a 16 kHz mono 16-bit WAV
 * file and runs Silero VAD v5 on it frame by frame, as a real-time app would on audio
 * arriving from a microphone, and prints each speech segment as soon as it has ended.
 *
 *   vad_stream_c silero_vad_v5.onnx speech.wav
 *
 * The loop allocates nothing: inputs are views over fixed buffers, the outputs are bound
 * to caller buffers, and the recurrent state ping-pongs between two of them.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/vad_segmenter.h"
#include "common/wav_reader.h"
#include "nxrt/nxrt.h"

enum {
  kSampleRate = 16000,
  kFrame = 512,  /* 32 ms: the frame size Silero VAD v5 expects at 16 kHz */
  kContext = 64, /* Silero prepends the previous frame's last 64 samples to each frame */
  kStateSize = 2 * 1 * 128
};

static double now_seconds(void) {
  struct timespec ts;
  timespec_get(&ts, TIME_UTC);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void print_segment(const vad_segment* seg) {
  printf("segment: %.3f s -> %.3f s\n", (double)seg->start / kSampleRate,
         (double)seg->end / kSampleRate);
  fflush(stdout);
}

static int fail(const char* what, nxrt_error* err) {
  fprintf(stderr, "vad_stream_c: %s: %s\n", what, nxrt_error_message(err));
  return 1;
}

int main(int argc, char** argv) {
  static float input[kContext + kFrame];
  static float state[2][kStateSize];
  static float prob[1];
  const int64_t input_shape[2] = {1, kContext + kFrame};
  const int64_t state_shape[3] = {2, 1, 128};
  const int64_t prob_shape[2] = {1, 1};
  int64_t sr = kSampleRate;
  const char* input_names[3] = {"input", "state", "sr"};
  const char* output_names[2] = {"output", "stateN"};
  char message[512];
  wav_audio audio;
  nxrt_error* err = NULL;
  nxrt_env* env = NULL;
  nxrt_session_options* options = NULL;
  nxrt_session* session = NULL;
  nxrt_tensor* input_t = NULL;
  nxrt_tensor* sr_t = NULL;
  nxrt_tensor* prob_t = NULL;
  nxrt_tensor* state_t[2] = {NULL, NULL};
  vad_segmenter seg;
  vad_segment segment;
  int status = 1;
  size_t frames, f;
  int segments = 0;
  double start_time, run_time = 0;

  if (argc != 3) {
    fprintf(stderr, "usage: %s SILERO_VAD_V5.onnx AUDIO.wav (16 kHz mono 16-bit PCM)\n", argv[0]);
    return 2;
  }
  if (wav_read_pcm16_mono(argv[2], kSampleRate, &audio, message, sizeof(message)) != 0) {
    fprintf(stderr, "vad_stream_c: %s\n", message);
    return 1;
  }

  err = nxrt_error_create();
  if (!err) {
    fprintf(stderr, "vad_stream_c: out of memory\n");
    goto done;
  }
  /* One thread each: the app owns its threads; nxrt runs on the caller's. */
  if (nxrt_env_create(NXRT_API_VERSION, &env, err) != NXRT_OK) {
    fail("environment", err);
    goto done;
  }
  if (nxrt_session_options_create(&options, err) != NXRT_OK ||
      nxrt_session_options_set_intra_op_threads(options, 1, err) != NXRT_OK ||
      nxrt_session_options_set_inter_op_threads(options, 1, err) != NXRT_OK) {
    fail("session options", err);
    goto done;
  }
  if (nxrt_session_create_from_file(env, argv[1], options, &session, err) != NXRT_OK) {
    fail("loading the model", err);
    goto done;
  }
  if (nxrt_session_io_index(session, NXRT_IO_INPUT, "state") < 0 ||
      nxrt_session_io_index(session, NXRT_IO_OUTPUT, "stateN") < 0) {
    fprintf(
        stderr,
        "vad_stream_c: '%s' is not Silero VAD v5 (inputs input/state/sr, outputs output/stateN)\n",
        argv[1]);
    goto done;
  }
  if (nxrt_tensor_create_view(NXRT_DTYPE_FLOAT, input_shape, 2, input, sizeof(input), &input_t,
                              err) != NXRT_OK ||
      nxrt_tensor_create_view(NXRT_DTYPE_INT64, NULL, 0, &sr, sizeof(sr), &sr_t, err) != NXRT_OK ||
      nxrt_tensor_create_view(NXRT_DTYPE_FLOAT, prob_shape, 2, prob, sizeof(prob), &prob_t, err) !=
          NXRT_OK ||
      nxrt_tensor_create_view(NXRT_DTYPE_FLOAT, state_shape, 3, state[0], sizeof(state[0]),
                              &state_t[0], err) != NXRT_OK ||
      nxrt_tensor_create_view(NXRT_DTYPE_FLOAT, state_shape, 3, state[1], sizeof(state[1]),
                              &state_t[1], err) != NXRT_OK) {
    fail("creating tensors", err);
    goto done;
  }

  vad_segmenter_init(&seg, kSampleRate);
  frames = (audio.count + kFrame - 1) / kFrame;
  printf("audio: %s, %.3f s, %zu frames of %d samples\n", argv[2],
         (double)audio.count / kSampleRate, frames, kFrame);
  for (f = 0; f < frames; ++f) {
    /* state[f % 2] holds the state to feed; the model writes the next one into the other. */
    const nxrt_tensor* inputs[3];
    nxrt_tensor* outputs[2];
    size_t i, n = audio.count - f * kFrame;
    if (n > kFrame) n = kFrame;
    memmove(input, input + kFrame, kContext * sizeof(float));
    for (i = 0; i < n; ++i) input[kContext + i] = (float)audio.samples[f * kFrame + i] / 32768.0f;
    for (; i < kFrame; ++i) input[kContext + i] = 0.0f; /* the last frame is zero-padded */
    inputs[0] = input_t;
    inputs[1] = state_t[f % 2];
    inputs[2] = sr_t;
    outputs[0] = prob_t;
    outputs[1] = state_t[(f + 1) % 2];
    start_time = now_seconds();
    if (nxrt_session_run(session, NULL, input_names, inputs, 3, output_names, outputs, 2, err) !=
        NXRT_OK) {
      fail("run", err);
      goto done;
    }
    run_time += now_seconds() - start_time;
    if (vad_segmenter_push(&seg, prob[0], kFrame, &segment)) {
      print_segment(&segment);
      ++segments;
    }
  }
  if (vad_segmenter_finish(&seg, (int64_t)audio.count, &segment)) {
    print_segment(&segment);
    ++segments;
  }
  printf("done: %d speech segment(s); %.1f us per 32 ms frame on average\n", segments,
         frames ? run_time * 1e6 / (double)frames : 0.0);
  status = 0;

done:
  nxrt_tensor_destroy(input_t);
  nxrt_tensor_destroy(sr_t);
  nxrt_tensor_destroy(prob_t);
  nxrt_tensor_destroy(state_t[0]);
  nxrt_tensor_destroy(state_t[1]);
  nxrt_session_destroy(session);
  nxrt_session_options_destroy(options);
  nxrt_env_destroy(env);
  nxrt_error_destroy(err);
  wav_audio_free(&audio);
  return status;
}
