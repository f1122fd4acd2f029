// task.hpp: kairos::Task, a task that shutdown_now() took off the queue (move-only).
//   run()      runs one execution now, in the caller, with a fresh stop token, completing its
//              future (a periodic task's future then completes as cancelled). Once only.
//   destroyed without run(): its future completes as cancelled, so no get() ever hangs.
#pragma once
#include <utility>

#include <kairos/detail/scheduler_core.hpp>
#include <kairos/detail/task.hpp>

namespace kairos {

class Task {
 public:
  Task(detail::TaskBase* adopted, detail::SchedulerCore::UncaughtHandler on_uncaught) noexcept
      : node_(adopted), on_uncaught_(std::move(on_uncaught)) {}
  Task(Task&& o) noexcept : node_(std::exchange(o.node_, nullptr)), on_uncaught_(std::move(o.on_uncaught_)) {}
  Task& operator=(Task&& o) noexcept {
    if (this != &o) {
      reset();
      node_ = std::exchange(o.node_, nullptr);
      on_uncaught_ = std::move(o.on_uncaught_);
    }
    return *this;
  }
  Task(const Task&) = delete;
  Task& operator=(const Task&) = delete;
  ~Task() { reset(); }

  void run() noexcept {
    if (detail::TaskBase* n = std::exchange(node_, nullptr)) detail::run_orphan(n, on_uncaught_.get());
  }
  bool is_periodic() const noexcept { return node_ && node_->periodic(); }
  explicit operator bool() const noexcept { return node_ != nullptr; }

 private:
  void reset() noexcept {
    if (detail::TaskBase* n = std::exchange(node_, nullptr)) detail::drop_orphan(n);
  }
  detail::TaskBase* node_;
  detail::SchedulerCore::UncaughtHandler on_uncaught_;
};

}  // namespace kairos
