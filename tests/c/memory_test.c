/* Measured bar: a process holding one Silero VAD session, after warm runs, is resident in
 * at most 2 x the model file + 10 MiB (VmRSS, the whole process: code, libraries, model,
 * packed weights, buffers). Creation's peak (VmHWM) is reported too and held to the same
 * budget, since an embedded app has to provision for it. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "nxrt/nxrt.h"

#ifndef NXRT_SHARED_DIR
#error "NXRT_SHARED_DIR must point at the shared data folder"
#endif
#define SILERO NXRT_SHARED_DIR "/models/silero_vad_v5.onnx"

/* A "Key:   123 kB" line of /proc/self/status, in KiB; -1 when missing. */
static long status_kib(const char* key) {
  FILE* f = fopen("/proc/self/status", "r");
  char line[256];
  long value = -1;
  if (!f) return -1;
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, key, strlen(key)) == 0 && line[strlen(key)] == ':') {
      (void)sscanf(line + strlen(key) + 1, "%ld", &value);
      break;
    }
  }
  fclose(f);
  return value;
}

int main(void) {
  struct stat info;
  nxrt_error* err = nxrt_error_create();
  nxrt_env* env = NULL;
  nxrt_session* session = NULL;
  int failed = 1;
  if (stat(SILERO, &info) != 0) {
    fprintf(stderr, "memory_test: cannot stat %s\n", SILERO);
    return 1;
  }
  if (nxrt_env_create(NXRT_API_VERSION, &env, err) != NXRT_OK ||
      nxrt_session_create_from_file(env, SILERO, NULL, &session, err) != NXRT_OK) {
    fprintf(stderr, "memory_test: %s\n", nxrt_error_message(err));
    return 1;
  }

  float input[512], state[2 * 128] = {0}, state_out[2 * 128], prob = 0.0f;
  int64_t sr = 16000;
  const int64_t input_shape[2] = {1, 512}, state_shape[3] = {2, 1, 128}, prob_shape[2] = {1, 1};
  nxrt_tensor *input_t = NULL, *state_t = NULL, *sr_t = NULL, *prob_t = NULL, *state_out_t = NULL;
  for (int i = 0; i < 512; ++i) input[i] = (float)((i * 37) % 200 - 100) / 400.0f;
  if (nxrt_tensor_create_view(NXRT_DTYPE_FLOAT, input_shape, 2, input, sizeof input, &input_t,
                              err) ||
      nxrt_tensor_create_view(NXRT_DTYPE_FLOAT, state_shape, 3, state, sizeof state, &state_t,
                              err) ||
      nxrt_tensor_create_view(NXRT_DTYPE_INT64, NULL, 0, &sr, sizeof sr, &sr_t, err) ||
      nxrt_tensor_create_view(NXRT_DTYPE_FLOAT, prob_shape, 2, &prob, sizeof prob, &prob_t, err) ||
      nxrt_tensor_create_view(NXRT_DTYPE_FLOAT, state_shape, 3, state_out, sizeof state_out,
                              &state_out_t, err)) {
    fprintf(stderr, "memory_test: %s\n", nxrt_error_message(err));
    goto done;
  }
  {
    const char* input_names[3] = {"input", "state", "sr"};
    const char* output_names[2] = {"output", "stateN"};
    const nxrt_tensor* inputs[3] = {input_t, state_t, sr_t};
    nxrt_tensor* outputs[2] = {prob_t, state_out_t};
    for (int run = 0; run < 200; ++run) {
      if (nxrt_session_run(session, NULL, input_names, inputs, 3, output_names, outputs, 2, err) !=
          NXRT_OK) {
        fprintf(stderr, "memory_test: run %d: %s\n", run, nxrt_error_message(err));
        goto done;
      }
      memcpy(state, state_out, sizeof state);
    }
  }
  {
    const double mib = 1024.0 * 1024.0;
    const double budget = 2.0 * (double)info.st_size / mib + 10.0;
    const double rss = (double)status_kib("VmRSS") / 1024.0;
    const double peak = (double)status_kib("VmHWM") / 1024.0;
    printf("model %.2f MiB, budget %.2f MiB: resident %.2f MiB, peak %.2f MiB\n",
           (double)info.st_size / mib, budget, rss, peak);
    if (rss <= 0.0 || rss > budget || peak > budget) {
      fprintf(stderr, "memory_test: over the budget\n");
      goto done;
    }
    failed = 0;
  }
done:
  nxrt_tensor_destroy(input_t);
  nxrt_tensor_destroy(state_t);
  nxrt_tensor_destroy(sr_t);
  nxrt_tensor_destroy(prob_t);
  nxrt_tensor_destroy(state_out_t);
  nxrt_session_destroy(session);
  nxrt_env_destroy(env);
  nxrt_error_destroy(err);
  return failed;
}
