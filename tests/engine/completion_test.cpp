// The one completion and one run's rules (core/src/completion.hpp), on bare task nodes: what
// complete() does with the callable, run_once's one-shot / fixed-rate / fixed-delay / overflow
// rules, and the checked precondition "no kairos lock held".
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <limits>
#include <memory>
#include <stdexcept>

#include <kairos/detail/task.hpp>

#include "completion.hpp"
#include "thread_annotations.hpp"

namespace kairos::detail {
namespace {

constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();

std::uint32_t state_of(const TaskBase* t) { return t->state.load() & kStateMask; }

bool invoke(TaskBase* t) { return t->ops->invoke(t); }

// A callable whose captures show whether it is still alive (use_count 2) or gone (1).
struct Capture {
  std::shared_ptr<int> alive;
  bool throws = false;
  void operator()() const {
    if (throws) throw std::runtime_error("the run failed");
  }
};

template <bool Periodic>
auto* node_of(const std::shared_ptr<int>& alive, bool throws = false, std::uint8_t flags = 0,
             std::uint32_t refs = 1) {
  return make_node<Periodic>(Capture{alive, throws}, flags, refs);
}

struct Reports {
  int uncaught = 0;
  std::function<void(std::exception_ptr)> handler = [this](std::exception_ptr) { ++uncaught; };
  std::atomic<std::uint64_t> failures{0};
  RunContext context() { return {&handler, &failures}; }
};

TEST(Completion, CompleteWinsFromItsStateOnlyAndDropsALiveCallable) {
  auto alive = std::make_shared<int>(0);
  auto* t = node_of<false>(alive);
  EXPECT_FALSE(complete(t, kRunning, kCancelled));  // not running: nothing happens
  EXPECT_EQ(state_of(t), kPending);
  EXPECT_EQ(alive.use_count(), 2);
  EXPECT_TRUE(complete(t, kPending, kCancelled));
  EXPECT_EQ(state_of(t), kCancelled);
  EXPECT_EQ(alive.use_count(), 1);  // the winner's: gone with the completion
  EXPECT_FALSE(complete(t, kPending, kCancelled));  // one winner
  release(t);
}

TEST(Completion, AOneShotRunCompletesItsFutureUnlessNobodyHoldsOne) {
  auto alive = std::make_shared<int>(0);
  Reports r;
  auto* held = node_of<false>(alive, false, 0, 2);  // the runner's and a future's
  ASSERT_TRUE(transition(held, kPending, kRunning));
  RunResult res = run_once(held, [&] { return invoke(held); }, true, [] { return std::int64_t{0}; }, r.context());
  EXPECT_TRUE(res.ok);
  EXPECT_FALSE(res.again);
  EXPECT_EQ(state_of(held), kNormal);
  release(held);
  release(held);

  auto* alone = node_of<false>(alive);  // execute(), or the future dropped: no CAS
  ASSERT_TRUE(transition(alone, kPending, kRunning));
  res = run_once(alone, [&] { return invoke(alone); }, true, [] { return std::int64_t{0}; }, r.context());
  EXPECT_TRUE(res.ok);
  EXPECT_EQ(state_of(alone), kRunning);
  EXPECT_EQ(alive.use_count(), 1);  // a one-shot callable goes with its run
  release(alone);
  EXPECT_EQ(r.uncaught, 0);
}

TEST(Completion, AOneShotFailureReachesOnUncaughtOnlyWithoutAFuture) {
  auto alive = std::make_shared<int>(0);
  Reports r;
  auto* with_future = node_of<false>(alive, true);
  ASSERT_TRUE(transition(with_future, kPending, kRunning));
  EXPECT_FALSE(run_once(with_future, [&] { return invoke(with_future); }, true, [] { return std::int64_t{0}; }, r.context()).ok);
  EXPECT_EQ(state_of(with_future), kExceptional);
  EXPECT_EQ(r.uncaught, 0);  // its get() rethrows it
  release(with_future);

  auto* executed = node_of<false>(alive, true, kNoFuture);
  ASSERT_TRUE(transition(executed, kPending, kRunning));
  (void)run_once(executed, [&] { return invoke(executed); }, true, [] { return std::int64_t{0}; }, r.context());
  EXPECT_EQ(state_of(executed), kExceptional);
  EXPECT_EQ(r.uncaught, 1);
  EXPECT_EQ(r.failures.load(), 0u);  // a one-shot failure is not a periodic one
  release(executed);
}

TEST(Completion, FixedRateAddsThePeriodToTheDeadlineItRanFor) {
  auto alive = std::make_shared<int>(0);
  Reports r;
  auto* t = node_of<true>(alive);
  t->deadline = 1000;
  static_cast<PeriodicBase*>(t)->period = 10;
  ASSERT_TRUE(transition(t, kPending, kRunning));
  int clock_reads = 0;
  RunResult res = run_once(t, [&] { return invoke(t); }, true, [&] { ++clock_reads; return std::int64_t{5000}; }, r.context());
  EXPECT_TRUE(res.again);
  EXPECT_EQ(state_of(t), kRunning);  // its runner re-queues it
  EXPECT_EQ(t->deadline, 1010);
  EXPECT_EQ(t->never, 0);
  EXPECT_EQ(clock_reads, 0);  // fixed rate reads no clock
  EXPECT_EQ(alive.use_count(), 2);  // kept for the next run
  release(t);
}

TEST(Completion, FixedDelayAddsThePeriodToTheEndOfTheRun) {
  auto alive = std::make_shared<int>(0);
  Reports r;
  auto* t = node_of<true>(alive, false, kFixedDelay);
  t->deadline = 1000;
  static_cast<PeriodicBase*>(t)->period = 10;
  ASSERT_TRUE(transition(t, kPending, kRunning));
  EXPECT_TRUE(run_once(t, [&] { return invoke(t); }, true, [] { return std::int64_t{5000}; }, r.context()).again);
  EXPECT_EQ(t->deadline, 5010);
  release(t);
}

TEST(Completion, APeriodPastTheClocksRangeMakesTheNextRunNeverDue) {
  auto alive = std::make_shared<int>(0);
  Reports r;
  auto* t = node_of<true>(alive);
  t->deadline = kMax - 5;
  static_cast<PeriodicBase*>(t)->period = 10;
  ASSERT_TRUE(transition(t, kPending, kRunning));
  EXPECT_TRUE(run_once(t, [&] { return invoke(t); }, true, [] { return std::int64_t{0}; }, r.context()).again);
  EXPECT_EQ(t->deadline, kMax);
  EXPECT_EQ(t->never, 1);
  release(t);
}

TEST(Completion, APeriodicFailureEndsItsRunsCountedAndReported) {
  auto alive = std::make_shared<int>(0);
  Reports r;
  auto* t = node_of<true>(alive, true);
  ASSERT_TRUE(transition(t, kPending, kRunning));
  RunResult res = run_once(t, [&] { return invoke(t); }, true, [] { return std::int64_t{0}; }, r.context());
  EXPECT_FALSE(res.ok);
  EXPECT_FALSE(res.again);
  EXPECT_EQ(state_of(t), kExceptional);
  EXPECT_EQ(r.failures.load(), 1u);
  EXPECT_EQ(r.uncaught, 1);  // nobody get()s a periodic failure: reported with or without a future
  EXPECT_EQ(alive.use_count(), 1);  // no run follows: the callable is gone
  release(t);
}

TEST(Completion, APeriodicTaskCancelledDuringAFailingRunLosesItsCallableToItsRunner) {
  auto alive = std::make_shared<int>(0);
  Reports r;
  auto* t = node_of<true>(alive, true);
  ASSERT_TRUE(transition(t, kPending, kRunning));
  auto run = [&] {
    const bool ok = invoke(t);
    EXPECT_TRUE(transition(t, kRunning, kCancelled));  // a cancel during the run (keeps the callable)
    return ok;
  };
  EXPECT_FALSE(run_once(t, run, true, [] { return std::int64_t{0}; }, r.context()).again);
  EXPECT_EQ(state_of(t), kCancelled);
  EXPECT_EQ(r.failures.load(), 0u);  // the cancel won: not a failure of the task's
  EXPECT_EQ(alive.use_count(), 1);
  release(t);
}

TEST(Completion, APeriodicRunWithNoRunAfterItCompletesAsCancelled) {
  auto alive = std::make_shared<int>(0);
  auto* t = node_of<true>(alive);  // a returned task's run (run_orphan)
  t->deadline = 1000;
  ASSERT_TRUE(transition(t, kPending, kOrphan));
  ASSERT_TRUE(start_outside(t, kOrphan));
  RunResult res = run_once(t, [&] { return invoke(t); }, false, [] { return std::int64_t{0}; }, RunContext{nullptr, nullptr});
  EXPECT_TRUE(res.ok);
  EXPECT_FALSE(res.again);
  EXPECT_EQ(state_of(t), kCancelled);
  EXPECT_EQ(t->deadline, 1000);  // no next deadline
  EXPECT_EQ(alive.use_count(), 1);
  release(t);
}

TEST(Completion, AReturnedPeriodicTasksFailureGoesToItsFutureOnly) {
  auto alive = std::make_shared<int>(0);
  Reports r;
  auto* t = node_of<true>(alive, true);  // Task::run() of a periodic task that throws
  ASSERT_TRUE(transition(t, kPending, kOrphan));
  ASSERT_TRUE(start_outside(t, kOrphan));
  EXPECT_FALSE(run_once(t, [&] { return invoke(t); }, false, [] { return std::int64_t{0}; }, r.context()).ok);
  EXPECT_EQ(state_of(t), kExceptional);
  EXPECT_EQ(r.uncaught, 0);  // its get() rethrows it; only an execute()d task's goes to on_uncaught
  EXPECT_EQ(alive.use_count(), 1);
  release(t);
}

#if KAIROS_DCHECK_IS_ON
TEST(Completion, DebugBuildsCountTheKairosLocksAThreadHolds) {
  Mutex mu;
  EXPECT_TRUE(no_kairos_lock_held());
  {
    Lock lk(mu);
    EXPECT_FALSE(no_kairos_lock_held());
    lk.unlock();
    EXPECT_TRUE(no_kairos_lock_held());
    lk.lock();
    EXPECT_FALSE(no_kairos_lock_held());
  }
  EXPECT_TRUE(no_kairos_lock_held());
}

TEST(CompletionDeathTest, CompletingUnderAKairosLockAborts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        Mutex mu;
        Lock lk(mu);
        auto* t = make_node<false>([] {}, 0, 1);
        (void)complete(t, kPending, kCancelled);
      },
      "no_kairos_lock_held");
}
#endif

}  // namespace
}  // namespace kairos::detail
