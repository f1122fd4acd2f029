// bad_input_test.cpp: every bad or extreme input a user can give kairos, and what they get.
// docs/bad-input.md lists the same cases, each naming the test here that backs it.
#include <gtest/gtest.h>
#include <pthread.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <functional>
#include <future>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <kairos/kairos.hpp>

#include "ledger.hpp"
#include "stress_support.hpp"

namespace kairos_test {
namespace {

using namespace std::chrono_literals;
using ManualScheduler = kairos::BasicScheduler<kairos::ManualClock>;
using Tp = kairos::ManualClock::time_point;

kairos::Options one_thread() {
  kairos::Options o;
  o.shards = 1;
  o.threads_per_shard = 1;
  return o;
}

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
    kairos::Scheduler s(one_thread());
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
    EXPECT_TRUE(s.wait_idle(30s));
  }
  EXPECT_EQ(runs.load(), 0);
  EXPECT_EQ(probes.live(), 0) << "every rejected callable destroyed";
}

TEST(BadInput, FractionalPeriodRoundsUpToOneNanosecond) {
  kairos::ManualClock clock;
  ManualScheduler s(one_thread(), clock);
  std::atomic<int> runs{0};
  auto f = s.schedule_at_fixed_rate([&] { ++runs; }, 0ns, std::chrono::duration<double, std::nano>(0.25));
  ASSERT_TRUE(s.wait_idle(30s));
  clock.advance(5ns);
  ASSERT_TRUE(s.wait_idle(30s));
  EXPECT_EQ(runs.load(), 6) << "runs at 0, 1, 2, 3, 4, 5 ns: a period of 0.25 ns is 1 ns";
  EXPECT_TRUE(f.cancel());
}

// ---- callables --------------------------------------------------------------------------------

TEST(BadInput, EmptyCallableThrowsInvalidArgument) {
  kairos::Scheduler s(one_thread());
  std::function<int()> empty_fn;
  std::function<void()> empty_void;
  void (*null_fp)() = nullptr;
  EXPECT_THROW(s.schedule(empty_fn, 1ms), std::invalid_argument);
  EXPECT_THROW(s.schedule_at(empty_fn, kairos::SteadyClock::now()), std::invalid_argument);
  EXPECT_THROW(s.submit(empty_fn), std::invalid_argument);
  EXPECT_THROW(s.execute(empty_void), std::invalid_argument);
  EXPECT_THROW(s.schedule_at_fixed_rate(empty_void, 0ms, 1ms), std::invalid_argument);
  EXPECT_THROW(s.schedule_with_fixed_delay(empty_void, 0ms, 1ms), std::invalid_argument);
  EXPECT_THROW(s.schedule(null_fp, 1ms), std::invalid_argument);
  EXPECT_THROW(s.execute(null_fp), std::invalid_argument);
  EXPECT_THROW(s.schedule_at_fixed_rate(null_fp, 0ms, 1ms), std::invalid_argument);
  EXPECT_EQ(s.queue_size(), 0u);
}

struct ThrowsOnCopy {
  std::atomic<int>* runs;
  ThrowsOnCopy(std::atomic<int>* r) : runs(r) {}
  ThrowsOnCopy(const ThrowsOnCopy&) { throw std::runtime_error("kairos bad input: copy throws"); }
  void operator()() const { runs->fetch_add(1); }
};

TEST(BadInput, CallableWhoseCopyThrowsLeavesNothingQueued) {
  kairos::Scheduler s(one_thread());
  std::atomic<int> runs{0};
  ThrowsOnCopy f(&runs);
  EXPECT_THROW(s.schedule(f, 0ms), std::runtime_error);
  EXPECT_THROW(s.schedule_at_fixed_rate(f, 0ms, 1ms), std::runtime_error);
  EXPECT_THROW(s.execute(f), std::runtime_error);
  EXPECT_TRUE(s.wait_idle(30s));
  EXPECT_EQ(s.queue_size(), 0u);
  EXPECT_EQ(runs.load(), 0);
  EXPECT_EQ(s.submit([] { return 1; }).get(), 1);
}

// ---- extreme delays and deadlines -------------------------------------------------------------

TEST(BadInput, MaxDelayMeansNever) {
  kairos::ManualClock clock;
  ManualScheduler s(one_thread(), clock);
  std::atomic<int> runs{0};
  std::vector<kairos::ScheduledFuture<void>> f;
  f.push_back(s.schedule([&] { ++runs; }, kairos::Duration::max()));
  f.push_back(s.schedule([&] { ++runs; }, std::chrono::hours::max()));
  f.push_back(s.schedule([&] { ++runs; }, std::chrono::duration<double>(1e300)));
  f.push_back(s.schedule_at([&] { ++runs; }, Tp::max()));
  f.push_back(s.schedule_at_fixed_rate([&] { ++runs; }, kairos::Duration::max(), 1ms));
  f.push_back(s.schedule_with_fixed_delay([&] { ++runs; }, std::chrono::hours::max(), 1ms));
  clock.advance(std::chrono::hours(24 * 365 * 100));
  ASSERT_TRUE(s.wait_idle(30s));
  EXPECT_EQ(runs.load(), 0);
  EXPECT_EQ(s.queue_size(), f.size());
  for (auto& x : f) {
    EXPECT_FALSE(x.is_done());
    EXPECT_GT(x.delay(), std::chrono::hours(24 * 365 * 100));
  }
  std::vector<kairos::Task> tasks = s.shutdown_now();
  EXPECT_EQ(tasks.size(), f.size());
}

TEST(BadInput, MinDelayAndPastDeadlinesRunAtOnce) {
  kairos::ManualClock clock;
  clock.advance(1h);
  ManualScheduler s(one_thread(), clock);
  auto a = s.schedule([] { return 1; }, kairos::Duration::min());
  auto b = s.schedule([] { return 2; }, std::chrono::hours::min());
  auto c = s.schedule([] { return 3; }, -1ns);
  auto d = s.schedule_at([] { return 4; }, Tp::min());
  auto e = s.schedule_at([] { return 5; }, Tp{});
  std::atomic<int> periodic_runs{0};
  auto p = s.schedule_at_fixed_rate([&] { ++periodic_runs; }, kairos::Duration::min(), 1h);
  // No clock movement: each is due at once.
  EXPECT_EQ(a.get() + b.get() + c.get() + d.get() + e.get(), 15);
  ASSERT_TRUE(s.wait_idle(30s));
  EXPECT_EQ(periodic_runs.load(), 1) << "a negative initial delay is 0: no catch-up from the past";
  EXPECT_EQ(p.delay(), 1h);
}

// "Deadline arithmetic never overflows": a task due at time_point::min() runs at once and its
// lateness (start - deadline) saturates instead of wrapping to a negative value, which stats()
// would report as a task started before its deadline.
TEST(BadInput, PastDeadlineLatenessDoesNotOverflow) {
  kairos::ManualClock clock;
  clock.advance(1h);
  ManualScheduler s(one_thread(), clock);
  auto a = s.schedule_at([] { return 1; }, Tp::min());
  auto b = s.schedule_at([] { return 2; }, Tp(kairos::Duration(std::numeric_limits<std::int64_t>::min() + 5)));
  EXPECT_EQ(a.get() + b.get(), 3);
  ASSERT_TRUE(s.wait_idle(30s));
  kairos::ShardStats total = s.stats().total();
  EXPECT_EQ(total.lateness.below_zero(), 0u) << "a wrapped lateness reads as an early start";
  EXPECT_EQ(total.lateness.count(), 2u);
}

TEST(BadInput, MaxPeriodRunsOnceThenNever) {
  kairos::ManualClock clock;
  ManualScheduler s(one_thread(), clock);
  std::atomic<int> rate_runs{0}, delay_runs{0};
  auto r = s.schedule_at_fixed_rate([&] { ++rate_runs; }, 0ns, kairos::Duration::max());
  auto d = s.schedule_with_fixed_delay([&] { ++delay_runs; }, 1ns, std::chrono::hours::max());
  clock.advance(1ns);
  ASSERT_TRUE(s.wait_idle(30s));
  clock.advance(std::chrono::hours(24 * 365 * 100));
  ASSERT_TRUE(s.wait_idle(30s));
  EXPECT_EQ(rate_runs.load(), 1);
  EXPECT_EQ(delay_runs.load(), 1);
  EXPECT_FALSE(r.is_done());
  EXPECT_EQ(s.queue_size(), 2u);
}

// "hours::max() means never" holds even when a ManualClock is driven to its largest time point:
// a task due "never" must not run then, and a periodic task whose deadline saturated must not
// run again and again at the end of time.
TEST(BadInput, ManualClockAtItsEndDoesNotRunNeverTasks) {
  Watchdog dog("ManualClock advanced to its end", 30s);
  kairos::ManualClock clock;
  ManualScheduler s(one_thread(), clock);
  std::atomic<int> never_runs{0}, rate_runs{0};
  auto never = s.schedule([&] { ++never_runs; }, kairos::Duration::max());
  auto rate = s.schedule_at_fixed_rate([&] { ++rate_runs; }, 0ns, kairos::Duration::max());
  ASSERT_TRUE(s.wait_idle(30s));
  ASSERT_EQ(rate_runs.load(), 1);
  clock.advance(kairos::Duration::max());
  EXPECT_EQ(clock.now(), Tp::max()) << "the clock saturates";
  EXPECT_TRUE(s.wait_idle(5s)) << "the scheduler never became idle at the end of time";
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
  Watchdog dog("wait_idle(1s) on a ManualClock at its end", 30s);
  kairos::ManualClock clock;
  ManualScheduler s(one_thread(), clock);
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
  kairos::ManualClock clock;
  clock.advance(1ns);
  ManualScheduler s(one_thread(), clock);
  std::atomic<int> runs{0};
  auto f = s.schedule([&] { ++runs; }, kairos::Duration(kMax - 1));  // due at time_point::max()
  clock.advance(kairos::Duration(kMax - 2));                          // now: max - 1
  ASSERT_TRUE(s.wait_idle(30s));
  EXPECT_EQ(runs.load(), 0) << "ran one nanosecond before its deadline";
  clock.advance(1ns);  // now: max
  ASSERT_TRUE(s.wait_idle(30s));
  EXPECT_EQ(runs.load(), 1) << "due at the clock's last time point";
}

TEST(BadInput, NegativeClockAdvanceThrows) {
  kairos::ManualClock clock;
  clock.advance(5ms);
  EXPECT_THROW(clock.advance(-1ns), std::invalid_argument);
  EXPECT_THROW(clock.advance(kairos::Duration::min()), std::invalid_argument);
  EXPECT_EQ(clock.now(), Tp(5ms));
  clock.advance(0ns);
  EXPECT_EQ(clock.now(), Tp(5ms));
}

// ---- options ----------------------------------------------------------------------------------

TEST(BadInput, InvalidCpuIdsThrowInvalidArgument) {
  int hw = static_cast<int>(std::thread::hardware_concurrency());
  for (int cpu : {-1, hw, hw + 7, INT_MAX, INT_MIN}) {
    kairos::Options o = one_thread();
    o.cpus = {0, cpu};
    EXPECT_THROW(kairos::Scheduler{o}, std::invalid_argument) << "cpu " << cpu;
  }
  kairos::Options ok = one_thread();
  ok.cpus = {hw - 1};
  kairos::Scheduler s(ok);
  EXPECT_EQ(s.submit([] { return 1; }).get(), 1);
}

TEST(BadInput, ZeroShardsOrThreadsThrowInvalidArgument) {
  kairos::Options o = one_thread();
  o.shards = 0;
  EXPECT_THROW(kairos::Scheduler{o}, std::invalid_argument);
  o = one_thread();
  o.threads_per_shard = 0;
  EXPECT_THROW(kairos::Scheduler{o}, std::invalid_argument);
  kairos::ManualClock clock;
  EXPECT_THROW((ManualScheduler{o, clock}), std::invalid_argument);
  o = one_thread();
  o.shards = 65;  // kairos's limit is 64 shards
  EXPECT_THROW(kairos::Scheduler{o}, std::invalid_argument);
}

TEST(BadInput, NegativeSpinWindowThrowsInvalidArgument) {
  EXPECT_THROW(kairos::WaitPolicy::hybrid(-1ns), std::invalid_argument);
  EXPECT_THROW(kairos::WaitPolicy::hybrid(std::chrono::hours::min()), std::invalid_argument);
  EXPECT_NO_THROW(kairos::WaitPolicy::hybrid(0ns));
  EXPECT_NO_THROW(kairos::WaitPolicy::hybrid(std::chrono::hours::max()));
}

TEST(BadInput, LongThreadNameIsCutTo15Characters) {
  kairos::Options o = one_thread();
  o.name = "a-very-long-scheduler-name";
  kairos::Scheduler s(o);
  std::string name = s.submit([] {
                        char buf[64] = {};
                        pthread_getname_np(pthread_self(), buf, sizeof buf);
                        return std::string(buf);
                      }).get();
  EXPECT_EQ(name.size(), 15u);
  EXPECT_EQ(name, std::string("a-very-long-scheduler-name-0-0").substr(0, 15));
}

// ---- submitting when kairos will not take it --------------------------------------------------

void expect_rejected_after(kairos::Rejection policy, bool now) {
  ProbeCounters probes;
  std::atomic<int> runs{0};
  {
    kairos::Options o = one_thread();
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
      for (auto& x : f) {
        EXPECT_TRUE(x.is_cancelled()) << "discarded: the future completes as cancelled at once";
        EXPECT_THROW(x.get(), kairos::CancelledError);
      }
    }
    EXPECT_TRUE(s.await_termination(30s));
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
  kairos::ManualClock clock;
  ManualScheduler s(one_thread(), clock);
  auto dropped = s.schedule([] { return 1; }, 1ms);
  auto ran = s.schedule([] { return 2; }, 2ms);
  auto periodic = s.schedule_at_fixed_rate([] {}, 3ms, 1ms);
  ASSERT_TRUE(s.wait_idle(30s));
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
  EXPECT_TRUE(s.await_termination(30s));
}

TEST(BadInput, FuturesOutliveTheirScheduler) {
  kairos::ScheduledFuture<int> pending;
  kairos::ScheduledFuture<void> periodic;
  {
    kairos::Scheduler s(one_thread());
    pending = s.schedule([] { return 1; }, 1h);
    periodic = s.schedule_at_fixed_rate([] {}, 1h, 1h);
  }
  EXPECT_TRUE(pending.is_cancelled()) << "destruction drops pending tasks as cancelled";
  EXPECT_THROW(pending.get(), kairos::CancelledError);
  EXPECT_TRUE(periodic.is_cancelled());
  EXPECT_FALSE(pending.cancel());
  (void)pending.delay();
  kairos::ScheduledFuture<int> empty;
  EXPECT_THROW(empty.get(), std::future_error);
  EXPECT_FALSE(empty.cancel());
  EXPECT_FALSE(empty.is_done());
}

TEST(BadInput, MoveOnlyResultSecondGetThrowsFutureError) {
  kairos::Scheduler s(one_thread());
  auto f = s.submit([] { return std::make_unique<int>(5); });
  auto copy = f;
  EXPECT_EQ(*f.get(), 5);
  EXPECT_THROW(copy.get(), std::future_error);
  EXPECT_FALSE(f.cancel()) << "done: nothing to cancel";
}

TEST(BadInput, NegativeTimeoutsReturnAtOnce) {
  kairos::Scheduler s(one_thread());
  auto f = s.schedule([] {}, 1h);
  ASSERT_TRUE(s.wait_idle(30s));
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
    kairos::Options o = one_thread();
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

TEST(BadInput, CancelledButRetainedTasksCountTowardCapacity) {
  kairos::ManualClock clock;
  kairos::Options o = one_thread();
  o.capacity = 1;
  ManualScheduler s(o, clock);
  auto a = s.schedule([] {}, 1h);
  EXPECT_TRUE(a.cancel());
  EXPECT_THROW(s.schedule([] {}, 1h), kairos::RejectedExecution) << "retained until its deadline";
  s.set_remove_on_cancel(true);
  EXPECT_THROW(s.schedule([] {}, 1h), kairos::RejectedExecution) << "the policy is not retroactive";
  clock.advance(1h);  // a's deadline passes: it leaves the queue
  ASSERT_TRUE(s.wait_idle(30s));
  EXPECT_EQ(s.queue_size(), 0u);
  auto b = s.schedule([] {}, 1h);
  EXPECT_TRUE(b.cancel());
  EXPECT_EQ(s.queue_size(), 0u) << "removed at once under remove_on_cancel";
  auto c = s.schedule([] {}, 1h);
  EXPECT_FALSE(c.is_done());
}

TEST(BadInput, PeriodicRequeueIsNeverRejected) {
  kairos::ManualClock clock;
  kairos::Options o = one_thread();
  o.capacity = 1;
  ManualScheduler s(o, clock);
  std::atomic<int> runs{0};
  auto p = s.schedule_at_fixed_rate([&] { ++runs; }, 0ms, 1ms);
  ASSERT_TRUE(s.wait_idle(30s));
  EXPECT_THROW(s.schedule([] {}, 1h), kairos::RejectedExecution);
  clock.advance(5ms);
  ASSERT_TRUE(s.wait_idle(30s));
  EXPECT_EQ(runs.load(), 6);
  EXPECT_FALSE(p.is_done());
  EXPECT_EQ(s.queue_size(), 1u);
}

TEST(BadInput, CancelAfterCompletionReturnsFalse) {
  kairos::Scheduler s(one_thread());
  auto f = s.submit([] { return 1; });
  EXPECT_EQ(f.get(), 1);
  EXPECT_FALSE(f.cancel());
  EXPECT_FALSE(f.cancel(true));
  EXPECT_FALSE(f.is_cancelled());
}

// The reference count shares the task's state word (detail/task.hpp): copies of one future
// beyond kMaxRefs end the process with a message rather than wrap the count into a double free.
TEST(BadInputDeathTest, MoreCopiesOfOneFutureThanTheReferenceCountHoldsTerminateWithAMessage) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        kairos::ManualClock clock;
        ManualScheduler s(one_thread(), clock);
        auto f = s.schedule([] {}, 1h);
        std::vector<kairos::ScheduledFuture<void>> copies(kairos::detail::kMaxRefs, f);
      },
      "more than 4194304 references to one task");
}

}  // namespace
}  // namespace kairos_test
