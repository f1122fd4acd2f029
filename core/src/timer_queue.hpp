// timer_queue.hpp: a shard's pending tasks: the indexed heap plus a FIFO of due tasks.
// Threads: guarded by the shard's lock; no member is thread-safe.
// Order:   top() is the earliest (deadline, seq) of both parts.
// Why:     a task that is already due when the leader drains it, and that sorts after every
//          task in the FIFO, is appended to the FIFO in O(1) instead of sifting through a heap
//          that a fast producer of zero-delay work (execute, submit) would grow to millions.
//          The FIFO stays sorted because it only ever takes such tasks.
// Cancel:  erase() of a FIFO task returns false and leaves it in place: it is due and is dropped
//          when it reaches the front, so remove-on-cancel retains it for no longer than that.
#pragma once
#include <cstdint>
#include <vector>

#include <kairos/detail/task.hpp>
#include <kairos/duration.hpp>

#include "timer_heap.hpp"

namespace kairos::detail {

inline constexpr std::uint32_t kInFifo = 0xFFFFFFFEu;

class TimerQueue {
 public:
  bool empty() const noexcept { return heap_.empty() && fifo_size_ == 0; }
  std::size_t size() const noexcept { return heap_.size() + fifo_size_; }

  TaskBase* top() const noexcept {
    if (fifo_size_ == 0) return heap_.top();
    TaskBase* f = fifo_front();
    if (heap_.empty() || TimerHeap::before(f, heap_.top())) return f;
    return heap_.top();
  }

  TaskBase* pop() noexcept {
    if (fifo_size_ != 0 && (heap_.empty() || TimerHeap::before(fifo_front(), heap_.top()))) {
      TaskBase* t = fifo_[head_];
      head_ = (head_ + 1) & (fifo_.size() - 1);
      --fifo_size_;
      t->heap_index = kNotInHeap;
      return t;
    }
    return heap_.pop();
  }

  // now: the clock when the caller looked. True iff t became the earliest.
  bool push(TaskBase* t, std::int64_t now) {
    if (t->deadline <= now && !t->never_due() && (fifo_size_ == 0 || !TimerHeap::before(t, fifo_back()))) {
      if (fifo_size_ == fifo_.size()) grow();
      fifo_[(head_ + fifo_size_) & (fifo_.size() - 1)] = t;
      ++fifo_size_;
      t->heap_index = kInFifo;
      return top() == t;
    }
    return heap_.push(t);
  }

  // Remove-on-cancel: O(log n) for heap tasks; false (left in place) for FIFO tasks.
  bool erase(TaskBase* t) noexcept { return t->heap_index != kInFifo && heap_.erase(t); }

  // Cold paths (shutdown, policies): removes every task for which pred(t) holds, wherever it
  // is, and hands it to out(t). O(n): the heap is rebuilt once, the FIFO filtered in place.
  template <class Pred, class Out>
  void remove_if(Pred&& pred, Out&& out) {
    std::vector<TaskBase*> kept;
    kept.reserve(heap_.size());
    for (TaskBase* t : heap_.items()) {
      if (pred(t)) out(t);
      else kept.push_back(t);
    }
    heap_.assign(std::move(kept));
    std::size_t n = 0;
    for (std::size_t i = 0; i < fifo_size_; ++i) {
      TaskBase* t = fifo_[(head_ + i) & (fifo_.size() - 1)];
      if (pred(t)) {
        t->heap_index = kNotInHeap;
        out(t);
      } else {
        fifo_[(head_ + n++) & (fifo_.size() - 1)] = t;
      }
    }
    fifo_size_ = n;
  }

  template <class Fn>
  void for_each(Fn&& fn) const {
    for (TaskBase* t : heap_.items()) fn(t);
    for (std::size_t i = 0; i < fifo_size_; ++i) fn(fifo_[(head_ + i) & (fifo_.size() - 1)]);
  }

  void clear() noexcept {
    heap_.clear();
    for (std::size_t i = 0; i < fifo_size_; ++i) fifo_[(head_ + i) & (fifo_.size() - 1)]->heap_index = kNotInHeap;
    clear_fifo();
  }

  const TimerHeap& heap() const noexcept { return heap_; }

 private:
  TaskBase* fifo_front() const noexcept { return fifo_[head_]; }
  TaskBase* fifo_back() const noexcept { return fifo_[(head_ + fifo_size_ - 1) & (fifo_.size() - 1)]; }
  void clear_fifo() noexcept {
    head_ = 0;
    fifo_size_ = 0;
  }
  void grow() {
    std::vector<TaskBase*> bigger(fifo_.empty() ? 1024 : fifo_.size() * 2);
    for (std::size_t i = 0; i < fifo_size_; ++i) bigger[i] = fifo_[(head_ + i) & (fifo_.size() - 1)];
    fifo_.swap(bigger);
    head_ = 0;
  }

  TimerHeap heap_;
  std::vector<TaskBase*> fifo_;  // ring; size is 0 or a power of two
  std::size_t head_ = 0;
  std::size_t fifo_size_ = 0;
};

}  // namespace kairos::detail
