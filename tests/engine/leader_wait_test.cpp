// The leader's wait (core/src/leader_wait.hpp) driven by hand: who kicks, and when a wait ends.
#include <gtest/gtest.h>

#include "leader_wait.hpp"

namespace kairos::detail {
namespace {

TEST(LeaderWait, OnlyAnEarlierDeadlineKicksAnArmedLeaderAndOnlyOnce) {
  LeaderWait w;
  w.arm(1000);
  std::uint32_t e = w.wake_epoch();
  (void)w.notify_earlier(1000);  // not earlier
  (void)w.notify_earlier(5000);
  EXPECT_EQ(w.wake_epoch(), e);
  (void)w.notify_earlier(999);  // earlier: wins armed -> awake, kicks
  EXPECT_EQ(w.wake_epoch(), e + 1);
  (void)w.notify_earlier(1);  // the leader is being woken already: no second kick
  EXPECT_EQ(w.wake_epoch(), e + 1);
}

TEST(LeaderWait, AnAwakeLeaderIsNeverKickedBySubmissions) {
  LeaderWait w;
  std::uint32_t e = w.wake_epoch();
  (void)w.notify_earlier(kMinNs + 1);
  w.arm(100);
  w.disarm();
  (void)w.notify_earlier(0);
  EXPECT_EQ(w.wake_epoch(), e);
}

TEST(LeaderWait, ALeaderWaitingWithNoDeadlineIsKickedByAnyTask) {
  LeaderWait w;
  w.arm(kMaxNs);
  std::uint32_t e = w.wake_epoch();
  (void)w.notify_earlier(kMaxNs);  // also one due at the end of a ManualClock's time
  EXPECT_EQ(w.wake_epoch(), e + 1);
}

// A far timer (notify_far) kicks a leader whose armed wait ends later than the arming pass's
// clock read + the slack, and no other: not one armed within it, not an awake one.
TEST(LeaderWait, AFarTimerKicksOnlyALeaderThatWouldSleepPastTheSlack) {
  LeaderWait w;
  std::uint32_t e = w.wake_epoch();
  (void)w.notify_far(100);  // awake (never armed): its next arm's count read sees the submission
  EXPECT_EQ(w.wake_epoch(), e);
  w.arm(1100, 1000);  // ends at the read + 100
  (void)w.notify_far(100);
  EXPECT_EQ(w.wake_epoch(), e) << "the wait ends within the slack: no kick";
  w.arm(1101, 1000);  // one ns later than the read + the slack
  (void)w.notify_far(100);
  EXPECT_EQ(w.wake_epoch(), e + 1);
  (void)w.notify_far(100);  // being woken already: no second kick
  EXPECT_EQ(w.wake_epoch(), e + 1);
  w.arm(kMaxNs, 1000);  // nothing queued: any far timer kicks it
  e = w.wake_epoch();
  (void)w.notify_far(100);
  EXPECT_EQ(w.wake_epoch(), e + 1);
  w.arm(5000);  // re-armed without a read: the last one (1000) stays the measure
  e = w.wake_epoch();
  (void)w.notify_far(100);
  EXPECT_EQ(w.wake_epoch(), e + 1);
}

TEST(LeaderWait, SleepEndsAtItsDeadlineOrAtOnceAfterAWake) {
  LeaderWait w;
  std::uint32_t e = w.wake_epoch();
  EXPECT_TRUE(w.sleep_until(e, steady_now_ns() + 1'000'000));  // 1 ms: times out
  w.wake();
  std::int64_t t0 = steady_now_ns();
  EXPECT_FALSE(w.sleep_until(e, steady_now_ns() + 60'000'000'000));  // the epoch moved on
  EXPECT_LT(steady_now_ns() - t0, 10'000'000'000);
  t0 = steady_now_ns();
  EXPECT_EQ(w.spin_until(e, t0 + 60'000'000'000), kMinNs) << "woken: no clock read reached it";
  EXPECT_LT(steady_now_ns() - t0, 10'000'000'000);
}

// The leader pops with the clock read that ended its spin (shard_leader.cpp): it must be a read
// at or past the deadline, taken before the spin returned.
TEST(LeaderWait, ASpinThatReachesItsDeadlineReturnsTheClockReadThatDid) {
  LeaderWait w;
  const std::uint32_t e = w.wake_epoch();
  const std::int64_t deadline = steady_now_ns() + 2'000'000;
  const std::int64_t reached = w.spin_until(e, deadline);
  const std::int64_t after = steady_now_ns();
  EXPECT_GE(reached, deadline);
  EXPECT_LE(reached, after);
}

}  // namespace
}  // namespace kairos::detail
