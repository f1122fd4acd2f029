// task.hpp: the task node every submission becomes, and its state machine.
// Memory:  one pooled allocation per task (task_pool.hpp). The callable lives inside the node,
//          so a capture-less one-shot task is a 56-byte node; 48 bytes of captures fit in 112.
// Owners:  an intrusive reference count. The scheduler holds one reference from submission until
//          the task leaves it (ran, removed, drained); every ScheduledFuture/Task holds one.
// State:   `state` is the single word every thread agrees on (and the futex waiters sleep on):
//
//     kPending --run--> kRunning --ok--> kNormal           (one-shot)
//         |                 |  \--threw--> kExceptional
//         |                 \--periodic ok--> kPending     (re-queued by its runner)
//         +--cancel---------+-------------> kCancelled     (from kPending or kRunning)
//         +--shutdown_now--> kOrphan --Task::run--> kRunning; Task dropped --> kCancelled
//
//   Every transition is a CAS, so cancel racing a start, a completion, or shutdown_now has exactly
//   one winner. Flags beside the state: kPin (a canceller is inside the shard to post a remove
//   request; whoever detaches the task from the shard waits for it to clear), kWaiters (a thread
//   sleeps on the futex: the completer must wake it), kMovedOut (a move-only result was taken).
#pragma once
#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <new>
#include <stop_token>
#include <type_traits>
#include <utility>

#include <kairos/detail/futex.hpp>
#include <kairos/detail/task_pool.hpp>

namespace kairos::detail {

class SchedulerCore;

inline constexpr std::uint32_t kPending = 0;
inline constexpr std::uint32_t kRunning = 1;
inline constexpr std::uint32_t kNormal = 2;
inline constexpr std::uint32_t kExceptional = 3;
inline constexpr std::uint32_t kCancelled = 4;
inline constexpr std::uint32_t kOrphan = 5;
inline constexpr std::uint32_t kStateMask = 7;
inline constexpr std::uint32_t kPin = 1u << 4;
inline constexpr std::uint32_t kWaiters = 1u << 5;
inline constexpr std::uint32_t kMovedOut = 1u << 6;

constexpr bool is_terminal(std::uint32_t s) noexcept {
  s &= kStateMask;
  return s == kNormal || s == kExceptional || s == kCancelled;
}

// TaskBase::flags
inline constexpr std::uint8_t kPeriodic = 1;
inline constexpr std::uint8_t kFixedDelay = 2;
inline constexpr std::uint8_t kStoppable = 4;
inline constexpr std::uint8_t kNoFuture = 8;  // execute(): exceptions go to on_uncaught
inline constexpr std::uint8_t kNever = 16;    // its deadline lies past the clock's range: never due

inline constexpr std::uint32_t kNotInHeap = 0xFFFFFFFFu;

struct TaskBase;
struct TaskOps {
  bool (*invoke)(TaskBase*);                            // one run; false iff it threw (stored)
  void (*destroy)(TaskBase*) noexcept;                  // members, then memory
  std::stop_source* (*stop_source)(TaskBase*) noexcept;  // nullptr unless kStoppable
};

struct TaskBase {
  const TaskOps* ops;
  std::atomic<std::uint32_t> state{kPending};
  std::atomic<std::uint32_t> refs{1};
  std::uint32_t heap_index = kNotInHeap;  // its slot in the shard's heap; shard lock only
  std::uint8_t size_class = kHeapClass;
  std::uint8_t flags = 0;
  std::uint8_t result_kind = 0;  // 0 none, 1 value, 2 error: written by the runner before the
                                 // release CAS that completes the future, read after acquire
  std::uint8_t shard = 0;        // the shard that owns it (set at submission)
  std::int64_t deadline = 0;     // ns on the scheduler's clock; the shard's leader owns it once
                                 // queued, the runner between pop and re-queue
  std::uint64_t seq = 0;         // submission order within the shard: breaks deadline ties
  SchedulerCore* core = nullptr; // valid while the task is attached (pending in a scheduler)

  bool periodic() const noexcept { return flags & kPeriodic; }
};
static_assert(sizeof(TaskBase) == 48, "TaskBase layout: 48 bytes");

inline void add_ref(TaskBase* t) noexcept { t->refs.fetch_add(1, std::memory_order_relaxed); }
// acq_rel: the last owner must see every write of the others before destroying.
inline void release(TaskBase* t) noexcept {
  if (t->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) t->ops->destroy(t);
}

// CAS the state part from `from` to `to`, keeping the flags; wakes futex waiters when `to` is
// terminal. acq_rel: the winner publishes the result (release) and sees earlier transitions.
inline bool transition(TaskBase* t, std::uint32_t from, std::uint32_t to) noexcept {
  std::uint32_t s = t->state.load(std::memory_order_acquire);
  for (;;) {
    if ((s & kStateMask) != from) return false;  // (a pinned task is kCancelled: never `from`)
    std::uint32_t n = (s & ~kStateMask) | to;
    if (t->state.compare_exchange_weak(s, n, std::memory_order_acq_rel, std::memory_order_acquire)) {
      if (is_terminal(to) && (s & kWaiters)) futex_wake_all(&t->state);
      return true;
    }
  }
}

// Blocks until the task is done or deadline_ns (CLOCK_MONOTONIC; < 0 = none) passes.
// Returns the state word last seen (terminal iff done).
inline std::uint32_t wait_done(TaskBase* t, std::int64_t deadline_ns) noexcept {
  std::uint32_t s = t->state.load(std::memory_order_acquire);
  while (!is_terminal(s)) {
    if (!(s & kWaiters)) {
      if (!t->state.compare_exchange_weak(s, s | kWaiters, std::memory_order_acq_rel,
                                          std::memory_order_acquire))
        continue;
      s |= kWaiters;
    }
    if (!futex_wait(&t->state, s, deadline_ns)) return t->state.load(std::memory_order_acquire);
    s = t->state.load(std::memory_order_acquire);
  }
  return s;
}

// ---- typed nodes --------------------------------------------------------------------------
template <class R>
struct ResultSlot : TaskBase {
  union {
    R value;
    std::exception_ptr error;
  };
  ResultSlot() noexcept {}
  ~ResultSlot() {
    if (result_kind == 1) value.~R();
    else if (result_kind == 2) error.~exception_ptr();
  }
};
template <>
struct ResultSlot<void> : TaskBase {
  union {
    std::exception_ptr error;
  };
  ResultSlot() noexcept {}
  ~ResultSlot() {
    if (result_kind == 2) error.~exception_ptr();
  }
};

struct PeriodicBase : ResultSlot<void> {
  std::int64_t period = 0;  // fixed rate: deadline += period; fixed delay: end of run + period
};

struct NoStop {};

template <class F, class R, bool Periodic, bool Stoppable>
struct Node final : std::conditional_t<Periodic, PeriodicBase, ResultSlot<R>> {
  [[no_unique_address]] std::conditional_t<Stoppable, std::stop_source, NoStop> stop;
  [[no_unique_address]] F fn;

  template <class G>
  explicit Node(G&& g) : stop(make_stop()), fn(std::forward<G>(g)) {}

  static auto make_stop() noexcept {
    if constexpr (Stoppable) return std::stop_source(std::nostopstate);
    else return NoStop{};
  }

  decltype(auto) call() {
    if constexpr (Stoppable) return std::invoke(fn, stop.get_token());
    else return std::invoke(fn);
  }

  static bool invoke(TaskBase* b) {
    auto* n = static_cast<Node*>(b);
    try {
      if constexpr (Periodic || std::is_void_v<R>) {
        n->call();
      } else {
        if (n->result_kind == 1) { n->value.~R(); n->result_kind = 0; }
        ::new (static_cast<void*>(&n->value)) R(n->call());
        n->result_kind = 1;
      }
      return true;
    } catch (...) {
      if (n->result_kind == 2) n->error.~exception_ptr();
      ::new (static_cast<void*>(&n->error)) std::exception_ptr(std::current_exception());
      n->result_kind = 2;
      return false;
    }
  }
  static void destroy(TaskBase* b) noexcept {
    auto* n = static_cast<Node*>(b);
    std::uint8_t cls = n->size_class;
    n->~Node();
    if (cls == kHeapClass) ::operator delete(static_cast<void*>(n), std::align_val_t{alignof(Node)});
    else task_free(n, cls);
  }
  static std::stop_source* stop_source(TaskBase* b) noexcept {
    if constexpr (Stoppable) return &static_cast<Node*>(b)->stop;
    else { (void)b; return nullptr; }
  }
  static constexpr TaskOps kOps{&invoke, &destroy, &stop_source};
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

// Builds the node for F (one scheduler reference; `extra_refs` more for the returned handles).
template <bool Periodic, class F>
auto* make_node(F&& f, std::uint8_t flags) {
  using Fn = std::decay_t<F>;
  constexpr bool stoppable = kTakesStopToken<Fn>;
  using R = std::conditional_t<Periodic, void, call_result_t<Fn>>;
  using N = Node<Fn, R, Periodic, stoppable>;
  constexpr std::uint8_t cls = size_class_for(sizeof(N), alignof(N));
  void* mem = cls == kHeapClass ? ::operator new(sizeof(N), std::align_val_t{alignof(N)}) : task_alloc(cls);
  N* n;
  try {
    n = ::new (mem) N(std::forward<F>(f));
  } catch (...) {
    if (cls == kHeapClass) ::operator delete(mem, std::align_val_t{alignof(N)});
    else task_free(mem, cls);
    throw;
  }
  n->ops = &N::kOps;
  n->size_class = cls;
  n->flags = static_cast<std::uint8_t>(flags | (Periodic ? kPeriodic : 0) | (stoppable ? kStoppable : 0));
  return n;
}

}  // namespace kairos::detail
