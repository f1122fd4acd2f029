// Re-arm (ScheduledFuture::rearm on a schedule_rearmable task): never early and never late for
// the newest deadline, FIFO among equal deadlines by re-arm order, and a re-arm racing the run:
// either the run happens for the old deadline (rearm() is false) or the task waits for the new
// one (rearm() is true), never both, never neither. rearm_at(time_point): the same to an
// absolute deadline on the scheduler's clock.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <stdexcept>
#include <thread>
#include <vector>

#include "support.hpp"

namespace {

using namespace kairos_test;

TEST(Rearm, ALaterDeadlineIsNeverEarly) {
  Manual s;
  std::atomic<int> runs{0};
  auto f = s.schedule_rearmable([&] { runs.fetch_add(1); }, 10ms);
  s.clock.advance(5ms);
  ASSERT_TRUE(f.rearm(10ms));  // now due at 15 ms
  EXPECT_EQ(f.delay(), 10ms);
  s.clock.advance(5ms);  // the old deadline: the leader wakes, re-files, does not run it
  ASSERT_TRUE(s.wait_idle(kPatience));
  EXPECT_EQ(runs.load(), 0);
  EXPECT_EQ(s.queue_size(), 1u);
  s.step(4ms);
  EXPECT_EQ(runs.load(), 0);
  s.clock.advance(1ms);
  f.get();
  EXPECT_EQ(runs.load(), 1);
  EXPECT_EQ(s.queue_size(), 0u);
}

TEST(Rearm, AnEarlierDeadlineIsNeverLate) {
  Manual s;
  auto f = s.schedule_rearmable([] { return 5; }, 1h);
  ASSERT_TRUE(s.wait_idle(kPatience));  // filed at 1 h
  ASSERT_TRUE(f.rearm(2ms));
  s.step(1ms);
  EXPECT_FALSE(f.is_done());
  s.clock.advance(1ms);
  EXPECT_EQ(f.get(), 5);
}

TEST(Rearm, AnEarlierDeadlineWakesALeaderAsleepForTheOldOne) {
  kairos::Options o = single_thread();
  o.wait = kairos::WaitPolicy::sleep();
  kairos_test::Scheduler s(o);
  auto f = s.schedule_rearmable([] { return 1; }, 1h);
  ASSERT_TRUE(s.wait_idle(kPatience));  // the leader sleeps until the task's hour
  auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(f.rearm(1ms));
  ASSERT_EQ(f.wait_for(kPatience), std::future_status::ready);
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 1ms);  // and not before its new deadline
  EXPECT_EQ(f.get(), 1);
}

TEST(Rearm, EqualDeadlinesStartInReArmOrder) {
  Manual s;
  Recorder order;
  auto a = s.schedule_rearmable([&] { order.add(1); }, 5ms);
  auto b = s.schedule_rearmable([&] { order.add(2); }, 1h);
  auto c = s.schedule_rearmable([&] { order.add(3); }, 3ms);
  ASSERT_TRUE(s.wait_idle(kPatience));
  ASSERT_TRUE(c.rearm(10ms));  // later
  ASSERT_TRUE(b.rearm(10ms));  // earlier
  ASSERT_TRUE(a.rearm(10ms));  // later
  auto d = s.schedule_at([&] { order.add(4); }, kairos::ManualClock::time_point(10ms));  // after them
  s.clock.advance(10ms);
  d.get();
  ASSERT_TRUE(s.wait_idle(kPatience));
  EXPECT_EQ(order.ids(), (std::vector<int>{3, 2, 1, 4}));
}

TEST(Rearm, OnlyAPendingReArmableTaskCanBeReArmed) {
  Manual s;
  auto plain = s.schedule([] {}, 1h);
  EXPECT_FALSE(plain.is_rearmable());
  EXPECT_FALSE(plain.rearm(1ms));
  auto done = s.schedule_rearmable([] {}, 0ms);
  done.get();
  EXPECT_FALSE(done.rearm(1ms));
  auto cancelled = s.schedule_rearmable([] {}, 1h);
  ASSERT_TRUE(cancelled.cancel());
  EXPECT_FALSE(cancelled.rearm(1ms));
  kairos::ScheduledFuture<void> none;
  EXPECT_FALSE(none.rearm(1ms));
  EXPECT_EQ(s.queue_size(), 2u);  // plain, and the cancelled one (retained: no remove-on-cancel)
}

TEST(Rearm, ReArmedTasksCancelAndReturnFromShutdownNowByTheirNewDeadline) {
  kairos::Options o = single_thread();
  o.remove_on_cancel = true;
  Manual s(o);
  auto a = s.schedule_rearmable([] { return 1; }, 10ms);
  auto b = s.schedule_rearmable([] { return 2; }, 20ms);
  auto c = s.schedule_rearmable([] { return 3; }, 30ms);
  ASSERT_TRUE(s.wait_idle(kPatience));
  ASSERT_TRUE(a.rearm(40ms));
  ASSERT_TRUE(c.rearm(5ms));
  ASSERT_TRUE(b.rearm(50ms));
  ASSERT_TRUE(b.cancel());
  EXPECT_EQ(s.queue_size(), 2u);
  std::vector<kairos::Task> tasks = s.shutdown_now();
  ASSERT_EQ(tasks.size(), 2u);
  tasks[0].run();  // c (5 ms) before a (40 ms)
  EXPECT_EQ(c.get(), 3);
  EXPECT_FALSE(a.is_done());
}

TEST(Rearm, NeverDueAndBackAgain) {
  Manual s;
  auto f = s.schedule_rearmable([] {}, 1ms);
  ASSERT_TRUE(f.rearm(std::chrono::hours::max()));
  s.step(1h);
  EXPECT_FALSE(f.is_done());
  ASSERT_TRUE(f.rearm(1ms));
  s.clock.advance(1ms);
  f.get();
}

// Many thousands of races between the run of a due task and a re-arm to an hour later.
TEST(Rearm, RaceWithTheRunHasExactlyOneWinner) {
  kairos_test::Scheduler s(single_thread());
  const int n = 20000;
  std::vector<std::atomic<int>> ran(n);
  std::vector<kairos::ScheduledFuture<void>> f(n);
  std::vector<char> rearmed(n);
  std::atomic<int> next{0};
  std::thread rearmer([&] {
    for (int i = 0; i < n; ++i) {
      while (next.load(std::memory_order_acquire) <= i) std::this_thread::yield();
      rearmed[i] = f[i].rearm(1h);
    }
  });
  for (int i = 0; i < n; ++i) {
    f[i] = s.schedule_rearmable([&ran, i] { ran[i].fetch_add(1); }, 0ms);
    next.store(i + 1, std::memory_order_release);
  }
  rearmer.join();
  ASSERT_TRUE(s.wait_idle(kPatience));
  int won_by_rearm = 0, both = 0, neither = 0;
  for (int i = 0; i < n; ++i) {
    int r = ran[i].load();
    won_by_rearm += rearmed[i];
    both += rearmed[i] && r != 0;
    neither += !rearmed[i] && r == 0;
    EXPECT_LE(r, 1);
  }
  EXPECT_EQ(both, 0) << "a task ran although its re-arm to an hour later succeeded";
  EXPECT_EQ(neither, 0) << "a task neither ran nor was re-armed";
  EXPECT_EQ(s.queue_size(), static_cast<std::size_t>(won_by_rearm));
  std::vector<kairos::Task> rest = s.shutdown_now();
  EXPECT_EQ(rest.size(), static_cast<std::size_t>(won_by_rearm));
  std::printf("re-arm won %d of %d races\n", won_by_rearm, n);
}

// rearm_at: an absolute deadline on the scheduler's clock; later and earlier, never early nor
// late, from a clock reading the caller already has.
TEST(Rearm, RearmAtMovesToTheAbsoluteDeadline) {
  Manual s;
  std::atomic<int> runs{0};
  auto f = s.schedule_rearmable([&] { runs.fetch_add(1); }, 10ms);
  s.clock.advance(4ms);
  auto now = s.clock.now();  // the loop's reading
  s.clock.advance(1ms);      // time moves on before the loop re-arms: the deadline stays absolute
  ASSERT_TRUE(f.rearm_at(now + 20ms));  // due at 24 ms, not 25 ms
  EXPECT_EQ(f.delay(), 19ms);
  s.clock.advance(5ms);  // the old deadline (10 ms): not run
  ASSERT_TRUE(s.wait_idle(kPatience));
  EXPECT_EQ(runs.load(), 0);
  s.clock.advance(13ms);  // 23 ms
  ASSERT_TRUE(s.wait_idle(kPatience));
  EXPECT_EQ(runs.load(), 0) << "ran before its re-armed deadline";
  ASSERT_TRUE(f.rearm_at(kairos::ManualClock::time_point(30ms)));  // later again
  s.clock.advance(1ms);  // 24 ms: the previous deadline, not run
  ASSERT_TRUE(s.wait_idle(kPatience));
  EXPECT_EQ(runs.load(), 0);
  ASSERT_TRUE(f.rearm_at(kairos::ManualClock::time_point(26ms)));  // earlier
  s.clock.advance(2ms);  // 26 ms
  f.get();
  EXPECT_EQ(runs.load(), 1);
  EXPECT_FALSE(f.rearm_at(s.clock.now() + 1ms)) << "re-armed a task that already ran";
}

TEST(Rearm, RearmAtAPastDeadlineRunsAtOnceAndKeepsReArmOrder) {
  Manual s;
  Recorder order;
  auto a = s.schedule_rearmable([&] { order.add(1); }, 1h);
  auto b = s.schedule_rearmable([&] { order.add(2); }, 1h);
  s.step(10ms);
  ASSERT_TRUE(b.rearm_at(kairos::ManualClock::time_point(3ms)));  // in the past: due now
  ASSERT_TRUE(a.rearm_at(kairos::ManualClock::time_point(3ms)));  // equal: after b
  a.get();
  b.get();
  EXPECT_EQ(order.ids(), (std::vector<int>{2, 1}));
}

TEST(Rearm, RearmAtChecksTheClockAndTheTask) {
  kairos::ManualClock clock;
  ManualScheduler manual(single_thread(), clock);
  kairos_test::Scheduler steady(single_thread());
  auto m = manual.schedule_rearmable([] {}, 1h);
  auto r = steady.schedule_rearmable([] {}, 1h);
  auto plain = steady.schedule([] {}, 1h);
  EXPECT_THROW(m.rearm_at(kairos::SteadyClock::now() + 1ms), std::invalid_argument);
  EXPECT_THROW(r.rearm_at(clock.now() + 1ms), std::invalid_argument);
  EXPECT_FALSE(plain.rearm_at(kairos::SteadyClock::now() + 1ms)) << "not re-armable";
  EXPECT_FALSE(kairos::ScheduledFuture<void>{}.rearm_at(kairos::SteadyClock::now()));
  auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(r.rearm_at(kairos::SteadyClock::now() + 2ms));  // the steady scheduler: real time
  ASSERT_EQ(r.wait_for(kPatience), std::future_status::ready);
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 2ms) << "ran before its re-armed deadline";
  EXPECT_TRUE(m.cancel());
  EXPECT_TRUE(plain.cancel());
}

// A thread that re-arms a task earlier and earlier as fast as it can keeps at most one refile
// request in flight (RearmBase::refile_posted), so every call that drains the inbox until it has
// what came before it returns while the flood goes on: queue_size(), stats(), next_deadline()
// and poll() of a poll-mode scheduler (whose drains take in everything, with no leader), and the
// task still runs at its newest deadline. (Without the coalescing the drain chased the requests
// for as long as the flood lasted.)
TEST(Rearm, AFloodOfEarlierReArmsDoesNotHoldUpCallsThatDrain) {
  kairos::Options o;
  o.poll_mode = true;
  kairos::Scheduler s(o);
  std::atomic<int> runs{0};
  auto f = s.schedule_rearmable([&] { runs.fetch_add(1); }, 10h);
  const auto far = std::chrono::steady_clock::now() + 5h;
  std::atomic<bool> stop{false};
  std::atomic<long> rearms{0};
  std::thread flood([&] {
    for (long i = 1; !stop.load(std::memory_order_relaxed); ++i) {
      EXPECT_TRUE(f.rearm_at(far - std::chrono::nanoseconds(i)));
      rearms.store(i, std::memory_order_relaxed);
    }
  });
  kairos_test::Watchdog watchdog("drains under a flood of earlier re-arms", kairos_test::kHangLimit);
  ASSERT_TRUE(kairos_test::eventually([&] { return rearms.load() > 10'000; }));
  for (int k = 0; k < 20; ++k) {
    // One task; a re-arm in progress counts for a moment too (its seq not yet given back), and
    // so may each re-arm made while the count is read: the count reads the abandoned seqs, then
    // the seqs taken (Inbox::submitted), and a reader preempted between the two (a loaded CI
    // machine) counts every re-arm made meanwhile as in progress.
    const long before = rearms.load();
    const std::size_t size = s.queue_size();
    const std::uint64_t pending = s.stats().total().pending;
    const auto during = static_cast<std::uint64_t>(rearms.load() - before);
    EXPECT_GE(size, 1u);
    EXPECT_LE(size, 2u + during);
    EXPECT_LE(pending, 2u + during);
    const auto next = s.next_deadline();
    ASSERT_TRUE(next.has_value());
    EXPECT_GT(*next, std::chrono::steady_clock::now() + 4h);
    EXPECT_EQ(s.poll(), 0u);
  }
  stop.store(true);
  flood.join();
  ASSERT_TRUE(f.rearm(0ns));  // due now: it runs at the newest deadline, once
  EXPECT_TRUE(kairos_test::eventually([&] {
    s.poll();
    return runs.load() == 1;
  }));
  EXPECT_EQ(s.queue_size(), 0u);
}

}  // namespace
