// nxrt._nxrt.CppEngine: the C++ generation engine (src/genai/engine.h) for
// nxrt.genai.Engine. generate() runs a whole generation with the GIL released;
// start() returns a CppGeneration whose step() runs one model run at a time (GIL
// released), so Python's stream() yields each piece as it is decoded without a thread.
// Calls on one engine are serialized (the engine has one cache); errors raise
// nxrt.genai.engine.GenAIError with the engine's message.
#include <nanobind/nanobind.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "genai/batch_decoder.h"
#include "genai/engine.h"
#include "session_config.h"
#include "tokenizer_handle.h"

namespace nb = nanobind;

namespace nxrt::py {
namespace {

[[noreturn]] void raise_genai_error(const Status& status) {
  nb::object cls = nb::module_::import_("nxrt.genai.engine").attr("GenAIError");
  PyErr_SetString(cls.ptr(), status.message().c_str());
  throw nb::python_error();
}

// The engine and the lock that keeps its one cache to one call at a time.
struct SharedEngine {
  std::unique_ptr<genai::Engine> engine;
  std::mutex busy;
};

// Python's keyword arguments, already checked and given the model's defaults by
// nxrt.genai.engine.Engine._params.
// One entry of Python's parameters as T; a value T cannot hold is a GenAIError naming it.
template <typename T>
T field(const nb::dict& p, const char* name) {
  T value{};
  if (!nb::try_cast(p[name], value))
    raise_genai_error(
        invalid_argument(name, " cannot be ", nb::cast<std::string>(nb::repr(p[name]))));
  return value;
}

genai::SamplingOptions sampling_options(const nb::dict& p) {
  genai::SamplingOptions o;
  o.max_tokens = field<int>(p, "max_tokens");
  o.temperature = field<float>(p, "temperature");
  o.top_k = field<int>(p, "top_k");
  o.top_p = field<float>(p, "top_p");
  o.min_p = field<float>(p, "min_p");
  o.repetition_penalty = field<float>(p, "repetition_penalty");
  o.frequency_penalty = field<float>(p, "frequency_penalty");
  o.presence_penalty = field<float>(p, "presence_penalty");
  if (!p["seed"].is_none()) o.seed = field<uint64_t>(p, "seed");
  if (!p["stop"].is_none()) o.stop = field<std::vector<std::string>>(p, "stop");
  if (!p["stop_token_ids"].is_none())
    o.stop_token_ids = field<std::vector<int32_t>>(p, "stop_token_ids");
  o.ignore_eos = field<bool>(p, "ignore_eos");
  o.logprobs = field<bool>(p, "logprobs");
  return o;
}

// A text prompt tokenized (without special tokens, as Engine::generate does) or ids.
std::vector<int32_t> prompt_ids(const genai::Engine& engine, const nb::object& prompt) {
  if (nb::isinstance<nb::str>(prompt)) {
    std::string text = nb::cast<std::string>(prompt);
    nb::gil_scoped_release release;
    return engine.tokenizer().encode(text, false);
  }
  return nb::cast<std::vector<int32_t>>(prompt);
}

nb::dict to_dict(genai::Generation& g) {
  const genai::GenerationStats& s = g.stats;
  nb::dict d;
  d["text"] = std::move(g.text);
  d["token_ids"] = g.token_ids;
  d["logprobs"] = g.logprobs;
  d["finish_reason"] = g.finish_reason;
  d["prompt_tokens"] = s.prompt_tokens;
  d["cached_prompt_tokens"] = s.cached_prompt_tokens;
  d["completion_tokens"] = s.completion_tokens;
  d["time_to_first_token"] = s.time_to_first_token_s;
  d["decode"] = s.decode_s;
  d["tokens_per_second"] = s.tokens_per_second();
  return d;
}

struct CppGeneration {
  std::shared_ptr<SharedEngine> shared;  // kept alive while the generation exists
  std::unique_ptr<genai::Engine::Generator> generator;
  std::string pending;  // text the sink received during the current step
};

}  // namespace

void bind_genai_engine(nb::module_& m) {
  nb::class_<CppGeneration>(m, "CppGeneration")
      .def(
          "step",
          [](CppGeneration& g) {
            Expected<bool> done = true;
            std::string piece;
            {
              nb::gil_scoped_release release;
              std::lock_guard<std::mutex> lock(g.shared->busy);
              done = g.generator->step();
              piece.swap(g.pending);
            }
            if (!done) raise_genai_error(done.status());
            return std::make_pair(std::move(piece), *done);
          },
          "Runs the model once and picks the next token: (text piece, finished).")
      .def("result", [](CppGeneration& g) { return to_dict(g.generator->result()); });

  nb::class_<SharedEngine>(m, "CppEngine")
      .def_static(
          "load",
          [](const std::string& folder, int threads, const nb::dict& session_options) {
            genai::EngineOptions options;
            options.threads = threads;
            options.session = session_config_from(session_options);
            auto shared = std::make_shared<SharedEngine>();
            Expected<std::unique_ptr<genai::Engine>> engine = Status();
            {
              nb::gil_scoped_release release;
              engine = genai::Engine::load(folder, options);
            }
            if (!engine) raise_genai_error(engine.status());
            shared->engine = std::move(*engine);
            return shared;
          },
          nb::arg("folder"), nb::arg("threads"), nb::arg("session_options"),
          "Loads a model folder (genai_config.json); threads 0 keeps the session options'.")
      .def(
          "generate",
          [](SharedEngine& e, const nb::object& prompt, const nb::dict& params) {
            std::vector<int32_t> ids = prompt_ids(*e.engine, prompt);
            const genai::SamplingOptions options = sampling_options(params);
            Expected<genai::Generation> g = Status();
            {
              nb::gil_scoped_release release;
              std::lock_guard<std::mutex> lock(e.busy);
              g = e.engine->generate(ids, options);
            }
            if (!g) raise_genai_error(g.status());
            return to_dict(*g);
          },
          nb::arg("prompt"), nb::arg("params"))
      .def(
          "start",
          [](const std::shared_ptr<SharedEngine>& e, const nb::object& prompt,
             const nb::dict& params) {
            std::vector<int32_t> ids = prompt_ids(*e->engine, prompt);
            const genai::SamplingOptions options = sampling_options(params);
            auto g = std::make_unique<CppGeneration>();
            g->shared = e;
            std::string* pending = &g->pending;  // the CppGeneration does not move
            Expected<std::unique_ptr<genai::Engine::Generator>> generator = Status();
            {
              nb::gil_scoped_release release;
              std::lock_guard<std::mutex> lock(e->busy);
              generator = e->engine->start(ids, options, [pending](std::string_view piece) {
                pending->append(piece);
                return true;
              });
            }
            if (!generator) raise_genai_error(generator.status());
            g->generator = std::move(*generator);
            return g.release();
          },
          nb::arg("prompt"), nb::arg("params"), nb::rv_policy::take_ownership)
      .def(
          "generate_batch",
          [](SharedEngine& e, const nb::list& prompts, const nb::dict& params) {
            std::vector<std::vector<int32_t>> ids;
            for (nb::handle prompt : prompts)
              ids.push_back(prompt_ids(*e.engine, nb::borrow<nb::object>(prompt)));
            const genai::SamplingOptions options = sampling_options(params);
            Expected<std::vector<genai::Generation>> out = Status();
            {
              nb::gil_scoped_release release;
              std::lock_guard<std::mutex> lock(e.busy);
              out = genai::generate_batch(*e.engine, ids, options);
            }
            if (!out) raise_genai_error(out.status());
            nb::list results;
            for (genai::Generation& g : *out) results.append(to_dict(g));
            return results;
          },
          nb::arg("prompts"), nb::arg("params"))
      .def("forget_cached_tokens",
           [](SharedEngine& e) {
             nb::gil_scoped_release release;
             std::lock_guard<std::mutex> lock(e.busy);
             e.engine->forget_cached_tokens();
           })
      .def_prop_ro("vocab_size",
                   [](const SharedEngine& e) { return e.engine->tokenizer().vocab_size(); })
      .def(
          "tokenizer",
          [](const SharedEngine& e) { return CppTokenizer{e.engine->shared_tokenizer()}; },
          "The engine's tokenizer as a CppTokenizer (shared, not read again).");
}

}  // namespace nxrt::py
