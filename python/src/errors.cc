#include "errors.h"

#include <map>

namespace nb = nanobind;

namespace nxrt::py {
namespace {
std::map<StatusCode, nb::object>& classes_by_code() {
  static auto* classes = new std::map<StatusCode, nb::object>();  // lives for the process
  return *classes;
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
  const std::string message =
      std::string("[nxrt] : ") + status_code_name(status.code()) + " : " + status.message();
  if (it != classes.end()) {
    PyErr_SetString(it->second.ptr(), message.c_str());
  } else {
    PyErr_SetString(PyExc_RuntimeError, message.c_str());
  }
  throw nb::python_error();
}

}  // namespace nxrt::py
