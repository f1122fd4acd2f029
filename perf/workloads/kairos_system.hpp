// kairos_system.hpp: KairosSystem, kairos::Scheduler behind the workload adapter (system.hpp).
// Config: wait sleep | spin | hybrid(spin_window_ns), shards, threads per shard, cpus; every other
//         option is kairos's default (remove_on_cancel as the workload asks).
#pragma once
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <utility>

#include <kairos/kairos.hpp>

#include "system.hpp"

namespace kairos::perf {

class KairosSystem {
 public:
  using Handle = kairos::ScheduledFuture<void>;
  static constexpr bool kAbsoluteDeadlines = true;

  explicit KairosSystem(const SystemConfig& c) : sched_(options(c)) {}

  template <class F>
  Handle schedule(F&& f, std::int64_t delay_ns) {
    return sched_.schedule(std::forward<F>(f), std::chrono::nanoseconds(delay_ns));
  }
  template <class F>
  Handle schedule_at(F&& f, std::int64_t deadline_ns) {
    return sched_.schedule_at(std::forward<F>(f),
                              kairos::SteadyClock::time_point(std::chrono::nanoseconds(deadline_ns)));
  }
  template <class F>
  Handle schedule_at_fixed_rate(F&& f, std::int64_t initial_delay_ns, std::int64_t period_ns) {
    return sched_.schedule_at_fixed_rate(std::forward<F>(f), std::chrono::nanoseconds(initial_delay_ns),
                                         std::chrono::nanoseconds(period_ns));
  }
  template <class F>
  void execute(F&& f) {
    sched_.execute(std::forward<F>(f));
  }
  static bool cancel(Handle& h) { return h.cancel(); }
  std::size_t queue_size() { return sched_.queue_size(); }
  bool drain(std::chrono::nanoseconds timeout) { return sched_.wait_idle(timeout); }

  kairos::Scheduler& scheduler() noexcept { return sched_; }

 private:
  static kairos::Options options(const SystemConfig& c) {
    kairos::Options o;
    o.shards = c.shards;
    o.threads_per_shard = c.threads;
    o.cpus = c.cpus;
    o.remove_on_cancel = c.remove_on_cancel;
    if (c.wait == "sleep") o.wait = kairos::WaitPolicy::sleep();
    else if (c.wait == "spin") o.wait = kairos::WaitPolicy::spin();
    else if (c.wait == "hybrid") o.wait = kairos::WaitPolicy::hybrid(std::chrono::nanoseconds(c.spin_window_ns));
    else throw std::invalid_argument("kairos-lat: unknown wait mode '" + c.wait + "'");
    o.name = "lat";
    return o;
  }

  kairos::Scheduler sched_;
};

}  // namespace kairos::perf
