// hooks_test.cpp: the hooks of Options that mirror Java's ThreadPoolExecutor extension points:
// on_thread_start (ThreadFactory), on_rejected (RejectedExecutionHandler), before_execute /
// after_execute / terminated (the protected hooks) and decorate_task (decorateTask).
// JAVA-SEMANTICS.md items 59-63; the JDK's SEST CustomExecutor, DecorateTask, Custom tests.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <exception>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <kairos/kairos.hpp>

#include "support.hpp"

namespace {

using namespace std::chrono_literals;
using kairos_test::Gate;
using kairos_test::kPatience;
using kairos_test::Manual;
using kairos_test::single_thread;

thread_local int t_marker = 0;

// ---- on_thread_start ----------------------------------------------------------------------------

TEST(ThreadStart, RunsOnEveryThreadBeforeItServesAndTheConstructorWaitsForIt) {
  SKIP_IN_POLL_MODE("no scheduler thread to start (poll_test checks on_thread_start is refused)");
  std::mutex mu;
  std::vector<kairos::ThreadInfo> seen;
  std::set<std::thread::id> ids;
  std::vector<std::string> names;
  kairos::Options o = kairos_test::threads(2, 2);
  o.name = "hk";
  o.on_thread_start = [&](const kairos::ThreadInfo& info) {
    t_marker = 100 + static_cast<int>(info.shard * 10 + info.index);
    std::lock_guard lk(mu);
    seen.push_back(info);
    names.emplace_back(info.name);
    ids.insert(std::this_thread::get_id());
  };
  kairos_test::Scheduler s(o);
  {
    std::lock_guard lk(mu);  // the constructor returned: all four ran
    ASSERT_EQ(seen.size(), 4u);
    EXPECT_EQ(ids.size(), 4u);
    std::set<std::string> want{"hk-0-0", "hk-0-1", "hk-1-0", "hk-1-1"};
    EXPECT_EQ(std::set<std::string>(names.begin(), names.end()), want);
    for (auto& i : seen) EXPECT_EQ(i.cpu, -1);
  }
  // The thread-local it set is there when tasks run on that thread.
  int marker = s.submit([] { return t_marker; }).get();
  EXPECT_GE(marker, 100);
  std::lock_guard lk(mu);
  EXPECT_TRUE(ids.count(std::this_thread::get_id()) == 0);
}

TEST(ThreadStart, AThrowingHookFailsTheConstructorWithItsException) {
  SKIP_IN_POLL_MODE("no scheduler thread to start (poll_test checks on_thread_start is refused)");
  std::atomic<int> calls{0};
  kairos::Options o = kairos_test::threads(1, 3);
  o.on_thread_start = [&](const kairos::ThreadInfo& info) {
    calls.fetch_add(1);
    if (info.index == 1) throw std::runtime_error("no SCHED_FIFO");
  };
  try {
    kairos_test::Scheduler s(o);
    FAIL() << "the constructor returned";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "no SCHED_FIFO");
  }
  EXPECT_EQ(calls.load(), 3);  // every thread ran it; all were stopped and joined
}

// ---- on_rejected ----------------------------------------------------------------------------------

TEST(OnRejected, GetsEveryRefusedSubmissionOnceAfterShutdownAndOverridesThePolicy) {
  std::vector<kairos::Task> kept;
  std::vector<kairos::RejectionInfo> why;
  std::thread::id handler_thread;
  kairos::Options o = single_thread();
  o.rejection = kairos::Rejection::abort;  // overridden: nothing throws
  o.on_rejected = [&](kairos::Task t, const kairos::RejectionInfo& info) {
    handler_thread = std::this_thread::get_id();
    why.push_back(info);
    kept.push_back(std::move(t));
  };
  Manual s(o);
  s.shutdown();
  auto f1 = s.schedule([] { return 1; }, 1s);
  auto f2 = s.schedule_at([] {}, s.clock.now());
  auto f3 = s.schedule_at_fixed_rate([] {}, 1s, 1s);
  auto f4 = s.schedule_with_fixed_delay([] {}, 1s, 1s);
  auto f5 = s.submit([] { return 5; });
  s.execute([] {});
  ASSERT_EQ(why.size(), 6u);
  EXPECT_EQ(handler_thread, std::this_thread::get_id());
  for (auto& w : why) {
    EXPECT_TRUE(w.shut_down);
    EXPECT_EQ(w.capacity, 0u);
  }
  EXPECT_EQ(s.stats().total().rejected, 6u);
  EXPECT_FALSE(f1.is_done());  // the handler holds the task: it may still run it
  kept[0].run();
  EXPECT_EQ(f1.get(), 1);
  kept[4].run();
  EXPECT_EQ(f5.get(), 5);
  EXPECT_TRUE(kept[2].is_periodic());
  kept.clear();  // dropped: the futures complete as cancelled (Java's would never complete)
  EXPECT_TRUE(f2.is_cancelled());
  EXPECT_TRUE(f3.is_cancelled());
  EXPECT_TRUE(f4.is_cancelled());
}

TEST(OnRejected, OverCapacityItGetsTheCapacityAndDiscardOldestIsNotApplied) {
  std::vector<kairos::RejectionInfo> why;
  kairos::Options o = single_thread();
  o.capacity = 2;
  o.rejection = kairos::Rejection::discard_oldest;
  o.on_rejected = [&](kairos::Task t, const kairos::RejectionInfo& info) {
    why.push_back(info);
    t.run();  // caller-runs, decided by the handler
  };
  Manual s(o);
  auto a = s.schedule([] { return 1; }, 1s);
  auto b = s.schedule([] { return 2; }, 2s);
  auto c = s.schedule([] { return 3; }, 3s);
  ASSERT_EQ(why.size(), 1u);
  EXPECT_FALSE(why[0].shut_down);
  EXPECT_EQ(why[0].capacity, 2u);
  EXPECT_EQ(why[0].shard, 0u);
  EXPECT_EQ(c.get(), 3);  // ran in the handler
  EXPECT_FALSE(a.is_done());  // not discarded
  EXPECT_FALSE(b.is_done());
  EXPECT_EQ(s.queue_size(), 2u);
}

TEST(OnRejected, AnExceptionFromTheHandlerLeavesTheSubmitCall) {
  kairos::Options o = single_thread();
  o.on_rejected = [](kairos::Task, const kairos::RejectionInfo&) { throw std::logic_error("refused"); };
  kairos_test::Scheduler s(o);
  s.shutdown();
  EXPECT_THROW(s.submit([] {}), std::logic_error);
  EXPECT_THROW(s.execute([] {}), std::logic_error);
}

// ---- before_execute / after_execute / decorate_task ----------------------------------------------

struct Log {
  std::mutex mu;
  std::vector<std::string> lines;
  void add(std::string s) {
    std::lock_guard lk(mu);
    lines.push_back(std::move(s));
  }
  std::vector<std::string> get() {
    std::lock_guard lk(mu);
    return lines;
  }
};

std::string what_of(std::exception_ptr e) {
  if (!e) return "ok";
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    return x.what();
  }
}

TEST(ExecutionHooks, RunAroundEveryRunOnTheRunnersThreadInOrderWithTheException) {
  Log log;
  std::atomic<const void*> last_task{nullptr};
  kairos::Options o = single_thread();
  o.before_execute = [&](const kairos::ExecutionInfo& i) {
    last_task = i.task;
    log.add("before " + std::to_string(i.deadline_ns) + (i.periodic ? " p" : ""));
  };
  o.decorate_task = [&](const kairos::ExecutionInfo&, kairos::RunFn run) {
    log.add("wrap in");
    run();
    log.add("wrap out");
  };
  o.after_execute = [&](const kairos::ExecutionInfo&, std::exception_ptr e) { log.add("after " + what_of(e)); };
  Manual s(o);
  std::int64_t t0 = kairos_test::ns(s.clock.now());
  auto ok = s.schedule([&] { log.add("run ok"); }, 1s);
  auto bad = s.schedule([&]() -> int { log.add("run bad"); throw std::runtime_error("boom"); }, 2s);
  auto per = s.schedule_at_fixed_rate([&] { log.add("tick"); }, 3s, 1s);
  s.clock.advance(4s);
  ASSERT_TRUE(s.wait_idle(kPatience));  // a batch ends (hooks included) before it is idle
  EXPECT_THROW(bad.get(), std::runtime_error);
  const std::string d1 = std::to_string(t0 + 1'000'000'000), d2 = std::to_string(t0 + 2'000'000'000),
                    d3 = std::to_string(t0 + 3'000'000'000), d4 = std::to_string(t0 + 4'000'000'000);
  std::vector<std::string> want{
      "before " + d1, "wrap in", "run ok", "wrap out", "after ok",
      "before " + d2, "wrap in", "run bad", "wrap out", "after boom",
      "before " + d3 + " p", "wrap in", "tick", "wrap out", "after ok",
      "before " + d4 + " p", "wrap in", "tick", "wrap out", "after ok"};
  EXPECT_EQ(log.get(), want);
  per.cancel();
}

TEST(ExecutionHooks, AfterExecuteRunsAfterTheFutureCompletedAndOnTheSameThread) {
  std::mutex mu;
  std::vector<std::thread::id> before, after;
  std::vector<bool> done_in_after;
  std::atomic<kairos::ScheduledFuture<std::thread::id>*> fut{nullptr};
  kairos::Options o = single_thread();
  o.before_execute = [&](const kairos::ExecutionInfo&) {
    std::lock_guard lk(mu);
    before.push_back(std::this_thread::get_id());
  };
  o.after_execute = [&](const kairos::ExecutionInfo&, std::exception_ptr) {
    std::lock_guard lk(mu);
    after.push_back(std::this_thread::get_id());
    done_in_after.push_back(fut.load()->is_done());
  };
  Manual s(o);
  auto f = s.schedule([] { return std::this_thread::get_id(); }, 1s);
  fut = &f;  // before the clock lets it run
  s.clock.advance(1s);
  auto task_thread = f.get();
  ASSERT_TRUE(s.wait_idle(kPatience));
  std::lock_guard lk(mu);
  EXPECT_EQ(before, std::vector<std::thread::id>{task_thread});
  EXPECT_EQ(after, std::vector<std::thread::id>{task_thread});
  EXPECT_EQ(done_in_after, std::vector<bool>{true});  // Java: afterExecute follows completion
}

TEST(ExecutionHooks, ADecoratorThatSkipsOrRepeatsRunStillRunsTheTaskExactlyOnce) {
  std::atomic<int> mode{0};  // 0: never calls run, 1: calls it twice, 2: throws before it
  std::vector<std::string> uncaught;
  std::mutex mu;
  kairos::Options o = single_thread();
  o.decorate_task = [&](const kairos::ExecutionInfo&, kairos::RunFn run) {
    int m = mode.load();
    if (m == 1) {
      run();
      run();
    }
    if (m == 2) throw std::runtime_error("decorator");
  };
  o.on_uncaught = [&](std::exception_ptr e) {
    std::lock_guard lk(mu);
    uncaught.push_back(what_of(e));
  };
  Manual s(o);
  std::atomic<int> runs{0};
  for (int m = 0; m < 3; ++m) {
    mode = m;
    auto f = s.submit([&] { return ++runs; });
    EXPECT_EQ(f.get(), m + 1);
    ASSERT_TRUE(s.wait_idle(kPatience));
  }
  EXPECT_EQ(runs.load(), 3);
  std::lock_guard lk(mu);
  EXPECT_EQ(uncaught, std::vector<std::string>{"decorator"});
}

TEST(ExecutionHooks, HookExceptionsGoToOnUncaughtAndLeaveTheTaskAlone) {
  std::vector<std::string> uncaught;
  std::mutex mu;
  kairos::Options o = single_thread();
  o.before_execute = [](const kairos::ExecutionInfo&) { throw std::runtime_error("before"); };
  o.after_execute = [](const kairos::ExecutionInfo&, std::exception_ptr) { throw std::runtime_error("after"); };
  o.on_uncaught = [&](std::exception_ptr e) {
    std::lock_guard lk(mu);
    uncaught.push_back(what_of(e));
  };
  kairos_test::Scheduler s(o);
  EXPECT_EQ(s.submit([] { return 42; }).get(), 42);
  ASSERT_TRUE(s.wait_idle(kPatience));
  EXPECT_EQ(s.submit([] { return 43; }).get(), 43);  // the thread survived
  ASSERT_TRUE(s.wait_idle(kPatience));
  std::lock_guard lk(mu);
  EXPECT_EQ(uncaught, (std::vector<std::string>{"before", "after", "before", "after"}));
}

TEST(ExecutionHooks, NotCalledForCallerRunsOrShutdownNowTasks) {
  std::atomic<int> hooks{0};
  kairos::Options o = single_thread();
  o.capacity = 1;
  o.rejection = kairos::Rejection::caller_runs;
  o.before_execute = [&](const kairos::ExecutionInfo&) { ++hooks; };
  Manual s(o);
  auto a = s.schedule([] {}, 1s);
  auto b = s.schedule([] { return 2; }, 1s);  // over capacity: runs here, as in Java, unhooked
  EXPECT_EQ(b.get(), 2);
  auto tasks = s.shutdown_now();
  ASSERT_EQ(tasks.size(), 1u);
  tasks[0].run();
  EXPECT_TRUE(a.is_done());
  EXPECT_EQ(hooks.load(), 0);
}

// ---- terminated -------------------------------------------------------------------------------------

TEST(Terminated, RunsOnceAfterTheLastThreadStoppedBeforeIsTerminated) {
  std::atomic<int> calls{0};
  std::atomic<bool> terminated_inside{true};
  std::atomic<std::size_t> pool_inside{99};
  kairos::BasicScheduler<kairos::SteadyClock>* self = nullptr;
  kairos::Options o = kairos_test::threads(2, 2);
  o.terminated = [&] {
    calls.fetch_add(1);
    terminated_inside = self->is_terminated();
    pool_inside = self->pool_size();
  };
  kairos_test::Scheduler s(o);
  self = &s;
  Gate gate;
  auto f = s.submit([&] { return gate.wait(); });
  s.shutdown();
  EXPECT_EQ(calls.load(), 0);  // a task still runs
  gate.open();
  ASSERT_TRUE(s.await_termination(kPatience));
  EXPECT_EQ(calls.load(), 1);  // await_termination returned after it
  EXPECT_FALSE(terminated_inside.load());
  EXPECT_EQ(pool_inside.load(), 0u);
  s.shutdown();
  s.shutdown_now();
  EXPECT_EQ(calls.load(), 1);
}

TEST(Terminated, RunsFromTheDestructorWhenNeverShutDown) {
  std::atomic<int> calls{0};
  {
    kairos::Options o = single_thread();
    o.terminated = [&] { calls.fetch_add(1); };
    kairos_test::Scheduler s(o);
    s.schedule([] {}, 1h);
  }
  EXPECT_EQ(calls.load(), 1);
}

}  // namespace
