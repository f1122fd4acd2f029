// manual_clock_test.cpp: kairos::ManualClock and schedulers built on it: the start value,
// saturation, negative advances, wake-ups, where due tasks run, wait_idle, and a clock destroyed
// as soon as its scheduler's destructor returns.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <latch>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <type_traits>
#include <vector>

#include <kairos/kairos.hpp>

#include "support.hpp"

namespace {

using namespace std::chrono_literals;
using kairos::Duration;
using kairos::ManualClock;
using kairos_test::Gate;
using kairos_test::kPatience;
using kairos_test::ManualScheduler;
using kairos_test::single_thread;

static_assert(!std::is_copy_constructible_v<ManualClock>);
static_assert(!std::is_copy_assignable_v<ManualClock>);

TEST(ManualClock, StartsAtTheEpoch) {
  ManualClock clock;
  EXPECT_EQ(clock.now(), ManualClock::time_point{});
  EXPECT_EQ(clock.now().time_since_epoch(), Duration::zero());
  clock.advance(0ns);
  EXPECT_EQ(clock.now(), ManualClock::time_point{});
  clock.advance(1500us);
  EXPECT_EQ(clock.now(), ManualClock::time_point(1500us));
  clock.advance(std::chrono::duration<double, std::milli>(0.0000005));  // 0.5 ns: rounds up
  EXPECT_EQ(clock.now(), ManualClock::time_point(1500us + 1ns));
}

TEST(ManualClock, NegativeAdvanceThrowsAndLeavesTimeAlone) {
  ManualClock clock;
  clock.advance(5ms);
  EXPECT_THROW(clock.advance(-1ns), std::invalid_argument);
  EXPECT_THROW(clock.advance(Duration::min()), std::invalid_argument);
  EXPECT_THROW(clock.advance(std::chrono::hours::min()), std::invalid_argument);
  EXPECT_EQ(clock.now(), ManualClock::time_point(5ms));
  clock.advance(0ns);
  EXPECT_EQ(clock.now(), ManualClock::time_point(5ms));
}

TEST(ManualClock, SaturatesAtItsLargestTimePoint) {
  ManualClock clock;
  clock.advance(1h);
  clock.advance(Duration::max());
  EXPECT_EQ(clock.now(), ManualClock::time_point::max());
  clock.advance(1ns);
  EXPECT_EQ(clock.now(), ManualClock::time_point::max());
  ManualClock other;
  other.advance(std::chrono::hours::max());
  EXPECT_EQ(other.now(), ManualClock::time_point::max());
}

// Due tasks run on the scheduler's threads, never on the thread that calls advance().
TEST(ManualClock, DueTasksRunOnSchedulerThreads) {
  ManualClock clock;
  std::vector<std::thread::id> ids(20);
  std::mutex mu;
  ManualScheduler s(kairos_test::threads(2, 2), clock);
  for (int i = 0; i < 20; ++i)
    s.schedule([&, i] {
      std::lock_guard lock(mu);
      ids[i] = std::this_thread::get_id();
    }, std::chrono::milliseconds(1 + i % 3));
  clock.advance(3ms);
  ASSERT_TRUE(s.wait_idle(kPatience));
  std::lock_guard lock(mu);
  for (auto id : ids) {
    EXPECT_NE(id, std::thread::id{});
    EXPECT_NE(id, std::this_thread::get_id());
  }
}

// A leader waiting for a far deadline is woken by advance(), not by its own timer.
TEST(ManualClock, AdvanceWakesASleepingLeader) {
  for (auto wait : {kairos::WaitPolicy::sleep(), kairos::WaitPolicy::hybrid(50us),
                    kairos::WaitPolicy::spin()}) {
    ManualClock clock;
    kairos::Options o = single_thread();
    o.wait = wait;
    ManualScheduler s(o, clock);
    auto f = s.schedule([] { return 1; }, 1h);
    ASSERT_TRUE(s.wait_idle(kPatience));
    EXPECT_EQ(f.wait_for(5ms), std::future_status::timeout);
    clock.advance(1h);
    EXPECT_EQ(f.wait_for(kPatience), std::future_status::ready) << wait.name();
  }
}

TEST(ManualClock, WaitIdleReturnsOnceEverythingDueHasRun) {
  ManualClock clock;
  std::atomic<int> runs{0};
  ManualScheduler s(kairos_test::threads(1, 3), clock);
  for (int i = 1; i <= 100; ++i)
    s.schedule([&] {
      std::this_thread::yield();
      ++runs;
    }, std::chrono::milliseconds(i));
  ASSERT_TRUE(s.wait_idle(kPatience));
  EXPECT_EQ(runs, 0);
  clock.advance(50ms);
  ASSERT_TRUE(s.wait_idle(kPatience));
  EXPECT_EQ(runs, 50);
  EXPECT_EQ(s.queue_size(), 50u);
  clock.advance(50ms);
  ASSERT_TRUE(s.wait_idle(kPatience));
  EXPECT_EQ(runs, 100);
  EXPECT_EQ(s.queue_size(), 0u);
}

// wait_idle waits for running tasks, and times out in real time while one blocks.
TEST(ManualClock, WaitIdleWaitsForRunningTasks) {
  ManualClock clock;
  Gate gate;
  std::atomic<bool> finished{false};
  ManualScheduler s(single_thread(), clock);
  s.schedule([&] {
    gate.wait();
    finished = true;
  }, 1ms);
  clock.advance(1ms);
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(s.wait_idle(20ms));
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 20ms);
  gate.open();
  ASSERT_TRUE(s.wait_idle(kPatience));
  EXPECT_TRUE(finished);
}

// A due task that is cancelled but retained still counts as "due" until it has left the queue.
TEST(ManualClock, WaitIdleAppliesEarlierCancels) {
  ManualClock clock;
  ManualScheduler s(single_thread(), clock);
  auto f = s.schedule([] {}, 1ms);
  f.cancel();
  clock.advance(1ms);
  ASSERT_TRUE(s.wait_idle(kPatience));
  EXPECT_EQ(s.queue_size(), 0u);
}

// Submissions made just before wait_idle are applied: a due execute() has run when it returns.
TEST(ManualClock, WaitIdleSeesSubmissionsThatReturnedBefore) {
  ManualClock clock;
  std::atomic<int> runs{0};
  ManualScheduler s(kairos_test::threads(2, 1), clock);
  for (int round = 0; round < 200; ++round) {
    s.execute([&] { ++runs; });
    ASSERT_TRUE(s.wait_idle(kPatience));
    ASSERT_EQ(runs, round + 1);
  }
}

TEST(ManualClock, OneClockDrivesSeveralSchedulers) {
  ManualClock clock;
  std::atomic<int> runs{0};
  ManualScheduler a(single_thread(), clock);
  ManualScheduler b(kairos_test::threads(2, 1), clock);
  a.schedule([&] { ++runs; }, 1ms);
  b.schedule([&] { ++runs; }, 1ms);
  clock.advance(1ms);
  ASSERT_TRUE(a.wait_idle(kPatience));
  ASSERT_TRUE(b.wait_idle(kPatience));
  EXPECT_EQ(runs, 2);
}

// A scheduler destroyed before its clock leaves the clock usable.
TEST(ManualClock, OutlivesItsSchedulers) {
  ManualClock clock;
  {
    ManualScheduler s(single_thread(), clock);
    s.schedule([] {}, 1h);
  }
  clock.advance(2h);
  EXPECT_EQ(clock.now(), ManualClock::time_point(2h));
}

// Tells `*gone` when the thread that set it ends: a thread's thread_locals are destroyed after
// the function std::thread ran, so a kairos worker's loop, and its reference to the engine, are
// over by then.
struct ThreadExit {
  std::atomic<bool>* gone = nullptr;
  ~ThreadExit() {
    if (gone) gone->store(true, std::memory_order_release);
  }
};
thread_local ThreadExit t_exit;

// (MC1) A scheduler destroyed from inside its own task returns at once and leaves that task's
// thread detached; the clock is the user's again as soon as the destructor returns. Here it goes
// while the task still runs: the run of a fixed-delay task ends with its next deadline, read
// from the clock after the task returns, which must answer the time of the release rather than
// read the destroyed clock (heap: ASan reports that read).
TEST(ManualClock, MayGoAsSoonAsASchedulerDestroyedFromItsOwnTaskReturns) {
  SKIP_IN_POLL_MODE("~LoopDriven joins its loop thread: it cannot run in a task of that loop");
  auto clock = std::make_unique<ManualClock>();
  auto s = std::make_unique<ManualScheduler>(single_thread(), *clock);
  Gate scheduler_gone, clock_gone;
  std::atomic<bool> thread_gone{false};
  auto f = s->schedule_with_fixed_delay([&] {
    t_exit.gone = &thread_gone;
    s.reset();  // returns without waiting for this task; its thread is detached
    scheduler_gone.open();
    clock_gone.wait();
  }, 1ms, 1ms);
  clock->advance(1ms);
  ASSERT_TRUE(scheduler_gone.wait());
  clock.reset();
  clock_gone.open();
  ASSERT_TRUE(kairos_test::eventually([&] { return thread_gone.load(std::memory_order_acquire); }));
  EXPECT_TRUE(f.is_done());
}

}  // namespace
