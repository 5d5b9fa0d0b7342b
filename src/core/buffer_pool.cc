#include "core/buffer_pool.h"

#include <cstdlib>

namespace nxrt {

BufferPool::~BufferPool() {
  for (Block& block : blocks_) std::free(block.data);
}

void* BufferPool::acquire(size_t bytes, size_t* capacity) {
  const size_t rounded = bytes == 0 ? 64 : (bytes + 63) / 64 * 64;
  // Best fit among free blocks, but not one more than 4x too big: a huge block
  // serving a tiny tensor would starve the next large request.
  Block* best = nullptr;
  for (Block& block : blocks_) {
    if (block.in_use || block.capacity < rounded || block.capacity > rounded * 4 + 4096) continue;
    if (!best || block.capacity < best->capacity) best = &block;
  }
  if (best) {
    best->in_use = true;
    if (capacity) *capacity = best->capacity;
    return best->data;
  }
  void* data = std::aligned_alloc(64, rounded);
  if (!data) return nullptr;
  blocks_.push_back({data, rounded, true});
  if (capacity) *capacity = rounded;
  return data;
}

void BufferPool::trim() {
  std::erase_if(blocks_, [](const Block& block) {
    if (!block.in_use) std::free(block.data);
    return !block.in_use;
  });
}

size_t BufferPool::release(void* data) {
  for (Block& block : blocks_) {
    if (block.data == data) {
      block.in_use = false;
      return block.capacity;
    }
  }
  return 0;
}

}  // namespace nxrt
