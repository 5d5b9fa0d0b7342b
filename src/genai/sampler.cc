#include "genai/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace nxrt::genai {

Status SamplingOptions::check() const {
  if (max_tokens < 1) return invalid_argument("max_tokens must be at least 1, not ", max_tokens);
  if (!(temperature >= 0.0f) || !std::isfinite(temperature))
    return invalid_argument("temperature must be a finite number >= 0, not ", temperature);
  if (!(top_p > 0.0f && top_p <= 1.0f))
    return invalid_argument("top_p must be in (0, 1], not ", top_p);
  if (!(min_p >= 0.0f && min_p <= 1.0f))
    return invalid_argument("min_p must be in [0, 1], not ", min_p);
  if (top_k < 0) return invalid_argument("top_k must not be negative, not ", top_k);
  if (top_logprobs < 0 || top_logprobs > 20)
    return invalid_argument("top_logprobs must be in [0, 20], not ", top_logprobs);
  if (!(repetition_penalty > 0.0f) || !std::isfinite(repetition_penalty))
    return invalid_argument("repetition_penalty must be positive, not ", repetition_penalty);
  if (!std::isfinite(frequency_penalty) || !std::isfinite(presence_penalty))
    return invalid_argument("frequency_penalty and presence_penalty must be finite");
  return Status();
}

Sampler::Sampler(const SamplingOptions& options)
    : options_(options), rng_(options.seed ? *options.seed : std::random_device{}()) {}

void Sampler::penalize(std::span<const int32_t> prompt, std::span<const int32_t> generated) {
  const bool repetition = options_.repetition_penalty != 1.0f;
  const bool frequency = options_.frequency_penalty != 0.0f || options_.presence_penalty != 0.0f;
  if (!repetition && !frequency) return;
  const size_t vocab = work_.size();
  counts_.resize(vocab, 0);
  seen_.resize(vocab, 0);
  touched_.clear();
  auto touch = [&](int32_t id) {
    if (id < 0 || size_t(id) >= vocab) return false;
    if (!seen_[size_t(id)]) touched_.push_back(id);
    seen_[size_t(id)] = 1;
    return true;
  };
  if (repetition)
    for (int32_t id : prompt) touch(id);
  for (int32_t id : generated)
    if (touch(id)) ++counts_[size_t(id)];
  for (int32_t id : touched_) {
    float& v = work_[size_t(id)];
    const bool in_output = counts_[size_t(id)] > 0;
    if (repetition) v = v > 0 ? v / options_.repetition_penalty : v * options_.repetition_penalty;
    if (frequency && in_output)
      v -= options_.frequency_penalty * float(counts_[size_t(id)]) + options_.presence_penalty;
  }
  for (int32_t id : touched_) {  // back to zero for the next step
    counts_[size_t(id)] = 0;
    seen_[size_t(id)] = 0;
  }
}

int32_t Sampler::sample() {
  const size_t vocab = work_.size();
  const double inv_t = 1.0 / double(options_.temperature);
  order_.resize(vocab);
  std::iota(order_.begin(), order_.end(), 0);
  // Best first, ties by id (a stable order); only the top k need sorting.
  auto better = [&](int32_t a, int32_t b) {
    return work_[size_t(a)] > work_[size_t(b)] || (work_[size_t(a)] == work_[size_t(b)] && a < b);
  };
  size_t keep = vocab;
  if (options_.top_k > 0 && size_t(options_.top_k) < vocab) {
    keep = size_t(options_.top_k);
    std::partial_sort(order_.begin(), order_.begin() + std::ptrdiff_t(keep), order_.end(), better);
  } else {
    std::sort(order_.begin(), order_.end(), better);
  }
  probs_.resize(keep);
  const double top = double(work_[size_t(order_[0])]) * inv_t;
  double sum = 0.0;
  for (size_t i = 0; i < keep; ++i) {
    probs_[i] = std::exp(double(work_[size_t(order_[i])]) * inv_t - top);
    sum += probs_[i];
  }
  for (size_t i = 0; i < keep; ++i) probs_[i] /= sum;
  if (options_.top_p < 1.0f) {
    // The smallest prefix whose mass reaches top_p (at least one token).
    double mass = 0.0;
    size_t n = 0;
    while (n < keep && mass < double(options_.top_p)) mass += probs_[n++];
    keep = std::max<size_t>(1, n);
  }
  if (options_.min_p > 0.0f) {
    const double floor = double(options_.min_p) * probs_[0];
    size_t n = 0;
    while (n < keep && probs_[n] >= floor) ++n;
    keep = std::max<size_t>(1, n);
  }
  double total = 0.0;
  for (size_t i = 0; i < keep; ++i) total += probs_[i];
  double u = std::uniform_real_distribution<double>(0.0, total)(rng_);
  for (size_t i = 0; i < keep; ++i) {
    u -= probs_[i];
    if (u < 0.0) return order_[i];
  }
  return order_[keep - 1];  // rounding left u at the very top
}

Sampler::Pick Sampler::pick(std::span<const float> logits, std::span<const int32_t> prompt,
                            std::span<const int32_t> generated) {
  work_.assign(logits.begin(), logits.end());
  penalize(prompt, generated);
  int32_t token = 0;
  if (options_.temperature == 0.0f) {
    // The first maximum, as numpy's argmax; NaN logits never win.
    float best = -INFINITY;
    for (size_t i = 0; i < work_.size(); ++i)
      if (work_[i] > best) {
        best = work_[i];
        token = int32_t(i);
      }
  } else {
    token = sample();
  }
  float logprob = 0.0f;
  if (options_.logprobs) {
    double m = -INFINITY;
    for (float v : logits) m = std::max(m, double(v));
    double sum = 0.0;
    for (float v : logits) sum += std::exp(double(v) - m);
    const double log_sum = std::log(sum);
    logprob = float(double(logits[size_t(token)]) - m - log_sum);
    top_.clear();
    if (options_.top_logprobs > 0) {
      // A small heap of the best ids (ties by id, as the sort in sample()).
      const size_t k = std::min(size_t(options_.top_logprobs), logits.size());
      auto better = [](const std::pair<int32_t, float>& a, const std::pair<int32_t, float>& b) {
        return a.second > b.second || (a.second == b.second && a.first < b.first);
      };
      for (size_t i = 0; i < logits.size(); ++i) {
        const std::pair<int32_t, float> entry{int32_t(i), logits[i]};
        if (top_.size() < k) {
          top_.push_back(entry);
          std::push_heap(top_.begin(), top_.end(), better);  // the worst kept on top
        } else if (better(entry, top_.front())) {
          std::pop_heap(top_.begin(), top_.end(), better);
          top_.back() = entry;
          std::push_heap(top_.begin(), top_.end(), better);
        }
      }
      std::sort_heap(top_.begin(), top_.end(), better);
      for (auto& entry : top_) entry.second = float(double(entry.second) - m - log_sum);
    }
  }
  return {token, logprob, top_};
}

}  // namespace nxrt::genai
