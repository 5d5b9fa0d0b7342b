#include "serve_metrics.h"

#include <cstdio>

namespace nxrt::cli {

void Histogram::observe(double seconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t bucket = 0;
  while (bucket < kBounds.size() && seconds > kBounds[bucket]) ++bucket;
  ++counts_[bucket];
  sum_ += seconds;
  ++total_;
}

void Histogram::write(std::string& out, const char* name, const char* help) const {
  std::lock_guard<std::mutex> lock(mutex_);
  char line[160];
  out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " histogram\n";
  uint64_t cumulative = 0;
  for (size_t i = 0; i < kBounds.size(); ++i) {
    cumulative += counts_[i];
    std::snprintf(line, sizeof(line), "%s_bucket{le=\"%g\"} %llu\n", name, kBounds[i],
                  static_cast<unsigned long long>(cumulative));
    out += line;
  }
  std::snprintf(line, sizeof(line), "%s_bucket{le=\"+Inf\"} %llu\n%s_sum %.6f\n%s_count %llu\n",
                name, static_cast<unsigned long long>(total_), name, sum_, name,
                static_cast<unsigned long long>(total_));
  out += line;
}

void ServerMetrics::count_request(const std::string& route, int status) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++requests_[{route, status}];
}

std::string ServerMetrics::prometheus_text() const {
  std::string out =
      "# HELP nxrt_requests_total HTTP requests by route and status.\n"
      "# TYPE nxrt_requests_total counter\n";
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& [key, count] : requests_)
      out += "nxrt_requests_total{route=\"" + key.first + "\",status=\"" +
             std::to_string(key.second) + "\"} " + std::to_string(count) + "\n";
  }
  auto gauge = [&](const char* name, const char* type, const char* help, long long value) {
    out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n" +
           name + " " + std::to_string(value) + "\n";
  };
  gauge("nxrt_prompt_tokens_total", "counter", "Prompt tokens of finished requests.",
        static_cast<long long>(prompt_tokens.load()));
  gauge("nxrt_cached_prompt_tokens_total", "counter",
        "Prompt tokens whose keys and values a slot's cache still held (not run again).",
        static_cast<long long>(cached_prompt_tokens.load()));
  gauge("nxrt_completion_tokens_total", "counter", "Generated tokens.",
        static_cast<long long>(completion_tokens.load()));
  gauge("nxrt_timed_out_requests_total", "counter",
        "Requests stopped by --request-timeout (answered 504).",
        static_cast<long long>(timed_out.load()));
  gauge("nxrt_prefill_runs_total", "counter", "Runs of prompts (one or several at once).",
        prefill_runs.load());
  gauge("nxrt_prefill_sequences_total", "counter", "Prompts those runs ran.",
        prefill_sequences.load());
  gauge("nxrt_slot_moves_total", "counter",
        "Sequences moved to a lower cache slot so that decode steps run no empty slots.",
        slot_moves.load());
  gauge("nxrt_queue_depth", "gauge", "Requests waiting for the engine.", queued.load());
  gauge("nxrt_active_sequences", "gauge", "Sequences being generated.", active.load());
  time_to_first_token.write(out, "nxrt_time_to_first_token_seconds",
                            "From the start of generation to the first token.");
  time_per_token.write(out, "nxrt_time_per_output_token_seconds",
                       "Mean time per generated token after the first, per request.");
  return out;
}

}  // namespace nxrt::cli
