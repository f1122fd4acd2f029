// java_parity_test.cpp: the ThreadPoolExecutor surface kairos takes from Java: purge(), the
// counters (getActiveCount, getCompletedTaskCount, getTaskCount, getPoolSize,
// getLargestPoolSize), invokeAll/invokeAny with and without timeout, and Java 19's close().
// JAVA-SEMANTICS.md items 40, 44, 45; the JDK's SET/SEST testPurge, testGetTaskCount,
// testGetCompletedTaskCount, testGetActiveCount, testGetPoolSize, testGetLargestPoolSize,
// testInvokeAll*, testInvokeAny*, testTimedInvokeAll*, testTimedInvokeAny*, testClose.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include <kairos/kairos.hpp>

#include "support.hpp"

namespace {

using namespace std::chrono_literals;
using kairos::ManualClock;
using kairos_test::eventually;
using kairos_test::Gate;
using kairos_test::kPatience;
using kairos_test::Manual;
using kairos_test::ManualScheduler;
using kairos_test::single_thread;

// ---- purge ------------------------------------------------------------------------------------------

TEST(Purge, RemovesTheRetainedCancelledTasksAndReturnsHowMany) {
  Manual s;  // remove-on-cancel off: cancelled tasks stay
  std::vector<kairos::ScheduledFuture<void>> fs;
  for (int i = 0; i < 10; ++i) fs.push_back(s.schedule([] {}, std::chrono::seconds(1 + i)));
  for (int i = 0; i < 10; i += 2) EXPECT_TRUE(fs[static_cast<std::size_t>(i)].cancel());
  EXPECT_EQ(s.queue_size(), 10u);
  EXPECT_EQ(s.task_count(), 10u);
  EXPECT_EQ(s.purge(), 5u);
  EXPECT_EQ(s.queue_size(), 5u);
  EXPECT_EQ(s.task_count(), 5u);
  EXPECT_EQ(s.purge(), 0u);
  for (int i = 1; i < 10; i += 2) EXPECT_FALSE(fs[static_cast<std::size_t>(i)].is_done());
  s.clock.advance(10s);
  for (int i = 1; i < 10; i += 2) fs[static_cast<std::size_t>(i)].get();
  EXPECT_EQ(s.stats().total().cancelled, 5u);  // each counted once
  EXPECT_EQ(s.queue_size(), 0u);
}

TEST(Purge, AfterShutdownThePurgeOfTheLastTasksLetsTheSchedulerTerminate) {
  Manual s;
  auto keep = s.schedule([] {}, 1h);
  auto f = s.schedule([] {}, 2h);
  f.cancel();
  EXPECT_EQ(s.purge(), 1u);
  EXPECT_EQ(s.queue_size(), 1u);
  keep.cancel();
  s.set_remove_on_cancel(true);  // not retroactive: `keep` stays retained
  EXPECT_EQ(s.queue_size(), 1u);
  EXPECT_EQ(s.purge(), 1u);
  EXPECT_EQ(s.queue_size(), 0u);
}

// ---- counters -----------------------------------------------------------------------------------

TEST(Counters, PoolSizesAreTheWholePoolUntilItExits) {
  SKIP_IN_POLL_MODE("no pool: pool_size is 0 (poll_test)");
  kairos_test::Scheduler s(kairos_test::threads(2, 3));
  EXPECT_EQ(s.pool_size(), 6u);
  EXPECT_EQ(s.largest_pool_size(), 6u);
  EXPECT_EQ(s.active_count(), 0u);
  s.shutdown();
  ASSERT_TRUE(s.await_termination(kPatience));
  EXPECT_EQ(s.pool_size(), 0u);  // Java: 0 from TIDYING on
  EXPECT_EQ(s.largest_pool_size(), 6u);
}

TEST(Counters, ActiveCompletedAndTaskCountFollowJavasDefinitions) {
  Manual s(kairos_test::threads(1, 2));
  EXPECT_EQ(s.task_count(), 0u);
  EXPECT_EQ(s.completed_task_count(), 0u);
  Gate gate;
  std::atomic<bool> started{false};
  auto blocked = s.submit([&] {
    started = true;
    return gate.wait();
  });
  auto later = s.schedule([] {}, 1s);
  ASSERT_TRUE(eventually([&] { return started.load(); }));
  EXPECT_EQ(s.active_count(), 1u);
  EXPECT_EQ(s.task_count(), 2u);  // one active, one queued
  EXPECT_EQ(s.completed_task_count(), 0u);
  gate.open();
  EXPECT_TRUE(blocked.get());
  s.clock.advance(1s);
  later.get();
  ASSERT_TRUE(s.wait_idle(kPatience));
  EXPECT_EQ(s.active_count(), 0u);
  EXPECT_EQ(s.completed_task_count(), 2u);
  EXPECT_EQ(s.task_count(), 2u);
  // Every periodic run counts as one completed task; the task itself stays queued (one).
  std::atomic<int> runs{0};
  auto per = s.schedule_at_fixed_rate([&] { ++runs; }, 1s, 1s);
  for (int i = 0; i < 3; ++i) {
    s.step(1s);
  }
  EXPECT_EQ(runs.load(), 3);
  EXPECT_EQ(s.completed_task_count(), 5u);
  EXPECT_EQ(s.task_count(), 6u);
  // A cancelled task still retained counts in task_count, as in Java.
  auto c = s.schedule([] {}, 1h);
  c.cancel();
  EXPECT_EQ(s.task_count(), 7u);
  per.cancel();
}

// ---- invoke_all -----------------------------------------------------------------------------------

TEST(InvokeAll, ReturnsEveryFutureDoneInOrder) {
  kairos_test::Scheduler s(kairos_test::threads(1, 2));
  std::vector<std::function<int()>> tasks;
  for (int i = 0; i < 5; ++i) tasks.emplace_back([i] { return i * i; });
  tasks.emplace_back([]() -> int { throw std::runtime_error("bad"); });
  auto fs = s.invoke_all(tasks);
  ASSERT_EQ(fs.size(), 6u);
  for (auto& f : fs) EXPECT_TRUE(f.is_done());
  for (int i = 0; i < 5; ++i) EXPECT_EQ(fs[static_cast<std::size_t>(i)].get(), i * i);
  EXPECT_THROW(fs[5].get(), std::runtime_error);
  EXPECT_TRUE(s.invoke_all(std::vector<std::function<int()>>{}).empty());
}

TEST(InvokeAll, TimedCancelsWhatIsNotDoneAtTheTimeout) {
  kairos_test::Scheduler s(kairos_test::threads(1, 2));
  std::vector<std::function<int(std::stop_token)>> tasks;
  tasks.emplace_back([](std::stop_token) { return 1; });
  tasks.emplace_back([](std::stop_token st) {
    while (!st.stop_requested()) std::this_thread::yield();  // ends when asked to stop
    return 2;
  });
  auto fs = s.invoke_all(std::move(tasks), 50ms);
  ASSERT_EQ(fs.size(), 2u);
  EXPECT_EQ(fs[0].get(), 1);
  EXPECT_TRUE(fs[1].is_cancelled());
  s.shutdown();
  EXPECT_TRUE(s.await_termination(kPatience));  // the running one was asked to stop
}

TEST(InvokeAll, ARejectedSubmissionCancelsTheOthersAndThrows) {
  kairos::Options o = single_thread();
  o.capacity = 1;
  Manual s(o);
  auto blocker = s.schedule([] {}, 1h);  // the shard is full
  std::vector<std::function<void()>> tasks{[] {}, [] {}};
  EXPECT_THROW(s.invoke_all(tasks), kairos::RejectedExecution);
  blocker.cancel();
}

// ---- invoke_any -----------------------------------------------------------------------------------

TEST(InvokeAny, ReturnsTheFirstNormalResultAndCancelsTheRest) {
  SKIP_IN_POLL_MODE("two tasks running at once need two threads");
  kairos_test::Scheduler s(kairos_test::threads(1, 2));
  auto stopped = std::make_shared<std::atomic<bool>>(false);
  auto started = std::make_shared<std::atomic<bool>>(false);
  std::vector<std::function<int(std::stop_token)>> tasks;
  tasks.emplace_back([](std::stop_token) -> int { throw std::runtime_error("first fails"); });
  // The winner returns only once the third task runs (on the other thread), so that the cancel
  // that follows the win finds it running and must request its stop.
  tasks.emplace_back([started](std::stop_token) {
    while (!started->load()) std::this_thread::yield();
    return 7;
  });
  tasks.emplace_back([stopped, started](std::stop_token st) {
    started->store(true);
    while (!st.stop_requested()) std::this_thread::yield();
    *stopped = true;
    return 9;
  });
  EXPECT_EQ(s.invoke_any(std::move(tasks)), 7);
  ASSERT_TRUE(eventually([&] { return stopped->load(); }));  // cancel(true) asked it to stop
}

TEST(InvokeAny, AllFailingThrowsTheLastFailure) {
  Manual s;  // one thread: the tasks run in order
  std::vector<std::function<int()>> tasks;
  for (int i = 0; i < 3; ++i)
    tasks.emplace_back([i]() -> int { throw std::runtime_error("fail " + std::to_string(i)); });
  try {
    s.invoke_any(tasks);
    FAIL() << "returned";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "fail 2");
  }
  EXPECT_THROW(s.invoke_any(std::vector<std::function<int()>>{}), std::invalid_argument);
}

TEST(InvokeAny, VoidTasksAndTasksThatNeverRunDoNotHang) {
  kairos_test::Scheduler s(single_thread());
  std::atomic<int> ran{0};
  std::vector<std::function<void()>> tasks{[&] { ++ran; }};
  s.invoke_any(tasks);
  EXPECT_EQ(ran.load(), 1);
  // Discarded after shutdown: each task counts as failed (cancelled) instead of hanging.
  kairos::Options o = single_thread();
  o.rejection = kairos::Rejection::discard;
  kairos_test::Scheduler d(o);
  d.shutdown();
  EXPECT_THROW(d.invoke_any(tasks), kairos::CancelledError);
}

TEST(InvokeAny, TimedThrowsTimeoutErrorAndCancelsEverything) {
  Manual s;
  std::vector<std::function<int(std::stop_token)>> tasks;
  tasks.emplace_back([](std::stop_token st) {
    while (!st.stop_requested()) std::this_thread::yield();
    return 1;
  });
  tasks.emplace_back([](std::stop_token) { return 2; });  // behind the first: never starts
  EXPECT_THROW(s.invoke_any(std::move(tasks), 30ms), kairos::TimeoutError);
  ASSERT_TRUE(s.wait_idle(kPatience));
  EXPECT_EQ(s.queue_size(), 0u);
  // In time: the result.
  std::vector<std::function<int()>> quick{[] { return 3; }};
  EXPECT_EQ(s.invoke_any(quick, kPatience), 3);
}

// ---- close ------------------------------------------------------------------------------------------

TEST(Close, ShutsDownAndWaitsForTheTasksThePoliciesKeep) {
  kairos_test::Scheduler s(single_thread());
  std::atomic<bool> ran{false};
  auto f = s.schedule([&] { ran = true; }, 20ms);  // delayed tasks run after shutdown by default
  s.close();
  EXPECT_TRUE(ran.load());
  EXPECT_TRUE(f.is_done());
  EXPECT_TRUE(s.is_terminated());
  s.close();  // terminated: nothing
  EXPECT_THROW(s.submit([] {}), kairos::RejectedExecution);
}

TEST(Close, FromInsideItsOwnTaskShutsDownAndReturnsWithoutWaiting) {
  kairos_test::Scheduler s(single_thread());
  auto f = s.submit([&] {
    s.close();  // would wait for this very task: returns after shutdown()
    return s.is_shutdown() && !s.is_terminated();
  });
  EXPECT_TRUE(f.get());
  EXPECT_TRUE(s.await_termination(kPatience));
}

}  // namespace
