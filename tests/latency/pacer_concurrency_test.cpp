// pacer_concurrency_test.cpp: kairos::Pacer with n calling threads (wrk2's -c: n calls in flight at
// one total rate, each measured from its intended start), interval snapshots and progress.
// Exact latencies on a ManualClock; real-time tests check only what load cannot change, or hold
// generous bounds. PacerStartLag.DISABLED_Table is a measurement, run by hand (see there).
#include <kairos/kairos.hpp>
#include <kairos/pacer.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <thread>
#include <vector>

namespace {

using namespace std::chrono_literals;
using kairos::PacerReport;

// Polls `done` until it holds (true) or 10 s pass (false): a bound on a wait, not a timing.
template <class Done>
bool eventually(Done done) {
  const auto give_up = std::chrono::steady_clock::now() + 10s;
  while (!done()) {
    if (std::chrono::steady_clock::now() > give_up) return false;
    std::this_thread::sleep_for(100us);
  }
  return true;
}

// Each thread owns its share of the schedule (thread k % 2 makes call k). Call 0 blocks its
// thread until 5 ms of clock time: calls 1 and 3, the other thread's, run beside it on time;
// call 2, due at 2 ms on the blocked thread, starts when call 0 ends (5 ms, 3 ms late: counted).
// One thread would have queued calls 1..3 behind call 0.
TEST(PacerConcurrency, CallsRunBesideASlowCallOnAManualClock) {
  kairos::ManualClock clock;
  kairos::BasicScheduler<kairos::ManualClock> scheduler{kairos::Options{}, clock};
  kairos::BasicPacer<kairos::ManualClock> pacer{scheduler, clock, 0ns};
  pacer.set_concurrency(2);
  std::atomic<std::uint64_t> done{0};
  std::atomic<bool> slow_started{false}, release_slow{false}, stuck{false};
  std::vector<std::thread::id> thread_of(4);

  std::thread driver([&] {
    auto step = [&](auto cond) {
      if (eventually(cond)) return true;
      stuck = true;
      release_slow = true;
      scheduler.shutdown_now();
      return false;
    };
    if (!step([&] { return slow_started.load(); })) return;
    clock.advance(1ms);  // t = 1 ms: call 1, on the other thread
    if (!step([&] { return done.load() == 1; })) return;
    clock.advance(1ms);  // t = 2 ms: call 2 released, its thread busy with call 0
    clock.advance(1ms);  // t = 3 ms: call 3, on the other thread, on time
    if (!step([&] { return done.load() == 2; })) return;
    clock.advance(2ms);  // t = 5 ms
    release_slow = true;  // call 0 ends at 5 ms, then call 2 starts
  });

  PacerReport r;
  try {
    r = pacer.run_count(
        [&](std::uint64_t n) {
          thread_of[n] = std::this_thread::get_id();
          if (n == 0) {
            slow_started = true;
            while (!release_slow.load()) std::this_thread::sleep_for(50us);
          }
          done.fetch_add(1);
        },
        1ms, 4);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "run_count threw: " << e.what();
  }
  driver.join();
  ASSERT_FALSE(stuck.load()) << "a released call of the free thread did not run within 10 s";
  EXPECT_EQ(thread_of[0], thread_of[2]);
  EXPECT_EQ(thread_of[1], thread_of[3]);
  EXPECT_NE(thread_of[0], thread_of[1]);
  EXPECT_EQ(r.calls, 4u);
  EXPECT_EQ(r.concurrency, 2u);
  EXPECT_EQ(r.histogram.count(), 4u);
  // Starts are read before a call, so they are exact; calls 1 and 3 end after they counted
  // themselves done, which may be after the driver's next advance: their ends are only bounded.
  EXPECT_EQ(r.histogram.max(), 5'000'000);                          // call 0 (and 2)
  EXPECT_GE(r.histogram.mean(), (5 + 0 + 3 + 0) * 1e6 / 4);         // call 2: 3 ms late
  EXPECT_EQ(r.service.max(), 5'000'000);
  EXPECT_DOUBLE_EQ(r.start_lag.mean(), 3e6 / 4);
  EXPECT_EQ(r.max_behind, 3ms);
  EXPECT_EQ(r.behind_at_end, 0ms);  // the last call, 3, started on time
  EXPECT_EQ(r.elapsed, 5ms);
}

// Real time, no timing assumption: call 4 blocks its thread until the other thread has made its
// calls up to 25 (a thread that waited for the other would never get there: the bounded wait
// fails the test instead of hanging it). The other thread's calls keep their own share of the
// schedule, and the delayed ones of the blocked thread are measured from their intended start:
// call 6, due at 6 ms, cannot start before call 25's intended start (25 ms; calls never start
// early), so it is at least 19 ms late, and so is max_behind.
TEST(PacerConcurrency, ASlowCallDelaysOnlyItsOwnThreadsCalls) {
  kairos::Scheduler scheduler{{.shards = 1}};
  kairos::Pacer pacer{scheduler, 0ns};
  pacer.set_concurrency(2);
  constexpr std::uint64_t kCalls = 40;
  std::vector<std::thread::id> thread_of(kCalls);
  std::vector<std::int64_t> lag_ns(kCalls);
  std::atomic<std::uint64_t> odd_done{0};  // the other thread's calls made so far
  std::atomic<bool> other_ran_beside{false};
  const PacerReport r = pacer.run_count(
      [&](std::uint64_t n, kairos::SteadyClock::time_point intended) {
        lag_ns[n] = (kairos::SteadyClock::now() - intended).count();
        thread_of[n] = std::this_thread::get_id();
        if (n == 4) other_ran_beside = eventually([&] { return odd_done.load() >= 13; });  // calls 1, 3, ..., 25
        if (n % 2 == 1) odd_done.fetch_add(1);
      },
      1ms, kCalls);
  ASSERT_EQ(r.calls, kCalls);
  EXPECT_TRUE(other_ran_beside.load()) << "the other thread's calls waited for the slow call";
  for (std::uint64_t n = 0; n < kCalls; ++n)
    EXPECT_EQ(thread_of[n], thread_of[n % 2]) << "call " << n << " ran on the other thread's share";
  EXPECT_NE(thread_of[0], thread_of[1]);
  EXPECT_GE(lag_ns[6], std::chrono::nanoseconds(19ms).count());
  EXPECT_GE(r.max_behind, 19ms);
}

// The first three calls wait until three calls are in flight: only three threads let them.
// At no time are more than three in flight.
TEST(PacerConcurrency, NCallsInFlightAndNoMore) {
  kairos::Scheduler scheduler;
  kairos::Pacer pacer{scheduler, 0ns};
  pacer.set_concurrency(3);
  std::atomic<int> in_flight{0}, most{0};
  std::atomic<bool> timed_out{false};
  const PacerReport r = pacer.run_count(
      [&](std::uint64_t n) {
        const int now = in_flight.fetch_add(1) + 1;
        for (int m = most.load(); now > m && !most.compare_exchange_weak(m, now);) {
        }
        if (n < 3 && !eventually([&] { return most.load() >= 3; })) timed_out = true;
        if (n >= 3) std::this_thread::sleep_for(200us);  // overlap with the next calls
        in_flight.fetch_sub(1);
      },
      100us, 200);
  EXPECT_FALSE(timed_out.load());
  EXPECT_EQ(most.load(), 3);
  EXPECT_EQ(r.calls, 200u);
  EXPECT_EQ(r.concurrency, 3u);
}

// Every index is called exactly once, never before its intended start, with any thread count.
TEST(PacerConcurrency, EveryCallOnceAndNeverEarly) {
  kairos::Scheduler scheduler;
  for (unsigned n : {1u, 2u, 4u, 8u}) {
    kairos::Pacer pacer{scheduler};
    pacer.set_concurrency(n);
    pacer.set_warmup(50);
    std::vector<std::atomic<int>> seen(2050);
    std::atomic<bool> early{false};
    const PacerReport r = pacer.run_count(
        [&](std::uint64_t k, kairos::SteadyClock::time_point intended) {
          if (kairos::SteadyClock::now() < intended) early = true;
          seen.at(k).fetch_add(1);
        },
        50us, 2000);
    for (std::size_t k = 0; k < seen.size(); ++k) ASSERT_EQ(seen[k].load(), 1) << "call " << k << ", n " << n;
    EXPECT_FALSE(early.load()) << "n " << n;
    EXPECT_EQ(r.calls, 2000u);
    EXPECT_EQ(r.warmup_calls, 50u);
    EXPECT_EQ(r.histogram.count(), 2000u);
    EXPECT_EQ(r.start_lag.count(), 2000u);
    EXPECT_EQ(r.start_lag.below_zero(), 0u);
    EXPECT_LE(r.achieved_rate, r.intended_rate * 1.000001);
  }
}

TEST(PacerConcurrency, AnExceptionStopsEveryThreadAndIsRethrown) {
  kairos::Scheduler scheduler;
  kairos::Pacer pacer{scheduler, 0ns};
  pacer.set_concurrency(4);
  std::atomic<std::uint64_t> made{0};
  EXPECT_THROW(pacer.run_count(
                   [&](std::uint64_t n) {
                     if (n == 20) throw std::out_of_range("call 20");
                     made.fetch_add(1);
                   },
                   1ms, 100'000),
               std::out_of_range);
  // Stopped, not run to 100,000 (100 s). The other threads make calls by the clock until the
  // throw: a thread that owns call 20 and is kept off the CPU for s seconds lets them make about
  // 1000 * s, so the bound is loose (a 50 s stall).
  EXPECT_LT(made.load(), 50'000u);
  // The pacer is usable again: no thread of the failed run is left.
  const PacerReport r = pacer.run_count([] {}, 100us, 10);
  EXPECT_EQ(r.calls, 10u);
}

TEST(PacerConcurrency, ARunTheSchedulerEndsThrowsCancelledError) {
  kairos::Scheduler scheduler;
  kairos::Pacer pacer{scheduler};
  pacer.set_concurrency(2);
  std::atomic<std::uint64_t> made{0};
  std::thread stopper([&] {
    eventually([&] { return made.load() >= 10; });
    scheduler.shutdown();
  });
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_THROW(pacer.run_for([&] { made.fetch_add(1); }, 1ms, 60s), kairos::CancelledError);
  stopper.join();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 10s);
}

// A run on a scheduler that is already shut down is a run the scheduler ended: CancelledError
// (its submission is refused; RejectedExecution escaped before), and no call is made. The
// shutdown raced the run's submission in ARunTheSchedulerEndsThrowsCancelledError: the calling
// threads made calls by the clock before the submission, and a shutdown seen after 10 calls
// then refused it.
TEST(PacerConcurrency, ARunOnAShutDownSchedulerThrowsCancelledErrorAndMakesNoCall) {
  for (unsigned n : {1u, 2u}) {
    kairos::Scheduler scheduler;
    scheduler.shutdown();
    kairos::Pacer pacer{scheduler, 0ns};
    pacer.set_concurrency(n);
    std::atomic<std::uint64_t> made{0};
    EXPECT_THROW(pacer.run_count([&] { made.fetch_add(1); }, 1ms, 100), kairos::CancelledError) << "n " << n;
    EXPECT_EQ(made.load(), 0u) << "n " << n;
  }
}

// The calling threads make no call before the scheduler has accepted the run. The rejection
// handler runs inside the submission: it waits (up to 1 s) for a call to happen meanwhile. On a
// ManualClock with no start delay call 0 is due at once, so a thread that did not wait for the
// submission's outcome would make it within that second.
TEST(PacerConcurrency, NoCallBeforeTheSchedulerAcceptedTheRun) {
  std::atomic<std::uint64_t> made{0};
  std::atomic<bool> call_during_submission{false};
  kairos::ManualClock clock;
  kairos::Options options;
  options.on_rejected = [&](kairos::Task, const kairos::RejectionInfo&) {
    const auto give_up = std::chrono::steady_clock::now() + 1s;
    while (made.load() == 0 && std::chrono::steady_clock::now() < give_up) std::this_thread::yield();
    call_during_submission = made.load() != 0;
  };  // the Task is dropped: the run's future completes as cancelled
  kairos::BasicScheduler<kairos::ManualClock> scheduler{options, clock};
  scheduler.shutdown();
  kairos::BasicPacer<kairos::ManualClock> pacer{scheduler, clock, 0ns};
  pacer.set_concurrency(2);
  EXPECT_THROW(pacer.run_count([&] { made.fetch_add(1); }, 1ms, 10), kairos::CancelledError);
  EXPECT_FALSE(call_during_submission.load());
  EXPECT_EQ(made.load(), 0u);
}

// Intervals by the time a call ends. On a ManualClock, each call moves the clock 1 ms forward
// before it returns: call k starts at k ms and ends at k + 1 ms, so 3 ms intervals hold the calls
// ending at 1-2, 3-5, 6-8 and 9-10 ms: 2, 3, 3 and 2 calls, each 1 ms long. The last interval ends
// with the run.
TEST(PacerIntervals, ExactIntervalsOnAManualClock) {
  kairos::ManualClock clock;
  kairos::BasicScheduler<kairos::ManualClock> scheduler{kairos::Options{}, clock};
  kairos::BasicPacer<kairos::ManualClock> pacer{scheduler, clock, 0ns};
  std::vector<kairos::PacerInterval> got;  // written on this thread only (checked below)
  const std::thread::id caller = std::this_thread::get_id();
  bool on_caller = true;
  pacer.set_intervals(3ms, [&](const kairos::PacerInterval& i) {
    on_caller = on_caller && std::this_thread::get_id() == caller;
    got.push_back(i);
  });
  const PacerReport r = pacer.run_count([&] { clock.advance(1ms); }, 1ms, 10);
  ASSERT_EQ(got.size(), 4u);
  const std::uint64_t counts[] = {2, 3, 3, 2};
  for (std::size_t k = 0; k < 4; ++k) {
    EXPECT_EQ(got[k].index, k);
    EXPECT_EQ(got[k].start, std::chrono::milliseconds(3 * k));
    EXPECT_EQ(got[k].histogram.count(), counts[k]) << "interval " << k;
    EXPECT_EQ(got[k].service.count(), counts[k]);
    EXPECT_EQ(got[k].start_lag.count(), counts[k]);
    EXPECT_EQ(got[k].histogram.min(), 1'000'000);  // every call: end - intended = 1 ms
    EXPECT_EQ(got[k].histogram.max(), 1'000'000);
    EXPECT_EQ(got[k].start_lag.max(), 0);
  }
  EXPECT_EQ(got[0].length, 3ms);
  EXPECT_EQ(got[2].length, 3ms);
  EXPECT_EQ(got[3].length, 1ms);  // from 9 ms to the end of the run at 10 ms
  EXPECT_TRUE(on_caller);
  EXPECT_EQ(r.calls, 10u);
  EXPECT_EQ(r.elapsed, 10ms);
}

// A run that falls far behind: call 1 moves the clock 5 s forward, so the intervals of 2 ms
// between the end of call 0 (1 ms) and the end of calls 1 and 2 (5001 ms) have no call. Each is
// handed out, empty, in order, and the calling thread did not build them: the 2499 empty ones
// come from the waiting thread (the calling thread used to copy three histograms per skipped
// interval under the intervals' lock, and a run held back by a loaded host fell further behind
// the more intervals it skipped: PacerIntervals.IntervalsAddUpWithThreads hung under TSan).
TEST(PacerIntervals, ARunFarBehindHandsOutEverySkippedIntervalEmpty) {
  kairos::ManualClock clock;
  kairos::BasicScheduler<kairos::ManualClock> scheduler{kairos::Options{}, clock};
  kairos::BasicPacer<kairos::ManualClock> pacer{scheduler, clock, 0ns};
  std::uint64_t got = 0, empty = 0;
  bool in_order = true, lengths = true;
  std::vector<std::uint64_t> with_calls;  // (index, count) of the non-empty ones
  pacer.set_intervals(2ms, [&](const kairos::PacerInterval& i) {
    in_order = in_order && i.index == got && i.start == std::chrono::milliseconds(2 * got);
    lengths = lengths && i.length == (i.index == 2500 ? 1ms : 2ms);
    ++got;
    if (i.histogram.count() == 0 && i.service.count() == 0 && i.start_lag.count() == 0) ++empty;
    else with_calls.insert(with_calls.end(), {i.index, i.histogram.count()});
  });
  const PacerReport r = pacer.run_count(
      [&](std::uint64_t n) {
        if (n == 0) clock.advance(1ms);
        if (n == 1) clock.advance(5000ms);
      },
      1ms, 3);
  EXPECT_EQ(got, 2501u);
  EXPECT_EQ(empty, 2499u);
  EXPECT_TRUE(in_order);
  EXPECT_TRUE(lengths);
  EXPECT_EQ(with_calls, (std::vector<std::uint64_t>{0, 1, 2500, 2}));
  EXPECT_EQ(r.elapsed, 5001ms);
}

// With several calling threads the intervals still add up to the report, in order, with none
// missing (which interval a call lands in depends on when it ends).
TEST(PacerIntervals, IntervalsAddUpWithThreads) {
  kairos::Scheduler scheduler;
  kairos::Pacer pacer{scheduler};
  pacer.set_concurrency(3);
  pacer.set_warmup(30);
  // Summed as they come (on this thread): a run that a loaded host holds back by seconds hands
  // out hundreds of intervals, and a copy of each (171 KiB) would be the test's own slowness.
  std::size_t got = 0;
  bool in_order = true;
  kairos::LatencyHistogram sum, service, lag;
  pacer.set_intervals(10ms, [&](const kairos::PacerInterval& i) {
    in_order = in_order && i.index == got && i.start == std::chrono::milliseconds(10 * got);
    ++got;
    sum.merge(i.histogram);
    service.merge(i.service);
    lag.merge(i.start_lag);
  });
  const PacerReport r = pacer.run_count([] { std::this_thread::sleep_for(100us); }, 500us, 200);  // 100 ms
  EXPECT_GE(got, 10u);  // the last call ends after its intended start, 99.5 ms
  EXPECT_TRUE(in_order);
  EXPECT_EQ(sum, r.histogram);
  EXPECT_EQ(service, r.service);
  EXPECT_EQ(lag, r.start_lag);
  EXPECT_EQ(sum.count(), 200u);
}

// Progress is told while the run goes (done never decreasing) and once at the end with done ==
// total, on the thread that called run_for. No timing assumption: call 100 waits (up to 10 s)
// until progress has been told twice, so at least two reports come before the end, each with
// done <= 100.
TEST(PacerProgress, ToldDuringTheRunAndAtTheEnd) {
  kairos::Scheduler scheduler;
  kairos::Pacer pacer{scheduler};
  pacer.set_warmup(10);
  std::vector<std::pair<std::uint64_t, std::uint64_t>> told;  // this thread's
  std::atomic<std::size_t> times_told{0};
  const std::thread::id caller = std::this_thread::get_id();
  bool on_caller = true;
  pacer.set_progress(20ms, [&](std::uint64_t d, std::uint64_t t) {
    on_caller = on_caller && std::this_thread::get_id() == caller;
    told.emplace_back(d, t);
    times_told.fetch_add(1);
  });
  std::atomic<bool> told_while_blocked{false};
  pacer.run_count(
      [&](std::uint64_t n) {
        if (n == 100) told_while_blocked = eventually([&] { return times_told.load() >= 2; });
      },
      1ms, 200);  // 210 calls with the warm-up
  EXPECT_TRUE(told_while_blocked.load());
  ASSERT_GE(told.size(), 3u);
  for (std::size_t k = 0; k < told.size(); ++k) {
    EXPECT_EQ(told[k].second, 210u);
    if (k > 0) {
      EXPECT_GE(told[k].first, told[k - 1].first);
    }
  }
  EXPECT_LE(told[1].first, 100u);
  EXPECT_EQ(told.back().first, 210u);
  EXPECT_TRUE(on_caller);
}

TEST(PacerProgress, AThrowingCallbackStopsTheRun) {
  kairos::Scheduler scheduler;
  kairos::Pacer pacer{scheduler};
  pacer.set_progress(5ms, [](std::uint64_t, std::uint64_t) { throw std::runtime_error("progress"); });
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_THROW(pacer.run_for([] {}, 1ms, 60s), std::runtime_error);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 10s);
}

TEST(PacerConcurrency, BadArguments) {
  kairos::Scheduler scheduler;
  kairos::Pacer pacer{scheduler};
  EXPECT_THROW(pacer.set_concurrency(0), std::invalid_argument);
  EXPECT_THROW(pacer.set_intervals(0ms, [](const kairos::PacerInterval&) {}), std::invalid_argument);
  EXPECT_THROW(pacer.set_progress(-1ms, [](std::uint64_t, std::uint64_t) {}), std::invalid_argument);
}

// Start lag at two threads against one, same rate (2,000 calls/s, trivial calls), same
// scheduler: the median at concurrency 2 stays within 5 ms (plus twice the median at
// concurrency 1) of the median at concurrency 1, in at least one of five rounds of one run
// each. A hand-off between the calling threads on each call's path, as a shared front of the
// schedule had, is what it guards against: that is in every round. A loaded host is not: it
// holds the two threads' wake-ups back by milliseconds in one round, not in all five (a round
// that fails is printed). The threads' independence itself is pinned without timing above
// (CallsRunBesideASlowCallOnAManualClock, ASlowCallDelaysOnlyItsOwnThreadsCalls).
TEST(PacerConcurrency, StartLagAtTwoThreadsNearOne) {
  kairos::Scheduler scheduler{{.shards = 1}};
  kairos::Pacer pacer{scheduler};
  pacer.set_warmup(100);
  const auto period = kairos::Pacer::period_for_rate(2'000);
  bool held = false;
  for (int round = 1; round <= 5 && !held; ++round) {
    std::int64_t p50[3] = {};
    for (unsigned c : {1u, 2u}) {
      pacer.set_concurrency(c);
      const PacerReport r = pacer.run_count([] {}, period, 400);
      ASSERT_EQ(r.calls, 400u);
      EXPECT_EQ(r.start_lag.below_zero(), 0u);  // never early, in every round
      p50[c] = r.start_lag.value_at_percentile(50);
      std::printf("round %d, concurrency %u: start lag p50 %.1f us, p99 %.1f us, max %.1f us\n", round, c,
                  p50[c] / 1e3, r.start_lag.value_at_percentile(99) / 1e3, r.start_lag.max() / 1e3);
    }
    held = p50[2] <= 3 * p50[1] + std::chrono::nanoseconds(5ms).count();
  }
  EXPECT_TRUE(held) << "the start lag at concurrency 2 was far above concurrency 1's in all five rounds";
}

// The start-lag table for PERF.md: not run by ctest (it measures; run it on a quiet machine, and
// again with KAIROS_BUSY_THREADS=<cores> for the busy regime):
//   build/release/tests/latency/pacer_concurrency_test --gtest_also_run_disabled_tests --gtest_filter='PacerStartLag.DISABLED_Table'
// 50,000 calls/s of a ~5 us call, 2 s of warm-up then 3 s measured, concurrency 1 and 2, for
// each wait policy of the scheduler. KAIROS_BUSY_THREADS=n adds n threads that spin meanwhile.
TEST(PacerStartLag, DISABLED_Table) {
  unsigned busy = 0;
  if (const char* b = std::getenv("KAIROS_BUSY_THREADS")) busy = static_cast<unsigned>(std::strtoul(b, nullptr, 10));
  std::atomic<bool> stop_busy{false};
  std::vector<std::thread> spinners;
  for (unsigned k = 0; k < busy; ++k)
    spinners.emplace_back([&] {
      while (!stop_busy.load(std::memory_order_relaxed)) {
      }
    });
  auto work = [] {  // ~5 us of the calling thread's time
    const auto until = std::chrono::steady_clock::now() + 5us;
    while (std::chrono::steady_clock::now() < until) {
    }
  };
  std::printf("%-8s %2s %12s %10s %10s %10s %10s %12s  (start lag in us; %u busy threads)\n", "wait", "c",
              "calls/s", "p50", "p99", "p99.9", "max", "behind@end", busy);
  const std::pair<const char*, kairos::WaitPolicy> waits[] = {
      {"spin", kairos::WaitPolicy::spin()},
      {"hybrid", kairos::WaitPolicy::hybrid(50us)},
      {"sleep", kairos::WaitPolicy::sleep()}};
  for (const auto& [name, wait] : waits) {
    kairos::Scheduler scheduler{{.shards = 1, .wait = wait}};
    kairos::Pacer pacer{scheduler};
    pacer.set_warmup(100'000);
    for (unsigned c : {1u, 2u}) {
      pacer.set_concurrency(c);
      const PacerReport r = pacer.run_count(work, kairos::Pacer::period_for_rate(50'000), 150'000);
      const auto us = [](std::int64_t ns) { return static_cast<double>(ns) / 1e3; };
      std::printf("%-8s %2u %12.0f %10.1f %10.1f %10.1f %10.1f %12.1f\n", name, c, r.achieved_rate,
                  us(r.start_lag.value_at_percentile(50)), us(r.start_lag.value_at_percentile(99)),
                  us(r.start_lag.value_at_percentile(99.9)), us(r.start_lag.max()), us(r.behind_at_end.count()));
    }
  }
  stop_busy = true;
  for (auto& t : spinners) t.join();
}

}  // namespace
