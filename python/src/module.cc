// The _nxrt extension module: thin glue only. Policy (argument checks, defaults,
// onnxruntime-compatible classes) lives in the pure-Python package python/nxrt/.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "core/random_seed.h"
#include "ep/cpu/cpu_provider.h"
#include "ep/cpu/image_codecs.h"
#include "ep/cpu/kernel_types.h"
#include "ep/cpu/registry.h"
#include "errors.h"

namespace nb = nanobind;

namespace nxrt::py {
void bind_session(nb::module_& m);
void bind_eager(nb::module_& m);
void bind_value(nb::module_& m);
void bind_shapes(nb::module_& m);
#ifdef NXRT_WITH_GENAI
void bind_chat_template(nb::module_& m);
void bind_tokenizer(nb::module_& m);
#endif
#ifdef NXRT_WITH_GENAI_ENGINE
void bind_genai_engine(nb::module_& m);
#endif
}  // namespace nxrt::py

NB_MODULE(_nxrt, m) {
  m.doc() = "nxrt native core (use the nxrt package, not this module)";
  // ImageDecoder's JPEG/PNG/TIFF/WebP/JPEG 2000 through the system codecs.
  nxrt::cpu::set_system_image_decoder(&nxrt::cpu::decode_with_system_codecs);
  m.attr("__version__") = NXRT_VERSION_STRING;  // the CMake project version
  m.def("_register_errors", &nxrt::py::register_error_classes,
        "Registers the Python exception class for each status code name.");
  m.def(
      "set_seed", [](int64_t seed) { nxrt::set_default_random_seed(uint64_t(seed)); },
      nb::arg("seed"), "Seeds the random ops that have no seed attribute, process-wide.");
  m.def(
      "kernel_table",
      [] {
        using Types = std::optional<std::vector<std::string>>;
        std::vector<std::tuple<std::string, std::string, int, int, std::string, Types>> rows;
        const std::string provider(nxrt::cpu::cpu_provider()->name());
        for (const nxrt::cpu::KernelEntry& e : nxrt::cpu::kernel_table()) {
          Types types;
          if (auto accepted = nxrt::cpu::accepted_input_types(e)) {
            types.emplace();
            for (nxrt::DataType t : *accepted) types->emplace_back(nxrt::dtype_name(t));
          }
          rows.emplace_back(e.domain, e.op_type, e.since_version, e.until_version, provider,
                            std::move(types));
        }
        return rows;
      },
      "Every kernel nxrt has: (domain, op, first opset, last opset, provider, the element "
      "types of the op's main type parameter it accepts, or None where the probe cannot "
      "tell; see cpu::accepted_input_types).");
  nxrt::py::bind_value(m);
  nxrt::py::bind_session(m);
  nxrt::py::bind_eager(m);
  nxrt::py::bind_shapes(m);
#ifdef NXRT_WITH_GENAI
  nxrt::py::bind_chat_template(m);
  nxrt::py::bind_tokenizer(m);
#endif
#ifdef NXRT_WITH_GENAI_ENGINE
  nxrt::py::bind_genai_engine(m);
#endif
}
