// ai.onnx.ml SVMClassifier and SVMRegressor (libsvm's models, as skl2onnx converts
// scikit-learn's SVC and SVR). Per row, the kernel K(x, sv) against every support vector;
// a classifier then takes libsvm's one-against-one decisions (one per pair of classes,
// rho[pair] + the two classes' coefficient-weighted kernels), votes, and, with prob_a and
// prob_b, couples the pairs' sigmoid probabilities into class probabilities (libsvm's
// iterative method). Without support vectors the coefficients are linear weights.
// Doubles throughout.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "ep/cpu/kernels/common.h"
#include "ep/cpu/kernels/ml_common.h"

namespace nxrt::cpu {
namespace {

enum class SvmKernel { kLinear, kPoly, kRbf, kSigmoid };

struct SvmParams {
  SvmKernel kernel = SvmKernel::kLinear;
  double gamma = 0, coef0 = 0;
  int degree = 0;
  std::vector<double> support;  // vectors x features
  int64_t vectors = 0, features = 0;

  double apply(const double* x, const double* v) const {
    double s = 0;
    if (kernel == SvmKernel::kRbf) {
      for (int64_t f = 0; f < features; ++f) s += (x[f] - v[f]) * (x[f] - v[f]);
      return std::exp(-gamma * s);
    }
    for (int64_t f = 0; f < features; ++f) s += x[f] * v[f];
    if (kernel == SvmKernel::kPoly) return std::pow(s * gamma + coef0, degree);
    if (kernel == SvmKernel::kSigmoid) return std::tanh(s * gamma + coef0);
    return s;
  }
};

std::vector<double> doubles(const std::vector<float>& v) { return {v.begin(), v.end()}; }

Status read_svm(KernelInit& init, AttrReader& attrs, SvmParams& p) {
  const std::string kernel = attrs.get_string("kernel_type", "LINEAR");
  const std::vector<float> params = attrs.get_floats("kernel_params");
  p.support = doubles(attrs.get_floats("support_vectors"));
  NXRT_RETURN_IF_ERROR(attrs.status());
  if (kernel == "LINEAR")
    p.kernel = SvmKernel::kLinear;
  else if (kernel == "POLY")
    p.kernel = SvmKernel::kPoly;
  else if (kernel == "RBF")
    p.kernel = SvmKernel::kRbf;
  else if (kernel == "SIGMOID")
    p.kernel = SvmKernel::kSigmoid;
  else
    return init.error(StatusCode::kInvalidGraph, "kernel_type '", kernel,
                      "' is not LINEAR, POLY, RBF or SIGMOID");
  if (!params.empty()) {
    if (params.size() != 3)
      return init.error(StatusCode::kInvalidGraph,
                        "kernel_params must be [gamma, coef0, degree], got ", params.size(),
                        " values");
    p.gamma = params[0];
    p.coef0 = params[1];
    p.degree = int(params[2]);
  }
  return Status();
}

// X as rows of doubles with `features` columns.
Status read_rows(const Tensor& x, int64_t features, std::vector<double>& values, int64_t& rows) {
  int64_t cols = 0;
  NXRT_RETURN_IF_ERROR(read_feature_rows(x, values, rows, cols));
  if (features > 0 && cols != features)
    return invalid_argument("X has shape ", x.shape().to_string(), "; expected [N, ", features,
                            "]");
  return Status();
}

// libsvm's multiclass_probability: class probabilities from the pairwise ones r[i][j].
std::vector<double> couple(int64_t k, const std::vector<double>& r) {
  const size_t n = static_cast<size_t>(k);
  std::vector<double> q(n * n), qp(n), p(n, 1.0 / double(k));
  for (int64_t t = 0; t < k; ++t) {
    q[size_t(t * k + t)] = 0;
    for (int64_t j = 0; j < t; ++j) {
      q[size_t(t * k + t)] += r[size_t(j * k + t)] * r[size_t(j * k + t)];
      q[size_t(t * k + j)] = q[size_t(j * k + t)];
    }
    for (int64_t j = t + 1; j < k; ++j) {
      q[size_t(t * k + t)] += r[size_t(j * k + t)] * r[size_t(j * k + t)];
      q[size_t(t * k + j)] = -r[size_t(j * k + t)] * r[size_t(t * k + j)];
    }
  }
  const double eps = 0.005 / double(k);
  for (int64_t iter = 0; iter < std::max<int64_t>(100, k); ++iter) {
    double pqp = 0;
    for (int64_t t = 0; t < k; ++t) {
      qp[size_t(t)] = 0;
      for (int64_t j = 0; j < k; ++j) qp[size_t(t)] += q[size_t(t * k + j)] * p[size_t(j)];
      pqp += p[size_t(t)] * qp[size_t(t)];
    }
    double max_error = 0;
    for (int64_t t = 0; t < k; ++t) max_error = std::max(max_error, std::abs(qp[size_t(t)] - pqp));
    if (max_error < eps) break;
    for (int64_t t = 0; t < k; ++t) {
      const double diff = (-qp[size_t(t)] + pqp) / q[size_t(t * k + t)];
      p[size_t(t)] += diff;
      pqp = (pqp + diff * (diff * q[size_t(t * k + t)] + 2 * qp[size_t(t)])) / (1 + diff) /
            (1 + diff);
      for (int64_t j = 0; j < k; ++j) {
        qp[size_t(j)] = (qp[size_t(j)] + diff * q[size_t(t * k + j)]) / (1 + diff);
        p[size_t(j)] /= 1 + diff;
      }
    }
  }
  return p;
}

class SvmClassifierKernel final : public Kernel {
 public:
  SvmClassifierKernel(SvmParams p, std::vector<int64_t> per_class, std::vector<double> coefs,
                      std::vector<double> rho, std::vector<double> prob_a,
                      std::vector<double> prob_b, PostTransform post, std::vector<int64_t> ints,
                      std::vector<std::string> strings)
      : p_(std::move(p)),
        per_class_(std::move(per_class)),
        coefs_(std::move(coefs)),
        rho_(std::move(rho)),
        prob_a_(std::move(prob_a)),
        prob_b_(std::move(prob_b)),
        post_(post),
        ints_(std::move(ints)),
        strings_(std::move(strings)) {
    classes_ = int64_t(std::max<size_t>({ints_.size(), strings_.size(), 1}));
    for (int64_t c : per_class_) {
      start_.push_back(p_.vectors);
      p_.vectors += c;
    }
    if (p_.vectors > 0)
      p_.features = int64_t(p_.support.size()) / p_.vectors;
    else
      p_.features = int64_t(coefs_.size()) / classes_;
  }

  Status compute(KernelContext& ctx) const override {
    std::vector<double> xs;
    int64_t rows = 0;
    NXRT_RETURN_IF_ERROR(read_rows(*ctx.input(0), p_.features, xs, rows));
    const int64_t k = classes_, pairs = k * (k - 1) / 2;
    const bool svc = p_.vectors > 0, proba = svc && !prob_a_.empty();
    // One score per class (linear, probabilities) or per pair (decision values); a binary
    // decision gets its second column below.
    const int64_t raw_width = !svc || proba ? k : pairs;
    const int64_t width = raw_width == 1 ? 2 : raw_width;
    NXRT_ASSIGN_OR_RETURN(Tensor * labels, ctx.output(0, Shape{rows}));
    NXRT_ASSIGN_OR_RETURN(Tensor * z, ctx.output(1, Shape{rows, width}));
    std::vector<double> kernels(static_cast<size_t>(p_.vectors)), scores;
    std::vector<double> votes(static_cast<size_t>(k)), r(static_cast<size_t>(k * k));
    for (int64_t n = 0; n < rows; ++n) {
      const double* x = xs.data() + n * p_.features;
      scores.clear();
      std::fill(votes.begin(), votes.end(), 0.0);
      if (svc) {
        for (int64_t j = 0; j < p_.vectors; ++j)
          kernels[size_t(j)] = p_.apply(x, p_.support.data() + j * p_.features);
        for (int64_t i = 0, e = 0; i < k; ++i)
          for (int64_t j = i + 1; j < k; ++j, ++e) {
            double s = rho_[size_t(e)];
            for (int64_t v = 0; v < per_class_[size_t(i)]; ++v)
              s += coefs_[size_t((j - 1) * p_.vectors + start_[size_t(i)] + v)] *
                   kernels[size_t(start_[size_t(i)] + v)];
            for (int64_t v = 0; v < per_class_[size_t(j)]; ++v)
              s += coefs_[size_t(i * p_.vectors + start_[size_t(j)] + v)] *
                   kernels[size_t(start_[size_t(j)] + v)];
            scores.push_back(s);
            ++votes[size_t(s > 0 ? i : j)];
          }
      } else {
        for (int64_t c = 0; c < k; ++c) {
          double s = rho_.empty() ? 0.0 : rho_[0];
          for (int64_t f = 0; f < p_.features; ++f) s += x[f] * coefs_[size_t(c * p_.features + f)];
          scores.push_back(s);
        }
      }
      if (proba) {
        for (int64_t i = 0, e = 0; i < k; ++i)
          for (int64_t j = i + 1; j < k; ++j, ++e) {
            const double v =
                1.0 / (1.0 + std::exp(scores[size_t(e)] * prob_a_[size_t(e)] + prob_b_[size_t(e)]));
            const double clamped = std::clamp(v, 1e-7, 1 - 1e-7);
            r[size_t(i * k + j)] = clamped;
            r[size_t(j * k + i)] = 1 - clamped;
          }
        scores = couple(k, r);
      }
      // The label: most votes (SVC: a positive decision votes for the pair's first
      // class), else the highest score, or the sign of a single linear score. A single
      // decision value is reported as [-s, s].
      int64_t best = 0;
      const std::vector<double>& by = svc ? votes : scores;
      for (int64_t c = 1; c < int64_t(by.size()); ++c)
        if (by[size_t(c)] > by[size_t(best)]) best = c;
      if (raw_width == 1) {
        const double s = scores[0];
        if (!svc) best = s > 0 ? 1 : 0;
        scores = {-s, s};
      }
      post_transform(post_, scores.data(), int64_t(scores.size()));
      for (int64_t c = 0; c < width; ++c)
        z->data<float>()[n * width + c] = float(scores[size_t(c)]);
      if (!strings_.empty())
        labels->data<std::string>()[n] = strings_[size_t(std::min<int64_t>(best, k - 1))];
      else if (!ints_.empty())
        labels->data<int64_t>()[n] = ints_[size_t(std::min<int64_t>(best, k - 1))];
      else
        labels->data<int64_t>()[n] = best;
    }
    return Status();
  }

 private:
  SvmParams p_;
  std::vector<int64_t> per_class_, start_;
  std::vector<double> coefs_, rho_, prob_a_, prob_b_;
  PostTransform post_;
  std::vector<int64_t> ints_;
  std::vector<std::string> strings_;
  int64_t classes_ = 1;
};

class SvmRegressorKernel final : public Kernel {
 public:
  SvmRegressorKernel(SvmParams p, std::vector<double> coefs, double rho, bool one_class,
                     PostTransform post)
      : p_(std::move(p)), coefs_(std::move(coefs)), rho_(rho), one_class_(one_class), post_(post) {}

  Status compute(KernelContext& ctx) const override {
    std::vector<double> xs;
    int64_t rows = 0;
    NXRT_RETURN_IF_ERROR(read_rows(*ctx.input(0), p_.features, xs, rows));
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, Shape{rows, 1}));
    for (int64_t n = 0; n < rows; ++n) {
      const double* x = xs.data() + n * p_.features;
      double s = rho_;
      if (p_.vectors > 0) {
        for (int64_t j = 0; j < p_.vectors; ++j)
          s += coefs_[size_t(j)] * p_.apply(x, p_.support.data() + j * p_.features);
      } else {
        for (int64_t f = 0; f < p_.features; ++f) s += x[f] * coefs_[size_t(f)];
      }
      if (one_class_) s = s > 0 ? 1.0 : -1.0;
      post_transform(post_, &s, 1);
      y->data<float>()[n] = float(s);
    }
    return Status();
  }

 private:
  SvmParams p_;
  std::vector<double> coefs_;
  double rho_;
  bool one_class_;
  PostTransform post_;
};

bool x_type_ok(DataType t) {
  return t == DataType::kFloat || t == DataType::kDouble || t == DataType::kInt64 ||
         t == DataType::kInt32;
}

}  // namespace

Expected<KernelPtr> create_svm_classifier(KernelInit& init) {
  if (!x_type_ok(init.input_type(0))) return init.unsupported_type(0);
  AttrReader attrs(init.node);
  SvmParams p;
  NXRT_RETURN_IF_ERROR(read_svm(init, attrs, p));
  std::vector<int64_t> per_class = attrs.get_ints("vectors_per_class");
  std::vector<double> coefs = doubles(attrs.get_floats("coefficients"));
  std::vector<double> rho = doubles(attrs.get_floats("rho"));
  std::vector<double> prob_a = doubles(attrs.get_floats("prob_a"));
  std::vector<double> prob_b = doubles(attrs.get_floats("prob_b"));
  std::vector<int64_t> ints = attrs.get_ints("classlabels_ints");
  std::vector<std::string> strings = attrs.get_strings("classlabels_strings");
  NXRT_ASSIGN_OR_RETURN(PostTransform post, parse_post(attrs.get_string("post_transform", "NONE")));
  NXRT_RETURN_IF_ERROR(attrs.status());
  const int64_t k = int64_t(std::max<size_t>({ints.size(), strings.size(), 1}));
  int64_t vectors = 0;
  for (int64_t c : per_class) {
    if (c < 0) return init.error(StatusCode::kInvalidGraph, "vectors_per_class has ", c);
    vectors += c;
  }
  const auto bad = [&](const char* what, size_t got, int64_t want) {
    return init.error(StatusCode::kInvalidGraph, what, " has ", got, " values; expected ", want);
  };
  if (vectors > 0) {
    if (int64_t(per_class.size()) != k) return bad("vectors_per_class", per_class.size(), k);
    if (p.support.empty() || p.support.size() % size_t(vectors) != 0)
      return bad("support_vectors", p.support.size(), vectors);
    if (int64_t(coefs.size()) != (k - 1) * vectors)
      return bad("coefficients", coefs.size(), (k - 1) * vectors);
    if (int64_t(rho.size()) != k * (k - 1) / 2) return bad("rho", rho.size(), k * (k - 1) / 2);
    if (!prob_a.empty() && (prob_a.size() != rho.size() || prob_b.size() != rho.size()))
      return bad("prob_a / prob_b", prob_a.size(), int64_t(rho.size()));
  } else if (coefs.empty() || coefs.size() % size_t(k) != 0) {
    return bad("coefficients", coefs.size(), k);
  }
  init.set_all_outputs(DataType::kFloat);
  init.output_types[0] = strings.empty() ? DataType::kInt64 : DataType::kString;
  return make_kernel<SvmClassifierKernel>(std::move(p), std::move(per_class), std::move(coefs),
                                          std::move(rho), std::move(prob_a), std::move(prob_b),
                                          post, std::move(ints), std::move(strings));
}

Expected<KernelPtr> create_svm_regressor(KernelInit& init) {
  if (!x_type_ok(init.input_type(0))) return init.unsupported_type(0);
  AttrReader attrs(init.node);
  SvmParams p;
  NXRT_RETURN_IF_ERROR(read_svm(init, attrs, p));
  std::vector<double> coefs = doubles(attrs.get_floats("coefficients"));
  std::vector<float> rho = attrs.get_floats("rho");
  const int64_t supports = attrs.get_int("n_supports", 0);
  const bool one_class = attrs.get_int("one_class", 0) != 0;
  NXRT_ASSIGN_OR_RETURN(PostTransform post, parse_post(attrs.get_string("post_transform", "NONE")));
  NXRT_RETURN_IF_ERROR(attrs.status());
  if (rho.size() != 1)
    return init.error(StatusCode::kInvalidGraph, "rho has ", rho.size(), " values; expected 1");
  if (supports > 0) {
    if (int64_t(coefs.size()) != supports || p.support.size() % size_t(supports) != 0 ||
        p.support.empty())
      return init.error(StatusCode::kInvalidGraph, "n_supports is ", supports, " but there are ",
                        coefs.size(), " coefficients and ", p.support.size(),
                        " support vector values");
    p.vectors = supports;
    p.features = int64_t(p.support.size()) / supports;
  } else {
    if (coefs.empty()) return init.error(StatusCode::kInvalidGraph, "coefficients is empty");
    p.features = int64_t(coefs.size());
  }
  init.set_all_outputs(DataType::kFloat);
  return make_kernel<SvmRegressorKernel>(std::move(p), std::move(coefs), double(rho[0]), one_class,
                                         post);
}

}  // namespace nxrt::cpu
