// task.hpp: the task node every submission becomes, and its state machine.
// Memory:  one pooled allocation per task (task_pool.hpp): a 32-byte TaskBase, then the callable.
//          A one-shot task keeps its callable and its result in one union: the callable is
//          destroyed when the run ends, before the result is stored, so a capture-less or
//          one-pointer one-shot task is a 40-byte node.
// Owners:  an intrusive reference count, in the state word's upper bits (kRefShift), without
//          limit (a spill table beyond 2^20). The scheduler holds one reference from submission
//          until the task leaves it (ran, removed, drained); every ScheduledFuture/Task holds one.
// State:   `state` is the single word every thread agrees on (and the futex waiters sleep on):
//
//     kPending --run--> kRunning --ok--> kNormal           (one-shot)
//         |                 |  \--threw--> kExceptional
//         |                 \--periodic ok--> kPending     (re-queued by its runner)
//         +--cancel---------+-------------> kCancelled     (from kPending or kRunning)
//         +--shutdown_now--> kOrphan --Task::run--> kRunning; Task dropped --> kCancelled
//         +--rearm (re-armable tasks)--> kRearming --> kPending   (a few instructions)
//
//   kRearming is kPending with a lock held: every transition out of kPending waits for it to
//   end (transition(), cancel_task), so a re-arm racing a start, a cancel or shutdown_now is
//   ordered before or after it as a whole.
//   Every transition is a CAS, so cancel racing a start, a completion, or shutdown_now has exactly
//   one winner. Flags beside the state:
//     kQueued   the shard's leader took the task into its timer queue (a CAS from kPending);
//               a cancel that wins before it posts nothing: the leader drops the node when it
//               drains it. A cancel that sees kQueued posts a remove request (remove-on-cancel).
//     kPin      a canceller is inside the shard (counting, posting its request); whoever
//               detaches the task from the shard waits for it to clear.
//     kRemoved  the task left the pending count when it was cancelled (remove-on-cancel, or
//               discard_oldest): whoever drops it later must not count it again.
//     kWaiters  a thread sleeps on the futex: the completer must wake it.
//     kMovedOut a move-only result was taken.
//     kAwaited  a coroutine awaits the task (kairos/coro.hpp): whoever completes it resumes the
//               coroutines registered for it (wake_awaiters, protocol AW in core/src/awaiters.cpp).
// Completion: one way for every terminal state (core/src/completion.hpp): the CAS and the futex
//          wake (transition, below), the callable, then finish_completion, the awaiter wake, with
//          no kairos lock held. complete() does it all at once; cancel_task (its own CAS, the
//          pin with it) and code under a shard's lock (transition()) end in finish_completion
//          later (the shard's after the unlock: Shard::bury). One run's rules: run_once, same file.
// Callable: destroyed by whoever ends the task's runs, with no kairos lock held: the runner after
//          a one-shot run (or a periodic task's last), the canceller that won from kPending or
//          kOrphan. So captures are released as soon as the task can no longer run.
#pragma once
#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <limits>
#include <new>
#include <stop_token>
#include <type_traits>
#include <utility>

#include <kairos/detail/futex.hpp>
#include <kairos/detail/task_pool.hpp>

namespace kairos::detail {

inline constexpr std::uint32_t kPending = 0;
inline constexpr std::uint32_t kRunning = 1;
inline constexpr std::uint32_t kNormal = 2;
inline constexpr std::uint32_t kExceptional = 3;
inline constexpr std::uint32_t kCancelled = 4;
inline constexpr std::uint32_t kOrphan = 5;
inline constexpr std::uint32_t kRearming = 6;  // kPending, locked for a moment by a re-arm (or
                                               // by the leader reading the re-armed deadline)
inline constexpr std::uint32_t kStateMask = 7;
inline constexpr std::uint32_t kQueued = 1u << 3;
inline constexpr std::uint32_t kPin = 1u << 4;
inline constexpr std::uint32_t kWaiters = 1u << 5;
inline constexpr std::uint32_t kMovedOut = 1u << 6;
inline constexpr std::uint32_t kRemoved = 1u << 7;
inline constexpr std::uint32_t kAwaited = 1u << 8;

constexpr bool is_terminal(std::uint32_t s) noexcept {
  s &= kStateMask;
  return s == kNormal || s == kExceptional || s == kCancelled;
}

// TaskBase::flags: fixed when the node is built, read-only once published.
inline constexpr std::uint8_t kPeriodic = 1;
inline constexpr std::uint8_t kFixedDelay = 2;
inline constexpr std::uint8_t kStoppable = 4;
inline constexpr std::uint8_t kNoFuture = 8;  // execute(): exceptions go to on_uncaught
inline constexpr std::uint8_t kRearmable = 16;  // a RearmBase: rearm() may move its deadline
inline constexpr std::uint8_t kCountsCancel = 32;  // its cancel counts it out at once (Options::capacity:
                                                   // admissions read the count; core/src/shard_cancel.cpp)
inline constexpr std::uint8_t kTrivialCallable = 64;  // destroying its callable does nothing: a cancel
                                                      // from kPending need not touch the node after its
                                                      // CAS (the handle's releasing cancel: cancel_task,
                                                      // kairos/detail/scheduler_core.hpp)
inline constexpr std::uint8_t kFarStamp = 128;  // a far timer (Options::far_timer_slack): its shard's
                                               // leader gives it its deadline (far_deadline_*);
                                               // set before publication, never changed after

// Far timers' deadlines (Options::far_timer_slack). Until its shard's leader takes it in, a far
// task's deadline field holds its delay, encoded as -(delay + 1) (< 0); the leader then stores its
// own clock read + the delay (>= 0: CLOCK_MONOTONIC). The flag kFarStamp tells such a field from
// an ordinary deadline (which may be negative: schedule_at a time point before the clock's epoch).
// A delay is far only below kFarMaxDelayNs, so that the leader's sum never overflows (its clock
// read stays below 2^62 ns: 146 years after boot).
inline constexpr std::int64_t kFarMaxDelayNs = std::int64_t{1} << 62;
constexpr std::int64_t far_deadline_unstamped(std::int64_t delay) noexcept { return -delay - 1; }
constexpr bool far_deadline_stamped(std::int64_t field) noexcept { return field >= 0; }
constexpr std::int64_t far_deadline_delay(std::int64_t field) noexcept { return -(field + 1); }

// TaskBase::life: what the node's storage holds. Written by the one thread that owns the run
// (or won the cancel), read by the last owner and by get() after an acquire of a final state.
inline constexpr std::uint8_t kCallableLive = 1;
inline constexpr std::uint8_t kHasValue = 2;
inline constexpr std::uint8_t kHasError = 4;

inline constexpr std::uint32_t kNotQueued = 0xFFFFFFFFu;

struct TaskBase;
// Resumes the coroutines awaiting t (kairos/coro.hpp); t is terminal and kAwaited. Idempotent.
// Called in one place, with no kairos lock held: finish_completion (core/src/completion.hpp), the
// completion's last step.
void wake_awaiters(TaskBase* t) noexcept;

// What a node's type does, reached through TaskOps::manage; the generic functions below
// (drop_callable, destruct_node, destroy_node, task_result, task_stop_source) ask for it only when
// the node's flags say there is something to do.
enum class TaskManage : std::uint8_t {
  kDropCallable,  // destroy the callable (live, not trivially destructible; the caller clears kCallableLive)
  kDestruct,      // destroy what is left; the memory stays
  kDestroy,       // destroy what is left, then operator delete (kHeapClass only)
  kResult,        // -> the value or exception_ptr storage
  kStopSource,    // -> the std::stop_source (kStoppable only)
};

// One per node type. Two functions, not one per operation: each function a callable's type
// instantiates costs every call site's compile (the six of an earlier layout took a third more
// compile time per distinct callable at -O2); the operations are rare or skipped by the flags.
struct TaskOps {
  bool (*invoke)(TaskBase*);                              // one run; false iff it threw (stored)
  void* (*manage)(TaskBase*, TaskManage) noexcept;        // the rest (TaskManage)
  std::uint8_t size_class;                                // its memory's pool class; kHeapClass: operator new
};

// The reference count lives in the state word, above the state and its flags: one word for
// both keeps the base at 32 bytes. Every state CAS keeps the bits it does not change (the pattern
// `(s & ~kStateMask) | to`), so a reference taken or dropped meanwhile only makes a CAS retry.
// A futex waiter sleeps on the whole word and re-checks after any change of it.
//
// The count has no limit: the word's field holds up to 2^22 - 1, and a task with more references
// than that (copies of one future fanned out to millions of holders) keeps the excess in a
// process-wide spill table (core/src/task_references.cpp, edges RC3/RC4), flagged by kSpilled.
// The add that takes the field to kSpillAt moves kSpillChunk references into the table; a release
// that finds the field at or below kRefillBelow with kSpilled set moves a chunk back. So the
// field of a spilled task stays far above 1 (every thread that takes it below kRefillBelow goes
// to the table's mutex before it can release again: the field could fall past kRefillBelow only
// by as many releases as there are threads), a spilled task is never taken for the sole owner's,
// and the node goes only when the field's last reference goes with the table empty. A task with
// fewer than kSpillAt references (every task in practice) never touches the table: its add_ref
// and release are the one RMW and one compare they were.
inline constexpr std::uint32_t kSpilled = 1u << 9;  // part of the count is in the spill table
inline constexpr unsigned kRefShift = 10;           // above kSpilled
inline constexpr std::uint32_t kRefOne = 1u << kRefShift;
inline constexpr std::uint32_t kSpillAt = 1u << 20;     // of the field's 2^22 - 1
inline constexpr std::uint32_t kSpillChunk = 1u << 19;  // references moved at a time
inline constexpr std::uint32_t kRefillBelow = 1u << 18;
constexpr std::uint32_t refs_of(std::uint32_t s) noexcept { return s >> kRefShift; }
// The caller's reference is the task's only one (the field holds 1 and nothing is spilled).
constexpr bool only_reference(std::uint32_t s) noexcept { return refs_of(s) == 1 && !(s & kSpilled); }
static_assert(kAwaited < kSpilled && kSpilled < kRefOne, "the reference count sits above every state flag");
static_assert(kSpillChunk + kRefillBelow < kSpillAt && kSpillAt <= (1u << (32 - kRefShift)) / 4,
              "a spill leaves the field above the refill mark, far below its capacity");

struct TaskBase {
  const TaskOps* ops;
  std::atomic<std::uint32_t> state{kPending | kRefOne};  // state, flags, references (one: the caller's)
  std::uint32_t queue_slot = kNotQueued;  // where it is filed in the shard's timer queue: a heap
                                          // slot, or a sorted run's id and position
                                          // (sorted_run.hpp); shard lock only
  std::int64_t deadline = 0;     // ns on the scheduler's clock; the shard's leader owns it once
                                 // queued, the runner between pop and re-queue
  std::uint32_t seq = 0;         // order stamp: submission order within the shard, the low 32 bits
                                 // of the inbox's sequence number (breaks deadline ties; compared
                                 // modulo 2^32 by seq_before; a long-lived one renumbered by the
                                 // shard's restamp pass). Owners: the submitter until published,
                                 // then whoever holds the shard's lock (for a re-armable task,
                                 // while it also holds kRearming).
  std::uint8_t flags = 0;
  std::uint8_t life = 0;
  std::uint8_t shard = 0;        // the shard that owns it (set at submission)
  std::uint8_t never = 0;        // 1: its deadline lies past the clock's range (never due); it
                                 // sorts after every task due at the same (largest) deadline,
                                 // also one due at a ManualClock's last time point. Same owners
                                 // as deadline (a byte of its own: no other field shares it).

  TaskBase() noexcept = default;
  // A node made for submission (make_node), its count set before any other thread can see it:
  // the scheduler's reference and, with a future, the future's. One store at construction, not a
  // second read-modify-write of the word (the path budget, docs/design.md).
  explicit TaskBase(std::uint32_t refs) noexcept : state{kPending | refs * kRefOne} {}

  bool periodic() const noexcept { return flags & kPeriodic; }
  bool never_due() const noexcept { return never != 0; }
};
static_assert(sizeof(TaskBase) == 32, "TaskBase layout: 32 bytes (W5: a pending timer in 48 with its heap slot)");

// Order stamps compare modulo 2^32: a before b iff b was stamped fewer than 2^31 stamps after a.
// The shard keeps every live stamp within that window of the others: stamps that live long are
// renumbered, in order, once every 2^28 submissions (core/src/restamp.hpp). So FIFO among equal
// deadlines holds between any two tasks of one shard, however far apart they were submitted.
constexpr bool seq_before(std::uint32_t a, std::uint32_t b) noexcept {
  return static_cast<std::int32_t>(a - b) < 0;
}
// The filing order: the one order of a shard's pending tasks (timer heap, sorted runs, the
// oldest for discard_oldest, shutdown_now's list), named filed_before wherever it is compared.
// Earliest deadline; at equal deadlines a never-due task after one that is due; then the order
// stamp (seq_before).
struct FiledKey {
  std::int64_t deadline = 0;
  std::uint32_t seq = 0;
  bool never = false;
};
constexpr bool filed_before(const FiledKey& a, const FiledKey& b) noexcept {
  if (a.deadline != b.deadline) return a.deadline < b.deadline;
  if (a.never != b.never) return b.never;
  return seq_before(a.seq, b.seq);
}
inline FiledKey filed_key(const TaskBase* t) noexcept { return {t->deadline, t->seq, t->never != 0}; }
inline bool filed_before(const TaskBase* a, const TaskBase* b) noexcept {
  return filed_before(filed_key(a), filed_key(b));
}

// task_references.cpp: the spill table's two moves (see the count's paragraph above).
void spill_references(TaskBase* t) noexcept;
void refill_references(TaskBase* t) noexcept;

inline void add_ref(TaskBase* t) noexcept {
  if (refs_of(t->state.fetch_add(kRefOne, std::memory_order_relaxed)) + 1 == kSpillAt) spill_references(t);
}
// True when the caller's reference is the only one. Nobody else can then take one (a new
// reference is copied from a live one: a handle, a future) or drop one, so the caller may treat
// t as its own: destroy it with no RMW (Shard::bury), or skip publishing a result no one can
// read (run_once, core/src/completion.hpp). (RC2) acquire: pairs with the other owners' last
// (RC1), whose writes are seen before the caller goes on.
inline bool sole_owner(const TaskBase* t) noexcept {
  return only_reference(t->state.load(std::memory_order_acquire));  // (RC2)
}
// (RC1) acq_rel: the last owner must see every write of the others before destroying; pairs
// with the other owners' (RC1) and with (RC2). (Testing sole_owner first would cost a second
// transfer of the line when another core holds it: a canceller's, a handle's. Shard::bury,
// whose task's line is its own, reads the word anyway and skips the RMW there.)
inline void destroy_node(TaskBase* t) noexcept;
inline void release(TaskBase* t) noexcept {
  const std::uint32_t s = t->state.fetch_sub(kRefOne, std::memory_order_acq_rel);  // (RC1)
  if (only_reference(s)) destroy_node(t);
  else if ((s & kSpilled) && refs_of(s) - 1 <= kRefillBelow) refill_references(t);
}

// CAS the state part from `from` to `to`, keeping the flags; wakes futex waiters when `to` is
// terminal (a syscall: fine under any lock). From kPending it waits out a re-arm in progress.
// True iff it won; `*was` (if given) is then the word it replaced. A terminal `to` is a
// completion's CAS: complete() (core/src/completion.hpp) makes it with no lock held and finishes
// the completion; code under a shard's lock makes it here and leaves the rest (the awaiter wake)
// to Shard::bury. (ST1)
// acq_rel: the winner publishes the result (release) and sees earlier transitions; pairs with
// every acquire of the state word (a waiter's ST2, a handle's FU2, the shard's TI2) and with the
// registrar's AW2.
inline bool transition(TaskBase* t, std::uint32_t from, std::uint32_t to, std::uint32_t* was = nullptr) noexcept {
  std::uint32_t s = t->state.load(std::memory_order_acquire);
  for (;;) {
    if ((s & kStateMask) != from) {
      if (from != kPending || (s & kStateMask) != kRearming) return false;  // (a pinned task is
      cpu_relax();                                                           // kCancelled: never
      s = t->state.load(std::memory_order_acquire);                          // `from`)
      continue;
    }
    std::uint32_t n = (s & ~kStateMask) | to;
    if (t->state.compare_exchange_weak(s, n, std::memory_order_acq_rel, std::memory_order_acquire)) {  // (ST1)
      if (is_terminal(to) && (s & kWaiters)) futex_wake_all(&t->state);
      if (was != nullptr) *was = s;
      return true;
    }
  }
}

// Re-armable tasks: holds a pending task in kRearming (waiting out another holder). False if
// it is not pending (started, done, cancelled, returned by shutdown_now). (RA1) acq_rel: the
// holder sees the previous holder's writes; pairs with (RA2). Protocol: core/src/shard_rearm.cpp.
inline bool lock_pending(TaskBase* t) noexcept {
  std::uint32_t s = t->state.load(std::memory_order_acquire);
  for (;;) {
    std::uint32_t st = s & kStateMask;
    if (st == kRearming) {
      cpu_relax();
      s = t->state.load(std::memory_order_acquire);
      continue;
    }
    if (st != kPending) return false;
    if (t->state.compare_exchange_weak(s, (s & ~kStateMask) | kRearming, std::memory_order_acq_rel,
                                       std::memory_order_acquire))  // (RA1)
      return true;
  }
}
// Ends the hold: kRearming -> `to` (kPending, or kRunning for a start), keeping the flags
// (a get() may add kWaiters meanwhile). (RA2) release: publishes what the holder wrote; pairs
// with (RA1).
inline void unlock_pending(TaskBase* t, std::uint32_t to = kPending) noexcept {
  std::uint32_t s = t->state.load(std::memory_order_relaxed);
  while (!t->state.compare_exchange_weak(s, (s & ~kStateMask) | to, std::memory_order_acq_rel,
                                         std::memory_order_relaxed)) {  // (RA2)
  }
}

// Blocks until the task is done or deadline_ns (CLOCK_MONOTONIC; < 0 = none) passes.
// Returns the state word last seen (terminal iff done). (ST2) the kWaiters CAS acq_rel and the
// acquire loads: a terminal state seen here carries the result its completer published (ST1),
// and a completer whose CAS comes after this one sees kWaiters and wakes the futex.
inline std::uint32_t wait_done(TaskBase* t, std::int64_t deadline_ns) noexcept {
  std::uint32_t s = t->state.load(std::memory_order_acquire);
  while (!is_terminal(s)) {
    if (!(s & kWaiters)) {
      if (!t->state.compare_exchange_weak(s, s | kWaiters, std::memory_order_acq_rel,
                                          std::memory_order_acquire))  // (ST2)
        continue;
      s |= kWaiters;
    }
    if (!futex_wait(&t->state, s, deadline_ns)) return t->state.load(std::memory_order_acquire);
    s = t->state.load(std::memory_order_acquire);
  }
  return s;
}

// ---- what the node's type does, asked for only when there is something to do --------------------
// The value or exception_ptr storage.
inline void* task_result(TaskBase* t) noexcept { return t->ops->manage(t, TaskManage::kResult); }
inline std::exception_ptr& stored_error(TaskBase* t) noexcept {
  return *static_cast<std::exception_ptr*>(task_result(t));
}
// The run's stop source; nullptr unless the callable takes a std::stop_token.
inline std::stop_source* task_stop_source(TaskBase* t) noexcept {
  if (!(t->flags & kStoppable)) return nullptr;
  return static_cast<std::stop_source*>(t->ops->manage(t, TaskManage::kStopSource));
}
// Destroys the callable if it is still live (its captures go now). By whoever ends the task's
// runs (the callable's paragraph at the top).
inline void drop_callable(TaskBase* t) noexcept {
  if (!(t->life & kCallableLive)) return;
  t->life = static_cast<std::uint8_t>(t->life & ~kCallableLive);
  if (!(t->flags & kTrivialCallable)) t->ops->manage(t, TaskManage::kDropCallable);
}
// True when destroying the node runs no destructor: a stop source, a value, an error, or a callable
// with a destructor still live makes it false.
inline bool nothing_to_destruct(const TaskBase* t) noexcept {
  const bool callable = (t->life & kCallableLive) && !(t->flags & kTrivialCallable);
  return !callable && !(t->life & (kHasValue | kHasError)) && !(t->flags & kStoppable);
}
// What is left of the node is destroyed; its memory stays (FreedNodes frees it with others).
inline void destruct_node(TaskBase* t) noexcept {
  if (!nothing_to_destruct(t)) t->ops->manage(t, TaskManage::kDestruct);
}
// What is left of the node, then its memory. The last owner's (release, Shard::bury).
inline void destroy_node(TaskBase* t) noexcept {
  const std::uint8_t cls = t->ops->size_class;
  if (cls == kHeapClass) {
    t->ops->manage(t, TaskManage::kDestroy);
    return;
  }
  destruct_node(t);
  task_free(t, cls);  // the node begins with its TaskBase: the pool's address
}

// ---- typed nodes --------------------------------------------------------------------------
struct PeriodicBase : TaskBase {
  using TaskBase::TaskBase;
  std::int64_t period = 0;  // fixed rate: deadline += period; fixed delay: end of run + period
};

// A re-armable one-shot task: the deadline rearm() asked for last, and the sequence number it
// took then (FIFO among equal deadlines by re-arm order). Written by the re-armer and read by
// the leader only while they hold the task in kRearming; `latest_deadline` is also read by
// delay() (relaxed snapshot). The leader files the task at (deadline, seq); when the filed key
// differs from the latest one, it re-files before it starts the task (never early), and a
// re-arm to an earlier deadline sends it a request at once (never late).
struct RearmBase : TaskBase {
  using TaskBase::TaskBase;
  std::int64_t latest_deadline = 0;
  std::uint32_t latest_seq = 0;
  std::uint8_t latest_never = 0;
  // 1 while a refile request of this task may be in flight (core/src/shard_rearm.cpp): set by
  // the re-armer that posts one, cleared when the leader files the task at its latest key
  // (adopt_latest); both hold kRearming (or are the only owner). A re-arm that finds it set sends
  // no second request: the one in flight files the task at the newest key. So a thread that
  // re-arms a task earlier and earlier as fast as it can keeps at most one request in the inbox,
  // and a drain never chases it. In the padding after latest_never: the node does not grow.
  std::uint8_t refile_posted = 0;
  bool rearmed() const noexcept {
    return latest_seq != seq || latest_deadline != deadline || latest_never != never;
  }
  // Files the task at its latest key (the holder of kRearming, or the only owner). True iff the
  // key changed.
  bool adopt_latest() noexcept {
    refile_posted = 0;  // filed at the newest key now: a later earlier re-arm posts again
    if (!rearmed()) return false;
    std::atomic_ref<std::int64_t>(deadline).store(latest_deadline, std::memory_order_relaxed);  // delay()
    std::atomic_ref<std::uint8_t>(never).store(latest_never, std::memory_order_relaxed);
    seq = latest_seq;
    return true;
  }
};

struct NoStop {};
struct NoValue {};

// The callable and what a run leaves behind. One-shot tasks whose result can be moved share one
// union (the callable is gone before the result exists); periodic tasks keep the callable for
// every run, and a result type that cannot be moved is built in place beside the callable.
template <class F, class R, bool Periodic>
struct TaskStorage {
  static constexpr bool kShared = !Periodic && (std::is_void_v<R> || std::is_move_constructible_v<R>);
  using Value = std::conditional_t<std::is_void_v<R> || Periodic, NoValue, R>;
  union Fn {
    F fn;
    Fn() noexcept {}
    ~Fn() {}
  };
  union Result {
    Value value;
    std::exception_ptr error;
    Result() noexcept {}
    ~Result() {}
  };
  union SharedSlot {
    F fn;
    Value value;
    std::exception_ptr error;
    SharedSlot() noexcept {}
    ~SharedSlot() {}
  };
  struct Split {
    Fn f;
    Result r;
  };
  std::conditional_t<kShared, SharedSlot, Split> s;

  F& fn() noexcept {
    if constexpr (kShared) return s.fn;
    else return s.f.fn;
  }
  void* result() noexcept {
    if constexpr (kShared) return &s;
    else return &s.r;
  }
  Value& value() noexcept { return *static_cast<Value*>(result()); }
  std::exception_ptr& error() noexcept { return *static_cast<std::exception_ptr*>(result()); }
};

template <class F, class R, bool Periodic, bool Stoppable, bool Rearmable = false>
struct Node final : std::conditional_t<Periodic, PeriodicBase, std::conditional_t<Rearmable, RearmBase, TaskBase>> {
  using Base = std::conditional_t<Periodic, PeriodicBase, std::conditional_t<Rearmable, RearmBase, TaskBase>>;
  using Storage = TaskStorage<F, R, Periodic>;
  [[no_unique_address]] std::conditional_t<Stoppable, std::stop_source, NoStop> stop;
  Storage store;

  template <class G>
  Node(G&& g, std::uint32_t refs) : Base(refs), stop(make_stop()) {
    ::new (static_cast<void*>(&store.fn())) F(std::forward<G>(g));
    this->life = kCallableLive;
  }
  ~Node() {
    if (this->life & kCallableLive) store.fn().~F();
    using V = typename Storage::Value;
    if constexpr (!std::is_same_v<V, NoValue>)
      if (this->life & kHasValue) store.value().~V();
    if (this->life & kHasError) store.error().~exception_ptr();
  }

  static auto make_stop() noexcept {
    if constexpr (Stoppable) return std::stop_source(std::nostopstate);
    else return NoStop{};
  }

  decltype(auto) call() {
    if constexpr (Stoppable) return std::invoke(store.fn(), stop.get_token());
    else return std::invoke(store.fn());
  }

  void end_callable() noexcept {
    if (this->life & kCallableLive) {
      this->life = static_cast<std::uint8_t>(this->life & ~kCallableLive);
      store.fn().~F();
    }
  }
  void set_error(std::exception_ptr e) noexcept {
    if (this->life & kHasError) store.error().~exception_ptr();
    ::new (static_cast<void*>(&store.error())) std::exception_ptr(std::move(e));
    this->life |= kHasError;
  }

  static bool invoke(TaskBase* b) {
    auto* n = static_cast<Node*>(b);
    try {
      if constexpr (Periodic) {
        n->call();
      } else if constexpr (std::is_void_v<R>) {
        n->call();
        n->end_callable();
      } else if constexpr (Storage::kShared) {
        R r = n->call();
        n->end_callable();
        ::new (static_cast<void*>(&n->store.value())) R(std::move(r));
        n->life |= kHasValue;
      } else {
        ::new (static_cast<void*>(&n->store.value())) R(n->call());
        n->life |= kHasValue;
        n->end_callable();
      }
      return true;
    } catch (...) {
      if constexpr (!Periodic) n->end_callable();
      n->set_error(std::current_exception());
      return false;
    }
  }
  static constexpr std::uint8_t kSizeClass = size_class_for(sizeof(Node), alignof(Node));
  static void* manage(TaskBase* b, TaskManage what) noexcept {
    auto* n = static_cast<Node*>(b);
    switch (what) {
      case TaskManage::kDropCallable:
        n->store.fn().~F();  // the caller cleared kCallableLive
        return nullptr;
      case TaskManage::kDestruct:
        n->~Node();
        return nullptr;
      case TaskManage::kDestroy:
        n->~Node();
        ::operator delete(static_cast<void*>(n), std::align_val_t{alignof(Node)});
        return nullptr;
      case TaskManage::kResult:
        return n->store.result();
      case TaskManage::kStopSource:
        if constexpr (Stoppable) return &n->stop;
        else return nullptr;
    }
    return nullptr;
  }
  static constexpr TaskOps kOps{&invoke, &manage, kSizeClass};
};

template <class F>
inline constexpr bool kTakesStopToken = std::is_invocable_v<F&, std::stop_token>;

template <class F, bool Stoppable = kTakesStopToken<F>>
struct call_result { using type = std::invoke_result_t<F&>; };
template <class F>
struct call_result<F, true> { using type = std::invoke_result_t<F&, std::stop_token>; };
template <class F>
using call_result_t = typename call_result<F>::type;

// A callable that can be empty (function pointer, std::function, ...) is checked at submission.
template <class F>
bool is_empty_callable(const F& f) noexcept {
  if constexpr (std::is_function_v<F>) return false;  // a function (reference) is never null
  else if constexpr (std::is_pointer_v<F> || std::is_member_pointer_v<F>) return f == nullptr;
  else if constexpr (requires { static_cast<bool>(f); } && !std::is_class_v<F>) return !f;
  else if constexpr (requires { f == nullptr; }) return f == nullptr;
  else return false;
}

// Builds the node for F with refs references: the scheduler's, and the future's when the caller
// returns one (2).
template <bool Periodic, class F, bool Rearmable = false>
auto* make_node(F&& f, std::uint8_t flags, std::uint32_t refs) {
  static_assert(!(Periodic && Rearmable), "kairos: only one-shot tasks are re-armable");
  using Fn = std::decay_t<F>;
  constexpr bool stoppable = kTakesStopToken<Fn>;
  using R = std::conditional_t<Periodic, void, call_result_t<Fn>>;
  using N = Node<Fn, R, Periodic, stoppable, Rearmable>;
  constexpr std::uint8_t cls = size_class_for(sizeof(N), alignof(N));
  void* mem;
  if constexpr (cls == kHeapClass) mem = ::operator new(sizeof(N), std::align_val_t{alignof(N)});
  else mem = TaskPoolClass<cls>::alloc();
  N* n;
  try {
    n = ::new (mem) N(std::forward<F>(f), refs);
  } catch (...) {
    if (cls == kHeapClass) ::operator delete(mem, std::align_val_t{alignof(N)});
    else task_free(mem, cls);
    throw;
  }
  n->ops = &N::kOps;
  n->flags = static_cast<std::uint8_t>(flags | (Periodic ? kPeriodic : 0) | (stoppable ? kStoppable : 0) |
                                        (Rearmable ? kRearmable : 0) |
                                        (std::is_trivially_destructible_v<Fn> ? kTrivialCallable : 0));
  return n;
}

}  // namespace kairos::detail
