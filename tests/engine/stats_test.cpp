// stats(): counters and the per-shard lateness histogram, exact on a ManualClock.
#include <gtest/gtest.h>

#include <chrono>

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

}  // namespace
