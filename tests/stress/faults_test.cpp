// faults_test.cpp: kairos when things go wrong inside and around tasks.
//   - tasks that throw (std::exception, int, a type with no std base): get() rethrows the same
//     object; execute()'d and periodic failures reach on_uncaught; the thread survives;
//   - Rejection::caller_runs when the caller is one of the scheduler's threads;
//   - shutdown(), shutdown_now(), await_termination() and the destructor called from inside a
//     task: none deadlocks (a watchdog fails the test instead of letting it hang);
//   - a task cancelling itself; a task that runs until stop is requested, during shutdown_now();
//   - the task memory pool failing to grow: the submitter gets std::bad_alloc, nothing is lost
//     (checked with the ledger).
// What each case does is written beside its test and in docs/bad-input.md. An on_uncaught that
// throws, the default report on stderr and cancel(true) are tests/core's (uncaught_test.cpp,
// stop_token_test.cpp).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include <kairos/detail/task_pool.hpp>
#include <kairos/kairos.hpp>

#include "ledger.hpp"
#include "support.hpp"
#include "task_pool_testing.hpp"

namespace kairos_test {
namespace {

using namespace std::chrono_literals;


struct NotAnException {  // a thrown type with no std base
  int code;
};

// ---- tasks that throw -----------------------------------------------------------------------

TEST(Faults, ThrownObjectsComeBackUnchangedAndTheThreadSurvives) {
  Watchdog dog("throwing tasks", kHangLimit);
  std::mutex mu;
  std::vector<std::exception_ptr> uncaught;
  kairos::Options o = single_thread();
  o.on_uncaught = [&](std::exception_ptr e) {
    std::lock_guard lock(mu);
    uncaught.push_back(e);
  };
  kairos::Scheduler s(o);
  auto f_std = s.submit([]() -> int { throw std::out_of_range("kairos fault: out of range"); });
  auto f_int = s.schedule([]() -> int { throw 7; }, 1ms);
  auto f_custom = s.submit([]() -> int { throw NotAnException{5}; });
  std::atomic<int> periodic_runs{0};
  auto f_periodic = s.schedule_at_fixed_rate(
      [&] {
        if (++periodic_runs == 3) throw NotAnException{11};
      },
      0ms, 1ms);
  s.execute([] { throw std::logic_error("kairos fault: execute"); });
  s.execute([] { throw 3; });
  s.execute([] { throw NotAnException{9}; });

  try {
    f_std.get();
    ADD_FAILURE() << "no exception";
  } catch (const std::out_of_range& e) {
    EXPECT_STREQ(e.what(), "kairos fault: out of range");
  }
  try {
    f_int.get();
    ADD_FAILURE() << "no exception";
  } catch (int v) {
    EXPECT_EQ(v, 7);
  }
  try {
    f_custom.get();
    ADD_FAILURE() << "no exception";
  } catch (const NotAnException& e) {
    EXPECT_EQ(e.code, 5);
  }
  try {
    f_periodic.get();
    ADD_FAILURE() << "no exception";
  } catch (const NotAnException& e) {
    EXPECT_EQ(e.code, 11);
  }
  EXPECT_EQ(periodic_runs.load(), 3) << "a periodic task stops at its first failure";
  EXPECT_TRUE(f_periodic.is_done());
  EXPECT_FALSE(f_periodic.is_cancelled());
  // get() may be called again on any copy: the same exception.
  auto copy = f_custom;
  EXPECT_THROW(copy.get(), NotAnException);

  ASSERT_TRUE(eventually([&] {
    std::lock_guard lock(mu);
    return uncaught.size() >= 4;
  }));
  EXPECT_TRUE(s.wait_idle(kPatience));
  std::lock_guard lock(mu);
  ASSERT_EQ(uncaught.size(), 4u) << "three execute()'d failures and one periodic failure";
  int logic = 0, ints = 0, customs = 0;
  for (std::exception_ptr e : uncaught) {
    try {
      std::rethrow_exception(e);
    } catch (const std::logic_error&) {
      ++logic;
    } catch (int) {
      ++ints;
    } catch (const NotAnException&) {
      ++customs;
    }
  }
  EXPECT_EQ(logic, 1);
  EXPECT_EQ(ints, 1);
  EXPECT_EQ(customs, 2);
  EXPECT_EQ(s.submit([] { return 42; }).get(), 42) << "the thread that ran the failures still works";
}

// An execute()'d task returned by shutdown_now() and run by the caller has no future either:
// its exception goes to on_uncaught, on the thread that ran it, like any other.
TEST(Faults, ExecutedTaskRunFromShutdownNowReportsToOnUncaught) {
  Watchdog dog("Task::run() of a failing execute()'d task", kHangLimit);
  std::atomic<int> calls{0};
  std::thread::id where;
  kairos::Options o = single_thread();
  o.on_uncaught = [&](std::exception_ptr e) {
    where = std::this_thread::get_id();
    try {
      std::rethrow_exception(e);
    } catch (const NotAnException& x) {
      if (x.code == 21) ++calls;
    } catch (...) {
    }
  };
  kairos::Scheduler s(o);
  Gate release;
  std::atomic<bool> started{false};
  auto blocker = s.submit([&] {
    started = true;
    release.wait();
  });
  ASSERT_TRUE(eventually([&] { return started.load(); }));
  s.execute([] { throw NotAnException{21}; });  // queued behind the blocker
  std::vector<kairos::Task> tasks = s.shutdown_now();
  release.open();
  ASSERT_EQ(tasks.size(), 1u);
  testing::internal::CaptureStderr();
  tasks[0].run();
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(calls.load(), 1) << "on_uncaught was not called; stderr got: " << err;
  EXPECT_EQ(where, std::this_thread::get_id());
  blocker.get();
  EXPECT_TRUE(s.await_termination(kPatience));
}

// ---- caller_runs from a scheduler thread -------------------------------------------------------

TEST(Faults, CallerRunsFromInsideATaskRunsInThatTaskThread) {
  Watchdog dog("caller_runs inside a task", kHangLimit);
  kairos::Options o = single_thread();
  o.capacity = 1;
  o.rejection = kairos::Rejection::caller_runs;
  kairos::Scheduler s(o);
  std::thread::id outer, inner, periodic_first;
  std::atomic<int> periodic_runs{0};
  bool inner_done_on_return = false;
  int inner_value = 0;
  kairos::ScheduledFuture<void> periodic;
  auto f = s.submit([&] {
    outer = std::this_thread::get_id();
    auto filler = s.schedule([] {}, 1h);  // the one pending task the capacity allows
    auto g = s.schedule([&] { inner = std::this_thread::get_id(); return 5; }, 1h);
    inner_done_on_return = g.is_done();
    inner_value = g.get();
    // A periodic task over capacity: its first run here, the next ones on the scheduler.
    periodic = s.schedule_at_fixed_rate(
        [&] {
          if (periodic_runs++ == 0) periodic_first = std::this_thread::get_id();
        },
        1h, 1ms);
    EXPECT_EQ(periodic_runs.load(), 1);
    filler.cancel();
  });
  f.get();
  EXPECT_EQ(inner, outer) << "caller_runs ran the task on the submitting (scheduler) thread";
  EXPECT_TRUE(inner_done_on_return);
  EXPECT_EQ(inner_value, 5);
  EXPECT_EQ(periodic_first, outer);
  // The periodic task's later runs happen on the scheduler, as usual: its next deadline is its
  // first deadline (1 h) + period, so it stays queued.
  EXPECT_FALSE(periodic.is_done());
  EXPECT_TRUE(periodic.cancel());
  EXPECT_TRUE(s.wait_idle(kPatience));
}

// ---- lifecycle calls from inside a task --------------------------------------------------------

TEST(Faults, ShutdownFromInsideATaskLetsTheRestFinish) {
  Watchdog dog("shutdown() inside a task", kHangLimit);
  kairos::Scheduler s(single_thread());
  auto later = s.schedule([] { return 2; }, 5ms);
  auto f = s.submit([&] {
    s.shutdown();
    return s.is_shutdown();
  });
  EXPECT_TRUE(f.get());
  EXPECT_EQ(later.get(), 2) << "delayed tasks still run (execute_existing_delayed_tasks_after_shutdown)";
  EXPECT_TRUE(s.await_termination(kPatience));
}

TEST(Faults, ShutdownNowFromInsideATaskStopsItAndDropsThePending) {
  Watchdog dog("shutdown_now() inside a task", kHangLimit);
  kairos::Scheduler s(single_thread());
  auto pending = s.schedule([] { return 1; }, 1h);
  std::size_t returned = 0;
  bool own_stop_requested = false;
  auto f = s.submit([&](std::stop_token st) {
    std::vector<kairos::Task> tasks = s.shutdown_now();
    returned = tasks.size();
    own_stop_requested = st.stop_requested();  // the caller is a running task: asked to stop too
    return 3;                                  // tasks dropped here: their futures cancelled
  });
  EXPECT_EQ(f.get(), 3) << "the calling task completes normally";
  EXPECT_EQ(returned, 1u);
  EXPECT_TRUE(own_stop_requested);
  EXPECT_THROW(pending.get(), kairos::CancelledError);
  EXPECT_TRUE(s.await_termination(kPatience));
}

TEST(Faults, AwaitTerminationFromInsideATaskTimesOutInsteadOfDeadlocking) {
  Watchdog dog("await_termination() inside a task", kHangLimit);
  kairos::Scheduler s(single_thread());
  auto f = s.submit([&] {
    s.shutdown();
    // The calling task keeps the scheduler from terminating: a bounded wait returns false.
    return s.await_termination(50ms);
  });
  EXPECT_FALSE(f.get());
  EXPECT_TRUE(s.await_termination(kPatience)) << "terminates once the task has returned";
}

TEST(Faults, DestructorFromInsideATaskReturnsAndDropsThePending) {
  Watchdog dog("~BasicScheduler inside a task", kHangLimit);
  auto owner = std::make_unique<kairos::Scheduler>(single_thread());
  auto pending = owner->schedule([] { return 1; }, 1h);
  Gate destroyed;
  Gate submitted;  // destroying the scheduler while another thread is still inside submit() on
                   // it would be a use after free in the caller: let submit() return first
  std::atomic<bool> stop_seen{false};
  auto f = owner->submit([&](std::stop_token st) {
    submitted.wait();
    owner.reset();  // returns without waiting for this task; its thread exits after it
    stop_seen = st.stop_requested();
    destroyed.open();
    return 4;
  });
  submitted.open();
  ASSERT_TRUE(destroyed.wait());
  EXPECT_EQ(f.get(), 4);
  EXPECT_TRUE(stop_seen.load());
  EXPECT_THROW(pending.get(), kairos::CancelledError);
  EXPECT_TRUE(pending.is_cancelled());
}

// ---- cancelling oneself ---------------------------------------------------------------------

TEST(Faults, ATaskCancellingItselfCompletesAsCancelled) {
  Watchdog dog("self-cancel", kHangLimit);
  kairos::Scheduler s(single_thread());
  Gate handle_ready;
  kairos::ScheduledFuture<int> self;
  std::atomic<bool> cancel_result{false}, cancelled_inside{false};
  self = s.submit([&] {
    handle_ready.wait();
    cancel_result = self.cancel();
    cancelled_inside = self.is_cancelled();
    return 9;  // dropped: the future is already cancelled
  });
  handle_ready.open();
  EXPECT_THROW(self.get(), kairos::CancelledError);
  ASSERT_TRUE(s.wait_idle(kPatience));
  EXPECT_TRUE(cancel_result.load());
  EXPECT_TRUE(cancelled_inside.load());
  EXPECT_FALSE(self.cancel()) << "a second cancel() has nothing to cancel";

  Gate periodic_ready;
  kairos::ScheduledFuture<void> periodic;
  std::atomic<int> runs{0};
  periodic = s.schedule_at_fixed_rate(
      [&] {
        periodic_ready.wait();
        if (++runs == 3) periodic.cancel();
      },
      0ms, 100us);
  periodic_ready.open();
  EXPECT_THROW(periodic.get(), kairos::CancelledError);
  ASSERT_TRUE(s.wait_idle(kPatience));
  EXPECT_EQ(runs.load(), 3) << "no run after the one that cancelled the task";
  EXPECT_EQ(s.queue_size(), 0u);
}

// ---- a task that runs until asked to stop ----------------------------------------------------

TEST(Faults, ShutdownNowStopsATaskThatWaitsForStopAndLeavesTheOthersAlone) {
  Watchdog dog("shutdown_now() with a task that never returns", kHangLimit);
  kairos::Options o = single_thread();
  o.threads_per_shard = 2;
  kairos::Scheduler s(o);
  Gate release_other;
  std::atomic<int> started{0};
  auto endless = s.submit([&](std::stop_token st) {
    ++started;
    while (!st.stop_requested()) std::this_thread::sleep_for(100us);
    return 1;
  });
  auto other = s.submit([&] {
    ++started;
    release_other.wait();
    return 2;
  });
  auto pending = s.schedule([] { return 3; }, 1h);
  ASSERT_TRUE(eventually([&] { return started.load() == 2; }));
  std::vector<kairos::Task> tasks = s.shutdown_now();
  ASSERT_EQ(tasks.size(), 1u);
  EXPECT_EQ(endless.get(), 1) << "asked to stop, it returned; its future completed normally";
  EXPECT_FALSE(other.is_done()) << "a task that ignores stop requests keeps running";
  EXPECT_FALSE(s.await_termination(20ms)) << "and keeps the scheduler from terminating";
  release_other.open();
  EXPECT_EQ(other.get(), 2);
  tasks[0].run();
  EXPECT_EQ(pending.get(), 3) << "a returned task runs in the caller";
  EXPECT_TRUE(s.await_termination(kPatience));
}

// Due tasks waiting behind a running one (one thread) have not started: shutdown_now() must
// return them, or at least not start them afterwards ("returns the tasks that never started";
// Java runs nothing once shutdownNow() has returned, except what was already running).
TEST(Faults, ShutdownNowReturnsDueTasksWaitingBehindARunningOne) {
  Watchdog dog("shutdown_now() behind a running task", kHangLimit);
  kairos::ManualClock clock;
  kairos::BasicScheduler<kairos::ManualClock> s(single_thread(), clock);
  Gate release;
  std::atomic<bool> first_started{false};
  std::atomic<int> later_runs{0};
  auto first = s.schedule([&] {
    first_started = true;
    release.wait();
    return 1;
  }, 1ms);
  auto second = s.schedule([&] { return ++later_runs; }, 1ms);
  auto third = s.schedule([&] { return ++later_runs; }, 1ms);
  clock.advance(1ms);
  ASSERT_TRUE(eventually([&] { return first_started.load(); }));
  std::vector<kairos::Task> tasks = s.shutdown_now();
  release.open();
  EXPECT_EQ(first.get(), 1) << "the running task completes";
  ASSERT_TRUE(s.await_termination(kPatience));
  EXPECT_EQ(later_runs.load(), 0) << "tasks that had not started ran after shutdown_now() returned";
  EXPECT_EQ(tasks.size(), 2u) << "the due tasks that never started are not in shutdown_now()'s list";
  for (kairos::Task& t : tasks) t.run();
  EXPECT_TRUE(second.is_done());
  EXPECT_TRUE(third.is_done());
}

// While one task runs and another due task waits behind it (one thread), exactly one task is
// pending: queue_size() is 1, and the capacity check, which reads the same count, leaves room
// for one more. A running task is not pending.
TEST(Faults, QueueSizeCountsPendingNotRunningTasks) {
  Watchdog dog("queue_size() behind a running task", kHangLimit);
  kairos::ManualClock clock;
  kairos::Options o = single_thread();
  o.capacity = 2;
  kairos::BasicScheduler<kairos::ManualClock> s(o, clock);
  Gate release;
  std::atomic<bool> first_started{false};
  auto first = s.schedule([&] {
    first_started = true;
    release.wait();
  }, 1ms);
  auto second = s.schedule([] {}, 1ms);
  clock.advance(1ms);
  ASSERT_TRUE(eventually([&] { return first_started.load(); }));
  std::size_t during = s.queue_size();
  bool third_accepted = true, fourth_rejected = false;
  try {
    s.schedule([] {}, 1h);
  } catch (const kairos::RejectedExecution&) {
    third_accepted = false;
  }
  try {
    s.schedule([] {}, 1h);
  } catch (const kairos::RejectedExecution&) {
    fourth_rejected = true;
  }
  release.open();
  EXPECT_EQ(during, 1u) << "queue_size() while the first task runs and the second waits";
  EXPECT_TRUE(third_accepted) << "the running task took a place of the capacity";
  EXPECT_TRUE(fourth_rejected);
  ASSERT_TRUE(s.wait_idle(kPatience));
  EXPECT_TRUE(second.is_done());
}

// ---- the task pool cannot grow ---------------------------------------------------------------

std::atomic<int> g_refused_slabs{0};
void* refuse_slab(std::size_t) {
  g_refused_slabs.fetch_add(1);
  return nullptr;
}

struct PoolRestorer {
  ~PoolRestorer() { kairos::detail::set_slab_allocator_for_testing(nullptr); }
};

TEST(Faults, TaskPoolThatCannotGrowGivesBadAllocAndLosesNothing) {
  Watchdog dog("task pool growth failure", kHangLimit);
  Ledger ledger(4096);
  OutsideScheduler outside;
  std::size_t bad_allocs = 0;
  auto noop = [](Entry&, int, const std::stop_token*) {};
  {
    kairos::Options o;
    o.shards = 2;
    o.threads_per_shard = 2;
    kairos::Scheduler s(o);
    // Accepted before the fault: some due soon, some later, some periodic.
    std::vector<Entry*> before;
    for (int i = 0; i < 200; ++i) {
      std::int64_t delay = (i % 5) * 1'000'000;
      Entry* e = ledger.add(Kind::one_shot, steady_ns() + delay, 0);
      ledger.publish(*e, s.schedule(ledger.body(*e, noop), std::chrono::nanoseconds(delay)));
    }
    for (int i = 0; i < 3; ++i) {
      Entry* e = ledger.add(Kind::fixed_rate, steady_ns(), 500'000);
      ledger.publish(*e, s.schedule_at_fixed_rate(ledger.body(*e, noop), 0ms, 500us));
    }
    PoolRestorer restore;
    kairos::detail::set_slab_allocator_for_testing(&refuse_slab);
    kairos::detail::release_thread_cache_for_testing();
    int refused_before = g_refused_slabs.load();
    // Every entry point: the pool has to grow, growth fails, the caller gets std::bad_alloc.
    for (int kind = 0; kind < 5; ++kind) {
      Entry* e = ledger.add(kind == 3 ? Kind::fixed_rate : kind == 4 ? Kind::execute : Kind::one_shot, steady_ns(),
                            1'000'000);
      try {
        switch (kind) {
          case 0: ledger.publish(*e, s.schedule(ledger.body(*e, noop), 1ms)); break;
          case 1: ledger.publish(*e, s.submit(ledger.body(*e, noop))); break;
          case 2: ledger.publish(*e, s.schedule_at(ledger.body(*e, noop), kairos::SteadyClock::now())); break;
          case 3: ledger.publish(*e, s.schedule_at_fixed_rate(ledger.body(*e, noop), 0ms, 1ms)); break;
          case 4:
            s.execute(ledger.body(*e, noop));
            ledger.accepted_without_future(*e);
            break;
        }
        ADD_FAILURE() << "submission " << kind << " succeeded with a pool that cannot grow";
      } catch (const std::bad_alloc&) {
        ledger.failed(*e);
        ++bad_allocs;
      }
    }
    EXPECT_GT(g_refused_slabs.load(), refused_before) << "the pool never tried to grow: the test proves nothing";
    // The same from inside a task, on a scheduler thread.
    kairos::detail::set_slab_allocator_for_testing(nullptr);
    std::atomic<int> inner_bad_alloc{0};
    Entry* outer = ledger.add(Kind::one_shot, steady_ns(), 0);
    ledger.publish(*outer, s.submit(ledger.body(*outer, [&](Entry&, int, const std::stop_token*) {
      kairos::detail::set_slab_allocator_for_testing(&refuse_slab);
      kairos::detail::release_thread_cache_for_testing();
      Entry* e = ledger.add(Kind::one_shot, steady_ns(), 0);
      try {
        ledger.publish(*e, s.submit(ledger.body(*e, noop)));
      } catch (const std::bad_alloc&) {
        ledger.failed(*e);
        ++inner_bad_alloc;
      }
      kairos::detail::set_slab_allocator_for_testing(nullptr);
    })));
    ASSERT_EQ(outer->future.wait_for(kPatience), std::future_status::ready);
    EXPECT_EQ(inner_bad_alloc.load(), 1);
    Entry* after = ledger.add(Kind::one_shot, steady_ns(), 0);
    ledger.publish(*after, s.submit(ledger.body(*after, noop)));
    ASSERT_EQ(after->future.wait_for(kPatience), std::future_status::ready) << "submissions work again";
    for (std::size_t i = 0; i < ledger.size(); ++i)
      if (ledger.at(i).periodic()) ledger.cancel(ledger.at(i), false);
    s.shutdown();
    ASSERT_TRUE(s.await_termination(kPatience));
    Summary sum;
    std::vector<std::string> problems = ledger.verify(Allowances{}, sum);
    for (const std::string& p : problems) ADD_FAILURE() << p;
    EXPECT_EQ(sum.failed, 6u);
    std::printf("[ pool     ] %s\n", sum.str().c_str());
  }
  EXPECT_EQ(bad_allocs, 5u);
  ledger.release_futures();
  for (const std::string& p : ledger.verify_destroyed()) ADD_FAILURE() << p;
}

}  // namespace
}  // namespace kairos_test
