// Shared pieces of the `nxrt` subcommands: option structs, session loading, input
// preparation (from .npy files or random), and text formatting of types and values.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/value.h"
#include "ir/graph.h"
#include "runtime/session.h"

namespace nxrt::cli {

struct InputOptions {
  std::vector<std::string> inputs;  // "name=file.npy"
  std::vector<std::string> dims;    // "symbol=value" for symbolic dims of random inputs
  std::vector<std::string> shapes;  // "name=1,512": shape of a generated input
  std::vector<std::string> fills;   // "name=16000": a generated input filled with one value
  uint64_t seed = 0;
};

struct Feeds {
  std::vector<std::string> names;
  std::vector<Value> values;
  std::vector<std::string> sources;  // per input, where its value came from
};

// kNoSuchFile with a plain message when `path` is missing or not a file.
Status check_model_file(const std::string& path);
// Loads `path` with a clear error for a missing file (before the decoder sees it).
Expected<std::unique_ptr<Session>> load_session(const std::string& path,
                                                const SessionConfig& config);

// "NAME=1,3,224,224" (--shape) and "SYMBOL=SIZE" (--dim), checked.
Expected<std::pair<std::string, Shape>> parse_shape_option(const std::string& spec);
Expected<std::pair<std::string, int64_t>> parse_dim_option(const std::string& spec);

// Feeds for every input of `session`: the given .npy files, random values for the rest.
Expected<Feeds> make_feeds(const Session& session, const InputOptions& options);

std::string type_text(const ir::TypeInfo& type);   // "tensor(float)", "seq(tensor(int64))"
std::string shape_text(const ir::TypeInfo& type);  // "[batch,512]", "[?]", "(unknown)"
std::string dims_text(const Shape& shape);         // "[1,512]"
// One-line summary: the values when few, else statistics and the first values.
std::string value_summary(const Tensor& tensor);
std::string bytes_text(double bytes);  // "2.2 MiB"

}  // namespace nxrt::cli
