// Allocator interposition: the executable defines malloc/free/calloc/realloc and the
// aligned variants, which the dynamic linker then resolves for every library in the
// process (libstdc++'s operator new included). Each forwards to glibc's internal entry
// points (__libc_malloc, ...), so nothing here allocates or recurses. operator new/delete
// are replaced too, so C++ allocations are counted even if a libstdc++ build bypasses
// the malloc symbol.
#include "alloc_count.h"

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <new>

#ifndef NXRT_CLI_NO_INTERPOSE
extern "C" {
void* __libc_malloc(size_t size);
void __libc_free(void* ptr);
void* __libc_calloc(size_t count, size_t size);
void* __libc_realloc(void* ptr, size_t size);
void* __libc_memalign(size_t alignment, size_t size);
}

namespace {
std::atomic<bool> g_counting{false};
std::atomic<uint64_t> g_count{0};

inline void note() {
  if (g_counting.load(std::memory_order_relaxed)) g_count.fetch_add(1, std::memory_order_relaxed);
}

void* new_impl(size_t size) {
  note();
  if (size == 0) size = 1;
  void* p = __libc_malloc(size);
  if (!p) throw std::bad_alloc();
  return p;
}

void* new_aligned_impl(size_t size, std::align_val_t align) {
  note();
  if (size == 0) size = 1;
  void* p = __libc_memalign(static_cast<size_t>(align), size);
  if (!p) throw std::bad_alloc();
  return p;
}
}  // namespace

namespace nxrt::cli {
bool alloc_counting_available() { return true; }
void alloc_counting(bool on) { g_counting.store(on, std::memory_order_relaxed); }
uint64_t alloc_count() { return g_count.load(std::memory_order_relaxed); }
}  // namespace nxrt::cli

extern "C" {
void* malloc(size_t size) {
  note();
  return __libc_malloc(size);
}
void free(void* ptr) { __libc_free(ptr); }
void* calloc(size_t count, size_t size) {
  note();
  return __libc_calloc(count, size);
}
void* realloc(void* ptr, size_t size) {
  note();
  return __libc_realloc(ptr, size);
}
void* memalign(size_t alignment, size_t size) {
  note();
  return __libc_memalign(alignment, size);
}
void* aligned_alloc(size_t alignment, size_t size) {
  note();
  return __libc_memalign(alignment, size);
}
int posix_memalign(void** out, size_t alignment, size_t size) {
  if (alignment < sizeof(void*) || (alignment & (alignment - 1)) != 0) return EINVAL;
  note();
  void* p = __libc_memalign(alignment, size);
  if (!p) return ENOMEM;
  *out = p;
  return 0;
}
}  // extern "C"

void* operator new(size_t size) { return new_impl(size); }
void* operator new[](size_t size) { return new_impl(size); }
void* operator new(size_t size, const std::nothrow_t&) noexcept {
  note();
  return __libc_malloc(size ? size : 1);
}
void* operator new[](size_t size, const std::nothrow_t&) noexcept {
  note();
  return __libc_malloc(size ? size : 1);
}
void* operator new(size_t size, std::align_val_t align) { return new_aligned_impl(size, align); }
void* operator new[](size_t size, std::align_val_t align) { return new_aligned_impl(size, align); }
void* operator new(size_t size, std::align_val_t align, const std::nothrow_t&) noexcept {
  note();
  return __libc_memalign(static_cast<size_t>(align), size ? size : 1);
}
void* operator new[](size_t size, std::align_val_t align, const std::nothrow_t&) noexcept {
  note();
  return __libc_memalign(static_cast<size_t>(align), size ? size : 1);
}
void operator delete(void* p) noexcept { __libc_free(p); }
void operator delete[](void* p) noexcept { __libc_free(p); }
void operator delete(void* p, size_t) noexcept { __libc_free(p); }
void operator delete[](void* p, size_t) noexcept { __libc_free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { __libc_free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { __libc_free(p); }
void operator delete(void* p, std::align_val_t) noexcept { __libc_free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { __libc_free(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { __libc_free(p); }
void operator delete[](void* p, size_t, std::align_val_t) noexcept { __libc_free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { __libc_free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept {
  __libc_free(p);
}

#else  // sanitizer builds own the allocator; counting is unavailable there
namespace nxrt::cli {
bool alloc_counting_available() { return false; }
void alloc_counting(bool) {}
uint64_t alloc_count() { return 0; }
}  // namespace nxrt::cli
#endif
