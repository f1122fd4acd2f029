// The lateness start times of a batch (core/src/batch_clock.hpp): one clock read per batch once
// the thread's counter rate is calibrated, clock reads throughout when the counter may not be
// used, and times that stay with the clock.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include <kairos/detail/futex.hpp>  // steady_now_ns

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

TEST(BatchClock, WithoutTheCounterEveryStartIsAClockRead) {
  CountingClock c;
  BatchClock clock(false);  // e.g. a ManualClock engine
  for (int i = 0; i < 10; ++i) clock.next_start([&] { return c(); });
  EXPECT_EQ(c.reads, 10);
}

TEST(BatchClock, OnceCalibratedABatchReadsTheClockTwiceAndStaysWithIt) {
  if (!tsc_is_clocksource()) GTEST_SKIP() << "the kernel's clocksource is not tsc";
  // Calibration needs (clock, counter) pairs at least 20 ms apart on this thread: the second
  // start of each batch makes one.
  for (int b = 0; b < 3; ++b) {
    CountingClock c;
    BatchClock clock(true);
    clock.next_start([&] { return c(); });
    clock.next_start([&] { return c(); });
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  CountingClock c;
  BatchClock clock(true);
  std::vector<std::int64_t> before, starts, after;
  for (int i = 0; i < 1000; ++i) {
    before.push_back(steady_now_ns());
    starts.push_back(clock.next_start([&] { return c(); }));
    after.push_back(steady_now_ns());
  }
  EXPECT_EQ(c.reads, 2) << "a calibrated batch reads the clock for its first two starts only";
  for (std::size_t i = 0; i < starts.size(); ++i) {
    if (i > 0) {
      EXPECT_GE(starts[i], starts[i - 1]) << i;
    }
    // Between the clock reads around it (a preemption there only widens the interval), give or
    // take the rate's error over this batch: nanoseconds; 2 us is generous.
    EXPECT_GE(starts[i], before[i] - 2'000) << i;
    EXPECT_LE(starts[i], after[i] + 2'000) << i;
  }
}

}  // namespace
}  // namespace kairos::detail
