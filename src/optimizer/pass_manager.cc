// Runs the passes of passes.inc that a session's level and disabled list select.
#include <algorithm>
#include <optional>

#include "optimizer/graph_view.h"
#include "optimizer/pass.h"
#include "optimizer/passes/passes.h"

namespace nxrt::optimizer {

bool PassContext::import_domain(const std::string& domain, int64_t version) {
  auto [it, added] = model.opset_imports.emplace(domain, version);
  return added || it->second == version;
}

int64_t PassContext::opset(const std::string& domain) const {
  auto it = model.opset_imports.find(domain == "ai.onnx" ? "" : domain);
  return it == model.opset_imports.end() ? 0 : it->second;
}

const std::vector<PassInfo>& all_passes() {
  static const std::vector<PassInfo> passes = {
#define NXRT_PASS(name, level, fn) {name, Level::level, &fn},
#include "optimizer/passes.inc"
#undef NXRT_PASS
  };
  return passes;
}

namespace {

// The pass on `graph`, then on every subgraph of the nodes it leaves, which see the
// constants of the graphs around them. Subgraph initializers are never overridable.
Status run_on(const PassInfo& pass, ir::Graph& graph, PassContext& ctx) {
  NXRT_RETURN_IF_ERROR(pass.run(graph, ctx));
  std::optional<GraphView> view;  // built for the first subgraph, after the pass's edits
  for (ir::Node& node : graph.nodes) {
    for (ir::Graph* sub : ir::subgraphs_of(node)) {
      if (!view) view.emplace(graph, ctx);
      PassContext inner{ctx.model, ctx.limits, false, &*view, ctx.folded};
      Status st = run_on(pass, *sub, inner);
      if (!st.ok()) return st;
    }
  }
  return Status();
}

}  // namespace

Status optimize(ir::Model& model, const OptimizerOptions& options, const Limits& limits) {
  for (const std::string& name : options.disabled) {
    const auto& passes = all_passes();
    if (std::none_of(passes.begin(), passes.end(),
                     [&](const PassInfo& p) { return name == p.name; })) {
      std::string known;
      for (const PassInfo& p : passes) known += std::string(known.empty() ? "" : ", ") + p.name;
      return invalid_argument("disabled_optimizers names '", name,
                              "', which is not a graph pass of nxrt (passes: ", known, ")");
    }
  }
  for (const PassInfo& pass : all_passes()) {
    if (pass.level != Level::kRequired &&
        (int(pass.level) > options.level || options.disabled.count(pass.name)))
      continue;
    std::vector<Tensor> folded;
    PassContext ctx{model, limits, model.ir_version >= 4, nullptr, &folded};
    Status st = run_on(pass, model.graph, ctx);
    if (!st.ok()) return st;
  }
  return Status();
}

}  // namespace nxrt::optimizer
