// wait.hpp: how a shard's leader waits for its next deadline.
//   sleep()          blocks in the kernel (futex with an absolute CLOCK_MONOTONIC deadline, timer
//                    slack 1 ns); costs no CPU, lateness is the kernel's wake-up latency.
//   spin()           polls the clock and the inbox; lowest lateness, burns its core.
//   hybrid(window)   sleeps until deadline - window, then spins; the usual choice.
//   adaptive()       hybrid with a window it measures: each leader records how late its timed
//   adaptive(floor, ceiling, percentile)
//                    sleeps wake (wake - the time it slept for) and spins for the `percentile`
//                    of that overshoot, kept within [floor, ceiling] and decaying as the
//                    overshoot shrinks (docs/adaptive-wait.md). ShardStats::spin_window_ns shows it.
//   fitted()         the default (Options::wait): adaptive with hybrid's usual 50 us window as its
//                    floor and a 200 us ceiling. Where the kernel wakes a timed sleep within 50 us
//                    it is hybrid(50us), the same spin and the same lateness; where it overshoots
//                    more (a host whose wake-ups run 60-100 us late), the window follows the
//                    measured p99 overshoot instead of leaving every timer that late.
#pragma once
#include <chrono>
#include <cstdint>
#include <stdexcept>

#include <kairos/duration.hpp>

namespace kairos {

class WaitPolicy {
 public:
  enum class Mode : std::uint8_t { sleep, spin, hybrid, adaptive };

  // adaptive()'s defaults: a window of at least 1 us, at most 200 us, at the 99th percentile.
  static constexpr Duration kAdaptiveFloor{1'000};
  static constexpr Duration kAdaptiveCeiling{200'000};
  static constexpr double kAdaptivePercentile = 0.99;

  static WaitPolicy sleep() noexcept { return WaitPolicy(Mode::sleep, Duration::zero()); }
  static WaitPolicy spin() noexcept { return WaitPolicy(Mode::spin, Duration::zero()); }
  template <class Rep, class Period>
  static WaitPolicy hybrid(std::chrono::duration<Rep, Period> spin_window) {
    std::int64_t ns = detail::to_ns_saturated(spin_window);
    if (ns < 0) throw std::invalid_argument("kairos: WaitPolicy::hybrid spin window must be >= 0");
    return WaitPolicy(Mode::hybrid, Duration(ns));
  }
  // fitted()'s floor: the window hybrid() was the default with.
  static constexpr Duration kFittedFloor{50'000};
  static WaitPolicy fitted() noexcept {
    WaitPolicy p(Mode::adaptive, kFittedFloor);
    p.ceiling_ = kAdaptiveCeiling;
    p.percentile_ = kAdaptivePercentile;
    return p;
  }
  static WaitPolicy adaptive() noexcept {
    WaitPolicy p(Mode::adaptive, kAdaptiveFloor);
    p.ceiling_ = kAdaptiveCeiling;
    p.percentile_ = kAdaptivePercentile;
    return p;
  }
  // std::invalid_argument unless 0 <= floor <= ceiling and 0 < percentile < 1.
  template <class Rep1, class Period1, class Rep2, class Period2>
  static WaitPolicy adaptive(std::chrono::duration<Rep1, Period1> floor,
                             std::chrono::duration<Rep2, Period2> ceiling,
                             double percentile = kAdaptivePercentile) {
    std::int64_t lo = detail::to_ns_saturated(floor);
    std::int64_t hi = detail::to_ns_saturated(ceiling);
    if (lo < 0) throw std::invalid_argument("kairos: WaitPolicy::adaptive floor must be >= 0");
    if (hi < lo) throw std::invalid_argument("kairos: WaitPolicy::adaptive ceiling must be >= its floor");
    if (!(percentile > 0.0 && percentile < 1.0))  // also rejects NaN
      throw std::invalid_argument("kairos: WaitPolicy::adaptive percentile must be in (0, 1)");
    WaitPolicy p(Mode::adaptive, Duration(lo));
    p.ceiling_ = Duration(hi);
    p.percentile_ = percentile;
    return p;
  }

  Mode mode() const noexcept { return mode_; }
  // hybrid: its window. adaptive: the floor (the window before the first measurement).
  Duration spin_window() const noexcept { return window_; }
  // adaptive only (zero otherwise): the window's bounds and the overshoot percentile it follows.
  Duration spin_floor() const noexcept { return mode_ == Mode::adaptive ? window_ : Duration::zero(); }
  Duration spin_ceiling() const noexcept { return ceiling_; }
  double percentile() const noexcept { return percentile_; }
  const char* name() const noexcept {
    switch (mode_) {
      case Mode::sleep: return "sleep";
      case Mode::spin: return "spin";
      case Mode::hybrid: return "hybrid";
      case Mode::adaptive: return "adaptive";
    }
    return "?";
  }

 private:
  WaitPolicy(Mode m, Duration w) noexcept : mode_(m), window_(w) {}
  Mode mode_;
  Duration window_;
  Duration ceiling_{0};
  double percentile_ = 0.0;
};

}  // namespace kairos
