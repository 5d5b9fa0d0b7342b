// Typed, defaulted access to a node's attributes. Getters never fail loudly: the first
// problem (wrong attribute type, missing required attribute) is kept and reported by
// status(), so a kernel reads all its attributes and checks once.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "ir/graph.h"

namespace nxrt {

class AttrReader {
 public:
  explicit AttrReader(const ir::Node& node) : node_(node) {}

  bool has(const char* name) const { return node_.find_attribute(name) != nullptr; }
  int64_t get_int(const char* name, int64_t fallback);
  float get_float(const char* name, float fallback);
  std::string get_string(const char* name, const std::string& fallback = "");
  std::vector<int64_t> get_ints(const char* name, std::vector<int64_t> fallback = {});
  std::vector<float> get_floats(const char* name, std::vector<float> fallback = {});
  std::vector<std::string> get_strings(const char* name, std::vector<std::string> fallback = {});
  const Tensor* get_tensor(const char* name);
  const ir::Graph* get_graph(const char* name);

  int64_t require_int(const char* name);
  std::vector<int64_t> require_ints(const char* name);
  const ir::Graph* require_graph(const char* name);

  // Records a semantic problem found by the caller ("kernel_shape has 3 dims ...").
  void fail(const std::string& message);
  Status status() const { return status_; }

 private:
  const ir::Attribute* find(const char* name, ir::Attribute::Type type);
  void missing(const char* name);

  const ir::Node& node_;
  Status status_;
};

// Prefix for messages about a node: "[Conv] node 'conv_3': ".
std::string node_context(const ir::Node& node);

}  // namespace nxrt
