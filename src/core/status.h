// Errors as values: every fallible library call returns Status or Expected<T>.
// Codes mirror onnxruntime's so the Python layer can raise exceptions of the same names.
#pragma once

#include <cassert>
#include <sstream>
#include <string>
#include <utility>
#include <variant>

namespace nxrt {

enum class StatusCode {
  kOk = 0,
  kFail,
  kInvalidArgument,
  kNoSuchFile,
  kNoModel,
  kEngineError,
  kRuntimeException,
  kInvalidProtobuf,
  kModelLoaded,
  kNotImplemented,
  kInvalidGraph,
  kEPFail,
};

// Name of a code as onnxruntime spells its exception class ("InvalidArgument").
const char* status_code_name(StatusCode code);

// Concatenates any streamable values into one string: str_cat("node '", name, "'").
template <typename... Args>
std::string str_cat(const Args&... args) {
  std::ostringstream out;
  (out << ... << args);
  return out.str();
}

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok_status() { return Status(); }
  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // Prefixes context ("[Conv] node 'conv_3': ") so messages read outermost first.
  Status with_context(const std::string& context) && {
    if (!ok()) message_ = context + message_;
    return std::move(*this);
  }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

template <typename... Args>
Status make_error(StatusCode code, const Args&... args) {
  return Status(code, str_cat(args...));
}
template <typename... Args>
Status invalid_argument(const Args&... args) {
  return Status(StatusCode::kInvalidArgument, str_cat(args...));
}
template <typename... Args>
Status invalid_graph(const Args&... args) {
  return Status(StatusCode::kInvalidGraph, str_cat(args...));
}
template <typename... Args>
Status not_implemented(const Args&... args) {
  return Status(StatusCode::kNotImplemented, str_cat(args...));
}
template <typename... Args>
Status runtime_error(const Args&... args) {
  return Status(StatusCode::kRuntimeException, str_cat(args...));
}

// A value or the Status that explains why there is none.
template <typename T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : data_(std::move(value)) {}
  Expected(Status status) : data_(std::move(status)) { assert(!std::get<1>(data_).ok()); }

  bool ok() const { return data_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(data_); }
  T&& value() && { return std::get<0>(std::move(data_)); }
  const T& value() const& { return std::get<0>(data_); }
  T& operator*() & { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  Status status() const& { return ok() ? Status() : std::get<1>(data_); }
  Status status() && { return ok() ? Status() : std::get<1>(std::move(data_)); }

 private:
  std::variant<T, Status> data_;
};

}  // namespace nxrt

#define NXRT_CONCAT_INNER(a, b) a##b
#define NXRT_CONCAT(a, b) NXRT_CONCAT_INNER(a, b)

#define NXRT_RETURN_IF_ERROR(expr)               \
  do {                                           \
    ::nxrt::Status nxrt_status_ = (expr);        \
    if (!nxrt_status_.ok()) return nxrt_status_; \
  } while (0)

#define NXRT_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                               \
  if (!tmp.ok()) return std::move(tmp).status();   \
  lhs = std::move(tmp).value()

#define NXRT_ASSIGN_OR_RETURN(lhs, expr) \
  NXRT_ASSIGN_OR_RETURN_IMPL(NXRT_CONCAT(nxrt_expected_, __LINE__), lhs, expr)
