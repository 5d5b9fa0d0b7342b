// `nxrt generate`: text from a language model folder through the C++ generation engine.
#include <cstdio>
#include <filesystem>

#include "commands.h"
#include "core/mapped_file.h"
#include "genai/engine.h"

namespace nxrt::cli {
namespace {

Expected<std::string> read_prompt(const GenerateArgs& args) {
  if (args.prompt_given == args.prompt_file_given)
    return invalid_argument("give the prompt with exactly one of --prompt and --prompt-file");
  if (args.prompt_given) return args.prompt;
  auto file = MappedFile::open(args.prompt_file);
  if (!file)
    return make_error(StatusCode::kNoSuchFile, "prompt file '", args.prompt_file,
                      "' does not exist or is not a file");
  return std::string((*file)->data(), (*file)->size());
}

Status check_model(const std::string& model) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_regular_file(model, ec) && fs::path(model).extension() == ".gguf")
    return invalid_argument("'", model,
                            "' is a GGUF file; convert it into a model folder first: python -m "
                            "nxrt.genai convert ",
                            model, " FOLDER --weights int4");
  if (!fs::is_directory(model, ec))
    return make_error(StatusCode::kNoSuchFile, "model folder '", model, "' does not exist");
  return Status();
}

}  // namespace

Status generate_command(const GenerateArgs& args) {
  NXRT_RETURN_IF_ERROR(check_model(args.model));
  NXRT_ASSIGN_OR_RETURN(std::string prompt, read_prompt(args));
  genai::EngineOptions engine_options;
  engine_options.threads = args.threads;
  NXRT_ASSIGN_OR_RETURN(std::unique_ptr<genai::Engine> engine,
                        genai::Engine::load(args.model, engine_options));
  genai::SamplingOptions options;
  options.max_tokens = args.max_tokens;
  options.temperature = args.temperature;
  options.top_k = args.top_k;
  options.top_p = args.top_p;
  options.min_p = args.min_p;
  options.repetition_penalty = args.repetition_penalty;
  if (args.seed_given) options.seed = args.seed;
  options.stop = args.stop;
  options.ignore_eos = args.ignore_eos;
  genai::TextSink sink;
  if (args.stream)
    sink = [](std::string_view piece) {
      std::fwrite(piece.data(), 1, piece.size(), stdout);
      std::fflush(stdout);
      return true;
    };
  NXRT_ASSIGN_OR_RETURN(genai::Generation result, engine->generate(prompt, options, sink));
  if (!args.stream) std::fwrite(result.text.data(), 1, result.text.size(), stdout);
  std::fputc('\n', stdout);
  if (args.print_ids) {
    for (size_t i = 0; i < result.token_ids.size(); ++i)
      std::printf("%s%d", i ? " " : "", result.token_ids[i]);
    std::fputc('\n', stdout);
  }
  std::fflush(stdout);
  const genai::GenerationStats& s = result.stats;
  std::fprintf(stderr,
               "prompt %d tokens, time to first token %.1f ms; %d tokens, %.1f tokens/s; "
               "finish: %s; cache %s\n",
               s.prompt_tokens, s.time_to_first_token_s * 1e3, s.completion_tokens,
               s.tokens_per_second(), result.finish_reason.c_str(),
               engine->cache_in_place() ? "in place" : "grown per step");
  return Status();
}

}  // namespace nxrt::cli
