#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "commands.h"
#include "onnx/decoder.h"
#include "ops/shape_inference.h"
#include "optimizer/inline_functions.h"
#include "runtime/session.h"

namespace nxrt::cli {
namespace {

struct OpCounts {
  std::map<std::string, int64_t> by_op;  // "Conv", "com.microsoft:FusedConv"
  int64_t top_level = 0;
  int64_t in_subgraphs = 0;
  int64_t subgraphs = 0;
};

void count_ops(const ir::Graph& graph, int depth, OpCounts& counts) {
  for (const ir::Node& node : graph.nodes) {
    std::string key = node.domain.empty() || node.domain == "ai.onnx"
                          ? node.op_type
                          : node.domain + ":" + node.op_type;
    ++counts.by_op[key];
    ++(depth == 0 ? counts.top_level : counts.in_subgraphs);
    for (const ir::Attribute& a : node.attributes) {
      if (a.g) {
        ++counts.subgraphs;
        count_ops(*a.g, depth + 1, counts);
      }
      for (const auto& g : a.graphs) {
        if (!g) continue;
        ++counts.subgraphs;
        count_ops(*g, depth + 1, counts);
      }
    }
  }
}

void print_values(const char* title, const std::vector<const ir::ValueInfo*>& values) {
  std::printf("%s (%zu):\n", title, values.size());
  size_t width = 4;
  for (const auto* v : values) width = std::max(width, v->name.size());
  for (const auto* v : values)
    std::printf("  %-*s  %-16s %s\n", int(width), v->name.c_str(), type_text(v->type).c_str(),
                shape_text(v->type).c_str());
}

std::string one_line(std::string s, size_t max) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  if (s.size() > max) s = s.substr(0, max) + "...";
  return s;
}

// The graph inputs' shapes for inference: declared, with --dim sizes for symbols and
// --shape for whole inputs.
Expected<std::map<std::string, ops::SymShape>> input_shapes(const ir::Graph& g,
                                                            const InfoArgs& args) {
  std::map<std::string, int64_t> sizes;
  for (const std::string& spec : args.dims) {
    NXRT_ASSIGN_OR_RETURN(auto kv, parse_dim_option(spec));
    sizes[kv.first] = kv.second;
  }
  std::set<std::string> initializers;
  for (const ir::Initializer& init : g.initializers) initializers.insert(init.name);
  std::map<std::string, ops::SymShape> shapes;
  for (const ir::ValueInfo& in : g.inputs) {
    if (initializers.count(in.name)) continue;  // its data's shape, unless --shape says
    ops::SymShape s = ops::declared_shape(in.type);
    for (ops::SymDim& d : s.dims)
      if (auto it = sizes.find(d.symbol); !d.known() && it != sizes.end())
        d = ops::SymDim::of(it->second);
    shapes[in.name] = std::move(s);
  }
  for (const std::string& spec : args.input_shapes) {
    NXRT_ASSIGN_OR_RETURN(auto kv, parse_shape_option(spec));
    const bool is_input = std::any_of(g.inputs.begin(), g.inputs.end(),
                                      [&](const ir::ValueInfo& v) { return v.name == kv.first; });
    if (!is_input)
      return invalid_argument("bad --shape '", spec, "': the model has no input '", kv.first, "'");
    shapes[kv.first] =
        ops::SymShape::of_ints(std::span<const int64_t>(kv.second.begin(), kv.second.end()));
  }
  return shapes;
}

// Every node output's inferred shape, in graph order, then what inference could not do.
Status print_shapes(ir::Model& model, std::map<std::string, ops::SymShape> inputs) {
  NXRT_RETURN_IF_ERROR(optimizer::inline_functions(model));
  const ir::Graph& g = model.graph;
  ops::ShapeInferenceOptions options;
  options.input_shapes = std::move(inputs);
  options.inputs_override_initializers = model.ir_version >= 4;
  ops::ShapeInferenceResult result = ops::infer_shapes(g, model.opset_imports, options);
  size_t width = 4, values = 0, numbers = 0, unknown = 0;
  for (const ir::Node& node : g.nodes)
    for (const std::string& out : node.outputs) width = std::max(width, out.size());
  width = std::min<size_t>(width, 48);
  std::string lines;
  for (const ir::Node& node : g.nodes) {
    if (node.op_type == "Constant" && node.domain.empty()) continue;  // their data's shape
    for (const std::string& out : node.outputs) {
      if (out.empty()) continue;
      auto it = result.values.find(out);
      const ops::SymShape shape = it == result.values.end() ? ops::SymShape{} : it->second.shape;
      ++values;
      numbers += shape.fully_known();
      unknown += !shape.rank_known;
      char line[512];
      std::snprintf(line, sizeof line, "  %-*s  %-24s %s '%s'\n", int(width), out.c_str(),
                    shape.text().c_str(), node.op_type.c_str(), node.name.c_str());
      lines += line;
    }
  }
  std::printf(
      "value shapes (%zu node outputs, Constants aside: %zu all numbers, %zu symbolic or "
      "partly known, "
      "%zu unknown):\n%s",
      values, numbers, values - numbers - unknown, unknown, lines.c_str());
  if (!result.conflicts.empty()) {
    std::printf("shape conflicts (%zu):\n", result.conflicts.size());
    for (const std::string& c : result.conflicts) std::printf("  %s\n", c.c_str());
  }
  if (!result.ops_without_rule.empty()) {
    std::string ops;
    for (const std::string& op : result.ops_without_rule) ops += (ops.empty() ? "" : ", ") + op;
    std::printf("ops without a shape rule (outputs unknown): %s\n", ops.c_str());
  }
  return Status();
}

}  // namespace

Status info_command(const InfoArgs& args) {
  // Decoded without planning, so a model with ops nxrt lacks can still be described.
  NXRT_RETURN_IF_ERROR(check_model_file(args.model));
  NXRT_ASSIGN_OR_RETURN(std::shared_ptr<ir::Model> model, onnx::load_model_file(args.model));
  if (!args.shapes && (!args.dims.empty() || !args.input_shapes.empty()))
    return invalid_argument("--dim and --shape go with --shapes");
  // Checked before anything is printed, so a bad option is the only output.
  std::map<std::string, ops::SymShape> shapes_given;
  if (args.shapes) {
    NXRT_ASSIGN_OR_RETURN(shapes_given, input_shapes(model->graph, args));
  }
  const ir::Graph& g = model->graph;

  std::printf("model: %s\n", args.model.c_str());
  std::printf("  ir_version: %lld\n", static_cast<long long>(model->ir_version));
  std::string producer = model->producer_name;
  if (!model->producer_version.empty()) producer += " " + model->producer_version;
  std::printf("  producer: %s\n", producer.empty() ? "(none)" : producer.c_str());
  if (!model->domain.empty()) std::printf("  domain: %s\n", model->domain.c_str());
  if (model->model_version)
    std::printf("  model_version: %lld\n", static_cast<long long>(model->model_version));
  if (!g.name.empty()) std::printf("  graph: %s\n", g.name.c_str());
  if (!model->doc_string.empty())
    std::printf("  doc: %s\n", one_line(model->doc_string, 200).c_str());
  std::printf("opset imports:\n");
  for (const auto& [domain, version] : model->opset_imports)
    std::printf("  %-20s %lld\n", domain.empty() ? "ai.onnx" : domain.c_str(),
                static_cast<long long>(version));
  if (!model->metadata_props.empty()) {
    std::printf("metadata:\n");
    for (const auto& [key, value] : model->metadata_props)
      std::printf("  %s = %s\n", key.c_str(), one_line(value, 200).c_str());
  }

  std::set<std::string> init_names;
  size_t init_bytes = 0;
  for (const auto& init : g.initializers) {
    init_names.insert(init.name);
    init_bytes += init.tensor.nbytes();
  }
  // Since IR 4 a graph input with an initializer is an overridable default, not a
  // required input (onnxruntime's convention).
  std::vector<const ir::ValueInfo*> inputs, overridable, outputs;
  for (const auto& in : g.inputs)
    (model->ir_version >= 4 && init_names.count(in.name) ? overridable : inputs).push_back(&in);
  for (const auto& out : g.outputs) outputs.push_back(&out);
  print_values("inputs", inputs);
  if (!overridable.empty()) print_values("overridable initializers", overridable);
  print_values("outputs", outputs);
  std::printf("initializers: %zu (%s)\n", g.initializers.size(),
              bytes_text(double(init_bytes)).c_str());
  if (!model->functions.empty()) {
    std::printf("functions (%zu):\n", model->functions.size());
    for (const auto& f : model->functions)
      std::printf("  %s%s%s (%zu nodes)\n", f.domain.c_str(), f.domain.empty() ? "" : ":",
                  f.name.c_str(), f.nodes.size());
  }

  OpCounts counts;
  count_ops(g, 0, counts);
  std::printf("ops: %lld nodes (%lld top level, %lld in %lld subgraphs), %zu op types\n",
              static_cast<long long>(counts.top_level + counts.in_subgraphs),
              static_cast<long long>(counts.top_level), static_cast<long long>(counts.in_subgraphs),
              static_cast<long long>(counts.subgraphs), counts.by_op.size());
  std::vector<std::pair<std::string, int64_t>> sorted(counts.by_op.begin(), counts.by_op.end());
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  for (const auto& [op, n] : sorted)
    std::printf("  %-28s %lld\n", op.c_str(), static_cast<long long>(n));
  if (args.shapes) NXRT_RETURN_IF_ERROR(print_shapes(*model, std::move(shapes_given)));
  if (args.plan) {
    NXRT_ASSIGN_OR_RETURN(auto session, Session::create_from_file(args.model, SessionConfig{}));
    std::printf("plan (%zu steps, top level):\n%s", session->plan().steps.size(),
                describe_plan(session->plan()).c_str());
  }
  return Status();
}

}  // namespace nxrt::cli
