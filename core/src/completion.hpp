// completion.hpp: the one way a task finishes, and the one way a run ends.
//
// complete(t, from, to) is the completion of every terminal state (kNormal, kExceptional,
// kCancelled), as the JDK's FutureTask routes set(), setException() and cancel() through one
// finishCompletion(): the terminal CAS and the futex wake (transition, detail/task.hpp), the
// callable dropped if the completer owns it and it is still there, then the awaiter wake
// (finish_completion). User code runs in that wake (a resumed coroutine), so complete() has a
// checked precondition: no kairos lock held (KAIROS_DCHECK, debug and sanitizer builds).
// Code under a shard's lock makes its terminal CAS with transition() alone and hands the task to
// the graveyard: Shard::bury calls finish_completion after the unlock. cancel_task
// (shard_cancel.cpp) makes its own CAS (from whichever of kPending, kRunning, kOrphan it meets,
// the pin set with it), tells the shard, then calls finish_completion: those three places are
// the only callers of finish_completion, which holds the only call of wake_awaiters
// (awaiters.cpp, protocol AW).
//
// run_once(t, invoke, ...) is one execution of a started task (kRunning, the caller owns the
// run) and the rules of what follows it, for every runner: a shard's thread or poller
// (shard_leader.cpp), caller_runs (Engine::run_in_caller) and a returned task (run_orphan,
// task_orphans.cpp):
//   one-shot           kNormal, or kExceptional (to on_uncaught as well when nobody can get() it:
//                      execute()); with no handle left the run ends without the CAS (sole_owner).
//   periodic, threw    kExceptional; the callable goes: no run follows. On its scheduler (a
//                      runner, caller_runs) counted and reported to on_uncaught as well; a
//                      returned task's run (Task::run) reports only an execute()d task's.
//   periodic, ok       the next deadline (advance_period): fixed rate, the deadline it ran for +
//                      period; fixed delay, the end of its run + period; past the clock's range
//                      (overflow), never due. The task stays kRunning for its caller to re-queue
//                      (Ran::again), or, when no run may follow (an orphan), kCancelled.
#pragma once
#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <limits>

#include <kairos/detail/task.hpp>

#include "dcheck.hpp"
#include "engine_state.hpp"
#include "thread_annotations.hpp"

namespace kairos::detail {

// The completion's last step: resumes the coroutines awaiting t (kAwaited in `s`, a state word
// read at or after t's terminal CAS). The only call of wake_awaiters. No kairos lock held.
inline void finish_completion(TaskBase* t, std::uint32_t s) noexcept {
  KAIROS_DCHECK(is_terminal(s) && no_kairos_lock_held());
  if (s & kAwaited) wake_awaiters(t);  // (AW3)
}

// The one completion: `from` -> the terminal `to`. The caller owns the callable if the task is
// still live (a runner, the winner from kPending or kOrphan): it goes before the wake. False if
// t was not in `from` (nothing done). No kairos lock held (checked).
inline bool complete(TaskBase* t, std::uint32_t from, std::uint32_t to) noexcept {
  KAIROS_DCHECK(is_terminal(to) && no_kairos_lock_held());
  std::uint32_t s;
  if (!transition(t, from, to, &s)) return false;  // (ST1)
  drop_callable(t);  // if still live
  finish_completion(t, (s & ~kStateMask) | to);  // the word the CAS wrote
  return true;
}

// Starts a task outside its shard (caller_runs from kPending, a returned task from kOrphan): a
// fresh stop source first, so a cancel(true), which requests stop only after winning
// kRunning -> kCancelled, never sees the old one being replaced.
inline bool start_outside(TaskBase* t, std::uint32_t from) noexcept {
  if (std::stop_source* src = task_stop_source(t)) *src = std::stop_source();
  return transition(t, from, kRunning);
}

// A periodic task's next deadline (the caller owns t's deadline between runs): fixed rate, the
// deadline it ran for + period; fixed delay, the end of its run (`now()`, read only then) +
// period; past the clock's range, never due (deadline kMaxNs). A first run due "never" can only
// have been a caller_runs one; the next has a real time. Relaxed atomic stores: lifecycle calls
// and delay() read both as a snapshot without a lock (Shard::newest_key).
template <class Now>
void advance_period(TaskBase* t, Now&& now) noexcept {
  std::int64_t next;
  const bool never = __builtin_add_overflow(t->flags & kFixedDelay ? now() : t->deadline,
                                            static_cast<const PeriodicBase*>(t)->period, &next);
  if (never) next = std::numeric_limits<std::int64_t>::max();
  std::atomic_ref<std::uint8_t>(t->never).store(never ? 1 : 0, std::memory_order_relaxed);
  std::atomic_ref<std::int64_t>(t->deadline).store(next, std::memory_order_relaxed);
}

// Who hears of a failure: on_uncaught (nullptr: stderr), and the shard's count of periodic
// failures (nullptr: none kept).
struct RunContext {
  const std::function<void(std::exception_ptr)>* on_uncaught;
  std::atomic<std::uint64_t>* periodic_failures;
};

struct RunResult {
  bool ok;     // the callable returned (false: it threw; the exception is stored)
  bool again;  // periodic, its next deadline set, still kRunning: the caller re-queues it
};

// One execution of t (kRunning, owned by the caller) and its end, by the rules above. `invoke`
// runs the callable once and returns false iff it threw (t->ops->invoke, or the execution hooks'
// wrapper); `may_repeat`: a periodic task may run again (on its scheduler, not a returned
// task's run); `now` reads the scheduler's clock (fixed delay). No kairos lock held. The caller
// still holds its reference.
template <class Invoke, class Now>
RunResult run_once(TaskBase* t, Invoke&& invoke, bool may_repeat, Now&& now, const RunContext& cx) noexcept {
  const bool ok = invoke();  // a one-shot task's callable is gone when invoke returns
  auto report = [&] {
    report_uncaught(cx.on_uncaught ? *cx.on_uncaught : std::function<void(std::exception_ptr)>{}, stored_error(t));
  };
  if (!t->periodic()) {
    if (ok) {
      // Nobody holds a handle (execute(), a dropped future): no one can read the result, wait
      // for it or cancel, so the run ends without the CAS and the node goes with the caller's
      // reference (RC2).
      if (!sole_owner(t)) complete(t, kRunning, kNormal);
    } else if (complete(t, kRunning, kExceptional) && (t->flags & kNoFuture)) {
      report();
    }
    return {ok, false};
  }
  if (!ok) {
    if (complete(t, kRunning, kExceptional)) {
      if (cx.periodic_failures) cx.periodic_failures->fetch_add(1, std::memory_order_relaxed);  // a statistic
      if (may_repeat) report();
    } else {
      drop_callable(t);  // cancelled during the run: the runner owns the callable
    }
    return {false, false};
  }
  if (!may_repeat) {  // no later runs: the future completes as cancelled
    if (!complete(t, kRunning, kCancelled)) drop_callable(t);
    return {true, false};
  }
  advance_period(t, now);
  return {true, true};
}

}  // namespace kairos::detail
