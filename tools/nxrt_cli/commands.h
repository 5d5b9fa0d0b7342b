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
  bool plan = false;  // also plan it and print the steps with their providers
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

struct GenerateArgs {
  std::string model;  // a model folder (genai_config.json, model file, tokenizer.json)
  std::string prompt, prompt_file;
  bool prompt_given = false, prompt_file_given = false;
  int max_tokens = 256;
  float temperature = 0.0f, top_p = 1.0f, min_p = 0.0f, repetition_penalty = 1.0f;
  int top_k = 0;
  uint64_t seed = 0;
  bool seed_given = false;
  std::vector<std::string> stop;
  bool stream = false;
  bool print_ids = false;  // the generated ids on a line after the text
  bool ignore_eos = false;
  int threads = 1;
};

Status run_command(const RunArgs& args);
Status bench_command(const BenchArgs& args);
Status info_command(const InfoArgs& args);
Status tokenize_command(const TokenizeArgs& args);
Status generate_command(const GenerateArgs& args);

}  // namespace nxrt::cli
