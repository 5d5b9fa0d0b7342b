// nxrt._nxrt.CppTokenizer: the C++ tokenizer (src/genai/tokenizer.h) for Python.
// nxrt.genai.tokenizer uses it for the tokenizer.json families only the C++ port reads
// (SentencePiece-style BPE: Llama 2, Mistral, TinyLlama). Errors raise ValueError, as the
// Python port's do.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <memory>
#include <string>
#include <vector>

#include "genai/tokenizer.h"
#include "tokenizer_handle.h"

namespace nb = nanobind;

namespace nxrt::py {
namespace {

template <typename T>
T value_or_raise(Expected<T>&& value) {
  if (!value) throw nb::value_error(value.status().message().c_str());
  return std::move(value).value();
}

struct CppStreamDecoder {
  std::shared_ptr<const genai::Tokenizer> tokenizer;  // kept alive while decoding
  genai::StreamDecoder decoder;
};

}  // namespace

void bind_tokenizer(nb::module_& m) {
  nb::class_<CppStreamDecoder>(m, "CppStreamDecoder")
      .def("add", [](CppStreamDecoder& d, int32_t id) { return value_or_raise(d.decoder.add(id)); })
      .def("flush", [](CppStreamDecoder& d) { return d.decoder.flush(); });

  nb::class_<CppTokenizer>(m, "CppTokenizer")
      .def_static(
          "from_file",
          [](const std::string& path) {
            std::unique_ptr<genai::Tokenizer> t;
            {
              nb::gil_scoped_release release;
              auto loaded = genai::Tokenizer::from_json_file(path);
              if (!loaded) {
                nb::gil_scoped_acquire acquire;
                throw nb::value_error(loaded.status().message().c_str());
              }
              t = std::move(loaded).value();
            }
            return CppTokenizer{std::shared_ptr<const genai::Tokenizer>(std::move(t))};
          },
          nb::arg("path"), "Reads tokenizer.json (and a tokenizer_config.json beside it).")
      .def(
          "encode",
          [](const CppTokenizer& t, const std::string& text, bool add_special_tokens) {
            nb::gil_scoped_release release;
            return t.impl->encode(text, add_special_tokens);
          },
          nb::arg("text"), nb::arg("add_special_tokens") = false)
      .def(
          "decode",
          [](const CppTokenizer& t, const std::vector<int32_t>& ids, bool skip) {
            return value_or_raise(t.impl->decode(ids, skip));
          },
          nb::arg("ids"), nb::arg("skip_special_tokens") = false)
      .def(
          "token_bytes",
          [](const CppTokenizer& t, int32_t id, bool skip) {
            std::string_view b = value_or_raise(t.impl->token_bytes(id, skip));
            return nb::bytes(b.data(), b.size());
          },
          nb::arg("token_id"), nb::arg("skip_special_tokens") = false)
      .def(
          "stream_decoder",
          [](const CppTokenizer& t, bool skip) {
            return CppStreamDecoder{t.impl, genai::StreamDecoder(*t.impl, skip)};
          },
          nb::arg("skip_special_tokens") = false)
      .def_prop_ro("vocab_size", [](const CppTokenizer& t) { return t.impl->vocab_size(); })
      .def_prop_ro("bos_token_id", [](const CppTokenizer& t) { return t.impl->bos_id(); })
      .def_prop_ro("eos_token_id", [](const CppTokenizer& t) { return t.impl->eos_id(); })
      .def("id_to_token", [](const CppTokenizer& t, int32_t id) { return t.impl->id_to_token(id); })
      .def("token_to_id",
           [](const CppTokenizer& t, const std::string& s) { return t.impl->token_to_id(s); });
}

}  // namespace nxrt::py
