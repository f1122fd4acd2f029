// shutdown_test.cpp: shutdown(), shutdown_now(), the run states, await_termination and the
// destructor of kairos schedulers, with the two after-shutdown policies.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <latch>
#include <optional>
#include <stop_token>
#include <thread>
#include <utility>
#include <vector>

#include <kairos/kairos.hpp>

#include "support.hpp"

namespace {

using namespace std::chrono_literals;
using kairos::ManualClock;
using kairos_test::Gate;
using kairos_test::kPatience;
using kairos_test::Manual;
using kairos_test::ManualScheduler;
using kairos_test::Recorder;
using kairos_test::single_thread;

template <class Clock>
void expect_every_submission_rejected(kairos::BasicScheduler<Clock>& s) {
  using TP = typename Clock::time_point;
  EXPECT_THROW(s.schedule([] {}, 1ms), kairos::RejectedExecution);
  EXPECT_THROW(s.schedule([] { return 1; }, 0ms), kairos::RejectedExecution);
  EXPECT_THROW(s.schedule_at([] {}, TP{}), kairos::RejectedExecution);
  EXPECT_THROW(s.schedule_at_fixed_rate([] {}, 1ms, 1ms), kairos::RejectedExecution);
  EXPECT_THROW(s.schedule_with_fixed_delay([] {}, 1ms, 1ms), kairos::RejectedExecution);
  EXPECT_THROW(s.execute([] {}), kairos::RejectedExecution);
  EXPECT_THROW(s.submit([] { return 2; }), kairos::RejectedExecution);
}

// ---- run states -------------------------------------------------------------------------

TEST(States, FreshSchedulerIsRunning) {
  kairos_test::Scheduler s(single_thread());
  EXPECT_FALSE(s.is_shutdown());
  EXPECT_FALSE(s.is_terminating());
  EXPECT_FALSE(s.is_terminated());
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(s.await_termination(20ms));
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 20ms);
  EXPECT_FALSE(s.await_termination(0ms));
}

TEST(States, IdleSchedulerTerminatesOnShutdown) {
  kairos_test::Scheduler s(kairos_test::threads(2, 2));
  s.shutdown();
  EXPECT_TRUE(s.is_shutdown());
  ASSERT_TRUE(s.await_termination(kPatience));
  EXPECT_TRUE(s.is_terminated());
  EXPECT_FALSE(s.is_terminating());
  EXPECT_TRUE(s.await_termination(0ms));
  s.shutdown();  // a second call changes nothing
  EXPECT_TRUE(s.is_terminated());
  EXPECT_TRUE(s.shutdown_now().empty());
  expect_every_submission_rejected(s);
}

TEST(States, PendingDelayedTaskKeepsTheSchedulerTerminating) {
  ManualClock clock;
  std::atomic<int> runs{0};
  ManualScheduler s(single_thread(), clock);
  auto f = s.schedule([&] { ++runs; return 3; }, 10ms);
  s.shutdown();
  EXPECT_TRUE(s.is_shutdown());
  EXPECT_TRUE(s.is_terminating());
  EXPECT_FALSE(s.is_terminated());
  EXPECT_FALSE(s.await_termination(20ms)) << "times out in real time on a ManualClock";
  EXPECT_FALSE(f.is_done());
  EXPECT_EQ(s.queue_size(), 1u);
  clock.advance(10ms - 1ns);
  EXPECT_FALSE(s.await_termination(5ms));
  clock.advance(1ns);
  ASSERT_TRUE(s.await_termination(kPatience));
  EXPECT_TRUE(s.is_terminated());
  EXPECT_FALSE(s.is_terminating());
  EXPECT_EQ(runs, 1);
  EXPECT_EQ(f.get(), 3);
}

// A running task that ignores its stop token keeps the scheduler terminating after shutdown_now.
TEST(States, RunningTaskDelaysTerminationAfterShutdownNow) {
  kairos_test::Scheduler s(single_thread());
  Gate gate;
  std::latch started(1);
  s.execute([&] {
    started.count_down();
    gate.wait();
  });
  started.wait();
  EXPECT_TRUE(s.shutdown_now().empty());
  EXPECT_TRUE(s.is_shutdown());
  EXPECT_TRUE(s.is_terminating());
  EXPECT_FALSE(s.is_terminated());
  EXPECT_FALSE(s.await_termination(10ms));
  gate.open();
  ASSERT_TRUE(s.await_termination(kPatience));
  EXPECT_TRUE(s.is_terminated());
  EXPECT_FALSE(s.is_terminating());
}

// ---- shutdown() and the policies ---------------------------------------------------------

TEST(Shutdown, RejectsLaterSubmissions) {
  Manual s;
  s.schedule([] {}, 1h);
  s.shutdown();
  expect_every_submission_rejected(s);
  EXPECT_EQ(s.queue_size(), 1u);
}

TEST(Shutdown, DelayedTasksStillRunByDefault) {
  Recorder order;
  Manual s(kairos_test::threads(2, 1));
  auto a = s.schedule([&] { order.add(1); }, 10ms);
  auto b = s.schedule_at([&] { order.add(2); }, ManualClock::time_point(20ms));
  s.shutdown();
  EXPECT_FALSE(a.is_cancelled());
  EXPECT_FALSE(b.is_cancelled());
  s.step(10ms);
  EXPECT_EQ(order.ids(), (std::vector<int>{1}));
  EXPECT_FALSE(s.is_terminated());
  s.clock.advance(10ms);
  ASSERT_TRUE(s.await_termination(kPatience));
  EXPECT_EQ(order.ids(), (std::vector<int>{1, 2}));
}

// With the delayed policy off, shutdown() cancels delayed one-shot tasks before it returns;
// one-shot tasks already due stay and run (the single thread is held busy meanwhile).
TEST(Shutdown, DelayedPolicyOffCancelsOnlyNotYetDueTasks) {
  Gate gate;
  std::latch started(1);
  std::atomic<int> due_runs{0}, delayed_runs{0};
  kairos::Options o = single_thread();
  o.execute_existing_delayed_tasks_after_shutdown = false;
  Manual s(o);
  s.execute([&] {
    started.count_down();
    gate.wait();
  });
  started.wait();
  auto overdue = s.schedule([&] { ++due_runs; }, 1ms);
  s.clock.advance(2ms);
  auto immediate = s.submit([&] { ++due_runs; return 1; });
  s.execute([&] { ++due_runs; });
  auto delayed = s.schedule([&] { ++delayed_runs; }, 10ms);
  auto periodic = s.schedule_at_fixed_rate([&] { ++delayed_runs; }, 1ms, 1ms);
  s.shutdown();
  EXPECT_TRUE(delayed.is_cancelled());
  EXPECT_TRUE(periodic.is_cancelled());
  EXPECT_FALSE(overdue.is_cancelled());
  EXPECT_FALSE(immediate.is_cancelled());
  gate.open();
  ASSERT_TRUE(s.await_termination(kPatience));
  EXPECT_EQ(due_runs, 3);
  EXPECT_EQ(immediate.get(), 1);
  s.clock.advance(1h);
  EXPECT_EQ(delayed_runs, 0);
}

TEST(Shutdown, DueTasksRunUnderTheDefaultPolicyToo) {
  Gate gate;
  std::latch started(1);
  Manual s;
  s.execute([&] {
    started.count_down();
    gate.wait();
  });
  started.wait();
  auto immediate = s.submit([] { return 7; });
  s.shutdown();
  EXPECT_FALSE(immediate.is_done());
  gate.open();
  EXPECT_EQ(immediate.get(), 7);
  ASSERT_TRUE(s.await_termination(kPatience));
}

TEST(Shutdown, PeriodicTasksAreCancelledByDefault) {
  std::atomic<int> runs{0};
  Manual s;
  auto rate = s.schedule_at_fixed_rate([&] { ++runs; }, 1ms, 1ms);
  auto delay = s.schedule_with_fixed_delay([&] { ++runs; }, 1ms, 1ms);
  s.step(2ms);
  int before = runs;
  EXPECT_EQ(before, 3);  // fixed rate at 1 and 2 ms; fixed delay once, at 2 ms (due 3 ms next)
  s.shutdown();
  EXPECT_TRUE(rate.is_cancelled());
  EXPECT_TRUE(delay.is_cancelled());
  ASSERT_TRUE(s.await_termination(kPatience));
  s.clock.advance(10ms);
  EXPECT_EQ(runs, before);
  EXPECT_THROW(rate.get(), kairos::CancelledError);
}

// A periodic run in progress at shutdown() finishes, then the task is cancelled instead of
// being queued again.
TEST(Shutdown, RunningPeriodicTaskIsCancelledAfterItsRun) {
  Gate gate;
  std::latch started(1);
  std::atomic<int> runs{0};
  Manual s;
  auto f = s.schedule_at_fixed_rate(
      [&] {
        ++runs;
        started.count_down();
        gate.wait();
      },
      1ms, 1ms);
  s.clock.advance(1ms);
  started.wait();
  s.shutdown();
  EXPECT_FALSE(s.is_terminated());
  s.clock.advance(5ms);
  gate.open();
  ASSERT_TRUE(s.await_termination(kPatience));
  EXPECT_EQ(runs, 1);
  EXPECT_TRUE(f.is_cancelled());
}

TEST(Shutdown, ContinuePeriodicPolicyKeepsThemRunning) {
  std::atomic<int> runs{0};
  kairos::Options o = single_thread();
  o.continue_existing_periodic_tasks_after_shutdown = true;
  Manual s(o);
  auto f = s.schedule_at_fixed_rate([&] { ++runs; }, 1ms, 1ms);
  s.step(1ms);
  s.shutdown();
  EXPECT_FALSE(f.is_cancelled());
  s.step(3ms);
  EXPECT_EQ(runs, 4);
  EXPECT_FALSE(s.await_termination(10ms));
  // Turning the policy off after shutdown cancels the periodic task at once.
  s.set_continue_existing_periodic_tasks_after_shutdown(false);
  EXPECT_TRUE(f.is_cancelled());
  ASSERT_TRUE(s.await_termination(kPatience));
  s.clock.advance(5ms);
  EXPECT_EQ(runs, 4);
}

TEST(Shutdown, TurningTheDelayedPolicyOffAfterShutdownCancelsAtOnce) {
  std::atomic<int> runs{0};
  Manual s;
  auto a = s.schedule([&] { ++runs; }, 10ms);
  auto b = s.schedule([&] { ++runs; }, 1h);
  s.shutdown();
  EXPECT_FALSE(a.is_cancelled());
  s.step(10ms);
  EXPECT_EQ(runs, 1);
  EXPECT_FALSE(b.is_cancelled());
  s.set_execute_existing_delayed_tasks_after_shutdown(false);
  EXPECT_TRUE(b.is_cancelled());
  ASSERT_TRUE(s.await_termination(kPatience));
  EXPECT_EQ(s.queue_size(), 0u);
}

TEST(Shutdown, PolicySettersBeforeShutdownTakeEffectAtShutdown) {
  Manual s;
  auto delayed = s.schedule([] {}, 1h);
  auto periodic = s.schedule_with_fixed_delay([] {}, 1ms, 1ms);
  s.set_execute_existing_delayed_tasks_after_shutdown(false);
  s.set_continue_existing_periodic_tasks_after_shutdown(true);
  EXPECT_FALSE(delayed.is_cancelled());
  s.shutdown();
  EXPECT_TRUE(delayed.is_cancelled());
  EXPECT_FALSE(periodic.is_cancelled());
  EXPECT_FALSE(s.await_termination(5ms));
  EXPECT_TRUE(periodic.cancel());
  s.clock.advance(1ms);  // a cancelled task is retained until its deadline
  ASSERT_TRUE(s.await_termination(kPatience));
}

// ---- shutdown() racing a submission --------------------------------------------------------

// A capture whose destruction blocks (once: a moved-from one is empty) until `go` opens.
struct BlocksItsDestruction {
  Gate* entered;
  Gate* go;
  BlocksItsDestruction(Gate& e, Gate& g) : entered(&e), go(&g) {}
  BlocksItsDestruction(BlocksItsDestruction&& o) noexcept : entered(std::exchange(o.entered, nullptr)), go(o.go) {}
  BlocksItsDestruction& operator=(BlocksItsDestruction&&) = delete;
  ~BlocksItsDestruction() {
    if (entered == nullptr) return;
    entered->open();
    (void)go->wait();
  }
  void operator()() const {}
};

// A submission held between its first look at the run state and its sequence number (here: in
// discard_oldest's eviction, whose victim's capture destructor blocks on the submitting thread)
// while shutdown() runs to termination. It is then rejected (the policy after shutdown: its
// future cancelled at once, counted as rejected), never accepted: an accepted task must run, be
// cancelled by a policy or be returned, and with the threads gone none of that can happen. A
// check of the run state after the enqueue accepted it and then cancelled it where it lay.
TEST(ShutdownRace, ASubmissionThatSeesTheShutdownOnlyAfterItsFirstCheckIsRejected) {
  kairos::Options o = single_thread();
  o.capacity = 1;
  o.rejection = kairos::Rejection::discard_oldest;
  kairos_test::Scheduler s(o);
  Gate entered, go;
  auto victim = s.schedule(BlocksItsDestruction(entered, go), 1h);
  std::atomic<bool> ran{false};
  std::optional<kairos::ScheduledFuture<void>> x;
  std::thread producer([&] { x = s.schedule([&] { ran = true; }, 0ms); });
  const bool evicted = entered.wait();
  bool terminated = false;
  if (evicted) {
    s.shutdown();
    terminated = s.await_termination(kPatience);
  }
  go.open();
  producer.join();
  ASSERT_TRUE(evicted) << "the submission did not evict the victim";
  ASSERT_TRUE(terminated) << "nothing was pending: the threads should have gone";
  ASSERT_TRUE(x.has_value());
  EXPECT_TRUE(victim.is_cancelled());
  EXPECT_TRUE(x->is_cancelled()) << "the policy after shutdown (discard_oldest): cancelled at once";
  EXPECT_FALSE(ran.load());
  const kairos::ShardStats st = s.stats().total();
  EXPECT_EQ(st.submitted, 1u) << "the racing submission was counted as accepted";
  EXPECT_EQ(st.rejected, 1u) << "the racing submission (the victim's eviction counts as cancelled)";
  EXPECT_EQ(st.cancelled, 1u) << "the victim only";
}

// ---- shutdown_now() ---------------------------------------------------------------------

TEST(ShutdownNow, ReturnsPendingTasksEarliestDeadlineFirst) {
  Recorder order;
  Manual s;
  auto c = s.schedule([&] { order.add(3); return 30; }, 30ms);
  auto a = s.schedule([&] { order.add(1); return 10; }, 10ms);
  auto cancelled = s.schedule([&] { order.add(-1); return 0; }, 5ms);
  auto b = s.schedule_at([&] { order.add(2); return 20; }, ManualClock::time_point(20ms));
  auto p = s.schedule_with_fixed_delay([&] { order.add(4); }, 40ms, 1ms);
  EXPECT_TRUE(cancelled.cancel());
  std::vector<kairos::Task> tasks = s.shutdown_now();
  EXPECT_TRUE(s.is_shutdown());
  expect_every_submission_rejected(s);
  ASSERT_EQ(tasks.size(), 4u);
  EXPECT_FALSE(a.is_done());
  EXPECT_FALSE(p.is_done());
  for (auto& t : tasks) t.run();
  EXPECT_EQ(order.ids(), (std::vector<int>{1, 2, 3, 4}));
  EXPECT_EQ(a.get(), 10);
  EXPECT_EQ(b.get(), 20);
  EXPECT_EQ(c.get(), 30);
  EXPECT_TRUE(p.is_cancelled()) << "a periodic task run from shutdown_now() then completes as cancelled";
  EXPECT_THROW(p.get(), kairos::CancelledError);
  ASSERT_TRUE(s.await_termination(kPatience));
}

TEST(ShutdownNow, TaskRunsInTheCallerWithAFreshToken) {
  Manual s;
  auto f = s.schedule([](std::stop_token st) { return std::make_pair(std::this_thread::get_id(), st.stop_requested()); }, 1h);
  auto tasks = s.shutdown_now();
  ASSERT_EQ(tasks.size(), 1u);
  kairos::Task moved = std::move(tasks[0]);
  moved.run();
  auto [id, stopped] = f.get();
  EXPECT_EQ(id, std::this_thread::get_id());
  EXPECT_FALSE(stopped);
}

TEST(ShutdownNow, DroppedTasksCompleteAsCancelled) {
  std::atomic<int> runs{0};
  Manual s(kairos_test::threads(2, 1));
  auto a = s.schedule([&] { ++runs; return 1; }, 1h);
  auto p = s.schedule_at_fixed_rate([&] { ++runs; }, 1h, 1h);
  std::atomic<bool> waiter_cancelled{false};
  std::thread waiter([&, g = a]() mutable {
    try {
      g.get();
    } catch (const kairos::CancelledError&) {
      waiter_cancelled = true;
    }
  });
  {
    std::vector<kairos::Task> tasks = s.shutdown_now();
    EXPECT_EQ(tasks.size(), 2u);
    EXPECT_FALSE(a.is_done());
  }
  EXPECT_EQ(a.wait_for(kPatience), std::future_status::ready) << "a dropped task's get() would hang";
  EXPECT_EQ(p.wait_for(kPatience), std::future_status::ready);
  if (!a.is_done()) a.cancel();  // lets the waiter go even if the drop left the future pending
  waiter.join();
  EXPECT_TRUE(waiter_cancelled);
  EXPECT_TRUE(a.is_cancelled());
  EXPECT_TRUE(p.is_cancelled());
  EXPECT_THROW(a.get(), kairos::CancelledError);
  EXPECT_THROW(p.get(), kairos::CancelledError);
  EXPECT_EQ(runs, 0);
  ASSERT_TRUE(s.await_termination(kPatience));
}

// Submissions still in an inbox are returned too: nothing is lost.
TEST(ShutdownNow, IncludesTasksNotYetDrained) {
  constexpr int kTasks = 3000;
  Manual s;
  std::vector<kairos::Task> tasks;
  std::thread submitter([&] {
    for (int i = 0; i < kTasks; ++i) s.schedule([] {}, std::chrono::minutes(1 + i % 7));
    tasks = s.shutdown_now();
  });
  submitter.join();
  EXPECT_EQ(tasks.size(), static_cast<std::size_t>(kTasks));
  EXPECT_EQ(s.queue_size(), 0u);
}

TEST(ShutdownNow, RequestsStopOnRunningTasks) {
  SKIP_IN_POLL_MODE("two tasks running at once need two threads");
  kairos_test::Scheduler s(kairos_test::threads(1, 2));
  std::latch started(2);
  std::atomic<int> stopped{0};
  auto body = [&](std::stop_token st) {
    started.count_down();
    auto until = std::chrono::steady_clock::now() + kPatience;
    while (!st.stop_requested() && std::chrono::steady_clock::now() < until) std::this_thread::yield();
    if (st.stop_requested()) ++stopped;
  };
  auto a = s.submit(body);
  s.execute(body);
  started.wait();
  auto tasks = s.shutdown_now();
  EXPECT_TRUE(tasks.empty());
  ASSERT_TRUE(s.await_termination(kPatience));
  EXPECT_EQ(stopped, 2);
}

TEST(ShutdownNow, AfterShutdownReturnsWhatIsLeft) {
  Manual s;
  auto a = s.schedule([] {}, 1h);
  s.shutdown();
  EXPECT_FALSE(s.is_terminated());
  auto tasks = s.shutdown_now();
  EXPECT_EQ(tasks.size(), 1u);
  ASSERT_TRUE(s.await_termination(kPatience));
  EXPECT_TRUE(s.is_terminated());
  tasks.clear();
  EXPECT_TRUE(a.is_cancelled());
}

// ---- destructor ---------------------------------------------------------------------------

TEST(Destructor, ReturnsPromptlyAndCancelsPendingTasks) {
  kairos::ScheduledFuture<int> far;
  kairos::ScheduledFuture<void> never, periodic;
  std::atomic<bool> saw_stop{false};
  std::latch started(1);
  auto t0 = std::chrono::steady_clock::now();
  {
    kairos_test::Scheduler s(kairos_test::threads(2, 2));
    far = s.schedule([] { return 1; }, 1h);
    never = s.schedule([] {}, std::chrono::hours::max());
    periodic = s.schedule_at_fixed_rate([] {}, 1h, 1h);
    s.execute([&](std::stop_token st) {
      started.count_down();
      auto until = std::chrono::steady_clock::now() + kPatience;
      while (!st.stop_requested() && std::chrono::steady_clock::now() < until) std::this_thread::yield();
      saw_stop = st.stop_requested();
    });
    started.wait();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
  EXPECT_TRUE(saw_stop) << "the destructor asks running tasks to stop and waits for them";
  EXPECT_TRUE(far.is_cancelled());
  EXPECT_TRUE(never.is_cancelled());
  EXPECT_TRUE(periodic.is_cancelled());
  EXPECT_THROW(far.get(), kairos::CancelledError);
}

TEST(Destructor, ManualClockSchedulerDoesNotWaitForTime) {
  kairos::ScheduledFuture<void> f;
  {
    Manual s(kairos_test::threads(2, 2));
    f = s.schedule([] {}, 1ms);
    s.shutdown();  // the delayed task would still run, if time moved
  }
  EXPECT_TRUE(f.is_cancelled());
}

}  // namespace
