// timer_heap.hpp: indexed 4-ary min-heap of one shard's pending tasks.
// Threads: guarded by the shard's lock; no member is thread-safe.
// Order:   earliest deadline first; equal deadlines in submission order (seq).
// Cost:    push, pop and erase are O(log n); every task stores its slot (heap_index), so erase
//          never scans and never waits for the task to reach the top. 4-ary: half the depth of a
//          binary heap, and the four children of a slot share one or two cache lines.
#pragma once
#include <cstdint>
#include <span>

#include <kairos/detail/task.hpp>

#include "page_array.hpp"

namespace kairos::detail {

class TimerHeap {
 public:
  // Equal deadlines: submission order (seq), except that a task never due (its deadline is the
  // largest) sorts after one that falls due at the end of a ManualClock's time (filed_before).
  static bool before(const TaskBase* a, const TaskBase* b) noexcept { return filed_before(a, b); }

  bool empty() const noexcept { return v_.empty(); }
  std::size_t size() const noexcept { return v_.size(); }
  TaskBase* top() const noexcept { return v_.front(); }
  std::span<TaskBase* const> items() const noexcept { return v_.items(); }

  // true iff t became the earliest.
  bool push(TaskBase* t) {
    v_.push_back(t);
    std::size_t i = v_.size() - 1;
    t->heap_index = static_cast<std::uint32_t>(i);
    return sift_up(i) == 0;
  }

  TaskBase* pop() noexcept {
    TaskBase* t = v_.front();
    erase_at(0);
    return t;
  }

  // false if t is not in this heap.
  bool erase(TaskBase* t) noexcept {
    std::uint32_t i = t->heap_index;
    if (i == kNotInHeap || i >= v_.size() || v_[i] != t) return false;
    erase_at(i);
    return true;
  }

  void clear() noexcept {
    for (TaskBase* t : v_.items()) t->heap_index = kNotInHeap;
    v_.clear();
  }

  void reserve(std::size_t n) { v_.reserve(n); }
  bool try_reserve(std::size_t n) noexcept { return v_.try_reserve(n); }
  std::size_t capacity() const noexcept { return v_.capacity(); }

  // Removes every task for which pred(t) holds and hands it to out(t), then restores heap
  // order: O(n), in place (no allocation).
  template <class Pred, class Out>
  void remove_if(Pred&& pred, Out&& out) {
    std::size_t kept = 0;
    for (std::size_t i = 0; i < v_.size(); ++i) {
      TaskBase* t = v_[i];
      if (pred(t)) {
        t->heap_index = kNotInHeap;
        out(t);
      } else {
        v_[kept++] = t;
      }
    }
    while (v_.size() > kept) v_.pop_back();
    for (std::size_t i = 0; i < v_.size(); ++i) v_[i]->heap_index = static_cast<std::uint32_t>(i);
    for (std::size_t i = v_.size() / kArity + 1; i-- > 0;)
      if (i < v_.size()) sift_down(i);
  }

  // Replaces the contents with `items` (any order) and restores heap order: O(n). No more items
  // than the heap held: no allocation.
  void assign(std::span<TaskBase* const> items) noexcept {
    for (TaskBase* t : v_.items()) t->heap_index = kNotInHeap;
    v_.assign(items);
    for (std::size_t i = 0; i < v_.size(); ++i) v_[i]->heap_index = static_cast<std::uint32_t>(i);
    for (std::size_t i = v_.size() / kArity + 1; i-- > 0;)
      if (i < v_.size()) sift_down(i);
  }

  // Heap order and every heap_index; tests call it.
  bool check_invariants() const noexcept {
    for (std::size_t i = 0; i < v_.size(); ++i) {
      if (v_[i]->heap_index != i) return false;
      if (i > 0 && before(v_[i], v_[(i - 1) / kArity])) return false;
    }
    return true;
  }

 private:
  static constexpr std::size_t kArity = 4;

  void place(std::size_t i, TaskBase* t) noexcept {
    v_[i] = t;
    t->heap_index = static_cast<std::uint32_t>(i);
  }

  std::size_t sift_up(std::size_t i) noexcept {
    TaskBase* t = v_[i];
    while (i > 0) {
      std::size_t p = (i - 1) / kArity;
      if (!before(t, v_[p])) break;
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
      std::size_t c = i * kArity + 1;
      if (c >= n) break;
      std::size_t best = c;
      std::size_t end = c + kArity < n ? c + kArity : n;
      for (std::size_t k = c + 1; k < end; ++k)
        if (before(v_[k], v_[best])) best = k;
      if (!before(v_[best], t)) break;
      place(i, v_[best]);
      i = best;
    }
    place(i, t);
  }

  void erase_at(std::size_t i) noexcept {
    v_[i]->heap_index = kNotInHeap;
    TaskBase* last = v_.back();
    v_.pop_back();
    if (i == v_.size()) return;
    place(i, last);
    if (sift_up(i) == i) sift_down(i);
  }

  PageArray<TaskBase*> v_;  // grows in place: no freed copies left resident (page_array.hpp)
};

}  // namespace kairos::detail
