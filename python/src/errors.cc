#include "errors.h"

#include <map>
#include <string>

namespace nb = nanobind;

namespace nxrt::py {
namespace {
std::map<StatusCode, nb::object>& classes_by_code() {
  static auto* classes = new std::map<StatusCode, nb::object>();  // lives for the process
  return *classes;
}
// onnxruntime's spelling of a code in its messages ("INVALID_ARGUMENT").
const char* ort_code_name(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "OK";
    case StatusCode::kFail:
      return "FAIL";
    case StatusCode::kInvalidArgument:
      return "INVALID_ARGUMENT";
    case StatusCode::kNoSuchFile:
      return "NO_SUCHFILE";
    case StatusCode::kNoModel:
      return "NO_MODEL";
    case StatusCode::kEngineError:
      return "ENGINE_ERROR";
    case StatusCode::kRuntimeException:
      return "RUNTIME_EXCEPTION";
    case StatusCode::kInvalidProtobuf:
      return "INVALID_PROTOBUF";
    case StatusCode::kModelLoaded:
      return "MODEL_LOADED";
    case StatusCode::kNotImplemented:
      return "NOT_IMPLEMENTED";
    case StatusCode::kInvalidGraph:
      return "INVALID_GRAPH";
    case StatusCode::kEPFail:
      return "EP_FAIL";
  }
  return "FAIL";
}
}  // namespace

void register_error_classes(nb::dict classes) {
  for (int code = int(StatusCode::kFail); code <= int(StatusCode::kEPFail); ++code) {
    const char* name = status_code_name(StatusCode(code));
    if (classes.contains(name)) classes_by_code()[StatusCode(code)] = classes[name];
  }
}

void throw_status(const Status& status) {
  auto& classes = classes_by_code();
  auto it = classes.find(status.code());
  // onnxruntime's format, which code that handles its errors parses:
  // "[ONNXRuntimeError] : <code number> : <CODE_NAME> : <message>".
  const std::string message = "[ONNXRuntimeError] : " + std::to_string(int(status.code())) + " : " +
                              ort_code_name(status.code()) + " : " + status.message();
  if (it != classes.end()) {
    PyErr_SetString(it->second.ptr(), message.c_str());
  } else {
    PyErr_SetString(PyExc_RuntimeError, message.c_str());
  }
  throw nb::python_error();
}

}  // namespace nxrt::py
