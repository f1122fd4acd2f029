// The lateness start times of a batch (core/src/batch_clock.hpp): one clock read per batch once
// the process's counter rate is calibrated (on any thread, from the anchor the first shard
// takes), clock reads throughout when the counter may not be used, and times that stay with the
// clock.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include <kairos/detail/steady_clock.hpp>  // steady_now_ns

#include "batch_clock.hpp"

namespace kairos::detail {
namespace {

struct CountingClock {
  int reads = 0;
  std::int64_t operator()() {
    ++reads;
    return steady_now_ns();
  }
};

// n stamps of one batch, each with the clock read just before and just after it.
struct StampedBatch {
  std::vector<std::int64_t> before, stamps, after;
};
StampedBatch stamp_batch(BatchClock& clock, CountingClock& c, int n) {
  StampedBatch b;
  for (int i = 0; i < n; ++i) {
    b.before.push_back(steady_now_ns());
    b.stamps.push_back(clock.next_stamp([&] { return c(); }));
    b.after.push_back(steady_now_ns());
  }
  return b;
}

TEST(BatchClock, WithoutTheCounterEveryStartIsAClockRead) {
  CountingClock c;
  BatchClock clock(false);  // e.g. a ManualClock engine
  for (int i = 0; i < 10; ++i) clock.next_stamp([&] { return c(); });
  EXPECT_EQ(c.reads, 10);
}

// Each (clock, counter) pair is two reads; a preemption between them (a loaded machine) skews
// the pair by as long as it lasts. The test cannot see inside next_stamp(), but the clock reads
// around the call bound that skew: the bound below is 2 us plus what those reads measured, so it
// is 2 us on a quiet machine and widens only by the interference that actually happened.
TEST(BatchClock, OnceCalibratedABatchReadsTheClockTwiceAndStaysWithIt) {
  if (!tsc_is_clocksource()) GTEST_SKIP() << "the kernel's clocksource is not tsc";
  // Calibration needs a (clock, counter) pair at least 20 ms after the process's anchor: the
  // second start of each batch makes one.
  BatchClock::anchor();
  std::int64_t pair_skew = 0;  // the widest interval around a call that made a pair
  auto timed = [&](BatchClock& clock, CountingClock& c) {
    std::int64_t t0 = steady_now_ns();
    clock.next_stamp([&] { return c(); });
    pair_skew = std::max(pair_skew, steady_now_ns() - t0);
  };
  for (int b = 0; b < 3; ++b) {
    CountingClock c;
    BatchClock clock(true);
    clock.next_stamp([&] { return c(); });
    timed(clock, c);
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  CountingClock c;
  BatchClock clock(true);
  const auto [before, stamps, after] = stamp_batch(clock, c, 1000);
  std::vector<std::int64_t> starts;
  for (std::size_t k = 0; k < stamps.size(); ++k) starts.push_back(clock.start_ns(k, stamps[k]));
  EXPECT_EQ(c.reads, 2) << "a calibrated batch reads the clock for its first two starts only";
  // This batch's own pair (its second start) is its base; the rate comes from two pairs at least
  // kMinCalibrationNs apart, so its relative error is at most 2 * pair_skew / kMinCalibrationNs.
  const std::int64_t base_skew = after[1] - before[1];
  pair_skew = std::max(pair_skew, base_skew);
  const double rate_error = 2.0 * static_cast<double>(pair_skew) / BatchClock::kMinCalibrationNs;
  for (std::size_t i = 0; i < starts.size(); ++i) {
    if (i > 0) {
      EXPECT_GE(starts[i], starts[i - 1]) << i;
    }
    // Between the clock reads around it (a preemption there only widens the interval), give or
    // take the base pair's skew and the rate's error over this batch: nanoseconds on a quiet
    // machine; 2 us is generous.
    std::int64_t slack = 2'000 + base_skew +
                         static_cast<std::int64_t>(rate_error * static_cast<double>(after[i] - before[1]));
    EXPECT_GE(starts[i], before[i] - slack) << i << " (pair skew " << pair_skew << " ns)";
    EXPECT_LE(starts[i], after[i] + slack) << i << " (pair skew " << pair_skew << " ns)";
  }
}

// The runner stamps each start (next_stamp) and converts the stamps when it files the batch
// (start_ns), after the runs. A stamp converted later is the time of its start, not of the
// conversion: the times below are converted 30 ms after the last start and must still lie
// between the clock reads around each stamp.
TEST(BatchClock, AStampConvertedAfterTheBatchIsTheTimeOfItsStart) {
  if (!tsc_is_clocksource()) GTEST_SKIP() << "the kernel's clocksource is not tsc";
  BatchClock::anchor();
  std::this_thread::sleep_for(std::chrono::milliseconds(25));
  {
    BatchClock calibrating(true);  // the second start of a batch 25 ms after the anchor sets the rate
    for (int i = 0; i < 2; ++i) calibrating.next_stamp([] { return steady_now_ns(); });
  }
  CountingClock c;
  BatchClock clock(true);
  const auto [before, stamps, after] = stamp_batch(clock, c, 200);
  EXPECT_EQ(c.reads, 2);
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  for (std::size_t k = 0; k < stamps.size(); ++k) {
    const std::int64_t t = clock.start_ns(k, stamps[k]);
    if (k < 2) {
      EXPECT_EQ(t, stamps[k]) << "the first two stamps are clock reads";
    }
    // 2 us: the base pair's skew and the rate's error over this short batch, generously.
    EXPECT_GE(t, before[k] - 2'000) << k;
    EXPECT_LE(t, after[k] + 2'000) << k;
  }
}

// The clock reads of one batch of `starts` starts, on a thread that never ran one before.
int clock_reads_of_a_batch_on_a_fresh_thread(int starts) {
  int reads = -1;
  std::thread runner([&] {
    CountingClock c;
    BatchClock clock(true);
    for (int i = 0; i < starts; ++i) clock.next_stamp([&] { return c(); });
    reads = c.reads;
  });
  runner.join();
  return reads;
}

// W7's case: a runner's very first batch, 20 ms after the scheduler was built, on a thread that
// never ran one before. The rate is measured from the anchor the first shard took, so that batch
// already reads the clock twice, not once per task.
TEST(BatchClock, AFirstBatchOnAFreshThreadUsesTheRateFromTheAnchor) {
  if (!tsc_is_clocksource()) GTEST_SKIP() << "the kernel's clocksource is not tsc";
  BatchClock::anchor();  // as Shard's constructor does
  std::this_thread::sleep_for(std::chrono::milliseconds(25));
  EXPECT_EQ(clock_reads_of_a_batch_on_a_fresh_thread(1000), 2)
      << "the first batch of a fresh thread is timed by the counter from its second start";
}

// A rate one runner measured serves every other runner.
TEST(BatchClock, TheRateIsTheProcessesNotAThreads) {
  if (!tsc_is_clocksource()) GTEST_SKIP() << "the kernel's clocksource is not tsc";
  BatchClock::anchor();
  std::this_thread::sleep_for(std::chrono::milliseconds(25));
  {
    CountingClock c;
    BatchClock clock(true);
    for (int i = 0; i < 3; ++i) clock.next_stamp([&] { return c(); });  // the second start calibrates
  }
  for (int t = 0; t < 3; ++t) EXPECT_EQ(clock_reads_of_a_batch_on_a_fresh_thread(100), 2) << "thread " << t;
}

}  // namespace
}  // namespace kairos::detail
