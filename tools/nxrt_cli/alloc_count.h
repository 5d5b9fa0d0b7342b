// Heap allocation counting for `nxrt bench`. alloc_count.cc replaces malloc and friends
// (and every operator new/delete) in the CLI binary; while counting is on, every
// allocation made in the process is counted, on any thread.
#pragma once

#include <cstdint>

namespace nxrt::cli {

bool alloc_counting_available();  // false in sanitizer builds, which own malloc
void alloc_counting(bool on);
uint64_t alloc_count();  // allocations seen while counting was on, since the start

// RAII: counts allocations made during its lifetime.
class AllocScope {
 public:
  AllocScope() : start_(alloc_count()) { alloc_counting(true); }
  ~AllocScope() { alloc_counting(false); }
  uint64_t count() const { return alloc_count() - start_; }

 private:
  uint64_t start_;
};

}  // namespace nxrt::cli
