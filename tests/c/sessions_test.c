/* Measured bars about threads and many sessions, through the C API:
 *   - a session created with 1 intra-op and 1 inter-op thread creates no thread (the
 *     entries of /proc/self/task are counted before creation and after runs);
 *   - 100 Silero sessions, one per simulated audio stream, run concurrently from 2
 *     threads, and every stream's probabilities equal those of the same stream run alone
 *     on one session;
 *   - one session shared by 4 threads, each running its own streams, gives the same;
 *   - a session with 2 intra-op threads (PP-OCR detection, big enough to split its
 *     convolutions) run from 2 threads at once matches a 1-thread session.
 * The ThreadSanitizer build of scripts/sanitize.sh runs this test too. */
#define _GNU_SOURCE
#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nxrt/nxrt.h"

#ifndef NXRT_SHARED_DIR
#error "NXRT_SHARED_DIR must point at the shared data folder"
#endif
#define SILERO NXRT_SHARED_DIR "/models/silero_vad_v5.onnx"
#define PPOCR NXRT_SHARED_DIR "/models/ppocr_v4_det.onnx"

#define CHECK(cond)                                                                            \
  do {                                                                                         \
    if (!(cond)) {                                                                             \
      fprintf(stderr, "%s:%d: CHECK failed: %s (last error: %s)\n", __FILE__, __LINE__, #cond, \
              nxrt_last_error_message());                                                      \
      exit(1);                                                                                 \
    }                                                                                          \
  } while (0)

#define CHECK_OK(call) CHECK((call) == NXRT_OK)

enum { kStreams = 100, kSteps = 24, kWorkers = 2, kSharedWorkers = 4 };

static const char* const kInputNames[3] = {"input", "state", "sr"};

static int count_threads(void) {
  DIR* dir = opendir("/proc/self/task");
  CHECK(dir != NULL);
  int n = 0;
  for (struct dirent* e = readdir(dir); e; e = readdir(dir))
    if (e->d_name[0] != '.') ++n;
  closedir(dir);
  return n;
}

static nxrt_session* create_session(nxrt_env* env) {
  nxrt_session_options* o = NULL;
  nxrt_session* s = NULL;
  CHECK_OK(nxrt_session_options_create(&o, NULL));
  CHECK_OK(nxrt_session_options_set_intra_op_threads(o, 1, NULL));
  CHECK_OK(nxrt_session_options_set_inter_op_threads(o, 1, NULL));
  CHECK_OK(nxrt_session_create_from_file(env, SILERO, o, &s, NULL));
  nxrt_session_options_destroy(o);
  return s;
}

/* One audio stream: its own samples, state (ping-ponging between two buffers through
 * bound outputs) and results. Each stream hears a different tone and gating pattern. */
typedef struct {
  nxrt_session* session;
  int id;
  float samples[512];
  float state[2][256];
  float prob;
  int64_t sr;
  nxrt_tensor *in, *state_t[2], *sr_t, *prob_t;
  float probs[kSteps];
} Stream;

static void stream_init(Stream* st, nxrt_session* session, int id) {
  const int64_t in_shape[2] = {1, 512}, st_shape[3] = {2, 1, 128}, p_shape[2] = {1, 1};
  memset(st, 0, sizeof *st);
  st->session = session;
  st->id = id;
  st->sr = 16000;
  CHECK_OK(nxrt_tensor_create_view(NXRT_DTYPE_FLOAT, in_shape, 2, st->samples, sizeof st->samples,
                                   &st->in, NULL));
  for (int k = 0; k < 2; ++k)
    CHECK_OK(nxrt_tensor_create_view(NXRT_DTYPE_FLOAT, st_shape, 3, st->state[k],
                                     sizeof st->state[k], &st->state_t[k], NULL));
  CHECK_OK(
      nxrt_tensor_create_view(NXRT_DTYPE_INT64, NULL, 0, &st->sr, sizeof st->sr, &st->sr_t, NULL));
  CHECK_OK(nxrt_tensor_create_view(NXRT_DTYPE_FLOAT, p_shape, 2, &st->prob, sizeof st->prob,
                                   &st->prob_t, NULL));
}

static void stream_free(Stream* st) {
  nxrt_tensor_destroy(st->in);
  nxrt_tensor_destroy(st->state_t[0]);
  nxrt_tensor_destroy(st->state_t[1]);
  nxrt_tensor_destroy(st->sr_t);
  nxrt_tensor_destroy(st->prob_t);
}

/* Runs frame `step` of the stream; 0 on success. */
static int stream_step(Stream* st, int step) {
  const double freq = 150.0 + 37.0 * st->id;
  for (int i = 0; i < 512; ++i) {
    const double t = (step * 512 + i) / 16000.0;
    const int voiced = ((step + st->id) % 10) < 6;
    st->samples[i] = (float)(0.4 * sin(2 * 3.14159265358979 * freq * t) * (voiced ? 1.0 : 0.03));
  }
  const nxrt_tensor* inputs[3] = {st->in, st->state_t[step % 2], st->sr_t};
  nxrt_tensor* outs[2] = {st->prob_t, st->state_t[(step + 1) % 2]};
  if (nxrt_session_run(st->session, NULL, kInputNames, inputs, 3, NULL, outs, 2, NULL) != NXRT_OK)
    return 1;
  st->probs[step] = st->prob;
  return 0;
}

typedef struct {
  Stream* streams;
  int first;  /* this worker serves streams first, first + stride, ... */
  int stride; /* the number of workers */
  int failed;
} Worker;

/* Like a server thread: every 32 ms frame period, one frame for each of its streams.
 * (POSIX threads, not C11 <threads.h>: ThreadSanitizer does not see glibc's thrd_create.) */
static void* worker_main(void* arg) {
  Worker* w = (Worker*)arg;
  for (int step = 0; step < kSteps && !w->failed; ++step)
    for (int k = w->first; k < kStreams && !w->failed; k += w->stride)
      w->failed = stream_step(&w->streams[k], step);
  return NULL;
}

/* Runs every stream of `streams` to the end on `count` threads. */
static void run_on_threads(Stream* streams, int count) {
  pthread_t threads[kSharedWorkers];
  Worker workers[kSharedWorkers];
  CHECK(count <= kSharedWorkers);
  for (int w = 0; w < count; ++w) {
    workers[w].streams = streams;
    workers[w].first = w;
    workers[w].stride = count;
    workers[w].failed = 0;
    CHECK(pthread_create(&threads[w], NULL, worker_main, &workers[w]) == 0);
  }
  for (int w = 0; w < count; ++w) {
    CHECK(pthread_join(threads[w], NULL) == 0);
    CHECK(!workers[w].failed);
  }
}

static void expect_equal(const Stream* got, const Stream* want, const char* what) {
  for (int k = 0; k < kStreams; ++k) {
    if (memcmp(got[k].probs, want[k].probs, sizeof want[k].probs) != 0) {
      fprintf(stderr, "stream %d %s differs from its single-session run\n", k, what);
      exit(1);
    }
  }
}

static void test_no_threads(nxrt_env* env) {
  const int before = count_threads();
  nxrt_session* s = create_session(env);
  Stream* st = malloc(sizeof *st);
  CHECK(st != NULL);
  stream_init(st, s, 0);
  for (int step = 0; step < kSteps; ++step) CHECK(stream_step(st, step) == 0);
  const int after = count_threads();
  printf(
      "sessions_test: %d thread(s) before creating a session with 1 intra-op and 1 "
      "inter-op thread, %d after %d runs\n",
      before, after, kSteps);
  CHECK(after == before);
  stream_free(st);
  free(st);
  nxrt_session_destroy(s);
  CHECK(count_threads() == before);
}

static void test_many_sessions(nxrt_env* env) {
  Stream* alone = calloc(kStreams, sizeof(Stream));
  Stream* together = calloc(kStreams, sizeof(Stream));
  Stream* shared = calloc(kStreams, sizeof(Stream));
  nxrt_session** sessions = calloc(kStreams, sizeof(nxrt_session*));
  CHECK(alone && together && shared && sessions);

  /* Reference: every stream on its own, one after the other, on a single session. */
  nxrt_session* single = create_session(env);
  for (int k = 0; k < kStreams; ++k) {
    stream_init(&alone[k], single, k);
    for (int step = 0; step < kSteps; ++step) CHECK(stream_step(&alone[k], step) == 0);
  }

  /* One session per stream, two threads each serving half of the streams. */
  for (int k = 0; k < kStreams; ++k) {
    sessions[k] = create_session(env);
    stream_init(&together[k], sessions[k], k);
  }
  run_on_threads(together, kWorkers);
  expect_equal(together, alone, "on its own session");

  int distinct = 0;
  for (int k = 0; k < kStreams; ++k)
    distinct += memcmp(alone[k].probs, alone[0].probs, sizeof alone[0].probs) != 0;
  CHECK(distinct > kStreams / 2); /* the streams really are different */
  printf(
      "sessions_test: %d sessions on %d threads, %d frames each, equal to the "
      "single-session results\n",
      kStreams, kWorkers, kSteps);

  /* All streams on one session, shared by more threads than there are cores. */
  for (int k = 0; k < kStreams; ++k) stream_init(&shared[k], single, k);
  run_on_threads(shared, kSharedWorkers);
  expect_equal(shared, alone, "on a session shared by threads");
  printf(
      "sessions_test: one session shared by %d threads, %d streams of %d frames, equal to "
      "the single-thread results\n",
      kSharedWorkers, kStreams, kSteps);

  for (int k = 0; k < kStreams; ++k) {
    stream_free(&alone[k]);
    stream_free(&together[k]);
    stream_free(&shared[k]);
    nxrt_session_destroy(sessions[k]);
  }
  nxrt_session_destroy(single);
  free(alone);
  free(together);
  free(shared);
  free(sessions);
}

/* ---- intra-op threads: PP-OCR at 160x160 ---- */

enum { kSide = 160, kPixels = 3 * kSide * kSide };

typedef struct {
  nxrt_session* session;
  const float* image;
  nxrt_tensor* out;
  int failed;
} OcrRun;

static void* ocr_run(void* arg) {
  OcrRun* r = (OcrRun*)arg;
  const int64_t shape[4] = {1, 3, kSide, kSide};
  nxrt_tensor* in = NULL;
  const char* names[1] = {"x"};
  r->failed = nxrt_tensor_create_view(NXRT_DTYPE_FLOAT, shape, 4, (void*)r->image,
                                      kPixels * sizeof(float), &in, NULL) != NXRT_OK;
  const nxrt_tensor* inputs[1] = {in};
  r->out = NULL;
  if (!r->failed)
    r->failed =
        nxrt_session_run(r->session, NULL, names, inputs, 1, NULL, &r->out, 1, NULL) != NXRT_OK;
  nxrt_tensor_destroy(in);
  return NULL;
}

static void test_intra_op_threads(nxrt_env* env) {
  float* image = malloc(kPixels * sizeof(float));
  CHECK(image != NULL);
  for (int i = 0; i < kPixels; ++i) image[i] = (float)((i * 7919) % 255) / 255.0f;
  nxrt_session_options* o = NULL;
  nxrt_session *serial = NULL, *threaded = NULL;
  CHECK_OK(nxrt_session_options_create(&o, NULL));
  CHECK_OK(nxrt_session_create_from_file(env, PPOCR, o, &serial, NULL));
  const int before = count_threads();
  CHECK_OK(nxrt_session_options_set_intra_op_threads(o, 2, NULL));
  CHECK_OK(nxrt_session_create_from_file(env, PPOCR, o, &threaded, NULL));
  CHECK(count_threads() == before + 1); /* one worker besides the calling thread */
  nxrt_session_options_destroy(o);

  OcrRun want = {serial, image, NULL, 0};
  ocr_run(&want);
  CHECK(!want.failed);
  OcrRun runs[2] = {{threaded, image, NULL, 0}, {threaded, image, NULL, 0}};
  pthread_t threads[2];
  for (int t = 0; t < 2; ++t) CHECK(pthread_create(&threads[t], NULL, ocr_run, &runs[t]) == 0);
  for (int t = 0; t < 2; ++t) CHECK(pthread_join(threads[t], NULL) == 0);
  const int64_t n = nxrt_tensor_element_count(want.out);
  const float* w = (const float*)nxrt_tensor_data(want.out);
  for (int t = 0; t < 2; ++t) {
    CHECK(!runs[t].failed && nxrt_tensor_element_count(runs[t].out) == n);
    const float* g = (const float*)nxrt_tensor_data(runs[t].out);
    for (int64_t i = 0; i < n; ++i) CHECK(fabsf(g[i] - w[i]) <= 1e-4f + 1e-4f * fabsf(w[i]));
    nxrt_tensor_destroy(runs[t].out);
  }
  printf(
      "sessions_test: PP-OCR %dx%d with 2 intra-op threads, run from 2 threads at once, "
      "matches the 1-thread session\n",
      kSide, kSide);
  nxrt_tensor_destroy(want.out);
  nxrt_session_destroy(serial);
  nxrt_session_destroy(threaded);
  CHECK(count_threads() == before); /* the worker is gone with its session */
  free(image);
}

int main(void) {
  nxrt_env* env = NULL;
  CHECK_OK(nxrt_env_create(NXRT_API_VERSION, &env, NULL));
  test_no_threads(env);
  test_many_sessions(env);
  test_intra_op_threads(env);
  nxrt_env_destroy(env);
  return 0;
}
