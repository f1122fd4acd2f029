// task_lifecycle.cpp: what a handle does to a task that left its scheduler: the run or drop of a
// task that shutdown_now() returned (kairos::Task), and the report of an uncaught exception.
// Cancel is in shard_cancel.cpp, re-arm in shard_rearm.cpp. See detail/task.hpp for the state
// machine and who destroys the callable.
#include <cstdio>
#include <exception>

#include <kairos/detail/scheduler_core.hpp>

#include "engine_state.hpp"

namespace kairos::detail {

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
