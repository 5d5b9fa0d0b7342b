#include "runtime/memory_plan.h"

#include <algorithm>
#include <cstdlib>
#include <limits>

namespace nxrt {

namespace {

constexpr size_t kAlignment = 64;

size_t round_up(size_t bytes) { return bytes == 0 ? kAlignment : (bytes + 63) / 64 * 64; }

void append_shape(std::vector<int64_t>& signature, const Tensor& t) {
  MemoryPlan::append_signature(signature, t.dtype(), t.shape().span());
}

}  // namespace

MemoryPlan::~MemoryPlan() { std::free(arena_); }

void MemoryPlan::append_signature(std::vector<int64_t>& signature, DataType dtype,
                                  std::span<const int64_t> dims) {
  signature.push_back(int64_t(dtype));
  signature.push_back(int64_t(dims.size()));
  signature.insert(signature.end(), dims.begin(), dims.end());
}

void MemoryPlan::adopt(std::span<const int64_t> signature, std::span<const int32_t> events,
                       std::span<const size_t> bytes, BufferPool& pool) {
  offered_ = true;
  current_.clear();
  current_.signature.assign(signature.begin(), signature.end());
  current_.events.assign(events.begin(), events.end());
  for (size_t b : bytes) current_.sizes.push_back(round_up(b));
  last_recorded_valid_ = false;
  build_plan(pool);
  predicted_ = planned_;
}

void MemoryPlan::signature_of(std::span<const Value* const> feeds,
                              std::span<const Tensor* const> outer, std::vector<int64_t>& out) {
  constexpr int64_t kNotFed = -1, kSequence = -2;
  for (const Value* feed : feeds) {
    if (!feed)
      out.push_back(kNotFed);
    else if (feed->is_sequence())
      out.push_back(kSequence);  // element shapes unknown here: the trace check guards
    else
      append_shape(out, feed->tensor);
  }
  for (const Tensor* t : outer) {
    if (t && t->defined())
      append_shape(out, *t);
    else
      out.push_back(kNotFed);
  }
}

void MemoryPlan::begin_run(std::span<const Value* const> feeds,
                           std::span<const Tensor* const> outer) {
  current_.clear();
  signature_of(feeds, outer, current_.signature);
  position_ = 0;
  next_block_ = 0;
  if (planned_ && current_.signature == plan_.signature) {
    mode_ = Mode::kPlanned;
    last_recorded_valid_ = false;  // only consecutive recordings make a plan
  } else {
    mode_ = Mode::kRecord;
  }
}

void* MemoryPlan::acquire(size_t bytes, BufferPool& pool, int* id, size_t* capacity) {
  const size_t rounded = round_up(bytes);
  if (mode_ == Mode::kPlanned) {
    const int32_t block = next_block_;
    if (position_ < plan_.events.size() && plan_.events[position_] == block &&
        rounded <= plan_.sizes[size_t(block)]) {
      ++position_;
      ++next_block_;
      *id = block;
      *capacity = plan_.sizes[size_t(block)];
      return arena_ + offsets_[size_t(block)];
    }
    diverge();
  }
  void* data = pool.acquire(bytes, capacity);
  if (!data) return nullptr;
  if (mode_ == Mode::kRecord) {
    *id = next_block_++;
    current_.events.push_back(*id);
    current_.sizes.push_back(rounded);
  } else {
    *id = -1;
  }
  return data;
}

size_t MemoryPlan::release(int id, void* data, BufferPool& pool) {
  if (mode_ == Mode::kRecord) {
    current_.events.push_back(~id);
    return pool.release(data);
  }
  if (id < 0) return pool.release(data);
  // An arena block: nothing to free, but the order must still follow the recording.
  if (mode_ == Mode::kPlanned) {
    if (position_ < plan_.events.size() && plan_.events[position_] == ~id)
      ++position_;
    else
      diverge();
  }
  return plan_.sizes[size_t(id)];
}

void MemoryPlan::diverge() { mode_ = Mode::kDiverged; }

void MemoryPlan::end_run(bool ok, BufferPool& pool) {
  if (mode_ == Mode::kPlanned && ok && position_ != plan_.events.size()) diverge();
  switch (mode_) {
    case Mode::kPlanned:
      if (ok) ++planned_runs_;
      return;
    case Mode::kDiverged:
      planned_ = false;
      last_recorded_valid_ = false;
      return;
    case Mode::kRecord:
      if (!ok) {
        last_recorded_valid_ = false;
      } else if (last_recorded_valid_ && current_.same(last_)) {
        last_recorded_valid_ = false;
        build_plan(pool);
      } else {
        std::swap(current_, last_);  // swapped, not copied: warm runs keep their capacity
        last_recorded_valid_ = true;
      }
      return;
  }
}

void MemoryPlan::build_plan(BufferPool& pool) {
  predicted_ = false;
  std::swap(plan_, current_);
  const size_t n = plan_.sizes.size();
  // Block k lives from its acquire to its release (event positions); a block never
  // released in the recording lives to the end.
  starts_.assign(n, 0);
  ends_.assign(n, std::numeric_limits<size_t>::max());
  for (size_t pos = 0; pos < plan_.events.size(); ++pos) {
    const int32_t e = plan_.events[pos];
    if (e >= 0)
      starts_[size_t(e)] = pos;
    else
      ends_[size_t(~e)] = pos;
  }
  order_.resize(n);
  for (size_t k = 0; k < n; ++k) order_[k] = int32_t(k);
  // Largest first, so the big activations pack tightly and small ones fill the gaps.
  std::sort(order_.begin(), order_.end(), [&](int32_t a, int32_t b) {
    const size_t sa = plan_.sizes[size_t(a)], sb = plan_.sizes[size_t(b)];
    return sa != sb ? sa > sb : a < b;
  });
  offsets_.assign(n, 0);
  placed_.clear();
  size_t peak = 0;
  for (int32_t k : order_) {
    const size_t size = plan_.sizes[size_t(k)];
    taken_.clear();
    for (int32_t p : placed_) {
      const bool overlap =
          starts_[size_t(p)] < ends_[size_t(k)] && starts_[size_t(k)] < ends_[size_t(p)];
      if (overlap)
        taken_.push_back({offsets_[size_t(p)], offsets_[size_t(p)] + plan_.sizes[size_t(p)]});
    }
    std::sort(taken_.begin(), taken_.end());
    size_t offset = 0;
    for (const auto& [begin, end] : taken_) {
      if (offset + size <= begin) break;
      offset = std::max(offset, end);
    }
    offsets_[size_t(k)] = offset;
    peak = std::max(peak, offset + size);
    placed_.push_back(k);
  }
  if (peak > arena_capacity_) {
    std::free(arena_);
    arena_ = static_cast<std::byte*>(std::aligned_alloc(kAlignment, round_up(peak)));
    arena_capacity_ = arena_ ? round_up(peak) : 0;
    if (!arena_) {
      planned_ = false;  // no memory for the arena: runs keep using the pool
      return;
    }
  }
  arena_bytes_ = peak;
  planned_ = true;
  // The pool's blocks served the recordings; planned runs need none of them.
  pool.trim();
}

}  // namespace nxrt
