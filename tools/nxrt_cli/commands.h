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

Status run_command(const RunArgs& args);
Status bench_command(const BenchArgs& args);
Status info_command(const InfoArgs& args);

}  // namespace nxrt::cli
