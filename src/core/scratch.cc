#include "core/scratch.h"

#include <cstdlib>
#include <memory>
#include <new>

namespace nxrt {
namespace {

struct Buffer {
  std::unique_ptr<void, decltype(&std::free)> data{nullptr, &std::free};
  size_t capacity = 0;
};

// One thread_local object for all slots: in a shared library each one costs a TLS
// lookup call.
thread_local Buffer t_buffers[size_t(ScratchSlot::kCount)];

}  // namespace

void* scratch_bytes(ScratchSlot slot, size_t bytes) {
  constexpr size_t kLine = 64;
  Buffer& buffer = t_buffers[size_t(slot)];
  if (buffer.capacity < bytes || !buffer.data) {
    const size_t rounded = (bytes + kLine - 1) / kLine * kLine;
    void* p = std::aligned_alloc(kLine, rounded == 0 ? kLine : rounded);
    if (!p) throw std::bad_alloc();
    buffer.data.reset(p);
    buffer.capacity = rounded;
  }
  return buffer.data.get();
}

}  // namespace nxrt
