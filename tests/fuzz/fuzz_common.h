// Shared by the fuzz targets: limits small enough that libFuzzer's memory limit (2 GiB by
// default) is never reached by a legitimate refusal path.
#pragma once

#include "runtime/session.h"

namespace nxrt::fuzz {

inline SessionConfig fuzz_config() {
  SessionConfig config;
  config.config_entries = {
      {"nxrt.limits.max_tensor_bytes", std::to_string(int64_t(64) << 20)},
      {"nxrt.limits.max_tensor_elements", std::to_string(int64_t(16) << 20)},
      {"nxrt.limits.max_nodes", "20000"},
  };
  return config;
}

}  // namespace nxrt::fuzz
