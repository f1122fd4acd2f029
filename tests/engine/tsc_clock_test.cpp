// The submission clock (core/src/tsc_clock.hpp): an upper bound of CLOCK_MONOTONIC at the call,
// late by at most kLateBoundNs, monotone across calls ordered by happens-before; on a fake
// counter whose clock the test slews at will, and on this machine's counter where it may be used.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <random>
#include <thread>
#include <vector>

#include <kairos/detail/steady_clock.hpp>  // steady_now_ns, submit_now_ns
#include <kairos/duration.hpp>

#include "tsc_clock.hpp"

namespace kairos::detail {
namespace {

// CLOCK_MONOTONIC as a piecewise-linear function of a fake counter, as the kernel keeps it:
// f(t) = floor(base_ns + (t - base_tick) * rate). Every read moves the counter by `step` ticks
// (time passes while the code runs); mono() reads f at its own counter value. One thread.
struct FakeTime {
  std::uint64_t tick = 1'000'000;
  std::uint64_t step = 30;   // ticks per counter read (10 ns at 3 ticks per ns)
  std::uint64_t mono_extra = 60;  // the vDSO's read takes a little longer
  long double base_ns = 5e9L;
  std::uint64_t base_tick = 1'000'000;
  long double rate = 1.0L / 3.0L;  // ns per tick: a 3 GHz counter
  bool eligible = true;

  std::int64_t f(std::uint64_t t) const {
    return static_cast<std::int64_t>(std::floor(base_ns + static_cast<long double>(t - base_tick) * rate));
  }
  void set_rate(long double r) {  // continuous at the current counter value, like adjtimex
    base_ns = base_ns + static_cast<long double>(tick - base_tick) * rate;
    base_tick = tick;
    rate = r;
  }
  void pass_ns(std::int64_t ns) { tick += static_cast<std::uint64_t>(static_cast<long double>(ns) / rate); }
};

struct FakeTicks {
  FakeTime* time = nullptr;
  std::uint64_t ticks() noexcept { return time->tick += time->step; }
  std::int64_t mono() noexcept {
    time->tick += time->mono_extra / 2;
    std::int64_t v = time->f(time->tick);
    time->tick += time->mono_extra / 2;
    return v;
  }
  bool eligible() noexcept { return time->eligible; }
};

using FakeClock = TscClock<FakeTicks>;
constexpr std::int64_t kBound = FakeClock::kLateBoundNs;

// Calls now() until a record is published (50 ms of baseline on the fake clock).
template <class Clock>  // a TscClock over a fake source
void calibrate(Clock& c, FakeTime& time) {
  for (int i = 0; i < 1000 && !c.calibrated(); ++i) {
    c.now();
    time.pass_ns(200'000);
  }
  ASSERT_TRUE(c.calibrated());
}

struct Checker {
  std::int64_t last = INT64_MIN;
  long early = 0, too_late = 0, backwards = 0, calls = 0;
  std::int64_t worst_late = 0;
  // A call between the true clock values `before` and `after` returned v.
  void check(std::int64_t before, std::int64_t v, std::int64_t after) {
    ++calls;
    early += v < before;
    too_late += v > after + kBound;
    worst_late = std::max(worst_late, v - after);
    backwards += v < last;
    last = v;
  }
};

TEST(TscClock, NotEligibleIsThePlainClock) {
  FakeTime time;
  time.eligible = false;
  FakeClock c(FakeTicks{&time});
  for (int i = 0; i < 100; ++i) {
    std::uint64_t before = time.tick;
    std::int64_t v = c.now();
    EXPECT_GE(v, time.f(before));
    EXPECT_LE(v, time.f(time.tick));
  }
  EXPECT_EQ(c.mode(), FakeClock::kClock);
  EXPECT_FALSE(c.calibrated());
}

// Delays from 0 to hours, steps from nothing to seconds (inside windows, past them, across
// refreshes of the anchor and of the rate): deadline = now() + delay is never before the true
// clock at the call + delay, and at most kBound after the true clock right after the call.
TEST(TscClock, PropertyManyDelaysNeverEarlyAndWithinTheBound) {
  FakeTime time;
  FakeClock c(FakeTicks{&time});
  calibrate(c, time);
  std::mt19937_64 rng(18);
  Checker k;
  for (int i = 0; i < 400'000; ++i) {
    switch (rng() % 8) {
      case 0: time.pass_ns(static_cast<std::int64_t>(rng() % 40'000)); break;     // within W or just past
      case 1: time.pass_ns(static_cast<std::int64_t>(rng() % 2'000'000)); break;  // past W
      case 2: if (rng() % 1000 == 0) time.pass_ns(static_cast<std::int64_t>(rng() % 3'000'000'000)); break;
      default: break;  // back to back
    }
    const std::int64_t delay = static_cast<std::int64_t>(rng() % 5 == 0 ? rng() % 10'000'000'000'000 : rng() % 100'000);
    const std::int64_t before = time.f(time.tick);
    const std::int64_t now = c.now();
    const std::int64_t after = time.f(time.tick);
    const std::int64_t deadline = add_saturated(now, delay);
    ASSERT_GE(deadline, before + delay) << "call " << i;
    k.check(before, now, after);
  }
  EXPECT_EQ(k.early, 0);
  EXPECT_EQ(k.too_late, 0) << "worst " << k.worst_late << " ns past the clock after the call";
  EXPECT_EQ(k.backwards, 0);
  EXPECT_EQ(c.mode(), FakeClock::kTsc);
  EXPECT_TRUE(c.calibrated());
}

// CLOCK_MONOTONIC's rate moves against the counter by up to +-1000 ppm (NTP's frequency across
// its whole range) at random moments, also in the middle of a record's window: never early.
TEST(TscClock, SlewWithinTheMarginIsNeverEarly) {
  FakeTime time;
  FakeClock c(FakeTicks{&time});
  calibrate(c, time);
  const long double nominal = time.rate;
  std::mt19937_64 rng(500);
  Checker k;
  for (int i = 0; i < 300'000; ++i) {
    if (rng() % 5000 == 0) {
      const long double ppm = static_cast<long double>(static_cast<int>(rng() % 2001) - 1000);
      time.set_rate(nominal * (1.0L + ppm * 1e-6L));
    }
    time.pass_ns(static_cast<std::int64_t>(rng() % 3'000));
    const std::int64_t before = time.f(time.tick);
    const std::int64_t v = c.now();
    k.check(before, v, time.f(time.tick));
  }
  EXPECT_EQ(k.early, 0);
  EXPECT_EQ(k.too_late, 0) << "worst " << k.worst_late;
  EXPECT_EQ(k.backwards, 0);
  EXPECT_EQ(c.mode(), FakeClock::kTsc);
}

// A rate change far past the margin (+2 %: adjtimex ADJ_TICK, a PLL slew of a large offset) is
// caught at the next refresh: from then on the clock is read, values stay monotone, and the
// only early values are those of the one record the change happened under (at most its window
// times the excess rate).
TEST(TscClock, ARunawayRateSwitchesToClockReads) {
  FakeTime time;
  FakeClock c(FakeTicks{&time});
  calibrate(c, time);
  for (int i = 0; i < 100; ++i) {
    time.pass_ns(1'000);
    c.now();
  }
  time.set_rate(time.rate * 1.02L);
  Checker k;
  std::int64_t worst_early = 0;
  for (int i = 0; i < 100'000 && c.mode() == FakeClock::kTsc; ++i) {
    time.pass_ns(500);
    const std::int64_t before = time.f(time.tick);
    const std::int64_t v = c.now();
    worst_early = std::max(worst_early, before - v);
    k.check(before, v, time.f(time.tick));
  }
  EXPECT_EQ(c.mode(), FakeClock::kClock);
  EXPECT_EQ(k.backwards, 0);
  EXPECT_LE(worst_early, FakeClock::kWindowNs / 50 + 10) << "at most one window at 2 % too slow";
  Checker after;
  after.last = k.last;
  for (int i = 0; i < 10'000; ++i) {
    time.pass_ns(500);
    const std::int64_t before = time.f(time.tick);
    after.check(before, c.now(), time.f(time.tick));
  }
  EXPECT_EQ(after.early, 0);
  EXPECT_EQ(after.backwards, 0);
}

// The counter jumping back behind an anchor whose clock read is older than a window (a reset
// counter): not one counter any more; clock reads from then on, monotone.
TEST(TscClock, ACounterThatJumpsBackSwitchesToClockReads) {
  FakeTime time;
  FakeClock c(FakeTicks{&time});
  calibrate(c, time);
  time.pass_ns(1'000);
  std::int64_t last = c.now();
  // The counter restarts low; CLOCK_MONOTONIC goes on from where it was.
  const std::int64_t mono = time.f(time.tick) + 100'000;
  time.tick = 10;
  time.base_tick = 10;
  time.base_ns = static_cast<long double>(mono);
  Checker k;
  k.last = last;
  for (int i = 0; i < 1000; ++i) {
    time.pass_ns(1'000);
    const std::int64_t before = time.f(time.tick);
    k.check(before, c.now(), time.f(time.tick));
  }
  EXPECT_EQ(k.early, 0);
  EXPECT_EQ(k.backwards, 0);
  EXPECT_EQ(c.mode(), FakeClock::kClock);
}

// Anchors whose two counter reads are far apart (a preemption around clock_gettime) are not
// used: nothing is published from them; with no rate after kGiveUpNs, clock reads for good.
TEST(TscClock, LooseAnchorsAreNotUsed) {
  FakeTime time;
  time.mono_extra = 3'000;  // 1 us between the counter reads around every clock read
  FakeClock c(FakeTicks{&time});
  for (int i = 0; i < 1000; ++i) {
    time.pass_ns(200'000);
    const std::int64_t before = time.f(time.tick);
    const std::int64_t v = c.now();
    EXPECT_GE(v, before);
  }
  EXPECT_FALSE(c.calibrated());
  EXPECT_EQ(c.mode(), FakeClock::kTsc) << "still trying after 0.2 s";
  for (int i = 0; i < 1000; ++i) {
    time.pass_ns(3'000'000);
    const std::int64_t before = time.f(time.tick);
    EXPECT_GE(c.now(), before);
  }
  EXPECT_FALSE(c.calibrated());
  EXPECT_EQ(c.mode(), FakeClock::kClock) << "gave up after kGiveUpNs";
}

// A record is refreshed only for misses that come often: calls far apart read the clock and
// write nothing; two close ones refresh it, and the next calls are answered from the record.
// A fresh process submits at full speed while the rate is still measured (50 ms): those calls
// read the clock, and only one per kCalibrationStepNs takes the writer's lock for an anchor.
TEST(TscClock, WhileCalibratingOneAnchorPerStep) {
  FakeTime time;
  FakeClock c(FakeTicks{&time});
  c.now();  // the first anchor
  const std::uint64_t w = c.writes();
  Checker ck;
  for (int i = 0; i < 1000; ++i) {  // 1,000 calls within far less than one step
    const std::int64_t before = time.f(time.tick);
    const std::int64_t v = c.now();
    ck.check(before, v, time.f(time.tick));
  }
  EXPECT_EQ(c.writes(), w) << "calls within one step take no anchor";
  EXPECT_EQ(ck.early, 0);
  EXPECT_EQ(ck.backwards, 0);
  time.pass_ns(FakeClock::kCalibrationStepNs);
  c.now();
  EXPECT_EQ(c.writes(), w + 1) << "the next step's first call takes one";
  EXPECT_FALSE(c.calibrated());
  calibrate(c, time);  // and the rate still comes after its baseline
}

TEST(TscClock, OnlyAThreadCallingOftenRefreshesTheRecord) {
  FakeTime time;
  FakeClock c(FakeTicks{&time});
  calibrate(c, time);
  const std::uint64_t w = c.writes();
  for (int i = 0; i < 100; ++i) {
    time.pass_ns(FakeClock::kDenseNs + 1'000);
    const std::int64_t before = time.f(time.tick);
    EXPECT_GE(c.now(), before);
  }
  EXPECT_EQ(c.writes(), w) << "calls further apart than kDenseNs do not write";
  time.pass_ns(FakeClock::kWindowNs);
  c.now();  // sparse: the clock; the next call is close, so back to the counter path
  c.now();
  EXPECT_EQ(c.writes(), w) << "the close call itself answers from the clock";
  c.now();
  EXPECT_EQ(c.writes(), w + 1) << "its first miss on the counter path refreshes";
  const std::uint64_t refreshed = c.writes();
  for (int i = 0; i < 100; ++i) c.now();
  EXPECT_EQ(c.writes(), refreshed) << "then the record answers";
}

// Counts the reads of a FakeTicks.
struct CountingTicks : FakeTicks {
  long* counter_reads = nullptr;
  long* clock_reads = nullptr;
  std::uint64_t ticks() noexcept {
    ++*counter_reads;
    return FakeTicks::ticks();
  }
  std::int64_t mono() noexcept {
    ++*clock_reads;
    return FakeTicks::mono();
  }
};

// A timer every 50 us (W3's pace): one clock read per call, no counter read, no write, and the
// answer is that clock read (the deadline carries nothing but it). Before, each call read the
// counter twice and the clock once, and refreshed a record its next call could not use.
TEST(TscClock, SparseCallsAreOneClockRead) {
  FakeTime time;
  long counter_reads = 0, clock_reads = 0;
  TscClock<CountingTicks> c(CountingTicks{{&time}, &counter_reads, &clock_reads});
  calibrate(c, time);
  time.pass_ns(50'000);
  c.now();  // the miss that finds this thread sparse
  const std::uint64_t w = c.writes();
  counter_reads = clock_reads = 0;
  Checker k;
  for (int i = 0; i < 1000; ++i) {
    time.pass_ns(50'000);
    const std::int64_t before = time.f(time.tick);
    const std::int64_t v = c.now();
    k.check(before, v, time.f(time.tick));
    EXPECT_LE(v, before + static_cast<std::int64_t>(time.mono_extra)) << "one clock read's worth late at most";
  }
  EXPECT_EQ(clock_reads, 1000);
  EXPECT_EQ(counter_reads, 0);
  EXPECT_EQ(c.writes(), w);
  EXPECT_EQ(k.early, 0);
  EXPECT_EQ(k.backwards, 0);
}

// A sparse thread after a thread that keeps the record fresh (ordered by the join): the record
// answers above the clock (its slope is 2^-9 steeper, its anchor a clock read late), so a bare
// clock read could go backwards; the sparse thread must answer at least what the other did.
TEST(TscClock, ASparseThreadNeverAnswersBelowAFreshRecord) {
  FakeTime time;
  FakeClock c(FakeTicks{&time});
  calibrate(c, time);
  time.pass_ns(50'000);
  c.now();
  time.pass_ns(50'000);
  c.now();  // this thread is sparse now
  for (int round = 0; round < 200; ++round) {
    std::int64_t other_last = 0;
    std::thread dense([&] {  // its own Pace: dense after its first two calls
      for (int i = 0; i < 200; ++i) {
        time.pass_ns(500);
        other_last = c.now();
      }
    });
    dense.join();
    time.step = 1 + static_cast<std::uint64_t>(round % 7);  // the sparse call comes a few ticks later
    const std::int64_t v = c.now();
    time.step = 30;
    EXPECT_GE(v, other_last) << "round " << round;
    time.pass_ns(50'000);
    c.now();  // sparse again (its previous call was 50 us ago)
  }
}

// The test seam: disable() is a runaway detection on demand.
TEST(TscClock, DisableKeepsTheOrderAndEndsInClockReads) {
  FakeTime time;
  FakeClock c(FakeTicks{&time});
  calibrate(c, time);
  Checker k;
  for (int i = 0; i < 1000; ++i) {
    time.pass_ns(100);
    const std::int64_t before = time.f(time.tick);
    k.check(before, c.now(), time.f(time.tick));
  }
  c.disable();
  for (int i = 0; i < 1000; ++i) {
    time.pass_ns(100);
    const std::int64_t before = time.f(time.tick);
    k.check(before, c.now(), time.f(time.tick));
  }
  EXPECT_EQ(c.mode(), FakeClock::kClock);
  EXPECT_EQ(k.early, 0);
  EXPECT_EQ(k.backwards, 0);
}

// ---- this machine's counter ------------------------------------------------------------------

using HwClock = TscClock<HardwareTicks>;

bool calibrate_hw(HwClock& c) {
  const std::int64_t until = steady_now_ns() + 3'000'000'000;
  while (!c.calibrated() && steady_now_ns() < until) {
    c.now();
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return c.calibrated();
}

TEST(TscClockHardware, PropertyAgainstClockGettime) {
  if (!HardwareTicks::eligible()) GTEST_SKIP() << "no invariant TSC kept by the kernel as its clocksource";
  HwClock c;
  ASSERT_TRUE(calibrate_hw(c));
  std::mt19937_64 rng(7);
  Checker k;
  for (int i = 0; i < 300'000; ++i) {
    if (rng() % 64 == 0) std::this_thread::sleep_for(std::chrono::microseconds(rng() % 100));
    const std::int64_t delay = static_cast<std::int64_t>(rng() % 3 == 0 ? rng() % 10'000'000'000'000 : rng() % 100'000);
    const std::int64_t before = steady_now_ns();
    const std::int64_t v = c.now();
    const std::int64_t after = steady_now_ns();
    ASSERT_GE(add_saturated(v, delay), before + delay) << i;
    k.check(before, v, after);
  }
  EXPECT_EQ(k.early, 0);
  EXPECT_EQ(k.backwards, 0);
  // The upper side: a preemption between the three reads only widens [before, after].
  EXPECT_EQ(k.too_late, 0) << "worst " << k.worst_late << " ns past the clock read after the call";
  EXPECT_EQ(c.mode(), HwClock::kTsc);
}

// Two threads, each publishing its last value; each checks its own value against the other's
// last one it saw before the call (happens-before through the acquire load): never earlier.
TEST(TscClockHardware, MonotoneAcrossThreadsAndNeverEarly) {
  if (!HardwareTicks::eligible()) GTEST_SKIP() << "no invariant TSC kept by the kernel as its clocksource";
  HwClock c;
  ASSERT_TRUE(calibrate_hw(c));
  std::atomic<std::int64_t> published[2] = {INT64_MIN, INT64_MIN};
  std::atomic<long> early{0}, backwards{0};
  auto body = [&](int me) {
    for (int i = 0; i < 200'000; ++i) {
      const std::int64_t seen = published[1 - me].load(std::memory_order_acquire);
      const std::int64_t before = steady_now_ns();
      const std::int64_t v = c.now();
      early += v < before;
      backwards += v < seen;
      published[me].store(v, std::memory_order_release);
    }
  };
  std::thread a(body, 0), b(body, 1);
  a.join();
  b.join();
  EXPECT_EQ(early.load(), 0);
  EXPECT_EQ(backwards.load(), 0);
}

TEST(TscClockHardware, TheProcessClockIsUsedWhereItMayBe) {
  const std::int64_t before = steady_now_ns();
  const std::int64_t v = submit_now_ns();
  EXPECT_GE(v, before);
  EXPECT_EQ(process_submit_clock().mode() == HwClock::kTsc, HardwareTicks::eligible());
}

}  // namespace
}  // namespace kairos::detail
