// nxrt: command line front end to the runtime (run a model, benchmark it, describe it) and
// to the text-generation layer's tokenizer.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "commands.h"
#include "ep/cpu/image_codecs.h"

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

// The sampling options of `generate` and `chat`; returns --seed (to tell it was given).
CLI::Option* add_sampling_options(CLI::App* cmd, nxrt::cli::SamplingArgs& a) {
  cmd->add_option("--max-tokens", a.max_tokens, "New tokens at most (per turn)")
      ->check(CLI::Range(1, 1 << 24));
  cmd->add_option("--temperature", a.temperature, "0 (default): greedy");
  cmd->add_option("--top-k", a.top_k, "Sample among the k likeliest tokens (0: all)");
  cmd->add_option("--top-p", a.top_p, "Nucleus sampling mass");
  cmd->add_option("--min-p", a.min_p, "Drop tokens below min_p times the top probability");
  cmd->add_option("--repetition-penalty", a.repetition_penalty,
                  "Above 1 discourages tokens of the prompt and the output");
  cmd->add_option("--stop", a.stop, "Stop at this string (repeatable; not printed)");
  cmd->add_flag("--ignore-eos", a.ignore_eos, "Go on past end-of-sequence (benchmarks)");
  cmd->add_option("-t,--threads", a.threads, "Intra-op threads")->check(CLI::Range(1, 256));
  return cmd->add_option("--seed", a.seed, "Random seed (sampling)");
}

}  // namespace

int main(int argc, char** argv) {
  // ImageDecoder's JPEG/PNG/TIFF/WebP/JPEG 2000 through the system codecs.
  nxrt::cpu::set_system_image_decoder(&nxrt::cpu::decode_with_system_codecs);
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
  info_cmd->add_flag("--shapes", info.shapes,
                     "Also infer every value's shape from the inputs' declared shapes (numbers, "
                     "symbols such as 'batch', or ? where only a run can tell)");
  info_cmd->add_option("-d,--dim", info.dims,
                       "With --shapes: give a symbolic input dimension a size, SYMBOL=SIZE "
                       "(repeatable)");
  info_cmd->add_option("-s,--shape", info.input_shapes,
                       "With --shapes: an input's shape, NAME=D0,D1,... (repeatable)");

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
  CLI::Option* seed_opt = add_sampling_options(gen_cmd, gen.sampling);
  gen_cmd->add_flag("--stream", gen.stream, "Print the text as it is generated");
  gen_cmd->add_flag("--print-ids", gen.print_ids, "Print the generated token ids after the text");

  nxrt::cli::ChatArgs chat;
  CLI::App* chat_cmd = app.add_subcommand(
      "chat",
      "Chat with a language model folder on the terminal: each line you type is a user "
      "turn, rendered with the model's chat template; an empty line or end of input ends");
  chat_cmd->add_option("model", chat.model, "Model folder")->required();
  chat_cmd->add_option("--system", chat.system, "A system message before the conversation");
  CLI::Option* chat_seed_opt = add_sampling_options(chat_cmd, chat.sampling);

  nxrt::cli::ServeArgs serve;
  CLI::App* serve_cmd = app.add_subcommand(
      "serve",
      "Serve a language model folder over an OpenAI-compatible HTTP API (/v1/models, "
      "/v1/completions, /v1/chat/completions, /health, /metrics)");
  serve_cmd->add_option("model", serve.model, "Model folder")->required();
  serve_cmd->add_option("--host", serve.host, "Address to listen on (loopback by default)");
  serve_cmd->add_option("--port", serve.port, "Port")->check(CLI::Range(0, 65535));
  serve_cmd->add_option("--model-name", serve.model_name,
                        "Model id for clients (default: the folder's name)");
  serve_cmd->add_option("--api-key", serve.api_key,
                        "Require 'Authorization: Bearer KEY' (all routes but /health)");
  serve_cmd->add_option("-t,--threads", serve.threads, "Intra-op threads")
      ->check(CLI::Range(1, 256));
  serve_cmd->add_option("--max-queue", serve.max_queue, "Waiting requests before 429")
      ->check(CLI::Range(1, 4096));
  serve_cmd->add_option("--max-body-bytes", serve.max_body_bytes, "Largest request body")
      ->check(CLI::Range(size_t(1024), size_t(1) << 30));
  serve_cmd
      ->add_option("--read-timeout", serve.read_timeout_s,
                   "Seconds a client may stay silent while sending or reading")
      ->check(CLI::Range(1, 3600));
  serve_cmd
      ->add_option("--request-timeout", serve.request_timeout_s,
                   "Seconds a request may wait and generate before it is stopped (504)")
      ->check(CLI::Range(1, 86400));
  serve_cmd
      ->add_option("--batch", serve.batch,
                   "Sequences decoded together (continuous batching; 1: one at a time)")
      ->check(CLI::Range(1, 256));
  serve_cmd
      ->add_option("--max-sequence-length", serve.max_sequence_length,
                   "Cache positions (prompt + output) of each batched sequence")
      ->check(CLI::Range(int64_t(16), int64_t(1) << 20));
  serve_cmd
      ->add_option("--shutdown-timeout", serve.shutdown_timeout_s,
                   "Seconds in-flight requests get after SIGTERM/SIGINT")
      ->check(CLI::Range(0, 3600));

  CLI11_PARSE(app, argc, argv);
  gen.prompt_given = prompt_opt->count() > 0;
  gen.prompt_file_given = prompt_file_opt->count() > 0;
  gen.sampling.seed_given = seed_opt->count() > 0;
  chat.sampling.seed_given = chat_seed_opt->count() > 0;
  tok.text_given = text_opt->count() > 0;
  tok.file_given = file_opt->count() > 0;

  nxrt::Status status;
  if (run_cmd->parsed())
    status = nxrt::cli::run_command(run);
  else if (bench_cmd->parsed())
    status = nxrt::cli::bench_command(bench);
  else if (info_cmd->parsed())
    status = nxrt::cli::info_command(info);
  else if (serve_cmd->parsed())
    status = nxrt::cli::serve_command(serve);
  else if (chat_cmd->parsed())
    status = nxrt::cli::chat_command(chat);
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
