// heap_bench.cpp: one shard's timer heap alone, at 1,000 to 10,000,000 pending tasks.
//   kairos::detail::TimerHeap   the engine's indexed 4-ary heap of TaskBase* (core/src)
//   BinaryHeap                  the same thing with two children per slot: what the 4-ary
//                               layout is compared against
//   InlineKeyHeap               4-ary, with each slot holding a copy of (deadline, seq) beside
//                               the pointer, so comparisons read the heap array and not the
//                               nodes: what keeping the keys in the heap would buy
// Model:  "hold", the way timers behave: the time is the deadline of the last popped task and a
//         pushed task is due at time + a random delay in [0, kSpan). Each size is built once from
//         random deadlines (fixed seed, same input for every heap), and every iteration leaves
//         the heap at the same size: a timed batch of pushes is undone by erasing them, a batch
//         of pops by pushing them back, a batch of erases of random members by pushing them back.
// Timing: manual, around the timed batch only; `per_op` is one push, pop or erase. Nodes are
//         TaskBase (48 bytes) in one array, so at 1,000,000 and beyond the comparisons miss cache.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include <kairos/detail/task.hpp>

#include "micro_common.hpp"
#include "timer_heap.hpp"

namespace {

using kairos::detail::kNotQueued;
using kairos::detail::TaskBase;
using kairos::detail::TimerHeap;
using kairos_micro::report_per_op;
using kairos_micro::SpanTimer;

constexpr std::int64_t kSpan = std::int64_t{1} << 30;  // delays in [0, ~1.07 s)
constexpr std::size_t kMaxBatch = 1024;

// Operations per timed batch: enough to make the two clock reads negligible, few enough that the
// heap stays near its nominal size (1,000: 62 per batch).
constexpr std::size_t batch_for(std::size_t n) { return std::clamp<std::size_t>(n / 16, 16, kMaxBatch); }

// ---- BinaryHeap: an indexed binary min-heap, same order and interface as TimerHeap ----------
class BinaryHeap {
 public:
  std::size_t size() const noexcept { return v_.size(); }
  const std::vector<TaskBase*>& items() const noexcept { return v_; }
  void reserve(std::size_t n) { v_.reserve(n); }

  bool push(TaskBase* t) {
    v_.push_back(t);
    return sift_up(v_.size() - 1) == 0;
  }
  TaskBase* pop() noexcept {
    TaskBase* t = v_.front();
    erase_at(0);
    return t;
  }
  bool erase(TaskBase* t) noexcept {
    std::uint32_t i = t->queue_slot;
    if (i == kNotQueued || i >= v_.size() || v_[i] != t) return false;
    erase_at(i);
    return true;
  }

 private:
  void place(std::size_t i, TaskBase* t) noexcept {
    v_[i] = t;
    t->queue_slot = static_cast<std::uint32_t>(i);
  }
  std::size_t sift_up(std::size_t i) noexcept {
    TaskBase* t = v_[i];
    while (i > 0) {
      std::size_t p = (i - 1) / 2;
      if (!filed_before(t, v_[p])) break;
      place(i, v_[p]);
      i = p;
    }
    place(i, t);
    return i;
  }
  void sift_down(std::size_t i) noexcept {
    TaskBase* t = v_[i];
    const std::size_t n = v_.size();
    for (;;) {
      std::size_t c = 2 * i + 1;
      if (c >= n) break;
      if (c + 1 < n && filed_before(v_[c + 1], v_[c])) ++c;
      if (!filed_before(v_[c], t)) break;
      place(i, v_[c]);
      i = c;
    }
    place(i, t);
  }
  void erase_at(std::size_t i) noexcept {
    v_[i]->queue_slot = kNotQueued;
    TaskBase* last = v_.back();
    v_.pop_back();
    if (i == v_.size()) return;
    place(i, last);
    if (sift_up(i) == i) sift_down(i);
  }

  std::vector<TaskBase*> v_;
};

// ---- InlineKeyHeap: 4-ary, keys copied into the slots ---------------------------------------
class InlineKeyHeap {
 public:
  std::size_t size() const noexcept { return v_.size(); }
  void reserve(std::size_t n) { v_.reserve(n); }
  TaskBase* at(std::size_t i) const noexcept { return v_[i].task; }

  bool push(TaskBase* t) {
    v_.push_back(Slot{t->deadline, t->seq, t});
    return sift_up(v_.size() - 1) == 0;
  }
  TaskBase* pop() noexcept {
    TaskBase* t = v_.front().task;
    erase_at(0);
    return t;
  }
  bool erase(TaskBase* t) noexcept {
    std::uint32_t i = t->queue_slot;
    if (i == kNotQueued || i >= v_.size() || v_[i].task != t) return false;
    erase_at(i);
    return true;
  }

 private:
  static constexpr std::size_t kArity = 4;
  struct Slot {
    std::int64_t deadline;
    std::uint64_t seq;
    TaskBase* task;
  };
  static bool before(const Slot& a, const Slot& b) noexcept {
    return a.deadline < b.deadline || (a.deadline == b.deadline && a.seq < b.seq);
  }
  void place(std::size_t i, const Slot& s) noexcept {
    v_[i] = s;
    s.task->queue_slot = static_cast<std::uint32_t>(i);
  }
  std::size_t sift_up(std::size_t i) noexcept {
    Slot s = v_[i];
    while (i > 0) {
      std::size_t p = (i - 1) / kArity;
      if (!before(s, v_[p])) break;
      place(i, v_[p]);
      i = p;
    }
    place(i, s);
    return i;
  }
  void sift_down(std::size_t i) noexcept {
    Slot s = v_[i];
    const std::size_t n = v_.size();
    for (;;) {
      std::size_t c = i * kArity + 1;
      if (c >= n) break;
      std::size_t best = c;
      std::size_t end = c + kArity < n ? c + kArity : n;
      for (std::size_t k = c + 1; k < end; ++k)
        if (before(v_[k], v_[best])) best = k;
      if (!before(v_[best], s)) break;
      place(i, v_[best]);
      i = best;
    }
    place(i, s);
  }
  void erase_at(std::size_t i) noexcept {
    v_[i].task->queue_slot = kNotQueued;
    Slot last = v_.back();
    v_.pop_back();
    if (i == v_.size()) return;
    place(i, last);
    if (sift_up(i) == i) sift_down(i);
  }

  std::vector<Slot> v_;
};

template <class Heap>
TaskBase* slot_task(const Heap& h, std::size_t i) {
  if constexpr (requires { h.at(i); }) return h.at(i);
  else return h.items()[i];
}

// The fixture that holds memory now: building another frees it first, so at most one
// 10,000,000-node heap exists at a time.
void (*g_release_current)() = nullptr;

// One heap of each type, with its nodes; rebuilt when a benchmark asks for another size.
template <class Heap>
struct HeapFixture {
  std::size_t n = 0;
  std::unique_ptr<TaskBase[]> nodes;  // n in the heap, kMaxBatch spare
  std::vector<TaskBase*> spare;       // nodes not in the heap
  std::vector<TaskBase*> batch;       // this iteration's popped or erased nodes
  std::vector<std::uint8_t> chosen;   // per node: picked for this erase batch
  Heap heap;
  std::mt19937_64 rng;
  std::int64_t now = 0;               // deadline of the last popped task
  std::uint64_t next_seq = 0;

  static HeapFixture& instance() {
    static HeapFixture f;
    return f;
  }
  static HeapFixture& of_size(std::size_t size) {
    HeapFixture& f = instance();
    if (f.n == size) return f;
    if (g_release_current) g_release_current();
    f.build(size);
    g_release_current = [] { instance().release(); };
    return f;
  }
  void release() {
    heap = Heap{};
    nodes.reset();
    spare = {};
    batch = {};
    chosen = {};
    n = 0;
  }

  std::int64_t next_deadline() { return now + static_cast<std::int64_t>(rng() & (kSpan - 1)); }

  void build(std::size_t size) {
    release();
    n = size;
    nodes = std::make_unique<TaskBase[]>(n + kMaxBatch);
    rng.seed(kairos_micro::kSeed);
    now = 0;
    next_seq = 0;
    heap.reserve(n + kMaxBatch);
    for (std::size_t i = 0; i < n; ++i) {
      nodes[i].deadline = next_deadline();
      nodes[i].seq = next_seq++;
      heap.push(&nodes[i]);
    }
    spare.clear();
    for (std::size_t i = n; i < n + kMaxBatch; ++i) spare.push_back(&nodes[i]);
    batch.reserve(kMaxBatch);
    chosen.assign(n + kMaxBatch, 0);
  }
};

template <class Heap>
void Heap_Push(benchmark::State& state) {
  auto& f = HeapFixture<Heap>::of_size(static_cast<std::size_t>(state.range(0)));
  const std::size_t b = batch_for(f.n);
  SpanTimer timer;
  for (auto _ : state) {
    for (std::size_t i = 0; i < b; ++i) {
      f.spare[i]->deadline = f.next_deadline();
      f.spare[i]->seq = f.next_seq++;
    }
    timer.start();
    for (std::size_t i = 0; i < b; ++i) f.heap.push(f.spare[i]);
    timer.stop(state);
    for (std::size_t i = 0; i < b; ++i) f.heap.erase(f.spare[i]);
  }
  if (f.heap.size() != f.n) state.SkipWithError("heap size drifted");
  report_per_op(state, static_cast<double>(b));
}

template <class Heap>
void Heap_Pop(benchmark::State& state) {
  auto& f = HeapFixture<Heap>::of_size(static_cast<std::size_t>(state.range(0)));
  const std::size_t b = batch_for(f.n);
  SpanTimer timer;
  for (auto _ : state) {
    f.batch.clear();
    timer.start();
    for (std::size_t i = 0; i < b; ++i) f.batch.push_back(f.heap.pop());
    timer.stop(state);
    f.now = f.batch.back()->deadline;
    for (TaskBase* t : f.batch) {
      t->deadline = f.next_deadline();
      t->seq = f.next_seq++;
      f.heap.push(t);
    }
  }
  if (f.heap.size() != f.n) state.SkipWithError("heap size drifted");
  report_per_op(state, static_cast<double>(b));
}

template <class Heap>
void Heap_Erase(benchmark::State& state) {
  auto& f = HeapFixture<Heap>::of_size(static_cast<std::size_t>(state.range(0)));
  const std::size_t b = batch_for(f.n);
  SpanTimer timer;
  std::size_t erased = 0;
  for (auto _ : state) {
    f.batch.clear();
    while (f.batch.size() < b) {  // b distinct members, uniformly at random
      TaskBase* t = slot_task(f.heap, f.rng() % f.heap.size());
      std::uint8_t& mark = f.chosen[static_cast<std::size_t>(t - f.nodes.get())];
      if (mark) continue;
      mark = 1;
      f.batch.push_back(t);
    }
    timer.start();
    for (TaskBase* t : f.batch) erased += f.heap.erase(t);
    timer.stop(state);
    for (TaskBase* t : f.batch) {
      f.chosen[static_cast<std::size_t>(t - f.nodes.get())] = 0;
      f.heap.push(t);
    }
  }
  if (erased != static_cast<std::size_t>(state.iterations()) * b) state.SkipWithError("an erase missed");
  if (f.heap.size() != f.n) state.SkipWithError("heap size drifted");
  report_per_op(state, static_cast<double>(b));
}

#define KAIROS_HEAP_BENCH(op, heap) \
  BENCHMARK_TEMPLATE(op, heap)->RangeMultiplier(10)->Range(1'000, 10'000'000)->UseManualTime()

KAIROS_HEAP_BENCH(Heap_Push, TimerHeap);
KAIROS_HEAP_BENCH(Heap_Pop, TimerHeap);
KAIROS_HEAP_BENCH(Heap_Erase, TimerHeap);
KAIROS_HEAP_BENCH(Heap_Push, BinaryHeap);
KAIROS_HEAP_BENCH(Heap_Pop, BinaryHeap);
KAIROS_HEAP_BENCH(Heap_Erase, BinaryHeap);
KAIROS_HEAP_BENCH(Heap_Push, InlineKeyHeap);
KAIROS_HEAP_BENCH(Heap_Pop, InlineKeyHeap);
KAIROS_HEAP_BENCH(Heap_Erase, InlineKeyHeap);

}  // namespace
