// timer_queue.hpp: a shard's pending tasks: the indexed heap plus up to four sorted runs.
// Threads: guarded by the shard's lock; no member is thread-safe.
// Order:   top() is the earliest (deadline, seq) of all parts. Every part orders by that one key
//          and top() compares the parts' heads by it, so equal deadlines leave in submission
//          order (seq) across runs and heap alike.
// Why:     timers arrive in deadline order per delay class: zero-delay work (execute, submit),
//          one fixed delay (an order-timeout window: W2), a burst at one absolute deadline (W7),
//          a fixed-rate task's next run. A task that sorts after a run's back (its last live
//          task) is appended to it in O(1) (sorted_run.hpp) instead of sifting through the heap,
//          and leaves from its front in O(1). A workload that interleaves two delays (100 ms and
//          10 s, W2b) is two such streams, not one: with a single run, one class would take the
//          heap. So there are kRuns runs, and a task goes to
//            1. the run with the latest back it does not precede (best fit: it keeps the runs
//               with later backs open for the classes that need them), else
//            2. an empty run (a new class, or a straggler a moment out of order), else
//            3. the run with the earliest back, if t sorts before at most kMaxMoved tasks at
//               its back: they move to the heap and t takes their place (a few far-later timers
//               do not close a run to the rest; each task moves at most once), else
//            4. the heap; so does a task never due (its key is the largest: it would close a run
//               to every other task).
//          Two classes interleaved from the first task settle after one step (the first 10 s
//          task joins the 100 ms run, the next 100 ms task opens a second run, and from then on
//          each class's back is the only one its tasks fit best), three likewise in three runs.
//          A key of no class (a random delay) that fits after a class's back tops that run, and
//          the class's next tasks take another run or, when none is free, rule 3 moves the
//          stray key to the heap: random keys cost places in the runs, never order.
// Cost:    push: with one run busy (busy_), one comparison with its back when it accepts t;
//          else one comparison with each run's back (kept in the run: no node read), O(1) at
//          rules 1 and 2; rule 3 reads at most a few nodes at one run's back and moves at most
//          kMaxMoved tasks to the heap (each task at most once); rule 4 is the heap's O(log n). top(): one comparison, the run with the earliest
//          head kept in first_. pop from a run: O(1), first_ found again among the runs' heads
//          (kRuns - 1 comparisons; none while one run is busy). erase: O(1) in a run (its id is in the task's queue_slot),
//          O(log n) in the heap.
//          The leader's due batches use a span pop on top of these (Shard::pop_due):
//          pop_due_span takes the due tasks at first_'s front while they sort before every other
//          part's head, doing per task what pop_top() would, in one loop, with the other parts
//          looked at once per span, not once per task (docs/design.md).
// Memory:  growth needed for correctness happens in try_reserve() only: the heap's capacity
//          covers every task the shard may hold, so push() never fails and never throws. A run's
//          ring grows inside push() when it can; when it cannot (out of memory, or
//          g_refuse_growth_for_testing in page_array.hpp) the run refuses the task and the heap
//          takes it: nothing waits on memory after a successful reservation.
#pragma once
#include <array>
#include <cstdint>

#include <kairos/detail/task.hpp>
#include <kairos/duration.hpp>

#include "dcheck.hpp"
#include "sorted_run.hpp"
#include "timer_heap.hpp"

namespace kairos::detail {

class TimerQueue {
 public:
  static constexpr unsigned kRuns = SortedRun::kMaxRuns;

  // heap_window: the heap's slot window (timer_heap.hpp; tests make it small).
  explicit TimerQueue(std::uint64_t heap_window = TimerHeap::kWindowBytes) noexcept : heap_(heap_window) {}

  bool empty() const noexcept { return heap_.empty() && first_ == kNoRun; }
  std::size_t size() const noexcept {
    std::size_t n = heap_.size();
    for (const SortedRun& r : runs_) n += r.size();
    return n;
  }

  TaskBase* top() const noexcept {
    if (first_ == kNoRun) return heap_.top();
    TaskBase* r = runs_[first_].front();
    if (heap_.empty() || filed_before(r, heap_.top())) return r;
    return heap_.top();
  }

  TaskBase* pop() noexcept {
    TaskBase* t = top();
    pop_top(t);
    return t;
  }

  // Takes out t, which is top() (the caller just read it): no comparison of the parts again.
  // t's queue_slot says which part holds it; a run's task that is top() is first_'s front.
  void pop_top(TaskBase* t) noexcept {
    if (SortedRun::holds(t->queue_slot)) {
      KAIROS_DCHECK(first_ != kNoRun && runs_[first_].front() == t);
      (void)runs_[first_].pop_front();
      front_popped();
      return;
    }
    KAIROS_DCHECK(heap_.top() == t);
    (void)heap_.pop();
  }

  // The span pop: the due tasks at the front of first_'s run that sort before every other part's
  // head (the heap's top, the other runs' fronts) and that take(t) accepts, at most max, in
  // order, in one loop (SortedRun::pop_front_while). Each is the task top() and pop_top() would
  // have given next: popping first_'s front only uncovers that run's later tasks, and the other
  // parts do not change meanwhile. Returns how many; the caller goes on with top() and
  // pop_top() for the rest of its batch (the first task refused, another part's head).
  template <class Take>
  std::size_t pop_due_span(std::int64_t now, std::size_t max, Take&& take) noexcept {
    if (first_ == kNoRun) return 0;
    FiledKey before = kAfterEveryRunKey;
    if (!heap_.empty()) before = filed_key(heap_.top());
    for (unsigned i = 0; i < kRuns; ++i) {
      if (i != first_ && !runs_[i].empty() && filed_before(filed_key(runs_[i].front()), before)) before = filed_key(runs_[i].front());
    }
    SortedRun& run = runs_[first_];
    const std::size_t n = run.pop_front_while(now, before, max, take);
    if (n != 0) front_popped();
    return n;
  }

  // Files t by the rules above. No result: a caller that needs to know whether t became the
  // earliest compares it with top().
  // Inline: one run busy, t fits at its back and its ring has room (W6's zero delays, W7's
  // burst, W2's one window, but for a ring's growth): the whole filing, where push_by_rules()'s
  // call alone (its frame: it saves and restores six registers) counted 17 of W6's 74 take-in
  // instructions a task.
  void push(TaskBase* t) {
#if !defined(KAIROS_NO_SORTED_RUNS)
    if (busy_ != 0 && (busy_ & (busy_ - 1)) == 0 && !t->never_due()) {
      SortedRun& only = runs_[static_cast<unsigned>(__builtin_ctz(busy_))];
      if (only.accepts(t) && only.try_append_in_room(t)) return;
    }
#endif
    push_by_rules(t);
  }

  [[gnu::noinline]] void push_by_rules(TaskBase* t) {
#if !defined(KAIROS_NO_SORTED_RUNS)  // a measurement-only build files every task in the heap
    if (!t->never_due()) {
      // push() files the one-busy-run case when the ring has room; with the ring full it comes
      // here, and the loop finds that run as rule 1's only candidate and grows its ring.
      SortedRun* fit = nullptr;    // rule 1
      SortedRun* empty = nullptr;  // rule 2: one whose ring is already there if any
      SortedRun* nearest = nullptr;  // rule 3
      for (SortedRun& r : runs_) {
        if (r.empty()) {
          if (empty == nullptr || (empty->capacity() == 0 && r.capacity() != 0)) empty = &r;
        } else if (r.accepts(t)) {
          if (fit == nullptr || fit->back_before(r)) fit = &r;
        } else if (nearest == nullptr || r.back_before(*nearest)) {
          nearest = &r;
        }
      }
      SortedRun* to = fit != nullptr ? fit : empty != nullptr ? empty : make_way(nearest, t);
      if (to != nullptr && to->try_append(t)) {  // false: a ring that cannot grow (the heap takes t)
        busy_ |= 1u << to->id();
        if (to->size() == 1 && (first_ == kNoRun || filed_before(t, runs_[first_].front()))) first_ = to->id();
        return;
      }
    }
#endif
    heap_.push(t);  // within the capacity try_reserve() made: no growth
  }

  // Growth happens here only. The shard keeps the heap's capacity at least the number of tasks
  // it may hold (queued, out in a batch, and the ones it is about to take in: Shard::take_in_all),
  // so push() never grows the heap: every task may end in the heap, and a run falls back to it
  // when its ring cannot grow. False (nothing changed) if the memory is not there.
  [[nodiscard]] bool try_reserve(std::size_t n) noexcept { return heap_.try_reserve(n); }

  // True if t was here and is removed: O(log n) in the heap, O(1) in a run.
  bool erase(TaskBase* t) noexcept {
    if (!SortedRun::holds(t->queue_slot)) return heap_.erase(t);
    const unsigned id = SortedRun::id_of(t->queue_slot);
    if (!runs_[id].erase(t)) return false;
    if (runs_[id].empty()) busy_ &= ~(1u << id);
    if (id == first_) find_first();  // another run's head, later than first_'s, stays later
    return true;
  }

  static bool queued(const TaskBase* t) noexcept { return t->queue_slot != kNotQueued; }
  static bool in_run(const TaskBase* t) noexcept { return SortedRun::holds(t->queue_slot); }
  static unsigned run_of(const TaskBase* t) noexcept { return SortedRun::id_of(t->queue_slot); }  // in_run(t)

  // Cold paths (shutdown, policies): removes every task for which pred(t) holds, wherever it
  // is, and hands it to out(t). O(n), no allocation: every part is filtered in place and the
  // heap is rebuilt once.
  template <class Pred, class Out>
  void remove_if(Pred&& pred, Out&& out) {
    heap_.remove_if(pred, out);
    for (SortedRun& r : runs_) r.remove_if(pred, out);
    find_first();
  }

  template <class Fn>
  void for_each(Fn&& fn) const {
    heap_.for_each(fn);
    for (const SortedRun& r : runs_) r.for_each(fn);
  }

  // The order stamps were renumbered in place, their order kept (restamp.hpp): nothing moves;
  // the runs read their cached back keys again.
  void restamped() noexcept {
    for (SortedRun& r : runs_) r.restamped();
  }

  const TimerHeap& heap() const noexcept { return heap_; }
  const SortedRun& run(unsigned id) const noexcept { return runs_[id]; }
  std::size_t in_runs() const noexcept { return size() - heap_.size(); }
  // Tasks moved from a run's back to the heap by rule 3 (tests: the rule was taken, or not).
  std::uint64_t moved_to_heap() const noexcept { return moved_; }

  // Every part's invariants, first_ and busy_; tests call it.
  bool check_invariants() const noexcept {
    if (!heap_.check_invariants()) return false;
    const SortedRun* first = nullptr;
    unsigned busy = 0;
    for (const SortedRun& r : runs_) {
      if (!r.check_invariants()) return false;
      if (!r.empty()) busy |= 1u << r.id();
      if (!r.empty() && (first == nullptr || filed_before(r.front(), first->front()))) first = &r;
    }
    if (busy != busy_) return false;
    return first == nullptr ? first_ == kNoRun : first_ == first->id();
  }

 private:
  static constexpr std::size_t kMaxMoved = 4;
  // A key after every key a run may hold (runs hold no never-due task): the spans' bound when no
  // other part bounds them.
  static constexpr FiledKey kAfterEveryRunKey{kMaxNs, 0, true};
  static constexpr unsigned kNoRun = kRuns;

  // Rule 3 on r (every run is busy and none accepts t; r has the earliest back). Returns r if t
  // may now be appended to it, nullptr if t takes the heap.
  SortedRun* make_way(SortedRun* r, const TaskBase* t) {
    if (r == nullptr || r->known_to_refuse(t)) return nullptr;  // a random key: one comparison
    const std::size_t later = r->later_at_back(t, kMaxMoved);
    if (later > kMaxMoved) return nullptr;
    for (std::size_t i = 0; i < later; ++i) heap_.push(r->pop_back());
    moved_ += later;
    if (r->empty()) busy_ &= ~(1u << r->id());
    if (r->empty() && r->id() == first_) find_first();  // only its back left: its head stays otherwise
    return r->accepts(t) ? r : nullptr;  // false if holes stopped later_at_back() short
  }

  // first_: the run whose head is the earliest of the runs' heads, kNoRun if every run is empty;
  // busy_ follows the runs too.
  void find_first() noexcept {
    unsigned best = kNoRun;
    unsigned busy = 0;
    for (unsigned i = 0; i < kRuns; ++i) {
      if (runs_[i].empty()) continue;
      busy |= 1u << i;
      if (best == kNoRun || filed_before(runs_[i].front(), runs_[best].front())) best = i;
    }
    first_ = best;
    busy_ = busy;
  }

  // first_'s front was popped. Its next task is later than the popped one but may be later than
  // another run's head too, unless no other run is busy: then first_ stays (W6, W7: one class).
  void front_popped() noexcept {
    if (busy_ == 1u << first_ && !runs_[first_].empty()) return;
    find_first();
  }

  TimerHeap heap_;
  static_assert(kRuns == 4, "one initializer per run");
  std::array<SortedRun, kRuns> runs_{SortedRun{0}, SortedRun{1}, SortedRun{2}, SortedRun{3}};
  unsigned first_ = kNoRun;  // see find_first()
  unsigned busy_ = 0;        // bit i: runs_[i] is not empty
  std::uint64_t moved_ = 0;
};

}  // namespace kairos::detail
