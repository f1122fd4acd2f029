// regression_v3_test.cpp: one test per defect found by the third adversarial round (re-arm, poll
// mode, hooks, the timer queue's growth). Each names what it pins and failed before its fix:
//   1  a poll() after a burst of more due tasks than one drain takes in ran nothing, and
//      next_deadline() missed tasks submitted before it (a drain of at most 64 passes, and a
//      submission confirmed only by a pass that came back short);
//   2  capacity counted a re-arm in flight as a pending task (its sequence number): submissions
//      were refused below capacity, and discard_oldest cancelled a live task to "make room";
//   3  a timer queue that could not grow threw bad_alloc on the runner (terminate), or out of
//      poll() for ever after; shutdown_now() and the destructor allocated O(n);
//   4  re-armed tasks were judged by the deadline they were filed at: shutdown_now()'s order,
//      the shutdown policies (in the queue and in a runner's batch), next_deadline();
//   5  an on_rejected or on_uncaught hook that destroyed its scheduler ran on a freed closure;
//   6  next_deadline() from a task did not look at the due tasks waiting in the running poll's batch.
// A hang is turned into a failure with a message (watchdogs); no test depends on a sleep.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <stdexcept>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <kairos/kairos.hpp>

#include "page_array.hpp"
#include "support.hpp"

namespace kairos_test {
namespace {

using namespace std::chrono_literals;

kairos::Options polled() {
  kairos::Options o;
  o.poll_mode = true;
  return o;
}
kairos::ManualClock::time_point at(std::chrono::nanoseconds d) { return kairos::ManualClock::time_point(d); }

// ---- 1 ----------------------------------------------------------------------------------------
// 50,000 due tasks submitted (and the submitting thread joined) before the first poll: one poll
// runs them all, and next_deadline() asked first reports them. Before the fix the first poll ran
// 0 (4 polls were needed) and next_deadline() returned nullopt.
TEST(RegressionV3, PollAfterABurstLargerThanOneDrainRunsEveryTaskSubmittedBeforeIt) {
  Watchdog dog("poll after a burst", kHangLimit);
  for (bool ask_first : {false, true}) {
    kairos::ManualClock clock;
    ManualScheduler s(polled(), clock);
    constexpr int kTasks = 50'000;
    std::atomic<int> ran{0};
    std::thread producer([&] {
      for (int i = 0; i < kTasks; ++i) s.execute([&] { ran.fetch_add(1, std::memory_order_relaxed); });
    });
    producer.join();
    if (ask_first) {
      auto d = s.next_deadline();
      ASSERT_TRUE(d.has_value()) << "next_deadline() missed " << kTasks << " tasks submitted before it";
      EXPECT_EQ(*d, at(0ns));
    }
    EXPECT_EQ(s.poll(), static_cast<std::size_t>(kTasks)) << "the first poll after the burst";
    EXPECT_EQ(ran.load(), kTasks);
  }
}

// Under two steady producers (tasks far away), a task the caller submitted just before asking is
// never later than what next_deadline() reports. Before the fix ~0.1 % of the answers were later
// (up to 605 s).
TEST(RegressionV3, NextDeadlineUnderSteadyProducersCoversTheCallersOwnSubmission) {
  Watchdog dog("next_deadline under producers", kHangLimit);
  kairos::Options o = polled();
  o.remove_on_cancel = true;
  kairos::ManualClock clock;
  ManualScheduler s(o, clock);
  std::atomic<bool> stop{false};
  std::vector<std::thread> producers;
  for (int p = 0; p < 2; ++p)
    producers.emplace_back([&] {  // steady, not a flood the loop could never keep up with
      while (!stop.load(std::memory_order_relaxed)) {
        for (int i = 0; i < 256; ++i) s.schedule([] {}, 1h).cancel();
        std::this_thread::sleep_for(20us);
      }
    });
  std::mt19937_64 rng(stress_seed());
  std::uniform_int_distribution<int> ms(1, 3'000'000);
  std::size_t calls = 0, later = 0;
  auto until = std::chrono::steady_clock::now() + stress_budget(1.0);
  std::vector<kairos::ScheduledFuture<void>> mine;
  while (std::chrono::steady_clock::now() < until) {
    auto delay = std::chrono::milliseconds(ms(rng));
    mine.push_back(s.schedule([] {}, delay));
    auto d = s.next_deadline();
    ++calls;
    if (!d || *d > at(delay)) ++later;
    mine.back().cancel();
    mine.clear();
  }
  stop = true;
  for (auto& t : producers) t.join();
  EXPECT_EQ(later, 0u) << "of " << calls << " calls";
}

// ---- 2 ----------------------------------------------------------------------------------------
// Capacity 4, three pending re-armable tasks re-armed as fast as two other threads can, and the
// caller submitting and cancelling a fourth: never refused (abort), and discard_oldest never
// cancels one of the three. Before the fix 5-8 % were refused, and a live task was cancelled in
// every run.
TEST(RegressionV3, CapacityIsNotTakenByReArmsInFlight) {
  Watchdog dog("capacity with re-arms in flight", kHangLimit);
  for (kairos::Rejection policy : {kairos::Rejection::abort, kairos::Rejection::discard_oldest}) {
    kairos::Options o = single_thread();
    o.capacity = 4;
    o.rejection = policy;
    o.remove_on_cancel = true;
    kairos::Scheduler s(o);
    std::vector<kairos::ScheduledFuture<void>> held;
    for (int i = 0; i < 3; ++i) held.push_back(s.schedule_rearmable([] {}, 1h));
    std::atomic<bool> stop{false};
    std::vector<std::thread> rearmers;
    for (int r = 0; r < 2; ++r)
      rearmers.emplace_back([&, r] {
        for (int i = 0; !stop.load(std::memory_order_relaxed); ++i) held[(i + r) % 3].rearm(1h + std::chrono::seconds(i % 7));
      });
    std::size_t refused = 0, submitted = 0;
    auto until = std::chrono::steady_clock::now() + stress_budget(0.5);
    while (std::chrono::steady_clock::now() < until) {
      try {
        auto f = s.schedule([] {}, 2h);
        ++submitted;
        f.cancel();
      } catch (const kairos::RejectedExecution&) {
        ++refused;
      }
    }
    stop = true;
    for (auto& t : rearmers) t.join();
    EXPECT_EQ(refused, 0u) << "of " << submitted + refused << " submissions below capacity";
    for (auto& f : held) EXPECT_FALSE(f.is_cancelled()) << "a live task was cancelled to make room";
    (void)s.shutdown_now();
  }
}

// ---- 3 ----------------------------------------------------------------------------------------
// The timer queue cannot grow (as when memory is short): submissions still return, nothing runs
// away or throws on the runner, the tasks wait in the inbox and are all there; once memory is
// back they are taken in and run, and shutdown_now() returns the rest. Before the fix the runner
// died with terminate (accept's push threw).
struct RefuseGrowth {
  RefuseGrowth() { kairos::detail::g_refuse_growth_for_testing.store(true); }
  ~RefuseGrowth() { kairos::detail::g_refuse_growth_for_testing.store(false); }
};

TEST(RegressionV3, ThreadedSchedulerWhoseQueueCannotGrowLosesNothingAndRecovers) {
  Watchdog dog("a queue that cannot grow, threads", kHangLimit);
  kairos::Scheduler s(single_thread());
  std::atomic<int> ran{0};
  std::vector<kairos::ScheduledFuture<void>> far;
  {
    RefuseGrowth refuse;
    for (int i = 0; i < 5'000; ++i) far.push_back(s.schedule([] {}, 1h));
    for (int i = 0; i < 100; ++i) s.execute([&] { ran.fetch_add(1); });
    EXPECT_EQ(s.queue_size(), 5'100u);
    EXPECT_FALSE(s.wait_idle(50ms)) << "set-up: the due tasks should wait for the queue to grow";
    EXPECT_EQ(ran.load(), 0);
  }
  EXPECT_TRUE(eventually([&] { return ran.load() == 100; })) << "memory is back: the due tasks must run";
  EXPECT_TRUE(s.wait_idle(kPatience));
  EXPECT_EQ(s.shutdown_now().size(), 5'000u);
  for (auto& f : far) EXPECT_FALSE(f.is_done() && !f.is_cancelled());
}

TEST(RegressionV3, PollWhoseQueueCannotGrowDoesNotThrowAndRunsOnceMemoryIsBack) {
  Watchdog dog("a queue that cannot grow, poll mode", kHangLimit);
  kairos::ManualClock clock;
  ManualScheduler s(polled(), clock);
  std::atomic<int> ran{0};
  {
    RefuseGrowth refuse;
    for (int i = 0; i < 300; ++i) s.execute([&] { ran.fetch_add(1); });
    EXPECT_NO_THROW(EXPECT_EQ(s.poll(), 0u));
    EXPECT_NO_THROW(EXPECT_EQ(s.poll(), 0u)) << "a second poll must not find the poller's role taken";
    EXPECT_NO_THROW((void)s.next_deadline());
    EXPECT_EQ(s.queue_size(), 300u);
  }
  EXPECT_EQ(s.poll(), 300u);
  EXPECT_EQ(ran.load(), 300);
}

TEST(RegressionV3, ShutdownNowAndTheDestructorWhileTheQueueCannotGrowLoseNothing) {
  Watchdog dog("shutdown_now with a queue that cannot grow", kHangLimit);
  std::vector<kairos::ScheduledFuture<void>> fs;
  {
    kairos::Scheduler s(single_thread());
    for (int i = 0; i < 2'000; ++i) fs.push_back(s.schedule([] {}, 1h));
    ASSERT_TRUE(s.wait_idle(kPatience));
    RefuseGrowth refuse;
    for (int i = 0; i < 2'000; ++i) fs.push_back(s.schedule([] {}, 2h));  // these stay in the inbox
    std::vector<kairos::Task> back = s.shutdown_now();
    EXPECT_EQ(back.size(), 4'000u) << "shutdown_now() must return the tasks the queue could not take in too";
  }
  for (auto& f : fs) EXPECT_TRUE(f.is_cancelled());  // dropped with the returned Tasks
  {
    kairos::Scheduler s(single_thread());
    for (int i = 0; i < 1'000; ++i) fs.push_back(s.schedule([] {}, 1h));
    RefuseGrowth refuse;
    for (int i = 0; i < 1'000; ++i) fs.push_back(s.schedule([] {}, 2h));
  }  // the destructor: no terminate
  for (auto& f : fs) EXPECT_TRUE(f.is_cancelled());
}

// ---- 4 ----------------------------------------------------------------------------------------
// A one-thread shard on a ManualClock whose runner is blocked in A, with D (re-armable, due) in
// its batch behind it.
struct BlockedRunner {
  kairos::ManualClock clock;
  ManualScheduler s;
  Gate gate;
  std::atomic<bool> a_started{false};
  kairos::ScheduledFuture<void> a, d;
  std::atomic<bool> d_ran{false};
  bool ready = false;
  explicit BlockedRunner(kairos::Options o) : s(o, clock) {
    a = s.schedule([this] { a_started = true; gate.wait(); }, 10ms);
    d = s.schedule_rearmable([this] { d_ran = true; }, 20ms);
    if (!s.wait_idle(kPatience)) return;
    clock.advance(30ms);
    ready = eventually([&] { return a_started.load(); });
  }
  ~BlockedRunner() {
    gate.open();
    (void)s.shutdown_now();
    EXPECT_TRUE(s.await_termination(kPatience));
  }
};

TEST(RegressionV3, ShutdownNowOrdersABatchedReArmedTaskByItsNewestDeadline) {
  Watchdog dog("shutdown_now order of a re-armed batched task", kHangLimit);
  BlockedRunner f(single_thread());
  ASSERT_TRUE(f.ready);
  ASSERT_TRUE(f.d.rearm(3h));
  std::atomic<bool> e_ran{false};
  auto e = f.s.schedule([&] { e_ran = true; }, 1h);
  std::vector<kairos::Task> back = f.s.shutdown_now();
  ASSERT_EQ(back.size(), 2u);
  back[0].run();
  EXPECT_TRUE(e_ran.load()) << "the task due in 1 h must come first, not the one re-armed to +3 h";
  EXPECT_FALSE(f.d_ran.load());
}

TEST(RegressionV3, ShutdownWithoutDelayedTasksCancelsABatchedTaskReArmedLater) {
  Watchdog dog("shutdown policy, re-armed batched task", kHangLimit);
  kairos::Options o = single_thread();
  o.execute_existing_delayed_tasks_after_shutdown = false;
  BlockedRunner f(o);
  ASSERT_TRUE(f.ready);
  ASSERT_TRUE(f.d.rearm(3h));
  f.s.shutdown();
  f.gate.open();
  EXPECT_TRUE(eventually([&] { return f.d.is_done(); })) << "D must be cancelled, not re-filed for +3 h";
  f.clock.advance(4h);
  EXPECT_TRUE(f.s.await_termination(kPatience));
  EXPECT_TRUE(f.d.is_cancelled());
  EXPECT_FALSE(f.d_ran.load()) << "D ran after shutdown() for a deadline the policy refuses";
}

TEST(RegressionV3, ShutdownWithoutDelayedTasksCancelsAQueuedTaskReArmedLater) {
  kairos::ManualClock clock;
  ManualScheduler s(polled(), clock);
  bool ran = false;
  auto r = s.schedule_rearmable([&] { ran = true; }, 10ms);
  EXPECT_EQ(s.poll(), 0u);  // filed at +10 ms
  ASSERT_TRUE(r.rearm(3h));  // later: stays filed at +10 ms until then
  clock.advance(20ms);       // its filed deadline has passed, its newest has not
  s.set_execute_existing_delayed_tasks_after_shutdown(false);
  s.shutdown();
  EXPECT_TRUE(r.is_cancelled()) << "judged by the deadline it was filed at, it slipped through as due";
  clock.advance(4h);
  (void)s.poll();
  EXPECT_FALSE(ran);
  EXPECT_TRUE(s.is_terminated());
}

TEST(RegressionV3, NextDeadlineReportsTheNewestDeadlineOfAReArmedHead) {
  kairos::ManualClock clock;
  ManualScheduler s(polled(), clock);
  auto r = s.schedule_rearmable([] {}, 10ms);
  ASSERT_EQ(s.next_deadline(), at(10ms));
  ASSERT_TRUE(r.rearm(1h));
  EXPECT_EQ(s.next_deadline(), at(1h)) << "a heartbeat loop would wake at +10 ms for nothing";
  ASSERT_TRUE(r.rearm(5ms));
  EXPECT_EQ(s.next_deadline(), at(5ms));
}

// ---- 5 ----------------------------------------------------------------------------------------
// The shut-down-on-fatal-error pattern: a hook destroys its own scheduler. Before the fix the
// hook's closure was freed while it ran (ASan: heap-use-after-free; SIGSEGV in Release).
TEST(RegressionV3, OnRejectedThatDestroysItsSchedulerIsSafe) {
  auto s = std::make_unique<kairos::Scheduler>();
  std::string seen;
  kairos::Options o;
  o.on_rejected = [&, big = std::string(200, 'x')](kairos::Task, const kairos::RejectionInfo&) {
    s.reset();
    seen = big;  // the closure's capture, after its scheduler is gone
  };
  s = std::make_unique<kairos::Scheduler>(o);
  s->shutdown();
  (void)s->schedule([] {}, 1ms);
  EXPECT_EQ(s, nullptr);
  EXPECT_EQ(seen.size(), 200u);
}

TEST(RegressionV3, OnUncaughtOnTheCallersThreadThatDestroysItsSchedulerIsSafe) {
  std::unique_ptr<kairos::Scheduler> s;
  std::string seen;
  kairos::Options o = single_thread();
  o.capacity = 1;
  o.rejection = kairos::Rejection::caller_runs;
  o.on_uncaught = [&, big = std::string(200, 'y')](std::exception_ptr) {
    s.reset();
    seen = big;
  };
  s = std::make_unique<kairos::Scheduler>(o);
  auto holder = s->schedule([] {}, 1h);  // pending: holds the one place
  auto* raw = s.get();
  raw->execute([] { throw 7; });  // over capacity: runs here; its exception goes to on_uncaught
  EXPECT_EQ(s, nullptr);
  EXPECT_EQ(seen.size(), 200u);
}

// ---- 6 ----------------------------------------------------------------------------------------
// A task of a poll asks next_deadline() while the same poll holds b (+2 ms) and c (+3 ms) in its
// batch: the answer is b's deadline. Before the fix it was +1 h (the queue's head only).
TEST(RegressionV3, NextDeadlineFromATaskSeesTheRunningPollsBatch) {
  kairos::ManualClock clock;
  ManualScheduler s(polled(), clock);
  std::optional<kairos::ManualClock::time_point> asked;
  std::size_t pending_then = 0;
  s.schedule([&] { asked = s.next_deadline(); pending_then = s.queue_size(); }, 1ms);
  s.schedule([] {}, 2ms);
  s.schedule([] {}, 3ms);
  s.schedule([] {}, 1h);
  clock.advance(3ms);
  EXPECT_EQ(s.poll(), 3u);
  EXPECT_EQ(pending_then, 3u);
  ASSERT_TRUE(asked.has_value());
  EXPECT_EQ(*asked, at(2ms));
}

// ---- where the docs were silent -----------------------------------------------------------------
// An untimed invoke_all/invoke_any from a task whose shard has no other thread (or from a poll's
// task) waited for itself for ever; now a std::logic_error says so. The timed forms still time out.
TEST(RegressionV3, UntimedInvokeFromATaskThatWouldWaitForItselfIsALogicError) {
  Watchdog dog("invoke from a one-thread shard's task", kHangLimit);
  std::vector<std::function<int()>> work{[] { return 1; }, [] { return 2; }};
  {
    kairos::Scheduler s(single_thread());
    auto all = s.submit([&] {
      try {
        (void)s.invoke_all(work);
        return std::string("no error");
      } catch (const std::logic_error& e) {
        return std::string(e.what());
      }
    });
    auto any = s.submit([&] {
      try {
        (void)s.invoke_any(work);
        return std::string("no error");
      } catch (const std::logic_error& e) {
        return std::string(e.what());
      }
    });
    auto timed = s.submit([&] { return s.invoke_all(work, 10ms).size(); });
    EXPECT_NE(all.get().find("invoke_all"), std::string::npos);
    EXPECT_NE(any.get().find("invoke_any"), std::string::npos);
    EXPECT_EQ(timed.get(), 2u);
    EXPECT_EQ(s.invoke_any(work, kPatience) > 0, true);  // from outside: fine
  }
  {
    kairos::ManualClock clock;
    ManualScheduler s(polled(), clock);
    std::string what;
    s.execute([&] {
      try {
        (void)s.invoke_all(work);
      } catch (const std::logic_error& e) {
        what = e.what();
      }
    });
    EXPECT_EQ(s.poll(), 1u);
    EXPECT_NE(what.find("invoke_all"), std::string::npos);
  }
  {
    kairos::Options two = single_thread();
    two.threads_per_shard = 2;  // a follower can run them: allowed, and it completes
    kairos::Scheduler s(two);
    auto all = s.submit([&] { return s.invoke_all(work).size(); });
    EXPECT_EQ(all.get(), 2u);
  }
}

}  // namespace
}  // namespace kairos_test
