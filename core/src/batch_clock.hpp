// batch_clock.hpp: the start times behind the lateness histogram, at one clock read per batch.
//
// A runner starts the tasks of its batch back to back. The first task's start is a clock read.
// The second's is a clock read too, paired with the CPU's time-stamp counter (TSC); each later
// task's start is that pair's time plus the ticks counted since, at a rate calibrated per thread
// against the clock. A read of the counter costs about a third of a clock read (10 against 24 ns
// on the development VM), and the rate's error over a batch (microseconds to a millisecond) is
// far below a nanosecond once calibrated over 20 ms or more.
//
// Only the statistics use these times: when a task may run is decided by the clock alone, so
// "never early" does not depend on the counter. The counter is used only where the kernel itself
// keeps CLOCK_MONOTONIC with it (clocksource "tsc": constant and synchronised across CPUs, which
// the kernel checks), on x86-64, with the steady clock (not a ManualClock), and once this thread
// has a rate; otherwise every start is a clock read, as before.
//
// Threads: a BatchClock belongs to one runner for one batch; the calibration is thread_local.
#pragma once
#include <cstdint>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace kairos::detail {

bool tsc_is_clocksource() noexcept;  // threads.cpp: read once per process

class BatchClock {
 public:
  static constexpr std::int64_t kMinCalibrationNs = 20'000'000;

  // ticks_allowed: the engine's clock is the steady clock.
  explicit BatchClock(bool ticks_allowed) noexcept : ticks_(ticks_allowed && kHaveTicks && tsc_is_clocksource()) {}

  // The start time of the batch's next task; read_clock() reads the engine's clock.
  template <class ReadClock>
  std::int64_t next_start(ReadClock&& read_clock) noexcept {
    ++started_;
    if (!ticks_ || started_ == 1) return read_clock();
    if (started_ == 2) {
      base_ns_ = read_clock();
      base_tick_ = ticks();
      calibrate(base_ns_, base_tick_);
      return base_ns_;
    }
    if (t_ns_per_tick == 0) return read_clock();
    std::int64_t since = static_cast<std::int64_t>(static_cast<double>(ticks() - base_tick_) * t_ns_per_tick);
    return base_ns_ + (since > 0 ? since : 0);  // a counter a few ticks behind after a migration
  }

 private:
#if defined(__x86_64__)
  static constexpr bool kHaveTicks = true;
  static std::uint64_t ticks() noexcept { return __rdtsc(); }
#else
  static constexpr bool kHaveTicks = false;
  static std::uint64_t ticks() noexcept { return 0; }
#endif

  // The rate from this thread's first (clock, ticks) pair to the newest, refreshed whenever the
  // span has doubled: its error (a few ns of skew between the two reads of a pair, over the
  // span) keeps shrinking.
  static void calibrate(std::int64_t ns, std::uint64_t tick) noexcept {
    if (t_anchor_ns == 0) {
      t_anchor_ns = ns;
      t_anchor_tick = tick;
      return;
    }
    std::int64_t span = ns - t_anchor_ns;
    if (span < kMinCalibrationNs || span < 2 * t_span_ns || tick <= t_anchor_tick) return;
    t_ns_per_tick = static_cast<double>(span) / static_cast<double>(tick - t_anchor_tick);
    t_span_ns = span;
  }

  static inline thread_local std::int64_t t_anchor_ns = 0;
  static inline thread_local std::uint64_t t_anchor_tick = 0;
  static inline thread_local std::int64_t t_span_ns = 0;
  static inline thread_local double t_ns_per_tick = 0;  // 0: not calibrated yet

  const bool ticks_;
  int started_ = 0;
  std::int64_t base_ns_ = 0;
  std::uint64_t base_tick_ = 0;
};

}  // namespace kairos::detail
