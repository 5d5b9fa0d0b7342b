// Reuses intermediate buffers across nodes and runs. A buffer goes back to the pool at
// its value's last use (computed once by the planner); after the first run of a shape
// the pool holds every buffer the graph needs, so warm runs do not touch the heap.
#pragma once

#include <cstddef>
#include <vector>

namespace nxrt {

class BufferPool {
 public:
  BufferPool() = default;
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  // A 64-byte aligned block of at least `bytes`; nullptr when out of memory. Its size
  // (what it holds, which may exceed `bytes`) goes to `*capacity` when given.
  void* acquire(size_t bytes, size_t* capacity = nullptr);
  // Gives a block from acquire() back for reuse; returns its size (0 if unknown).
  size_t release(void* block);

  // Frees every block not in use.
  void trim();

  size_t blocks_allocated() const { return blocks_.size(); }

 private:
  struct Block {
    void* data;
    size_t capacity;
    bool in_use;
  };
  std::vector<Block> blocks_;
};

}  // namespace nxrt
