#include "core/random_seed.h"

#include <mutex>
#include <optional>
#include <random>

namespace nxrt {
namespace {

struct SeedSource {
  std::mutex mutex;
  std::optional<std::mt19937_64> stream;  // set by set_default_random_seed
};

SeedSource& source() {
  static SeedSource s;
  return s;
}

}  // namespace

void set_default_random_seed(uint64_t seed) {
  SeedSource& s = source();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.stream.emplace(seed);
}

uint32_t next_unseeded_random_seed() {
  SeedSource& s = source();
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (s.stream) return uint32_t((*s.stream)() >> 32);
  }
  return uint32_t(std::random_device{}());
}

}  // namespace nxrt
