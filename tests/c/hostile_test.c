/* Hostile model bytes through the C API: small ONNX backend models (plain ops, If, Loop,
 * Scan, LSTM, a sequence op) truncated at every byte boundary and with every single bit
 * flipped. Each attempt must either fail with an error code and a message, or give a
 * session that then runs (on zero-filled inputs of the declared types) to an error or a
 * result: never a crash, a hang or a sanitizer report. Afterwards the untouched models
 * still load and run. Then a Loop with a trip count of 10^18 is stopped by the
 * terminate flag set from another thread, and the session runs the next good input.
 * Runs in the plain and the ASan+UBSan builds. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nxrt/nxrt.h"
#include "read_file.h"

#ifndef NXRT_SHARED_DIR
#error "NXRT_SHARED_DIR must point at the shared data folder"
#endif
#define NODE_CASES NXRT_SHARED_DIR "/onnx-backend-data/node/"

static const char* const kModels[] = {"test_abs",
                                      "test_if",
                                      "test_loop11",
                                      "test_scan9_sum",
                                      "test_lstm_defaults",
                                      "test_conv_with_strides_padding",
                                      "test_sequence_map_identity_1_sequence"};
enum { kModelCount = sizeof kModels / sizeof kModels[0], kMaxInputs = 16 };

static nxrt_env* g_env;
static nxrt_error* g_err;
static long g_created, g_refused, g_ran, g_run_failed;

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

/* Runs the session once on zero-filled inputs: declared dims, 1 where a dim is symbolic
 * or the shape unknown. Returns NXRT_OK or the run's error code (with a message). */
static nxrt_code run_on_zeros(const nxrt_session* s) {
  const size_t n_in = nxrt_session_io_count(s, NXRT_IO_INPUT);
  const size_t n_out = nxrt_session_io_count(s, NXRT_IO_OUTPUT);
  const char* names[kMaxInputs];
  const nxrt_tensor* inputs[kMaxInputs];
  nxrt_tensor* owned[kMaxInputs];
  nxrt_tensor* outputs[kMaxInputs] = {NULL};
  size_t fed = 0;
  nxrt_code code = NXRT_OK;
  if (n_in > kMaxInputs || n_out > kMaxInputs) return NXRT_INVALID_ARGUMENT;
  for (size_t i = 0; i < n_in; ++i) {
    nxrt_dtype dtype = nxrt_session_io_dtype(s, NXRT_IO_INPUT, i);
    /* Strings need content and sequences a sequence: leave those inputs out, which
     * must then fail cleanly as missing. */
    if (dtype == NXRT_DTYPE_UNDEFINED || dtype == NXRT_DTYPE_STRING) continue;
    int64_t rank = nxrt_session_io_rank(s, NXRT_IO_INPUT, i);
    const int64_t* declared = nxrt_session_io_shape(s, NXRT_IO_INPUT, i);
    int64_t dims[8];
    if (rank < 0) rank = 1;
    if (rank > 8) return NXRT_INVALID_ARGUMENT;
    int64_t count = 1;
    for (int64_t d = 0; d < rank; ++d) {
      dims[d] = declared && declared[d] >= 0 ? declared[d] : 1;
      if (dims[d] > 4096) dims[d] = 4096; /* a flipped dim may ask for anything */
      count *= dims[d];
    }
    if (count > (int64_t)1 << 20) return NXRT_INVALID_ARGUMENT;
    if (nxrt_tensor_create(dtype, dims, (size_t)rank, &owned[fed], g_err) != NXRT_OK) {
      code = nxrt_error_code(g_err);
      goto done;
    }
    names[fed] = nxrt_session_io_name(s, NXRT_IO_INPUT, i);
    inputs[fed] = owned[fed];
    ++fed;
  }
  code = nxrt_session_run(s, NULL, names, inputs, fed, NULL, outputs, n_out, g_err);
  if (code != NXRT_OK) CHECK(strlen(nxrt_error_message(g_err)) > 0);
  for (size_t i = 0; i < n_out; ++i) nxrt_tensor_destroy(outputs[i]);
done:
  for (size_t i = 0; i < fed; ++i) nxrt_tensor_destroy(owned[i]);
  return code;
}

/* One hostile attempt: create from `bytes`, and run when that worked. */
static void attempt(const unsigned char* bytes, size_t size) {
  nxrt_session* s = NULL;
  const nxrt_code code = nxrt_session_create_from_memory(g_env, bytes, size, NULL, &s, g_err);
  if (code != NXRT_OK) {
    CHECK(s == NULL);
    CHECK(strlen(nxrt_error_message(g_err)) > 0);
    ++g_refused;
    return;
  }
  ++g_created;
  if (run_on_zeros(s) == NXRT_OK)
    ++g_ran;
  else
    ++g_run_failed;
  nxrt_session_destroy(s);
}

static void* terminate_later(void* arg) {
  const struct timespec wait = {0, 200 * 1000 * 1000};
  nanosleep(&wait, NULL);
  nxrt_run_options_set_terminate((nxrt_run_options*)arg, 1);
  return NULL;
}

/* test_range_float_type_positive_delta_expanded: Range written as a Loop whose trip count
 * is ceil((limit - start) / delta); returns the output's element count. */
static nxrt_code run_range(nxrt_session* s, nxrt_run_options* ro, float limit, int64_t* count) {
  float start = 0.0f, delta = 1.0f;
  nxrt_tensor *t_start = NULL, *t_limit = NULL, *t_delta = NULL, *out = NULL;
  CHECK(nxrt_tensor_create_view(NXRT_DTYPE_FLOAT, NULL, 0, &start, sizeof start, &t_start, g_err) ==
        NXRT_OK);
  CHECK(nxrt_tensor_create_view(NXRT_DTYPE_FLOAT, NULL, 0, &limit, sizeof limit, &t_limit, g_err) ==
        NXRT_OK);
  CHECK(nxrt_tensor_create_view(NXRT_DTYPE_FLOAT, NULL, 0, &delta, sizeof delta, &t_delta, g_err) ==
        NXRT_OK);
  const char* names[3] = {"start", "limit", "delta"};
  const nxrt_tensor* inputs[3] = {t_start, t_limit, t_delta};
  const nxrt_code code = nxrt_session_run(s, ro, names, inputs, 3, NULL, &out, 1, g_err);
  if (code == NXRT_OK) *count = nxrt_tensor_element_count(out);
  nxrt_tensor_destroy(out);
  nxrt_tensor_destroy(t_start);
  nxrt_tensor_destroy(t_limit);
  nxrt_tensor_destroy(t_delta);
  return code;
}

static void test_terminate_endless_loop(void) {
  nxrt_session* s = NULL;
  nxrt_run_options* ro = NULL;
  CHECK(nxrt_session_create_from_file(
            g_env, NODE_CASES "test_range_float_type_positive_delta_expanded/model.onnx", NULL, &s,
            g_err) == NXRT_OK);
  CHECK(nxrt_run_options_create(&ro, g_err) == NXRT_OK);
  pthread_t stopper;
  CHECK(pthread_create(&stopper, NULL, terminate_later, ro) == 0);
  int64_t count = 0;
  const nxrt_code code = run_range(s, ro, 1e18f, &count); /* 10^18 trips */
  CHECK(pthread_join(stopper, NULL) == 0);
  if (code != NXRT_FAIL || !strstr(nxrt_error_message(g_err), "terminate"))
    fprintf(stderr, "code %d: %s\n", (int)code, nxrt_error_message(g_err));
  CHECK(code == NXRT_FAIL && strstr(nxrt_error_message(g_err), "terminate") != NULL);
  nxrt_run_options_set_terminate(ro, 0);
  CHECK(run_range(s, ro, 5.0f, &count) == NXRT_OK && count == 5); /* still works */
  printf(
      "hostile_test: a Loop of 10^18 trips stopped by the terminate flag from another "
      "thread; the next run gives the right result\n");
  nxrt_run_options_destroy(ro);
  nxrt_session_destroy(s);
}

int main(void) {
  g_err = nxrt_error_create();
  CHECK(nxrt_env_create(NXRT_API_VERSION, &g_env, g_err) == NXRT_OK);
  unsigned char* models[kModelCount];
  size_t sizes[kModelCount];
  long attempts = 0;
  for (int m = 0; m < kModelCount; ++m) {
    char path[512];
    snprintf(path, sizeof path, "%s%s/model.onnx", NODE_CASES, kModels[m]);
    models[m] = read_file(path, &sizes[m]);
    CHECK(models[m] != NULL);
    unsigned char* copy = malloc(sizes[m]);
    CHECK(copy != NULL);
    /* Truncated at every byte boundary (heap copies, so ASan sees reads past the end). */
    for (size_t len = 0; len < sizes[m]; ++len) {
      unsigned char* prefix = malloc(len ? len : 1);
      CHECK(prefix != NULL);
      memcpy(prefix, models[m], len);
      attempt(prefix, len);
      free(prefix);
      ++attempts;
    }
    /* Every single bit flipped. */
    for (size_t byte = 0; byte < sizes[m]; ++byte) {
      for (int bit = 0; bit < 8; ++bit) {
        memcpy(copy, models[m], sizes[m]);
        copy[byte] ^= (unsigned char)(1u << bit);
        attempt(copy, sizes[m]);
        ++attempts;
      }
    }
    free(copy);
  }
  /* The untouched models still load and run in the same process. */
  for (int m = 0; m < kModelCount; ++m) {
    nxrt_session* s = NULL;
    CHECK(nxrt_session_create_from_memory(g_env, models[m], sizes[m], NULL, &s, g_err) == NXRT_OK);
    nxrt_session_destroy(s);
    free(models[m]);
  }
  printf(
      "hostile_test: %ld hostile model byte strings: %ld refused with an error, %ld loaded "
      "(%ld of them ran, %ld failed the run with an error)\n",
      attempts, g_refused, g_created, g_ran, g_run_failed);
  CHECK(g_refused > attempts / 4); /* the mutations really do break models */
  test_terminate_endless_loop();
  nxrt_env_destroy(g_env);
  nxrt_error_destroy(g_err);
  return 0;
}
