// Eager execution of single ONNX ops: a one-node graph is planned once per distinct
// (domain, op, opset, attributes, input dtypes and ranks, output count) and the prepared
// plan is cached, so repeated calls only pay for execution.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/graph.h"
#include "planner/plan.h"
#include "runtime/executor.h"

namespace nxrt::eager {

// What an eager call is made of, before planning.
struct OpSpec {
  std::string domain;  // "" (or "ai.onnx") for the default domain
  std::string op_type;
  int64_t opset = 0;
  std::vector<ir::Attribute> attributes;
  // One per input; kUndefined marks an omitted optional input.
  std::vector<DataType> input_types;
  std::vector<ValueKind> input_kinds;  // defaults to tensors when shorter than input_types
  size_t num_outputs = 1;
};

// A planned single-op graph with its own run states; immutable and shared by threads.
class PreparedOp {
 public:
  static Expected<std::shared_ptr<PreparedOp>> create(OpSpec spec);

  // `inputs` align with the spec's inputs (a none Value where omitted); `outputs`
  // receives one owning value per node output.
  Status run(std::span<const Value> inputs, std::vector<Value>& outputs) const;

  const std::string& op_type() const { return graph_->nodes[0].op_type; }
  size_t num_inputs() const { return input_index_.size(); }
  size_t num_outputs() const { return graph_->outputs.size(); }

 private:
  PreparedOp() = default;
  std::unique_ptr<ir::Graph> graph_;  // the plan's steps point into its node
  std::shared_ptr<ExecutableGraph> plan_;
  std::vector<int> input_index_;  // by op input: index into the plan's inputs, -1 if omitted
  mutable RunStateCache states_;
};

struct CacheStats {
  size_t entries = 0;
  uint64_t hits = 0;
  uint64_t misses = 0;
};

// Prepared ops by key, least recently used evicted beyond `capacity`. Thread-safe; the
// key is any byte string that identifies an OpSpec (see append_key for a canonical one).
class OpCache {
 public:
  explicit OpCache(size_t capacity = 4096) : capacity_(capacity) {}

  // The cached op, counted as a hit, or null (counted as a miss).
  std::shared_ptr<const PreparedOp> find(const std::string& key);
  // Stores `op` under `key` (keeps the entry another thread stored first) and returns
  // the stored one.
  std::shared_ptr<const PreparedOp> insert(const std::string& key,
                                           std::shared_ptr<const PreparedOp> op);
  CacheStats stats() const;
  void clear();  // drops entries and zeroes the counters
  void set_capacity(size_t capacity);

 private:
  void evict_locked();
  using Lru = std::list<std::pair<std::string, std::shared_ptr<const PreparedOp>>>;
  mutable std::mutex mutex_;
  Lru lru_;  // most recently used first
  std::unordered_map<std::string, Lru::iterator> index_;
  size_t capacity_;
  uint64_t hits_ = 0;
  uint64_t misses_ = 0;
};

// The process-wide cache used by run().
OpCache& global_cache();

// A canonical cache key of `spec` plus its inputs' ranks, appended to `key`.
void append_key(std::string& key, const OpSpec& spec, std::span<const int> input_ranks);

// Runs one op: looks the plan up in the global cache (preparing it on a miss) and
// executes it. Input dtypes and kinds of `spec` must describe `inputs`.
Status run(const OpSpec& spec, std::span<const Value> inputs, std::vector<Value>& outputs);

}  // namespace nxrt::eager
