// The `nxrt` subcommands. Each returns the process exit status; errors are printed by
// the caller from the Status.
#pragma once

#include <string>

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

Status run_command(const RunArgs& args);
Status bench_command(const BenchArgs& args);
Status info_command(const InfoArgs& args);
Status tokenize_command(const TokenizeArgs& args);

}  // namespace nxrt::cli
