// TfIdfVectorizer: counts the pool's n-grams (optionally with skips) in each row of
// tokens and weights the counts.
#include <algorithm>
#include <unordered_map>

#include "ep/cpu/kernels/common.h"

namespace nxrt::cpu {
namespace {

enum class Weighting { kTF, kIDF, kTFIDF };

// The pool's n-grams as a trie over token ids: an edge is (parent node, token). Strings
// are interned to ids at prepare, so one int64 walk serves both pool kinds.
class NgramTrie {
 public:
  NgramTrie() : nodes_(1) {}
  int32_t child(int32_t parent, int64_t token) const {
    auto it = edges_.find(Edge{parent, token});
    return it == edges_.end() ? -1 : it->second;
  }
  int32_t add_child(int32_t parent, int64_t token) {
    auto [it, fresh] = edges_.try_emplace(Edge{parent, token}, int32_t(nodes_.size()));
    if (fresh) {
      nodes_.push_back(Node{});
      nodes_[size_t(parent)].has_children = true;
    }
    return it->second;
  }
  bool has_children(int32_t n) const { return nodes_[size_t(n)].has_children; }
  int64_t column(int32_t n) const { return nodes_[size_t(n)].column; }
  void set_column(int32_t n, int64_t c) { nodes_[size_t(n)].column = c; }
  bool empty() const { return edges_.empty(); }

 private:
  struct Node {
    int64_t column = -1;  // output column when the path to here is a counted n-gram
    bool has_children = false;
  };
  struct Edge {
    int32_t parent;
    int64_t token;
    bool operator==(const Edge& o) const { return parent == o.parent && token == o.token; }
  };
  struct EdgeHash {
    size_t operator()(const Edge& e) const {
      return std::hash<int64_t>()(e.token * 0x9E3779B97F4A7C15ull + uint64_t(e.parent));
    }
  };
  std::vector<Node> nodes_;
  std::unordered_map<Edge, int32_t, EdgeHash> edges_;
};

struct TfIdfConfig {
  Weighting weighting = Weighting::kTF;
  int64_t min_gram = 1, max_gram = 1, max_skip = 0;
  int64_t output_size = 0;
  std::vector<float> weights;  // per output column, or empty
  NgramTrie trie;
  bool string_pool = false;
  std::unordered_map<std::string, int64_t> string_ids;
};

class TfIdfKernel final : public Kernel {
 public:
  explicit TfIdfKernel(TfIdfConfig cfg) : cfg_(std::move(cfg)) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    const Shape& s = x.shape();
    int64_t rows, cols;
    Shape out_shape;
    if (s.size() <= 1) {
      rows = 1;
      cols = x.numel();
      out_shape = Shape{cfg_.output_size};
    } else if (s.size() == 2) {
      rows = s[0];
      cols = s[1];
      out_shape = Shape{rows, cfg_.output_size};
    } else {
      return invalid_argument("input must have shape [C] or [N, C], got ", s.to_string());
    }
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, out_shape));
    float* out = y->data<float>();
    std::fill(out, out + y->numel(), 0.0f);
    if (x.numel() == 0 || cfg_.trie.empty()) return Status();

    std::vector<int64_t> tokens(static_cast<size_t>(x.numel()));
    NXRT_RETURN_IF_ERROR(tokenize(x, tokens));
    // Counts are kept in the float output (exact up to 2^24 hits per column).
    for (int64_t r = 0; r < rows; ++r)
      count_row(tokens.data() + r * cols, cols, out + r * cfg_.output_size);
    apply_weighting(out, rows);
    return Status();
  }

 private:
  Status tokenize(const Tensor& x, std::vector<int64_t>& tokens) const {
    const int64_t n = x.numel();
    switch (x.dtype()) {
      case DataType::kString: {
        if (!cfg_.string_pool) return invalid_argument("string input but the pool holds integers");
        const std::string* in = x.data<std::string>();
        for (int64_t i = 0; i < n; ++i) {
          auto it = cfg_.string_ids.find(in[i]);
          tokens[size_t(i)] = it == cfg_.string_ids.end() ? -1 : it->second;
        }
        return Status();
      }
      case DataType::kInt32:
      case DataType::kInt64: {
        if (cfg_.string_pool) return invalid_argument("integer input but the pool holds strings");
        if (x.dtype() == DataType::kInt32)
          std::copy(x.data<int32_t>(), x.data<int32_t>() + n, tokens.begin());
        else
          std::copy(x.data<int64_t>(), x.data<int64_t>() + n, tokens.begin());
        return Status();
      }
      default:
        return invalid_argument("unsupported input type ", dtype_name(x.dtype()));
    }
  }

  // For each skip distance, every start position walks the trie as far as the row
  // matches. Unigrams do not depend on the skip, so they are counted in the first pass only.
  void count_row(const int64_t* row, int64_t cols, float* counts) const {
    const NgramTrie& trie = cfg_.trie;
    int64_t first_size = cfg_.min_gram;
    for (int64_t skip = 1; skip <= cfg_.max_skip + 1; ++skip) {
      for (int64_t start = 0; start < cols; ++start) {
        if (start + skip * (first_size - 1) >= cols) break;
        int32_t node = 0;
        int64_t item = start;
        for (int64_t size = 1; size <= cfg_.max_gram && item < cols && trie.has_children(node);
             ++size) {
          node = trie.child(node, row[item]);
          if (node < 0) break;
          if (size >= first_size && trie.column(node) >= 0) counts[trie.column(node)] += 1.0f;
          item += skip;
        }
      }
      if (first_size == 1) {
        if (++first_size > cfg_.max_gram) break;
      }
    }
  }

  void apply_weighting(float* out, int64_t rows) const {
    const int64_t width = cfg_.output_size;
    const bool weighted = !cfg_.weights.empty();
    for (int64_t r = 0; r < rows; ++r) {
      float* row = out + r * width;
      for (int64_t c = 0; c < width; ++c) {
        const float w = weighted ? cfg_.weights[size_t(c)] : 1.0f;
        switch (cfg_.weighting) {
          case Weighting::kTF:
            break;
          case Weighting::kIDF:
            row[c] = row[c] > 0 ? w : 0.0f;
            break;
          case Weighting::kTFIDF:
            row[c] *= w;
            break;
        }
      }
    }
  }

  TfIdfConfig cfg_;
};

}  // namespace

Expected<KernelPtr> create_tfidf_vectorizer(KernelInit& init) {
  const DataType xt = init.input_type(0);
  if (xt != DataType::kString && xt != DataType::kInt32 && xt != DataType::kInt64)
    return init.unsupported_type(0);
  AttrReader attrs(init.node);
  TfIdfConfig cfg;
  const std::string mode = attrs.get_string("mode", "");
  cfg.min_gram = attrs.require_int("min_gram_length");
  cfg.max_gram = attrs.require_int("max_gram_length");
  cfg.max_skip = attrs.require_int("max_skip_count");
  const std::vector<int64_t> counts = attrs.require_ints("ngram_counts");
  const std::vector<int64_t> indexes = attrs.require_ints("ngram_indexes");
  const std::vector<int64_t> pool_ints = attrs.get_ints("pool_int64s");
  const std::vector<std::string> pool_strings = attrs.get_strings("pool_strings");
  cfg.weights = attrs.get_floats("weights");
  NXRT_RETURN_IF_ERROR(attrs.status());
  auto bad = [&](const auto&... msg) { return init.error(StatusCode::kInvalidGraph, msg...); };

  if (mode == "TF")
    cfg.weighting = Weighting::kTF;
  else if (mode == "IDF")
    cfg.weighting = Weighting::kIDF;
  else if (mode == "TFIDF")
    cfg.weighting = Weighting::kTFIDF;
  else
    return bad("mode must be TF, IDF or TFIDF, got '", mode, "'");
  if (cfg.min_gram < 1 || cfg.max_gram < cfg.min_gram)
    return bad("need 1 <= min_gram_length <= max_gram_length, got ", cfg.min_gram, " and ",
               cfg.max_gram);
  if (cfg.max_skip < 0) return bad("max_skip_count must be >= 0, got ", cfg.max_skip);
  if (!pool_ints.empty() && !pool_strings.empty())
    return bad("only one of pool_int64s and pool_strings may be set");
  cfg.string_pool = !pool_strings.empty();
  if (cfg.string_pool ? xt != DataType::kString : xt == DataType::kString)
    return bad("input type ", dtype_name(xt), " does not match the ",
               cfg.string_pool ? "string" : "int64", " pool");
  const int64_t pool_size = int64_t(cfg.string_pool ? pool_strings.size() : pool_ints.size());

  std::vector<int64_t> pool(static_cast<size_t>(pool_size));
  for (int64_t i = 0; i < pool_size; ++i) {
    if (cfg.string_pool) {
      auto [it, fresh] =
          cfg.string_ids.try_emplace(pool_strings[size_t(i)], int64_t(cfg.string_ids.size()));
      pool[size_t(i)] = it->second;
    } else {
      pool[size_t(i)] = pool_ints[size_t(i)];
    }
  }

  int64_t max_index = -1;
  for (int64_t v : indexes) {
    if (v < 0) return bad("ngram_indexes has a negative entry ", v);
    max_index = std::max(max_index, v);
  }
  cfg.output_size = max_index + 1;
  if (!cfg.weights.empty() && int64_t(cfg.weights.size()) < cfg.output_size)
    return bad("weights has ", cfg.weights.size(), " entries but the output has ", cfg.output_size,
               " columns");

  // ngram_counts[k] is where the (k+1)-grams start in the pool; n-grams are numbered in
  // pool order and ngram_indexes maps that number to an output column.
  size_t ngram_number = 0;
  for (size_t k = 0; k < counts.size(); ++k) {
    const int64_t n = int64_t(k) + 1;
    const int64_t begin = counts[k];
    const int64_t end = k + 1 < counts.size() ? counts[k + 1] : pool_size;
    if (begin < 0 || end < begin || end > pool_size)
      return bad("ngram_counts ", begin, "..", end, " is outside the pool of ", pool_size);
    if ((end - begin) % n != 0)
      return bad("the ", n, "-gram section of the pool has ", end - begin,
                 " items, not a multiple of ", n);
    const bool wanted = n >= cfg.min_gram && n <= cfg.max_gram;
    for (int64_t g = begin; g < end; g += n, ++ngram_number) {
      if (!wanted) continue;
      if (ngram_number >= indexes.size())
        return bad("ngram_indexes has ", indexes.size(), " entries but the pool has more n-grams");
      int32_t node = 0;
      for (int64_t t = 0; t < n; ++t) node = cfg.trie.add_child(node, pool[size_t(g + t)]);
      cfg.trie.set_column(node, indexes[ngram_number]);
    }
  }
  init.output_types[0] = DataType::kFloat;
  return make_kernel<TfIdfKernel>(std::move(cfg));
}

}  // namespace nxrt::cpu
