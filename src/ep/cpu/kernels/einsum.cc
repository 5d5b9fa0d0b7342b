// Einsum: the equation is parsed at prepare; at run time each operand first has its
// diagonals taken (repeated labels) and its private labels summed out, then operands are
// folded left to right, each pair as a batched GEMM over [batch, kept, contracted] layouts
// built by strided copies; the result is finally permuted into the output's label order.
#include <algorithm>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "ep/cpu/gemm/gemm.h"
#include "ep/cpu/kernels/common.h"

namespace nxrt::cpu {
namespace {

// Labels: letters are 0..51; the dims an ellipsis stands for are kEllipsis + j, aligned
// to the right across operands as numpy broadcasting does.
constexpr int kEllipsis = 52;

struct ParsedTerm {
  std::vector<int> letters;  // letter labels, with -1 where the ellipsis stands
  bool has_ellipsis = false;
};

struct Equation {
  std::vector<ParsedTerm> inputs;
  ParsedTerm output;
  bool explicit_output = false;
};

int letter_id(char c) {
  if (c >= 'a' && c <= 'z') return c - 'a';
  if (c >= 'A' && c <= 'Z') return 26 + (c - 'A');
  return -1;
}

Status parse_term(const std::string& s, ParsedTerm& t) {
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '.') {
      if (t.has_ellipsis || s.compare(i, 3, "...") != 0)
        return invalid_graph("bad ellipsis in einsum term '", s, "'");
      t.has_ellipsis = true;
      t.letters.push_back(-1);
      i += 2;
      continue;
    }
    const int id = letter_id(s[i]);
    if (id < 0) return invalid_graph("einsum term '", s, "' has invalid character '", s[i], "'");
    t.letters.push_back(id);
  }
  return Status();
}

Status parse_equation(std::string eq, Equation& out) {
  eq.erase(std::remove(eq.begin(), eq.end(), ' '), eq.end());
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  size_t start = 0;
  while (true) {
    const size_t comma = lhs.find(',', start);
    ParsedTerm t;
    NXRT_RETURN_IF_ERROR(parse_term(lhs.substr(start, comma - start), t));
    out.inputs.push_back(std::move(t));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (arrow != std::string::npos) {
    out.explicit_output = true;
    NXRT_RETURN_IF_ERROR(parse_term(eq.substr(arrow + 2), out.output));
    std::set<int> seen;
    for (int l : out.output.letters)
      if (l >= 0 && !seen.insert(l).second) return invalid_graph("einsum output repeats a label");
  }
  return Status();
}

template <typename W>
struct Term {
  std::vector<int> labels;
  std::vector<int64_t> dims;
  std::vector<W> data;
};

// Contiguous copy of a strided view (stride 0 broadcasts).
template <typename W>
std::vector<W> gather(const W* src, const std::vector<int64_t>& dims,
                      const std::vector<int64_t>& strides) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::vector<W> out(static_cast<size_t>(n));
  if (n == 0) return out;
  const size_t r = dims.size();
  if (r == 0) {
    out[0] = src[0];
    return out;
  }
  std::vector<int64_t> idx(r, 0);
  const int64_t inner = dims[r - 1], step = strides[r - 1];
  int64_t off = 0;
  for (int64_t o = 0; o < n; o += inner) {
    for (int64_t i = 0; i < inner; ++i) out[size_t(o + i)] = src[off + i * step];
    for (size_t d = r - 1; d-- > 0;) {
      off += strides[d];
      if (++idx[d] < dims[d]) break;
      off -= strides[d] * dims[d];
      idx[d] = 0;
    }
  }
  return out;
}

std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (size_t d = dims.size(); d-- > 1;) s[d - 1] = s[d] * dims[d];
  return s;
}

// Takes diagonals of repeated labels and sums out labels `keep` rejects; the result has
// unique labels in first-appearance order.
template <typename W, typename Keep>
Status simplify(Term<W>& t, Keep keep) {
  const std::vector<int64_t> strides = contiguous_strides(t.dims);
  std::vector<int> kept, summed;
  std::vector<int64_t> kd, ks, sd, ss;
  for (size_t i = 0; i < t.labels.size(); ++i) {
    const int l = t.labels[i];
    if (std::find(t.labels.begin(), t.labels.begin() + long(i), l) != t.labels.begin() + long(i))
      continue;
    int64_t stride = 0;
    for (size_t j = i; j < t.labels.size(); ++j)
      if (t.labels[j] == l) {
        if (t.dims[j] != t.dims[i])
          return invalid_argument("einsum label repeated with sizes ", t.dims[i], " and ",
                                  t.dims[j]);
        stride += strides[j];
      }
    if (keep(l)) {
      kept.push_back(l);
      kd.push_back(t.dims[i]);
      ks.push_back(stride);
    } else {
      summed.push_back(l);
      sd.push_back(t.dims[i]);
      ss.push_back(stride);
    }
  }
  if (kept.size() == t.labels.size()) return Status();  // nothing to do
  std::vector<int64_t> dims = kd, st = ks;
  dims.insert(dims.end(), sd.begin(), sd.end());
  st.insert(st.end(), ss.begin(), ss.end());
  std::vector<W> view = gather(t.data.data(), dims, st);
  int64_t outer = 1, inner = 1;
  for (int64_t d : kd) outer *= d;
  for (int64_t d : sd) inner *= d;
  std::vector<W> data(static_cast<size_t>(outer), W(0));
  for (int64_t o = 0; o < outer; ++o) {
    W acc = W(0);
    const W* p = view.data() + o * inner;
    for (int64_t i = 0; i < inner; ++i) acc = W(acc + p[i]);
    data[size_t(o)] = acc;
  }
  t.labels = kept;
  t.dims = kd;
  t.data = std::move(data);
  return Status();
}

template <typename W>
void gemm_any(int64_t M, int64_t N, int64_t K, const W* A, const W* B, W* C) {
  if constexpr (std::is_same_v<W, float>)
    gemm::sgemm(false, false, M, N, K, 1.0f, A, K, B, N, 0.0f, C, N);
  else
    gemm::gemm_simple<W>(false, false, M, N, K, W(1), A, K, B, N, W(0), C, N);
}

// a * b summed over shared labels not in `keep`.
template <typename W>
Status contract(Term<W>& a, Term<W>& b, const std::set<int>& keep, Term<W>& out) {
  auto in = [](const Term<W>& t, int l) {
    return std::find(t.labels.begin(), t.labels.end(), l) != t.labels.end();
  };
  NXRT_RETURN_IF_ERROR(simplify(a, [&](int l) { return keep.count(l) || in(b, l); }));
  NXRT_RETURN_IF_ERROR(simplify(b, [&](int l) { return keep.count(l) || in(a, l); }));
  std::vector<int> batch, a_only, sum, b_only;
  for (int l : a.labels) {
    if (!in(b, l))
      a_only.push_back(l);
    else if (keep.count(l))
      batch.push_back(l);
    else
      sum.push_back(l);
  }
  for (int l : b.labels)
    if (!in(a, l)) b_only.push_back(l);
  auto dim_of = [](const Term<W>& t, int l, int64_t& size, int64_t& stride) {
    const std::vector<int64_t> st = contiguous_strides(t.dims);
    for (size_t i = 0; i < t.labels.size(); ++i)
      if (t.labels[i] == l) {
        size = t.dims[i];
        stride = st[i];
        return;
      }
    size = 1;
    stride = 0;
  };
  std::vector<int64_t> sizes;  // per label in batch, a_only, sum, b_only
  auto joint = [&](int l, int64_t& sz) -> Status {
    int64_t sa, ta, sb, tb;
    dim_of(a, l, sa, ta);
    dim_of(b, l, sb, tb);
    if (sa != sb && sa != 1 && sb != 1)
      return invalid_argument("einsum label has sizes ", sa, " and ", sb);
    sz = std::max(sa, sb);
    if (sa == 0 || sb == 0) sz = 0;
    return Status();
  };
  // Layouts: A as [batch, a_only, sum], B as [batch, sum, b_only].
  std::vector<int64_t> ad, as, bd, bs;
  auto push = [&](const Term<W>& t, int l, int64_t full, std::vector<int64_t>& d,
                  std::vector<int64_t>& s) {
    int64_t size, stride;
    dim_of(t, l, size, stride);
    d.push_back(full);
    s.push_back(size == 1 ? 0 : stride);
  };
  int64_t nb = 1, M = 1, K = 1, N = 1;
  std::vector<int64_t> out_dims;
  for (int l : batch) {
    int64_t sz = 0;
    NXRT_RETURN_IF_ERROR(joint(l, sz));
    push(a, l, sz, ad, as);
    push(b, l, sz, bd, bs);
    nb *= sz;
    out_dims.push_back(sz);
  }
  for (int l : a_only) {
    int64_t sz = 0, st = 0;
    dim_of(a, l, sz, st);
    push(a, l, sz, ad, as);
    M *= sz;
    out_dims.push_back(sz);
  }
  for (int l : sum) {
    int64_t sz = 0;
    NXRT_RETURN_IF_ERROR(joint(l, sz));
    push(a, l, sz, ad, as);
    push(b, l, sz, bd, bs);
    K *= sz;
  }
  for (int l : b_only) {
    int64_t sz = 0, st = 0;
    dim_of(b, l, sz, st);
    push(b, l, sz, bd, bs);
    N *= sz;
    out_dims.push_back(sz);
  }
  const std::vector<W> pa = gather(a.data.data(), ad, as);
  const std::vector<W> pb = gather(b.data.data(), bd, bs);
  out.labels = batch;
  out.labels.insert(out.labels.end(), a_only.begin(), a_only.end());
  out.labels.insert(out.labels.end(), b_only.begin(), b_only.end());
  out.dims = out_dims;
  out.data.assign(static_cast<size_t>(nb * M * N), W(0));
  if (M * N == 0) return Status();
  for (int64_t i = 0; i < nb; ++i)
    gemm_any<W>(M, N, K, pa.data() + i * M * K, pb.data() + i * K * N, out.data.data() + i * M * N);
  return Status();
}

template <typename T>
constexpr bool kHalf = std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>;

class EinsumKernel final : public Kernel {
 public:
  explicit EinsumKernel(Equation eq) : eq_(std::move(eq)) {}

  Status compute(KernelContext& ctx) const override {
    if (ctx.num_inputs() != eq_.inputs.size())
      return invalid_argument("einsum equation has ", eq_.inputs.size(), " operands but ",
                              ctx.num_inputs(), " inputs were given");
    switch (ctx.input(0)->dtype()) {
      NXRT_CASES_NUMERIC(return run<T>(ctx))
      default:
        break;
    }
    return not_implemented("Einsum of ", tensor_type_name(ctx.input(0)->dtype()));
  }

 private:
  template <typename T>
  Status run(KernelContext& ctx) const {
    using W = std::conditional_t<kHalf<T>, float, T>;
    const size_t n = eq_.inputs.size();
    // Label every input dim; the ellipsis spans rank - letters dims.
    size_t ell = 0;
    for (size_t i = 0; i < n; ++i) {
      const ParsedTerm& p = eq_.inputs[i];
      const size_t letters = p.letters.size() - (p.has_ellipsis ? 1 : 0);
      const size_t rank = ctx.input(i)->rank();
      if (rank < letters || (!p.has_ellipsis && rank != letters))
        return invalid_argument("einsum operand ", i, " has rank ", rank, " but its term has ",
                                letters, " labels");
      if (p.has_ellipsis) ell = std::max(ell, rank - letters);
    }
    std::vector<Term<W>> terms(n);
    for (size_t i = 0; i < n; ++i) {
      const Tensor& x = *ctx.input(i);
      const ParsedTerm& p = eq_.inputs[i];
      const size_t e = x.rank() - (p.letters.size() - (p.has_ellipsis ? 1 : 0));
      Term<W>& t = terms[i];
      for (int l : p.letters) {
        if (l >= 0) {
          t.labels.push_back(l);
          continue;
        }
        for (size_t j = 0; j < e; ++j) t.labels.push_back(kEllipsis + int(ell - e + j));
      }
      t.dims = x.shape().to_vector();
      t.data.resize(size_t(x.numel()));
      const T* src = x.data<T>();
      for (size_t k = 0; k < t.data.size(); ++k) t.data[k] = W(src[k]);
    }
    // Output labels: explicit, or (implicit) the ellipsis then letters used exactly once.
    std::vector<int> out_labels;
    if (eq_.explicit_output) {
      for (int l : eq_.output.letters) {
        if (l >= 0) {
          out_labels.push_back(l);
          continue;
        }
        for (size_t j = 0; j < ell; ++j) out_labels.push_back(kEllipsis + int(j));
      }
    } else {
      for (size_t j = 0; j < ell; ++j) out_labels.push_back(kEllipsis + int(j));
      std::vector<int> count(52, 0);
      for (const ParsedTerm& p : eq_.inputs)
        for (int l : p.letters)
          if (l >= 0) ++count[size_t(l)];
      // ASCII order: uppercase (26..51) before lowercase (0..25).
      for (int l = 26; l < 52; ++l)
        if (count[size_t(l)] == 1) out_labels.push_back(l);
      for (int l = 0; l < 26; ++l)
        if (count[size_t(l)] == 1) out_labels.push_back(l);
    }
    for (int l : out_labels) {
      bool found = false;
      for (const Term<W>& t : terms)
        found |= std::find(t.labels.begin(), t.labels.end(), l) != t.labels.end();
      if (!found) return invalid_argument("einsum output label does not appear in any input");
    }
    const std::set<int> out_set(out_labels.begin(), out_labels.end());
    // Labels still needed after operand i: those of later operands and the output.
    auto needed_after = [&](size_t i) {
      std::set<int> s = out_set;
      for (size_t j = i + 1; j < n; ++j) s.insert(terms[j].labels.begin(), terms[j].labels.end());
      return s;
    };
    Term<W> acc = std::move(terms[0]);
    for (size_t i = 1; i < n; ++i) {
      Term<W> next;
      NXRT_RETURN_IF_ERROR(contract(acc, terms[i], needed_after(i), next));
      acc = std::move(next);
    }
    // Dims of the ellipsis missing from an explicit output are summed here too.
    NXRT_RETURN_IF_ERROR(simplify(acc, [&](int l) { return out_set.count(l) > 0; }));
    // Permute into output order.
    const std::vector<int64_t> st = contiguous_strides(acc.dims);
    std::vector<int64_t> dims, strides;
    for (int l : out_labels) {
      const size_t pos =
          size_t(std::find(acc.labels.begin(), acc.labels.end(), l) - acc.labels.begin());
      dims.push_back(acc.dims[pos]);
      strides.push_back(st[pos]);
    }
    const std::vector<W> result = gather(acc.data.data(), dims, strides);
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, Shape(dims)));
    T* py = y->data<T>();
    for (size_t k = 0; k < result.size(); ++k) py[k] = T(result[k]);
    return Status();
  }

  Equation eq_;
};

}  // namespace

Expected<KernelPtr> create_einsum(KernelInit& init) {
  AttrReader attrs(init.node);
  const std::string equation = attrs.get_string("equation");
  NXRT_RETURN_IF_ERROR(attrs.status());
  Equation eq;
  Status st = parse_equation(equation, eq);
  if (!st.ok()) return init.error(st.code(), st.message());
  if (eq.inputs.size() != init.num_inputs())
    return init.error(StatusCode::kInvalidGraph, "equation '", equation, "' has ", eq.inputs.size(),
                      " operands but the node has ", init.num_inputs(), " inputs");
  const DataType t = init.input_type(0);
  if (!is_float_type(t) && !is_integer_type(t)) return init.unsupported_type(0);
  for (size_t i = 1; i < init.num_inputs(); ++i)
    if (init.input_type(i) != t)
      return init.error(StatusCode::kInvalidGraph, "input ", i, " has type ",
                        tensor_type_name(init.input_type(i)), ", expected ", tensor_type_name(t));
  init.set_all_outputs(t);
  return make_kernel<EinsumKernel>(std::move(eq));
}

}  // namespace nxrt::cpu
