// nxrt: command line front end to the runtime (run a model, benchmark it, describe it) and
// to the text-generation layer's tokenizer.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "commands.h"

namespace {

void add_input_options(CLI::App* cmd, nxrt::cli::InputOptions& options) {
  cmd->add_option("-i,--input", options.inputs,
                  "Feed an input from a .npy file: NAME=FILE.npy (repeatable); inputs not given "
                  "get random values of the declared dtype and shape");
  cmd->add_option(
      "-d,--dim", options.dims,
      "Size of a symbolic dimension for random inputs: SYMBOL=SIZE (repeatable; default 1)");
  cmd->add_option(
      "-s,--shape", options.shapes,
      "Shape of a generated input: NAME=D0,D1,... (NAME=scalar for rank 0; repeatable)");
  cmd->add_option(
      "-f,--fill", options.fills,
      "Fill a generated input with one value instead of random ones: NAME=NUMBER (repeatable)");
  cmd->add_option("--seed", options.seed, "Seed for random inputs")->capture_default_str();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "nxrt: run, benchmark and inspect ONNX models with the nxrt runtime; tokenize text; generate "
      "text"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "nxrt " NXRT_VERSION_STRING);

  nxrt::cli::RunArgs run;
  CLI::App* run_cmd = app.add_subcommand("run", "Run a model once and print its outputs");
  run_cmd->add_option("model", run.model, "ONNX model file")->required();
  add_input_options(run_cmd, run.inputs);
  run_cmd->add_option("--save", run.save_dir, "Write every output to DIR/NAME.npy");
  run_cmd->add_option("-t,--threads", run.threads, "Intra-op threads")->check(CLI::Range(1, 1024));

  nxrt::cli::BenchArgs bench;
  CLI::App* bench_cmd = app.add_subcommand(
      "bench", "Measure latency, throughput, heap allocations per run and memory");
  bench_cmd->add_option("model", bench.model, "ONNX model file")->required();
  add_input_options(bench_cmd, bench.inputs);
  bench_cmd->add_option("-t,--threads", bench.threads, "Intra-op threads")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  bench_cmd->add_option("-r,--runs", bench.runs, "Measured runs")
      ->check(CLI::Range(1, 100000000))
      ->capture_default_str();
  bench_cmd->add_option("-w,--warmup", bench.warmup, "Warm-up runs before measuring")
      ->check(CLI::Range(0, 100000000))
      ->capture_default_str();
  bench_cmd->add_flag("!--no-bind", bench.bind_outputs,
                      "Let the runtime allocate outputs instead of binding caller buffers");
  bench_cmd->add_flag("!--no-progress", bench.progress, "Never draw the progress bar");

  nxrt::cli::InfoArgs info;
  CLI::App* info_cmd =
      app.add_subcommand("info", "Print inputs, outputs, opsets, producer, metadata and op counts");
  info_cmd->add_option("model", info.model, "ONNX model file")->required();
  info_cmd->add_flag("--plan", info.plan,
                     "Also plan the model (all graph passes) and print its steps: op, node, "
                     "execution provider, input and output values");

  nxrt::cli::TokenizeArgs tok;
  CLI::App* tok_cmd = app.add_subcommand(
      "tokenize",
      "Print the token ids of a text (space-separated, one line) under a Hugging Face "
      "tokenizer.json (byte-level BPE), or with --decode the text of ids");
  tok_cmd
      ->add_option("tokenizer", tok.tokenizer,
                   "tokenizer.json (a tokenizer_config.json beside it supplies BOS/EOS)")
      ->required();
  CLI::Option* text_opt =
      tok_cmd->add_option("--text", tok.text, "The text (with --decode: the ids) to read");
  CLI::Option* file_opt =
      tok_cmd->add_option("--file", tok.file, "Read the text (with --decode: the ids) from FILE");
  text_opt->excludes(file_opt);
  tok_cmd->add_flag("--add-special-tokens", tok.add_special_tokens,
                    "Put the tokenizer's BOS/EOS around the ids as its post-processor says");
  tok_cmd->add_flag("--decode", tok.decode,
                    "The input is ids (separated by spaces or commas): print their text as is");
  tok_cmd->add_flag("--skip-special-tokens", tok.skip_special_tokens,
                    "With --decode, leave special tokens out of the text");
  tok_cmd->add_flag("--stats", tok.stats, "Print load and encode times to stderr");

  nxrt::cli::GenerateArgs gen;
  CLI::App* gen_cmd = app.add_subcommand(
      "generate",
      "Generate text with a language model folder in onnxruntime-genai's layout "
      "(genai_config.json, model.onnx, tokenizer.json; python -m nxrt.genai convert makes one "
      "from a GGUF file); prints the text, then prompt tokens, time to first token and "
      "tokens/s on stderr");
  gen_cmd->add_option("model", gen.model, "Model folder")->required();
  CLI::Option* prompt_opt = gen_cmd->add_option("--prompt", gen.prompt, "The prompt, as is");
  CLI::Option* prompt_file_opt =
      gen_cmd->add_option("--prompt-file", gen.prompt_file, "Read the prompt from FILE");
  prompt_opt->excludes(prompt_file_opt);
  gen_cmd->add_option("--max-tokens", gen.max_tokens, "New tokens at most")
      ->check(CLI::Range(1, 1 << 24));
  gen_cmd->add_option("--temperature", gen.temperature, "0 (default): greedy");
  gen_cmd->add_option("--top-k", gen.top_k, "Sample among the k likeliest tokens (0: all)");
  gen_cmd->add_option("--top-p", gen.top_p, "Nucleus sampling mass");
  gen_cmd->add_option("--min-p", gen.min_p, "Drop tokens below min_p times the top probability");
  gen_cmd->add_option("--repetition-penalty", gen.repetition_penalty,
                      "Above 1 discourages tokens of the prompt and the output");
  CLI::Option* seed_opt = gen_cmd->add_option("--seed", gen.seed, "Random seed (sampling)");
  gen_cmd->add_option("--stop", gen.stop, "Stop at this string (repeatable; not printed)");
  gen_cmd->add_flag("--stream", gen.stream, "Print the text as it is generated");
  gen_cmd->add_flag("--print-ids", gen.print_ids, "Print the generated token ids after the text");
  gen_cmd->add_flag("--ignore-eos", gen.ignore_eos, "Go on past end-of-sequence (benchmarks)");
  gen_cmd->add_option("-t,--threads", gen.threads, "Intra-op threads")->check(CLI::Range(1, 256));

  CLI11_PARSE(app, argc, argv);
  gen.prompt_given = prompt_opt->count() > 0;
  gen.prompt_file_given = prompt_file_opt->count() > 0;
  gen.seed_given = seed_opt->count() > 0;
  tok.text_given = text_opt->count() > 0;
  tok.file_given = file_opt->count() > 0;

  nxrt::Status status;
  if (run_cmd->parsed())
    status = nxrt::cli::run_command(run);
  else if (bench_cmd->parsed())
    status = nxrt::cli::bench_command(bench);
  else if (info_cmd->parsed())
    status = nxrt::cli::info_command(info);
  else if (gen_cmd->parsed())
    status = nxrt::cli::generate_command(gen);
  else
    status = nxrt::cli::tokenize_command(tok);
  if (!status.ok()) {
    std::fflush(stdout);
    std::fprintf(stderr, "nxrt: error: %s\n", status.message().c_str());
    return status.code() == nxrt::StatusCode::kNoSuchFile ? 2 : 1;
  }
  return 0;
}
