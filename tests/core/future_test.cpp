// future_test.cpp: ScheduledFuture<T> of kairos: results, exceptions (same object), cancel,
// wait, wait_for, wait_until, is_done/is_cancelled, delay(), copies, move-only results, life
// after the scheduler.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <latch>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

#include <kairos/kairos.hpp>

#include "support.hpp"

namespace {

using namespace std::chrono_literals;
using kairos::Duration;
using kairos::ManualClock;
using kairos_test::Gate;
using kairos_test::kPatience;
using kairos_test::Manual;
using kairos_test::ManualScheduler;
using kairos_test::single_thread;

struct TaskError {  // deliberately not derived from std::exception
  int code;
};

TEST(Future, GetReturnsTheValue) {
  kairos_test::Scheduler s(single_thread());
  auto a = s.schedule([] { return 41 + 1; }, 1ms);
  auto b = s.submit([] { return std::string("value"); });
  auto c = s.schedule([] {}, 0ms);
  EXPECT_EQ(a.get(), 42);
  EXPECT_EQ(b.get(), "value");
  c.get();
  EXPECT_TRUE(a.is_done());
  EXPECT_FALSE(a.is_cancelled());
  EXPECT_FALSE(a.is_periodic());
  EXPECT_FALSE(a.cancel()) << "cancel() on a completed task must return false";
  EXPECT_FALSE(a.is_cancelled());
  EXPECT_EQ(a.get(), 42);
}

TEST(Future, GetRethrowsTheSameExceptionObject) {
  kairos_test::Scheduler s(single_thread());
  std::exception_ptr thrown;
  std::latch ready(1);
  auto f = s.submit([&]() -> int {
    thrown = std::make_exception_ptr(std::out_of_range("index 7"));
    ready.count_down();
    std::rethrow_exception(thrown);
  });
  ASSERT_EQ(f.wait_for(kPatience), std::future_status::ready);
  ready.wait();
  const void* original = nullptr;
  try {
    std::rethrow_exception(thrown);
  } catch (const std::out_of_range& e) {
    original = &e;
  }
  for (int i = 0; i < 2; ++i) {  // and again: get() is repeatable
    try {
      f.get();
      ADD_FAILURE() << "get() returned normally";
    } catch (const std::out_of_range& e) {
      EXPECT_EQ(static_cast<const void*>(&e), original);
      EXPECT_STREQ(e.what(), "index 7");
    } catch (...) {
      ADD_FAILURE() << "get() changed the exception's type";
    }
  }
  EXPECT_TRUE(f.is_done());
  EXPECT_FALSE(f.is_cancelled());
}

TEST(Future, GetRethrowsANonStandardExceptionUnchanged) {
  kairos_test::Scheduler s(single_thread());
  auto f = s.schedule([]() -> double { throw TaskError{7}; }, 0ms);
  try {
    f.get();
    ADD_FAILURE() << "get() returned normally";
  } catch (const TaskError& e) {
    EXPECT_EQ(e.code, 7);
  } catch (...) {
    ADD_FAILURE() << "get() changed the exception's type";
  }
}

TEST(Future, CancelBeforeStartCompletesAsCancelled) {
  std::atomic<int> runs{0};
  Manual s;
  auto f = s.schedule([&] { ++runs; return 1; }, 10ms);
  auto copy = f;
  EXPECT_FALSE(f.is_done());
  EXPECT_FALSE(f.is_cancelled());
  EXPECT_TRUE(f.cancel());
  EXPECT_TRUE(f.is_done());
  EXPECT_TRUE(copy.is_cancelled());
  EXPECT_FALSE(copy.cancel()) << "a second cancel must return false";
  EXPECT_THROW(f.get(), kairos::CancelledError);
  EXPECT_THROW(copy.get(), kairos::CancelledError);
  EXPECT_EQ(f.wait_for(0ms), std::future_status::ready);
  s.step(10ms);
  EXPECT_EQ(runs, 0);
}

// The handle's own cancel of a pending one-shot task whose callable has nothing to destroy lets
// go of the handle's reference in the cancel's CAS (core/src/shard_cancel.cpp): the handle then
// holds no node, and answers every call as the cancelled task's handle would.
TEST(Future, ItsOwnCancelLetsTheNodeGoAndTheHandleStillAnswersForTheTask) {
  std::atomic<int> runs{0};
  Manual s;
  auto f = s.schedule([&runs] { ++runs; return 7; }, 10ms);
  auto before = f;  // a copy taken before the cancel keeps its own reference to the task
  s.clock.advance(3ms);
  ASSERT_TRUE(f.cancel());
  EXPECT_EQ(kairos::detail::FutureAccess::node(f), nullptr) << "the cancel's CAS did not let the handle's reference go";
  EXPECT_NE(kairos::detail::FutureAccess::node(before), nullptr);
  EXPECT_TRUE(f.valid());
  EXPECT_TRUE(f.is_done());
  EXPECT_TRUE(f.is_cancelled());
  EXPECT_FALSE(f.is_periodic());
  EXPECT_FALSE(f.is_rearmable());
  EXPECT_FALSE(f.cancel()) << "a second cancel must return false";
  EXPECT_FALSE(f.rearm(1ms));
  EXPECT_EQ(f.delay(), 7ms);  // its deadline, kept in the handle
  s.clock.advance(2ms);
  EXPECT_EQ(f.delay(), 5ms);
  EXPECT_EQ(f.wait_for(0ms), std::future_status::ready);
  EXPECT_THROW(f.get(), kairos::CancelledError);
  EXPECT_NO_THROW(f.wait());
  auto after = f;  // copies and moves of the let-go handle answer the same
  auto moved = std::move(after);
  EXPECT_FALSE(after.valid()) << "a moved-from handle is empty";
  EXPECT_THROW(after.get(), std::future_error);
  EXPECT_TRUE(moved.valid());
  EXPECT_TRUE(moved.is_cancelled());
  EXPECT_EQ(moved.delay(), 5ms);
  EXPECT_THROW(moved.get(), kairos::CancelledError);
  EXPECT_TRUE(before.is_cancelled());
  EXPECT_FALSE(before.cancel());
  EXPECT_EQ(before.delay(), 5ms);
  EXPECT_THROW(before.get(), kairos::CancelledError);
  EXPECT_EQ(s.queue_size(), 1u);  // retained until its deadline (remove_on_cancel off)
  s.step(10ms);
  EXPECT_EQ(runs, 0);
  EXPECT_EQ(s.queue_size(), 0u);
  const auto total = s.stats().total();
  EXPECT_EQ(total.ran, 0u);
}

// Where something is left to do on the node after the cancel's CAS, the handle keeps its
// reference: captures to destroy (they go at the cancel, not when the handle goes), a periodic
// or re-armable task, a cancel that loses, a task taken in (kQueued).
TEST(Future, ACancelLetsTheNodeGoOnlyWhenNothingIsLeftToDoOnIt) {
  Manual s;
  auto token = std::make_shared<int>(1);
  auto captured = s.schedule([token] { (void)*token; }, 10ms);
  EXPECT_EQ(token.use_count(), 2);
  ASSERT_TRUE(captured.cancel());
  EXPECT_EQ(token.use_count(), 1) << "the captures go at the cancel";
  EXPECT_NE(kairos::detail::FutureAccess::node(captured), nullptr);
  EXPECT_TRUE(captured.is_cancelled());

  auto periodic = s.schedule_at_fixed_rate([] {}, 10ms, 10ms);
  ASSERT_TRUE(periodic.cancel());
  EXPECT_NE(kairos::detail::FutureAccess::node(periodic), nullptr);
  EXPECT_TRUE(periodic.is_periodic());

  auto rearmable = s.schedule_rearmable([] {}, 10ms);
  ASSERT_TRUE(rearmable.cancel());
  EXPECT_NE(kairos::detail::FutureAccess::node(rearmable), nullptr);
  EXPECT_TRUE(rearmable.is_rearmable());

  auto done = s.schedule([] {}, 1ms);
  s.step(1ms);
  EXPECT_FALSE(done.cancel());
  EXPECT_NE(kairos::detail::FutureAccess::node(done), nullptr);

  auto taken_in = s.schedule([] {}, 10ms);
  (void)s.queue_size();  // drains: the leader takes the task in (kQueued)
  ASSERT_TRUE(taken_in.cancel());
  EXPECT_NE(kairos::detail::FutureAccess::node(taken_in), nullptr);
  EXPECT_TRUE(taken_in.is_cancelled());
}

// co_await on a let-go handle does not suspend: the task is done (cancelled).
TEST(Future, ALetGoHandleIsReadyToAwait) {
  Manual s;
  auto f = s.schedule([] { return 1; }, 10ms);
  ASSERT_TRUE(f.cancel());
  ASSERT_EQ(kairos::detail::FutureAccess::node(f), nullptr);
  auto awaiter = operator co_await(f);
  EXPECT_TRUE(awaiter.await_ready());
  EXPECT_THROW(awaiter.await_resume(), kairos::CancelledError);
}

TEST(Future, WaitForTimesOutThenBecomesReady) {
  Manual s;
  auto f = s.schedule([] { return 5; }, 1h);
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(f.wait_for(20ms), std::future_status::timeout);
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 20ms) << "wait_for returned early";
  EXPECT_EQ(f.wait_for(0ms), std::future_status::timeout);
  EXPECT_EQ(f.wait_for(-5s), std::future_status::timeout);
  EXPECT_FALSE(f.is_done());
  s.clock.advance(1h);
  EXPECT_EQ(f.wait_for(kPatience), std::future_status::ready);
  EXPECT_TRUE(f.is_done());
  EXPECT_EQ(f.get(), 5);
}

// wait_for returns as soon as the task completes, not when the timeout ends.
TEST(Future, WaitForReturnsWhenTheTaskCompletes) {
  kairos_test::Scheduler s(single_thread());
  Gate gate;
  auto f = s.submit([&] { gate.wait(); return 1; });
  std::thread opener([&] {
    std::this_thread::sleep_for(5ms);
    gate.open();
  });
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(f.wait_for(std::chrono::hours(1)), std::future_status::ready);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, kPatience);
  opener.join();
}

// wait() blocks until the task is done, then get() does not block; a cancel releases it too.
TEST(Future, WaitBlocksUntilDoneOnTheManualClock) {
  Manual s;
  auto f = s.schedule([] { return 7; }, 10ms);
  auto g = s.schedule([] { return 8; }, 1h);
  std::atomic<bool> f_waited{false}, g_waited{false};
  std::thread waiter_f([&] { f.wait(); f_waited.store(true); });
  std::thread waiter_g([&] { g.wait(); g_waited.store(true); });
  s.step(9ms);
  EXPECT_FALSE(f_waited.load()) << "wait() returned before the task ran";
  s.clock.advance(1ms);
  waiter_f.join();
  EXPECT_TRUE(f_waited.load());
  EXPECT_TRUE(f.is_done());
  EXPECT_EQ(f.get(), 7);
  EXPECT_FALSE(g_waited.load());
  ASSERT_TRUE(g.cancel());
  waiter_g.join();
  EXPECT_TRUE(g.is_cancelled());
  f.wait();  // done: returns at once, as often as asked
  EXPECT_THROW(kairos::ScheduledFuture<int>{}.wait(), std::future_error);
}

// wait_until: never returns before its deadline unless the task is done; a steady_clock deadline
// (SteadyClock's time point) and a system_clock one; a passed deadline does not wait.
TEST(Future, WaitUntilTimesOutAtItsDeadlineThenBecomesReady) {
  Manual s;
  auto f = s.schedule([] { return 5; }, 1h);
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(f.wait_until(kairos::SteadyClock::now() + 20ms), std::future_status::timeout);
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 20ms) << "wait_until(steady) returned early";
  auto t1 = std::chrono::system_clock::now();
  EXPECT_EQ(f.wait_until(t1 + 20ms), std::future_status::timeout);
  EXPECT_GE(std::chrono::system_clock::now() - t1, 20ms) << "wait_until(system) returned early";
  EXPECT_EQ(f.wait_until(std::chrono::steady_clock::now() - 1s), std::future_status::timeout);
  EXPECT_EQ(f.wait_until(std::chrono::steady_clock::time_point::min()), std::future_status::timeout);
  EXPECT_EQ(f.wait_until(std::chrono::system_clock::now() - 1s), std::future_status::timeout);
  EXPECT_FALSE(f.is_done());
  s.clock.advance(1h);
  EXPECT_EQ(f.wait_until(std::chrono::steady_clock::now() + kPatience), std::future_status::ready);
  EXPECT_EQ(f.wait_until(std::chrono::steady_clock::now() - 1s), std::future_status::ready);
  EXPECT_EQ(f.wait_until(std::chrono::system_clock::now() - 1s), std::future_status::ready);
  EXPECT_EQ(f.get(), 5);
}

// wait_until returns as soon as the task completes, long before a far deadline.
TEST(Future, WaitUntilReturnsWhenTheTaskCompletes) {
  Manual s;
  auto f = s.schedule([] { return 1; }, 5ms);
  auto g = s.schedule([] { return 2; }, 5ms);
  std::thread advancer([&] {
    std::this_thread::sleep_for(5ms);
    s.clock.advance(5ms);
  });
  EXPECT_EQ(f.wait_until(std::chrono::steady_clock::now() + std::chrono::hours(1)), std::future_status::ready);
  EXPECT_EQ(g.wait_until(std::chrono::system_clock::now() + std::chrono::hours(1)), std::future_status::ready);
  advancer.join();
  EXPECT_EQ(f.get() + g.get(), 3);
}

// A far deadline on a coarse clock (its max() overflows nanoseconds) is no deadline at all:
// wait_until waits for the task, as every other time arithmetic of kairos saturates.
TEST(Future, WaitUntilAFarCoarseTimePointWaitsForTheTask) {
  Manual s;
  auto f = s.schedule([] { return 1; }, 5ms);
  std::thread advancer([&] {
    std::this_thread::sleep_for(5ms);
    s.clock.advance(5ms);
  });
  using namespace std::chrono;
  EXPECT_EQ(f.wait_until(time_point<system_clock, seconds>::max()), std::future_status::ready);
  EXPECT_EQ(f.wait_until(time_point<system_clock, hours>::max()), std::future_status::ready);
  EXPECT_EQ(f.wait_until(time_point<steady_clock, hours>::max()), std::future_status::ready);
  advancer.join();
  EXPECT_EQ(f.get(), 1);
  EXPECT_EQ(f.wait_until(time_point<system_clock, seconds>::min()), std::future_status::ready);
  auto g = s.schedule([] { return 2; }, 1h);
  EXPECT_EQ(g.wait_until(time_point<system_clock, seconds>::min()), std::future_status::timeout);
  EXPECT_EQ(g.wait_until(time_point<system_clock, hours>::min()), std::future_status::timeout);
}

TEST(Future, DelayCountsDownOnTheManualClock) {
  Manual s;
  auto f = s.schedule([] {}, 10ms);
  EXPECT_EQ(f.delay(), 10ms);
  s.clock.advance(4ms);
  EXPECT_EQ(f.delay(), 6ms);
  s.clock.advance(6ms);
  EXPECT_LE(f.delay(), Duration::zero());
  ASSERT_TRUE(s.wait_idle(kPatience));
  s.clock.advance(5ms);
  EXPECT_LE(f.delay(), Duration::zero());
}

TEST(Future, DelayOnTheSteadyClock) {
  kairos_test::Scheduler s(single_thread());
  auto f = s.schedule([] {}, 1h);
  EXPECT_GT(f.delay(), 59min);
  EXPECT_LE(f.delay(), 1h);
  auto g = s.submit([] {});
  g.get();
  EXPECT_LE(g.delay(), Duration::zero());
}

TEST(Future, GetIsRepeatableOnCopies) {
  kairos_test::Scheduler s(single_thread());
  auto f = s.submit([] { return std::string("shared"); });
  auto copy1 = f;
  kairos::ScheduledFuture<std::string> copy2;
  copy2 = copy1;
  EXPECT_EQ(f.get(), "shared");
  EXPECT_EQ(copy1.get(), "shared");
  EXPECT_EQ(copy2.get(), "shared");
  EXPECT_EQ(f.get(), "shared");
}

TEST(Future, MoveOnlyResultIsMovedOutOnce) {
  kairos_test::Scheduler s(single_thread());
  auto f = s.submit([] { return std::make_unique<int>(7); });
  auto copy = f;
  std::unique_ptr<int> p = f.get();
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(*p, 7);
  EXPECT_THROW(f.get(), std::future_error);
  EXPECT_THROW(copy.get(), std::future_error);
  EXPECT_TRUE(copy.is_done());
}

TEST(Future, ManyWaitersAreReleasedTogether) {
  Manual s(kairos_test::threads(1, 2));
  auto f = s.schedule([] { return 9; }, 1ms);
  std::atomic<int> sum{0};
  std::vector<std::thread> waiters;
  for (int i = 0; i < 4; ++i) waiters.emplace_back([&, g = f]() mutable { sum += g.get(); });
  s.clock.advance(1ms);
  for (auto& t : waiters) t.join();
  EXPECT_EQ(sum, 36);
}

TEST(Future, CancelReleasesABlockedGet) {
  Manual s;
  auto f = s.schedule([] { return 1; }, 1h);
  std::atomic<bool> cancelled_seen{false};
  std::thread waiter([&, g = f]() mutable {
    try {
      g.get();
    } catch (const kairos::CancelledError&) {
      cancelled_seen = true;
    }
  });
  EXPECT_TRUE(f.cancel());
  waiter.join();
  EXPECT_TRUE(cancelled_seen);
}

TEST(Future, OutlivesTheScheduler) {
  kairos::ScheduledFuture<int> done, pending;
  kairos::ScheduledFuture<std::string> text;
  {
    kairos_test::Scheduler s(single_thread());
    done = s.submit([] { return 3; });
    text = s.submit([] { return std::string("kept"); });
    ASSERT_EQ(done.wait_for(kPatience), std::future_status::ready);
    ASSERT_EQ(text.wait_for(kPatience), std::future_status::ready);
    pending = s.schedule([] { return 4; }, 1h);
  }
  EXPECT_EQ(done.get(), 3);
  EXPECT_EQ(text.get(), "kept");
  EXPECT_TRUE(pending.is_done());
  EXPECT_TRUE(pending.is_cancelled());
  EXPECT_THROW(pending.get(), kairos::CancelledError);
  EXPECT_FALSE(pending.cancel());
  (void)pending.delay();
  // A default-constructed future has no task at all.
  kairos::ScheduledFuture<int> empty;
  EXPECT_THROW(empty.get(), std::future_error);
  EXPECT_FALSE(empty.cancel());
  EXPECT_FALSE(empty.is_done());
}

TEST(Future, PeriodicAndManualFuturesOutliveTheScheduler) {
  kairos::ScheduledFuture<void> periodic;
  kairos::ScheduledFuture<int> one_shot;
  {
    Manual s;
    periodic = s.schedule_with_fixed_delay([] {}, 1ms, 1ms);
    one_shot = s.schedule([] { return 1; }, 1h);
    s.step(3ms);
  }
  EXPECT_TRUE(periodic.is_cancelled());
  EXPECT_THROW(periodic.get(), kairos::CancelledError);
  EXPECT_TRUE(one_shot.is_cancelled());
  EXPECT_THROW(one_shot.get(), kairos::CancelledError);
  EXPECT_LE(one_shot.delay(), 1h);
}

}  // namespace
