// scheduler.hpp: BasicScheduler<Clock>, kairos's ScheduledThreadPoolExecutor.
//
// Guarantees (the README says them in plain words):
// - Whatever a thread did before calling schedule() is visible in the task body, and a task's
//   effects are visible to whoever get()s its result.
// - A task never starts before its deadline on the scheduler's clock.
// - Equal deadlines start in submission order within a shard, also across threads whenever one
//   submission returned before the other started. A thread's tasks all go to one shard.
// - Runs of one periodic task never overlap, and each run happens-before the next.
// - Every accepted task runs, is cancelled, or is returned by shutdown_now(); nothing is lost.
//
// Threads: every member may be called from any thread, also from inside a task. The submit path
//          takes no lock and makes at most one system call (a wake-up when the new task is
//          earlier than the deadline its shard's leader sleeps for).
#pragma once
#include <chrono>
#include <concepts>
#include <memory>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

#include <kairos/clock.hpp>
#include <kairos/detail/scheduler_core.hpp>
#include <kairos/detail/task.hpp>
#include <kairos/duration.hpp>
#include <kairos/errors.hpp>
#include <kairos/future.hpp>
#include <kairos/options.hpp>
#include <kairos/stats.hpp>
#include <kairos/task.hpp>

namespace kairos {

template <class Clock>
class BasicScheduler {
  static_assert(std::is_same_v<Clock, SteadyClock> || std::is_same_v<Clock, ManualClock>,
                "kairos: Clock is SteadyClock or ManualClock");

 public:
  using clock_type = Clock;
  using time_point = typename Clock::time_point;

  explicit BasicScheduler(Options options = {})
    requires std::is_same_v<Clock, SteadyClock>
      : core_(detail::SchedulerCore::create(options, nullptr)) {}
  BasicScheduler(Options options, Clock& clock) : core_(detail::SchedulerCore::create(options, manual(clock))) {}

  // shutdown_now(), its tasks dropped (their futures complete as cancelled), running tasks asked
  // to stop and waited for; never waits on a deadline. Called from inside one of its own tasks,
  // it returns without waiting for that task, whose thread then exits.
  ~BasicScheduler() {
    if (core_) core_->close();
  }
  BasicScheduler(const BasicScheduler&) = delete;
  BasicScheduler& operator=(const BasicScheduler&) = delete;

  // One-shot task after `delay` (negative: as soon as possible; any duration, saturating).
  template <class F, class Rep, class Period>
  auto schedule(F&& f, std::chrono::duration<Rep, Period> delay) {
    Deadline d = deadline_after(delay);
    return submit_one(std::forward<F>(f), d);
  }
  // One-shot task at an absolute deadline on this scheduler's clock (a past one runs at once).
  template <class F>
  auto schedule_at(F&& f, time_point deadline) {
    std::int64_t d = detail::to_ns_saturated(deadline.time_since_epoch());
    return submit_one(std::forward<F>(f), Deadline{d, false});
  }
  // Run n is due at first + n * period; late runs start at once, one after another (catch-up).
  template <class F, class R1, class P1, class R2, class P2>
  ScheduledFuture<void> schedule_at_fixed_rate(F&& f, std::chrono::duration<R1, P1> initial_delay,
                                               std::chrono::duration<R2, P2> period) {
    return submit_periodic(std::forward<F>(f), initial_delay, period, 0, "period");
  }
  // The next run is due `delay` after the previous run ends.
  template <class F, class R1, class P1, class R2, class P2>
  ScheduledFuture<void> schedule_with_fixed_delay(F&& f, std::chrono::duration<R1, P1> initial_delay,
                                                  std::chrono::duration<R2, P2> delay) {
    return submit_periodic(std::forward<F>(f), initial_delay, delay, detail::kFixedDelay, "delay");
  }
  // Zero-delay schedule whose exception (nobody can get() it) goes to Options::on_uncaught.
  template <class F>
  void execute(F&& f) {
    check_callable(f);
    Deadline d = deadline_after(Duration::zero());
    auto* n = detail::make_node<false>(std::forward<F>(f), detail::kNoFuture);
    core_->submit(n, d.ns, d.never);
  }
  template <class F>
  auto submit(F&& f) {
    return submit_one(std::forward<F>(f), deadline_after(Duration::zero()));
  }

  void shutdown() { core_->shutdown(); }
  // Stops accepting, asks running tasks to stop, returns the tasks that never started,
  // earliest deadline first.
  std::vector<Task> shutdown_now() {
    std::vector<detail::TaskBase*> nodes = core_->shutdown_now();
    std::vector<Task> out;
    out.reserve(nodes.size());
    auto handler = core_->uncaught_handler();
    for (detail::TaskBase* n : nodes) out.emplace_back(n, handler);
    return out;
  }
  template <class Rep, class Period>
  bool await_termination(std::chrono::duration<Rep, Period> timeout) {
    return core_->await_termination(detail::to_ns_saturated(timeout));
  }
  bool is_shutdown() const noexcept { return core_->is_shutdown(); }
  bool is_terminating() const noexcept { return core_->is_terminating(); }
  bool is_terminated() const noexcept { return core_->is_terminated(); }

  void set_remove_on_cancel(bool v) { core_->set_remove_on_cancel(v); }
  void set_execute_existing_delayed_tasks_after_shutdown(bool v) {
    core_->set_execute_existing_delayed_tasks_after_shutdown(v);
  }
  void set_continue_existing_periodic_tasks_after_shutdown(bool v) {
    core_->set_continue_existing_periodic_tasks_after_shutdown(v);
  }

  // Pending tasks, those still in an inbox and cancelled-but-retained ones included. Racy while
  // producers run.
  std::size_t queue_size() const noexcept { return core_->queue_size(); }
  // True once no scheduler thread runs a task, every submission and cancel that returned before
  // the call has been applied, and no task has a deadline at or before the clock's now.
  // Times out in real time.
  template <class Rep, class Period>
  bool wait_idle(std::chrono::duration<Rep, Period> timeout) {
    return core_->wait_idle(detail::to_ns_saturated(timeout));
  }
  SchedulerStats stats() const { return core_->stats(); }
  time_point now() const noexcept { return time_point(std::chrono::duration_cast<typename time_point::duration>(Duration(core_->now_ns()))); }

 private:
  static ManualClock* manual(Clock& c) noexcept {
    if constexpr (std::is_same_v<Clock, ManualClock>) return &c;
    else { (void)c; return nullptr; }
  }
  const ManualClock* clock_ptr() const noexcept { return core_->manual_clock(); }

  template <class F>
  static void check_callable(const F& f) {
    if (detail::is_empty_callable(f)) throw std::invalid_argument("kairos: empty callable");
  }

  struct Deadline {
    std::int64_t ns;
    bool never;  // the delay reaches past the clock's range
  };
  template <class Rep, class Period>
  Deadline deadline_after(std::chrono::duration<Rep, Period> delay) const noexcept {
    std::int64_t d = detail::to_ns_saturated(delay);
    if (d < 0) d = 0;  // a negative delay means "as soon as possible" (Java normalises to 0)
    std::int64_t now = core_->now_ns();
    std::int64_t deadline;
    // Past the clock's range (or Duration::max()): never. Exactly at the end of a ManualClock's
    // time: due then.
    if (__builtin_add_overflow(now, d, &deadline) || d == detail::kMaxNs) return {detail::kMaxNs, true};
    return {deadline, false};
  }

  template <class F>
  auto submit_one(F&& f, Deadline deadline) {
    check_callable(f);
    auto* n = detail::make_node<false>(std::forward<F>(f), 0);
    using R = detail::call_result_t<std::decay_t<F>>;
    n->refs.store(2, std::memory_order_relaxed);  // the scheduler's and the future's; published
                                                  // by the inbox enqueue (release)
    ScheduledFuture<R> fut(n, core_.get(), clock_ptr());
    core_->submit(n, deadline.ns, deadline.never);
    return fut;
  }

  template <class F, class R1, class P1, class R2, class P2>
  ScheduledFuture<void> submit_periodic(F&& f, std::chrono::duration<R1, P1> initial_delay,
                                        std::chrono::duration<R2, P2> period, std::uint8_t flags,
                                        const char* what) {
    check_callable(f);
    std::int64_t p = detail::to_ns_saturated(period);
    if (p <= 0) throw std::invalid_argument(std::string("kairos: periodic task needs a ") + what + " > 0");
    Deadline deadline = deadline_after(initial_delay);
    auto* n = detail::make_node<true>(std::forward<F>(f), flags);
    n->period = p;
    n->refs.store(2, std::memory_order_relaxed);
    ScheduledFuture<void> fut(n, core_.get(), clock_ptr());
    core_->submit(n, deadline.ns, deadline.never);
    return fut;
  }

  std::shared_ptr<detail::SchedulerCore> core_;
};

using Scheduler = BasicScheduler<SteadyClock>;

}  // namespace kairos
