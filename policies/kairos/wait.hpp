// wait.hpp: how a shard's leader waits for its next deadline.
//   sleep()          blocks in the kernel (futex with an absolute CLOCK_MONOTONIC deadline, timer
//                    slack 1 ns); costs no CPU, lateness is the kernel's wake-up latency.
//   spin()           polls the clock and the inbox; lowest lateness, burns its core.
//   hybrid(window)   sleeps until deadline - window, then spins; the usual choice.
#pragma once
#include <chrono>
#include <cstdint>
#include <stdexcept>

#include <kairos/duration.hpp>

namespace kairos {

class WaitPolicy {
 public:
  enum class Mode : std::uint8_t { sleep, spin, hybrid };

  static WaitPolicy sleep() noexcept { return WaitPolicy(Mode::sleep, Duration::zero()); }
  static WaitPolicy spin() noexcept { return WaitPolicy(Mode::spin, Duration::zero()); }
  template <class Rep, class Period>
  static WaitPolicy hybrid(std::chrono::duration<Rep, Period> spin_window) {
    std::int64_t ns = detail::to_ns_saturated(spin_window);
    if (ns < 0) throw std::invalid_argument("kairos: WaitPolicy::hybrid spin window must be >= 0");
    return WaitPolicy(Mode::hybrid, Duration(ns));
  }

  Mode mode() const noexcept { return mode_; }
  Duration spin_window() const noexcept { return window_; }
  const char* name() const noexcept {
    return mode_ == Mode::sleep ? "sleep" : mode_ == Mode::spin ? "spin" : "hybrid";
  }

 private:
  WaitPolicy(Mode m, Duration w) noexcept : mode_(m), window_(w) {}
  Mode mode_;
  Duration window_;
};

}  // namespace kairos
