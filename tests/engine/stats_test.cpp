// stats(): counters and the per-shard lateness histogram, exact on a ManualClock, and on the
// steady clock within the clock reads around each start.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

#include <kairos/detail/steady_clock.hpp>  // steady_now_ns
#include <kairos/kairos.hpp>

#include "support.hpp"

namespace {

using namespace std::chrono_literals;
using kairos_test::kPatience;

TEST(Stats, CountsSubmissionsRunsCancelsRejectionsAndLateness) {
  kairos::ManualClock clock;
  kairos::Options o;
  o.capacity = 3;
  o.rejection = kairos::Rejection::discard;
  kairos::BasicScheduler<kairos::ManualClock> s(o, clock);
  auto a = s.schedule([] {}, 1ms);
  auto b = s.schedule([] {}, 2ms);
  auto c = s.schedule([] {}, 10ms);
  auto d = s.schedule([] {}, 1ms);  // over capacity: discarded
  EXPECT_TRUE(d.is_cancelled());
  EXPECT_TRUE(c.cancel());
  clock.advance(5ms);  // a is 4 ms late, b 3 ms late
  ASSERT_TRUE(s.wait_idle(kPatience));
  kairos::ShardStats t = s.stats().total();
  EXPECT_EQ(t.submitted, 3u);
  EXPECT_EQ(t.ran, 2u);
  EXPECT_EQ(t.rejected, 1u);
  EXPECT_EQ(t.pending, 1u);  // c: cancelled, retained until its deadline
  EXPECT_EQ(t.in_inbox, 0u);  // wait_idle: everything taken in
  EXPECT_EQ(t.lateness.count(), 2u);
  EXPECT_EQ(t.lateness.min(), 3'000'000);
  EXPECT_EQ(t.lateness.max(), 4'000'000);
  clock.advance(5ms);
  ASSERT_TRUE(s.wait_idle(kPatience));
  t = s.stats().total();
  EXPECT_EQ(t.pending, 0u);
  EXPECT_EQ(t.cancelled, 1u);
}

TEST(Stats, PeriodicFailuresAreCountedAndRecordingCanBeOff) {
  kairos::ManualClock clock;
  kairos::Options o;
  o.record_lateness = false;
  o.on_uncaught = [](std::exception_ptr) {};
  kairos::BasicScheduler<kairos::ManualClock> s(o, clock);
  int runs = 0;
  auto p = s.schedule_at_fixed_rate([&] { if (++runs == 3) throw 7; }, 1ms, 1ms);
  clock.advance(10ms);
  ASSERT_TRUE(s.wait_idle(kPatience));
  kairos::ShardStats t = s.stats().total();
  EXPECT_EQ(runs, 3);
  EXPECT_EQ(t.ran, 3u);
  EXPECT_EQ(t.periodic_failures, 1u);
  EXPECT_EQ(t.lateness.count(), 0u);
}

// A burst due at one deadline on the steady clock: the runner stamps each start (a counter read
// on a tsc host, core/src/batch_clock.hpp) and converts the stamps when it files the batch. Each
// start comes after the previous task's body and before its own body's clock read, so the
// histogram's largest lateness lies between the next-to-last and the last body's reads, less the
// deadline. A stamp filed unconverted (counter ticks) or converted at filing time (after the
// whole batch) falls outside.
TEST(Stats, LatenessOfABurstLiesBetweenTheClockReadsAroundItsStarts) {
  constexpr int kTasks = 3000;
  kairos::Scheduler s;  // one thread: the starts follow one another
  std::vector<std::int64_t> body(kTasks, 0);
  // 40 ms ahead: past the 20 ms after which the counter's rate is calibrated (the shard's anchor).
  const std::int64_t deadline = kairos::detail::steady_now_ns() + 40'000'000;
  for (int i = 0; i < kTasks; ++i) {
    (void)s.schedule_at([&body, i] { body[static_cast<std::size_t>(i)] = kairos::detail::steady_now_ns(); },
                        kairos::SteadyClock::time_point(std::chrono::nanoseconds(deadline)));
  }
  s.shutdown();
  ASSERT_TRUE(s.await_termination(kPatience));
  std::vector<std::int64_t> sorted = body;
  std::sort(sorted.begin(), sorted.end());
  kairos::ShardStats t = s.stats().total();
  ASSERT_EQ(t.lateness.count(), static_cast<std::uint64_t>(kTasks));
  EXPECT_EQ(t.lateness.below_zero(), 0u);
  // 2 us: the counter's rate error over a batch, generously (min() and max() are exact). A
  // preemption inside the batch's (clock, counter) pair only makes the later starts read earlier:
  // hence the lower bound's half.
  const std::int64_t last = sorted[kTasks - 1] - deadline, next_to_last = sorted[kTasks - 2] - deadline;
  EXPECT_LE(t.lateness.max(), last + 2'000);
  EXPECT_GE(t.lateness.max(), next_to_last / 2);
  EXPECT_GE(t.lateness.min(), 0);
  EXPECT_LE(t.lateness.min(), sorted[0] - deadline + 2'000);
}

}  // namespace
