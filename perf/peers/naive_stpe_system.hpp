// naive_stpe_system.hpp: NaiveStpeSystem, the NaiveStpe peer behind the workload adapter
// (perf/workloads/system.hpp). Config: threads workers, cpus, remove_on_cancel.
#pragma once
#include <chrono>
#include <cstdint>
#include <utility>

#include "../workloads/system.hpp"
#include "naive_stpe.hpp"

namespace kairos::perf {

class NaiveStpeSystem {
 public:
  using Handle = NaiveStpe::Future;
  static constexpr bool kAbsoluteDeadlines = true;

  explicit NaiveStpeSystem(const SystemConfig& c)
      : stpe_(NaiveStpe::Options{.threads = c.threads, .remove_on_cancel = c.remove_on_cancel, .cpus = c.cpus}) {}

  template <class F>
  Handle schedule(F&& f, std::int64_t delay_ns) {
    return stpe_.schedule(std::forward<F>(f), std::chrono::nanoseconds(delay_ns));
  }
  template <class F>
  Handle schedule_at(F&& f, std::int64_t deadline_ns) {
    return stpe_.schedule_at(std::forward<F>(f),
                             std::chrono::steady_clock::time_point(std::chrono::nanoseconds(deadline_ns)));
  }
  template <class F>
  Handle schedule_at_fixed_rate(F&& f, std::int64_t initial_delay_ns, std::int64_t period_ns) {
    return stpe_.schedule_at_fixed_rate(std::forward<F>(f), std::chrono::nanoseconds(initial_delay_ns),
                                        std::chrono::nanoseconds(period_ns));
  }
  template <class F>
  void execute(F&& f) {
    stpe_.execute(std::forward<F>(f));
  }
  static bool cancel(Handle& h) { return h.cancel(); }
  std::size_t queue_size() { return stpe_.queue_size(); }
  bool drain(std::chrono::nanoseconds) { return true; }  // every call is applied before it returns

 private:
  NaiveStpe stpe_;
};

}  // namespace kairos::perf
