// schedule_test.cpp: one-shot scheduling on kairos: deadlines, delay conversion and overflow,
// argument checks, execute/submit as zero-delay schedules, visibility into and out of a task.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <latch>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

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
using kairos_test::Recorder;
using kairos_test::single_thread;

// ---- deadlines on a ManualClock --------------------------------------------------------

TEST(Schedule, NeverStartsBeforeItsDeadline) {
  std::atomic<int> a_runs{0}, b_runs{0};
  std::atomic<std::int64_t> a_start{-1}, b_start{-1};
  Manual s;
  auto a = s.schedule([&] { a_start = kairos_test::ns(s.clock.now()); ++a_runs; }, 10ms);
  auto b = s.schedule_at([&] { b_start = kairos_test::ns(s.clock.now()); ++b_runs; },
                         ManualClock::time_point(25ms));

  s.step(10ms - 1ns);
  EXPECT_EQ(a_runs, 0);
  EXPECT_FALSE(a.is_done());

  s.step(1ns);
  EXPECT_EQ(a_runs, 1);
  EXPECT_EQ(a_start, std::chrono::nanoseconds(10ms).count());
  EXPECT_TRUE(a.is_done());
  EXPECT_EQ(b_runs, 0);

  s.step(15ms - 1ns);
  EXPECT_EQ(b_runs, 0);
  s.step(1ns);
  EXPECT_EQ(b_runs, 1);
  EXPECT_EQ(b_start, std::chrono::nanoseconds(25ms).count());
}

// Many deadlines, time moved in uneven steps: after each step exactly the due tasks have run.
TEST(Schedule, RunsExactlyTheDueTasksAfterEachAdvance) {
  constexpr int kTasks = 400;
  std::vector<std::int64_t> deadline(kTasks);
  std::vector<std::atomic<std::int64_t>> started(kTasks);
  for (auto& x : started) x = -1;
  std::mt19937_64 rng(12345);
  std::uniform_int_distribution<std::int64_t> pick(1, 1'000'000);  // up to 1 ms, in ns
  Manual s(kairos_test::threads(1, 2));
  for (int i = 0; i < kTasks; ++i) {
    deadline[i] = pick(rng);
    s.schedule([&, i] { started[i] = kairos_test::ns(s.clock.now()); }, Duration(deadline[i]));
  }
  std::uniform_int_distribution<std::int64_t> step(1, 90'000);
  while (kairos_test::ns(s.clock.now()) <= 1'000'000) {
    s.step(Duration(step(rng)));
    std::int64_t now = kairos_test::ns(s.clock.now());
    for (int i = 0; i < kTasks; ++i) {
      if (deadline[i] <= now) {
        ASSERT_GE(started[i], deadline[i]) << "task " << i << " missing or early at now=" << now;
      } else {
        ASSERT_EQ(started[i], -1) << "task " << i << " ran before its deadline " << deadline[i];
      }
    }
  }
  EXPECT_EQ(s.queue_size(), 0u);
}

// ---- negative, huge and fractional delays ---------------------------------------------

TEST(Schedule, NegativeDelayRunsAtOnce) {
  Manual s;
  s.clock.advance(1h);
  auto a = s.schedule([] { return 1; }, -5ms);
  auto b = s.schedule([] { return 2; }, Duration::min());
  auto c = s.schedule([] { return 3; }, std::chrono::hours::min());
  auto d = s.schedule_at_fixed_rate([] {}, -1s, 1h);
  auto e = s.schedule_with_fixed_delay([] {}, std::chrono::hours::min(), 1h);
  std::atomic<int> p_runs{0};
  auto p = s.schedule_at_fixed_rate([&] { ++p_runs; }, Duration::min(), 1h);
  // The clock never moves: every one of them is due now.
  ASSERT_TRUE(s.wait_idle(kPatience));
  ASSERT_TRUE(a.is_done());
  ASSERT_TRUE(b.is_done());
  ASSERT_TRUE(c.is_done());
  EXPECT_EQ(a.get(), 1);
  EXPECT_EQ(b.get(), 2);
  EXPECT_EQ(c.get(), 3);
  // The periodic ones ran once and wait a full period for the next run.
  EXPECT_GT(d.delay(), 58min);
  EXPECT_LE(d.delay(), 1h);
  EXPECT_EQ(e.delay(), 1h);
  EXPECT_EQ(p_runs, 1) << "a negative initial delay is 0: no catch-up from the past";
  EXPECT_EQ(p.delay(), 1h);
}

TEST(Schedule, HugeDelaysNeitherOverflowNorDisturbOrder) {
  ManualClock clock;
  clock.advance(1h);  // now + Duration::max() would overflow without saturation
  Recorder order;
  std::atomic<int> far_runs{0};
  ManualScheduler s(single_thread(), clock);
  auto far1 = s.schedule([&] { ++far_runs; }, Duration::max());
  auto far2 = s.schedule([&] { ++far_runs; }, std::chrono::hours::max());
  auto far3 = s.schedule_at([&] { ++far_runs; }, ManualClock::time_point::max());
  auto far4 = s.schedule_at_fixed_rate([&] { ++far_runs; }, std::chrono::hours::max(), 1ms);
  auto far5 = s.schedule_with_fixed_delay([&] { ++far_runs; }, Duration::max(), 1ms);
  auto far6 = s.schedule([&] { ++far_runs; }, std::chrono::duration<double>(1e300));
  s.schedule([&] { order.add(2); }, 2ms);
  s.schedule([&] { order.add(1); }, 1ms);
  s.schedule([&] { order.add(3); }, 3ms);
  ASSERT_TRUE(s.wait_idle(kPatience));
  EXPECT_EQ(order.size(), 0u);
  EXPECT_EQ(s.queue_size(), 9u);

  clock.advance(1ms);
  ASSERT_TRUE(s.wait_idle(kPatience));
  EXPECT_EQ(order.ids(), (std::vector<int>{1}));
  clock.advance(1ms);
  ASSERT_TRUE(s.wait_idle(kPatience));
  EXPECT_EQ(order.ids(), (std::vector<int>{1, 2}));
  clock.advance(1ms);
  ASSERT_TRUE(s.wait_idle(kPatience));
  EXPECT_EQ(order.ids(), (std::vector<int>{1, 2, 3}));

  clock.advance(std::chrono::hours(24 * 365 * 100));  // a century later: still not due
  ASSERT_TRUE(s.wait_idle(kPatience));
  EXPECT_EQ(far_runs, 0);
  EXPECT_EQ(s.queue_size(), 6u);
  for (auto* f : {&far1, &far2, &far3, &far4, &far5, &far6}) {
    EXPECT_FALSE(f->is_done());
    EXPECT_GT(f->delay(), std::chrono::hours(24 * 365 * 100));
  }
  EXPECT_EQ(s.shutdown_now().size(), 6u) << "shutdown_now() returns the tasks due never";
}
// Deadline order among tasks already due holds for what the queue holds when the runner takes
// its batch (at most Shard::kMaxBatch due tasks, taken together in (deadline, seq) order). A
// task submitted after that, with schedule_at() and a deadline already passed, starts as soon as
// possible: after the batch taken before it, even if its deadline sorts before theirs, and
// before every task still queued. Java's class cannot be asked for this (a negative delay is 0:
// no task is due before its submission). README "What kairos does not promise" and
// docs/design.md ("The batch's order window") say so; this test pins the window to that batch.
TEST(Schedule, APastDeadlineSubmittedAfterTheRunnerTookItsBatchStartsAfterThatBatch) {
  Manual s;
  Recorder order;
  Gate gate;
  std::atomic<bool> holding{false};
  const auto due = s.clock.now() + 10ms;
  s.schedule_at([&] { holding = true; order.add(0); (void)gate.wait(); }, due);
  for (int i = 1; i <= 3; ++i) s.schedule_at([&, i] { order.add(i); }, due);
  s.schedule_at([&] { order.add(5); }, due + 1ms);  // not due when the batch is taken
  s.clock.advance(10ms);                         // the batch: 0 (running), 1, 2, 3
  ASSERT_TRUE(kairos_test::eventually([&] { return holding.load(); }));
  s.clock.advance(1ms);                          // 5 is due now, and still in the queue
  s.schedule_at([&] { order.add(4); }, due - 5ms);  // due before all of them: after the batch
  gate.open();
  s.settle();
  EXPECT_EQ(order.ids(), (std::vector<int>{0, 1, 2, 3, 4, 5}))
      << "a task due earlier but submitted after the runner took its batch starts after that "
         "batch and before every task still queued";
}


TEST(Schedule, HugePeriodsRunOnceThenNeverAgain) {
  std::atomic<int> rate_runs{0}, delay_runs{0};
  Manual s;
  s.clock.advance(1h);
  auto rate = s.schedule_at_fixed_rate([&] { ++rate_runs; }, 0ms, Duration::max());
  auto fixed = s.schedule_with_fixed_delay([&] { ++delay_runs; }, 0ms, std::chrono::hours::max());
  ASSERT_TRUE(s.wait_idle(kPatience));
  EXPECT_EQ(rate_runs, 1);
  EXPECT_EQ(delay_runs, 1);
  s.step(std::chrono::hours(24 * 365 * 100));
  EXPECT_EQ(rate_runs, 1);
  EXPECT_EQ(delay_runs, 1);
  EXPECT_EQ(s.queue_size(), 2u);
  EXPECT_FALSE(rate.is_done());
  EXPECT_GT(rate.delay(), std::chrono::hours(24 * 365 * 100));
  EXPECT_GT(fixed.delay(), std::chrono::hours(24 * 365 * 100));
}

// On the real clock, now + hours::max() overflows int64 nanoseconds unless it saturates; a
// wrapped deadline would lie in the past and run before the 1 ms task.
TEST(Schedule, HugeDelaysOnTheSteadyClock) {
  std::atomic<int> far_runs{0};
  kairos_test::Scheduler s(single_thread());
  auto far1 = s.schedule([&] { ++far_runs; }, std::chrono::hours::max());
  auto far2 = s.schedule([&] { ++far_runs; }, Duration::max());
  auto far3 = s.schedule_with_fixed_delay([&] { ++far_runs; }, Duration::max(), Duration::max());
  auto near = s.schedule([] { return 7; }, 1ms);
  EXPECT_EQ(near.get(), 7);
  EXPECT_EQ(far_runs, 0);
  EXPECT_FALSE(far1.is_done());
  EXPECT_FALSE(far2.is_done());
  EXPECT_FALSE(far3.is_done());
  EXPECT_GT(far1.delay(), std::chrono::hours(24 * 365 * 100));
  EXPECT_GT(far2.delay(), std::chrono::hours(24 * 365 * 100));
}

TEST(Schedule, FractionalDelaysRoundUpToTheNextNanosecond) {
  std::atomic<int> tenth{0}, one_and_half{0}, four_thirds{0}, three_thirds{0};
  Manual s;
  auto a = s.schedule([&] { ++tenth; }, std::chrono::duration<double, std::micro>(0.0001));
  auto b = s.schedule([&] { ++one_and_half; }, std::chrono::duration<double, std::nano>(1.5));
  using third_ns = std::chrono::duration<long long, std::ratio<1, 3'000'000'000>>;
  auto c = s.schedule([&] { ++four_thirds; }, third_ns(4));
  auto d = s.schedule([&] { ++three_thirds; }, third_ns(3));  // exactly 1 ns
  EXPECT_EQ(a.delay(), 1ns);
  EXPECT_EQ(b.delay(), 2ns);
  EXPECT_EQ(c.delay(), 2ns);
  EXPECT_EQ(d.delay(), 1ns);

  ASSERT_TRUE(s.wait_idle(kPatience));
  EXPECT_EQ(tenth + one_and_half + four_thirds + three_thirds, 0);
  s.step(1ns);
  EXPECT_EQ(tenth, 1);
  EXPECT_EQ(three_thirds, 1);
  EXPECT_EQ(one_and_half, 0);
  EXPECT_EQ(four_thirds, 0);
  s.step(1ns);
  EXPECT_EQ(one_and_half, 1);
  EXPECT_EQ(four_thirds, 1);
}

// A period below one nanosecond is 1 ns (a delay is never shortened), not an invalid period.
TEST(Schedule, FractionalPeriodRoundsUp) {
  std::vector<std::int64_t> starts;
  std::mutex mu;
  std::atomic<int> quarter_runs{0};
  Manual s;
  s.schedule_at_fixed_rate(
      [&] {
        std::lock_guard lock(mu);
        starts.push_back(kairos_test::ns(s.clock.now()));
      },
      std::chrono::duration<double, std::nano>(0.5), std::chrono::duration<double, std::nano>(2.5));
  auto quarter = s.schedule_at_fixed_rate([&] { ++quarter_runs; }, 0ns, std::chrono::duration<double, std::nano>(0.25));
  s.settle();
  EXPECT_EQ(quarter_runs, 1);
  for (int i = 0; i < 7; ++i) {
    s.step(1ns);
  }
  EXPECT_EQ(quarter_runs, 8) << "runs at 0, 1, ..., 7 ns: a period of 0.25 ns is 1 ns";
  EXPECT_TRUE(quarter.cancel());
  std::lock_guard lock(mu);
  EXPECT_EQ(starts, (std::vector<std::int64_t>{1, 4, 7}));
}

// ---- absolute deadlines ---------------------------------------------------------------

TEST(ScheduleAt, PastDeadlineRunsAtOnce) {
  Manual s;
  s.clock.advance(10ms);
  auto a = s.schedule_at([] { return 1; }, ManualClock::time_point(1ms));
  auto b = s.schedule_at([] { return 2; }, ManualClock::time_point::min());
  auto c = s.schedule_at([] { return 3; }, s.clock.now());
  auto d = s.schedule_at([] { return 4; }, ManualClock::time_point{});
  ASSERT_TRUE(s.wait_idle(kPatience));
  ASSERT_TRUE(a.is_done());
  ASSERT_TRUE(b.is_done());
  ASSERT_TRUE(c.is_done());
  ASSERT_TRUE(d.is_done());
  EXPECT_EQ(a.get() + b.get() + c.get() + d.get(), 10);
  EXPECT_LE(a.delay(), Duration::zero());
}

TEST(ScheduleAt, SteadyClockDeadline) {
  kairos_test::Scheduler s(single_thread());
  auto deadline = kairos::SteadyClock::now() + 3ms;
  auto f = s.schedule_at([] { return std::chrono::steady_clock::now(); }, deadline);
  auto past = s.schedule_at([] { return 5; }, kairos::SteadyClock::now() - 1h);
  EXPECT_EQ(past.get(), 5);
  EXPECT_GE(f.get(), deadline);
}

// ---- execute and submit are zero-delay schedules ---------------------------------------

// The single thread is held busy while a scheduled task becomes overdue; a newer execute() or
// submit() is due later than it (at now), so the overdue task starts first.
TEST(Execute, OverdueScheduledTaskRunsBeforeNewerExecute) {
  Gate gate;
  std::latch blocked(1);
  Recorder order;
  Manual s;
  s.execute([&] {
    blocked.count_down();
    gate.wait();
  });
  blocked.wait();
  s.schedule([&] { order.add(1); }, 1ms);
  s.clock.advance(5ms);
  s.execute([&] { order.add(2); });
  auto f = s.submit([&] { order.add(3); return 3; });
  gate.open();
  EXPECT_EQ(f.get(), 3);
  ASSERT_TRUE(s.wait_idle(kPatience));
  EXPECT_EQ(order.ids(), (std::vector<int>{1, 2, 3}));
}

TEST(Execute, RunsWithoutTimeMoving) {
  std::atomic<int> runs{0};
  Manual s;
  s.execute([&] { ++runs; });
  auto f = s.submit([] { return 42; });
  auto g = s.schedule([] { return 43; }, 0ms);
  ASSERT_TRUE(s.wait_idle(kPatience));
  EXPECT_EQ(runs, 1);
  EXPECT_TRUE(f.is_done());
  EXPECT_EQ(f.get(), 42);
  EXPECT_EQ(g.get(), 43);
  EXPECT_FALSE(f.is_periodic());
  EXPECT_LE(f.delay(), Duration::zero());
  EXPECT_EQ(s.clock.now(), ManualClock::time_point{});
}

// ---- execute_after / execute_at: a one-shot task with no future ------------------------

// Never early, exactly at its deadline, after a delay or at an absolute time point.
TEST(ExecuteAfter, NeverStartsBeforeItsDeadline) {
  std::atomic<std::int64_t> a_start{-1}, b_start{-1};
  Manual s;
  s.execute_after([&] { a_start = kairos_test::ns(s.clock.now()); }, 10ms);
  s.execute_at([&] { b_start = kairos_test::ns(s.clock.now()); }, ManualClock::time_point(25ms));
  s.step(10ms - 1ns);
  EXPECT_EQ(a_start, -1);
  s.step(1ns);
  EXPECT_EQ(a_start, std::chrono::nanoseconds(10ms).count());
  s.step(15ms - 1ns);
  EXPECT_EQ(b_start, -1);
  s.step(1ns);
  EXPECT_EQ(b_start, std::chrono::nanoseconds(25ms).count());
}

// At one deadline, execute_at and schedule_at tasks run in submission order (one sequence).
TEST(ExecuteAfter, SharesFifoOrderWithScheduleAtOneDeadline) {
  Recorder order;
  Manual s;
  const ManualClock::time_point at(5ms);
  for (int i = 0; i < 6; ++i) {
    if (i % 2 == 0) s.execute_at([&, i] { order.add(i); }, at);
    else (void)s.schedule_at([&, i] { order.add(i); }, at);
  }
  s.step(5ms);
  EXPECT_EQ(order.ids(), (std::vector<int>{0, 1, 2, 3, 4, 5}));
}

// Its exception goes to on_uncaught (nobody can get() it), as execute()'s does.
TEST(ExecuteAfter, ExceptionReachesOnUncaught) {
  std::atomic<int> uncaught{0};
  kairos::Options o = single_thread();
  o.on_uncaught = [&](std::exception_ptr e) {
    try {
      std::rethrow_exception(e);
    } catch (const std::runtime_error& r) {
      if (std::string(r.what()) == "late boom") ++uncaught;
    }
  };
  Manual s(o);
  s.execute_after([] { throw std::runtime_error("late boom"); }, 1ms);
  s.step(1ms);
  EXPECT_EQ(uncaught, 1);
}

// Bad input: a null callable is refused at the call, and nothing is queued.
TEST(ExecuteAfter, RefusesAnEmptyCallable) {
  Manual s;
  std::function<void()> empty;
  EXPECT_THROW(s.execute_after(empty, 1ms), std::invalid_argument);
  EXPECT_THROW(s.execute_at(empty, ManualClock::time_point(1ms)), std::invalid_argument);
  EXPECT_EQ(s.queue_size(), 0u);
}

// A delayed task under the shutdown policies and shutdown_now(), as schedule()'s: dropped at
// shutdown() when delayed tasks are not to run, else run at its deadline; returned (not run) by
// shutdown_now(); refused (RejectedExecution) after shutdown.
TEST(ExecuteAfter, FollowsTheShutdownPoliciesAndShutdownNow) {
  {
    std::atomic<int> runs{0};
    kairos::Options o = single_thread();
    o.execute_existing_delayed_tasks_after_shutdown = false;
    Manual s(o);
    s.execute_after([&] { ++runs; }, 1ms);
    s.shutdown();
    EXPECT_EQ(s.queue_size(), 0u);
    s.step(2ms);
    EXPECT_EQ(runs, 0);
    EXPECT_THROW(s.execute_after([] {}, 1ms), kairos::RejectedExecution);
  }
  {
    std::atomic<int> runs{0};
    Manual s;
    s.execute_after([&] { ++runs; }, 1ms);
    s.shutdown();
    s.step(1ms);
    EXPECT_EQ(runs, 1);
  }
  {
    std::atomic<int> runs{0};
    Manual s;
    s.execute_after([&] { ++runs; }, 1h);
    std::vector<kairos::Task> left = s.shutdown_now();
    ASSERT_EQ(left.size(), 1u);
    EXPECT_EQ(runs, 0);
    left[0].run();
    EXPECT_EQ(runs, 1);
  }
}

TEST(Submit, ReturnsTheResultOnTheSteadyClock) {
  kairos_test::Scheduler s(single_thread());
  auto f = s.submit([] { return std::string("kairos"); });
  auto g = s.submit([] {});
  EXPECT_EQ(f.get(), "kairos");
  g.get();
  EXPECT_TRUE(g.is_done());
}

// ---- visibility ----------------------------------------------------------------------

// Plain (non-atomic) data: ThreadSanitizer reports a race unless schedule() happens-before the
// body and the body happens-before get() returns.
TEST(Schedule, SubmissionHappensBeforeBodyAndBodyBeforeGet) {
  constexpr int kTasks = 200;
  std::vector<int> in(kTasks, 0), out(kTasks, 0);
  std::vector<kairos::ScheduledFuture<void>> fs;
  kairos_test::Scheduler s(kairos_test::threads(2, 2));
  for (int i = 0; i < kTasks; ++i) {
    in[i] = i + 1;
    fs.push_back(s.schedule([&, i] { out[i] = in[i] * 2; }, Duration((i % 7) * 10'000)));
  }
  for (int i = 0; i < kTasks; ++i) {
    fs[i].get();
    EXPECT_EQ(out[i], 2 * (i + 1));
  }
}

// ---- argument checks --------------------------------------------------------------------

}  // namespace
