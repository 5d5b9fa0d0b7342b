// Tree ensembles of ai.onnx.ml: TreeEnsemble (opset 5) and the older
// TreeEnsembleRegressor / TreeEnsembleClassifier (opsets 1-3). Both attribute layouts are
// converted at prepare into one flat node table that compute() walks per row and tree.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "ep/cpu/kernels/common.h"
#include "ep/cpu/kernels/ml_common.h"

namespace nxrt::cpu {
namespace {

enum class Mode : uint8_t { kLeq = 0, kLt, kGte, kGt, kEq, kNeq, kMember, kLeaf };
enum class Aggregate { kAverage = 0, kSum, kMin, kMax };

struct FlatNode {
  Mode mode = Mode::kLeaf;
  bool missing_true = false;
  int64_t feature = 0;
  double threshold = 0;
  int32_t next_true = -1, next_false = -1;
  uint32_t first = 0, count = 0;  // members (kMember) or leaf targets (kLeaf)
};

struct Forest {
  std::vector<FlatNode> nodes;
  std::vector<int32_t> roots;
  std::vector<double> members;                      // sorted per node range
  std::vector<std::pair<int64_t, double>> targets;  // (target, weight) per leaf range
  int64_t n_targets = 0;
  int64_t max_feature = -1;
  bool nan_follows_flag_only = false;  // opsets <= 3: NaN goes by missing_value_tracks_true alone
  Aggregate aggregate = Aggregate::kSum;
  PostTransform post = PostTransform::kNone;
  std::vector<double> base_values;
};

// Rejects child indices out of range and cycles, so compute() can walk without checks.
Status validate_forest(const Forest& f) {
  const size_t n = f.nodes.size();
  std::vector<uint8_t> state(n, 0);  // 0 new, 1 on the DFS stack, 2 done
  std::vector<std::pair<int32_t, int>> stack;
  for (int32_t root : f.roots) {
    if (root < 0 || size_t(root) >= n) return invalid_graph("tree root ", root, " is out of range");
    if (state[size_t(root)] == 2) continue;
    stack.push_back({root, 0});
    state[size_t(root)] = 1;
    while (!stack.empty()) {
      auto& [id, step] = stack.back();
      const FlatNode& node = f.nodes[size_t(id)];
      if (node.mode == Mode::kLeaf || step == 2) {
        state[size_t(id)] = 2;
        stack.pop_back();
        continue;
      }
      const int32_t child = step++ == 0 ? node.next_true : node.next_false;
      if (child < 0 || size_t(child) >= n)
        return invalid_graph("node ", id, " has a child out of range");
      if (state[size_t(child)] == 1)
        return invalid_graph("the trees contain a cycle through node ", child);
      if (state[size_t(child)] == 0) {
        state[size_t(child)] = 1;
        stack.push_back({child, 0});
      }
    }
  }
  for (const auto& [t, w] : f.targets)
    if (t < 0 || t >= f.n_targets)
      return invalid_graph("target id ", t, " is outside [0, ", f.n_targets, ")");
  return Status();
}

bool goes_true(const Forest& f, const FlatNode& node, double x) {
  if (std::isnan(x)) {
    if (node.missing_true) return true;
    if (f.nan_follows_flag_only) return false;
  }
  switch (node.mode) {
    case Mode::kLeq:
      return x <= node.threshold;
    case Mode::kLt:
      return x < node.threshold;
    case Mode::kGte:
      return x >= node.threshold;
    case Mode::kGt:
      return x > node.threshold;
    case Mode::kEq:
      return x == node.threshold;
    case Mode::kNeq:
      return x != node.threshold;
    case Mode::kMember: {
      if (std::isnan(x)) return false;  // binary_search would call NaN equivalent to anything
      const double* b = f.members.data() + node.first;
      return std::binary_search(b, b + node.count, x);
    }
    case Mode::kLeaf:
      break;
  }
  return false;
}

// Aggregates every tree's leaf for one row into scores[0, n_targets).
void score_row(const Forest& f, const double* x, double* scores, std::vector<uint8_t>& touched) {
  const int64_t nt = f.n_targets;
  std::fill(scores, scores + nt, 0.0);
  std::fill(touched.begin(), touched.end(), 0);
  for (int32_t root : f.roots) {
    const FlatNode* node = &f.nodes[size_t(root)];
    while (node->mode != Mode::kLeaf)
      node = &f.nodes[size_t(goes_true(f, *node, x[node->feature]) ? node->next_true
                                                                   : node->next_false)];
    for (uint32_t k = node->first; k < node->first + node->count; ++k) {
      const auto& [t, w] = f.targets[k];
      double& s = scores[t];
      switch (f.aggregate) {
        case Aggregate::kSum:
        case Aggregate::kAverage:
          s += w;
          break;
        // targets no leaf reaches stay 0, as in onnxruntime
        case Aggregate::kMin:
          s = touched[size_t(t)] ? std::min(s, w) : w;
          break;
        case Aggregate::kMax:
          s = touched[size_t(t)] ? std::max(s, w) : w;
          break;
      }
      touched[size_t(t)] = 1;
    }
  }
  if (f.aggregate == Aggregate::kAverage && !f.roots.empty())
    for (int64_t t = 0; t < nt; ++t) scores[t] /= double(f.roots.size());
  for (size_t t = 0; t < f.base_values.size() && int64_t(t) < nt; ++t)
    scores[t] += f.base_values[t];
}

// Reads X as rows of doubles; [F] is one row.
Status read_rows(const Tensor& x, const Forest& f, std::vector<double>& values, int64_t& rows,
                 int64_t& cols) {
  NXRT_RETURN_IF_ERROR(read_feature_rows(x, values, rows, cols));
  if (f.max_feature >= cols)
    return invalid_argument("the trees read feature ", f.max_feature, " but X has ", cols,
                            " features");
  return Status();
}

class RegressorKernel final : public Kernel {
 public:
  explicit RegressorKernel(Forest f) : f_(std::move(f)) {}
  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    std::vector<double> xs;
    int64_t rows, cols;
    NXRT_RETURN_IF_ERROR(read_rows(x, f_, xs, rows, cols));
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, Shape{rows, f_.n_targets}));
    std::vector<double> scores(static_cast<size_t>(f_.n_targets));
    std::vector<uint8_t> touched(static_cast<size_t>(f_.n_targets));
    for (int64_t r = 0; r < rows; ++r) {
      score_row(f_, xs.data() + r * cols, scores.data(), touched);
      post_transform(f_.post, scores.data(), f_.n_targets);
      for (int64_t t = 0; t < f_.n_targets; ++t) {
        const int64_t o = r * f_.n_targets + t;
        switch (y->dtype()) {
          case DataType::kDouble:
            y->data<double>()[o] = scores[size_t(t)];
            break;
          case DataType::kFloat16:
            y->data<Float16>()[o] = Float16(float(scores[size_t(t)]));
            break;
          default:
            y->data<float>()[o] = float(scores[size_t(t)]);
            break;
        }
      }
    }
    return Status();
  }

 private:
  Forest f_;
};

// Classifier scores follow the onnx reference: one score column per class label; a
// "binary" model (a single class id used) scores class 1 and derives class 0 from it.
class ClassifierKernel final : public Kernel {
 public:
  ClassifierKernel(Forest f, std::vector<int64_t> int_labels, std::vector<std::string> str_labels,
                   bool binary)
      : f_(std::move(f)),
        int_labels_(std::move(int_labels)),
        str_labels_(std::move(str_labels)),
        binary_(binary) {}
  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    std::vector<double> xs;
    int64_t rows, cols;
    NXRT_RETURN_IF_ERROR(read_rows(x, f_, xs, rows, cols));
    const int64_t n_classes = f_.n_targets;
    const int64_t width = binary_ ? std::max<int64_t>(n_classes, 2) : n_classes;
    NXRT_ASSIGN_OR_RETURN(Tensor * labels, ctx.output(0, Shape{rows}));
    NXRT_ASSIGN_OR_RETURN(Tensor * z, ctx.output(1, Shape{rows, width}));
    std::vector<double> scores(static_cast<size_t>(width));
    std::vector<uint8_t> touched(static_cast<size_t>(n_classes));
    for (int64_t r = 0; r < rows; ++r) {
      score_row(f_, xs.data() + r * cols, scores.data(), touched);
      if (binary_) {
        scores[1] = scores[0];
        const bool complement =
            f_.post == PostTransform::kNone || f_.post == PostTransform::kProbit;
        scores[0] = complement ? 1 - scores[1] : -scores[1];
      }
      post_transform(f_.post, scores.data(), width);
      const int64_t best = std::max_element(scores.begin(), scores.end()) - scores.begin();
      for (int64_t c = 0; c < width; ++c)
        z->data<float>()[r * width + c] = float(scores[size_t(c)]);
      if (!str_labels_.empty()) {
        labels->data<std::string>()[r] =
            str_labels_[size_t(std::min(best, int64_t(str_labels_.size()) - 1))];
      } else if (int_labels_.size() == 1) {
        labels->data<int64_t>()[r] = best == 1 ? int_labels_[0] : 0;  // single label {1}: 0/1
      } else {
        labels->data<int64_t>()[r] = int_labels_[size_t(best)];
      }
    }
    return Status();
  }

 private:
  Forest f_;
  std::vector<int64_t> int_labels_;
  std::vector<std::string> str_labels_;
  bool binary_;
};

// Reads a float list given either as `name` (floats) or `name_as_tensor`.
Status floats_or_tensor(AttrReader& attrs, const char* name, std::vector<double>& out) {
  const std::string tensor_name = std::string(name) + "_as_tensor";
  if (const Tensor* t = attrs.get_tensor(tensor_name.c_str())) {
    out.clear();
    switch (t->dtype()) {
      NXRT_CASE(kFloat, out.assign(t->data<T>(), t->data<T>() + t->numel()))
      NXRT_CASE(kDouble, out.assign(t->data<T>(), t->data<T>() + t->numel()))
      default:
        return invalid_graph(tensor_name, " must be float or double");
    }
    return Status();
  }
  for (float v : attrs.get_floats(name)) out.push_back(v);
  return Status();
}

Status tensor_to_doubles(const Tensor* t, const char* name, std::vector<double>& out) {
  if (!t) return invalid_graph("attribute '", name, "' is required");
  switch (t->dtype()) {
    NXRT_CASE(kFloat, out.assign(t->data<T>(), t->data<T>() + t->numel()))
    NXRT_CASE(kDouble, out.assign(t->data<T>(), t->data<T>() + t->numel()))
    NXRT_CASE(kFloat16,
              for (int64_t i = 0; i < t->numel(); ++i) out.push_back(float(t->data<T>()[i])))
    default:
      return invalid_graph(name, " has unsupported type ", dtype_name(t->dtype()));
  }
  return Status();
}

bool x_type_ok(DataType t, bool allow_int) {
  return t == DataType::kFloat || t == DataType::kDouble ||
         (allow_int ? (t == DataType::kInt64 || t == DataType::kInt32) : t == DataType::kFloat16);
}

// Builds the node table from the opset 1-3 layout: nodes named by (tree id, node id),
// leaf scores listed separately by (tree id, node id, target/class id, weight).
Status build_v3_forest(AttrReader& attrs, const char* prefix, Forest& f) {
  const std::vector<int64_t> tree_ids = attrs.get_ints("nodes_treeids");
  const std::vector<int64_t> node_ids = attrs.get_ints("nodes_nodeids");
  const std::vector<int64_t> features = attrs.get_ints("nodes_featureids");
  const std::vector<std::string> modes = attrs.get_strings("nodes_modes");
  const std::vector<int64_t> true_ids = attrs.get_ints("nodes_truenodeids");
  const std::vector<int64_t> false_ids = attrs.get_ints("nodes_falsenodeids");
  const std::vector<int64_t> missing = attrs.get_ints("nodes_missing_value_tracks_true");
  std::vector<double> values;
  NXRT_RETURN_IF_ERROR(floats_or_tensor(attrs, "nodes_values", values));
  const std::string p(prefix);
  const std::vector<int64_t> leaf_tree = attrs.get_ints((p + "_treeids").c_str());
  const std::vector<int64_t> leaf_node = attrs.get_ints((p + "_nodeids").c_str());
  const std::vector<int64_t> leaf_target = attrs.get_ints((p + "_ids").c_str());
  std::vector<double> leaf_weight;
  NXRT_RETURN_IF_ERROR(floats_or_tensor(attrs, (p + "_weights").c_str(), leaf_weight));
  NXRT_RETURN_IF_ERROR(attrs.status());

  const size_t n = tree_ids.size();
  for (size_t len :
       {node_ids.size(), features.size(), modes.size(), true_ids.size(), false_ids.size()})
    if (len != n) return invalid_graph("nodes_* attributes have different lengths");
  if (!values.empty() && values.size() != n)
    return invalid_graph("nodes_values has ", values.size(), " entries, expected ", n);
  if (!missing.empty() && missing.size() != n)
    return invalid_graph("nodes_missing_value_tracks_true has the wrong length");
  if (leaf_node.size() != leaf_tree.size() || leaf_target.size() != leaf_tree.size() ||
      leaf_weight.size() != leaf_tree.size())
    return invalid_graph(p, "_* attributes have different lengths");

  std::map<std::pair<int64_t, int64_t>, int32_t> index;
  std::map<int64_t, int32_t> roots;  // tree id -> first node, trees in id order
  for (size_t i = 0; i < n; ++i) {
    if (!index.emplace(std::make_pair(tree_ids[i], node_ids[i]), int32_t(i)).second)
      return invalid_graph("node (", tree_ids[i], ", ", node_ids[i], ") is listed twice");
    roots.emplace(tree_ids[i], int32_t(i));
  }
  static const std::map<std::string, Mode> kModes = {
      {"BRANCH_LEQ", Mode::kLeq}, {"BRANCH_LT", Mode::kLt}, {"BRANCH_GTE", Mode::kGte},
      {"BRANCH_GT", Mode::kGt},   {"BRANCH_EQ", Mode::kEq}, {"BRANCH_NEQ", Mode::kNeq},
      {"LEAF", Mode::kLeaf}};
  // leaf scores grouped by node
  std::vector<std::vector<std::pair<int64_t, double>>> leaf_scores(n);
  for (size_t k = 0; k < leaf_tree.size(); ++k) {
    auto it = index.find({leaf_tree[k], leaf_node[k]});
    if (it == index.end())
      return invalid_graph(p, " entry ", k, " names a node that does not exist");
    leaf_scores[size_t(it->second)].push_back({leaf_target[k], leaf_weight[k]});
  }
  f.nodes.resize(n);
  for (size_t i = 0; i < n; ++i) {
    FlatNode& node = f.nodes[i];
    auto m = kModes.find(modes[i]);
    if (m == kModes.end()) return invalid_graph("unknown node mode '", modes[i], "'");
    node.mode = m->second;
    node.feature = features[i];
    node.threshold = values.empty() ? 0 : values[i];
    node.missing_true = !missing.empty() && missing[i] != 0;
    if (node.mode == Mode::kLeaf) {
      node.first = uint32_t(f.targets.size());
      node.count = uint32_t(leaf_scores[i].size());
      f.targets.insert(f.targets.end(), leaf_scores[i].begin(), leaf_scores[i].end());
      continue;
    }
    if (node.feature < 0) return invalid_graph("node ", i, " has a negative feature id");
    f.max_feature = std::max(f.max_feature, node.feature);
    auto t = index.find({tree_ids[i], true_ids[i]});
    auto e = index.find({tree_ids[i], false_ids[i]});
    if (t == index.end() || e == index.end())
      return invalid_graph("node ", i, " has a child that does not exist");
    node.next_true = t->second;
    node.next_false = e->second;
  }
  for (const auto& [tree, root] : roots) f.roots.push_back(root);
  f.nan_follows_flag_only = true;
  NXRT_RETURN_IF_ERROR(floats_or_tensor(attrs, "base_values", f.base_values));
  return attrs.status();
}

}  // namespace

Expected<KernelPtr> create_tree_ensemble_regressor(KernelInit& init) {
  if (!x_type_ok(init.input_type(0), true)) return init.unsupported_type(0);
  AttrReader attrs(init.node);
  Forest f;
  f.n_targets = attrs.get_int("n_targets", 1);
  const std::string agg = attrs.get_string("aggregate_function", "SUM");
  auto post = parse_post(attrs.get_string("post_transform", "NONE"));
  Status st = build_v3_forest(attrs, "target", f);
  if (st.ok()) st = post.status();
  if (st.ok()) st = attrs.status();
  if (st.ok()) {
    f.post = *post;
    if (agg == "SUM")
      f.aggregate = Aggregate::kSum;
    else if (agg == "AVERAGE")
      f.aggregate = Aggregate::kAverage;
    else if (agg == "MIN")
      f.aggregate = Aggregate::kMin;
    else if (agg == "MAX")
      f.aggregate = Aggregate::kMax;
    else
      st = invalid_graph("unknown aggregate_function '", agg, "'");
  }
  if (st.ok() && f.n_targets < 1) st = invalid_graph("n_targets must be >= 1");
  if (st.ok() && !f.base_values.empty() && int64_t(f.base_values.size()) != f.n_targets)
    st = invalid_graph("base_values has ", f.base_values.size(), " entries, n_targets is ",
                       f.n_targets);
  if (st.ok()) st = validate_forest(f);
  if (!st.ok()) return std::move(st).with_context(node_context(init.node));
  init.output_types[0] = DataType::kFloat;
  return make_kernel<RegressorKernel>(std::move(f));
}

Expected<KernelPtr> create_tree_ensemble_classifier(KernelInit& init) {
  if (!x_type_ok(init.input_type(0), true)) return init.unsupported_type(0);
  AttrReader attrs(init.node);
  Forest f;
  std::vector<int64_t> int_labels = attrs.get_ints("classlabels_int64s");
  std::vector<std::string> str_labels = attrs.get_strings("classlabels_strings");
  auto post = parse_post(attrs.get_string("post_transform", "NONE"));
  Status st = build_v3_forest(attrs, "class", f);
  if (st.ok()) st = post.status();
  bool binary = false;
  if (st.ok()) {
    f.post = *post;
    f.aggregate = Aggregate::kSum;
    if (int_labels.empty() == str_labels.empty())
      st = invalid_graph("exactly one of classlabels_int64s and classlabels_strings must be set");
    f.n_targets = int64_t(std::max(int_labels.size(), str_labels.size()));
    int64_t first_id = f.targets.empty() ? 0 : f.targets[0].first;
    binary = std::all_of(f.targets.begin(), f.targets.end(),
                         [&](const auto& t) { return t.first == first_id; });
    if (st.ok() && binary && f.n_targets > 2)
      binary = false;  // one class id among many labels is just a sparse multi-class model
    if (st.ok() && f.n_targets == 1 && (str_labels.size() == 1 || int_labels[0] != 1))
      st = not_implemented("a single class label is only supported as classlabels_int64s = [1]");
  }
  if (st.ok() && !f.base_values.empty() && int64_t(f.base_values.size()) != f.n_targets)
    st = invalid_graph("base_values has ", f.base_values.size(), " entries but there are ",
                       f.n_targets, " classes");
  if (st.ok()) st = validate_forest(f);
  if (!st.ok()) return std::move(st).with_context(node_context(init.node));
  init.output_types[0] = str_labels.empty() ? DataType::kInt64 : DataType::kString;
  if (init.output_types.size() > 1) init.output_types[1] = DataType::kFloat;
  return make_kernel<ClassifierKernel>(std::move(f), std::move(int_labels), std::move(str_labels),
                                       binary);
}

Expected<KernelPtr> create_tree_ensemble(KernelInit& init) {
  const DataType xt = init.input_type(0);
  if (!x_type_ok(xt, false)) return init.unsupported_type(0);
  AttrReader attrs(init.node);
  Forest f;
  const std::vector<int64_t> features = attrs.get_ints("nodes_featureids");
  const std::vector<int64_t> true_ids = attrs.get_ints("nodes_truenodeids");
  const std::vector<int64_t> false_ids = attrs.get_ints("nodes_falsenodeids");
  const std::vector<int64_t> true_leaf = attrs.get_ints("nodes_trueleafs");
  const std::vector<int64_t> false_leaf = attrs.get_ints("nodes_falseleafs");
  const std::vector<int64_t> missing = attrs.get_ints("nodes_missing_value_tracks_true");
  const std::vector<int64_t> leaf_targets = attrs.get_ints("leaf_targetids");
  const std::vector<int64_t> roots = attrs.get_ints("tree_roots");
  const Tensor* modes_t = attrs.get_tensor("nodes_modes");
  const Tensor* splits_t = attrs.get_tensor("nodes_splits");
  const Tensor* weights_t = attrs.get_tensor("leaf_weights");
  const Tensor* members_t = attrs.get_tensor("membership_values");
  f.n_targets = attrs.get_int("n_targets", 1);
  const int64_t agg = attrs.get_int("aggregate_function", 1);
  const int64_t post = attrs.get_int("post_transform", 0);
  NXRT_RETURN_IF_ERROR(attrs.status());
  auto bad = [&](const auto&... msg) { return init.error(StatusCode::kInvalidGraph, msg...); };

  std::vector<double> splits, weights, members;
  Status st = tensor_to_doubles(splits_t, "nodes_splits", splits);
  if (st.ok()) st = tensor_to_doubles(weights_t, "leaf_weights", weights);
  if (st.ok() && members_t) st = tensor_to_doubles(members_t, "membership_values", members);
  if (!st.ok()) return std::move(st).with_context(node_context(init.node));
  if (!modes_t || modes_t->dtype() != DataType::kUint8)
    return bad("nodes_modes must be a uint8 tensor");
  const size_t n = features.size();
  for (size_t len : {true_ids.size(), false_ids.size(), true_leaf.size(), false_leaf.size(),
                     size_t(modes_t->numel()), splits.size()})
    if (len != n) return bad("nodes_* attributes have different lengths");
  if (!missing.empty() && missing.size() != n)
    return bad("nodes_missing_value_tracks_true has the wrong length");
  if (leaf_targets.size() != weights.size())
    return bad("leaf_targetids and leaf_weights differ in length");
  if (agg < 0 || agg > 3) return bad("aggregate_function ", agg, " is not one of 0..3");
  if (post < 0 || post > 4) return bad("post_transform ", post, " is not one of 0..4");
  if (f.n_targets < 1) return bad("n_targets must be >= 1");
  f.aggregate = Aggregate(agg);
  f.post = PostTransform(post);

  // Leaves go after the interior nodes; leaf i becomes node n + i.
  f.nodes.resize(n + leaf_targets.size());
  size_t member_pos = 0;
  const uint8_t* modes = modes_t->data<uint8_t>();
  for (size_t i = 0; i < n; ++i) {
    FlatNode& node = f.nodes[i];
    if (modes[i] > 6) return bad("node ", i, " has mode ", int(modes[i]), ", not one of 0..6");
    node.mode = Mode(modes[i]);
    node.feature = features[i];
    node.threshold = splits[i];
    node.missing_true = !missing.empty() && missing[i] != 0;
    if (node.feature < 0) return bad("node ", i, " has a negative feature id");
    f.max_feature = std::max(f.max_feature, node.feature);
    if (node.mode == Mode::kMember) {
      // this node's set: the next NaN-terminated run of membership_values
      node.first = uint32_t(f.members.size());
      while (member_pos < members.size() && !std::isnan(members[member_pos]))
        f.members.push_back(members[member_pos++]);
      if (member_pos >= members.size())
        return bad("membership_values has fewer sets than BRANCH_MEMBER nodes");
      ++member_pos;
      node.count = uint32_t(f.members.size() - node.first);
      std::sort(f.members.begin() + node.first, f.members.end());
    }
    auto child = [&](int64_t id, bool leaf) -> int64_t {
      const size_t limit = leaf ? leaf_targets.size() : n;
      if (id < 0 || size_t(id) >= limit) return -1;
      return leaf ? int64_t(n) + id : id;
    };
    const int64_t t = child(true_ids[i], true_leaf[i] != 0),
                  e = child(false_ids[i], false_leaf[i] != 0);
    if (t < 0 || e < 0) return bad("node ", i, " has a child out of range");
    node.next_true = int32_t(t);
    node.next_false = int32_t(e);
  }
  if (member_pos != members.size())
    return bad("membership_values has more sets than BRANCH_MEMBER nodes");
  for (size_t l = 0; l < leaf_targets.size(); ++l) {
    FlatNode& leaf = f.nodes[n + l];
    leaf.mode = Mode::kLeaf;
    leaf.first = uint32_t(f.targets.size());
    leaf.count = 1;
    f.targets.push_back({leaf_targets[l], weights[l]});
  }
  for (int64_t r : roots) {
    if (r < 0 || size_t(r) >= n) return bad("tree root ", r, " is out of range");
    f.roots.push_back(int32_t(r));
  }
  st = validate_forest(f);
  if (!st.ok()) return std::move(st).with_context(node_context(init.node));
  init.output_types[0] = xt;
  return make_kernel<RegressorKernel>(std::move(f));
}

}  // namespace nxrt::cpu
