// The static memory plan of one run state: intermediates at fixed offsets in one arena.
//
// A static graph's plan is predicted at session creation from shape inference
// (runtime/predicted_traffic.h) and adopted before a state's first run; otherwise the
// plan is learned from runs:
// each run records its pool traffic (acquire of block k with its size, release of block k,
// in order). When two consecutive runs with the same feed shapes record the same traffic,
// the graph is static for those shapes: every block gets an offset in one arena (blocks
// whose lifetimes overlap never share bytes; the largest are placed first) and later runs
// with those shapes take their intermediates from it, one comparison per acquire and
// release, no pool search. A planned run checks that its traffic follows the recording;
// the first difference (a data-dependent shape, an If taking the other branch) sends the
// rest of that run to the buffer pool and drops the plan. Blocks already handed out stay
// valid: up to that point the run did exactly what the recording did, when the live blocks
// were disjoint.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/buffer_pool.h"
#include "core/tensor.h"
#include "core/value.h"

namespace nxrt {

class MemoryPlan {
 public:
  MemoryPlan() = default;
  ~MemoryPlan();
  MemoryPlan(const MemoryPlan&) = delete;
  MemoryPlan& operator=(const MemoryPlan&) = delete;

  // Starts a run: planned when a plan exists for these feed and outer-value shapes.
  void begin_run(std::span<const Value* const> feeds, std::span<const Tensor* const> outer);
  // Memory for an intermediate of `bytes`, from the arena or from `pool`; `*id` names the
  // block for release(), `*capacity` gets its size. nullptr when out of memory.
  void* acquire(size_t bytes, BufferPool& pool, int* id, size_t* capacity);
  // Gives a block back; returns its size.
  size_t release(int id, void* data, BufferPool& pool);
  // Ends the run (after every block was released); `ok` is false when it failed.
  void end_run(bool ok, BufferPool& pool);
  // Plans from a predicted run instead of a recorded one, for feeds whose signature is
  // `signature` (as signature_of() writes it): `events` as recorded (k: acquire of block
  // k, ~k: its release), `bytes` by block. Runs check it as they check a learned plan; a
  // run that differs drops it and learning starts over.
  void adopt(std::span<const int64_t> signature, std::span<const int32_t> events,
             std::span<const size_t> bytes, BufferPool& pool);
  // The run signature of these feeds and outer values: what selects a plan.
  static void signature_of(std::span<const Value* const> feeds,
                           std::span<const Tensor* const> outer, std::vector<int64_t>& out);
  // A run signature's part for one tensor feed (or outer value).
  static void append_signature(std::vector<int64_t>& signature, DataType dtype,
                               std::span<const int64_t> dims);

  bool has_plan() const { return planned_; }
  // The current plan came from adopt(), not from recorded runs.
  bool predicted() const { return planned_ && predicted_; }
  // adopt() was called (a prediction is offered once per run state).
  bool offered() const { return offered_; }
  size_t arena_bytes() const { return planned_ ? arena_bytes_ : 0; }
  uint64_t planned_runs() const { return planned_runs_; }

 private:
  enum class Mode : uint8_t { kRecord, kPlanned, kDiverged };
  // One run's pool traffic and the feed shapes it ran with.
  struct Trace {
    std::vector<int64_t> signature;
    std::vector<int32_t> events;  // k: acquire of block k; ~k: its release
    std::vector<size_t> sizes;    // by block, rounded to the arena's alignment
    void clear() {
      signature.clear();
      events.clear();
      sizes.clear();
    }
    bool same(const Trace& other) const {
      return signature == other.signature && events == other.events && sizes == other.sizes;
    }
  };

  void diverge();
  void build_plan(BufferPool& pool);

  Mode mode_ = Mode::kRecord;
  bool planned_ = false;
  bool predicted_ = false;
  bool offered_ = false;
  bool last_recorded_valid_ = false;  // last_ holds the run just before this one
  Trace current_;                     // this run's (recording) or its signature (planned)
  Trace last_;                        // the previous run's recording
  Trace plan_;                        // what the plan was made from
  std::vector<size_t> offsets_;       // by block
  size_t position_ = 0;               // next expected event of plan_.events
  int32_t next_block_ = 0;
  std::byte* arena_ = nullptr;
  size_t arena_bytes_ = 0;
  size_t arena_capacity_ = 0;
  uint64_t planned_runs_ = 0;
  // Scratch of build_plan(), kept so a re-plan does not allocate once grown.
  std::vector<size_t> starts_, ends_;
  std::vector<int32_t> order_, placed_;
  std::vector<std::pair<size_t, size_t>> taken_;
};

}  // namespace nxrt
