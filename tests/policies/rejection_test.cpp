// rejection_test.cpp: policies/kairos/rejection.hpp, what each kairos Rejection policy does over
// `capacity` and after shutdown(): abort throws, caller_runs runs in the caller, discard cancels
// the new task, discard_oldest cancels the earliest-deadline queued task.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include <kairos/kairos.hpp>

#include "support.hpp"

namespace {

using namespace std::chrono_literals;
using kairos::Rejection;
using kairos_test::kPatience;
using kairos_test::Manual;
using kairos_test::Recorder;

kairos::Options bounded(Rejection r, std::size_t capacity) {
  kairos::Options o = kairos_test::single_thread();
  o.rejection = r;
  o.capacity = capacity;
  return o;
}

// ---- abort --------------------------------------------------------------------------------

TEST(Rejection, AbortThrowsOverCapacity) {
  std::atomic<int> runs{0};
  Manual s(bounded(Rejection::abort, 2));
  s.schedule([&] { ++runs; }, 1h);
  s.schedule([&] { ++runs; }, 2h);
  EXPECT_THROW(s.schedule([&] { ++runs; }, 1ms), kairos::RejectedExecution);
  EXPECT_THROW(s.execute([&] { ++runs; }), kairos::RejectedExecution);
  EXPECT_THROW(s.submit([&] { ++runs; }), kairos::RejectedExecution);
  EXPECT_THROW(s.schedule_at_fixed_rate([&] { ++runs; }, 1ms, 1ms), kairos::RejectedExecution);
  EXPECT_THROW(s.schedule_with_fixed_delay([&] { ++runs; }, 1ms, 1ms), kairos::RejectedExecution);
  EXPECT_EQ(s.queue_size(), 2u);
  s.step(10ms);
  EXPECT_EQ(runs, 0);
}

// Room frees up when a task runs; a periodic re-queue is never rejected.
TEST(Rejection, CapacityCountsPendingTasksOnly) {
  std::atomic<int> runs{0};
  Manual s(bounded(Rejection::abort, 1));
  s.schedule([&] { ++runs; }, 1ms);
  EXPECT_THROW(s.schedule([] {}, 1ms), kairos::RejectedExecution);
  s.step(1ms);
  EXPECT_EQ(runs, 1);
  auto p = s.schedule_at_fixed_rate([&] { ++runs; }, 1ms, 1ms);
  s.step(5ms);
  EXPECT_EQ(runs, 6);
  EXPECT_FALSE(p.is_done());
  EXPECT_THROW(s.schedule([] {}, 1ms), kairos::RejectedExecution);
}

// A cancelled task retained in the queue still takes its place; removed, it frees it.
// A cancelled task is retained (and counted) until its deadline passes, unless remove_on_cancel
// was on when it was cancelled: turning the policy on later is not retroactive.
TEST(Rejection, CancelledButRetainedTasksCount) {
  Manual s(bounded(Rejection::abort, 2));
  auto a = s.schedule([] {}, 1h);
  s.schedule([] {}, 1h);
  EXPECT_TRUE(a.cancel());
  EXPECT_THROW(s.schedule([] {}, 1h), kairos::RejectedExecution) << "retained until its deadline";
  EXPECT_EQ(s.queue_size(), 2u);
  s.set_remove_on_cancel(true);
  EXPECT_THROW(s.schedule([] {}, 1h), kairos::RejectedExecution) << "the policy is not retroactive";
  s.step(1h);  // both deadlines pass: a leaves the queue, the other runs
  EXPECT_EQ(s.queue_size(), 0u);
  auto b = s.schedule([] {}, 1h);
  EXPECT_TRUE(b.cancel());
  EXPECT_EQ(s.queue_size(), 0u) << "removed at once under remove_on_cancel";
  auto c = s.schedule([] {}, 1h);
  auto d = s.schedule([] {}, 1h);
  EXPECT_FALSE(c.is_done());
  EXPECT_FALSE(d.is_done());
}

TEST(Rejection, RemoveOnCancelFreesRoom) {
  kairos::Options o = bounded(Rejection::abort, 2);
  o.remove_on_cancel = true;
  Manual s(o);
  auto a = s.schedule([] {}, 1h);
  s.schedule([] {}, 1h);
  EXPECT_TRUE(a.cancel());
  EXPECT_NO_THROW(s.schedule([] {}, 1h));
  EXPECT_EQ(s.queue_size(), 2u);
}

// ---- caller_runs ----------------------------------------------------------------------------

TEST(Rejection, CallerRunsRunsInTheCallerAtOnce) {
  Manual s(bounded(Rejection::caller_runs, 1));
  s.schedule([] {}, 1h);
  std::thread::id ran_on;
  auto f = s.schedule([&] { ran_on = std::this_thread::get_id(); return 5; }, 1h);
  EXPECT_EQ(ran_on, std::this_thread::get_id());
  EXPECT_TRUE(f.is_done());
  EXPECT_EQ(f.get(), 5);
  std::thread::id executed_on;
  s.execute([&] { executed_on = std::this_thread::get_id(); });
  EXPECT_EQ(executed_on, std::this_thread::get_id());
  auto g = s.submit([]() -> int { throw 3; });
  EXPECT_TRUE(g.is_done());
  EXPECT_THROW(g.get(), int);
  EXPECT_EQ(s.queue_size(), 1u);
}

// Over capacity, a periodic task's first run happens in the caller; later runs are scheduled.
TEST(Rejection, CallerRunsPeriodicFirstRunThenScheduled) {
  std::vector<std::thread::id> ran_on;
  std::mutex mu;
  Manual s(bounded(Rejection::caller_runs, 1));
  s.schedule([] {}, 100h);
  auto p = s.schedule_at_fixed_rate(
      [&] {
        std::lock_guard lock(mu);
        ran_on.push_back(std::this_thread::get_id());
      },
      1h, 1h);
  {
    std::lock_guard lock(mu);
    ASSERT_EQ(ran_on.size(), 1u);
    EXPECT_EQ(ran_on[0], std::this_thread::get_id());
  }
  EXPECT_FALSE(p.is_done());
  s.step(2h);
  std::lock_guard lock(mu);
  ASSERT_GE(ran_on.size(), 2u);
  EXPECT_NE(ran_on[1], std::this_thread::get_id());
}

TEST(Rejection, CallerRunsDiscardsAfterShutdown) {
  std::atomic<int> runs{0};
  Manual s(bounded(Rejection::caller_runs, 0));
  s.shutdown();
  auto f = s.schedule([&] { ++runs; return 1; }, 0ms);
  s.execute([&] { ++runs; });
  auto p = s.schedule_with_fixed_delay([&] { ++runs; }, 0ms, 1ms);
  EXPECT_EQ(runs, 0);
  EXPECT_TRUE(f.is_cancelled());
  EXPECT_TRUE(p.is_cancelled());
  EXPECT_THROW(f.get(), kairos::CancelledError);
  ASSERT_TRUE(s.await_termination(kPatience));
  EXPECT_EQ(runs, 0);
}

// ---- discard --------------------------------------------------------------------------------

TEST(Rejection, DiscardCancelsTheNewTaskAtOnce) {
  std::atomic<int> runs{0};
  Manual s(bounded(Rejection::discard, 2));
  auto a = s.schedule([&] { ++runs; }, 1ms);
  auto b = s.schedule([&] { ++runs; }, 2ms);
  auto c = s.schedule([&] { ++runs; return 0; }, 1ns);
  EXPECT_TRUE(c.is_done());
  EXPECT_TRUE(c.is_cancelled());
  EXPECT_THROW(c.get(), kairos::CancelledError);
  s.execute([&] { runs += 100; });
  auto p = s.schedule_at_fixed_rate([&] { runs += 1000; }, 1ms, 1ms);
  EXPECT_TRUE(p.is_cancelled());
  EXPECT_EQ(s.queue_size(), 2u);
  s.step(5ms);
  EXPECT_EQ(runs, 2);
  EXPECT_FALSE(a.is_cancelled());
  EXPECT_FALSE(b.is_cancelled());
}

TEST(Rejection, DiscardAfterShutdown) {
  Manual s(bounded(Rejection::discard, 0));
  s.shutdown();
  auto f = s.submit([] { return 1; });
  EXPECT_TRUE(f.is_cancelled());
  EXPECT_NO_THROW(s.execute([] {}));
  ASSERT_TRUE(s.await_termination(kPatience));
}

// ---- discard_oldest -----------------------------------------------------------------------

TEST(Rejection, DiscardOldestCancelsTheEarliestDeadline) {
  Recorder order;
  Manual s(bounded(Rejection::discard_oldest, 2));
  auto b = s.schedule([&] { order.add(2); }, 20ms);
  auto a = s.schedule([&] { order.add(1); }, 10ms);  // submitted later, due earlier
  auto c = s.schedule([&] { order.add(3); }, 30ms);
  EXPECT_TRUE(a.is_cancelled());
  EXPECT_FALSE(b.is_done());
  EXPECT_FALSE(c.is_done());
  EXPECT_EQ(s.queue_size(), 2u);
  // The new task may itself be the earliest: the oldest queued one still makes room.
  auto d = s.schedule([&] { order.add(4); }, 1ms);
  EXPECT_TRUE(b.is_cancelled());
  EXPECT_FALSE(d.is_cancelled());
  EXPECT_EQ(s.queue_size(), 2u);
  s.step(30ms);
  EXPECT_EQ(order.ids(), (std::vector<int>{4, 3}));
  EXPECT_THROW(a.get(), kairos::CancelledError);
}

TEST(Rejection, DiscardOldestAfterShutdownDiscardsTheNewTask) {
  std::atomic<int> runs{0};
  Manual s(bounded(Rejection::discard_oldest, 2));
  auto a = s.schedule([&] { ++runs; }, 10ms);
  s.shutdown();
  auto b = s.schedule([&] { ++runs; }, 1ms);
  EXPECT_TRUE(b.is_cancelled());
  EXPECT_FALSE(a.is_cancelled());
  s.clock.advance(10ms);
  ASSERT_TRUE(s.await_termination(kPatience));
  EXPECT_EQ(runs, 1);
}

TEST(Rejection, AbortAfterShutdownWithoutCapacity) {
  Manual s(bounded(Rejection::abort, 0));
  s.shutdown();
  EXPECT_THROW(s.submit([] { return 1; }), kairos::RejectedExecution);
}

// Capacity bounds each shard: with one shard it bounds queue_size() exactly, also against
// several submitting threads.
TEST(Rejection, CapacityHoldsUnderConcurrentSubmission) {
  Manual s(bounded(Rejection::discard, 100));
  std::atomic<int> accepted{0};
  std::vector<std::thread> producers;
  for (int t = 0; t < 4; ++t)
    producers.emplace_back([&] {
      for (int i = 0; i < 200; ++i)
        if (!s.schedule([] {}, 1h).is_cancelled()) ++accepted;
    });
  for (auto& t : producers) t.join();
  EXPECT_EQ(accepted, 100);
  EXPECT_EQ(s.queue_size(), 100u);
}

}  // namespace
