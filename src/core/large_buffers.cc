#include "core/large_buffers.h"

#include <cstdlib>
#include <mutex>

namespace nxrt {
namespace {

// At most this many buffers and bytes wait for reuse: enough for a model's outputs on a
// few threads, without holding on to a large model's worth of memory.
constexpr size_t kMaxKept = 8;
constexpr size_t kMaxKeptBytes = size_t(512) << 20;

struct Kept {
  void* data = nullptr;
  size_t capacity = 0;
};

struct Cache {
  std::mutex mutex;
  Kept kept[kMaxKept];
  size_t count = 0, bytes = 0;
};

Cache& cache() {
  static Cache* c = new Cache;  // never destroyed: outputs may be freed at exit
  return *c;
}

}  // namespace

void* acquire_large_buffer(size_t bytes, size_t* capacity) {
  Cache& c = cache();
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    size_t best = c.count;
    for (size_t i = 0; i < c.count; ++i) {
      const size_t cap = c.kept[i].capacity;
      if (cap >= bytes && cap / 2 <= bytes && (best == c.count || cap < c.kept[best].capacity))
        best = i;
    }
    if (best < c.count) {
      const Kept found = c.kept[best];
      c.kept[best] = c.kept[--c.count];
      c.bytes -= found.capacity;
      *capacity = found.capacity;
      return found.data;
    }
  }
  *capacity = bytes;
  return std::aligned_alloc(64, bytes);
}

void release_large_buffer(void* data, size_t capacity) {
  if (!data) return;
  Cache& c = cache();
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    if (c.count < kMaxKept && c.bytes + capacity <= kMaxKeptBytes) {
      c.kept[c.count++] = {data, capacity};
      c.bytes += capacity;
      return;
    }
  }
  std::free(data);
}

}  // namespace nxrt
