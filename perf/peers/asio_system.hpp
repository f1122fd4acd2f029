// asio_system.hpp: AsioSystem, the AsioPeer behind the workload adapter
// (perf/workloads/system.hpp). One io_context thread, pinned to cpus[0] if any; timers are always
// removed on cancel.
#pragma once
#include <chrono>
#include <cstdint>
#include <utility>

#include "../workloads/system.hpp"
#include "asio_peer.hpp"

namespace kairos::perf {

class AsioSystem {
 public:
  using Handle = AsioPeer::Handle;
  static constexpr bool kAbsoluteDeadlines = true;  // steady_timer::expires_at

  explicit AsioSystem(const SystemConfig& c)
      : peer_(AsioPeer::Options{.cpu = c.cpus.empty() ? -1 : c.cpus.front()}) {}

  template <class F>
  Handle schedule(F&& f, std::int64_t delay_ns) {
    return peer_.schedule(std::forward<F>(f), std::chrono::nanoseconds(delay_ns));
  }
  template <class F>
  Handle schedule_at(F&& f, std::int64_t deadline_ns) {
    return peer_.schedule_at(std::forward<F>(f),
                             std::chrono::steady_clock::time_point(std::chrono::nanoseconds(deadline_ns)));
  }
  template <class F>
  Handle schedule_at_fixed_rate(F&& f, std::int64_t initial_delay_ns, std::int64_t period_ns) {
    return peer_.schedule_at_fixed_rate(std::forward<F>(f), std::chrono::nanoseconds(initial_delay_ns),
                                        std::chrono::nanoseconds(period_ns));
  }
  template <class F>
  void execute(F&& f) {
    peer_.execute(std::forward<F>(f));
  }
  static bool cancel(Handle& h) { return h.cancel(); }
  std::size_t queue_size() { return peer_.pending(); }
  bool drain(std::chrono::nanoseconds timeout) { return peer_.drain(timeout); }

 private:
  AsioPeer peer_;
};

}  // namespace kairos::perf
