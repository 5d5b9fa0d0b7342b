// BitCast: each element's bits read as another type of the same width.
#include <cstring>
#include <type_traits>

#include "ep/cpu/kernels/common.h"
#include "ep/cpu/kernels/element_copy.h"

namespace nxrt::cpu {
namespace {

// Reinterprets each element's bits as `to`; widths were matched at prepare. Sub-byte
// types live unpacked, one per byte (int4/int2 sign-extended), so between them only the
// low `packed_bits` travel, sign-extended again when the target is a signed type.
class BitCastKernel final : public Kernel {
 public:
  BitCastKernel(int packed_bits, bool signed_target)
      : packed_bits_(packed_bits), signed_target_(signed_target) {}
  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, x.shape()));
    if (packed_bits_ == 0) {
      if (x.nbytes() > 0) std::memcpy(y->raw(), x.raw(), x.nbytes());
      return Status();
    }
    const auto* src = static_cast<const uint8_t*>(x.raw());
    auto* dst = static_cast<uint8_t*>(y->raw());
    const unsigned mask = (1u << packed_bits_) - 1;
    const unsigned sign = 1u << (packed_bits_ - 1);
    for (int64_t i = 0; i < x.numel(); ++i) {
      unsigned v = src[i] & mask;
      if (signed_target_ && (v & sign)) v |= ~mask;
      dst[i] = uint8_t(v);
    }
    return Status();
  }

 private:
  int packed_bits_;
  bool signed_target_;
};

}  // namespace

Expected<KernelPtr> create_bit_cast(KernelInit& init) {
  AttrReader attrs(init.node);
  const int64_t to = attrs.require_int("to");
  NXRT_RETURN_IF_ERROR(attrs.status());
  const DataType from = init.input_type(0);
  if (!dtype_is_known(int32_t(to)) || DataType(to) == DataType::kUndefined)
    return init.error(StatusCode::kInvalidGraph, "'to' = ", to, " is not a tensor element type");
  const DataType target = DataType(to);
  if (from == DataType::kString || target == DataType::kString)
    return init.error(StatusCode::kInvalidGraph, "BitCast does not apply to strings");
  if (dtype_size(from) == 0 || dtype_size(target) == 0)
    return init.error(StatusCode::kNotImplemented, "BitCast between ", dtype_name(from), " and ",
                      dtype_name(target), " is not supported");
  auto bits = [](DataType t) {
    return dtype_packed_bits(t) ? size_t(dtype_packed_bits(t)) : dtype_size(t) * 8;
  };
  if (bits(from) != bits(target))
    return init.error(StatusCode::kInvalidGraph, "BitCast needs types of the same width; ",
                      dtype_name(from), " has ", bits(from), " bits and ", dtype_name(target), " ",
                      bits(target));
  init.set_all_outputs(target);
  const bool signed_target = target == DataType::kInt4 || target == DataType::kInt2;
  return make_kernel<BitCastKernel>(dtype_packed_bits(target), signed_target);
}

}  // namespace nxrt::cpu
