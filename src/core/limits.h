// Resource limits for untrusted models and inputs. A model file or a feed must not be able
// to make nxrt exhaust memory or the stack; every check that refuses something names the
// limit, its value and the session config key that raises it.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "core/status.h"

namespace nxrt {

struct Limits {
  // Bytes of the serialized model (the .onnx file or buffer; external data files are
  // bounded separately by max_tensor_bytes per tensor). Protobuf itself stops at 2 GiB.
  int64_t max_model_bytes = int64_t(2) << 30;
  // One tensor's bytes and element count, for every tensor nxrt allocates (initializers
  // decoded from the model, constants folded at load time, run-time intermediates and
  // outputs).
  int64_t max_tensor_bytes = int64_t(16) << 30;
  int64_t max_tensor_elements = int64_t(1) << 32;
  // Nesting of subgraphs (If/Loop/Scan bodies) and of types (sequence of optional of ...).
  int64_t max_graph_depth = 64;
  // Nodes in the whole model (all graphs and functions, counted while decoding) and in
  // any one graph after function inlining.
  int64_t max_nodes = int64_t(1) << 20;
  // Bytes one run may hold allocated at once; 0 means no limit. Enforced by the executor.
  int64_t max_session_memory_bytes = 0;
};

// Keys of SessionOptions config entries, as accepted by add_session_config_entry.
inline constexpr const char* kLimitMaxModelBytes = "nxrt.limits.max_model_bytes";
inline constexpr const char* kLimitMaxTensorBytes = "nxrt.limits.max_tensor_bytes";
inline constexpr const char* kLimitMaxTensorElements = "nxrt.limits.max_tensor_elements";
inline constexpr const char* kLimitMaxGraphDepth = "nxrt.limits.max_graph_depth";
inline constexpr const char* kLimitMaxNodes = "nxrt.limits.max_nodes";
inline constexpr const char* kLimitMaxSessionMemoryBytes = "nxrt.limits.max_session_memory_bytes";

// The defaults, for callers that have no session (tools, eager ops without options).
const Limits& default_limits();

// Reads the "nxrt.limits.*" entries of a session's config entries (others are ignored).
// An unknown "nxrt.limits." key, a value that is not a decimal integer, or a negative
// value is an InvalidArgument error.
Expected<Limits> parse_limits(const std::map<std::string, std::string>& config_entries);

// "limit nxrt.limits.max_nodes = 1048576; raise it with the session config entry
// 'nxrt.limits.max_nodes' (SessionOptions.add_session_config_entry)": the tail of every
// limit error.
std::string limit_text(const char* key, int64_t value);

}  // namespace nxrt
