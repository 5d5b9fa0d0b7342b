// `nxrt serve` metrics in Prometheus' text format: requests by route and status, tokens
// in and out, time to first token and per-token latency histograms, queue depth and
// active sequences. Thread-safe.
#pragma once

#include <array>
#include <atomic>
#include <map>
#include <mutex>
#include <string>
#include <utility>

namespace nxrt::cli {

class Histogram {
 public:
  static constexpr std::array<double, 12> kBounds = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                                     0.1,   0.25,   0.5,   1.0,  2.5,   10.0};
  void observe(double seconds);
  void write(std::string& out, const char* name, const char* help) const;

 private:
  mutable std::mutex mutex_;
  std::array<uint64_t, kBounds.size() + 1> counts_{};  // the last one: above every bound
  double sum_ = 0.0;
  uint64_t total_ = 0;
};

class ServerMetrics {
 public:
  void count_request(const std::string& route, int status);
  std::atomic<uint64_t> prompt_tokens{0}, cached_prompt_tokens{0}, completion_tokens{0},
      timed_out{0};
  std::atomic<int64_t> queued{0}, active{0};
  // Prompt runs of the batch decoder, and the prompts they ran (several a run when
  // requests arrive together).
  std::atomic<int64_t> prefill_runs{0}, prefill_sequences{0};
  std::atomic<int64_t> slot_moves{0};  // sequences moved down to close a gap in the batch
  Histogram time_to_first_token, time_per_token;
  std::string prometheus_text() const;

 private:
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, int>, uint64_t> requests_;
};

}  // namespace nxrt::cli
