// The `nxrt` subcommands. Each returns the process exit status; errors are printed by
// the caller from the Status.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common.h"

namespace nxrt::cli {

struct RunArgs {
  std::string model;
  InputOptions inputs;
  std::string save_dir;  // write outputs as NAME.npy here when set
  int threads = 1;
};

struct BenchArgs {
  std::string model;
  InputOptions inputs;
  int threads = 1;
  int runs = 100;
  int warmup = 10;
  bool bind_outputs = true;
  bool progress = true;
};

struct InfoArgs {
  std::string model;
  bool plan = false;                      // also plan it and print the steps with their providers
  bool shapes = false;                    // also infer and print every value's shape
  std::vector<std::string> dims;          // "SYMBOL=SIZE" for --shapes
  std::vector<std::string> input_shapes;  // "NAME=D0,D1,..." for --shapes
};

struct TokenizeArgs {
  std::string tokenizer;  // tokenizer.json
  std::string text, file;
  bool text_given = false, file_given = false;
  bool add_special_tokens = false;
  bool decode = false;  // the input holds ids; print their text
  bool skip_special_tokens = false;
  bool stats = false;  // load and encode times on stderr
};

// Sampling and engine options shared by `generate` and `chat`.
struct SamplingArgs {
  int max_tokens = 256;
  float temperature = 0.0f, top_p = 1.0f, min_p = 0.0f, repetition_penalty = 1.0f;
  int top_k = 0;
  uint64_t seed = 0;
  bool seed_given = false;
  std::vector<std::string> stop;
  bool ignore_eos = false;
  int threads = 1;
};

struct GenerateArgs {
  std::string model;  // a model folder (genai_config.json, model file, tokenizer.json)
  std::string prompt, prompt_file;
  bool prompt_given = false, prompt_file_given = false;
  SamplingArgs sampling;
  bool stream = false;
  bool print_ids = false;  // the generated ids on a line after the text
};

struct ChatArgs {
  std::string model;
  std::string system;  // a system message first, when given
  SamplingArgs sampling;
};

struct ServeArgs {
  std::string model;       // a model folder
  std::string model_name;  // the id clients use; the folder's name by default
  std::string host = "127.0.0.1";
  int port = 8080;
  std::string api_key;  // when set, requests need "Authorization: Bearer KEY"
  int threads = 1;
  int max_queue = 16;  // requests waiting for the engine before 429
  size_t max_body_bytes = size_t(1) << 20;
  int read_timeout_s = 30;  // a client that sends or reads nothing this long is dropped
  int shutdown_timeout_s = 30;
  int request_timeout_s = 600;  // waiting + generating; beyond it the generation stops (504)
  int batch = 8;  // sequences decoded together (continuous batching); 1: one at a time
  int64_t max_sequence_length = 2048;  // cache positions per batched sequence
};

Status run_command(const RunArgs& args);
Status bench_command(const BenchArgs& args);
Status info_command(const InfoArgs& args);
Status tokenize_command(const TokenizeArgs& args);
Status generate_command(const GenerateArgs& args);
Status chat_command(const ChatArgs& args);
Status serve_command(const ServeArgs& args);

}  // namespace nxrt::cli
