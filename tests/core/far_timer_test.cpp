// far_timer_test.cpp: far timers (Options::far_timer_slack, docs/api.md "Far timers"): a
// schedule() or execute_after() whose delay is at least 1000 slacks makes no clock read in the
// call; the shard's leader gives it its deadline at its take-in. Never earlier than the call +
// its delay, in submission order among equal delays, kicked in time by a sleeping leader, and
// reported, cancelled and returned by shutdown_now() as any task. In the *_poll_test executable
// (poll mode: no leader thread) there are no far timers: the same calls read the clock.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <vector>

#include <kairos/kairos.hpp>

#include "support.hpp"

namespace {

using namespace std::chrono_literals;
using kairos_test::kPatience;
using kairos_test::kPollMode;

// A slack of 100 us: delays of 100 ms or more are far.
kairos::Options far_options() {
  kairos::Options o;
  o.far_timer_slack = 100us;
  return o;
}

std::int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::uint64_t far_timers(kairos_test::Scheduler& s) { return s.stats().total().far_timers; }

TEST(FarTimer, NeverStartsBeforeTheCallPlusItsDelay) {
  kairos_test::Scheduler s(far_options());
  std::atomic<std::int64_t> a_start{0}, b_start{0};
  const std::int64_t t0 = steady_ns();
  auto a = s.schedule([&] { a_start.store(steady_ns()); }, 100ms);
  const std::int64_t t1 = steady_ns();
  s.execute_after([&] { b_start.store(steady_ns()); }, 150ms);
  ASSERT_EQ(a.wait_for(kPatience), std::future_status::ready);
  ASSERT_TRUE(kairos_test::eventually([&] { return b_start.load() != 0; }));
  EXPECT_GE(a_start.load() - t0, 100'000'000);
  EXPECT_GE(b_start.load() - t1, 150'000'000);
  // Late by the slack and the leader's wake-up at most, give or take a loaded machine.
  EXPECT_LT(a_start.load() - t0, 100'000'000 + 2'000'000'000);
  EXPECT_EQ(far_timers(s), kPollMode ? 0u : 2u) << "both calls were far (none in poll mode)";
}

TEST(FarTimer, ADelayBelowAThousandSlacksIsTheCallersClockRead) {
  kairos_test::Scheduler s(far_options());
  auto a = s.schedule([] {}, 99ms);
  s.execute_after([] {}, 1ms);
  auto z = s.submit([] {});
  ASSERT_EQ(a.wait_for(kPatience), std::future_status::ready);
  ASSERT_EQ(z.wait_for(kPatience), std::future_status::ready);
  EXPECT_EQ(far_timers(s), 0u);
}

TEST(FarTimer, ASlackOfZeroMakesNoFarTimersAndANegativeOneIsRefused) {
  kairos::Options o;
  o.far_timer_slack = 0ns;
  kairos_test::Scheduler s(o);
  auto a = s.schedule([] {}, 1h);
  s.execute_after([] {}, 2h);
  a.cancel();
  ASSERT_TRUE(s.wait_idle(kPatience));
  EXPECT_EQ(far_timers(s), 0u);
  o.far_timer_slack = -1ns;
  EXPECT_THROW(kairos_test::Scheduler bad(o), std::invalid_argument);
}

// Equal delays from one thread run in the order of their calls: the leader's clock reads only
// grow from one take-in to the next, and a take-in follows the submission order.
TEST(FarTimer, EqualDelaysRunInTheOrderOfTheirCalls) {
  kairos_test::Scheduler s(far_options());
  constexpr int kTasks = 5000;
  std::mutex mu;
  std::vector<int> order;
  std::vector<kairos::ScheduledFuture<void>> futures;
  futures.reserve(kTasks);
  for (int i = 0; i < kTasks; ++i) {
    futures.push_back(s.schedule(
        [&, i] {
          std::lock_guard lk(mu);
          order.push_back(i);
        },
        100ms));
    if (i % 500 == 0) std::this_thread::sleep_for(1ms);  // several take-ins, several clock reads
  }
  for (auto& f : futures) ASSERT_EQ(f.wait_for(kPatience), std::future_status::ready);
  ASSERT_EQ(order.size(), static_cast<std::size_t>(kTasks));
  for (int i = 0; i < kTasks; ++i) ASSERT_EQ(order[static_cast<std::size_t>(i)], i);
}

// A leader asleep for an hour (its one task is due then) is kicked by a far timer's call, which
// then starts within its delay + the slack, not an hour later.
TEST(FarTimer, ALeaderAsleepForLongIsKickedToTakeAFarTimerIn) {
  kairos_test::Scheduler s(far_options());
  auto later = s.schedule([] {}, 1h);
  std::this_thread::sleep_for(20ms);  // the leader has armed its wait for the hour (or will)
  std::atomic<std::int64_t> start{0};
  const std::int64_t t0 = steady_ns();
  auto f = s.schedule([&] { start.store(steady_ns()); }, 100ms);
  ASSERT_EQ(f.wait_for(std::chrono::seconds(30)), std::future_status::ready) << "taken in an hour late";
  EXPECT_GE(start.load() - t0, 100'000'000);
  later.cancel();
}

// delay() reads the delay itself until the leader takes the timer in, then deadline - now:
// either way at most the delay, and close to it right after the call; after a cancel, the value
// kept (the delay, if the cancel came first).
TEST(FarTimer, DelayIsAtMostTheDelayBeforeAndAfterItsDeadlineIsTaken) {
  kairos_test::Scheduler s(far_options());
  auto a = s.schedule([] {}, 10s);
  auto d = a.delay();
  EXPECT_LE(d, kairos::Duration(10s));
  EXPECT_GT(d, kairos::Duration(9s));
  auto b = s.schedule([] {}, 20s);
  EXPECT_TRUE(b.cancel());  // most likely before the take-in: one CAS, the handle lets go
  d = b.delay();
  EXPECT_LE(d, kairos::Duration(20s));
  EXPECT_GT(d, kairos::Duration(19s));
  std::this_thread::sleep_for(20ms);  // taken in by now, its deadline stamped
  d = a.delay();
  EXPECT_LE(d, kairos::Duration(10s));
  EXPECT_GT(d, kairos::Duration(9s));
  a.cancel();
}

// shutdown_now() returns the tasks earliest deadline first, far timers still in the inbox
// included: they get their deadlines on the way (an encoded delay sorts the longest first).
TEST(FarTimer, ShutdownNowReturnsFarTimersEarliestDeadlineFirst) {
  kairos_test::Scheduler s(far_options());
  std::vector<int> ran;
  for (int i = 5; i >= 1; --i) s.execute_after([&ran, i] { ran.push_back(i); }, std::chrono::seconds(i));
  std::vector<kairos::Task> left = s.shutdown_now();
  ASSERT_EQ(left.size(), 5u);
  for (kairos::Task& t : left) t.run();
  EXPECT_EQ(ran, (std::vector<int>{1, 2, 3, 4, 5}));
}

}  // namespace
