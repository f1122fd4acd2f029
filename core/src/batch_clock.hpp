// batch_clock.hpp: the start times behind the lateness histogram, at one clock read per batch.
//
// A runner starts the tasks of its batch back to back. The first task's start is a clock read.
// The second's is a clock read too, paired with the CPU's time-stamp counter (TSC); each later
// task's start is that pair's time plus the ticks counted since, at a rate calibrated against
// the clock. A read of the counter costs about a third of a clock read (10 against 24 ns on the
// development VM), and the rate's error over a batch (microseconds to a millisecond) is far below
// a nanosecond once calibrated over 20 ms or more. The runner keeps each start as a stamp (the
// counter's raw ticks, or the clock read) and converts the stamps when it files the batch: a
// read, with no conversion, between one task and the next (what that saves: PERF.md's ninth
// round).
//
// The rate is the process's, not a thread's: it is measured from one anchor, a (clock, counter)
// pair taken when the first shard is built (anchor(), Shard's constructor), to the newest pair
// any runner made, and refreshed whenever that span has doubled. So a runner's first burst (W7:
// 100,000 tasks due at once, 20 ms after the scheduler was built, run in a few milliseconds) is
// timed by the counter from its second task, not by a clock read per task as a thread that had
// to calibrate alone would be.
//
// Only the statistics use these times: when a task may run is decided by the clock alone, so
// "never early" does not depend on the counter. The counter is used only where the kernel itself
// keeps CLOCK_MONOTONIC with it (clocksource "tsc": constant and synchronised across CPUs, which
// the kernel checks), on x86-64, with the steady clock (not a ManualClock), and once the process
// has a rate; otherwise every start is a clock read, as before.
//
// Threads: a BatchClock belongs to one runner for one batch. The anchor is set once (a static's
// thread-safe initialisation). The rate and its span are atomics any runner may store:
//   (BC1) relaxed stores of the rate and its span -> (BC2) relaxed loads. A statistic: any rate
//         once stored is a measured one, and nothing else travels with it; a span read beside
//         another runner's rate only moves the next refresh.
#pragma once
#include <atomic>
#include <cstdint>

#include <kairos/detail/steady_clock.hpp>  // steady_now_ns

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

  // Takes the process's anchor if nobody has yet (the first shard's constructor calls it, so the
  // rate is ready 20 ms after the first scheduler was built).
  static void anchor() noexcept {
    if (kHaveTicks && tsc_is_clocksource()) (void)process_anchor();
  }

  // The start of the batch's next task as a stamp, the cheapest read that fixes it: a clock read
  // for the first two tasks (and for every task without a rate), the counter's raw ticks after
  // them. start_ns() turns the k-th stamp (from 0) into the clock's nanoseconds, off the path
  // between one start and the next: the runner stamps each start and converts when it files the
  // batch. read_clock() reads the engine's clock.
  template <class ReadClock>
  std::int64_t next_stamp(ReadClock&& read_clock) noexcept {
    if (counting_) [[likely]]
      return static_cast<std::int64_t>(ticks());  // the third start on, once the rate is known
    ++started_;
    if (!ticks_ || started_ == 1) return read_clock();
    if (started_ > 2) return read_clock();  // no rate yet (the process's first 20 ms)
    base_ns_ = read_clock();
    base_tick_ = ticks();
    calibrate(base_ns_, base_tick_);
    ns_per_tick_ = g_ns_per_tick.load(std::memory_order_relaxed);  // (BC2)
    counting_ = ns_per_tick_ != 0;
    return base_ns_;
  }

  // The k-th stamp's time (k from 0): the stamp itself if it was a clock read; otherwise the
  // second start's pair plus the ticks counted since, at the process's rate.
  std::int64_t start_ns(std::size_t k, std::int64_t stamp) const noexcept {
    if (k < 2 || !counting_) return stamp;  // a clock read (counting_ is set by the second stamp)
    const auto ticks_since = static_cast<std::int64_t>(static_cast<std::uint64_t>(stamp) - base_tick_);
    if (ticks_since <= 0) return base_ns_;  // a counter a few ticks behind after a migration
    return base_ns_ + static_cast<std::int64_t>(static_cast<double>(ticks_since) * ns_per_tick_);
  }

 private:
#if defined(__x86_64__)
  static constexpr bool kHaveTicks = true;
  static std::uint64_t ticks() noexcept { return __rdtsc(); }
#else
  static constexpr bool kHaveTicks = false;
  static std::uint64_t ticks() noexcept { return 0; }
#endif

  struct Anchor {
    std::int64_t ns;
    std::uint64_t tick;
  };
  static const Anchor& process_anchor() noexcept {
    static const Anchor a{steady_now_ns(), ticks()};
    return a;
  }

  // The rate from the process's anchor to this pair, if the span has at least doubled since the
  // rate was last measured: its error (a few ns of skew between the two reads of a pair, over
  // the span) keeps shrinking.
  static void calibrate(std::int64_t ns, std::uint64_t tick) noexcept {
    const Anchor& a = process_anchor();
    std::int64_t span = ns - a.ns;
    if (span < kMinCalibrationNs || span < 2 * g_span_ns.load(std::memory_order_relaxed) || tick <= a.tick) return;  // (BC2)
    g_ns_per_tick.store(static_cast<double>(span) / static_cast<double>(tick - a.tick), std::memory_order_relaxed);  // (BC1)
    g_span_ns.store(span, std::memory_order_relaxed);  // (BC1)
  }

  static inline std::atomic<std::int64_t> g_span_ns{0};
  static inline std::atomic<double> g_ns_per_tick{0};  // 0: not calibrated yet

  const bool ticks_;
  bool counting_ = false;  // the second stamp found a rate: every later stamp is the counter's
  int started_ = 0;  // until counting_
  std::int64_t base_ns_ = 0;
  std::uint64_t base_tick_ = 0;
  double ns_per_tick_ = 0;
};

}  // namespace kairos::detail
