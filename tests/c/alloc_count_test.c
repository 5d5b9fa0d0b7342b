/* Measured bar: a warm run of Silero VAD through the C API, with inputs over caller
 * memory and both outputs bound to caller buffers, makes no heap allocation.
 *
 * The executable defines malloc and friends itself, so every allocation in the process
 * (libnxrt.so and libstdc++'s operator new included, since both resolve malloc through
 * the global symbol scope where the executable comes first) passes through the
 * counters below before reaching glibc's __libc_* implementations.
 *
 * NXRT_ALLOC_TRACE=N prints a backtrace of the first N counted allocations to stderr;
 * frames inside libnxrt.so show as offsets (the library exports only the C API), which
 * `addr2line -f -C -e libnxrt.so 0xOFFSET` turns into function names. */
#define _GNU_SOURCE
#include <execinfo.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nxrt/nxrt.h"

#ifndef NXRT_SHARED_DIR
#error "NXRT_SHARED_DIR must point at the shared data folder"
#endif
#define SILERO NXRT_SHARED_DIR "/models/silero_vad_v5.onnx"

/* ---- the counting allocator ---- */

extern void* __libc_malloc(size_t size);
extern void* __libc_calloc(size_t count, size_t size);
extern void* __libc_realloc(void* ptr, size_t size);
extern void __libc_free(void* ptr);
extern void* __libc_memalign(size_t alignment, size_t size);
extern void* __libc_valloc(size_t size);
extern void* __libc_pvalloc(size_t size);

static atomic_int g_counting = 0;
static atomic_long g_allocs = 0;
static atomic_long g_frees = 0;
static atomic_int g_traced = 0;
static int g_trace_limit = 0;
static _Thread_local int t_in_hook = 0;

static void note_alloc(size_t size) {
  if (!atomic_load_explicit(&g_counting, memory_order_relaxed) || t_in_hook) return;
  atomic_fetch_add_explicit(&g_allocs, 1, memory_order_relaxed);
  if (atomic_fetch_add(&g_traced, 1) < g_trace_limit) {
    t_in_hook = 1;
    void* frames[32];
    const int n = backtrace(frames, 32);
    char line[64];
    const int len = snprintf(line, sizeof line, "--- allocation of %zu bytes:\n", size);
    if (len > 0) (void)!write(2, line, (size_t)len);
    backtrace_symbols_fd(frames, n, 2);
    t_in_hook = 0;
  }
}

static void note_free(void* ptr) {
  if (ptr && atomic_load_explicit(&g_counting, memory_order_relaxed) && !t_in_hook)
    atomic_fetch_add_explicit(&g_frees, 1, memory_order_relaxed);
}

void* malloc(size_t size) {
  note_alloc(size);
  return __libc_malloc(size);
}
void* calloc(size_t count, size_t size) {
  note_alloc(count * size);
  return __libc_calloc(count, size);
}
void* realloc(void* ptr, size_t size) {
  note_alloc(size);
  return __libc_realloc(ptr, size);
}
void free(void* ptr) {
  note_free(ptr);
  __libc_free(ptr);
}
void* memalign(size_t alignment, size_t size) {
  note_alloc(size);
  return __libc_memalign(alignment, size);
}
void* aligned_alloc(size_t alignment, size_t size) {
  note_alloc(size);
  return __libc_memalign(alignment, size);
}
int posix_memalign(void** out, size_t alignment, size_t size) {
  if (alignment < sizeof(void*) || (alignment & (alignment - 1))) return 22; /* EINVAL */
  note_alloc(size);
  void* p = __libc_memalign(alignment, size);
  if (!p && size) return 12; /* ENOMEM */
  *out = p;
  return 0;
}
void* valloc(size_t size) {
  note_alloc(size);
  return __libc_valloc(size);
}
void* pvalloc(size_t size) {
  note_alloc(size);
  return __libc_pvalloc(size);
}

/* ---- the test ---- */

#define CHECK_OK(call)                                                         \
  do {                                                                         \
    nxrt_code code_ = (call);                                                  \
    if (code_ != NXRT_OK) {                                                    \
      fprintf(stderr, "%s:%d: %s failed: %s: %s\n", __FILE__, __LINE__, #call, \
              nxrt_code_name(code_), nxrt_last_error_message());               \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

enum { kWarmup = 20, kCounted = 1000 };

static const char* const kInputNames[3] = {"input", "state", "sr"};
static const char* const kOutputNames[2] = {"output", "stateN"};

int main(void) {
  const char* trace = getenv("NXRT_ALLOC_TRACE");
  g_trace_limit = trace ? atoi(trace) : 0;
  if (g_trace_limit > 0) {
    /* backtrace() loads libgcc on its first call, which allocates: do it now. */
    void* frames[4];
    (void)backtrace(frames, 4);
  }

  nxrt_env* env = NULL;
  nxrt_session_options* options = NULL;
  nxrt_session* session = NULL;
  CHECK_OK(nxrt_env_create(NXRT_API_VERSION, &env, NULL));
  CHECK_OK(nxrt_session_options_create(&options, NULL));
  CHECK_OK(nxrt_session_options_set_intra_op_threads(options, 1, NULL));
  CHECK_OK(nxrt_session_options_set_inter_op_threads(options, 1, NULL));
  CHECK_OK(nxrt_session_create_from_file(env, SILERO, options, &session, NULL));
  nxrt_session_options_destroy(options);

  /* Every buffer is the caller's: samples, the state ping-ponging between two arrays,
   * the sample rate and the probability. */
  static float samples[512], state[2][256];
  float prob = -1.0f;
  int64_t sr = 16000;
  const int64_t in_shape[2] = {1, 512}, st_shape[3] = {2, 1, 128}, p_shape[2] = {1, 1};
  nxrt_tensor *in = NULL, *state_t[2] = {NULL, NULL}, *sr_t = NULL, *prob_t = NULL;
  CHECK_OK(
      nxrt_tensor_create_view(NXRT_DTYPE_FLOAT, in_shape, 2, samples, sizeof samples, &in, NULL));
  for (int k = 0; k < 2; ++k)
    CHECK_OK(nxrt_tensor_create_view(NXRT_DTYPE_FLOAT, st_shape, 3, state[k], sizeof state[k],
                                     &state_t[k], NULL));
  CHECK_OK(nxrt_tensor_create_view(NXRT_DTYPE_INT64, NULL, 0, &sr, sizeof sr, &sr_t, NULL));
  CHECK_OK(
      nxrt_tensor_create_view(NXRT_DTYPE_FLOAT, p_shape, 2, &prob, sizeof prob, &prob_t, NULL));

  double checksum = 0;
  long cold_allocs = 0;
  for (int step = 0; step < kWarmup + kCounted; ++step) {
    for (int i = 0; i < 512; ++i) {
      const double t = (step * 512 + i) / 16000.0;
      samples[i] =
          (float)(0.4 * sin(2 * 3.14159265358979 * 440.0 * t) * (step % 16 < 8 ? 1.0 : 0.02));
    }
    const nxrt_tensor* inputs[3] = {in, state_t[step % 2], sr_t};
    nxrt_tensor* outs[2] = {prob_t, state_t[(step + 1) % 2]};
    /* The first run is cold (buffers, scratch, caches): it must count allocations, or the
     * counter is not wired and a zero below would prove nothing. */
    if (step == 0) atomic_store(&g_counting, 1);
    if (step == 1) {
      atomic_store(&g_counting, 0);
      cold_allocs = atomic_load(&g_allocs);
    }
    if (step == kWarmup) {
      atomic_store(&g_allocs, 0);
      atomic_store(&g_frees, 0);
      atomic_store(&g_counting, 1);
    }
    CHECK_OK(nxrt_session_run(session, NULL, kInputNames, inputs, 3, kOutputNames, outs, 2, NULL));
    if (outs[0] != prob_t || outs[1] != state_t[(step + 1) % 2]) {
      fprintf(stderr, "bound output handles were replaced\n");
      return 1;
    }
    checksum += prob;
  }
  atomic_store(&g_counting, 0);
  const long allocs = atomic_load(&g_allocs), frees = atomic_load(&g_frees);

  if (!(prob >= 0.0f && prob <= 1.0f) || !isfinite(checksum)) {
    fprintf(stderr, "implausible speech probability %f\n", (double)prob);
    return 1;
  }
  nxrt_tensor_destroy(in);
  for (int k = 0; k < 2; ++k) nxrt_tensor_destroy(state_t[k]);
  nxrt_tensor_destroy(sr_t);
  nxrt_tensor_destroy(prob_t);
  nxrt_session_destroy(session);
  nxrt_env_destroy(env);

  printf(
      "alloc_count_test: cold run %ld allocations; %ld allocations and %ld frees over %d "
      "warm runs (%.2f per run)\n",
      cold_allocs, allocs, frees, kCounted, (double)allocs / kCounted);
  if (cold_allocs <= 0) {
    fprintf(stderr, "the counter saw no allocation on the cold run: malloc is not interposed\n");
    return 1;
  }
  if (allocs != 0) {
    fprintf(stderr,
            "expected no allocation on the warm path; rerun with NXRT_ALLOC_TRACE=10 "
            "to see where they come from\n");
    return 1;
  }
  return 0;
}
