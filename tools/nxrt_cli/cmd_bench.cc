#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>

#include "alloc_count.h"
#include "commands.h"

namespace nxrt::cli {
namespace {

using Clock = std::chrono::steady_clock;

// A "VmXXX:   1234 kB" field of /proc/self/status, in bytes (-1 when unavailable).
int64_t proc_status_bytes(const char* field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  const size_t n = std::strlen(field);
  while (std::getline(in, line))
    if (line.compare(0, n, field) == 0 && line.size() > n && line[n] == ':')
      return std::strtoll(line.c_str() + n + 1, nullptr, 10) * 1024;
  return -1;
}

int thread_count() {
  DIR* dir = opendir("/proc/self/task");
  if (!dir) return -1;
  int n = 0;
  while (dirent* e = readdir(dir)) n += e->d_name[0] != '.';
  closedir(dir);
  return n;
}

double percentile(const std::vector<double>& sorted, double p) {
  // Nearest rank: the smallest value with at least p% of the samples at or below it.
  size_t rank = size_t(std::ceil(p / 100.0 * double(sorted.size())));
  return sorted[std::min(sorted.size(), std::max<size_t>(rank, 1)) - 1];
}

class ProgressBar {
 public:
  ProgressBar(bool enabled, int total)
      : enabled_(enabled && isatty(STDOUT_FILENO)), total_(total) {}
  // Drawn only once the loop has taken half a second, so short benchmarks stay quiet.
  void update(int done, Clock::time_point start) {
    if (!enabled_) return;
    auto now = Clock::now();
    if (now - start < std::chrono::milliseconds(500) ||
        now - last_ < std::chrono::milliseconds(100))
      return;
    last_ = now;
    drawn_ = true;
    constexpr int kWidth = 40;
    int filled = int(int64_t(done) * kWidth / total_);
    char bar[kWidth + 1];
    for (int i = 0; i < kWidth; ++i) bar[i] = i < filled ? '#' : '.';
    bar[kWidth] = '\0';
    double elapsed = std::chrono::duration<double>(now - start).count();
    double eta = done ? elapsed * (total_ - done) / done : 0;
    std::printf("\r  [%s] %3d%% %d/%d  eta %.1fs ", bar, int(int64_t(done) * 100 / total_), done,
                total_, eta);
    std::fflush(stdout);
  }
  void finish() {
    if (!drawn_) return;
    std::printf("\r\033[K");
    std::fflush(stdout);
  }

 private:
  bool enabled_;
  int total_;
  bool drawn_ = false;
  Clock::time_point last_{};
};

}  // namespace

Status bench_command(const BenchArgs& args) {
  NXRT_RETURN_IF_ERROR(check_model_file(args.model));
  struct stat st {};
  ::stat(args.model.c_str(), &st);
  const int64_t model_bytes = st.st_size;
  const int64_t rss_before = proc_status_bytes("VmRSS");
  const int threads_before = thread_count();

  SessionConfig config;
  config.intra_op_num_threads = args.threads;
  config.inter_op_num_threads = 1;
  auto load_start = Clock::now();
  NXRT_ASSIGN_OR_RETURN(auto session, load_session(args.model, config));
  double load_ms = std::chrono::duration<double, std::milli>(Clock::now() - load_start).count();
  const int threads_after = thread_count();
  NXRT_ASSIGN_OR_RETURN(Feeds feeds, make_feeds(*session, args.inputs));

  std::printf("model: %s (%s)\n", args.model.c_str(), bytes_text(double(model_bytes)).c_str());
  std::printf("session: created in %.1f ms, %d intra-op thread%s, threads created: %d\n", load_ms,
              args.threads, args.threads == 1 ? "" : "s", threads_after - threads_before);
  std::printf("inputs:\n");
  for (size_t i = 0; i < feeds.names.size(); ++i) {
    const Tensor& t = feeds.values[i].tensor;
    std::printf("  %-16s %-8s %-14s %s\n", feeds.names[i].c_str(),
                std::string(dtype_name(t.dtype())).c_str(), dims_text(t.shape()).c_str(),
                feeds.sources[i].c_str());
  }

  std::vector<Value> outputs;
  RunFlags flags;
  auto run_once = [&]() -> Status {
    Status s = session->run(feeds.names, feeds.values, {}, outputs, flags);
    if (!s.ok()) return Status(s.code(), "run failed: " + s.message());
    return Status();
  };

  // The first run fixes the output shapes; with binding on, later runs write into caller
  // buffers of those shapes, the way a streaming app uses the runtime.
  const int warmup = std::max(args.warmup, args.bind_outputs ? 1 : 0);
  for (int i = 0; i < warmup; ++i) NXRT_RETURN_IF_ERROR(run_once());
  std::vector<Tensor> bound;
  int bound_count = 0;
  if (args.bind_outputs) {
    for (const Value& v : outputs) {
      if (v.is_sequence() || v.is_none()) {
        bound.emplace_back();
        continue;
      }
      NXRT_ASSIGN_OR_RETURN(Tensor t, Tensor::allocate(v.tensor.dtype(), v.tensor.shape()));
      bound.push_back(std::move(t));
      ++bound_count;
    }
    flags.bound_outputs = bound;
    NXRT_RETURN_IF_ERROR(run_once());  // the first bound run may size internal state
  }

  // Resident memory of the process holding the warm session, taken before the benchmark's
  // own bookkeeping (the latency samples) is allocated.
  const int64_t rss = proc_status_bytes("VmRSS");
  const int64_t rss_anon = proc_status_bytes("RssAnon");
  const int64_t rss_file = proc_status_bytes("RssFile");

  std::printf("warm-up: %d run%s; measuring %d runs\n", warmup, warmup == 1 ? "" : "s", args.runs);
  std::fflush(stdout);
  std::vector<double> latencies_ms;
  latencies_ms.reserve(size_t(args.runs));
  uint64_t allocations = 0;
  ProgressBar bar(args.progress, args.runs);
  const auto loop_start = Clock::now();
  for (int i = 0; i < args.runs; ++i) {
    Status s;
    uint64_t counted = 0;
    auto t0 = Clock::now();
    {
      AllocScope scope;
      s = session->run(feeds.names, feeds.values, {}, outputs, flags);
      counted = scope.count();
    }
    auto t1 = Clock::now();
    if (!s.ok()) {
      bar.finish();
      return Status(s.code(), "run " + std::to_string(i) + " failed: " + s.message());
    }
    allocations += counted;
    latencies_ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    bar.update(i + 1, loop_start);
  }
  const double wall_s = std::chrono::duration<double>(Clock::now() - loop_start).count();
  bar.finish();

  std::vector<double> sorted = latencies_ms;
  std::sort(sorted.begin(), sorted.end());
  double total_ms = 0;
  for (double v : latencies_ms) total_ms += v;
  std::printf("latency (ms): p50 %.4f  p90 %.4f  p99 %.4f  min %.4f  max %.4f  mean %.4f\n",
              percentile(sorted, 50), percentile(sorted, 90), percentile(sorted, 99),
              sorted.front(), sorted.back(), total_ms / double(sorted.size()));
  std::printf("throughput: %.1f runs/s (one stream, %.2f s wall)\n", double(args.runs) / wall_s,
              wall_s);
  const std::string binding = args.bind_outputs ? std::to_string(bound_count) + " of " +
                                                      std::to_string(outputs.size()) +
                                                      " outputs bound to caller buffers"
                                                : "outputs allocated by the runtime";
  if (alloc_counting_available())
    std::printf("heap allocations per warm run: %.2f (%llu in %d runs; %s)\n",
                double(allocations) / double(args.runs),
                static_cast<unsigned long long>(allocations), args.runs, binding.c_str());
  else
    std::printf("heap allocations per warm run: not counted (sanitizer build)\n");

  const Session::MemoryPlanStats plan = session->memory_plan_stats();
  if (plan.arena_bytes > 0)
    std::printf(
        "static memory plan: intermediates in one %s arena (%llu runs from it, warm-up "
        "included), %s\n",
        bytes_text(double(plan.arena_bytes)).c_str(),
        static_cast<unsigned long long>(plan.planned_runs),
        plan.predicted
            ? "predicted by shape inference before the first run"
            : ("learned from runs (not predicted: " + plan.not_predicted_why + ")").c_str());
  else
    std::printf("static memory plan: none (shapes vary between runs, or no intermediates)\n");
  if (plan.subgraphs_run > 0)
    std::printf(
        "subgraph memory plans: %zu of the %zu subgraphs that ran have one (learned from "
        "runs), %s of arenas\n",
        plan.subgraphs_planned, plan.subgraphs_run,
        bytes_text(double(plan.subgraph_arena_bytes)).c_str());

  const int64_t hwm = proc_status_bytes("VmHWM");
  const int64_t budget = 2 * model_bytes + 10 * 1024 * 1024;
  std::printf("peak resident memory (VmHWM): %s\n", bytes_text(double(hwm)).c_str());
  // The budget is for what the session holds: the increase since before loading. The
  // whole process also holds this tool's own code (CLI, HTTP server, tokenizers), which
  // an application embedding libnxrt does not load (tests/c/memory_test.c measures that
  // case as a whole process).
  const int64_t held = rss - rss_before;
  std::printf(
      "resident memory (VmRSS): %s, of which the session holds %s (anonymous %s, "
      "file-backed %s in all); budget for the session 2 x model + 10 MiB = %s: %s\n",
      bytes_text(double(rss)).c_str(), bytes_text(double(held)).c_str(),
      bytes_text(double(rss_anon)).c_str(), bytes_text(double(rss_file)).c_str(),
      bytes_text(double(budget)).c_str(), held <= budget ? "within budget" : "OVER budget");
  return Status();
}

}  // namespace nxrt::cli
