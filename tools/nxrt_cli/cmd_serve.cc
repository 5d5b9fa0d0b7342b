// `nxrt serve`: an OpenAI-compatible HTTP server for a model folder (cpp-httplib for
// HTTP, nlohmann-json for JSON). One generation engine: requests take turns on it, with
// a bounded queue (429 beyond it); streaming answers as server-sent events; a client that
// disconnects cancels its generation; one that outlives --request-timeout (waiting
// included) is stopped and answered 504; SIGINT/SIGTERM stop accepting, let in-flight
// requests finish and cancel those still running after --shutdown-timeout seconds.
#include <httplib.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "commands.h"
#include "genai/batch_decoder.h"
#include "genai/chat_prompt.h"
#include "genai/engine.h"
#include "serve_metrics.h"
#include "serve_openai.h"

namespace nxrt::cli {
namespace {

using Clock = std::chrono::steady_clock;

// The finish reason of a generation stopped by --request-timeout (never sent to clients:
// they get a 504 error instead).
constexpr const char* kTimedOut = "timed_out";

// Compares in time that depends on the lengths only, not on where the texts differ.
bool same_secret(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  const size_t n = std::max(a.size(), b.size());
  for (size_t i = 0; i < n; ++i)
    diff |= static_cast<unsigned char>((i < a.size() ? a[i] : 0) ^ (i < b.size() ? b[i] : 0));
  return diff == 0;
}

class Server {
 public:
  Server(const ServeArgs& args, std::unique_ptr<genai::Engine> engine,
         std::unique_ptr<genai::ChatPrompt> chat, Status chat_status,
         std::unique_ptr<genai::BatchDecoder> batch)
      : args_(args),
        engine_(std::move(engine)),
        chat_(std::move(chat)),
        batch_(std::move(batch)),
        chat_status_(std::move(chat_status)) {}
  ~Server() { batch_.reset(); }  // the scheduler thread ends before the engine goes

  Status run();
  void shutdown();
  // Ends the generations still running (the shutdown deadline passed).
  void cancel_all() { cancel_all_ = true; }

 private:
  void routes();
  bool authorized(const httplib::Request& req, httplib::Response& res);
  void answer_error(httplib::Response& res, const ApiError& e);
  void completions(const httplib::Request& req, httplib::Response& res, bool chat);
  // Streams the request's choices as server-sent events.
  void stream_choices(const ApiRequest& r, const ResponseId& id, httplib::DataSink& out);
  // Text pieces with, when the request asks for logprobs, those of the pieces' tokens
  // (null: none); returning false stops the generation.
  using PieceSink = std::function<bool(std::string_view piece, const OrderedJson* logprobs)>;
  // Runs one request on the engine (waiting for its turn); `sink` gets text pieces.
  // A request past its deadline ends with finish_reason kTimedOut.
  Expected<genai::Generation> generate(const ApiRequest& r, const PieceSink& sink);
  // The request's n choices, generated at once (each its own thread, joining the batch; on
  // the serial path they take turns, the later ones reusing the first one's prompt in the
  // cache); choice i is seeded seed + i and streams to sink_for(i).
  std::vector<Expected<genai::Generation>> run_choices(
      const ApiRequest& r, const std::function<PieceSink(size_t)>& sink_for);
  Expected<std::vector<genai::Generation>> generate_choices(const ApiRequest& r);
  Expected<genai::Generation> generate_serial(const std::vector<int32_t>& ids,
                                              const genai::SamplingOptions& options,
                                              const PieceSink& sink, bool chat,
                                              Clock::time_point deadline);
  Expected<genai::Generation> generate_batched(std::vector<int32_t> ids,
                                               const genai::SamplingOptions& options,
                                               const PieceSink& sink, bool chat,
                                               Clock::time_point deadline);
  ApiError timeout_error(const genai::Generation& result) const;
  size_t waiting() const { return batch_ ? batch_->waiting() : size_t(metrics_.queued.load()); }

  const ServeArgs& args_;
  std::unique_ptr<genai::Engine> engine_;
  std::unique_ptr<genai::ChatPrompt> chat_;
  std::unique_ptr<genai::BatchDecoder> batch_;  // null: requests take turns on engine_
  Status chat_status_;                          // why there is no chat template, when there is none
  httplib::Server http_;
  std::timed_mutex engine_mutex_;  // timed: a request waits for its turn until its deadline
  ServerMetrics metrics_;
  std::atomic<bool> cancel_all_{false};
};

void Server::answer_error(httplib::Response& res, const ApiError& e) {
  res.status = e.status;
  res.set_content(e.body(), "application/json");
}

bool Server::authorized(const httplib::Request& req, httplib::Response& res) {
  if (args_.api_key.empty()) return true;
  const std::string given = req.get_header_value("Authorization");
  if (same_secret(given, "Bearer " + args_.api_key)) return true;
  ApiError e;
  e.status = 401;
  e.message = "missing or wrong API key (Authorization: Bearer KEY)";
  e.code = "invalid_api_key";
  answer_error(res, e);
  return false;
}

Expected<genai::Generation> Server::generate(const ApiRequest& r, const PieceSink& sink) {
  const Clock::time_point start = Clock::now();
  std::string prompt = r.prompt;
  if (r.chat) {
    if (!chat_) return chat_status_;
    NXRT_ASSIGN_OR_RETURN(prompt, chat_->render(r.messages, true, &r.variables));
  }
  // The prompt is tokenized before the wait, so only engine time is serialized.
  std::vector<int32_t> ids = engine_->tokenizer().encode(prompt, false);
  genai::SamplingOptions options = r.sampling;
  const int64_t limit = batch_ ? batch_->capacity() : engine_->config().context_length;
  const int64_t room = limit - int64_t(ids.size());
  if (room >= 1) options.max_tokens = int(std::min<int64_t>(options.max_tokens, room));
  const Clock::time_point deadline = start + std::chrono::seconds(args_.request_timeout_s);
  auto result = batch_ ? generate_batched(std::move(ids), options, sink, r.chat, deadline)
                       : generate_serial(ids, options, sink, r.chat, deadline);
  if (result.ok() && result->finish_reason == kTimedOut) metrics_.timed_out += 1;
  if (result.ok()) {
    const genai::GenerationStats& s = result->stats;
    metrics_.prompt_tokens += uint64_t(s.prompt_tokens);
    metrics_.cached_prompt_tokens += uint64_t(s.cached_prompt_tokens);
    metrics_.completion_tokens += uint64_t(s.completion_tokens);
    if (s.completion_tokens > 0) metrics_.time_to_first_token.observe(s.time_to_first_token_s);
    if (s.completion_tokens > 1)
      metrics_.time_per_token.observe(s.decode_s / double(s.completion_tokens - 1));
  }
  return result;
}

std::vector<Expected<genai::Generation>> Server::run_choices(
    const ApiRequest& r, const std::function<PieceSink(size_t)>& sink_for) {
  const size_t n = size_t(r.n);
  std::vector<Expected<genai::Generation>> results(n, Status(StatusCode::kEngineError, "not run"));
  auto run = [&](size_t i) {
    ApiRequest choice = r;
    if (choice.sampling.seed) *choice.sampling.seed += uint64_t(i);  // distinct, reproducible
    results[i] = generate(choice, sink_for(i));
  };
  if (n == 1) {
    run(0);
    return results;
  }
  std::vector<std::thread> threads;
  for (size_t i = 0; i < n; ++i) threads.emplace_back(run, i);
  for (std::thread& t : threads) t.join();
  return results;
}

Expected<std::vector<genai::Generation>> Server::generate_choices(const ApiRequest& r) {
  std::vector<genai::Generation> out;
  for (Expected<genai::Generation>& g : run_choices(r, [](size_t) { return PieceSink(); })) {
    if (!g.ok()) return g.status();
    out.push_back(std::move(g).value());
  }
  return out;
}

Expected<genai::Generation> Server::generate_serial(const std::vector<int32_t>& ids,
                                                    const genai::SamplingOptions& options,
                                                    const PieceSink& sink, bool chat,
                                                    Clock::time_point deadline) {
  metrics_.queued += 1;
  std::unique_lock<std::timed_mutex> lock(engine_mutex_, deadline);
  metrics_.queued -= 1;
  if (!lock.owns_lock()) {
    genai::Generation never_ran;
    never_ran.finish_reason = kTimedOut;
    return never_ran;
  }
  metrics_.active += 1;
  bool timed_out = false;
  StreamLogprobs logprobs(chat, engine_->tokenizer());
  genai::LogprobSink on_logprobs;
  if (sink && options.logprobs)
    on_logprobs = [&](const genai::TokenLogprobs& t) { logprobs.add(t); };
  auto result = engine_->generate(
      std::span<const int32_t>(ids), options,
      [&](std::string_view piece) {
        if (Clock::now() > deadline) timed_out = true;
        if (timed_out || cancel_all_.load()) return false;
        if (!sink) return true;
        OrderedJson lp = logprobs.take();
        return sink(piece, lp.is_null() ? nullptr : &lp);
      },
      on_logprobs);
  metrics_.active -= 1;
  if (result.ok() && timed_out) result->finish_reason = kTimedOut;
  if (result.ok() && sink && logprobs.pending()) {  // tokens of an empty last piece
    OrderedJson lp = logprobs.take();
    sink("", &lp);
  }
  return result;
}

namespace {

// Text pieces (with their tokens' logprobs, or null) from the batch scheduler's thread to
// the request's thread.
struct Relay {
  std::mutex mutex;
  std::condition_variable cv;
  std::deque<std::pair<std::string, OrderedJson>> pieces;
  std::atomic<bool> cancelled{false};
};

}  // namespace

Expected<genai::Generation> Server::generate_batched(std::vector<int32_t> ids,
                                                     const genai::SamplingOptions& options,
                                                     const PieceSink& sink, bool chat,
                                                     Clock::time_point deadline) {
  auto relay = std::make_shared<Relay>();
  // Filled and emptied on the scheduler's thread only, until the job is done.
  auto logprobs = std::make_shared<StreamLogprobs>(chat, engine_->tokenizer());
  genai::TextSink to_relay = [relay, logprobs, this](std::string_view piece) {
    if (relay->cancelled.load() || cancel_all_.load()) return false;
    {
      std::lock_guard<std::mutex> lock(relay->mutex);
      relay->pieces.emplace_back(std::string(piece), logprobs->take());
    }
    relay->cv.notify_one();
    return true;
  };
  NXRT_ASSIGN_OR_RETURN(std::unique_ptr<genai::Sequence> sequence,
                        genai::Sequence::create(engine_->tokenizer(), engine_->config(),
                                                std::move(ids), options, std::move(to_relay)));
  if (sink && options.logprobs)
    sequence->on_logprobs([logprobs](const genai::TokenLogprobs& t) { logprobs->add(t); });
  NXRT_ASSIGN_OR_RETURN(std::shared_ptr<genai::BatchDecoder::Job> job,
                        batch_->submit(std::move(sequence)));
  std::deque<std::pair<std::string, OrderedJson>> got;
  bool timed_out = false;
  while (true) {
    // Every piece is relayed before the job is marked done, so after seeing it done one
    // more drain delivers the rest.
    const bool finished = job->ready();
    {
      std::unique_lock<std::mutex> lock(relay->mutex);
      if (!finished && relay->pieces.empty())
        relay->cv.wait_for(lock, std::chrono::milliseconds(20));
      got.swap(relay->pieces);
    }
    for (const auto& [piece, lp] : got)
      if (sink && !relay->cancelled.load() && !sink(piece, lp.is_null() ? nullptr : &lp))
        relay->cancelled = true;
    got.clear();
    if (finished) break;
    // Checked here, not in the relay sink, so a job still queued times out too: the
    // scheduler drops it at its first piece.
    if (!timed_out && Clock::now() > deadline) {
      timed_out = true;
      relay->cancelled = true;
    }
  }
  auto result = job->wait();
  if (result.ok() && timed_out) result->finish_reason = kTimedOut;
  if (result.ok() && sink && logprobs->pending() && !relay->cancelled.load()) {
    OrderedJson lp = logprobs->take();  // tokens of an empty last piece
    sink("", &lp);
  }
  return result;
}

ApiError Server::timeout_error(const genai::Generation& result) const {
  ApiError e;
  e.status = 504;
  e.type = "timeout_error";
  e.code = "request_timeout";
  e.message = "the request took longer than the server's --request-timeout (" +
              std::to_string(args_.request_timeout_s) + " s); it was stopped after " +
              std::to_string(result.stats.completion_tokens) + " generated tokens";
  return e;
}

void Server::completions(const httplib::Request& req, httplib::Response& res, bool chat) {
  if (!authorized(req, res)) return;
  auto r = std::make_shared<ApiRequest>();
  if (auto e = parse_request(req.body, chat, engine_->config().context_length, *r))
    return answer_error(res, *e);
  if (!r->model.empty() && r->model != args_.model_name) {
    ApiError e;
    e.status = 404;
    e.message =
        "model '" + r->model + "' does not exist (this server has '" + args_.model_name + "')";
    e.param = "model";
    e.code = "model_not_found";
    return answer_error(res, e);
  }
  if (waiting() >= size_t(args_.max_queue)) {
    ApiError e;
    e.status = 429;
    e.message = "the server is busy: " + std::to_string(args_.max_queue) +
                " requests are waiting; retry later";
    e.type = "rate_limit_error";
    return answer_error(res, e);
  }
  const ResponseId id = ResponseId::make(chat, args_.model_name);
  if (!r->stream) {
    auto results = generate_choices(*r);
    if (!results) {
      ApiError e;
      e.message = results.status().message();
      e.param = chat ? "messages" : "prompt";
      return answer_error(res, e);
    }
    for (const genai::Generation& result : *results)
      if (result.finish_reason == kTimedOut) return answer_error(res, timeout_error(result));
    res.set_content(response_body(id, *results, engine_->tokenizer()), "application/json");
    return;
  }
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider("text/event-stream",
                                   [this, r, id](size_t, httplib::DataSink& out) {
                                     stream_choices(*r, id, out);
                                     out.done();
                                     return true;
                                   });
}

void Server::stream_choices(const ApiRequest& r, const ResponseId& id, httplib::DataSink& out) {
  // The n choices generate at once (each its own thread, joining the batch or taking
  // turns); their chunks interleave, each naming its choice's index, one write at a time.
  std::mutex write_mutex;
  bool client_gone = false;
  auto send = [&](const std::string& event) {
    std::lock_guard<std::mutex> lock(write_mutex);
    if (!client_gone && !out.write(event.data(), event.size())) client_gone = true;
    return !client_gone;
  };
  const size_t n = size_t(r.n);
  std::vector<char> started(n, 0);  // a chunk (with the chat role) went out
  std::vector<Expected<genai::Generation>> results = run_choices(r, [&](size_t i) -> PieceSink {
    return [&, i](std::string_view piece, const OrderedJson* logprobs) {
      const bool ok = send(chunk_event(id, piece, nullptr, !started[i], i, logprobs));
      started[i] = 1;
      return ok;
    };
  });
  for (Expected<genai::Generation>& result : results) {
    if (!result.ok()) {
      ApiError e;
      e.message = result.status().message();
      send("data: " + e.body() + "\n\n");
      return;
    }
    if (result->finish_reason == kTimedOut) {
      send("data: " + timeout_error(*result).body() + "\n\n");
      return;
    }
    if (result->finish_reason == "cancelled") return;  // the client went away
  }
  for (size_t i = 0; i < n; ++i) {
    if (!started[i]) send(chunk_event(id, "", nullptr, true, i));
    send(chunk_event(id, "", results[i]->finish_reason.c_str(), false, i));
  }
  if (r.include_usage) {
    std::vector<genai::GenerationStats> stats;
    for (const Expected<genai::Generation>& g : results) stats.push_back(g->stats);
    send(usage_event(id, choices_usage(stats)));
  }
  send("data: [DONE]\n\n");
}

void Server::routes() {
  http_.Get("/health", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("{\"status\":\"ok\"}", "application/json");
  });
  http_.Get("/metrics", [this](const httplib::Request& req, httplib::Response& res) {
    if (!authorized(req, res)) return;
    if (batch_) {
      metrics_.queued = int64_t(batch_->waiting());
      metrics_.active = int64_t(batch_->active());
      const genai::BatchDecoder::Counts counts = batch_->counts();
      metrics_.prefill_runs = counts.runs;
      metrics_.prefill_sequences = counts.sequences;
      metrics_.slot_moves = counts.slot_moves;
    }
    res.set_content(metrics_.prometheus_text(), "text/plain; version=0.0.4");
  });
  http_.Get("/v1/models", [this](const httplib::Request& req, httplib::Response& res) {
    if (!authorized(req, res)) return;
    OrderedJson model = {
        {"id", args_.model_name}, {"object", "model"}, {"created", 0}, {"owned_by", "nxrt"}};
    res.set_content(OrderedJson{{"object", "list"}, {"data", {model}}}.dump(), "application/json");
  });
  http_.Post("/v1/completions", [this](const httplib::Request& req, httplib::Response& res) {
    completions(req, res, false);
  });
  http_.Post("/v1/chat/completions", [this](const httplib::Request& req, httplib::Response& res) {
    completions(req, res, true);
  });
  // Unknown routes, oversized bodies and the like: an OpenAI-style body with the status.
  // httplib calls it for every status >= 400: answers the routes wrote are kept.
  http_.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    ApiError e;
    e.status = res.status;
    e.message = res.status == 404   ? "no route " + req.method + " " + req.path
                : res.status == 413 ? std::string("the request body is too large")
                                    : "HTTP error " + std::to_string(res.status);
    res.set_content(e.body(), "application/json");
  });
  http_.set_exception_handler(
      [](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
        ApiError e;
        e.status = 500;
        e.type = "server_error";
        e.message = "internal error";
        res.status = 500;
        res.set_content(e.body(), "application/json");
      });
  http_.set_logger([this](const httplib::Request& req, const httplib::Response& res) {
    static const char* known[] = {"/health", "/metrics", "/v1/models", "/v1/completions",
                                  "/v1/chat/completions"};
    std::string route = "other";
    for (const char* k : known)
      if (req.path == k) route = k;
    metrics_.count_request(route, res.status);
  });
}

Status Server::run() {
  routes();
  http_.set_payload_max_length(args_.max_body_bytes);
  http_.set_read_timeout(std::chrono::seconds(args_.read_timeout_s));
  http_.set_write_timeout(std::chrono::seconds(args_.read_timeout_s));
  const size_t workers = size_t(args_.max_queue) + 4;  // waiters, streams and quick routes
  http_.new_task_queue = [workers] { return new httplib::ThreadPool(workers); };
  if (!http_.bind_to_port(args_.host, args_.port))
    return invalid_argument("cannot listen on ", args_.host, ":", args_.port,
                            " (in use, or not an address of this machine)");
  std::fprintf(stderr, "nxrt serve: %s on http://%s:%d (OpenAI API under /v1)\n",
               args_.model_name.c_str(), args_.host.c_str(), args_.port);
  std::fflush(stderr);
  if (!http_.listen_after_bind()) return runtime_error("the HTTP server stopped on an error");
  return Status();
}

void Server::shutdown() { http_.stop(); }

}  // namespace

Status serve_command(const ServeArgs& in) {
  ServeArgs args = in;
  std::error_code ec;
  if (!std::filesystem::is_directory(args.model, ec))
    return make_error(StatusCode::kNoSuchFile, "model folder '", args.model,
                      "' does not exist (a .gguf file must be converted first: python -m "
                      "nxrt.genai convert FILE FOLDER)");
  if (args.model_name.empty())
    args.model_name = std::filesystem::path(args.model).lexically_normal().filename().string();
  if (args.model_name.empty())
    args.model_name =
        std::filesystem::path(args.model).lexically_normal().parent_path().filename().string();
  // Signals go to one watcher thread: block them here, before any thread starts.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  genai::EngineOptions options;
  options.threads = args.threads;
  NXRT_ASSIGN_OR_RETURN(std::unique_ptr<genai::Engine> engine,
                        genai::Engine::load(args.model, options));
  auto chat = genai::ChatPrompt::from_folder(args.model);
  Status chat_status = chat.ok() ? Status() : chat.status();
  if (!chat.ok())
    std::fprintf(stderr, "nxrt serve: /v1/chat/completions disabled: %s\n",
                 chat_status.message().c_str());
  std::unique_ptr<genai::BatchDecoder> batch;
  if (args.batch > 1 && engine->cache_in_place()) {
    NXRT_ASSIGN_OR_RETURN(
        batch, genai::BatchDecoder::create(*engine, args.batch, args.max_sequence_length));
  } else if (args.batch > 1) {
    std::fprintf(stderr,
                 "nxrt serve: requests take turns (continuous batching needs a model "
                 "whose cache past and present share, e.g. GroupQueryAttention)\n");
  }
  Server server(args, std::move(engine), chat.ok() ? std::move(*chat) : nullptr, chat_status,
                std::move(batch));
  std::mutex mutex;
  std::condition_variable finished_cv;
  bool finished = false;
  std::thread watcher([&] {
    int signal = 0;
    sigwait(&signals, &signal);
    std::unique_lock<std::mutex> lock(mutex);
    if (finished) return;  // the server ended by itself; main woke us
    std::fprintf(stderr, "nxrt serve: stopping (signal %d): finishing requests in flight\n",
                 signal);
    server.shutdown();
    // In-flight requests get until the deadline, then their generations are cancelled.
    if (!finished_cv.wait_for(lock, std::chrono::seconds(args.shutdown_timeout_s),
                              [&] { return finished; }))
      server.cancel_all();
  });
  Status status = server.run();
  {
    std::lock_guard<std::mutex> lock(mutex);
    finished = true;
  }
  finished_cv.notify_all();
  pthread_kill(watcher.native_handle(), SIGTERM);  // wakes a watcher still in sigwait
  watcher.join();
  return status;
}

}  // namespace nxrt::cli
