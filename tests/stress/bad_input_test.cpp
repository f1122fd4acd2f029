// bad_input_test.cpp: the bad or extreme inputs a user can give kairos, and what they get: the
// arguments and options it refuses, the ends of the ManualClock, submissions it will not take.
// docs/bad-input.md lists every case with the test that backs it: here, or in the file named for
// the behaviour (extreme delays and periods: tests/core/schedule_test.cpp; futures, cancel,
// thread names: tests/core; capacity: tests/policies/rejection_test.cpp).
#include <gtest/gtest.h>
#include <pthread.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <functional>
#include <future>
#include <memory>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include <kairos/kairos.hpp>

#include "ledger.hpp"
#include "support.hpp"

namespace kairos_test {
namespace {

using namespace std::chrono_literals;
using ManualScheduler = kairos::BasicScheduler<kairos::ManualClock>;
using Tp = kairos::ManualClock::time_point;


// A callable that counts its runs and its live copies.
struct Counted {
  std::atomic<int>* runs;
  Probe probe;
  void operator()() const { runs->fetch_add(1); }
};

// ---- periods ----------------------------------------------------------------------------------

TEST(BadInput, ZeroOrNegativePeriodThrowsInvalidArgument) {
  ProbeCounters probes;
  std::atomic<int> runs{0};
  {
    kairos::Scheduler s(single_thread());
    auto bad = [&](auto period) {
      EXPECT_THROW(s.schedule_at_fixed_rate(Counted{&runs, Probe(probes)}, 0ms, period), std::invalid_argument);
      EXPECT_THROW(s.schedule_with_fixed_delay(Counted{&runs, Probe(probes)}, 0ms, period), std::invalid_argument);
    };
    bad(0ns);
    bad(-1ns);
    bad(std::chrono::hours(-5));
    bad(kairos::Duration::min());
    bad(std::chrono::hours::min());
    bad(std::chrono::duration<double>(0.0));
    bad(std::chrono::duration<double, std::nano>(-0.5));
    bad(std::chrono::duration<double>(-std::numeric_limits<double>::infinity()));
    EXPECT_EQ(s.queue_size(), 0u);
    EXPECT_TRUE(s.wait_idle(kPatience));
  }
  EXPECT_EQ(runs.load(), 0);
  EXPECT_EQ(probes.live(), 0) << "every rejected callable destroyed";
}

// ---- callables --------------------------------------------------------------------------------

TEST(BadInput, EmptyCallableThrowsInvalidArgument) {
  kairos::Scheduler s(single_thread());
  std::function<void()> empty;
  std::function<int()> empty_int;
  std::function<void(std::stop_token)> empty_stoppable;
  void (*null_fn)() = nullptr;
  int (*null_int_fn)() = nullptr;
  EXPECT_THROW(s.schedule(empty, 1ms), std::invalid_argument);
  EXPECT_THROW(s.schedule(empty_int, 1ms), std::invalid_argument);
  EXPECT_THROW(s.schedule(empty_stoppable, 1ms), std::invalid_argument);
  EXPECT_THROW(s.schedule(null_fn, 1ms), std::invalid_argument);
  EXPECT_THROW(s.schedule(null_int_fn, 1ms), std::invalid_argument);
  EXPECT_THROW(s.schedule_at(empty, kairos::SteadyClock::now()), std::invalid_argument);
  EXPECT_THROW(s.schedule_at(empty_int, kairos::SteadyClock::now()), std::invalid_argument);
  EXPECT_THROW(s.schedule_at(null_fn, kairos::SteadyClock::now()), std::invalid_argument);
  EXPECT_THROW(s.schedule_at_fixed_rate(empty, 0ms, 1ms), std::invalid_argument);
  EXPECT_THROW(s.schedule_at_fixed_rate(null_fn, 0ms, 1ms), std::invalid_argument);
  EXPECT_THROW(s.schedule_with_fixed_delay(empty, 0ms, 1ms), std::invalid_argument);
  EXPECT_THROW(s.schedule_with_fixed_delay(null_fn, 0ms, 1ms), std::invalid_argument);
  EXPECT_THROW(s.execute(empty), std::invalid_argument);
  EXPECT_THROW(s.execute(null_fn), std::invalid_argument);
  EXPECT_THROW(s.execute_after(empty, 1ms), std::invalid_argument);
  EXPECT_THROW(s.execute_after(null_fn, 1ms), std::invalid_argument);
  EXPECT_THROW(s.execute_at(empty, kairos::SteadyClock::now()), std::invalid_argument);
  EXPECT_THROW(s.submit(empty_int), std::invalid_argument);
  EXPECT_THROW(s.submit(null_int_fn), std::invalid_argument);
  EXPECT_TRUE(s.wait_idle(kPatience));
  EXPECT_EQ(s.queue_size(), 0u);
}

struct ThrowsOnCopy {
  std::atomic<int>* runs;
  ThrowsOnCopy(std::atomic<int>* r) : runs(r) {}
  ThrowsOnCopy(const ThrowsOnCopy&) { throw std::runtime_error("kairos bad input: copy throws"); }
  void operator()() const { runs->fetch_add(1); }
};

TEST(BadInput, CallableWhoseCopyThrowsLeavesNothingQueued) {
  kairos::Scheduler s(single_thread());
  std::atomic<int> runs{0};
  ThrowsOnCopy f(&runs);
  EXPECT_THROW(s.schedule(f, 0ms), std::runtime_error);
  EXPECT_THROW(s.schedule_at_fixed_rate(f, 0ms, 1ms), std::runtime_error);
  EXPECT_THROW(s.execute(f), std::runtime_error);
  EXPECT_TRUE(s.wait_idle(kPatience));
  EXPECT_EQ(s.queue_size(), 0u);
  EXPECT_EQ(runs.load(), 0);
  EXPECT_EQ(s.submit([] { return 1; }).get(), 1);
}

// ---- extreme delays and deadlines -------------------------------------------------------------

// "Deadline arithmetic never overflows": a task due at time_point::min() runs at once and its
// lateness (start - deadline) saturates instead of wrapping to a negative value, which stats()
// would report as a task started before its deadline.
TEST(BadInput, PastDeadlineLatenessDoesNotOverflow) {
  Manual s;
  s.clock.advance(1h);
  auto a = s.schedule_at([] { return 1; }, Tp::min());
  auto b = s.schedule_at([] { return 2; }, Tp(kairos::Duration(std::numeric_limits<std::int64_t>::min() + 5)));
  EXPECT_EQ(a.get() + b.get(), 3);
  ASSERT_TRUE(s.wait_idle(kPatience));
  kairos::ShardStats total = s.stats().total();
  EXPECT_EQ(total.lateness.below_zero(), 0u) << "a wrapped lateness reads as an early start";
  EXPECT_EQ(total.lateness.count(), 2u);
}

// "hours::max() means never" holds even when a ManualClock is driven to its largest time point:
// a task due "never" must not run then, and a periodic task whose deadline saturated must not
// run again and again at the end of time.
TEST(BadInput, ManualClockAtItsEndDoesNotRunNeverTasks) {
  Watchdog dog("ManualClock advanced to its end", kHangLimit);
  kairos::ManualClock clock;
  ManualScheduler s(single_thread(), clock);
  std::atomic<int> never_runs{0}, rate_runs{0};
  auto never = s.schedule([&] { ++never_runs; }, kairos::Duration::max());
  auto rate = s.schedule_at_fixed_rate([&] { ++rate_runs; }, 0ns, kairos::Duration::max());
  ASSERT_TRUE(s.wait_idle(kPatience));
  ASSERT_EQ(rate_runs.load(), 1);
  clock.advance(kairos::Duration::max());
  EXPECT_EQ(clock.now(), Tp::max()) << "the clock saturates";
  EXPECT_TRUE(s.wait_idle(kPatience)) << "the scheduler never became idle at the end of time";
  EXPECT_EQ(never_runs.load(), 0);
  // Run 1 is due at 0 + Duration::max(), exactly the clock's last time point, so it runs once
  // more; run 2 lies past the clock's range: never.
  EXPECT_EQ(rate_runs.load(), 2) << "a fixed-rate task ran past the clock's range, or missed its last run";
  rate.cancel();
  never.cancel();
}

// wait_idle() times out in real time, also on a ManualClock at its largest time point (with
// nothing queued, the leader must not spin on "now >= no deadline" holding its lock).
TEST(BadInput, ManualClockAtItsEndKeepsWaitIdleBounded) {
  Watchdog dog("wait_idle(1s) on a ManualClock at its end", kHangLimit);
  kairos::ManualClock clock;
  ManualScheduler s(single_thread(), clock);
  clock.advance(kairos::Duration::max());
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(s.wait_idle(1s)) << "nothing is queued: idle";
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
  EXPECT_EQ(s.submit([] { return 1; }).get(), 1);
}

// "Never early" at the very end of a ManualClock: a delay that lands exactly on the largest
// time point is due there (not never), and not one nanosecond before it.
TEST(BadInput, DelayEndingOnTheClocksLastTimePointIsNotEarly) {
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  Manual s;
  s.clock.advance(1ns);
  std::atomic<int> runs{0};
  auto f = s.schedule([&] { ++runs; }, kairos::Duration(kMax - 1));  // due at time_point::max()
  s.clock.advance(kairos::Duration(kMax - 2));                          // now: max - 1
  ASSERT_TRUE(s.wait_idle(kPatience));
  EXPECT_EQ(runs.load(), 0) << "ran one nanosecond before its deadline";
  s.clock.advance(1ns);  // now: max
  ASSERT_TRUE(s.wait_idle(kPatience));
  EXPECT_EQ(runs.load(), 1) << "due at the clock's last time point";
}

// ---- options ----------------------------------------------------------------------------------

TEST(BadInput, InvalidCpuIdsThrowInvalidArgument) {
  int hw = static_cast<int>(std::thread::hardware_concurrency());
  for (int cpu : {-1, hw, hw + 7, INT_MAX, INT_MIN}) {
    kairos::Options o = single_thread();
    o.cpus = {0, cpu};
    EXPECT_THROW(kairos::Scheduler{o}, std::invalid_argument) << "cpu " << cpu;
  }
  kairos::Options ok = single_thread();
  ok.cpus = {hw - 1};
  kairos::Scheduler s(ok);
  EXPECT_EQ(s.submit([] { return 1; }).get(), 1);
}

TEST(BadInput, ZeroShardsOrThreadsThrowInvalidArgument) {
  kairos::Options o = single_thread();
  o.shards = 0;
  EXPECT_THROW(kairos::Scheduler{o}, std::invalid_argument);
  o = single_thread();
  o.threads_per_shard = 0;
  EXPECT_THROW(kairos::Scheduler{o}, std::invalid_argument);
  kairos::ManualClock clock;
  EXPECT_THROW((ManualScheduler{o, clock}), std::invalid_argument);
  o = single_thread();
  o.shards = 0;
  EXPECT_THROW((ManualScheduler{o, clock}), std::invalid_argument);
  o = single_thread();
  o.shards = 65;  // kairos's limit is 64 shards
  EXPECT_THROW(kairos::Scheduler{o}, std::invalid_argument);
}

TEST(BadInput, NegativeSpinWindowThrowsInvalidArgument) {
  EXPECT_THROW(kairos::WaitPolicy::hybrid(-1ns), std::invalid_argument);
  EXPECT_THROW(kairos::WaitPolicy::hybrid(std::chrono::hours::min()), std::invalid_argument);
  EXPECT_NO_THROW(kairos::WaitPolicy::hybrid(0ns));
  EXPECT_NO_THROW(kairos::WaitPolicy::hybrid(std::chrono::hours::max()));
}

// ---- submitting when kairos will not take it --------------------------------------------------

void expect_rejected_after(kairos::Rejection policy, bool now) {
  ProbeCounters probes;
  std::atomic<int> runs{0};
  {
    kairos::Options o = single_thread();
    o.rejection = policy;
    kairos::Scheduler s(o);
    if (now) s.shutdown_now();
    else s.shutdown();
    auto c = [&] { return Counted{&runs, Probe(probes)}; };
    if (policy == kairos::Rejection::abort) {
      EXPECT_THROW(s.schedule(c(), 1ms), kairos::RejectedExecution);
      EXPECT_THROW(s.schedule_at(c(), kairos::SteadyClock::now()), kairos::RejectedExecution);
      EXPECT_THROW(s.submit(c()), kairos::RejectedExecution);
      EXPECT_THROW(s.execute(c()), kairos::RejectedExecution);
      EXPECT_THROW(s.execute_after(c(), 1ms), kairos::RejectedExecution);
      EXPECT_THROW(s.execute_at(c(), kairos::SteadyClock::now()), kairos::RejectedExecution);
      EXPECT_THROW(s.schedule_at_fixed_rate(c(), 0ms, 1ms), kairos::RejectedExecution);
      EXPECT_THROW(s.schedule_with_fixed_delay(c(), 0ms, 1ms), kairos::RejectedExecution);
    } else {
      std::vector<kairos::ScheduledFuture<void>> f;
      f.push_back(s.schedule(c(), 1ms));
      f.push_back(s.schedule_at(c(), kairos::SteadyClock::now()));
      f.push_back(s.submit(c()));
      f.push_back(s.schedule_at_fixed_rate(c(), 0ms, 1ms));
      f.push_back(s.schedule_with_fixed_delay(c(), 0ms, 1ms));
      EXPECT_NO_THROW(s.execute(c()));
      EXPECT_NO_THROW(s.execute_after(c(), 1ms));
      EXPECT_NO_THROW(s.execute_at(c(), kairos::SteadyClock::now()));
      for (auto& x : f) {
        EXPECT_TRUE(x.is_cancelled()) << "discarded: the future completes as cancelled at once";
        EXPECT_THROW(x.get(), kairos::CancelledError);
      }
    }
    EXPECT_TRUE(s.await_termination(kPatience));
    EXPECT_EQ(s.queue_size(), 0u);
  }
  EXPECT_EQ(runs.load(), 0) << "caller_runs does not run anything after shutdown";
  EXPECT_EQ(probes.live(), 0);
}

TEST(BadInput, SubmittingAfterShutdownUnderEachRejectionPolicy) {
  for (auto p : {kairos::Rejection::abort, kairos::Rejection::caller_runs, kairos::Rejection::discard,
                 kairos::Rejection::discard_oldest}) {
    SCOPED_TRACE(static_cast<int>(p));
    expect_rejected_after(p, false);
    expect_rejected_after(p, true);
  }
}

TEST(BadInput, GetOnADroppedShutdownNowTaskThrowsCancelledError) {
  Manual s;
  auto dropped = s.schedule([] { return 1; }, 1ms);
  auto ran = s.schedule([] { return 2; }, 2ms);
  auto periodic = s.schedule_at_fixed_rate([] {}, 3ms, 1ms);
  ASSERT_TRUE(s.wait_idle(kPatience));
  std::vector<kairos::Task> tasks = s.shutdown_now();
  ASSERT_EQ(tasks.size(), 3u);
  { kairos::Task gone = std::move(tasks[0]); }  // destroyed without run()
  EXPECT_TRUE(dropped.is_cancelled());
  EXPECT_THROW(dropped.get(), kairos::CancelledError);
  tasks[1].run();
  tasks[1].run();  // once only: a second run() does nothing
  EXPECT_EQ(ran.get(), 2);
  EXPECT_TRUE(tasks[2].is_periodic());
  tasks[2].run();
  EXPECT_TRUE(periodic.is_cancelled()) << "a periodic task run after shutdown_now() has no later runs";
  kairos::Task moved = std::move(tasks[1]);
  moved.run();  // a moved-from or already-run Task is empty: nothing happens
  EXPECT_TRUE(s.await_termination(kPatience));
}

TEST(BadInput, NegativeTimeoutsReturnAtOnce) {
  kairos::Scheduler s(single_thread());
  auto f = s.schedule([] {}, 1h);
  ASSERT_TRUE(s.wait_idle(kPatience));
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(f.wait_for(-1s), std::future_status::timeout);
  EXPECT_EQ(f.wait_for(std::chrono::hours::min()), std::future_status::timeout);
  EXPECT_TRUE(s.wait_idle(-1s)) << "already idle (the only task is an hour away): one check suffices";
  EXPECT_FALSE(s.await_termination(-1s));
  EXPECT_FALSE(s.await_termination(std::chrono::hours::min()));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
  f.cancel();
}

// ---- capacity ---------------------------------------------------------------------------------

TEST(BadInput, CapacityReachedUnderEachRejectionPolicy) {
  kairos::ManualClock clock;
  auto make = [&](kairos::Rejection r) {
    kairos::Options o = single_thread();
    o.capacity = 2;
    o.rejection = r;
    return std::make_unique<ManualScheduler>(o, clock);
  };
  {  // abort: RejectedExecution naming the capacity
    auto s = make(kairos::Rejection::abort);
    auto a = s->schedule([] { return 1; }, 1h);
    auto b = s->schedule([] { return 2; }, 2h);
    try {
      s->schedule([] { return 3; }, 1ms);
      ADD_FAILURE() << "no RejectedExecution";
    } catch (const kairos::RejectedExecution& e) {
      EXPECT_NE(std::string(e.what()).find("capacity"), std::string::npos) << e.what();
    }
    EXPECT_THROW(s->execute([] {}), kairos::RejectedExecution);
    EXPECT_THROW(s->schedule_at_fixed_rate([] {}, 0ms, 1ms), kairos::RejectedExecution);
    EXPECT_EQ(s->queue_size(), 2u);
  }
  {  // discard: the new task's future is cancelled at once
    auto s = make(kairos::Rejection::discard);
    auto a = s->schedule([] { return 1; }, 1h);
    auto b = s->schedule([] { return 2; }, 2h);
    auto c = s->schedule([] { return 3; }, 1ms);
    EXPECT_TRUE(c.is_cancelled());
    EXPECT_FALSE(a.is_done());
    EXPECT_EQ(s->queue_size(), 2u);
  }
  {  // discard_oldest: the earliest queued task is cancelled to make room
    auto s = make(kairos::Rejection::discard_oldest);
    auto a = s->schedule([] { return 1; }, 2h);
    auto b = s->schedule([] { return 2; }, 1h);
    auto c = s->schedule([] { return 3; }, 3h);
    EXPECT_TRUE(b.is_cancelled()) << "the earliest deadline goes, not the first submitted";
    EXPECT_FALSE(a.is_done());
    EXPECT_FALSE(c.is_done());
    EXPECT_EQ(s->queue_size(), 2u);
  }
  {  // caller_runs: at once, in the caller, whatever the delay
    auto s = make(kairos::Rejection::caller_runs);
    auto a = s->schedule([] { return 1; }, 1h);
    auto b = s->schedule([] { return 2; }, 2h);
    std::thread::id where;
    auto c = s->schedule([&] { where = std::this_thread::get_id(); return 3; }, 1h);
    EXPECT_TRUE(c.is_done());
    EXPECT_EQ(c.get(), 3);
    EXPECT_EQ(where, std::this_thread::get_id());
    std::atomic<int> runs{0};
    auto p = s->schedule_at_fixed_rate([&] { ++runs; }, 1h, 1h);
    EXPECT_EQ(runs.load(), 1) << "a periodic task's first run in the caller";
    EXPECT_FALSE(p.is_done());
    EXPECT_EQ(s->queue_size(), 3u) << "its later runs are queued: a re-queue is never rejected";
    p.cancel();
  }
}

TEST(BadInput, PeriodicRequeueIsNeverRejected) {
  kairos::Options o = single_thread();
  o.capacity = 1;
  Manual s(o);
  std::atomic<int> runs{0};
  auto p = s.schedule_at_fixed_rate([&] { ++runs; }, 0ms, 1ms);
  ASSERT_TRUE(s.wait_idle(kPatience));
  EXPECT_THROW(s.schedule([] {}, 1h), kairos::RejectedExecution);
  s.step(5ms);
  EXPECT_EQ(runs.load(), 6);
  EXPECT_FALSE(p.is_done());
  EXPECT_EQ(s.queue_size(), 1u);
}

// The reference count has no limit (detail/task.hpp: the field of the task's state word, and a
// spill table beyond 2^20): a fan-out of 5,000,000 copies of one future, more than the field
// holds, completes normally, every copy sees the result, and the node goes with the last copy
// (ASan: no leak, no double free).
TEST(BadInput, FiveMillionCopiesOfOneFutureCompleteNormally) {
  kairos::ManualClock clock;
  ManualScheduler s(single_thread(), clock);
  auto f = s.schedule([] { return 7; }, 1h);
  constexpr std::size_t kCopies = 5'000'000;  // the field holds 4,194,303
  std::vector<kairos::ScheduledFuture<int>> copies(kCopies, f);
  // Half of them dropped and taken again: the count goes down through the refill mark and up
  // through the spill mark more than once.
  copies.resize(kCopies / 8);
  copies.resize(kCopies, f);
  clock.advance(1h);
  EXPECT_EQ(f.get(), 7);
  EXPECT_EQ(copies.front().get(), 7);
  EXPECT_EQ(copies.back().get(), 7);
  EXPECT_EQ(copies[kCopies / 2].get(), 7);
  // From several threads at once, copies go and come back.
  std::vector<std::thread> threads;
  for (int k = 0; k < 4; ++k)
    threads.emplace_back([&, k] {
      std::vector<kairos::ScheduledFuture<int>> mine;
      for (int round = 0; round < 3; ++round) {
        mine.assign(600'000, copies[static_cast<std::size_t>(k)]);
        mine.clear();
      }
    });
  for (auto& th : threads) th.join();
  copies.clear();
  EXPECT_TRUE(f.is_done());
  EXPECT_EQ(f.get(), 7);
}

}  // namespace
}  // namespace kairos_test
