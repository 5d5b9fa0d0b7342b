// nxrt._nxrt.CppChatTemplate: the C++ chat-template renderer (src/genai/chat_template.h)
// for Python, so tests/python/test_genai_chat_template.py can hold it to the same cases as
// the Python renderer. Failures raise nxrt.genai.chat_template.TemplateError itself, with
// the same message, line and column the Python port gives.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "genai/chat_template.h"

namespace nb = nanobind;

namespace nxrt::py {
namespace {

[[noreturn]] void raise_template_error(const genai::TemplateError& error) {
  nb::object cls = nb::module_::import_("nxrt.genai.chat_template").attr("TemplateError");
  nb::object line = error.line ? nb::object(nb::int_(error.line)) : nb::none();
  nb::object column = error.line ? nb::object(nb::int_(error.column)) : nb::none();
  nb::object exc = cls(error.message, line, column);
  PyErr_SetObject(cls.ptr(), exc.ptr());
  throw nb::python_error();
}

struct CppChatTemplate {
  std::unique_ptr<genai::ChatTemplate> impl;
};

}  // namespace

void bind_chat_template(nb::module_& m) {
  nb::class_<CppChatTemplate>(m, "CppChatTemplate",
                              "A chat template parsed by the C++ renderer; render(context_json).")
      .def(
          "__init__",
          [](CppChatTemplate* self, const std::string& source, size_t max_output,
             size_t max_iterations, int max_depth, double max_seconds) {
            genai::TemplateLimits limits;
            limits.max_output = max_output;
            limits.max_iterations = max_iterations;
            limits.max_depth = max_depth;
            limits.max_seconds = max_seconds;
            genai::TemplateError error;
            auto impl = genai::ChatTemplate::parse(source, limits, &error);
            if (!impl) raise_template_error(error);
            new (self) CppChatTemplate{std::move(impl)};
          },
          nb::arg("source"), nb::arg("max_output") = size_t(16) << 20,
          nb::arg("max_iterations") = size_t(1000000), nb::arg("max_depth") = 40,
          nb::arg("max_seconds") = 10.0)
      .def(
          "render",
          [](const CppChatTemplate& self, const std::string& context_json) {
            nlohmann::ordered_json context;
            std::string out;
            genai::TemplateError error;
            bool ok;
            {
              nb::gil_scoped_release release;
              auto parsed = nlohmann::ordered_json::parse(context_json, nullptr, false);
              if (parsed.is_discarded()) {
                error.message = "the chat template context is not valid JSON";
                ok = false;
              } else {
                ok = self.impl->render(parsed, &out, &error);
              }
            }
            if (!ok) raise_template_error(error);
            return out;
          },
          nb::arg("context_json"), "Renders with a JSON object of template variables.");
}

}  // namespace nxrt::py
