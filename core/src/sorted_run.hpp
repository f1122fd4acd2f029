// sorted_run.hpp: tasks that arrived in key order, kept in that order at O(1) per operation.
// Threads: guarded by the shard's lock; no member is thread-safe.
// Order:   a task is appended only if it sorts after the run's back, its last live task
//          (deadline, then seq), so the ring is sorted from front to back and front() is the
//          earliest. pop_back() lets the timer queue move a few late tasks to its heap.
// Why:     timers mostly arrive in deadline order: equal delays (an order-timeout window, a
//          burst at one absolute deadline), zero delays (execute, submit), a fixed-rate task's
//          next run. Those skip the heap's O(log n) sift each way, and its cache misses on the
//          nodes of its children: appended at the back, taken from the front. A timer queue
//          keeps up to kMaxRuns runs, one per delay class (timer_queue.hpp); each run has an id,
//          carried in the queue_slot of every task it holds, so erase finds the run in O(1).
// Erase:   O(1): the task's slot is in its queue_slot (tagged, see below) and becomes a hole
//          (nullptr) that pops skip. Holes are squeezed out when the ring is full and at least
//          half of it is holes, so the ring holds at most about twice the peak of live tasks and
//          each hole costs O(1) amortised.
// Memory:  the ring grows only on an append; try_append() on a ring that cannot grow refuses the
//          task (false, nothing changed) and the caller files it elsewhere (the timer queue: its
//          heap, whose capacity was reserved), so the timer queue never needs memory it may not
//          get. (append() throws std::bad_alloc instead; tests use it.)
#pragma once
#include <cstdint>

#include <kairos/detail/task.hpp>

#include "page_array.hpp"

namespace kairos::detail {

class SortedRun {
 public:
  // queue_slot of a task in a run: kTag | id << kIdShift | (position & kPositionMask), bit 30
  // clear. Heap slots stay below kTag, and no tagged value reaches kNotQueued. Positions count
  // appends; a slot is a position modulo the ring's size (a power of two, at most
  // kPositionMask + 1, so one tagged value names one slot of one run).
  static constexpr std::uint32_t kTag = 0x80000000u;
  static constexpr unsigned kIdShift = 28;
  static constexpr std::uint32_t kPositionMask = 0x0FFFFFFFu;
  static constexpr unsigned kMaxRuns = 4;  // ids 0..3: bits 28 and 29
  // The ring doubles only when more than half of it is live, so with fewer than 2^27 live tasks
  // it never outgrows kPositionMask + 1 slots.
  static constexpr std::size_t kMaxLive = std::size_t{1} << 27;
  static constexpr std::size_t kPrefetchAhead = 8;  // pop_front(): nodes fetched ahead of the front
  static constexpr bool holds(std::uint32_t queue_slot) noexcept { return (queue_slot & 0xC0000000u) == kTag; }
  // The id of the run that holds a task whose queue_slot satisfies holds().
  static constexpr unsigned id_of(std::uint32_t queue_slot) noexcept { return (queue_slot >> kIdShift) & (kMaxRuns - 1); }

  explicit SortedRun(unsigned id = 0) noexcept
      : tag_(kTag | (static_cast<std::uint32_t>(id & (kMaxRuns - 1)) << kIdShift)) {}
  SortedRun(const SortedRun&) = delete;
  SortedRun& operator=(const SortedRun&) = delete;

  unsigned id() const noexcept { return id_of(tag_); }

  bool empty() const noexcept { return live_ == 0; }
  std::size_t size() const noexcept { return live_; }
  TaskBase* front() const noexcept { return ring_[slot(head_)]; }  // not empty: never a hole

  // True if t may be appended: it sorts after the run's back (its last live task). A task far
  // later than the rest closes the run until it leaves (popped or erased); the tasks before it
  // then take the heap, as they would with no run at all.
  bool accepts(const TaskBase* t) const noexcept {
    if (live_ - 1 >= kMaxLive - 1) [[unlikely]]  // one comparison for both bounds
      return live_ == 0;
    if (t->deadline != back_deadline_) return t->deadline > back_deadline_;
    return seq_before(back_seq_, t->seq);
  }

  // True if this run's back sorts before o's back (both not empty): the timer queue appends a
  // task to the run with the latest back that it does not precede.
  bool back_before(const SortedRun& o) const noexcept { return filed_before(back_key(), o.back_key()); }

  // True if an earlier later_at_back() that gave up showed that t sorts before more than `max`
  // tasks at the back (the run unchanged since): a stream of keys in random order, which the
  // run refuses, costs one comparison each.
  bool known_to_refuse(const TaskBase* t) const noexcept {
    return refused_below_ && filed_before(FiledKey{t->deadline, t->seq}, FiledKey{refused_deadline_, refused_seq_});
  }

  // How many tasks at the back sort after t, if at most `max` do and no more than a few holes
  // lie among them; max + 1 otherwise. Reads the nodes it counts; remembers a refusal for
  // known_to_refuse().
  std::size_t later_at_back(const TaskBase* t, std::size_t max) noexcept {
    std::size_t later = 0;
    for (std::uint64_t p = tail_, holes = 0; p != head_; --p) {
      const TaskBase* x = ring_[slot(p - 1)];
      if (x == nullptr) {
        if (++holes > 8) return max + 1;
        continue;
      }
      if (filed_before(x, t)) break;
      if (++later > max) {  // x is the (max + 1)-th: whatever sorts before it is refused too
        refused_below_ = true;
        refused_deadline_ = x->deadline;
        refused_seq_ = x->seq;
        break;
      }
    }
    return later;
  }

  // Takes the back (not empty) out; the task before it becomes the back.
  TaskBase* pop_back() noexcept {
    refused_below_ = false;
    TaskBase* back = ring_[slot(tail_ - 1)];
    ring_[slot(tail_ - 1)] = nullptr;
    back->queue_slot = kNotQueued;
    if (--live_ == 0) {
      head_ = tail_;
    } else {
      trim_back();
    }
    return back;
  }

  // accepts(t) holds. Amortised O(1); allocates only when the ring grows.
  void append(TaskBase* t) {
    if (!try_append(t)) throw std::bad_alloc();
  }
  // As append(), but false (t not taken, the run unchanged) when the ring cannot grow.
  bool try_append(TaskBase* t) noexcept {
    if (live_ == 0) head_ = tail_ = 0;  // holes left behind go too
    if (tail_ - head_ == ring_.size() && !make_room()) return false;
    append_at_tail(t);
    return true;
  }

  // try_append()'s common case, small enough to inline where the timer queue files a task (W6's
  // and W7's take-in): a run that is not empty and whose ring has room. False, nothing changed,
  // otherwise (the caller goes on with try_append()). accepts(t) holds.
  bool try_append_in_room(TaskBase* t) noexcept {
    if (live_ == 0 || tail_ - head_ == ring_.size()) return false;
    append_at_tail(t);
    return true;
  }

  // The back's key (not empty).
  FiledKey back_key() const noexcept { return FiledKey{back_deadline_, back_seq_}; }

  TaskBase* pop_front() noexcept {
    refused_below_ = false;
    TaskBase* t = ring_[slot(head_)];
    ring_[slot(head_)] = nullptr;
    t->queue_slot = kNotQueued;
    --live_;
    skip_holes();
    // A burst leaves from the front one task after another (W7: 100,000 at one deadline), and
    // each pop reads its node's key: fetch the node kPrefetchAhead places on while this one runs
    // (a hole is a null pointer: prefetching it does nothing).
    if (live_ > kPrefetchAhead) __builtin_prefetch(ring_[slot(head_ + kPrefetchAhead)], 1);
    return t;
  }

  // Takes tasks from the front, at most max, while each is due at `now`, sorts before `before`
  // (the earliest head of the timer queue's other parts) and take(t) accepts it (take(t) true: t
  // is the caller's now). The timer queue's span pop: a batch of a burst in one loop, with no
  // per-task front()/empty() of the queue. Returns how many; the first task refused stays the
  // front. Never-due tasks are not filed in runs (timer_queue.hpp rule 4). It does what a loop of
  // front() and pop_front() would, with the head and the count kept in registers until the end:
  // that loop measured 23 leader instructions a task more in W7's burst (475 against 452).
  template <class Take>
  std::size_t pop_front_while(std::int64_t now, const FiledKey& before, std::size_t max, Take&& take) noexcept {
    const std::size_t mask = ring_.size() - 1;
    std::uint64_t head = head_;
    std::size_t n = 0;
    while (n < max && n < live_) {
      TaskBase* t = ring_[static_cast<std::size_t>(head) & mask];  // never a hole: see below
      if (t->deadline > now || !filed_before(filed_key(t), before) || !take(t)) break;
      ring_[static_cast<std::size_t>(head) & mask] = nullptr;
      t->queue_slot = kNotQueued;
      ++n;
      ++head;
      if (n != live_) {  // a live task lies ahead: skip the holes erase() left before it
        while (ring_[static_cast<std::size_t>(head) & mask] == nullptr) ++head;
      }
      // As pop_front(): the node kPrefetchAhead places on (a hole: a null prefetch, harmless).
      __builtin_prefetch(ring_[static_cast<std::size_t>(head + kPrefetchAhead) & mask], 1);
    }
    if (n == 0) return 0;
    refused_below_ = false;
    live_ -= n;
    head_ = live_ == 0 ? tail_ : head;
    return n;
  }

  // false if t is not in this run (in another one, the heap, or none).
  bool erase(TaskBase* t) noexcept {
    if ((t->queue_slot & ~kPositionMask) != tag_ || ring_.empty()) return false;
    TaskBase*& s = ring_[(t->queue_slot & kPositionMask) & (ring_.size() - 1)];
    if (s != t) return false;
    refused_below_ = false;
    s = nullptr;
    t->queue_slot = kNotQueued;
    --live_;
    skip_holes();
    trim_back();
    return true;
  }

  template <class Fn>
  void for_each(Fn&& fn) const {
    for (std::uint64_t p = head_; p != tail_; ++p)
      if (TaskBase* t = ring_[slot(p)]) fn(t);
  }

  // Removes every task for which pred(t) holds and hands it to out(t); keeps the others' order.
  template <class Pred, class Out>
  void remove_if(Pred&& pred, Out&& out) {
    refused_below_ = false;
    for (std::uint64_t p = head_; p != tail_; ++p) {
      TaskBase*& s = ring_[slot(p)];
      if (s != nullptr && pred(s)) {
        TaskBase* t = s;
        s = nullptr;
        t->queue_slot = kNotQueued;
        --live_;
        out(t);
      }
    }
    skip_holes();
    trim_back();
  }

  void clear() noexcept {
    refused_below_ = false;
    for_each([](TaskBase* t) { t->queue_slot = kNotQueued; });
    for (std::uint64_t p = head_; p != tail_; ++p) ring_[slot(p)] = nullptr;
    head_ = tail_ = 0;
    live_ = 0;
  }

  // The order stamps were renumbered in place, their order kept (restamp.hpp): the cached keys
  // are read again (the back's) or forgotten (a refusal's).
  void restamped() noexcept {
    refused_below_ = false;
    if (live_ != 0) back_seq_ = ring_[slot(tail_ - 1)]->seq;
  }

  // Slots in the ring (tests: the bound on holes).
  std::size_t capacity() const noexcept { return ring_.size(); }

  // Order, positions and the count; tests call it.
  bool check_invariants() const noexcept {
    std::size_t n = 0;
    const TaskBase* prev = nullptr;
    for (std::uint64_t p = head_; p != tail_; ++p) {
      const TaskBase* t = ring_[slot(p)];
      if (t == nullptr) continue;
      if (t->queue_slot != (tag_ | static_cast<std::uint32_t>(p & kPositionMask))) return false;
      if (prev != nullptr && filed_before(t, prev))
        return false;
      prev = t;
      ++n;
    }
    if (live_ != 0 && (ring_[slot(head_)] == nullptr || ring_[slot(tail_ - 1)] == nullptr)) return false;
    if (live_ != 0 && (ring_[slot(tail_ - 1)]->deadline != back_deadline_ || ring_[slot(tail_ - 1)]->seq != back_seq_))
      return false;
    return n == live_;
  }

 private:
  std::size_t slot(std::uint64_t position) const noexcept {
    return static_cast<std::size_t>(position) & (ring_.size() - 1);
  }

  // t at the tail, which has room: it becomes the back.
  void append_at_tail(TaskBase* t) noexcept {
    refused_below_ = false;
    ring_[slot(tail_)] = t;
    t->queue_slot = tag_ | static_cast<std::uint32_t>(tail_ & kPositionMask);
    ++tail_;
    ++live_;
    back_deadline_ = t->deadline;
    back_seq_ = t->seq;
  }

  void skip_holes() noexcept {
    if (live_ == 0) {
      head_ = tail_;
      return;
    }
    while (ring_[slot(head_)] == nullptr) ++head_;
  }

  // The back is a live task (or the run is empty), and the key accepts() compares with is its.
  void trim_back() noexcept {
    if (live_ == 0) return;  // skip_holes() emptied it
    if (ring_[slot(tail_ - 1)] != nullptr) return;
    while (ring_[slot(tail_ - 1)] == nullptr) --tail_;
    const TaskBase* back = ring_[slot(tail_ - 1)];
    back_deadline_ = back->deadline;
    back_seq_ = back->seq;
  }

  // The ring is full: squeeze the holes out if they are at least half of it, else double it.
  // False (nothing changed) if it cannot grow.
  bool make_room() noexcept {
    const std::size_t size = ring_.size();
    if (size != 0 && live_ <= size / 2) {
      std::uint64_t to = head_;
      for (std::uint64_t p = head_; p != tail_; ++p) {
        TaskBase* t = ring_[slot(p)];
        if (t == nullptr) continue;
        ring_[slot(p)] = nullptr;
        ring_[slot(to)] = t;
        t->queue_slot = tag_ | static_cast<std::uint32_t>(to & kPositionMask);
        ++to;
      }
      tail_ = to;
      return true;
    }
    // Doubled in place (page_array.hpp). A position's slot keeps its low bits and may gain the
    // old size's bit: the full ring's positions are `size` consecutive ones, so no two of them
    // share a slot modulo either size, and a move never lands on a slot still to be read.
    const std::size_t grown = size == 0 ? 1024 : size * 2;
    if (!ring_.try_reserve(grown)) return false;
    ring_.resize_zeroed(grown);  // within the capacity: no throw
    for (std::uint64_t p = head_; p != tail_; ++p) {
      const std::size_t from = static_cast<std::size_t>(p) & (size - 1);
      const std::size_t to = slot(p);
      if (from == to) continue;
      ring_[to] = ring_[from];
      ring_[from] = nullptr;
    }
    return true;
  }

  const std::uint32_t tag_;   // kTag | id << kIdShift: the queue_slot bits of this run's tasks
  PageArray<TaskBase*> ring_;  // size 0 or a power of two; nullptr: a hole or unused
  std::uint64_t head_ = 0;       // position of the front (a live task unless empty)
  std::uint64_t tail_ = 0;       // position the next append takes
  std::size_t live_ = 0;
  std::int64_t back_deadline_ = 0;  // key of the back (unless empty)
  std::uint32_t back_seq_ = 0;
  bool refused_below_ = false;  // later_at_back(): keys before this one are refused (run unchanged)
  std::int64_t refused_deadline_ = 0;
  std::uint32_t refused_seq_ = 0;
};

}  // namespace kairos::detail
