// `nxrt generate` and `nxrt chat`: text from a language model folder through the C++
// generation engine.
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "commands.h"
#include "core/mapped_file.h"
#include "genai/chat_prompt.h"
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

Expected<std::unique_ptr<genai::Engine>> load_engine(const std::string& model,
                                                     const SamplingArgs& a) {
  NXRT_RETURN_IF_ERROR(check_model(model));
  genai::EngineOptions options;
  options.threads = a.threads;
  return genai::Engine::load(model, options);
}

genai::SamplingOptions sampling_options(const SamplingArgs& a) {
  genai::SamplingOptions options;
  options.max_tokens = a.max_tokens;
  options.temperature = a.temperature;
  options.top_k = a.top_k;
  options.top_p = a.top_p;
  options.min_p = a.min_p;
  options.repetition_penalty = a.repetition_penalty;
  if (a.seed_given) options.seed = a.seed;
  options.stop = a.stop;
  options.ignore_eos = a.ignore_eos;
  return options;
}

bool print_piece(std::string_view piece) {
  std::fwrite(piece.data(), 1, piece.size(), stdout);
  std::fflush(stdout);
  return true;
}

void print_stats(const genai::Generation& result, const genai::Engine& engine) {
  const genai::GenerationStats& s = result.stats;
  std::fprintf(stderr,
               "prompt %d tokens (%d cached), time to first token %.1f ms; %d tokens, %.1f "
               "tokens/s; finish: %s; cache %s\n",
               s.prompt_tokens, s.cached_prompt_tokens, s.time_to_first_token_s * 1e3,
               s.completion_tokens, s.tokens_per_second(), result.finish_reason.c_str(),
               engine.cache_in_place() ? "in place" : "grown per step");
}

}  // namespace

Status generate_command(const GenerateArgs& args) {
  NXRT_ASSIGN_OR_RETURN(std::string prompt, read_prompt(args));
  NXRT_ASSIGN_OR_RETURN(std::unique_ptr<genai::Engine> engine,
                        load_engine(args.model, args.sampling));
  genai::TextSink sink;
  if (args.stream) sink = print_piece;
  NXRT_ASSIGN_OR_RETURN(genai::Generation result,
                        engine->generate(prompt, sampling_options(args.sampling), sink));
  if (!args.stream) std::fwrite(result.text.data(), 1, result.text.size(), stdout);
  std::fputc('\n', stdout);
  if (args.print_ids) {
    for (size_t i = 0; i < result.token_ids.size(); ++i)
      std::printf("%s%d", i ? " " : "", result.token_ids[i]);
    std::fputc('\n', stdout);
  }
  std::fflush(stdout);
  print_stats(result, *engine);
  return Status();
}

Status chat_command(const ChatArgs& args) {
  NXRT_ASSIGN_OR_RETURN(std::unique_ptr<genai::Engine> engine,
                        load_engine(args.model, args.sampling));
  NXRT_ASSIGN_OR_RETURN(std::unique_ptr<genai::ChatPrompt> chat,
                        genai::ChatPrompt::from_folder(args.model));
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  if (!args.system.empty()) messages.push_back({{"role", "system"}, {"content", args.system}});
  const genai::SamplingOptions options = sampling_options(args.sampling);
  std::string line;
  // The whole conversation is rendered and run again each turn (no cache reuse across
  // turns yet), as the template may change earlier text when a turn is added.
  while (true) {
    std::fputs("> ", stderr);
    std::fflush(stderr);
    if (!std::getline(std::cin, line) || line.empty()) break;
    messages.push_back({{"role", "user"}, {"content", line}});
    NXRT_ASSIGN_OR_RETURN(std::string prompt, chat->render(messages));
    NXRT_ASSIGN_OR_RETURN(genai::Generation result, engine->generate(prompt, options, print_piece));
    std::fputc('\n', stdout);
    std::fflush(stdout);
    print_stats(result, *engine);
    messages.push_back({{"role", "assistant"}, {"content", result.text}});
  }
  return Status();
}

}  // namespace nxrt::cli
