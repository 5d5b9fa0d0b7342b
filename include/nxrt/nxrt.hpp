// nxrt C++ API: a header-only RAII layer over the C API in nxrt.h (C++17 or later).
//
// Error handling comes in two modes, chosen per translation unit:
//   - default (no exceptions needed, works with -fno-exceptions): fallible calls return
//     nxrt::cpp::Status or nxrt::cpp::Result<T>; check ok() before using the value.
//     Calling value() on a failed Result prints the message and aborts.
//   - `#define NXRT_CPP_EXCEPTIONS` before including this header: the same calls throw
//     nxrt::cpp::Exception (a std::runtime_error carrying the code) on failure, so a
//     returned Status is always ok and a returned Result always holds its value.
//
// Ownership: every class owns one C handle and frees it in its destructor; classes are
// move-only. `get()` lends the handle to C calls, `release()` gives it up.
//
// Thread-safety follows the C API: Env and Session may be used by many threads at once;
// SessionOptions, Tensor and one Result are not synchronized.
//
// Names live in nxrt::cpp (an inline namespace, so nxrt::Session works) to keep them
// apart from the library's internal C++ classes.
//
//   nxrt::Env env = nxrt::Env::create().value();
//   nxrt::Session session = nxrt::Session::create(env, "silero_vad.onnx").value();
//   float frame[512] = {};
//   auto input = nxrt::Tensor::view(frame, {1, 512}).value();
//   auto outputs = session.run({{"input", &input}, ...}).value();
//   const float* prob = outputs[0].data<float>();
#ifndef NXRT_NXRT_HPP_
#define NXRT_NXRT_HPP_

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "nxrt/nxrt.h"

#ifdef NXRT_CPP_EXCEPTIONS
#include <stdexcept>
#endif

namespace nxrt {
inline namespace cpp {

// The outcome of a call: a code (NXRT_OK on success) and a message.
class Status {
 public:
  Status() = default;
  Status(nxrt_code code, std::string message) : code_(code), message_(std::move(message)) {}

  bool ok() const { return code_ == NXRT_OK; }
  nxrt_code code() const { return code_; }
  const std::string& message() const { return message_; }
  // "InvalidArgument: <message>", or "OK".
  std::string to_string() const {
    return ok() ? std::string("OK") : std::string(nxrt_code_name(code_)) + ": " + message_;
  }

 private:
  nxrt_code code_ = NXRT_OK;
  std::string message_;
};

#ifdef NXRT_CPP_EXCEPTIONS
// Thrown in exception mode for every failing call.
class Exception : public std::runtime_error {
 public:
  explicit Exception(Status status)
      : std::runtime_error(status.to_string()), status_(std::move(status)) {}
  nxrt_code code() const { return status_.code(); }
  const Status& status() const { return status_; }

 private:
  Status status_;
};
#endif

namespace detail {
// Turns the calling thread's last C error into a Status (and, in exception mode, throws).
inline Status check(nxrt_code code) {
  if (code == NXRT_OK) return Status();
  Status status(code, nxrt_last_error_message());
#ifdef NXRT_CPP_EXCEPTIONS
  throw Exception(std::move(status));
#else
  return status;
#endif
}

[[noreturn]] inline void die(const Status& status) {
  std::fprintf(stderr, "nxrt: value() of a failed Result: %s\n", status.to_string().c_str());
  std::abort();
}
}  // namespace detail

// A value or the Status that explains why there is none.
template <typename T>
class Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit like std::expected
  Result(Status status) : status_(std::move(status)) {
    if (status_.ok()) status_ = Status(NXRT_FAIL, "Result made from an ok Status without a value");
  }

  bool ok() const { return value_.has_value(); }
  explicit operator bool() const { return ok(); }
  const Status& status() const { return status_; }

  T& value() & {
    if (!ok()) fail();
    return *value_;
  }
  const T& value() const& {
    if (!ok()) fail();
    return *value_;
  }
  T&& value() && {
    if (!ok()) fail();
    return std::move(*value_);
  }
  T& operator*() & { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  [[noreturn]] void fail() const {
#ifdef NXRT_CPP_EXCEPTIONS
    throw Exception(status_);
#else
    detail::die(status_);
#endif
  }
  std::optional<T> value_;
  Status status_;
};

namespace detail {
// Move-only owner of one C handle.
template <typename H, void (*Destroy)(H*)>
class Handle {
 public:
  Handle() = default;
  explicit Handle(H* handle) : handle_(handle) {}
  Handle(Handle&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  Handle& operator=(Handle&& other) noexcept {
    if (this != &other) {
      reset();
      handle_ = std::exchange(other.handle_, nullptr);
    }
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() { reset(); }

  H* get() const { return handle_; }
  H* release() { return std::exchange(handle_, nullptr); }
  void reset() {
    if (handle_) Destroy(handle_);
    handle_ = nullptr;
  }
  explicit operator bool() const { return handle_ != nullptr; }

 private:
  H* handle_ = nullptr;
};
}  // namespace detail

// Element type of a C++ type, for Tensor::view.
template <typename T>
struct DTypeOf;
#define NXRT_CPP_DTYPE(T, D)               \
  template <>                              \
  struct DTypeOf<T> {                      \
    static constexpr nxrt_dtype value = D; \
  };
NXRT_CPP_DTYPE(float, NXRT_DTYPE_FLOAT)
NXRT_CPP_DTYPE(double, NXRT_DTYPE_DOUBLE)
NXRT_CPP_DTYPE(int8_t, NXRT_DTYPE_INT8)
NXRT_CPP_DTYPE(int16_t, NXRT_DTYPE_INT16)
NXRT_CPP_DTYPE(int32_t, NXRT_DTYPE_INT32)
NXRT_CPP_DTYPE(int64_t, NXRT_DTYPE_INT64)
NXRT_CPP_DTYPE(uint8_t, NXRT_DTYPE_UINT8)
NXRT_CPP_DTYPE(uint16_t, NXRT_DTYPE_UINT16)
NXRT_CPP_DTYPE(uint32_t, NXRT_DTYPE_UINT32)
NXRT_CPP_DTYPE(uint64_t, NXRT_DTYPE_UINT64)
NXRT_CPP_DTYPE(bool, NXRT_DTYPE_BOOL)
#undef NXRT_CPP_DTYPE

inline std::string version() { return nxrt_get_version(); }

class Env : public detail::Handle<nxrt_env, nxrt_env_destroy> {
 public:
  using Handle::Handle;
  static Result<Env> create() {
    nxrt_env* env = nullptr;
    Status s = detail::check(nxrt_env_create(NXRT_API_VERSION, &env, nullptr));
    if (!s.ok()) return s;
    return Env(env);
  }
};

class SessionOptions : public detail::Handle<nxrt_session_options, nxrt_session_options_destroy> {
 public:
  using Handle::Handle;
  static Result<SessionOptions> create() {
    nxrt_session_options* options = nullptr;
    Status s = detail::check(nxrt_session_options_create(&options, nullptr));
    if (!s.ok()) return s;
    return SessionOptions(options);
  }
  Status set_intra_op_threads(int threads) {
    return detail::check(nxrt_session_options_set_intra_op_threads(get(), threads, nullptr));
  }
  Status set_inter_op_threads(int threads) {
    return detail::check(nxrt_session_options_set_inter_op_threads(get(), threads, nullptr));
  }
  Status set_graph_optimization_level(nxrt_graph_optimization_level level) {
    return detail::check(nxrt_session_options_set_graph_optimization_level(get(), level, nullptr));
  }
  // Writes the optimized graph to `path` when a session is created (see the C function).
  Status set_optimized_model_filepath(const std::string& path) {
    return detail::check(
        nxrt_session_options_set_optimized_model_filepath(get(), path.c_str(), nullptr));
  }
  // `pool` is copied; nullptr removes it. See nxrt_thread_pool for the current status.
  Status set_thread_pool(const nxrt_thread_pool* pool) {
    return detail::check(nxrt_session_options_set_thread_pool(get(), pool, nullptr));
  }
  Status set_memory_limit(uint64_t bytes) {
    return detail::check(nxrt_session_options_set_memory_limit(get(), bytes, nullptr));
  }
};

class RunOptions : public detail::Handle<nxrt_run_options, nxrt_run_options_destroy> {
 public:
  using Handle::Handle;
  static Result<RunOptions> create() {
    nxrt_run_options* options = nullptr;
    Status s = detail::check(nxrt_run_options_create(&options, nullptr));
    if (!s.ok()) return s;
    return RunOptions(options);
  }
  // Thread-safe; see nxrt_run_options_set_terminate.
  void set_terminate(bool terminate) { nxrt_run_options_set_terminate(get(), terminate ? 1 : 0); }
};

class Tensor : public detail::Handle<nxrt_tensor, nxrt_tensor_destroy> {
 public:
  using Handle::Handle;

  // A view over caller memory (no copy): `data` must outlive the tensor.
  static Result<Tensor> view(nxrt_dtype dtype, const std::vector<int64_t>& shape, void* data,
                             size_t bytes) {
    nxrt_tensor* t = nullptr;
    Status s = detail::check(
        nxrt_tensor_create_view(dtype, shape.data(), shape.size(), data, bytes, &t, nullptr));
    if (!s.ok()) return s;
    return Tensor(t);
  }
  // A typed view over `count` elements at `data`.
  template <typename T>
  static Result<Tensor> view(T* data, size_t count, const std::vector<int64_t>& shape) {
    return view(DTypeOf<T>::value, shape, static_cast<void*>(data), count * sizeof(T));
  }
  // A typed view over a C array, e.g. float frame[512] with shape {1, 512}.
  template <typename T, size_t N>
  static Result<Tensor> view(T (&data)[N], const std::vector<int64_t>& shape) {
    return view(data, N, shape);
  }
  // A zero-filled tensor that owns its memory.
  static Result<Tensor> allocate(nxrt_dtype dtype, const std::vector<int64_t>& shape) {
    nxrt_tensor* t = nullptr;
    Status s = detail::check(nxrt_tensor_create(dtype, shape.data(), shape.size(), &t, nullptr));
    if (!s.ok()) return s;
    return Tensor(t);
  }

  nxrt_dtype dtype() const { return nxrt_tensor_dtype(get()); }
  size_t rank() const { return nxrt_tensor_rank(get()); }
  std::vector<int64_t> shape() const {
    const int64_t* dims = nxrt_tensor_shape(get());
    return dims ? std::vector<int64_t>(dims, dims + rank()) : std::vector<int64_t>();
  }
  int64_t element_count() const { return nxrt_tensor_element_count(get()); }
  size_t byte_size() const { return nxrt_tensor_byte_size(get()); }
  void* raw() { return nxrt_tensor_data(get()); }
  const void* raw() const { return nxrt_tensor_data(get()); }
  // Typed data; nullptr when T does not match the element type.
  template <typename T>
  T* data() {
    return dtype() == DTypeOf<T>::value ? static_cast<T*>(raw()) : nullptr;
  }
  template <typename T>
  const T* data() const {
    return dtype() == DTypeOf<T>::value ? static_cast<const T*>(raw()) : nullptr;
  }
  // Element `index` of a string tensor.
  Result<std::string> string_at(int64_t index) const {
    const char* data = nullptr;
    size_t length = 0;
    Status s = detail::check(nxrt_tensor_get_string(get(), index, &data, &length, nullptr));
    if (!s.ok()) return s;
    return std::string(data, length);
  }
};

// One feed of a run: an input name and the tensor given to it (borrowed).
struct NamedInput {
  const char* name;
  const Tensor* tensor;
};

// Declared element type and shape of an input or output.
struct IoInfo {
  std::string name;
  nxrt_dtype dtype = NXRT_DTYPE_UNDEFINED;
  bool has_shape = false;
  std::vector<int64_t> shape;          // -1 for symbolic or unknown dims
  std::vector<std::string> dim_names;  // "" for fixed dims
};

class Session : public detail::Handle<nxrt_session, nxrt_session_destroy> {
 public:
  using Handle::Handle;

  static Result<Session> create(const Env& env, const std::string& path,
                                const SessionOptions* options = nullptr) {
    nxrt_session* s = nullptr;
    Status st = detail::check(nxrt_session_create_from_file(
        env.get(), path.c_str(), options ? options->get() : nullptr, &s, nullptr));
    if (!st.ok()) return st;
    return Session(s);
  }
  static Result<Session> create_from_memory(const Env& env, const void* data, size_t size,
                                            const SessionOptions* options = nullptr) {
    nxrt_session* s = nullptr;
    Status st = detail::check(nxrt_session_create_from_memory(
        env.get(), data, size, options ? options->get() : nullptr, &s, nullptr));
    if (!st.ok()) return st;
    return Session(s);
  }

  size_t input_count() const { return nxrt_session_io_count(get(), NXRT_IO_INPUT); }
  size_t output_count() const { return nxrt_session_io_count(get(), NXRT_IO_OUTPUT); }
  IoInfo input(size_t index) const { return info(NXRT_IO_INPUT, index); }
  IoInfo output(size_t index) const { return info(NXRT_IO_OUTPUT, index); }
  std::vector<IoInfo> inputs() const { return infos(NXRT_IO_INPUT); }
  std::vector<IoInfo> outputs() const { return infos(NXRT_IO_OUTPUT); }

  // Runs with runtime-allocated outputs: `output_names` empty means all, in graph order.
  Result<std::vector<Tensor>> run(std::initializer_list<NamedInput> inputs,
                                  std::initializer_list<const char*> output_names = {},
                                  const RunOptions* options = nullptr) const {
    return run(inputs.begin(), inputs.size(), output_names.begin(), output_names.size(), options);
  }
  Result<std::vector<Tensor>> run(const NamedInput* inputs, size_t input_count,
                                  const char* const* output_names, size_t output_count,
                                  const RunOptions* options = nullptr) const {
    const size_t n_out = output_count ? output_count : this->output_count();
    std::vector<const char*> names;
    std::vector<const nxrt_tensor*> tensors;
    names.reserve(input_count);
    tensors.reserve(input_count);
    for (size_t i = 0; i < input_count; ++i) {
      names.push_back(inputs[i].name);
      tensors.push_back(inputs[i].tensor ? inputs[i].tensor->get() : nullptr);
    }
    std::vector<nxrt_tensor*> outs(n_out, nullptr);
    Status s = detail::check(nxrt_session_run(
        get(), options ? options->get() : nullptr, names.data(), tensors.data(), input_count,
        output_count ? output_names : nullptr, outs.data(), n_out, nullptr));
    if (!s.ok()) return s;
    std::vector<Tensor> result;
    result.reserve(n_out);
    for (nxrt_tensor* t : outs) result.emplace_back(t);
    return result;
  }

  // Runs writing into caller tensors (bound outputs, no allocation for up to 16 inputs
  // and 16 outputs): outputs[i] receives output_names[i], or output i when
  // `output_names` is null. Each must have the exact dtype and shape produced.
  Status run_into(const NamedInput* inputs, size_t input_count, const char* const* output_names,
                  Tensor* const* outputs, size_t output_count,
                  const RunOptions* options = nullptr) const {
    constexpr size_t kInline = 16;
    std::array<const char*, kInline> inline_names{};
    std::array<const nxrt_tensor*, kInline> inline_inputs{};
    std::array<nxrt_tensor*, kInline> inline_outputs{};
    std::vector<const char*> heap_names;
    std::vector<const nxrt_tensor*> heap_inputs;
    std::vector<nxrt_tensor*> heap_outputs;
    const char** names = inline_names.data();
    const nxrt_tensor** ins = inline_inputs.data();
    nxrt_tensor** outs = inline_outputs.data();
    if (input_count > kInline) {
      heap_names.resize(input_count);
      heap_inputs.resize(input_count);
      names = heap_names.data();
      ins = heap_inputs.data();
    }
    if (output_count > kInline) {
      heap_outputs.resize(output_count);
      outs = heap_outputs.data();
    }
    for (size_t i = 0; i < input_count; ++i) {
      names[i] = inputs[i].name;
      ins[i] = inputs[i].tensor ? inputs[i].tensor->get() : nullptr;
    }
    for (size_t i = 0; i < output_count; ++i) {
      outs[i] = outputs[i] ? outputs[i]->get() : nullptr;
      if (!outs[i]) {
        Status s(NXRT_INVALID_ARGUMENT,
                 "run_into: output tensor " + std::to_string(i) + " is empty");
#ifdef NXRT_CPP_EXCEPTIONS
        throw Exception(s);
#else
        return s;
#endif
      }
    }
    return detail::check(nxrt_session_run(get(), options ? options->get() : nullptr, names, ins,
                                          input_count, output_names, outs, output_count, nullptr));
  }
  Status run_into(std::initializer_list<NamedInput> inputs,
                  std::initializer_list<const char*> output_names,
                  std::initializer_list<Tensor*> outputs,
                  const RunOptions* options = nullptr) const {
    if (output_names.size() && output_names.size() != outputs.size()) {
      Status s(NXRT_INVALID_ARGUMENT, "run_into: output_names and outputs differ in length");
#ifdef NXRT_CPP_EXCEPTIONS
      throw Exception(s);
#else
      return s;
#endif
    }
    return run_into(inputs.begin(), inputs.size(),
                    output_names.size() ? output_names.begin() : nullptr, outputs.begin(),
                    outputs.size(), options);
  }

 private:
  IoInfo info(nxrt_io_kind kind, size_t index) const {
    IoInfo out;
    const char* name = nxrt_session_io_name(get(), kind, index);
    if (!name) return out;
    out.name = name;
    out.dtype = nxrt_session_io_dtype(get(), kind, index);
    const int64_t rank = nxrt_session_io_rank(get(), kind, index);
    out.has_shape = rank >= 0;
    const int64_t* dims = nxrt_session_io_shape(get(), kind, index);
    for (int64_t d = 0; d < rank; ++d) {
      out.shape.push_back(dims ? dims[d] : -1);
      const char* dim_name = nxrt_session_io_dim_name(get(), kind, index, size_t(d));
      out.dim_names.push_back(dim_name ? dim_name : "");
    }
    return out;
  }
  std::vector<IoInfo> infos(nxrt_io_kind kind) const {
    std::vector<IoInfo> out;
    const size_t n = nxrt_session_io_count(get(), kind);
    for (size_t i = 0; i < n; ++i) out.push_back(info(kind, i));
    return out;
  }
};

}  // namespace cpp
}  // namespace nxrt

#endif  // NXRT_NXRT_HPP_
