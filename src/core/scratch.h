// Per-thread scratch memory that grows and stays: buffers whose size follows the data
// (packed GEMM panels, im2col matrices, index tables) reuse the last run's memory, so warm
// runs make no heap allocation. The one mechanism for such buffers in nxrt.
//
// Each buffer has a named slot, and each layer uses only its own slots: a kernel's buffer
// survives the GEMM or vector routine it calls, which use theirs. A slot's memory is the
// calling thread's until that thread asks for the same slot again, so only code that runs
// no other kernel (no subgraph) while holding it may use it. Elements are not
// initialized, and nothing is kept when a slot grows. The memory starts on a 64-byte
// line, as tensors do, so vector code writing it does not split stores across lines.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace nxrt {

enum class ScratchSlot : uint8_t {
  // Kernels' leaf buffers (ep/cpu/kernels/common.h: thread_scratch(count, 0..3)).
  kKernel0,
  kKernel1,
  kKernel2,
  kKernel3,
  kConvColumns,       // a convolution's column matrix or partial sums
  kRecurrentState,    // an RNN/GRU/LSTM's gates and states
  kMatMulScale,       // 8-bit MatMul: per-column output scale
  kMatMulShift,       //   and shift
  kMatMulZeroPoints,  //   and B's zero points when B is packed per run
  kGemmPanelA,        // gemm: A and B panels packed per call
  kGemmPanelB,
  kGemmRow,           // gemm: a strided single row gathered
  kQgemmColumnTerms,  // 8-bit GEMM: the zero-point correction per column
  kQgemmRows,         //   a block of A rows as its kernel reads them
  kQgemmTile,         //   the int32 tile of a block, for float output
  kVmathRow,          // vmath: a pool window's rows reduced into one
  kVmathRowPointers,  //   the rows of a window
  kVmathWeightRows,   //   a depthwise filter's rows
  kCount
};

// At least `bytes` bytes of this thread's slot, 64-byte aligned.
void* scratch_bytes(ScratchSlot slot, size_t bytes);

template <typename T>
T* scratch(ScratchSlot slot, size_t count) {
  static_assert(std::is_trivially_copyable_v<T> && alignof(T) <= 64);
  return static_cast<T*>(scratch_bytes(slot, count * sizeof(T)));
}

}  // namespace nxrt
