// clock.hpp: the clocks a scheduler can run on.
//   SteadyClock  std::chrono::steady_clock (CLOCK_MONOTONIC); "never early" holds against it.
//   ManualClock  time that only tests move. It starts at time_point{}, is not copyable, saturates
//                at its largest time point; advance() wakes the leaders of every scheduler built
//                on it, and due tasks then run on their threads (never on the caller's).
// Threads: ManualClock::now() and advance() may be called from any thread.
#pragma once
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <vector>

#include <kairos/duration.hpp>

namespace kairos {

struct SteadyClock {
  using duration = std::chrono::steady_clock::duration;
  using rep = duration::rep;
  using period = duration::period;
  using time_point = std::chrono::steady_clock::time_point;
  static constexpr bool is_steady = true;
  static time_point now() noexcept { return std::chrono::steady_clock::now(); }
};

namespace detail {
// Something a ManualClock wakes when time moves (a scheduler's core).
class ClockListener {
 public:
  virtual void on_clock_advanced() noexcept = 0;
 protected:
  ~ClockListener() = default;
};
}  // namespace detail

class ManualClock {
 public:
  using duration = Duration;
  using rep = duration::rep;
  using period = duration::period;
  using time_point = std::chrono::time_point<ManualClock, Duration>;
  static constexpr bool is_steady = true;

  ManualClock() = default;
  ManualClock(const ManualClock&) = delete;
  ManualClock& operator=(const ManualClock&) = delete;

  time_point now() const noexcept { return time_point(Duration(now_ns())); }
  std::int64_t now_ns() const noexcept { return now_.load(std::memory_order_acquire); }

  // Moves time forward by d (saturating) and wakes every scheduler on this clock.
  template <class Rep, class Period>
  void advance(std::chrono::duration<Rep, Period> d) {
    std::int64_t ns = detail::to_ns_saturated(d);
    if (ns < 0) throw std::invalid_argument("kairos: ManualClock::advance needs a duration >= 0");
    std::lock_guard lock(mu_);  // serialises advances and the listener list
    // release: a leader that reads the new time (acquire) also sees what the caller did before.
    now_.store(detail::add_saturated(now_.load(std::memory_order_relaxed), ns),
               std::memory_order_release);
    for (detail::ClockListener* l : listeners_) l->on_clock_advanced();
  }

  // Scheduler side: register for wake-ups (the scheduler unregisters before it is destroyed).
  void add_listener(detail::ClockListener* l) {
    std::lock_guard lock(mu_);
    listeners_.push_back(l);
  }
  void remove_listener(detail::ClockListener* l) {
    std::lock_guard lock(mu_);
    std::erase(listeners_, l);
  }

 private:
  std::atomic<std::int64_t> now_{0};
  std::mutex mu_;
  std::vector<detail::ClockListener*> listeners_;
};

}  // namespace kairos
