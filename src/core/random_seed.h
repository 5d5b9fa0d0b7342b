// The process-wide source of seeds for random ops that have no seed attribute
// (RandomNormal, Bernoulli, Multinomial, ...): fresh entropy by default; after
// set_default_random_seed (onnxruntime's set_seed) a deterministic stream, so a process
// that sets the seed gets the same values run after run.
#pragma once

#include <cstdint>

namespace nxrt {

void set_default_random_seed(uint64_t seed);

// The seed of one unseeded random op call.
uint32_t next_unseeded_random_seed();

}  // namespace nxrt
