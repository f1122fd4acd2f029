// timer_queue.hpp: a shard's pending tasks: the indexed heap plus a sorted run.
// Threads: guarded by the shard's lock; no member is thread-safe.
// Order:   top() is the earliest (deadline, seq) of both parts.
// Why:     a task that sorts after the run's back (its last live task) is appended to the run in
//          O(1) (sorted_run.hpp) instead of sifting through the heap: zero-delay work, equal
//          delays and equal deadlines arrive that way, and a burst of 100,000 equal deadlines
//          then leaves in 100,000 O(1) pops. Other tasks take the heap.
// Cancel:  erase() is O(log n) for a heap task and O(1) for a run task.
#pragma once
#include <cstdint>
#include <vector>

#include <kairos/detail/task.hpp>

#include "sorted_run.hpp"
#include "timer_heap.hpp"

namespace kairos::detail {

class TimerQueue {
 public:
  bool empty() const noexcept { return heap_.empty() && run_.empty(); }
  std::size_t size() const noexcept { return heap_.size() + run_.size(); }

  TaskBase* top() const noexcept {
    if (run_.empty()) return heap_.top();
    TaskBase* r = run_.front();
    if (heap_.empty() || TimerHeap::before(r, heap_.top())) return r;
    return heap_.top();
  }

  TaskBase* pop() noexcept {
    if (!run_.empty() && (heap_.empty() || TimerHeap::before(run_.front(), heap_.top()))) return run_.pop_front();
    return heap_.pop();
  }

  // True iff t became the earliest. A task that sorts before the run's back by at most
  // kMaxMoved tasks takes their place in the run, and they go to the heap: a few tasks far
  // later than the rest do not close the run to everything before them, and each task moves
  // at most once. Other tasks take the heap, and so does a task never due (its key is the
  // largest: it would close the run to every other task).
  bool push(TaskBase* t) {
    if (!t->never_due() && !run_.known_to_refuse(t)) {
      if (!run_.accepts(t)) {
        const std::size_t later = run_.later_at_back(t, kMaxMoved);
        if (later <= kMaxMoved)
          for (std::size_t i = 0; i < later; ++i) heap_.push(run_.pop_back());
      }
      if (run_.accepts(t) && run_.try_append(t)) return top() == t;  // (a ring that cannot grow:
    }                                                                // the heap takes it)
    return heap_.push(t) && top() == t;
  }

  // Growth happens here only. The shard keeps the heap's capacity at least the number of tasks
  // it may hold (queued, out in a batch, and the ones it is about to accept: Shard::accept_all),
  // so push() never grows the heap: every task may end in the heap, and the run falls back to
  // it when its ring cannot grow. False (nothing changed) if the memory is not there.
  [[nodiscard]] bool try_reserve(std::size_t n) noexcept { return heap_.try_reserve(n); }

  // True if t was here and is removed: O(log n) in the heap, O(1) in the run.
  bool erase(TaskBase* t) noexcept { return SortedRun::holds(t->heap_index) ? run_.erase(t) : heap_.erase(t); }

  static bool queued(const TaskBase* t) noexcept { return t->heap_index != kNotInHeap; }
  static bool in_run(const TaskBase* t) noexcept { return SortedRun::holds(t->heap_index); }

  // Cold paths (shutdown, policies): removes every task for which pred(t) holds, wherever it
  // is, and hands it to out(t). O(n), no allocation: both parts are filtered in place and the
  // heap is rebuilt once.
  template <class Pred, class Out>
  void remove_if(Pred&& pred, Out&& out) {
    heap_.remove_if(pred, out);
    run_.remove_if(pred, out);
  }

  template <class Fn>
  void for_each(Fn&& fn) const {
    for (TaskBase* t : heap_.items()) fn(t);
    run_.for_each(fn);
  }

  void clear() noexcept {
    heap_.clear();
    run_.clear();
  }

  const TimerHeap& heap() const noexcept { return heap_; }
  const SortedRun& run() const noexcept { return run_; }

 private:
  static constexpr std::size_t kMaxMoved = 4;

  TimerHeap heap_;
  SortedRun run_;
};

}  // namespace kairos::detail
