// The C API (include/nxrt/nxrt.h) over nxrt::Session. Nothing C++ escapes: every entry
// point catches exceptions (in practice std::bad_alloc) and turns them into NXRT_FAIL.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/limits.h"
#include "core/status.h"
#include "core/tensor.h"
#include "core/value.h"
#include "nxrt/nxrt.h"
#include "runtime/session.h"

#ifndef NXRT_VERSION_STRING
#error "NXRT_VERSION_STRING must come from the build (project version)"
#endif

namespace {

using nxrt::DataType;
using nxrt::StatusCode;

#define NXRT_SAME_CODE(C, S) \
  static_assert(int(C) == int(StatusCode::S), #C " drifted from StatusCode")
NXRT_SAME_CODE(NXRT_OK, kOk);
NXRT_SAME_CODE(NXRT_FAIL, kFail);
NXRT_SAME_CODE(NXRT_INVALID_ARGUMENT, kInvalidArgument);
NXRT_SAME_CODE(NXRT_NO_SUCH_FILE, kNoSuchFile);
NXRT_SAME_CODE(NXRT_NO_MODEL, kNoModel);
NXRT_SAME_CODE(NXRT_ENGINE_ERROR, kEngineError);
NXRT_SAME_CODE(NXRT_RUNTIME_EXCEPTION, kRuntimeException);
NXRT_SAME_CODE(NXRT_INVALID_PROTOBUF, kInvalidProtobuf);
NXRT_SAME_CODE(NXRT_MODEL_LOADED, kModelLoaded);
NXRT_SAME_CODE(NXRT_NOT_IMPLEMENTED, kNotImplemented);
NXRT_SAME_CODE(NXRT_INVALID_GRAPH, kInvalidGraph);
NXRT_SAME_CODE(NXRT_EP_FAIL, kEPFail);
#undef NXRT_SAME_CODE
static_assert(int(NXRT_DTYPE_FLOAT) == int(DataType::kFloat) &&
                  int(NXRT_DTYPE_INT64) == int(DataType::kInt64) &&
                  int(NXRT_DTYPE_STRING) == int(DataType::kString) &&
                  int(NXRT_DTYPE_BFLOAT16) == int(DataType::kBFloat16) &&
                  int(NXRT_DTYPE_INT2) == int(DataType::kInt2),
              "nxrt_dtype must keep ONNX numbering like nxrt::DataType");

constexpr size_t kMaxRank = 64;

struct LastError {
  nxrt_code code = NXRT_OK;
  std::string message;
};
thread_local LastError t_last_error;

}  // namespace

struct nxrt_error {
  nxrt_code code = NXRT_OK;
  std::string message;
};

struct nxrt_env {
  std::atomic<int> refs{1};
};

struct nxrt_session_options {
  nxrt::SessionConfig config;
  bool has_pool = false;
  nxrt_thread_pool pool{};
  uint64_t memory_limit = 0;
};

struct nxrt_tensor {
  nxrt::Tensor tensor;
};

struct nxrt_run_options {
  std::atomic<bool> terminate{false};
};

namespace {

// Metadata of one declared input or output, flattened for the C getters.
struct IoInfo {
  std::string name;
  nxrt_dtype dtype = NXRT_DTYPE_UNDEFINED;
  int64_t rank = -1;
  std::vector<int64_t> dims;
  std::vector<std::string> dim_names;
  bool is_sequence = false;
};

}  // namespace

struct nxrt_session {
  nxrt_env* env = nullptr;
  std::unique_ptr<nxrt::Session> session;
  std::vector<IoInfo> io[2];
};

namespace {

nxrt_code fail(nxrt_error* err, nxrt_code code, const char* message) noexcept {
  try {
    t_last_error.code = code;
    t_last_error.message = message;
    if (err) {
      err->code = code;
      err->message = message;
    }
  } catch (...) {
    // Out of memory while recording the message: the code still tells the story.
    t_last_error.message.clear();
    if (err) {
      err->code = code;
      err->message.clear();
    }
  }
  return code;
}

nxrt_code fail(nxrt_error* err, const nxrt::Status& status) noexcept {
  return fail(err, static_cast<nxrt_code>(status.code()), status.message().c_str());
}

template <typename... Args>
nxrt_code fail_arg(nxrt_error* err, const Args&... args) {
  return fail(err, NXRT_INVALID_ARGUMENT, nxrt::str_cat(args...).c_str());
}

// Every fallible entry point runs its body through this, so no exception crosses the
// C boundary.
template <typename F>
nxrt_code guarded(nxrt_error* err, F&& body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return fail(err, NXRT_FAIL, "out of memory");
  } catch (const std::exception& e) {
    return fail(err, NXRT_FAIL, e.what());
  } catch (...) {
    return fail(err, NXRT_FAIL, "unknown internal error");
  }
}

bool valid_dtype(int32_t raw) { return raw != 0 && nxrt::dtype_is_known(raw); }

// Element alignment the kernels may rely on (complex numbers align like their parts).
size_t dtype_alignment(DataType dtype) {
  size_t size = nxrt::dtype_size(dtype);
  if (dtype == DataType::kComplex64 || dtype == DataType::kComplex128) size /= 2;
  return size == 0 ? 1 : size > 8 ? 8 : size;
}

nxrt_code make_shape(nxrt_dtype dtype, const int64_t* dims, size_t rank, nxrt::Shape& shape,
                     size_t& bytes, nxrt_error* err) {
  if (!valid_dtype(int32_t(dtype))) return fail_arg(err, "unknown element type ", int(dtype));
  if (dtype == NXRT_DTYPE_STRING)
    return fail_arg(err, "string tensors cannot be created through the C API");
  if (rank > kMaxRank) return fail_arg(err, "rank ", rank, " is above the limit of ", kMaxRank);
  if (rank > 0 && !dims) return fail_arg(err, "shape is NULL for rank ", rank);
  shape.resize(rank);
  for (size_t d = 0; d < rank; ++d) {
    if (dims[d] < 0) return fail_arg(err, "dimension ", d, " is negative (", dims[d], ")");
    shape[d] = dims[d];
  }
  auto size = nxrt::tensor_bytes(DataType(dtype), shape, "tensor");
  if (!size) return fail(err, size.status());
  bytes = size.value();
  return NXRT_OK;
}

IoInfo describe(const nxrt::ir::ValueInfo& value) {
  using Kind = nxrt::ir::TypeInfo::Kind;
  IoInfo info;
  info.name = value.name;
  const nxrt::ir::TypeInfo* type = &value.type;
  if (type->kind == Kind::kOptional && type->inner) type = type->inner.get();
  if (type->kind == Kind::kSequence) {
    info.is_sequence = true;
    if (type->inner) info.dtype = static_cast<nxrt_dtype>(type->inner->elem_type);
    return info;  // element shapes vary; no rank to report
  }
  info.dtype = static_cast<nxrt_dtype>(type->elem_type);
  if (type->kind == Kind::kTensor && type->has_shape) {
    info.rank = int64_t(type->dims.size());
    for (const nxrt::ir::Dim& dim : type->dims) {
      info.dims.push_back(dim.value >= 0 ? dim.value : -1);
      info.dim_names.push_back(dim.param);
    }
  }
  return info;
}

// The session itself enforces the memory limit (weights at creation, tensors per run).
nxrt_code finish_session(nxrt_env* env, nxrt::Expected<std::unique_ptr<nxrt::Session>> created,
                         nxrt_session** out, nxrt_error* err) {
  if (!created) return fail(err, created.status());
  auto wrapper = std::make_unique<nxrt_session>();
  wrapper->session = std::move(created).value();
  for (const auto& v : wrapper->session->inputs())
    wrapper->io[NXRT_IO_INPUT].push_back(describe(v));
  for (const auto& v : wrapper->session->outputs())
    wrapper->io[NXRT_IO_OUTPUT].push_back(describe(v));
  env->refs.fetch_add(1, std::memory_order_relaxed);
  wrapper->env = env;
  *out = wrapper.release();
  return NXRT_OK;
}

// The caller's nxrt_thread_pool as the session's Parallel: pieces are its parallel_for's
// indices; their count follows intra_op_threads (4 when that is left at 0 or 1, since
// the pool's own size is unknown).
class CallerPool final : public nxrt::Parallel {
 public:
  CallerPool(const nxrt_thread_pool& pool, int threads)
      : pool_(pool), width_(threads > 1 ? size_t(threads) : 4) {}
  size_t width() const override { return width_; }
  void run(size_t n, void (*fn)(void*, size_t), void* ctx) override {
    pool_.parallel_for(pool_.user_data, fn, ctx, n);
  }

 private:
  nxrt_thread_pool pool_;
  size_t width_;
};

nxrt::SessionConfig config_of(const nxrt_session_options* options) {
  if (!options) return nxrt::SessionConfig{};
  nxrt::SessionConfig config = options->config;
  if (options->has_pool)
    config.parallel = std::make_shared<CallerPool>(options->pool, config.intra_op_num_threads);
  // The executor enforces the limit on every run (nxrt.limits.max_session_memory_bytes).
  if (options->memory_limit)
    config.config_entries[nxrt::kLimitMaxSessionMemoryBytes] =
        std::to_string(std::min<uint64_t>(options->memory_limit, INT64_MAX));
  return config;
}

const IoInfo* io_at(const nxrt_session* session, nxrt_io_kind kind, size_t index) {
  if (!session || (kind != NXRT_IO_INPUT && kind != NXRT_IO_OUTPUT)) return nullptr;
  const auto& list = session->io[kind];
  return index < list.size() ? &list[index] : nullptr;
}

// Scratch for the run path, reused by every run on a thread so warm runs do not
// allocate here (std::string::assign and vector::assign keep their capacity).
struct RunScratch {
  std::vector<std::string> input_names;
  std::vector<nxrt::Value> input_values;
  std::vector<nxrt::Tensor> bound;
  std::vector<size_t> selected;
  std::vector<unsigned char> created;
  std::vector<nxrt::Value> results;
};
thread_local RunScratch t_scratch;

}  // namespace

extern "C" {

NXRT_API const char* nxrt_get_version(void) { return NXRT_VERSION_STRING; }
NXRT_API uint32_t nxrt_get_api_version(void) { return NXRT_API_VERSION; }

NXRT_API const char* nxrt_code_name(nxrt_code code) {
  if (int(code) < 0 || int(code) > int(NXRT_EP_FAIL)) return "Unknown";
  return nxrt::status_code_name(static_cast<StatusCode>(code));
}

NXRT_API nxrt_error* nxrt_error_create(void) { return new (std::nothrow) nxrt_error(); }
NXRT_API void nxrt_error_destroy(nxrt_error* err) { delete err; }
NXRT_API nxrt_code nxrt_error_code(const nxrt_error* err) { return err ? err->code : NXRT_OK; }
NXRT_API const char* nxrt_error_message(const nxrt_error* err) {
  return err ? err->message.c_str() : "";
}
NXRT_API void nxrt_error_clear(nxrt_error* err) {
  if (!err) return;
  err->code = NXRT_OK;
  err->message.clear();
}
NXRT_API const char* nxrt_last_error_message(void) { return t_last_error.message.c_str(); }
NXRT_API nxrt_code nxrt_last_error_code(void) { return t_last_error.code; }

NXRT_API size_t nxrt_dtype_size(nxrt_dtype dtype) {
  return valid_dtype(int32_t(dtype)) ? nxrt::dtype_size(DataType(dtype)) : 0;
}
NXRT_API const char* nxrt_dtype_name(nxrt_dtype dtype) {
  // dtype_name returns views of string literals, so data() is NUL-terminated.
  return valid_dtype(int32_t(dtype)) ? nxrt::dtype_name(DataType(dtype)).data() : "undefined";
}

// ---- environment ----

NXRT_API nxrt_code nxrt_env_create(uint32_t api_version, nxrt_env** out, nxrt_error* err) {
  return guarded(err, [&]() -> nxrt_code {
    if (!out) return fail_arg(err, "nxrt_env_create: out is NULL");
    if (api_version == 0 || api_version > NXRT_API_VERSION)
      return fail_arg(err, "the caller was built for API version ", api_version,
                      " but this library implements up to ", NXRT_API_VERSION);
    *out = new nxrt_env();
    return NXRT_OK;
  });
}

NXRT_API void nxrt_env_destroy(nxrt_env* env) {
  if (env && env->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete env;
}

// ---- session options ----

NXRT_API nxrt_code nxrt_session_options_create(nxrt_session_options** out, nxrt_error* err) {
  return guarded(err, [&]() -> nxrt_code {
    if (!out) return fail_arg(err, "nxrt_session_options_create: out is NULL");
    *out = new nxrt_session_options();
    return NXRT_OK;
  });
}

NXRT_API void nxrt_session_options_destroy(nxrt_session_options* options) { delete options; }

NXRT_API nxrt_code nxrt_session_options_set_intra_op_threads(nxrt_session_options* options,
                                                             int threads, nxrt_error* err) {
  if (!options) return fail(err, NXRT_INVALID_ARGUMENT, "options is NULL");
  if (threads < 0) return fail(err, NXRT_INVALID_ARGUMENT, "intra-op threads must be >= 0");
  options->config.intra_op_num_threads = threads;
  return NXRT_OK;
}

NXRT_API nxrt_code nxrt_session_options_set_inter_op_threads(nxrt_session_options* options,
                                                             int threads, nxrt_error* err) {
  if (!options) return fail(err, NXRT_INVALID_ARGUMENT, "options is NULL");
  if (threads < 0) return fail(err, NXRT_INVALID_ARGUMENT, "inter-op threads must be >= 0");
  options->config.inter_op_num_threads = threads;
  return NXRT_OK;
}

NXRT_API nxrt_code nxrt_session_options_set_graph_optimization_level(
    nxrt_session_options* options, nxrt_graph_optimization_level level, nxrt_error* err) {
  if (!options) return fail(err, NXRT_INVALID_ARGUMENT, "options is NULL");
  if (level != NXRT_OPT_DISABLE && level != NXRT_OPT_BASIC && level != NXRT_OPT_EXTENDED &&
      level != NXRT_OPT_ALL)
    return guarded(err,
                   [&] { return fail_arg(err, "unknown graph optimization level ", int(level)); });
  options->config.graph_optimization_level = int(level);
  return NXRT_OK;
}

NXRT_API nxrt_code nxrt_session_options_set_optimized_model_filepath(nxrt_session_options* options,
                                                                     const char* path,
                                                                     nxrt_error* err) {
  if (!options) return fail(err, NXRT_INVALID_ARGUMENT, "options is NULL");
  if (!path) return fail(err, NXRT_INVALID_ARGUMENT, "path is NULL");
  options->config.optimized_model_filepath = path;
  return NXRT_OK;
}

NXRT_API nxrt_code nxrt_session_options_set_thread_pool(nxrt_session_options* options,
                                                        const nxrt_thread_pool* pool,
                                                        nxrt_error* err) {
  if (!options) return fail(err, NXRT_INVALID_ARGUMENT, "options is NULL");
  if (!pool) {
    options->has_pool = false;
    options->pool = nxrt_thread_pool{};
    return NXRT_OK;
  }
  if (pool->struct_size < sizeof(nxrt_thread_pool))
    return fail(err, NXRT_INVALID_ARGUMENT, "thread pool struct_size is smaller than version 1's");
  if (!pool->parallel_for)
    return fail(err, NXRT_INVALID_ARGUMENT, "thread pool parallel_for is NULL");
  // Copy only the members this version knows; a newer caller's extra members are ignored.
  options->pool = nxrt_thread_pool{};
  std::memcpy(&options->pool, pool, sizeof(nxrt_thread_pool));
  options->pool.struct_size = sizeof(nxrt_thread_pool);
  options->has_pool = true;
  return NXRT_OK;
}

NXRT_API nxrt_code nxrt_session_options_set_memory_limit(nxrt_session_options* options,
                                                         uint64_t bytes, nxrt_error* err) {
  if (!options) return fail(err, NXRT_INVALID_ARGUMENT, "options is NULL");
  options->memory_limit = bytes;
  return NXRT_OK;
}

// ---- tensors ----

NXRT_API nxrt_code nxrt_tensor_create_view(nxrt_dtype dtype, const int64_t* shape, size_t rank,
                                           void* data, size_t data_bytes, nxrt_tensor** out,
                                           nxrt_error* err) {
  return guarded(err, [&]() -> nxrt_code {
    if (!out) return fail_arg(err, "nxrt_tensor_create_view: out is NULL");
    nxrt::Shape dims;
    size_t bytes = 0;
    if (nxrt_code code = make_shape(dtype, shape, rank, dims, bytes, err)) return code;
    if (data_bytes < bytes)
      return fail_arg(err, "buffer of ", data_bytes, " bytes is too small for a ",
                      nxrt::dtype_name(DataType(dtype)), " tensor of shape ", dims.to_string(),
                      " (", bytes, " bytes)");
    if (!data && bytes) return fail_arg(err, "data is NULL for a tensor of ", bytes, " bytes");
    const size_t align = dtype_alignment(DataType(dtype));
    if (reinterpret_cast<uintptr_t>(data) % align)
      return fail_arg(err, "data is not aligned to ", align, " bytes for ",
                      nxrt::dtype_name(DataType(dtype)));
    *out = new nxrt_tensor{nxrt::Tensor(DataType(dtype), std::move(dims), data)};
    return NXRT_OK;
  });
}

NXRT_API nxrt_code nxrt_tensor_create(nxrt_dtype dtype, const int64_t* shape, size_t rank,
                                      nxrt_tensor** out, nxrt_error* err) {
  return guarded(err, [&]() -> nxrt_code {
    if (!out) return fail_arg(err, "nxrt_tensor_create: out is NULL");
    nxrt::Shape dims;
    size_t bytes = 0;
    if (nxrt_code code = make_shape(dtype, shape, rank, dims, bytes, err)) return code;
    auto tensor = nxrt::Tensor::allocate(DataType(dtype), dims);
    if (!tensor) return fail(err, tensor.status());
    *out = new nxrt_tensor{std::move(tensor).value()};
    return NXRT_OK;
  });
}

NXRT_API void nxrt_tensor_destroy(nxrt_tensor* tensor) { delete tensor; }

NXRT_API nxrt_dtype nxrt_tensor_dtype(const nxrt_tensor* tensor) {
  return tensor ? static_cast<nxrt_dtype>(tensor->tensor.dtype()) : NXRT_DTYPE_UNDEFINED;
}
NXRT_API size_t nxrt_tensor_rank(const nxrt_tensor* tensor) {
  return tensor ? tensor->tensor.rank() : 0;
}
NXRT_API const int64_t* nxrt_tensor_shape(const nxrt_tensor* tensor) {
  return tensor ? tensor->tensor.shape().data() : nullptr;
}
NXRT_API int64_t nxrt_tensor_element_count(const nxrt_tensor* tensor) {
  return tensor ? tensor->tensor.numel() : 0;
}
NXRT_API size_t nxrt_tensor_byte_size(const nxrt_tensor* tensor) {
  return tensor ? tensor->tensor.nbytes() : 0;
}
NXRT_API void* nxrt_tensor_data(nxrt_tensor* tensor) {
  if (!tensor || tensor->tensor.dtype() == DataType::kString) return nullptr;
  return tensor->tensor.raw();
}

NXRT_API nxrt_code nxrt_tensor_get_string(const nxrt_tensor* tensor, int64_t index,
                                          const char** data, size_t* length, nxrt_error* err) {
  return guarded(err, [&]() -> nxrt_code {
    if (!tensor || !data || !length) return fail_arg(err, "nxrt_tensor_get_string: NULL argument");
    if (tensor->tensor.dtype() != DataType::kString)
      return fail_arg(err, "tensor holds ", nxrt::dtype_name(tensor->tensor.dtype()),
                      ", not strings");
    if (index < 0 || index >= tensor->tensor.numel())
      return fail_arg(err, "string index ", index, " is out of range for ", tensor->tensor.numel(),
                      " elements");
    const std::string& s = tensor->tensor.data<std::string>()[index];
    *data = s.data();
    *length = s.size();
    return NXRT_OK;
  });
}

// ---- sessions ----

NXRT_API nxrt_code nxrt_session_create_from_file(nxrt_env* env, const char* path,
                                                 const nxrt_session_options* options,
                                                 nxrt_session** out, nxrt_error* err) {
  return guarded(err, [&]() -> nxrt_code {
    if (!env || !path || !out) return fail_arg(err, "nxrt_session_create_from_file: NULL argument");
    auto created = nxrt::Session::create_from_file(path, config_of(options));
    return finish_session(env, std::move(created), out, err);
  });
}

NXRT_API nxrt_code nxrt_session_create_from_memory(nxrt_env* env, const void* data, size_t size,
                                                   const nxrt_session_options* options,
                                                   nxrt_session** out, nxrt_error* err) {
  return guarded(err, [&]() -> nxrt_code {
    if (!env || !out || (!data && size))
      return fail_arg(err, "nxrt_session_create_from_memory: NULL argument");
    // Checked before the copy, which would otherwise take the memory first.
    if (options && options->memory_limit && size > options->memory_limit)
      return fail(err, NXRT_FAIL,
                  nxrt::str_cat("the model is ", size, " bytes, above the memory limit of ",
                                options->memory_limit, " bytes")
                      .c_str());
    auto created = nxrt::Session::create_from_bytes(data, size, config_of(options));
    return finish_session(env, std::move(created), out, err);
  });
}

NXRT_API void nxrt_session_destroy(nxrt_session* session) {
  if (!session) return;
  nxrt_env* env = session->env;
  delete session;
  nxrt_env_destroy(env);
}

NXRT_API size_t nxrt_session_io_count(const nxrt_session* session, nxrt_io_kind kind) {
  if (!session || (kind != NXRT_IO_INPUT && kind != NXRT_IO_OUTPUT)) return 0;
  return session->io[kind].size();
}
NXRT_API const char* nxrt_session_io_name(const nxrt_session* session, nxrt_io_kind kind,
                                          size_t index) {
  const IoInfo* info = io_at(session, kind, index);
  return info ? info->name.c_str() : nullptr;
}
NXRT_API nxrt_dtype nxrt_session_io_dtype(const nxrt_session* session, nxrt_io_kind kind,
                                          size_t index) {
  const IoInfo* info = io_at(session, kind, index);
  return info ? info->dtype : NXRT_DTYPE_UNDEFINED;
}
NXRT_API int64_t nxrt_session_io_rank(const nxrt_session* session, nxrt_io_kind kind,
                                      size_t index) {
  const IoInfo* info = io_at(session, kind, index);
  return info ? info->rank : -1;
}
NXRT_API const int64_t* nxrt_session_io_shape(const nxrt_session* session, nxrt_io_kind kind,
                                              size_t index) {
  const IoInfo* info = io_at(session, kind, index);
  return info && !info->dims.empty() ? info->dims.data() : nullptr;
}
NXRT_API const char* nxrt_session_io_dim_name(const nxrt_session* session, nxrt_io_kind kind,
                                              size_t index, size_t dim) {
  const IoInfo* info = io_at(session, kind, index);
  return info && dim < info->dim_names.size() ? info->dim_names[dim].c_str() : nullptr;
}
NXRT_API int64_t nxrt_session_io_index(const nxrt_session* session, nxrt_io_kind kind,
                                       const char* name) {
  if (!session || !name || (kind != NXRT_IO_INPUT && kind != NXRT_IO_OUTPUT)) return -1;
  const auto& list = session->io[kind];
  for (size_t i = 0; i < list.size(); ++i)
    if (list[i].name == name) return int64_t(i);
  return -1;
}

// ---- running ----

NXRT_API nxrt_code nxrt_run_options_create(nxrt_run_options** out, nxrt_error* err) {
  return guarded(err, [&]() -> nxrt_code {
    if (!out) return fail_arg(err, "nxrt_run_options_create: out is NULL");
    *out = new nxrt_run_options();
    return NXRT_OK;
  });
}
NXRT_API void nxrt_run_options_destroy(nxrt_run_options* options) { delete options; }
NXRT_API void nxrt_run_options_set_terminate(nxrt_run_options* options, int terminate) {
  if (options) options->terminate.store(terminate != 0, std::memory_order_relaxed);
}

NXRT_API nxrt_code nxrt_session_run(const nxrt_session* session,
                                    const nxrt_run_options* run_options,
                                    const char* const* input_names,
                                    const nxrt_tensor* const* inputs, size_t input_count,
                                    const char* const* output_names, nxrt_tensor** outputs,
                                    size_t output_count, nxrt_error* err) {
  return guarded(err, [&]() -> nxrt_code {
    if (!session) return fail_arg(err, "nxrt_session_run: session is NULL");
    if (input_count && (!input_names || !inputs))
      return fail_arg(err, "nxrt_session_run: input_names or inputs is NULL for ", input_count,
                      " inputs");
    if (output_count && !outputs)
      return fail_arg(err, "nxrt_session_run: outputs is NULL for ", output_count, " outputs");
    const std::vector<IoInfo>& declared = session->io[NXRT_IO_OUTPUT];
    if (!output_names && output_count != declared.size())
      return fail_arg(err, "nxrt_session_run: output_names is NULL, so output_count must be the ",
                      declared.size(), " outputs of the model, not ", output_count);

    RunScratch& s = t_scratch;
    s.input_names.resize(input_count);
    s.input_values.resize(input_count);
    for (size_t i = 0; i < input_count; ++i) {
      if (!input_names[i]) return fail_arg(err, "input name ", i, " is NULL");
      if (!inputs[i]) return fail_arg(err, "input '", input_names[i], "' is fed a NULL tensor");
      s.input_names[i].assign(input_names[i]);
      s.input_values[i].tensor = inputs[i]->tensor;
    }

    s.selected.clear();
    s.bound.assign(declared.size(), nxrt::Tensor());
    for (size_t i = 0; i < output_count; ++i) {
      size_t index = i;
      if (output_names) {
        if (!output_names[i]) return fail_arg(err, "output name ", i, " is NULL");
        index = declared.size();
        for (size_t k = 0; k < declared.size(); ++k)
          if (declared[k].name == output_names[i]) index = k;
        if (index == declared.size())
          return fail_arg(err, "Invalid output name: ", output_names[i]);
        for (size_t prev : s.selected)
          if (prev == index)
            return fail_arg(err, "output '", output_names[i], "' is requested twice");
      }
      if (declared[index].is_sequence)
        return fail(err, NXRT_NOT_IMPLEMENTED,
                    nxrt::str_cat("output '", declared[index].name,
                                  "' is a sequence; the C API returns tensors only")
                        .c_str());
      if (outputs[i]) s.bound[index] = outputs[i]->tensor;
      s.selected.push_back(index);
    }

    nxrt::RunFlags flags;
    if (run_options) flags.terminate = &run_options->terminate;
    flags.bound_outputs = s.bound;
    nxrt::Status status =
        session->session->run(s.input_names, s.input_values, {}, s.results, flags);
    // Drop the references to caller tensors now, so scratch never keeps memory alive.
    for (nxrt::Value& v : s.input_values) v = nxrt::Value();
    for (nxrt::Tensor& t : s.bound) t = nxrt::Tensor();
    if (!status.ok()) {
      s.results.clear();
      return fail(err, status);
    }

    // Hand the unbound results over; on failure free the handles this call made.
    s.created.assign(output_count, 0);
    nxrt_code code = NXRT_OK;
    try {
      for (size_t i = 0; i < output_count; ++i) {
        if (outputs[i]) continue;
        nxrt::Value& result = s.results[s.selected[i]];
        if (result.is_none()) continue;  // an optional output with no value stays NULL
        outputs[i] = new nxrt_tensor{std::move(result.tensor)};
        s.created[i] = 1;
      }
    } catch (const std::bad_alloc&) {
      for (size_t i = 0; i < output_count; ++i)
        if (s.created[i]) {
          delete outputs[i];
          outputs[i] = nullptr;
        }
      code = fail(err, NXRT_FAIL, "out of memory");
    }
    s.results.clear();
    return code;
  });
}

}  // extern "C"
