// poll_test.cpp: poll mode (Options::poll_mode, docs/poll-mode.md): the owner's loop runs the
// due tasks inline with poll(); next_deadline() says when to come back; other threads submit,
// cancel and re-arm as usual; shutdown, shutdown_now, termination and the destructor work with
// no scheduler thread. The rest of the semantic suite also runs in poll mode (the *_poll
// executables built from the same sources, tests/core/CMakeLists.txt).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include <kairos/kairos.hpp>

#include "support.hpp"

namespace {

using namespace std::chrono_literals;
using kairos::ManualClock;
using kairos_test::kPatience;
using kairos_test::Recorder;
using Polled = kairos::BasicScheduler<ManualClock>;  // never the suite's polling wrapper here

kairos::Options polled(unsigned shards = 1) {
  kairos::Options o;
  o.shards = shards;
  o.poll_mode = true;
  return o;
}

ManualClock::time_point at(std::chrono::nanoseconds d) { return ManualClock::time_point(d); }

TEST(PollMode, RunsDueTasksOnTheCallingThreadInDeadlineOrder) {
  ManualClock clock;
  Polled s(polled(), clock);
  Recorder order;
  std::vector<std::thread::id> ran_on;
  for (int id : {3, 1, 2}) s.schedule([&, id] { order.add(id); ran_on.push_back(std::this_thread::get_id()); }, id * 1ms);
  EXPECT_EQ(s.poll(), 0u);  // nothing due at 0
  EXPECT_EQ(s.pool_size(), 0u);
  EXPECT_EQ(s.largest_pool_size(), 0u);
  clock.advance(2ms);
  EXPECT_EQ(s.poll(), 2u);
  EXPECT_EQ(order.ids(), (std::vector<int>{1, 2}));
  EXPECT_EQ(s.poll(at(3ms)), 1u);  // the loop's own `now`, ahead of the clock here on purpose
  EXPECT_EQ(order.ids(), (std::vector<int>{1, 2, 3}));
  for (auto id : ran_on) EXPECT_EQ(id, std::this_thread::get_id());
  EXPECT_EQ(s.completed_task_count(), 3u);
}

TEST(PollMode, NothingRunsUntilTheOwnerPolls) {
  ManualClock clock;
  Polled s(polled(), clock);
  std::atomic<int> runs{0};
  auto f = s.submit([&] { return ++runs; });
  clock.advance(1h);
  EXPECT_FALSE(f.is_done());  // no thread of its own: it waits for the loop
  EXPECT_EQ(runs, 0);
  EXPECT_EQ(s.poll(), 1u);
  EXPECT_EQ(f.get(), 1);
}

TEST(PollMode, LimitBoundsOnePollAndKeepsTheOrder) {
  ManualClock clock;
  Polled s(polled(), clock);
  Recorder order;
  for (int id = 0; id < 10; ++id) s.schedule([&, id] { order.add(id); }, 1ms);  // equal deadlines: FIFO
  clock.advance(1ms);
  EXPECT_EQ(s.poll(clock.now(), 3), 3u);
  EXPECT_EQ(order.ids(), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(s.poll(clock.now(), 0), 0u);
  EXPECT_EQ(s.poll(), 7u);
  EXPECT_EQ(order.ids(), (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
}

TEST(PollMode, NextDeadlineFollowsSubmitCancelAndReArm) {
  ManualClock clock;
  kairos::Options o = polled();
  o.remove_on_cancel = true;
  Polled s(o, clock);
  EXPECT_EQ(s.next_deadline(), std::nullopt);
  auto never = s.schedule([] {}, std::chrono::hours::max());
  EXPECT_EQ(s.next_deadline(), std::nullopt);  // never due
  auto b = s.schedule([] {}, 20ms);
  auto a = s.schedule([] {}, 10ms);
  EXPECT_EQ(s.next_deadline(), at(10ms));
  EXPECT_TRUE(a.cancel());
  EXPECT_EQ(s.next_deadline(), at(20ms));
  auto r = s.schedule_rearmable([] {}, 30ms);
  ASSERT_TRUE(r.rearm(5ms));  // earlier: moves now
  EXPECT_EQ(s.next_deadline(), at(5ms));
  clock.advance(5ms);
  EXPECT_EQ(s.poll(), 1u);
  EXPECT_TRUE(r.is_done());
  EXPECT_EQ(s.next_deadline(), at(20ms));
  EXPECT_FALSE(never.is_done());
}

TEST(PollMode, FixedRateCatchesUpInOnePollAndNeverOverlaps) {
  ManualClock clock;
  Polled s(polled(), clock);
  std::vector<std::int64_t> seen;
  auto f = s.schedule_at_fixed_rate([&] { seen.push_back(kairos_test::ns(clock.now())); }, 1ms, 1ms);
  clock.advance(5ms);
  EXPECT_EQ(s.poll(), 5u);  // runs due at 1..5 ms, one after another
  EXPECT_EQ(seen.size(), 5u);
  EXPECT_EQ(s.next_deadline(), at(6ms));
  auto d = s.schedule_with_fixed_delay([] {}, 0ms, 10ms);
  EXPECT_EQ(s.poll(), 1u);  // the next run of a fixed-delay task is 10 ms after this one ends
  EXPECT_EQ(s.next_deadline(), at(6ms));
  f.cancel();
  d.cancel();
}

TEST(PollMode, OtherThreadsSubmitCancelAndReArmWhileTheOwnerPolls) {
  constexpr int kProducers = 3;
  constexpr int kPerProducer = 2000;
  ManualClock clock;
  Polled s(polled(), clock);
  std::atomic<int> ran{0};
  std::atomic<int> cancelled{0};
  std::atomic<bool> producing{true};
  std::vector<std::thread> producers;
  for (int p = 0; p < kProducers; ++p)
    producers.emplace_back([&, p] {
      for (int i = 0; i < kPerProducer; ++i) {
        auto f = s.schedule_rearmable([&] { ran.fetch_add(1, std::memory_order_relaxed); }, std::chrono::microseconds(i % 7));
        if ((i + p) % 3 == 0 && f.cancel()) cancelled.fetch_add(1, std::memory_order_relaxed);
        else if ((i + p) % 3 == 1) (void)f.rearm(std::chrono::microseconds(i % 5));
      }
    });
  std::thread finisher([&] {
    for (auto& t : producers) t.join();
    producing = false;
  });
  while (producing) {  // the owner's loop: poll, move the clock
    s.poll();
    clock.advance(1us);
  }
  finisher.join();
  clock.advance(1ms);
  ASSERT_TRUE(s.wait_idle(kPatience));  // in poll mode the waiting thread polls
  EXPECT_EQ(ran + cancelled, kProducers * kPerProducer);
  EXPECT_EQ(s.queue_size(), 0u);
}

TEST(PollMode, ShutdownPoliciesApplyAndAPollTerminates) {
  ManualClock clock;
  int terminated_hooks = 0;
  std::thread::id hook_thread;
  kairos::Options o = polled();
  o.terminated = [&] {
    ++terminated_hooks;
    hook_thread = std::this_thread::get_id();
  };
  Polled s(o, clock);
  Recorder order;
  auto delayed = s.schedule([&] { order.add(1); }, 10ms);  // delayed tasks still run (default)
  auto periodic = s.schedule_at_fixed_rate([&] { order.add(9); }, 5ms, 5ms);  // periodic ones stop
  s.shutdown();
  EXPECT_TRUE(periodic.is_cancelled());
  EXPECT_THROW(s.submit([] {}), kairos::RejectedExecution);
  EXPECT_FALSE(s.is_terminated());
  clock.advance(10ms);
  EXPECT_EQ(s.poll(), 1u);  // the last task runs, then this poll finds the shard finished
  EXPECT_TRUE(s.is_terminated());
  EXPECT_EQ(terminated_hooks, 1);
  EXPECT_EQ(hook_thread, std::this_thread::get_id());
  EXPECT_EQ(order.ids(), (std::vector<int>{1}));
  EXPECT_EQ(s.poll(), 0u);
  EXPECT_TRUE(s.await_termination(0s));
  EXPECT_EQ(terminated_hooks, 1);
}

TEST(PollMode, AwaitTerminationAndCloseDriveTheLoopThemselves) {
  kairos::Options o = polled(2);
  kairos::Scheduler s(o);
  std::atomic<int> ran{0};
  std::vector<kairos::ScheduledFuture<void>> fs;
  for (int i = 0; i < 20; ++i) fs.push_back(s.schedule([&] { ++ran; }, std::chrono::microseconds(100 * i)));
  s.close();  // shutdown(), then waits; nobody else polls: close() does
  EXPECT_TRUE(s.is_terminated());
  EXPECT_EQ(ran, 20);
}

TEST(PollMode, ShutdownNowReturnsThePendingTasksAndTheNextPollTerminates) {
  ManualClock clock;
  Polled s(polled(), clock);
  Recorder order;
  s.schedule([&] { order.add(2); }, 2ms);
  s.schedule([&] { order.add(1); }, 1ms);
  auto tasks = s.shutdown_now();
  ASSERT_EQ(tasks.size(), 2u);
  for (auto& t : tasks) t.run();
  EXPECT_EQ(order.ids(), (std::vector<int>{1, 2}));
  EXPECT_FALSE(s.is_terminated());  // terminates in the owner's next poll
  EXPECT_EQ(s.poll(), 0u);
  EXPECT_TRUE(s.is_terminated());
}

TEST(PollMode, ATaskMayPollWaitOrCloseItsOwnSchedulerWithoutDeadlock) {
  ManualClock clock;
  Polled s(polled(), clock);
  std::size_t inner_poll = 99;
  bool inner_idle = true;
  auto f = s.submit([&] {
    inner_poll = s.poll();        // the running poll holds the shard: 0
    inner_idle = s.wait_idle(1s);  // its own batch never finishes while it waits: false at once
    s.close();                     // shutdown(), no wait for itself
  });
  EXPECT_EQ(s.poll(), 1u);
  EXPECT_TRUE(f.is_done());
  EXPECT_EQ(inner_poll, 0u);
  EXPECT_FALSE(inner_idle);
  EXPECT_TRUE(s.is_shutdown());
  EXPECT_TRUE(s.await_termination(kPatience));
}

TEST(PollMode, ATaskMayDestroyItsSchedulerDuringThePoll) {
  auto s = std::make_unique<kairos::Scheduler>(polled());
  auto later = s->schedule([] {}, 1h);
  bool ran = false;
  s->execute([&] {
    s.reset();  // the destructor inside the poll that runs this task
    ran = true;
  });
  kairos::Scheduler* raw = s.get();
  raw->poll();  // returns after the scheduler is gone; the engine lives until then
  EXPECT_TRUE(ran);
  EXPECT_EQ(s, nullptr);
  EXPECT_TRUE(later.is_cancelled());
}

TEST(PollMode, TheDestructorSettlesEverythingWithoutAPoll) {
  std::vector<kairos::ScheduledFuture<void>> fs;
  bool hook = false;
  {
    kairos::Options o = polled(3);
    o.terminated = [&] { hook = true; };
    kairos::Scheduler s(o);
    for (int i = 0; i < 30; ++i) fs.push_back(s.schedule([] {}, std::chrono::milliseconds(i)));
  }
  for (auto& f : fs) EXPECT_TRUE(f.is_cancelled());
  EXPECT_TRUE(hook);
}

TEST(PollMode, BadUseIsAClearError) {
  kairos::Scheduler threaded(kairos_test::single_thread());
  EXPECT_THROW(threaded.poll(), std::logic_error);
  EXPECT_THROW(threaded.next_deadline(), std::logic_error);
  kairos::Options o = polled();
  o.threads_per_shard = 2;
  EXPECT_THROW(kairos::Scheduler{o}, std::invalid_argument);
  o = polled();
  o.cpus = {0};
  EXPECT_THROW(kairos::Scheduler{o}, std::invalid_argument);
  o = polled();
  o.on_thread_start = [](const kairos::ThreadInfo&) {};
  EXPECT_THROW(kairos::Scheduler{o}, std::invalid_argument);
}

TEST(PollMode, EveryShardIsPolled) {
  ManualClock clock;
  Polled s(polled(4), clock);
  std::atomic<int> ran{0};
  std::vector<std::thread> producers;  // threads are placed on shards round robin
  for (int p = 0; p < 8; ++p)
    producers.emplace_back([&] {
      for (int i = 0; i < 10; ++i) s.schedule([&] { ++ran; }, 1ms);
    });
  for (auto& t : producers) t.join();
  EXPECT_EQ(s.next_deadline(), at(1ms));
  clock.advance(1ms);
  EXPECT_EQ(s.poll(), 80u);
  EXPECT_EQ(ran, 80);
}

// A re-armed task waiting in the running poll's batch is judged by shutdown()'s policies at its
// newest deadline, as one in the queue is: re-armed there to later (no longer due), it is
// cancelled by the time shutdown() returns, and never runs.
TEST(PollMode, ShutdownCancelsATaskReArmedToLaterWhileItWaitsInTheBatch) {
  ManualClock clock;
  Polled s(polled(), clock);
  s.set_execute_existing_delayed_tasks_after_shutdown(false);
  kairos::ScheduledFuture<void> waiting;
  bool cancelled_when_shutdown_returned = false;
  std::atomic<bool> waiting_ran{false};
  auto first = s.schedule(
      [&] {
        EXPECT_TRUE(waiting.rearm(1h));  // it waits behind this task in the same batch
        s.shutdown();
        cancelled_when_shutdown_returned = waiting.is_cancelled();
      },
      1ms);
  waiting = s.schedule_rearmable([&] { waiting_ran = true; }, 1ms);
  clock.advance(1ms);
  EXPECT_EQ(s.poll(), 1u);
  EXPECT_TRUE(cancelled_when_shutdown_returned);
  EXPECT_TRUE(waiting.is_cancelled());
  EXPECT_FALSE(waiting_ran.load());
  EXPECT_TRUE(s.is_terminated());
  EXPECT_EQ(s.stats().total().cancelled, 1u);
}

// One still due where it waits (not re-armed, or re-armed to a time already passed) runs.
TEST(PollMode, ShutdownLeavesADueTaskWaitingInTheBatchToRun) {
  ManualClock clock;
  Polled s(polled(), clock);
  s.set_execute_existing_delayed_tasks_after_shutdown(false);
  std::atomic<int> ran{0};
  kairos::ScheduledFuture<void> waiting;
  auto first = s.schedule([&] { s.shutdown(); }, 1ms);
  waiting = s.schedule_rearmable([&] { ran.fetch_add(1); }, 1ms);
  auto plain = s.schedule([&] { ran.fetch_add(1); }, 1ms);
  clock.advance(1ms);
  EXPECT_EQ(s.poll(), 3u);
  EXPECT_EQ(ran.load(), 2);
  EXPECT_TRUE(s.is_terminated());
}

}  // namespace
