// kairos_poll_system.hpp: KairosPollSystem, kairos in poll mode (Options::poll_mode) behind the
// workload adapter (system.hpp): no scheduler thread; the workload's own thread is the loop.
//   The loop: every kPollEvery calls (schedule, execute, cancel) the adapter polls once, with one
//   clock read — an event loop that handles a few messages, then its timers. drain() and
//   run_inline() poll until idle (wait_idle on the loop's thread drives the loop).
// Inline systems run W2 and W6 only (tools/lat/native_runs.cpp): the workloads that measure what
// one thread's submit, cancel and fire cost; the others need a loop that waits.
#pragma once
#include <chrono>
#include <cstdint>
#include <utility>

#include <kairos/kairos.hpp>

#include "system.hpp"

namespace kairos::perf {

class KairosPollSystem {
 public:
  using Handle = kairos::ScheduledFuture<void>;
  static constexpr bool kAbsoluteDeadlines = true;
  static constexpr bool kInline = true;  // the workload's thread runs the tasks (run_inline)
  static constexpr unsigned kPollEvery = 64;

  explicit KairosPollSystem(const SystemConfig& c) : sched_(options(c)) {}

  template <class F>
  Handle schedule(F&& f, std::int64_t delay_ns) {
    tick();
    return sched_.schedule(std::forward<F>(f), std::chrono::nanoseconds(delay_ns));
  }
  template <class F>
  Handle submit(F&& f) {
    tick();
    return sched_.submit(std::forward<F>(f));
  }
  template <class F>
  Handle schedule_at(F&& f, std::int64_t deadline_ns) {
    tick();
    return sched_.schedule_at(std::forward<F>(f), kairos::SteadyClock::time_point(std::chrono::nanoseconds(deadline_ns)));
  }
  template <class F>
  Handle schedule_at_fixed_rate(F&& f, std::int64_t initial_delay_ns, std::int64_t period_ns) {
    tick();
    return sched_.schedule_at_fixed_rate(std::forward<F>(f), std::chrono::nanoseconds(initial_delay_ns),
                                         std::chrono::nanoseconds(period_ns));
  }
  template <class F>
  void execute(F&& f) {
    tick();
    sched_.execute(std::forward<F>(f));
  }
  // W1 --w1-post: a delayed task with no handle (execute_after).
  template <class F>
  void post(F&& f, std::int64_t delay_ns) {
    tick();
    sched_.execute_after(std::forward<F>(f), std::chrono::nanoseconds(delay_ns));
  }
  static bool cancel(Handle& h) { return h.cancel(); }  // counted by the next schedule's tick
  std::size_t queue_size() { return sched_.queue_size(); }
  bool drain(std::chrono::nanoseconds timeout) { return sched_.wait_idle(timeout); }
  // Runs everything due until nothing is (the loop's thread).
  bool run_inline(std::chrono::nanoseconds timeout) { return sched_.wait_idle(timeout); }

 private:
  void tick() {
    if (++calls_ % kPollEvery == 0) sched_.poll();
  }
  static kairos::Options options(const SystemConfig& c) {
    kairos::Options o;
    o.shards = 1;
    o.poll_mode = true;
    o.remove_on_cancel = c.remove_on_cancel;
    return o;
  }

  std::uint64_t calls_ = 0;
  kairos::Scheduler sched_;
};

}  // namespace kairos::perf
