// task_orphans.cpp: what a handle does to a task that left its scheduler: the run or the drop
// of a task that shutdown_now() (or Options::on_rejected) returned as a kairos::Task (kOrphan).
// The run is run_once's, as on a scheduler thread, with no run after it (a periodic task's future
// completes as cancelled); the drop is a completion as cancelled (complete, completion.hpp).
// The Task holds the scheduler's reference; both release it at the end.
#include <exception>
#include <functional>

#include <kairos/detail/scheduler_core.hpp>

#include "completion.hpp"

namespace kairos::detail {

void run_orphan(TaskBase* t, const std::function<void(std::exception_ptr)>* on_uncaught) noexcept {
  if (start_outside(t, kOrphan)) {
    // No clock: a run with no run after it never needs its next deadline.
    (void)run_once(t, [t] { return t->ops->invoke(t); }, false, [] { return std::int64_t{0}; },
                   RunContext{on_uncaught, nullptr});
  }
  release(t);
}

void drop_orphan(TaskBase* t) noexcept {
  (void)complete(t, kOrphan, kCancelled);
  release(t);
}

}  // namespace kairos::detail
