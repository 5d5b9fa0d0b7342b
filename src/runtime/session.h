// InferenceSession core: load, plan once, run many times from any number of threads.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "core/parallel.h"
#include "ir/graph.h"
#include "planner/plan.h"
#include "runtime/executor.h"
#include "runtime/predicted_traffic.h"

namespace nxrt {

struct SessionConfig {
  bool enable_profiling = false;
  // Threads for splitting one operator's work (GEMM, convolutions): > 1 starts that many
  // - 1 workers with the session; 0 and 1 run everything on the calling thread.
  int intra_op_num_threads = 0;
  int inter_op_num_threads = 0;
  // onnxruntime's GraphOptimizationLevel: 0 disabled, 1 basic, 2 extended, 99 all. Selects
  // the graph passes (optimizer/passes.inc); above 0 constants are also folded.
  int graph_optimization_level = 99;
  // Graph passes switched off by name (onnxruntime's disabled_optimizers).
  std::set<std::string> disabled_optimizers;
  // When set, the graph as the passes left it is written there as an ONNX file
  // (onnxruntime's SessionOptions.optimized_model_filepath).
  std::string optimized_model_filepath;
  // onnxruntime's add_free_dimension_override_by_name: symbolic dims of the graph's
  // inputs and outputs with these names become these sizes before the graph passes run,
  // so shape computations on them fold into constants; feeds are checked against them.
  std::map<std::string, int64_t> free_dimension_overrides;
  // onnxruntime-style key/value entries; "nxrt.limits.*" keys set the Limits (see
  // core/limits.h and docs/SECURITY.md), an unknown or malformed one fails creation.
  std::map<std::string, std::string> config_entries;
  // Execution providers preferred to the CPU one, in order: each node runs on the first
  // that supports it, the CPU provider (always appended) takes the rest.
  ProviderList providers;
  // A caller's pool (C API nxrt_thread_pool) to use instead of starting threads.
  std::shared_ptr<Parallel> parallel;
};

class Session {
 public:
  static Expected<std::unique_ptr<Session>> create_from_file(const std::string& path,
                                                             const SessionConfig& config);
  // Copies `data`; the caller's buffer may go away after this returns.
  static Expected<std::unique_ptr<Session>> create_from_bytes(const void* data, size_t size,
                                                              const SessionConfig& config);

  // The model's structure and metadata. Weights are released from it once planned (the
  // plan holds what it uses), so tensor attributes and initializers read as empty here.
  const ir::Model& model() const { return *model_; }
  // Bytes of initializers and tensor attributes (subgraphs included) in the loaded model.
  uint64_t weight_bytes() const { return weight_bytes_; }
  // Inputs a caller must or may feed, graph order, without overridable initializers.
  const std::vector<ir::ValueInfo>& inputs() const { return inputs_; }
  const std::vector<ir::ValueInfo>& outputs() const { return graph_->outputs; }
  const std::vector<ir::ValueInfo>& overridable_initializers() const { return overridable_; }
  const SessionConfig& config() const { return config_; }
  // The plan: steps in run order, each with its kernel's provider (describe_plan()).
  const ExecutableGraph& plan() const { return *graph_; }
  // The nxrt-domain ops (sorted, once each) in the file optimized_model_filepath wrote:
  // other runtimes cannot load it when this is not empty.
  const std::vector<std::string>& optimized_model_nxrt_ops() const { return written_nxrt_ops_; }
  const Limits& limits() const { return limits_; }

  // The static memory plans of the idle run states (runtime/memory_plan.h), of the main
  // graph: the largest arena in bytes (0 while no state has a plan), the runs served from
  // plans; `predicted`: a state's plan came from shape inference at session creation,
  // else `not_predicted_why` says why plans are learned from runs instead. Of the
  // subgraphs that have run (If branches, Loop bodies, nested ones too; their plans are
  // learned, as their outer values' shapes are known only when their node runs): how
  // many, how many have a plan, and their largest arenas' bytes, summed.
  struct MemoryPlanStats {
    size_t arena_bytes = 0;
    uint64_t planned_runs = 0;
    bool predicted = false;
    std::string not_predicted_why;
    size_t subgraphs_run = 0;
    size_t subgraphs_planned = 0;
    size_t subgraph_arena_bytes = 0;
  };
  MemoryPlanStats memory_plan_stats() const;

  // Profiling (SessionConfig::enable_profiling): every run's per-node times, as a Chrome
  // trace JSON array like onnxruntime's profile files; taking them clears the record.
  std::string take_profile_json();

  // Runs with named feeds. Empty `output_names` means all outputs, in graph order.
  Status run(std::span<const std::string> input_names, std::span<const Value> input_values,
             std::span<const std::string> output_names, std::vector<Value>& outputs,
             const RunFlags& flags = {}) const;

 private:
  static Expected<std::unique_ptr<Session>> create(std::shared_ptr<ir::Model> model,
                                                   const SessionConfig& config,
                                                   const Limits& limits);
  Status check_feed(size_t input_index, const Value& value) const;
  void record_profile(const std::vector<NodeTiming>& timings) const;

  std::shared_ptr<ir::Model> model_;
  std::shared_ptr<ExecutableGraph> graph_;
  std::vector<ir::ValueInfo> inputs_;
  std::vector<ir::ValueInfo> overridable_;
  std::vector<std::string> written_nxrt_ops_;
  // The pool traffic of a run at the declared input shapes, when they are all fixed and
  // shape inference sizes every intermediate: each run state plans from it at once.
  std::optional<PredictedTraffic> predicted_traffic_;
  std::string not_predicted_why_;
  SessionConfig config_;
  uint64_t weight_bytes_ = 0;
  Limits limits_;
  mutable RunStateCache states_;
  std::shared_ptr<Parallel> parallel_;  // null: runs are serial
  mutable std::mutex profile_mutex_;
  mutable std::string profile_events_;  // comma-separated JSON objects
  int64_t profile_origin_ns_ = 0;
};

}  // namespace nxrt
