/* Tests of the C API written in C11: Silero VAD v5 end to end (runtime-allocated and
 * bound outputs), metadata, error paths, teardown. Exits non-zero on the first failure. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <threads.h>
#include <unistd.h>

#include "nxrt/nxrt.h"
#include "read_file.h"

#ifndef NXRT_SHARED_DIR
#error "NXRT_SHARED_DIR must point at the shared data folder"
#endif
#define SILERO NXRT_SHARED_DIR "/models/silero_vad_v5.onnx"

static int g_checks = 0;

#define CHECK(cond)                                                                            \
  do {                                                                                         \
    ++g_checks;                                                                                \
    if (!(cond)) {                                                                             \
      fprintf(stderr, "%s:%d: CHECK failed: %s (last error: %s)\n", __FILE__, __LINE__, #cond, \
              nxrt_last_error_message());                                                      \
      exit(1);                                                                                 \
    }                                                                                          \
  } while (0)

#define CHECK_OK(call)                                                         \
  do {                                                                         \
    nxrt_code code_ = (call);                                                  \
    ++g_checks;                                                                \
    if (code_ != NXRT_OK) {                                                    \
      fprintf(stderr, "%s:%d: %s failed: %s: %s\n", __FILE__, __LINE__, #call, \
              nxrt_code_name(code_), nxrt_last_error_message());               \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

/* Asserts that `err` holds `code` and that its message contains `word`. */
static void expect_error(int line, nxrt_code got, const nxrt_error* err, nxrt_code code,
                         const char* word) {
  ++g_checks;
  if (got != code || nxrt_error_code(err) != code || !strstr(nxrt_error_message(err), word) ||
      nxrt_last_error_code() != code ||
      strcmp(nxrt_last_error_message(), nxrt_error_message(err))) {
    fprintf(stderr, "line %d: expected %s containing '%s', got %s / %s: '%s'\n", line,
            nxrt_code_name(code), word, nxrt_code_name(got), nxrt_code_name(nxrt_error_code(err)),
            nxrt_error_message(err));
    exit(1);
  }
}
#define EXPECT_ERROR(call, err, code, word) expect_error(__LINE__, (call), (err), (code), (word))

static nxrt_env* g_env;
static nxrt_error* g_err;

/* The inputs of one Silero step, as views over these arrays. */
typedef struct {
  float samples[512];
  float state[2 * 1 * 128];
  int64_t sr;
  nxrt_tensor* input;
  nxrt_tensor* state_t;
  nxrt_tensor* sr_t;
} SileroFeed;

static void feed_init(SileroFeed* f) {
  const int64_t input_shape[2] = {1, 512};
  const int64_t state_shape[3] = {2, 1, 128};
  for (int i = 0; i < 512; ++i)
    f->samples[i] = 0.5f * (float)sin(i * 2.0 * 3.14159265358979 * 440.0 / 16000.0);
  memset(f->state, 0, sizeof f->state);
  f->sr = 16000;
  CHECK_OK(nxrt_tensor_create_view(NXRT_DTYPE_FLOAT, input_shape, 2, f->samples, sizeof f->samples,
                                   &f->input, g_err));
  CHECK_OK(nxrt_tensor_create_view(NXRT_DTYPE_FLOAT, state_shape, 3, f->state, sizeof f->state,
                                   &f->state_t, g_err));
  CHECK_OK(
      nxrt_tensor_create_view(NXRT_DTYPE_INT64, NULL, 0, &f->sr, sizeof f->sr, &f->sr_t, g_err));
}

static void feed_free(SileroFeed* f) {
  nxrt_tensor_destroy(f->input);
  nxrt_tensor_destroy(f->state_t);
  nxrt_tensor_destroy(f->sr_t);
}

static const char* const kInputNames[3] = {"input", "state", "sr"};
static const char* const kOutputNames[2] = {"output", "stateN"};

static void test_version(void) {
  char expected[32];
  snprintf(expected, sizeof expected, "%d.%d.%d", NXRT_VERSION_MAJOR, NXRT_VERSION_MINOR,
           NXRT_VERSION_PATCH);
  CHECK(strcmp(nxrt_get_version(), expected) == 0);
  CHECK(nxrt_get_api_version() == NXRT_API_VERSION);
  CHECK(strcmp(nxrt_code_name(NXRT_INVALID_ARGUMENT), "InvalidArgument") == 0);
  CHECK(strcmp(nxrt_code_name((nxrt_code)1234), "Unknown") == 0);
  CHECK(nxrt_dtype_size(NXRT_DTYPE_FLOAT) == 4 && nxrt_dtype_size(NXRT_DTYPE_INT64) == 8);
  CHECK(nxrt_dtype_size(NXRT_DTYPE_STRING) == 0 && nxrt_dtype_size((nxrt_dtype)999) == 0);
  CHECK(strcmp(nxrt_dtype_name(NXRT_DTYPE_BFLOAT16), "bfloat16") == 0);

  nxrt_env* env = NULL;
  EXPECT_ERROR(nxrt_env_create(NXRT_API_VERSION + 1, &env, g_err), g_err, NXRT_INVALID_ARGUMENT,
               "API version");
  CHECK(env == NULL);
  EXPECT_ERROR(nxrt_env_create(NXRT_API_VERSION, NULL, g_err), g_err, NXRT_INVALID_ARGUMENT,
               "NULL");
}

static void test_metadata(const nxrt_session* s) {
  CHECK(nxrt_session_io_count(s, NXRT_IO_INPUT) == 3);
  CHECK(nxrt_session_io_count(s, NXRT_IO_OUTPUT) == 2);
  for (size_t i = 0; i < 3; ++i)
    CHECK(strcmp(nxrt_session_io_name(s, NXRT_IO_INPUT, i), kInputNames[i]) == 0);
  for (size_t i = 0; i < 2; ++i)
    CHECK(strcmp(nxrt_session_io_name(s, NXRT_IO_OUTPUT, i), kOutputNames[i]) == 0);
  CHECK(nxrt_session_io_name(s, NXRT_IO_INPUT, 3) == NULL);
  CHECK(nxrt_session_io_dtype(s, NXRT_IO_INPUT, 0) == NXRT_DTYPE_FLOAT);
  CHECK(nxrt_session_io_dtype(s, NXRT_IO_INPUT, 2) == NXRT_DTYPE_INT64);
  CHECK(nxrt_session_io_dtype(s, NXRT_IO_OUTPUT, 0) == NXRT_DTYPE_FLOAT);
  CHECK(nxrt_session_io_index(s, NXRT_IO_INPUT, "sr") == 2);
  CHECK(nxrt_session_io_index(s, NXRT_IO_OUTPUT, "stateN") == 1);
  CHECK(nxrt_session_io_index(s, NXRT_IO_INPUT, "nope") == -1);
  /* input: [?, ?]; state: [2, ?, 128]; sr: a scalar */
  CHECK(nxrt_session_io_rank(s, NXRT_IO_INPUT, 0) == 2);
  const int64_t* dims = nxrt_session_io_shape(s, NXRT_IO_INPUT, 1);
  CHECK(nxrt_session_io_rank(s, NXRT_IO_INPUT, 1) == 3);
  CHECK(dims && dims[0] == 2 && dims[1] == -1 && dims[2] == 128);
  CHECK(nxrt_session_io_dim_name(s, NXRT_IO_INPUT, 1, 0) != NULL);
  CHECK(strcmp(nxrt_session_io_dim_name(s, NXRT_IO_INPUT, 1, 0), "") == 0);
  CHECK(nxrt_session_io_dim_name(s, NXRT_IO_INPUT, 1, 3) == NULL);
  CHECK(nxrt_session_io_rank(s, NXRT_IO_INPUT, 2) == 0);
  CHECK(nxrt_session_io_shape(s, NXRT_IO_INPUT, 2) == NULL);
  CHECK(nxrt_session_io_rank(s, NXRT_IO_OUTPUT, 9) == -1);
}

/* Runs with runtime-allocated outputs, then with bound outputs fed back as state, and
 * checks both agree with the reference values computed by onnxruntime. */
static void test_run(const nxrt_session* s) {
  SileroFeed f;
  feed_init(&f);
  const nxrt_tensor* inputs[3] = {f.input, f.state_t, f.sr_t};

  nxrt_tensor* outs[2] = {NULL, NULL};
  CHECK_OK(nxrt_session_run(s, NULL, kInputNames, inputs, 3, NULL, outs, 2, g_err));
  CHECK(outs[0] && outs[1]);
  CHECK(nxrt_tensor_dtype(outs[0]) == NXRT_DTYPE_FLOAT);
  CHECK(nxrt_tensor_rank(outs[0]) == 2 && nxrt_tensor_shape(outs[0])[0] == 1 &&
        nxrt_tensor_shape(outs[0])[1] == 1);
  CHECK(nxrt_tensor_element_count(outs[1]) == 256 && nxrt_tensor_byte_size(outs[1]) == 1024);
  const float prob = *(const float*)nxrt_tensor_data(outs[0]);
  CHECK(fabsf(prob - 0.1242754f) < 1e-4f);

  /* Bound outputs: the probability and the next state land in caller arrays. The next
   * state goes into a second buffer, then is copied to the feed for the next step. */
  float prob_buf[1] = {-1.0f};
  float next_state[256];
  memset(next_state, 0xff, sizeof next_state);
  const int64_t prob_shape[2] = {1, 1};
  const int64_t state_shape[3] = {2, 1, 128};
  nxrt_tensor* bound[2] = {NULL, NULL};
  CHECK_OK(nxrt_tensor_create_view(NXRT_DTYPE_FLOAT, prob_shape, 2, prob_buf, sizeof prob_buf,
                                   &bound[0], g_err));
  CHECK_OK(nxrt_tensor_create_view(NXRT_DTYPE_FLOAT, state_shape, 3, next_state, sizeof next_state,
                                   &bound[1], g_err));
  nxrt_tensor* const b0 = bound[0];
  nxrt_tensor* const b1 = bound[1];
  CHECK_OK(nxrt_session_run(s, NULL, kInputNames, inputs, 3, kOutputNames, bound, 2, g_err));
  CHECK(bound[0] == b0 && bound[1] == b1); /* handles untouched, data written in place */
  CHECK(nxrt_tensor_data(bound[0]) == prob_buf);
  CHECK(prob_buf[0] == prob);
  CHECK(memcmp(next_state, nxrt_tensor_data(outs[1]), sizeof next_state) == 0);

  /* Second step with the new state: both paths must agree again. */
  memcpy(f.state, next_state, sizeof f.state);
  CHECK_OK(nxrt_session_run(s, NULL, kInputNames, inputs, 3, kOutputNames, bound, 2, g_err));
  CHECK(fabsf(prob_buf[0] - 0.1190656f) < 1e-4f);

  /* Outputs in a different order, one bound and one allocated. */
  const char* const swapped[2] = {"stateN", "output"};
  nxrt_tensor* mixed[2] = {bound[1], NULL};
  CHECK_OK(nxrt_session_run(s, NULL, kInputNames, inputs, 3, swapped, mixed, 2, g_err));
  CHECK(mixed[0] == b1 && mixed[1] != NULL);
  CHECK(fabsf(*(const float*)nxrt_tensor_data(mixed[1]) - 0.1190656f) < 1e-4f);
  nxrt_tensor_destroy(mixed[1]);

  /* Only one output requested. */
  const char* const just_prob[1] = {"output"};
  nxrt_tensor* one[1] = {NULL};
  CHECK_OK(nxrt_session_run(s, NULL, kInputNames, inputs, 3, just_prob, one, 1, g_err));
  CHECK(one[0] && nxrt_tensor_element_count(one[0]) == 1);
  nxrt_tensor_destroy(one[0]);

  /* Tensors nxrt allocated can be fed back as bound outputs (a steady loop). */
  void* const prev_data = nxrt_tensor_data(outs[0]);
  CHECK_OK(nxrt_session_run(s, NULL, kInputNames, inputs, 3, NULL, outs, 2, g_err));
  CHECK(nxrt_tensor_data(outs[0]) == prev_data);

  /* A wrongly shaped bound output is refused, naming the output. */
  nxrt_tensor* wrong = NULL;
  CHECK_OK(nxrt_tensor_create_view(NXRT_DTYPE_FLOAT, state_shape, 2, next_state, sizeof next_state,
                                   &wrong, g_err));
  nxrt_tensor* wrong_outs[2] = {wrong, NULL};
  EXPECT_ERROR(nxrt_session_run(s, NULL, kInputNames, inputs, 3, swapped, wrong_outs, 2, g_err),
               g_err, NXRT_INVALID_ARGUMENT, "stateN");
  CHECK(wrong_outs[1] == NULL);
  nxrt_tensor_destroy(wrong);

  nxrt_tensor_destroy(outs[0]);
  nxrt_tensor_destroy(outs[1]);
  nxrt_tensor_destroy(bound[0]);
  nxrt_tensor_destroy(bound[1]);
  feed_free(&f);
}

static void test_run_errors(const nxrt_session* s) {
  SileroFeed f;
  feed_init(&f);
  nxrt_tensor* outs[2] = {NULL, NULL};

  /* wrong dtype: sr as int32 */
  int32_t sr32 = 16000;
  nxrt_tensor* sr_i32 = NULL;
  CHECK_OK(nxrt_tensor_create_view(NXRT_DTYPE_INT32, NULL, 0, &sr32, sizeof sr32, &sr_i32, g_err));
  const nxrt_tensor* bad_dtype[3] = {f.input, f.state_t, sr_i32};
  EXPECT_ERROR(nxrt_session_run(s, NULL, kInputNames, bad_dtype, 3, NULL, outs, 2, g_err), g_err,
               NXRT_INVALID_ARGUMENT, "Unexpected input data type");
  CHECK(strstr(nxrt_error_message(g_err), "sr"));
  CHECK(outs[0] == NULL && outs[1] == NULL);
  nxrt_tensor_destroy(sr_i32);

  /* wrong rank and wrong dims */
  const int64_t rank3[3] = {1, 1, 512};
  nxrt_tensor* input_r3 = NULL;
  CHECK_OK(nxrt_tensor_create_view(NXRT_DTYPE_FLOAT, rank3, 3, f.samples, sizeof f.samples,
                                   &input_r3, g_err));
  const nxrt_tensor* bad_rank[3] = {input_r3, f.state_t, f.sr_t};
  EXPECT_ERROR(nxrt_session_run(s, NULL, kInputNames, bad_rank, 3, NULL, outs, 2, g_err), g_err,
               NXRT_INVALID_ARGUMENT, "Invalid rank for input: input");
  nxrt_tensor_destroy(input_r3);

  const int64_t bad_state_shape[3] = {1, 2, 128};
  nxrt_tensor* state_bad = NULL;
  CHECK_OK(nxrt_tensor_create_view(NXRT_DTYPE_FLOAT, bad_state_shape, 3, f.state, sizeof f.state,
                                   &state_bad, g_err));
  const nxrt_tensor* bad_dims[3] = {f.input, state_bad, f.sr_t};
  EXPECT_ERROR(nxrt_session_run(s, NULL, kInputNames, bad_dims, 3, NULL, outs, 2, g_err), g_err,
               NXRT_INVALID_ARGUMENT, "invalid dimensions for input: state");
  nxrt_tensor_destroy(state_bad);

  /* unknown input name, missing input, unknown output name, NULL arguments */
  const nxrt_tensor* inputs[3] = {f.input, f.state_t, f.sr_t};
  const char* const bad_names[3] = {"input", "stat", "sr"};
  EXPECT_ERROR(nxrt_session_run(s, NULL, bad_names, inputs, 3, NULL, outs, 2, g_err), g_err,
               NXRT_INVALID_ARGUMENT, "Invalid input name: stat");
  EXPECT_ERROR(nxrt_session_run(s, NULL, kInputNames, inputs, 2, NULL, outs, 2, g_err), g_err,
               NXRT_INVALID_ARGUMENT, "'sr'");
  const char* const bad_out[1] = {"prob"};
  EXPECT_ERROR(nxrt_session_run(s, NULL, kInputNames, inputs, 3, bad_out, outs, 1, g_err), g_err,
               NXRT_INVALID_ARGUMENT, "Invalid output name: prob");
  EXPECT_ERROR(nxrt_session_run(s, NULL, kInputNames, inputs, 3, NULL, outs, 1, g_err), g_err,
               NXRT_INVALID_ARGUMENT, "output_count");
  EXPECT_ERROR(nxrt_session_run(NULL, NULL, kInputNames, inputs, 3, NULL, outs, 2, g_err), g_err,
               NXRT_INVALID_ARGUMENT, "session is NULL");
  const nxrt_tensor* null_input[3] = {f.input, NULL, f.sr_t};
  EXPECT_ERROR(nxrt_session_run(s, NULL, kInputNames, null_input, 3, NULL, outs, 2, g_err), g_err,
               NXRT_INVALID_ARGUMENT, "NULL tensor");
  CHECK(outs[0] == NULL && outs[1] == NULL);

  /* terminate flag */
  nxrt_run_options* ro = NULL;
  CHECK_OK(nxrt_run_options_create(&ro, g_err));
  nxrt_run_options_set_terminate(ro, 1);
  EXPECT_ERROR(nxrt_session_run(s, ro, kInputNames, inputs, 3, NULL, outs, 2, g_err), g_err,
               NXRT_FAIL, "terminate");
  nxrt_run_options_set_terminate(ro, 0);
  CHECK_OK(nxrt_session_run(s, ro, kInputNames, inputs, 3, NULL, outs, 2, g_err));
  nxrt_run_options_destroy(ro);
  nxrt_tensor_destroy(outs[0]);
  nxrt_tensor_destroy(outs[1]);
  outs[0] = outs[1] = NULL;

  /* The per-call error object is optional: the thread-local message still tells. */
  CHECK(nxrt_session_run(s, NULL, bad_names, inputs, 3, NULL, outs, 2, NULL) ==
        NXRT_INVALID_ARGUMENT);
  CHECK(nxrt_last_error_code() == NXRT_INVALID_ARGUMENT);
  CHECK(strstr(nxrt_last_error_message(), "Invalid input name: stat"));
  nxrt_error_clear(g_err);
  CHECK(nxrt_error_code(g_err) == NXRT_OK && strcmp(nxrt_error_message(g_err), "") == 0);
  feed_free(&f);
}

static void test_tensor_errors(void) {
  float buf[4];
  const int64_t shape[2] = {2, 2};
  const int64_t negative[2] = {2, -1};
  nxrt_tensor* t = NULL;
  EXPECT_ERROR(nxrt_tensor_create_view(NXRT_DTYPE_FLOAT, shape, 2, buf, 8, &t, g_err), g_err,
               NXRT_INVALID_ARGUMENT, "too small");
  EXPECT_ERROR(nxrt_tensor_create_view(NXRT_DTYPE_FLOAT, negative, 2, buf, sizeof buf, &t, g_err),
               g_err, NXRT_INVALID_ARGUMENT, "negative");
  EXPECT_ERROR(nxrt_tensor_create_view((nxrt_dtype)77, shape, 2, buf, sizeof buf, &t, g_err), g_err,
               NXRT_INVALID_ARGUMENT, "element type");
  EXPECT_ERROR(nxrt_tensor_create_view(NXRT_DTYPE_STRING, shape, 2, buf, sizeof buf, &t, g_err),
               g_err, NXRT_INVALID_ARGUMENT, "string");
  EXPECT_ERROR(
      nxrt_tensor_create_view(NXRT_DTYPE_FLOAT, shape, 2, (char*)buf + 1, sizeof buf, &t, g_err),
      g_err, NXRT_INVALID_ARGUMENT, "aligned");
  EXPECT_ERROR(nxrt_tensor_create_view(NXRT_DTYPE_FLOAT, shape, 2, NULL, sizeof buf, &t, g_err),
               g_err, NXRT_INVALID_ARGUMENT, "NULL");
  CHECK(t == NULL);

  /* Owned tensors start zeroed; an empty tensor needs no data. */
  CHECK_OK(nxrt_tensor_create(NXRT_DTYPE_INT64, shape, 2, &t, g_err));
  const int64_t* v = (const int64_t*)nxrt_tensor_data(t);
  CHECK(v[0] == 0 && v[3] == 0 && nxrt_tensor_byte_size(t) == 32);
  const char* str = NULL;
  size_t len = 0;
  EXPECT_ERROR(nxrt_tensor_get_string(t, 0, &str, &len, g_err), g_err, NXRT_INVALID_ARGUMENT,
               "int64");
  nxrt_tensor_destroy(t);
  const int64_t empty_shape[1] = {0};
  CHECK_OK(nxrt_tensor_create_view(NXRT_DTYPE_FLOAT, empty_shape, 1, NULL, 0, &t, g_err));
  CHECK(nxrt_tensor_element_count(t) == 0);
  nxrt_tensor_destroy(t);
  nxrt_tensor_destroy(NULL);
}

static void test_session_errors(void) {
  nxrt_session* s = NULL;
  EXPECT_ERROR(nxrt_session_create_from_file(g_env, NXRT_SHARED_DIR "/models/no_such_model.onnx",
                                             NULL, &s, g_err),
               g_err, NXRT_NO_SUCH_FILE, "no_such_model.onnx");
  static const char garbage[] = "this is not an onnx model at all \xff\xff\xff\xff\xff";
  EXPECT_ERROR(nxrt_session_create_from_memory(g_env, garbage, sizeof garbage, NULL, &s, g_err),
               g_err, NXRT_INVALID_PROTOBUF, "");
  CHECK(strlen(nxrt_error_message(g_err)) > 0);
  EXPECT_ERROR(nxrt_session_create_from_file(NULL, SILERO, NULL, &s, g_err), g_err,
               NXRT_INVALID_ARGUMENT, "NULL");
  CHECK(s == NULL);

  nxrt_session_options* o = NULL;
  CHECK_OK(nxrt_session_options_create(&o, g_err));
  EXPECT_ERROR(nxrt_session_options_set_intra_op_threads(o, -1, g_err), g_err,
               NXRT_INVALID_ARGUMENT, "threads");
  EXPECT_ERROR(
      nxrt_session_options_set_graph_optimization_level(o, (nxrt_graph_optimization_level)5, g_err),
      g_err, NXRT_INVALID_ARGUMENT, "optimization level");
  nxrt_thread_pool pool;
  memset(&pool, 0, sizeof pool);
  pool.struct_size = 4;
  EXPECT_ERROR(nxrt_session_options_set_thread_pool(o, &pool, g_err), g_err, NXRT_INVALID_ARGUMENT,
               "struct_size");
  /* A memory limit below the weights refuses the session. */
  CHECK_OK(nxrt_session_options_set_memory_limit(o, 1024, g_err));
  EXPECT_ERROR(nxrt_session_create_from_file(g_env, SILERO, o, &s, g_err), g_err, NXRT_FAIL,
               "max_session_memory_bytes = 1024");
  CHECK(s == NULL);
  /* Just above the weights (2183656 bytes of them): the session is created but a run
   * needs more than the 2 KiB or so left, and says so; the session stays usable. */
  CHECK_OK(nxrt_session_options_set_memory_limit(o, 2186000, g_err));
  CHECK_OK(nxrt_session_create_from_file(g_env, SILERO, o, &s, g_err));
  {
    SileroFeed f;
    feed_init(&f);
    const nxrt_tensor* inputs[3] = {f.input, f.state_t, f.sr_t};
    nxrt_tensor* outs[2] = {NULL, NULL};
    for (int attempt = 0; attempt < 2; ++attempt)
      EXPECT_ERROR(nxrt_session_run(s, NULL, kInputNames, inputs, 3, NULL, outs, 2, g_err), g_err,
                   NXRT_FAIL, "nxrt.limits.max_session_memory_bytes = 2186000");
    CHECK(outs[0] == NULL && outs[1] == NULL);
    feed_free(&f);
  }
  nxrt_session_destroy(s);
  s = NULL;
  nxrt_session_options_destroy(o);
}

/* ---- concurrency: one session run from two threads at once, each its own stream ---- */

enum { kSteps = 40 };

typedef struct {
  const nxrt_session* session;
  double freq;
  float probs[kSteps];
  int ok;
} Stream;

/* Runs one audio stream frame by frame, the state ping-ponging between two caller
 * buffers through bound outputs. */
static int run_stream(void* arg) {
  Stream* st = (Stream*)arg;
  float samples[512], state[2][256], prob = 0;
  int64_t sr = 16000;
  const int64_t in_shape[2] = {1, 512}, st_shape[3] = {2, 1, 128}, p_shape[2] = {1, 1};
  nxrt_tensor *in = NULL, *state_t[2] = {NULL, NULL}, *sr_t = NULL, *prob_t = NULL;
  memset(state, 0, sizeof state);
  st->ok = 0;
  if (nxrt_tensor_create_view(NXRT_DTYPE_FLOAT, in_shape, 2, samples, sizeof samples, &in, NULL) ||
      nxrt_tensor_create_view(NXRT_DTYPE_FLOAT, st_shape, 3, state[0], sizeof state[0], &state_t[0],
                              NULL) ||
      nxrt_tensor_create_view(NXRT_DTYPE_FLOAT, st_shape, 3, state[1], sizeof state[1], &state_t[1],
                              NULL) ||
      nxrt_tensor_create_view(NXRT_DTYPE_INT64, NULL, 0, &sr, sizeof sr, &sr_t, NULL) ||
      nxrt_tensor_create_view(NXRT_DTYPE_FLOAT, p_shape, 2, &prob, sizeof prob, &prob_t, NULL))
    return 1;
  int ok = 1;
  for (int step = 0; step < kSteps && ok; ++step) {
    for (int i = 0; i < 512; ++i) {
      const double t = (step * 512 + i) / 16000.0;
      samples[i] =
          (float)(0.4 * sin(2 * 3.14159265358979 * st->freq * t) * (step % 8 < 4 ? 1.0 : 0.05));
    }
    const nxrt_tensor* inputs[3] = {in, state_t[step % 2], sr_t};
    nxrt_tensor* outs[2] = {prob_t, state_t[(step + 1) % 2]};
    ok =
        nxrt_session_run(st->session, NULL, kInputNames, inputs, 3, NULL, outs, 2, NULL) == NXRT_OK;
    st->probs[step] = prob;
  }
  nxrt_tensor_destroy(in);
  nxrt_tensor_destroy(state_t[0]);
  nxrt_tensor_destroy(state_t[1]);
  nxrt_tensor_destroy(sr_t);
  nxrt_tensor_destroy(prob_t);
  st->ok = ok;
  return 0;
}

static void test_concurrency(const nxrt_session* shared, const nxrt_session* other) {
  /* Sequential references; `other` is planned differently (no constant folding), so
   * its stream gets its own reference. */
  Stream expected[3] = {{shared, 300.0, {0}, 0}, {shared, 700.0, {0}, 0}, {other, 700.0, {0}, 0}};
  for (int k = 0; k < 3; ++k) {
    run_stream(&expected[k]);
    CHECK(expected[k].ok);
  }
  CHECK(memcmp(expected[0].probs, expected[1].probs, sizeof expected[0].probs) != 0);
  for (int step = 0; step < kSteps; ++step)
    CHECK(fabsf(expected[1].probs[step] - expected[2].probs[step]) < 1e-4f);
  /* Same session from two threads, then two sessions from two threads. */
  for (int round = 0; round < 2; ++round) {
    Stream streams[2] = {{shared, 300.0, {0}, 0}, {round ? other : shared, 700.0, {0}, 0}};
    thrd_t threads[2];
    for (int k = 0; k < 2; ++k)
      CHECK(thrd_create(&threads[k], run_stream, &streams[k]) == thrd_success);
    for (int k = 0; k < 2; ++k) CHECK(thrd_join(threads[k], NULL) == thrd_success);
    for (int k = 0; k < 2; ++k) {
      const Stream* want = &expected[round && k == 1 ? 2 : k];
      CHECK(streams[k].ok);
      CHECK(memcmp(streams[k].probs, want->probs, sizeof want->probs) == 0);
    }
  }
}

/* A caller thread pool that runs every task inline. */
static int g_pool_calls = 0;
static void inline_parallel_for(void* user, void (*fn)(void*, size_t), void* ctx, size_t n) {
  (void)user;
  ++g_pool_calls;
  for (size_t i = 0; i < n; ++i) fn(ctx, i);
}

/* The caller's pool does run the pieces of big operators (PP-OCR's convolutions); Silero
 * is too small to split, so its runs above never called it. */
static void test_caller_pool(void) {
  nxrt_thread_pool pool;
  memset(&pool, 0, sizeof pool);
  pool.struct_size = sizeof pool;
  pool.parallel_for = inline_parallel_for;
  nxrt_session_options* o = NULL;
  nxrt_session* s = NULL;
  CHECK_OK(nxrt_session_options_create(&o, g_err));
  CHECK_OK(nxrt_session_options_set_thread_pool(o, &pool, g_err));
  CHECK_OK(nxrt_session_create_from_file(g_env, NXRT_SHARED_DIR "/models/ppocr_v4_det.onnx", o, &s,
                                         g_err));
  nxrt_session_options_destroy(o);
  const int64_t shape[4] = {1, 3, 160, 160};
  nxrt_tensor* image = NULL;
  nxrt_tensor* map = NULL;
  CHECK_OK(nxrt_tensor_create(NXRT_DTYPE_FLOAT, shape, 4, &image, g_err));
  const char* names[1] = {"x"};
  const nxrt_tensor* inputs[1] = {image};
  const int calls_before = g_pool_calls;
  CHECK_OK(nxrt_session_run(s, NULL, names, inputs, 1, NULL, &map, 1, g_err));
  CHECK(g_pool_calls > calls_before);
  CHECK(nxrt_tensor_element_count(map) == 160 * 160);
  nxrt_tensor_destroy(map);
  nxrt_tensor_destroy(image);
  nxrt_session_destroy(s);
}

int main(void) {
  g_err = nxrt_error_create();
  CHECK(g_err != NULL);
  CHECK(nxrt_error_code(g_err) == NXRT_OK);
  test_version();
  CHECK_OK(nxrt_env_create(NXRT_API_VERSION, &g_env, g_err));

  /* From a file, with every option set. */
  nxrt_session_options* o = NULL;
  CHECK_OK(nxrt_session_options_create(&o, g_err));
  CHECK_OK(nxrt_session_options_set_intra_op_threads(o, 1, g_err));
  CHECK_OK(nxrt_session_options_set_inter_op_threads(o, 1, g_err));
  CHECK_OK(nxrt_session_options_set_graph_optimization_level(o, NXRT_OPT_ALL, g_err));
  nxrt_thread_pool pool;
  memset(&pool, 0, sizeof pool);
  pool.struct_size = sizeof pool;
  pool.parallel_for = inline_parallel_for;
  CHECK_OK(nxrt_session_options_set_thread_pool(o, &pool, g_err));
  CHECK_OK(nxrt_session_options_set_memory_limit(o, 64u << 20, g_err));
  nxrt_session* s = NULL;
  CHECK_OK(nxrt_session_create_from_file(g_env, SILERO, o, &s, g_err));
  nxrt_session_options_destroy(o); /* the session copied what it needs */
  test_metadata(s);
  test_run(s);
  test_run_errors(s);

  /* From memory, without optimizations: same results. */
  size_t size = 0;
  unsigned char* bytes = read_file(SILERO, &size);
  CHECK(bytes != NULL);
  nxrt_session_options* o2 = NULL;
  CHECK_OK(nxrt_session_options_create(&o2, g_err));
  CHECK_OK(nxrt_session_options_set_graph_optimization_level(o2, NXRT_OPT_DISABLE, g_err));
  nxrt_session* s2 = NULL;
  CHECK_OK(nxrt_session_create_from_memory(g_env, bytes, size, o2, &s2, g_err));
  free(bytes); /* copied */
  nxrt_session_options_destroy(o2);
  test_metadata(s2);
  test_run(s2);

  /* The optimized graph written as an ONNX file runs alike. */
  char optimized[64];
  snprintf(optimized, sizeof optimized, "/tmp/nxrt_c_api_test_%d.onnx", (int)getpid());
  nxrt_session_options* o3 = NULL;
  CHECK_OK(nxrt_session_options_create(&o3, g_err));
  EXPECT_ERROR(nxrt_session_options_set_optimized_model_filepath(o3, NULL, g_err), g_err,
               NXRT_INVALID_ARGUMENT, "path");
  CHECK_OK(nxrt_session_options_set_optimized_model_filepath(o3, optimized, g_err));
  nxrt_session* s3 = NULL;
  CHECK_OK(nxrt_session_create_from_file(g_env, SILERO, o3, &s3, g_err));
  nxrt_session_options_destroy(o3);
  nxrt_session_destroy(s3);
  CHECK_OK(nxrt_session_create_from_file(g_env, optimized, NULL, &s3, g_err));
  test_metadata(s3);
  test_run(s3);
  nxrt_session_destroy(s3);
  CHECK(remove(optimized) == 0);

  test_concurrency(s, s2);
  test_tensor_errors();
  test_session_errors();
  CHECK(g_pool_calls == 0); /* Silero's operators are too small to split */
  test_caller_pool();

  /* Teardown in any order: the environment lives until its last session is gone. */
  nxrt_env_destroy(g_env);
  test_run(s);
  nxrt_session_destroy(s);
  nxrt_session_destroy(s2);
  nxrt_session_destroy(NULL);
  nxrt_env_destroy(NULL);
  nxrt_error_destroy(g_err);
  printf("c_api_test: %d checks passed\n", g_checks);
  return 0;
}
