// com.microsoft DynamicQuantizeMatMul(A, B, b_scale, b_zero_point, bias): Y = A B with A
// float, quantized at run time to uint8 per tensor exactly as DynamicQuantizeLinear does
// it (dynamic_quant.h), and B int8 or uint8 (a quantized weight):
//   Y = (A_q - a_zero)(B - b_zero) * a_scale * b_scale (+ bias),
// the product exact in int32 on the 8-bit GEMM (gemm/qgemm.h), scaled to float per column
// as each block of rows finishes. Shapes follow numpy matmul (1-D operands promoted, batch
// dims broadcast). b_scale and b_zero_point hold one value, one per column of B ([N]), or,
// for a batched B [..., K, N], one per batch and column ([..., 1, N]); bias holds one
// value per column, added after the scaling as the op's definition has it (onnxruntime
// 1.32 also multiplies the bias by b_scale when b_scale is per column but neither [N] with
// a 2-D B nor of B's rank, e.g. [N] with a batched B). A constant 2-D B is packed once,
// at session creation.
#include <algorithm>
#include <utility>
#include <vector>

#include "ep/cpu/gemm/qgemm.h"
#include "ep/cpu/kernels/common.h"
#include "ep/cpu/kernels/dynamic_quant.h"
#include "ep/cpu/vmath/vmath.h"

namespace nxrt::cpu {
namespace {

// How b_scale / b_zero_point map onto B's columns: one value, one per column, or one per
// batch of B and column.
enum class ParamLayout { kTensor, kColumn, kBatchColumn };

Status param_layout(const Tensor& t, const Shape& b_batch, int64_t N, bool b_matrix,
                    const char* what, ParamLayout& out) {
  const Shape& s = t.shape();
  if (t.numel() == 1) {
    out = ParamLayout::kTensor;
    return Status();
  }
  const bool column = s.rank() >= 1 && s.back() == N && t.numel() == N;
  if (column) {
    out = ParamLayout::kColumn;
    return Status();
  }
  // [..., 1, N] matching B's batch dims.
  bool batch = b_matrix && s.rank() == b_batch.rank() + 2 && s[s.rank() - 2] == 1 && s.back() == N;
  for (size_t d = 0; batch && d < b_batch.rank(); ++d) batch = s[d] == b_batch[d];
  if (batch) {
    out = ParamLayout::kBatchColumn;
    return Status();
  }
  return invalid_argument(what, " has shape ", s.to_string(),
                          "; expected one value, one per column of B (", N,
                          ") or, for a batched B, B's batch dims followed by [1, ", N, "]");
}

int32_t zero_value(const Tensor& z, int64_t i) {
  return z.dtype() == DataType::kUint8 ? int32_t(z.data<uint8_t>()[i])
                                       : int32_t(z.data<int8_t>()[i]);
}

class DynamicQuantizeMatMulKernel final : public Kernel {
 public:
  DynamicQuantizeMatMulKernel(gemm::PackedQuantB packed, const void* b, const void* b_zero)
      : packed_(std::move(packed)), b_(b), b_zero_(b_zero) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor& a = *ctx.input(0);
    const Tensor& b = *ctx.input(1);
    const Tensor* b_scale = ctx.input(2);
    const Tensor* b_zero = ctx.input(3);
    const Tensor* bias = ctx.input(4);
    if (!b_scale) return invalid_argument("b_scale is required");
    if (a.rank() == 0) return invalid_argument("A must not be a scalar");
    if (b.rank() == 0) return invalid_argument("B must not be a scalar");
    const bool a_vector = a.rank() == 1, b_vector = b.rank() == 1;
    const int64_t K = a.shape().back();
    const int64_t M = a_vector ? 1 : a.shape()[a.rank() - 2];
    const int64_t kb = b_vector ? b.shape()[0] : b.shape()[b.rank() - 2];
    const int64_t N = b_vector ? 1 : b.shape().back();
    if (kb != K)
      return invalid_argument("A's shape ", a.shape().to_string(), " and B's shape ",
                              b.shape().to_string(), " do not match: ", K, " vs ", kb);
    const Shape a_batch(a.shape().span().first(a_vector ? 0 : a.rank() - 2));
    const Shape b_batch(b.shape().span().first(b_vector ? 0 : b.rank() - 2));
    const Shape* batch_shapes[] = {&a_batch, &b_batch};
    Shape out_shape;
    if (!broadcast_shapes(batch_shapes, out_shape))
      return invalid_argument("the batch dims of A ", a.shape().to_string(), " and B ",
                              b.shape().to_string(), " cannot be broadcast");
    const Shape out_batch = out_shape;
    if (!a_vector) out_shape.push_back(M);
    if (!b_vector) out_shape.push_back(N);
    if (checked_numel(out_shape.span()) < 0) return invalid_argument("the output is too large");
    ParamLayout scale_layout = ParamLayout::kTensor, zero_layout = ParamLayout::kTensor;
    NXRT_RETURN_IF_ERROR(param_layout(*b_scale, b_batch, N, !b_vector, "b_scale", scale_layout));
    if (b_zero)
      NXRT_RETURN_IF_ERROR(
          param_layout(*b_zero, b_batch, N, !b_vector, "b_zero_point", zero_layout));
    if (bias && bias->numel() != N)
      return invalid_argument("bias has ", bias->numel(), " values; expected one per column of B (",
                              N, ")");
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, out_shape));
    const int64_t out_numel = y->numel();
    if (out_numel == 0) return Status();
    float* py = y->data<float>();
    const float* pbias = bias ? bias->data<float>() : nullptr;
    if (K == 0) {  // an empty sum: Y is the bias
      for (int64_t i = 0; i < out_numel; ++i) py[i] = pbias ? pbias[i % N] : 0.0f;
      return Status();
    }

    // A to uint8 codes, as DynamicQuantizeLinear quantizes it.
    const int64_t a_numel = a.numel();
    const DynamicQuantParams q = dynamic_quant_params(a.data<float>(), a_numel);
    auto* codes = thread_scratch<uint8_t>(size_t(a_numel), 0);
    vmath::quantize_8bit(a.data<float>(), size_t(a_numel), q.scale, q.zero_point, false, codes);
    const int32_t a_zero = int32_t(q.zero_point);

    // Per column (and per batch of B, when the scale is): a_scale * b_scale.
    const int64_t b_batches = b_batch.numel();
    const int64_t scale_count = scale_layout == ParamLayout::kBatchColumn ? b_batches * N : N;
    float* scale = scratch<float>(ScratchSlot::kMatMulScale, size_t(scale_count));
    const float* pbs = b_scale->data<float>();
    for (int64_t i = 0; i < scale_count; ++i)
      scale[i] = q.scale * pbs[scale_layout == ParamLayout::kTensor ? 0 : i];
    const int64_t scale_step = scale_layout == ParamLayout::kBatchColumn ? N : 0;

    const bool a_signed = false, b_signed = b.dtype() == DataType::kInt8;
    if (b_batches == 1 && !packed_.empty() && b.raw() == b_ &&
        (b_zero ? b_zero->raw() : nullptr) == b_zero_) {
      // The weight packed at session creation: every row of A in one product.
      gemm::qgemm_float(out_numel / N, codes, K, a_signed, a_zero, packed_, scale, pbias, py, N);
      return Status();
    }
    // B packed per run, one batch at a time, into this thread's growing buffers.
    thread_local gemm::PackedQuantB fresh;
    const int64_t zero_count = !b_zero                               ? 0
                               : zero_layout == ParamLayout::kTensor ? 1
                                                                     : N;  // per packed batch
    int32_t* zeros = scratch<int32_t>(ScratchSlot::kMatMulZeroPoints, size_t(zero_count));
    const auto* b_bytes = static_cast<const uint8_t*>(b.raw());
    auto pack = [&](int64_t bb) {
      for (int64_t j = 0; j < zero_count; ++j)
        zeros[j] = zero_value(*b_zero, zero_layout == ParamLayout::kBatchColumn ? bb * N + j : j);
      fresh.repack(K, N, b_bytes + bb * K * N, N, b_signed, zeros, zero_count);
    };
    if (b_batches == 1) {
      pack(0);
      gemm::qgemm_float(out_numel / N, codes, K, a_signed, a_zero, fresh, scale, pbias, py, N);
      return Status();
    }
    // Batched B: output batch o multiplies A's batch ai by B's batch bi.
    const BroadcastPlan plan = make_broadcast_plan(out_batch, batch_shapes);
    int64_t packed_batch = -1;
    for_each_broadcast_run(
        plan, [&](const int64_t* off, int64_t o, int64_t count, const int64_t* step) {
          for (int64_t i = 0; i < count; ++i) {
            const int64_t ai = off[0] + i * step[0], bi = off[1] + i * step[1];
            if (bi != packed_batch) {
              pack(bi);
              packed_batch = bi;
            }
            gemm::qgemm_float(M, codes + ai * M * K, K, a_signed, a_zero, fresh,
                              scale + bi * scale_step, pbias, py + (o + i) * M * N, N);
          }
        });
    return Status();
  }

 private:
  gemm::PackedQuantB packed_;     // a constant 2-D B with its zero point, or empty
  const void* b_ = nullptr;       // the B packed_ holds
  const void* b_zero_ = nullptr;  // and its zero point
};

}  // namespace

Expected<KernelPtr> create_dynamic_quantize_matmul(KernelInit& init) {
  if (init.input_type(0) != DataType::kFloat) return init.unsupported_type(0);
  const DataType bt = init.input_type(1);
  if (bt != DataType::kUint8 && bt != DataType::kInt8) return init.unsupported_type(1);
  if (!init.has_input(2))
    return init.error(StatusCode::kInvalidGraph, "input 2 (b_scale) is required");
  if (init.input_type(2) != DataType::kFloat) return init.unsupported_type(2);
  if (init.has_input(3) && init.input_type(3) != bt)
    return init.error(StatusCode::kInvalidGraph, "b_zero_point has type ",
                      tensor_type_name(init.input_type(3)), "; expected B's ",
                      tensor_type_name(bt));
  if (init.has_input(4) && init.input_type(4) != DataType::kFloat) return init.unsupported_type(4);
  init.set_all_outputs(DataType::kFloat);
  // A constant 2-D B (and zero point) is packed now.
  gemm::PackedQuantB packed;
  const void* b_ptr = nullptr;
  const void* zero_ptr = nullptr;
  const Tensor* b = init.constant_input(1);
  const Tensor* zero = init.has_input(3) ? init.constant_input(3) : nullptr;
  if (b && b->rank() == 2 && (!init.has_input(3) || zero)) {
    const int64_t N = b->shape()[1];
    const int64_t count = zero ? zero->numel() : 0;
    if (count <= 1 || (count == N && zero->shape().back() == N)) {
      std::vector<int32_t> zeros(static_cast<size_t>(count));
      for (int64_t j = 0; j < count; ++j) zeros[size_t(j)] = zero_value(*zero, j);
      packed = gemm::PackedQuantB::pack(b->shape()[0], N, b->raw(), N, bt == DataType::kInt8,
                                        zeros.data(), count);
      b_ptr = b->raw();
      zero_ptr = zero ? zero->raw() : nullptr;
    }
  }
  return make_kernel<DynamicQuantizeMatMulKernel>(std::move(packed), b_ptr, zero_ptr);
}

}  // namespace nxrt::cpu
