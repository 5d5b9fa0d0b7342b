/*
 * nxrt C API: run ONNX models from C or any language with a C FFI.
 *
 * This header is the documentation. It is plain C11 (also valid C++), and the ABI is
 * stable within a major version:
 *   - every object is an opaque handle created and destroyed by functions here;
 *   - no C++ type, exception or allocator crosses the boundary;
 *   - options are set through setter functions, and the only public structs start with
 *     a `struct_size` member, so later versions can grow them without breaking callers;
 *   - NXRT_API_VERSION is compiled into the caller and passed to nxrt_env_create, which
 *     refuses callers built against a newer API than the library provides.
 *
 * Conventions shared by every function:
 *   - Fallible functions return an nxrt_code (NXRT_OK == 0 on success) and take, as their
 *     last parameter, an optional `nxrt_error* err`. On failure the code and a message
 *     are written into `err` when it is not NULL; on success `err` is left untouched.
 *     An error object belongs to its caller and must not be shared by threads calling
 *     at the same time (use one per thread). Independently of `err`, the message of the
 *     last failure on the calling thread is kept and readable with
 *     nxrt_last_error_message() (thread-local, so thread-safe).
 *   - Output parameters (`nxrt_xxx** out`) are written only on success.
 *   - Passing NULL where a handle or an output pointer is required fails with
 *     NXRT_INVALID_ARGUMENT; destroy functions accept NULL and do nothing.
 *   - Strings passed in are NUL-terminated UTF-8; strings returned are owned by the
 *     object they came from and stay valid until that object is destroyed.
 *   - The library never throws and never aborts on bad input: out of memory inside the
 *     library is reported as NXRT_FAIL with a message saying so.
 *
 * Threads: nxrt creates no thread. Work runs on the thread that calls nxrt_session_run;
 * a session may be run from many threads at the same time (each run has its own state),
 * and many sessions may live in one process.
 *
 * Typical use:
 *
 *   nxrt_env* env; nxrt_session* s; nxrt_error* err = nxrt_error_create();
 *   nxrt_env_create(NXRT_API_VERSION, &env, err);
 *   nxrt_session_create_from_file(env, "model.onnx", NULL, &s, err);
 *   nxrt_tensor* in;  int64_t shape[2] = {1, 512};
 *   nxrt_tensor_create_view(NXRT_DTYPE_FLOAT, shape, 2, samples, sizeof samples, &in, err);
 *   const char* in_names[1] = {"input"};  const nxrt_tensor* ins[1] = {in};
 *   nxrt_tensor* outs[1] = {NULL};  (a model with one input and one output)
 *   if (nxrt_session_run(s, NULL, in_names, ins, 1, NULL, outs, 1, err) != NXRT_OK)
 *     fprintf(stderr, "%s\n", nxrt_error_message(err));
 *   ... read nxrt_tensor_data(outs[0]) ...
 *   nxrt_tensor_destroy(outs[0]); nxrt_tensor_destroy(in);
 *   nxrt_session_destroy(s); nxrt_env_destroy(env); nxrt_error_destroy(err);
 */
#ifndef NXRT_NXRT_H_
#define NXRT_NXRT_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Marks the exported functions. Only these symbols leave libnxrt.so. */
#if defined(_WIN32)
#if defined(NXRT_BUILDING_LIBRARY)
#define NXRT_API __declspec(dllexport)
#else
#define NXRT_API __declspec(dllimport)
#endif
#else
#define NXRT_API __attribute__((visibility("default")))
#endif

/* ------------------------------------------------------------------------------------ */
/* Versions                                                                             */
/* ------------------------------------------------------------------------------------ */

/* Version of this API (the set of functions and struct layouts in this header). It grows
 * by one whenever a function or a struct member is added; existing ones never change
 * meaning within a major library version. */
#define NXRT_API_VERSION 1

/* Version of the nxrt release this header ships with. */
#define NXRT_VERSION_MAJOR 0
#define NXRT_VERSION_MINOR 1
#define NXRT_VERSION_PATCH 0

/* The library's release version as "MAJOR.MINOR.PATCH" (static storage, never freed).
 * May differ from the NXRT_VERSION_* macros when the header and library were built
 * apart. Thread-safe. */
NXRT_API const char* nxrt_get_version(void);

/* The highest NXRT_API_VERSION the library implements. A caller built against a
 * header whose NXRT_API_VERSION is larger must not call functions newer than this.
 * Thread-safe. */
NXRT_API uint32_t nxrt_get_api_version(void);

/* ------------------------------------------------------------------------------------ */
/* Errors                                                                               */
/* ------------------------------------------------------------------------------------ */

/* Result codes. The values (and names) mirror onnxruntime's status codes. */
typedef enum nxrt_code {
  NXRT_OK = 0,
  NXRT_FAIL = 1,             /* generic failure, including out of memory */
  NXRT_INVALID_ARGUMENT = 2, /* bad argument: names, dtypes, shapes, NULL pointers */
  NXRT_NO_SUCH_FILE = 3,     /* the model file (or its external data) is missing */
  NXRT_NO_MODEL = 4,
  NXRT_ENGINE_ERROR = 5,      /* an internal inconsistency: please report it */
  NXRT_RUNTIME_EXCEPTION = 6, /* a kernel failed while running, or the run was terminated */
  NXRT_INVALID_PROTOBUF = 7,  /* the model bytes are not a valid ONNX protobuf */
  NXRT_MODEL_LOADED = 8,
  NXRT_NOT_IMPLEMENTED = 9, /* an operator, opset or type nxrt does not support */
  NXRT_INVALID_GRAPH = 10,  /* the model decodes but its graph is inconsistent */
  NXRT_EP_FAIL = 11,
  /* Not a code: keeps the enum int-sized (see NXRT_DTYPE_FORCE_INT32_). */
  NXRT_CODE_FORCE_INT32_ = 0x7fffffff
} nxrt_code;

/* The name of a code as onnxruntime spells it ("InvalidArgument"); "Unknown" for values
 * outside the enum. Static storage. Thread-safe. */
NXRT_API const char* nxrt_code_name(nxrt_code code);

/* An error: a code plus a message. Owned by the caller; reusable across calls (each
 * failure overwrites it). Not synchronized: one per thread. */
typedef struct nxrt_error nxrt_error;

/* Creates an error object holding NXRT_OK and an empty message; NULL when out of
 * memory. Destroy with nxrt_error_destroy. */
NXRT_API nxrt_error* nxrt_error_create(void);
/* Frees an error object. NULL is ignored. */
NXRT_API void nxrt_error_destroy(nxrt_error* err);
/* The code stored in `err` (NXRT_OK when NULL or after a clear). */
NXRT_API nxrt_code nxrt_error_code(const nxrt_error* err);
/* The message stored in `err` ("" when NULL or none). Valid until `err` is next
 * written, cleared or destroyed. Messages name what is at fault, e.g.
 * "Unexpected input data type. Actual: (tensor(int32)) , expected: (tensor(float)) ...". */
NXRT_API const char* nxrt_error_message(const nxrt_error* err);
/* Resets `err` to NXRT_OK with an empty message. NULL is ignored. */
NXRT_API void nxrt_error_clear(nxrt_error* err);

/* The message of the last failure of any nxrt function on the calling thread ("" when
 * none yet). Thread-local storage, valid until the next failing nxrt call on this thread.
 * Handy for FFIs that do not want to manage nxrt_error objects. */
NXRT_API const char* nxrt_last_error_message(void);
/* The code of the last failure on the calling thread (NXRT_OK when none yet). */
NXRT_API nxrt_code nxrt_last_error_code(void);

/* ------------------------------------------------------------------------------------ */
/* Element types                                                                        */
/* ------------------------------------------------------------------------------------ */

/* Element types, numbered as ONNX's TensorProto.DataType. Sub-byte types (int4, uint4,
 * float4e2m1, int2, uint2) are stored unpacked, one element per byte. */
typedef enum nxrt_dtype {
  NXRT_DTYPE_UNDEFINED = 0,
  NXRT_DTYPE_FLOAT = 1,
  NXRT_DTYPE_UINT8 = 2,
  NXRT_DTYPE_INT8 = 3,
  NXRT_DTYPE_UINT16 = 4,
  NXRT_DTYPE_INT16 = 5,
  NXRT_DTYPE_INT32 = 6,
  NXRT_DTYPE_INT64 = 7,
  NXRT_DTYPE_STRING = 8, /* read-only through the C API: see nxrt_tensor_get_string */
  NXRT_DTYPE_BOOL = 9,   /* one byte per element, 0 or 1 */
  NXRT_DTYPE_FLOAT16 = 10,
  NXRT_DTYPE_DOUBLE = 11,
  NXRT_DTYPE_UINT32 = 12,
  NXRT_DTYPE_UINT64 = 13,
  NXRT_DTYPE_COMPLEX64 = 14,
  NXRT_DTYPE_COMPLEX128 = 15,
  NXRT_DTYPE_BFLOAT16 = 16,
  NXRT_DTYPE_FLOAT8E4M3FN = 17,
  NXRT_DTYPE_FLOAT8E4M3FNUZ = 18,
  NXRT_DTYPE_FLOAT8E5M2 = 19,
  NXRT_DTYPE_FLOAT8E5M2FNUZ = 20,
  NXRT_DTYPE_UINT4 = 21,
  NXRT_DTYPE_INT4 = 22,
  NXRT_DTYPE_FLOAT4E2M1 = 23,
  NXRT_DTYPE_FLOAT8E8M0 = 24,
  NXRT_DTYPE_UINT2 = 25,
  NXRT_DTYPE_INT2 = 26,
  /* Not a type: makes the enum int-sized in C and C++ alike, so any int a caller passes
     is a valid value to check (and reject) rather than undefined behaviour in C++. */
  NXRT_DTYPE_FORCE_INT32_ = 0x7fffffff
} nxrt_dtype;

/* Bytes per element of `dtype` (1 for the unpacked sub-byte types); 0 for
 * NXRT_DTYPE_STRING and unknown values. Thread-safe. */
NXRT_API size_t nxrt_dtype_size(nxrt_dtype dtype);
/* ONNX spelling of `dtype` ("float", "int64", "bfloat16"); "undefined" for unknown
 * values. Static storage. Thread-safe. */
NXRT_API const char* nxrt_dtype_name(nxrt_dtype dtype);

/* ------------------------------------------------------------------------------------ */
/* Environment                                                                          */
/* ------------------------------------------------------------------------------------ */

/* Process-level context that sessions are created in. Reference counted: every session
 * keeps its environment alive, so handles may be destroyed in any order. An environment
 * may be used from many threads at the same time. */
typedef struct nxrt_env nxrt_env;

/* Creates an environment. `api_version` must be the NXRT_API_VERSION the caller was
 * compiled with; a value larger than nxrt_get_api_version() (a header newer than the
 * library) or 0 fails with NXRT_INVALID_ARGUMENT. On success *out owns a reference
 * released with nxrt_env_destroy. Thread-safe. */
NXRT_API nxrt_code nxrt_env_create(uint32_t api_version, nxrt_env** out, nxrt_error* err);
/* Releases the caller's reference; the environment goes away with its last session.
 * NULL is ignored. */
NXRT_API void nxrt_env_destroy(nxrt_env* env);

/* ------------------------------------------------------------------------------------ */
/* Session options                                                                      */
/* ------------------------------------------------------------------------------------ */

/* Options for creating sessions. Owned by the caller; the session copies what it needs,
 * so the options may be destroyed or reused right after nxrt_session_create_*. Not
 * synchronized: do not set options from one thread while another creates a session
 * with them. */
typedef struct nxrt_session_options nxrt_session_options;

/* Graph optimization levels (onnxruntime's numbering). nxrt folds constants at BASIC
 * and above; DISABLE runs the graph exactly as written. */
typedef enum nxrt_graph_optimization_level {
  NXRT_OPT_DISABLE = 0,
  NXRT_OPT_BASIC = 1,
  NXRT_OPT_EXTENDED = 2,
  NXRT_OPT_ALL = 99,
  /* Not a level: keeps the enum int-sized (see NXRT_DTYPE_FORCE_INT32_). */
  NXRT_OPT_FORCE_INT32_ = 0x7fffffff
} nxrt_graph_optimization_level;

/* A caller-supplied thread pool. nxrt calls `parallel_for(user_data, fn, ctx, n)`
 * expecting fn(ctx, i) to be run once for every i in [0, n), on any threads, and
 * parallel_for to return only when all have finished. Start it with
 * `struct_size = sizeof(nxrt_thread_pool)`: later API versions may append members.
 * The pool must outlive every session created with it.
 *
 * nxrt calls it from inside nxrt_session_run to split large operators (matrix products,
 * convolutions, big elementwise ops) into n pieces, n at most the intra-op thread setting
 * (4 when that is 0 or 1); small operators, such as all of Silero VAD's, run on the
 * calling thread without calling it. With a pool nxrt never creates threads itself. */
typedef struct nxrt_thread_pool {
  size_t struct_size;
  void* user_data;
  void (*parallel_for)(void* user_data, void (*fn)(void* ctx, size_t index), void* ctx, size_t n);
} nxrt_thread_pool;

/* Creates options holding the defaults: 0 threads (all work on the calling thread), NXRT_OPT_ALL,
 * no thread pool, no memory limit. Destroy with nxrt_session_options_destroy. */
NXRT_API nxrt_code nxrt_session_options_create(nxrt_session_options** out, nxrt_error* err);
/* Frees options. NULL is ignored. */
NXRT_API void nxrt_session_options_destroy(nxrt_session_options* options);

/* Threads for parallelism inside one operator: with no caller pool, a value above 1
 * starts that many - 1 worker threads with the session (joined when it is destroyed);
 * 0 (the default) and 1 run everything on the thread that calls nxrt_session_run and
 * create no thread. Runs of one session from several threads share its workers: a run
 * that finds them busy runs its operators serially. Negative values fail with
 * NXRT_INVALID_ARGUMENT. */
NXRT_API nxrt_code nxrt_session_options_set_intra_op_threads(nxrt_session_options* options,
                                                             int threads, nxrt_error* err);
/* Threads for running independent operators at the same time. Accepted for
 * compatibility; nxrt runs a graph's operators one after the other, so every value
 * behaves like 1 and creates no thread. Negative values fail with
 * NXRT_INVALID_ARGUMENT. */
NXRT_API nxrt_code nxrt_session_options_set_inter_op_threads(nxrt_session_options* options,
                                                             int threads, nxrt_error* err);
/* Graph optimization level; values other than the enum's fail with
 * NXRT_INVALID_ARGUMENT. */
NXRT_API nxrt_code nxrt_session_options_set_graph_optimization_level(
    nxrt_session_options* options, nxrt_graph_optimization_level level, nxrt_error* err);
/* Writes the model as the graph passes leave it to `path` (an ONNX file, replaced if it
 * exists) when a session is created with these options; onnxruntime's
 * optimized_model_filepath. At NXRT_OPT_BASIC the file holds only ONNX ops (and the
 * com.microsoft ops the model had) and other runtimes load it; at higher levels it may
 * hold ops of nxrt's own domain. An empty `path` turns writing off; NULL fails with
 * NXRT_INVALID_ARGUMENT. Creating the session fails when the file cannot be written. */
NXRT_API nxrt_code nxrt_session_options_set_optimized_model_filepath(nxrt_session_options* options,
                                                                     const char* path,
                                                                     nxrt_error* err);
/* Uses the caller's thread pool (copied; its struct_size must be at least the size of
 * the API version 1 struct and parallel_for must not be NULL), or none when `pool` is
 * NULL. See nxrt_thread_pool. */
NXRT_API nxrt_code nxrt_session_options_set_thread_pool(nxrt_session_options* options,
                                                        const nxrt_thread_pool* pool,
                                                        nxrt_error* err);
/* Caps the memory a session may hold, in bytes (0: no limit, the default). Creation
 * fails with NXRT_FAIL when the model's weights exceed it, and
 * nxrt_session_create_from_memory before copying a model bigger than it. Each run may
 * then hold at most the limit less the weights in tensors (pooled intermediates,
 * subgraph values and the outputs it allocates); an allocation beyond that fails the run
 * with NXRT_FAIL and a message naming the output, and the session stays usable.
 * Kernels' small per-thread scratch buffers are not counted. Same as the session config
 * entry nxrt.limits.max_session_memory_bytes. */
NXRT_API nxrt_code nxrt_session_options_set_memory_limit(nxrt_session_options* options,
                                                         uint64_t bytes, nxrt_error* err);

/* ------------------------------------------------------------------------------------ */
/* Tensors                                                                              */
/* ------------------------------------------------------------------------------------ */

/* A dense tensor: element type, shape and data, row-major. Either a view over caller
 * memory (nxrt_tensor_create_view: no copy, the caller keeps the memory alive and
 * frees it) or owning memory nxrt allocated (nxrt_tensor_create, and outputs of
 * nxrt_session_run; freed with the tensor). A tensor is not synchronized: do not write
 * it (or run with it as an output) while another thread reads it. Reading one tensor
 * from many threads, including feeding it to concurrent runs, is fine. */
typedef struct nxrt_tensor nxrt_tensor;

/* Wraps `data` as a tensor of `dtype` and shape `shape[0..rank)` without copying.
 * `data` must hold at least `data_bytes` bytes, stay valid (and for inputs unchanged
 * during a run) until the tensor is destroyed, and be aligned for the element type.
 * `data_bytes` must be at least the element count times nxrt_dtype_size(dtype); `data`
 * may be NULL only when the element count is 0. `shape` may be NULL when rank is 0 (a
 * scalar). Fails with NXRT_INVALID_ARGUMENT for an unknown dtype, NXRT_DTYPE_STRING,
 * negative dims, rank > 64, or a buffer too small. Thread-safe. */
NXRT_API nxrt_code nxrt_tensor_create_view(nxrt_dtype dtype, const int64_t* shape, size_t rank,
                                           void* data, size_t data_bytes, nxrt_tensor** out,
                                           nxrt_error* err);
/* Allocates a zero-filled tensor (64-byte aligned) that owns its memory. Same argument
 * rules as nxrt_tensor_create_view. Thread-safe. */
NXRT_API nxrt_code nxrt_tensor_create(nxrt_dtype dtype, const int64_t* shape, size_t rank,
                                      nxrt_tensor** out, nxrt_error* err);
/* Frees the tensor handle and, when it owns its memory, that memory (a view leaves the
 * caller's memory alone). NULL is ignored. */
NXRT_API void nxrt_tensor_destroy(nxrt_tensor* tensor);

/* Element type; NXRT_DTYPE_UNDEFINED for NULL. */
NXRT_API nxrt_dtype nxrt_tensor_dtype(const nxrt_tensor* tensor);
/* Number of dimensions; 0 for scalars and NULL. */
NXRT_API size_t nxrt_tensor_rank(const nxrt_tensor* tensor);
/* The dimensions (rank entries), owned by the tensor; NULL for NULL. */
NXRT_API const int64_t* nxrt_tensor_shape(const nxrt_tensor* tensor);
/* Number of elements (1 for a scalar, 0 for NULL). */
NXRT_API int64_t nxrt_tensor_element_count(const nxrt_tensor* tensor);
/* Bytes of data (element count times nxrt_dtype_size; 0 for strings and NULL). */
NXRT_API size_t nxrt_tensor_byte_size(const nxrt_tensor* tensor);
/* The data, row-major; NULL for NULL and for string tensors (use
 * nxrt_tensor_get_string). Writable: the pointer is the caller's memory for views. */
NXRT_API void* nxrt_tensor_data(nxrt_tensor* tensor);
/* Reads element `index` of a string tensor (an output of a model that produces strings):
 * *data points at its bytes (not NUL-terminated, owned by the tensor), *length is their
 * count. Fails with NXRT_INVALID_ARGUMENT for other dtypes or an index out of range. */
NXRT_API nxrt_code nxrt_tensor_get_string(const nxrt_tensor* tensor, int64_t index,
                                          const char** data, size_t* length, nxrt_error* err);

/* ------------------------------------------------------------------------------------ */
/* Sessions                                                                             */
/* ------------------------------------------------------------------------------------ */

/* A loaded, planned model. Immutable after creation: any number of threads may call
 * nxrt_session_run and the metadata getters at the same time. */
typedef struct nxrt_session nxrt_session;

/* Loads the ONNX model at `path` (memory-mapped; weights are used in place) and plans
 * it. `options` may be NULL for the defaults. External data files are resolved in the
 * model's folder. Errors: NXRT_NO_SUCH_FILE (missing file), NXRT_INVALID_PROTOBUF
 * (not an ONNX model), NXRT_INVALID_GRAPH, NXRT_NOT_IMPLEMENTED (unsupported op or
 * opset), NXRT_FAIL (memory limit). The session holds a reference to `env`. Thread-safe. */
NXRT_API nxrt_code nxrt_session_create_from_file(nxrt_env* env, const char* path,
                                                 const nxrt_session_options* options,
                                                 nxrt_session** out, nxrt_error* err);
/* Like nxrt_session_create_from_file for a model held in memory. The bytes are copied,
 * so the caller may free them as soon as this returns. A model with external data
 * cannot be loaded this way. */
NXRT_API nxrt_code nxrt_session_create_from_memory(nxrt_env* env, const void* data, size_t size,
                                                   const nxrt_session_options* options,
                                                   nxrt_session** out, nxrt_error* err);
/* Frees the session and everything it holds. No run of it may be in progress. Tensors
 * the session returned stay valid (they own their memory). NULL is ignored. */
NXRT_API void nxrt_session_destroy(nxrt_session* session);

/* Which side of the model a metadata getter looks at. */
typedef enum nxrt_io_kind {
  NXRT_IO_INPUT = 0,
  NXRT_IO_OUTPUT = 1,
  /* Not a kind: keeps the enum int-sized (see NXRT_DTYPE_FORCE_INT32_). */
  NXRT_IO_FORCE_INT32_ = 0x7fffffff
} nxrt_io_kind;

/* Number of inputs a caller may feed (graph order, initializers excluded) or of outputs.
 * 0 for a NULL session or an unknown kind. */
NXRT_API size_t nxrt_session_io_count(const nxrt_session* session, nxrt_io_kind kind);
/* Name of input/output `index`, owned by the session; NULL when out of range. */
NXRT_API const char* nxrt_session_io_name(const nxrt_session* session, nxrt_io_kind kind,
                                          size_t index);
/* Element type of input/output `index`: for tensors their element type, for sequences
 * and optionals the element type of the tensors inside; NXRT_DTYPE_UNDEFINED when out
 * of range or not declared. */
NXRT_API nxrt_dtype nxrt_session_io_dtype(const nxrt_session* session, nxrt_io_kind kind,
                                          size_t index);
/* Declared rank of input/output `index`; -1 when the model declares no shape, or when
 * out of range. */
NXRT_API int64_t nxrt_session_io_rank(const nxrt_session* session, nxrt_io_kind kind, size_t index);
/* Declared dimensions of input/output `index` (nxrt_session_io_rank entries, owned by
 * the session): a number for fixed dims, -1 for symbolic or unknown ones (see
 * nxrt_session_io_dim_name). NULL for rank 0, no shape, or out of range. */
NXRT_API const int64_t* nxrt_session_io_shape(const nxrt_session* session, nxrt_io_kind kind,
                                              size_t index);
/* Symbolic name of dimension `dim` of input/output `index` ("batch"), "" when the dim
 * is fixed or unnamed; NULL when out of range. Owned by the session. */
NXRT_API const char* nxrt_session_io_dim_name(const nxrt_session* session, nxrt_io_kind kind,
                                              size_t index, size_t dim);
/* Index of the input/output called `name`, or -1 when there is none. */
NXRT_API int64_t nxrt_session_io_index(const nxrt_session* session, nxrt_io_kind kind,
                                       const char* name);

/* ------------------------------------------------------------------------------------ */
/* Running                                                                              */
/* ------------------------------------------------------------------------------------ */

/* Per-run settings. Owned by the caller; may be shared by runs on several threads (the
 * terminate flag is atomic). Must outlive the runs that use it. */
typedef struct nxrt_run_options nxrt_run_options;

/* Creates run options: not terminated. Destroy with nxrt_run_options_destroy. */
NXRT_API nxrt_code nxrt_run_options_create(nxrt_run_options** out, nxrt_error* err);
/* Frees run options. No run using them may be in progress. NULL is ignored. */
NXRT_API void nxrt_run_options_destroy(nxrt_run_options* options);
/* Sets (nonzero) or clears (0) the terminate flag. Runs using these options stop at the
 * next node boundary (loops also check it between iterations) and fail with NXRT_FAIL
 * ("terminate flag"); runs started while it is set fail at once. Thread-safe: meant to
 * be called from another thread. */
NXRT_API void nxrt_run_options_set_terminate(nxrt_run_options* options, int terminate);

/* Runs the model once.
 *
 * Inputs: `input_names[i]` is fed `inputs[i]` for i in [0, input_count). Every required
 * input must be fed; inputs with an initializer may be fed to override it. Each
 * tensor's dtype must equal the declared one and fixed dims must match (a declared
 * scalar accepts any shape, as in onnxruntime). Inputs are read, never written, and may
 * be views. In C, declare the array as `const nxrt_tensor* inputs[N]`: C does not
 * convert `nxrt_tensor**` to `const nxrt_tensor* const*` implicitly.
 *
 * Outputs: `output_names[i]` names the output that goes to `outputs[i]` for i in
 * [0, output_count), each name at most once; with `output_names` NULL, `output_count`
 * must equal the number of outputs and they come in graph order. For each i:
 *   - outputs[i] == NULL: nxrt allocates the result and stores a new tensor in
 *     outputs[i] on success; the caller destroys it with nxrt_tensor_destroy. (An
 *     optional output the model leaves empty stays NULL.)
 *   - outputs[i] != NULL: a bound output. The result is written into that tensor's
 *     memory in place (typically a view over the caller's buffer), with no allocation.
 *     Its dtype and shape must equal what the model produces, else the run fails with
 *     NXRT_INVALID_ARGUMENT naming the output. Feeding back tensors nxrt returned by an
 *     earlier run works the same way, so a steady loop allocates nothing for outputs.
 * On failure no new tensor is stored (outputs[i] that were NULL stay NULL) and bound
 * outputs may be partly written. Outputs that are sequences of tensors cannot be
 * requested through the C API (NXRT_NOT_IMPLEMENTED).
 *
 * `run_options` may be NULL. Thread-safe: any number of threads may run one session at
 * once, provided they do not bind the same output tensor.
 *
 * Errors: NXRT_INVALID_ARGUMENT (unknown input or output name ("Invalid input name: x"),
 * an input fed twice, a missing required input ("Required inputs ('sr') are missing"),
 * wrong dtype ("Unexpected input data type"), wrong rank or dims ("Invalid rank for
 * input", "Got invalid dimensions for input"), a bound output of the wrong dtype or
 * shape, NULL arguments), NXRT_RUNTIME_EXCEPTION (a kernel failed), NXRT_FAIL (the run
 * was terminated, out of memory). */
NXRT_API nxrt_code nxrt_session_run(const nxrt_session* session,
                                    const nxrt_run_options* run_options,
                                    const char* const* input_names,
                                    const nxrt_tensor* const* inputs, size_t input_count,
                                    const char* const* output_names, nxrt_tensor** outputs,
                                    size_t output_count, nxrt_error* err);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* NXRT_NXRT_H_ */
