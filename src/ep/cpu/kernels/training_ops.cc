// ai.onnx.preview.training optimizers (opset 1): Adagrad, Momentum (standard and
// Nesterov) and Adam. Each updates n tensors at once; the variadic inputs are grouped
// by role ([X_1..X_n, G_1..G_n, state_1..state_n, ...]) and so are the outputs.
//
// Arithmetic runs in double whatever the storage type: the scalar learning-rate terms
// (alpha^T, 1 / (1 + T * decay)) lose precision quickly in float for large T.
#include <cmath>
#include <string>
#include <vector>

#include "ep/cpu/kernels/common.h"

namespace nxrt::cpu {
namespace {

enum class Optimizer { kAdagrad, kMomentum, kNesterov, kAdam };

struct OptimizerConfig {
  Optimizer kind = Optimizer::kAdagrad;
  double norm_coefficient = 0, norm_coefficient_post = 0;
  double epsilon = 1e-6, decay_factor = 0;
  double alpha = 0, beta = 0;
};

// Tensors per optimized variable on the input side (X, G and the state tensors).
size_t inputs_per_var(Optimizer k) { return k == Optimizer::kAdam ? 4 : 3; }

double read_double(const Tensor& t, int64_t i) {
  return t.dtype() == DataType::kDouble ? t.data<double>()[i] : double(t.data<float>()[i]);
}

void write_double(Tensor& t, int64_t i, double v) {
  if (t.dtype() == DataType::kDouble)
    t.data<double>()[i] = v;
  else
    t.data<float>()[i] = float(v);
}

class OptimizerKernel final : public Kernel {
 public:
  explicit OptimizerKernel(OptimizerConfig cfg) : cfg_(cfg) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor& r_t = *ctx.input(0);
    const Tensor& t_t = *ctx.input(1);
    if (r_t.numel() != 1)
      return invalid_argument("learning rate R must be a scalar, got shape ",
                              r_t.shape().to_string());
    if (t_t.numel() != 1)
      return invalid_argument("update count T must be a scalar, got shape ",
                              t_t.shape().to_string());
    const double R = read_double(r_t, 0);
    const int64_t T = t_t.data<int64_t>()[0];
    const size_t per = inputs_per_var(cfg_.kind);
    const size_t n = (ctx.num_inputs() - 2) / per;

    // Scalar factors shared by every element of every variable.
    double rate = R;
    if (cfg_.kind == Optimizer::kAdagrad) {
      rate = R / (1.0 + double(T) * cfg_.decay_factor);
    } else if (cfg_.kind == Optimizer::kAdam && T > 0) {
      const double tf = double(T);
      rate = R * std::sqrt(1.0 - std::pow(cfg_.beta, tf)) / (1.0 - std::pow(cfg_.alpha, tf));
    }
    const double grad_coef = (T > 0) ? cfg_.beta : 1.0;  // Momentum: beta from the 2nd step

    for (size_t v = 0; v < n; ++v) {
      const Tensor* in[4] = {nullptr, nullptr, nullptr, nullptr};
      for (size_t role = 0; role < per; ++role) {
        in[role] = ctx.input(2 + role * n + v);
        if (!in[role]) return invalid_argument("input ", 2 + role * n + v, " is missing");
      }
      const Shape& shape = in[0]->shape();
      for (size_t role = 1; role < per; ++role)
        if (in[role]->shape() != shape)
          return invalid_argument("input ", 2 + role * n + v, " has shape ",
                                  in[role]->shape().to_string(), ", expected ", shape.to_string(),
                                  " like the optimized tensor");
      Tensor* out[3] = {nullptr, nullptr, nullptr};
      for (size_t role = 0; role + 1 < per; ++role) {
        NXRT_ASSIGN_OR_RETURN(out[role], ctx.output(role * n + v, shape));
      }
      const int64_t count = in[0]->numel();
      for (int64_t i = 0; i < count; ++i) {
        const double x = read_double(*in[0], i);
        const double g = cfg_.norm_coefficient * x + read_double(*in[1], i);
        switch (cfg_.kind) {
          case Optimizer::kAdagrad: {
            const double h = read_double(*in[2], i) + g * g;
            write_double(*out[0], i, x - rate * g / (std::sqrt(h) + cfg_.epsilon));
            write_double(*out[1], i, h);
            break;
          }
          case Optimizer::kMomentum:
          case Optimizer::kNesterov: {
            const double m = cfg_.alpha * read_double(*in[2], i) + grad_coef * g;
            const double step = cfg_.kind == Optimizer::kMomentum ? m : g + cfg_.alpha * m;
            write_double(*out[0], i, x - R * step);
            write_double(*out[1], i, m);
            break;
          }
          case Optimizer::kAdam: {
            const double m = cfg_.alpha * read_double(*in[2], i) + (1.0 - cfg_.alpha) * g;
            const double h = cfg_.beta * read_double(*in[3], i) + (1.0 - cfg_.beta) * g * g;
            const double x_new = x - rate * m / (std::sqrt(h) + cfg_.epsilon);
            write_double(*out[0], i, (1.0 - cfg_.norm_coefficient_post) * x_new);
            write_double(*out[1], i, m);
            write_double(*out[2], i, h);
            break;
          }
        }
      }
    }
    return Status();
  }

 private:
  OptimizerConfig cfg_;
};

bool is_float_or_double(DataType t) { return t == DataType::kFloat || t == DataType::kDouble; }

Expected<KernelPtr> create_optimizer(KernelInit& init, OptimizerConfig cfg) {
  const size_t per = inputs_per_var(cfg.kind);
  if (init.num_inputs() < 2 + per || (init.num_inputs() - 2) % per != 0)
    return init.error(StatusCode::kInvalidGraph, "has ", init.num_inputs(),
                      " inputs; expected R, T and ", per, " tensors per optimized variable");
  const size_t n = (init.num_inputs() - 2) / per;
  if (init.output_types.size() != n * (per - 1))
    return init.error(StatusCode::kInvalidGraph, "optimizes ", n, " tensors, so it needs ",
                      n * (per - 1), " outputs, got ", init.output_types.size());
  if (!is_float_or_double(init.input_type(0))) return init.unsupported_type(0);
  if (init.input_type(1) != DataType::kInt64)
    return init.error(StatusCode::kInvalidGraph, "update count T must be int64, got ",
                      tensor_type_name(init.input_type(1)));
  for (size_t i = 2; i < init.num_inputs(); ++i)
    if (!is_float_or_double(init.input_type(i))) return init.unsupported_type(i);
  // Each output keeps the type of the input it replaces: X_new that of X, the state
  // outputs those of the state inputs (the gradients have no output).
  for (size_t v = 0; v < n; ++v) {
    init.output_types[v] = init.input_type(2 + v);
    for (size_t role = 2; role < per; ++role)
      init.output_types[(role - 1) * n + v] = init.input_type(2 + role * n + v);
  }
  return make_kernel<OptimizerKernel>(cfg);
}

// Spec attributes without defaults must be present.
Status require_floats(const KernelInit& init, AttrReader& attrs,
                      std::initializer_list<const char*> names) {
  for (const char* name : names)
    if (!attrs.has(name))
      return init.error(StatusCode::kInvalidGraph, "required attribute '", name, "' is missing");
  return Status();
}

}  // namespace

Expected<KernelPtr> create_adagrad(KernelInit& init) {
  AttrReader attrs(init.node);
  OptimizerConfig cfg;
  cfg.kind = Optimizer::kAdagrad;
  cfg.decay_factor = attrs.get_float("decay_factor", 0.0f);
  cfg.epsilon = attrs.get_float("epsilon", 1e-6f);
  cfg.norm_coefficient = attrs.get_float("norm_coefficient", 0.0f);
  NXRT_RETURN_IF_ERROR(attrs.status());
  return create_optimizer(init, cfg);
}

Expected<KernelPtr> create_momentum(KernelInit& init) {
  AttrReader attrs(init.node);
  NXRT_RETURN_IF_ERROR(require_floats(init, attrs, {"alpha", "beta", "norm_coefficient"}));
  OptimizerConfig cfg;
  cfg.alpha = attrs.get_float("alpha", 0.0f);
  cfg.beta = attrs.get_float("beta", 0.0f);
  cfg.norm_coefficient = attrs.get_float("norm_coefficient", 0.0f);
  const std::string mode = attrs.get_string("mode", "");
  NXRT_RETURN_IF_ERROR(attrs.status());
  if (mode == "standard")
    cfg.kind = Optimizer::kMomentum;
  else if (mode == "nesterov")
    cfg.kind = Optimizer::kNesterov;
  else
    return init.error(StatusCode::kInvalidGraph, "mode '", mode,
                      "' is not 'standard' or 'nesterov'");
  return create_optimizer(init, cfg);
}

Expected<KernelPtr> create_adam(KernelInit& init) {
  AttrReader attrs(init.node);
  OptimizerConfig cfg;
  cfg.kind = Optimizer::kAdam;
  cfg.alpha = attrs.get_float("alpha", 0.9f);
  cfg.beta = attrs.get_float("beta", 0.999f);
  cfg.epsilon = attrs.get_float("epsilon", 1e-6f);
  cfg.norm_coefficient = attrs.get_float("norm_coefficient", 0.0f);
  cfg.norm_coefficient_post = attrs.get_float("norm_coefficient_post", 0.0f);
  NXRT_RETURN_IF_ERROR(attrs.status());
  return create_optimizer(init, cfg);
}

}  // namespace nxrt::cpu
