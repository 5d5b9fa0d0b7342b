// Graph passes: named rewrites of the IR that run between loading and planning.
//
// Each pass is one function in its own file under optimizer/passes/, listed once in
// passes.inc with its name and level. Levels follow onnxruntime's GraphOptimizationLevel:
// a session at level L runs every pass whose level is at most L (0 runs only the required
// ones). A session can also switch passes off by name (onnxruntime's
// `disabled_optimizers`). The pass manager applies each pass to the main graph and to
// every nested subgraph.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "core/limits.h"
#include "core/status.h"
#include "ir/graph.h"

namespace nxrt::optimizer {

enum class Level : int {
  kRequired = 0,  // the model cannot run without it (function inlining); never disabled
  kBasic = 1,     // semantics-preserving cleanups and constant weight rewrites
  kExtended = 2,  // fusions into nxrt / com.microsoft ops
  kAll = 99,      // layout changes
};

class GraphView;

// What a pass may read and change besides the graph it is given.
struct PassContext {
  ir::Model& model;
  const Limits& limits;
  // True for the main graph of a model whose initializers listed as inputs may be fed
  // (IR version 4 and later): those are not constants.
  bool inputs_override_initializers = false;
  // For a subgraph: the view of the graph around it, whose constants the subgraph reads
  // by name (an exported If branch slices the weights its parent graph holds).
  const GraphView* outer = nullptr;
  // Large tensors this pass folded anywhere in the model: a fold that computes an equal
  // one (sibling If branches slicing the same weights) shares its memory.
  std::vector<Tensor>* folded = nullptr;
  // Adds `domain` at `version` to the model's opset imports unless it is there already;
  // false when the model imports another version of it (a rewrite must then not use it).
  // Cheap and idempotent: passes call it before each rewrite that uses the domain.
  bool import_domain(const std::string& domain, int64_t version);
  // The model's opset of `domain` ("" = ai.onnx), or 0 when not imported.
  int64_t opset(const std::string& domain) const;
};

using PassFn = Status (*)(ir::Graph& graph, PassContext& ctx);

struct PassInfo {
  const char* name;
  Level level;
  PassFn run;
};

// Every pass, in the order they run (passes.inc).
const std::vector<PassInfo>& all_passes();

struct OptimizerOptions {
  int level = int(Level::kAll);
  std::set<std::string> disabled;  // pass names; an unknown name is an error
};

// Runs the passes `options` selects over the model's main graph and its subgraphs.
Status optimize(ir::Model& model, const OptimizerOptions& options, const Limits& limits);

}  // namespace nxrt::optimizer
