// task_lifecycle.cpp: what a handle does to its task: cancel (ScheduledFuture::cancel), and the
// run or drop of a task that shutdown_now() returned (kairos::Task). See detail/task.hpp for the
// state machine and who destroys the callable.
#include <cstdio>
#include <exception>

#include <kairos/detail/scheduler_core.hpp>

#include "engine_state.hpp"

namespace kairos::detail {

bool cancel_task(TaskBase* t, SchedulerCore* core, bool may_interrupt_if_running) noexcept {
  std::uint32_t s = t->state.load(std::memory_order_acquire);
  for (;;) {
    std::uint32_t st = s & kStateMask;
    std::uint32_t n;
    if (st == kRearming) {  // a re-arm holds it for a few instructions
      cpu_relax();
      s = t->state.load(std::memory_order_acquire);
      continue;
    }
    if (st == kPending) n = (s & ~kStateMask) | kCancelled | kPin;
    else if (st == kRunning || st == kOrphan) n = (s & ~kStateMask) | kCancelled;
    else return false;
    // (C1) acq_rel: one winner against a start, a completion, shutdown_now and the leader's
    // accept (A1, shard.cpp); the pin keeps the shard alive until on_cancelled clears it.
    if (!t->state.compare_exchange_weak(s, n, std::memory_order_acq_rel, std::memory_order_acquire)) continue;
    if (s & kWaiters) futex_wake_all(&t->state);
    if (st == kPending) {
      core->on_cancelled(t, s & kQueued);  // clears the pin
      t->ops->drop_callable(t);            // it will never run: its captures go now
    } else if (st == kOrphan) {
      t->ops->drop_callable(t);
    } else if (may_interrupt_if_running) {
      if (std::stop_source* src = t->ops->stop_source(t)) src->request_stop();
    }
    if (s & kAwaited) wake_awaiters(t);  // (AW3) the caller's handle keeps t alive
    return true;
  }
}

bool rearm_task(TaskBase* t, SchedulerCore* core, std::int64_t deadline, bool never) noexcept {
  if (!(t->flags & kRearmable) || !lock_pending(t)) return false;  // (L1)
  // Held: the task stays attached (no start, cancel or shutdown_now until unlock), so `core`
  // and its shard are alive.
  core->rearm_locked(t, deadline, never);
  unlock_pending(t);  // (L2)
  return true;
}

void run_orphan(TaskBase* t, const std::function<void(std::exception_ptr)>* on_uncaught) noexcept {
  // A fresh stop source before the task is visible as running: a cancel(true) requests stop on
  // it only after winning kRunning -> kCancelled, so it never sees the old one being replaced.
  if (std::stop_source* src = t->ops->stop_source(t)) *src = std::stop_source();
  if (transition(t, kOrphan, kRunning)) {
    bool ok = t->ops->invoke(t);
    if (t->periodic()) {
      // No later runs: the future completes as cancelled (or exceptional), the callable goes.
      transition(t, kRunning, ok ? kCancelled : kExceptional);
      t->ops->drop_callable(t);
      if (t->state.load(std::memory_order_acquire) & kAwaited) wake_awaiters(t);  // (AW3)
    } else {
      transition(t, kRunning, ok ? kNormal : kExceptional);
    }
    if (!ok && (t->flags & kNoFuture))
      report_uncaught(on_uncaught ? *on_uncaught : std::function<void(std::exception_ptr)>{}, stored_error(t));
  }
  release(t);
}

void drop_orphan(TaskBase* t) noexcept {
  if (transition(t, kOrphan, kCancelled)) t->ops->drop_callable(t);
  if (t->state.load(std::memory_order_acquire) & kAwaited) wake_awaiters(t);  // (AW3)
  release(t);
}

void report_uncaught(const std::function<void(std::exception_ptr)>& handler, std::exception_ptr e) noexcept {
  if (handler) {
    try {
      handler(e);
    } catch (...) {
      // on_uncaught threw: dropped, as documented.
    }
    return;
  }
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& ex) {
    std::fprintf(stderr, "kairos: uncaught exception in a task: %s\n", ex.what());
  } catch (...) {
    std::fprintf(stderr, "kairos: uncaught exception of a non-std type in a task\n");
  }
}

void too_many_references() noexcept {
  std::fprintf(stderr, "kairos: more than %u references to one task (copies of one ScheduledFuture)\n",
               static_cast<unsigned>(kMaxRefs));
  std::terminate();
}

}  // namespace kairos::detail
