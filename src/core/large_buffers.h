// Storage for large owned tensors (graph outputs handed to the caller), recycled across
// runs. A buffer of tens of MiB from malloc is a fresh mapping each time (glibc maps
// requests past its 32 MiB threshold and unmaps them on free): every run then faults in
// and zeroes each page before the kernel writes it, which made an 8M-float Mul output
// 4.5x slower than the op itself. Freed buffers wait here, a few and a bounded total, for
// the next request of about their size.
#pragma once

#include <cstddef>

namespace nxrt {

// Requests from this size on are recycled; smaller ones go straight to malloc.
constexpr size_t kLargeBufferMin = size_t(4) << 20;

// 64-byte aligned storage of at least `bytes` (a multiple of 64): a recycled buffer of at
// most twice the size, else a new one. Null when out of memory.
void* acquire_large_buffer(size_t bytes, size_t* capacity);

// Gives a buffer from acquire_large_buffer back: kept for reuse while the cache has room,
// freed otherwise. Thread-safe (callers free outputs from any thread).
void release_large_buffer(void* data, size_t capacity);

}  // namespace nxrt
