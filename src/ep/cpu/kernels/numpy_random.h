// numpy's legacy RandomState stream, reproduced bit for bit: onnx's reference
// implementation (onnx.reference) draws seeded random ops from np.random.RandomState(seed),
// so a seeded node here yields the values that users validating against it expect.
// RandomState(int) seeds MT19937 with the classic init_genrand, which is exactly what
// std::mt19937's integer constructor does.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>

#include "core/random_seed.h"

namespace nxrt::cpu {

class NumpyRandom {
 public:
  explicit NumpyRandom(uint32_t seed) : gen_(seed) {}

  // A generator for one kernel call: seeded nodes restart their stream on every call
  // (so runs are reproducible and compute() stays const), others take the next seed of
  // the process's source (core/random_seed.h).
  // The ONNX seed is a float attribute; like the reference we truncate it to an integer
  // and, where numpy would reject it (negative or >= 2^32), keep its low 32 bits.
  static NumpyRandom for_call(bool has_seed, float seed) {
    if (has_seed && std::isfinite(seed) && std::fabs(seed) < 9.2e18f)
      return NumpyRandom(uint32_t(uint64_t(int64_t(seed))));
    return NumpyRandom(next_unseeded_random_seed());
  }

  // random_sample(): 53 random bits from two draws, in [0, 1).
  double next_double() {
    const uint32_t hi = uint32_t(gen_()) >> 5, lo = uint32_t(gen_()) >> 6;
    return (double(hi) * 67108864.0 + double(lo)) / 9007199254740992.0;
  }

  // standard_normal(): the polar Box-Muller method, which makes two variates per
  // accepted pair and hands out the cached second one on the next call.
  double next_gauss() {
    if (has_gauss_) {
      has_gauss_ = false;
      return gauss_;
    }
    double x1, x2, r2;
    do {
      x1 = 2.0 * next_double() - 1.0;
      x2 = 2.0 * next_double() - 1.0;
      r2 = x1 * x1 + x2 * x2;
    } while (r2 >= 1.0 || r2 == 0.0);
    const double f = std::sqrt(-2.0 * std::log(r2) / r2);
    gauss_ = f * x1;
    has_gauss_ = true;
    return f * x2;
  }

  // binomial(1, p) for p in [0, 1]. numpy samples the smaller of p and 1 - p by
  // inversion and flips the result; the loop (including its rare restart when rounding
  // pushes the count past n) is kept so the number of draws matches too.
  int next_bernoulli(double p) {
    const bool flip = p > 0.5;
    const double pp = flip ? 1.0 - p : p;
    const double q = 1.0 - pp;
    const double qn = std::exp(std::log(q));  // q^n with n = 1, computed as numpy does
    int x = 0;
    double px = qn;
    double u = next_double();
    while (u > px) {
      ++x;
      if (x > 1) {
        x = 0;
        px = qn;
        u = next_double();
      } else {
        u -= px;
        px = (pp * px) / q;
      }
    }
    return flip ? 1 - x : x;
  }

 private:
  std::mt19937 gen_;
  bool has_gauss_ = false;
  double gauss_ = 0.0;
};

}  // namespace nxrt::cpu
