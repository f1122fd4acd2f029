// pacer_test.cpp: kairos::Pacer keeps its rate, measures from intended starts (a slow call makes
// the calls queued behind it late, and they are counted so), catches up, and reports errors.
// Real-time tests use generous bounds; the 5 s run at 100,000 calls/s needs KAIROS_LONG_TESTS=1.
#include <kairos/kairos.hpp>
#include <kairos/pacer.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace std::chrono_literals;
using kairos::PacerReport;

#if defined(KAIROS_SANITIZED)
constexpr double kRateSlack = 0.10;  // instrumented builds are several times slower
#else
constexpr double kRateSlack = 0.02;
#endif

void print(const char* what, const PacerReport& r) {
  std::printf(
      "%s: %llu calls, intended %.1f/s, achieved %.1f/s (%+.3f%%), elapsed %.3f s, max behind %.1f us, "
      "behind at end %.1f us, latency p50 %lld ns p99 %lld ns p99.9 %lld ns max %lld ns\n",
      what, static_cast<unsigned long long>(r.calls), r.intended_rate, r.achieved_rate,
      (r.achieved_rate / r.intended_rate - 1) * 100, std::chrono::duration<double>(r.elapsed).count(),
      r.max_behind.count() / 1e3, r.behind_at_end.count() / 1e3,
      static_cast<long long>(r.histogram.value_at_percentile(50)),
      static_cast<long long>(r.histogram.value_at_percentile(99)),
      static_cast<long long>(r.histogram.value_at_percentile(99.9)), static_cast<long long>(r.histogram.max()));
}

// Timing on a shared machine: the rate must hold in one of three runs. Each run is checked
// exactly for what does not depend on load (calls made, never early).
TEST(Pacer, HoldsTenThousandCallsPerSecondForOneSecond) {
  kairos::Scheduler scheduler;
  kairos::Pacer pacer{scheduler};
  bool held = false;
  for (int attempt = 1; attempt <= 3 && !held; ++attempt) {
    std::uint64_t made = 0;  // written by the calls only; read after run_for returns
    const PacerReport r = pacer.run_for([&] { ++made; }, kairos::Pacer::period_for_rate(10'000), 1s);
    print("10,000/s for 1 s", r);
    EXPECT_EQ(r.calls, 10'000u);
    EXPECT_EQ(made, 10'000u);
    EXPECT_EQ(r.period, 100us);
    EXPECT_DOUBLE_EQ(r.intended_rate, 10'000.0);
    EXPECT_LE(r.achieved_rate, r.intended_rate * 1.000001);  // calls never start early
    EXPECT_EQ(r.histogram.count(), 10'000u);
    EXPECT_EQ(r.histogram.below_zero(), 0u);  // never early
    EXPECT_GE(r.elapsed, 999'900us);
    held = r.achieved_rate >= r.intended_rate * (1 - kRateSlack) && r.elapsed < 1s * (1 + kRateSlack);
  }
  EXPECT_TRUE(held) << "10,000 calls/s did not hold within " << kRateSlack * 100 << "% in 3 runs";
}

TEST(Pacer, HoldsOneHundredThousandCallsPerSecondForFiveSeconds) {
  const char* long_tests = std::getenv("KAIROS_LONG_TESTS");
  if (!long_tests || std::string(long_tests) != "1") GTEST_SKIP() << "set KAIROS_LONG_TESTS=1 to run";
  kairos::Scheduler scheduler;
  kairos::Pacer pacer{scheduler};
  const PacerReport r = pacer.run_for([] {}, kairos::Pacer::period_for_rate(100'000), 5s);
  print("100,000/s for 5 s", r);
  RecordProperty("achieved_rate", std::to_string(r.achieved_rate));
  EXPECT_EQ(r.calls, 500'000u);
  EXPECT_GE(r.achieved_rate, r.intended_rate * 0.99);
  EXPECT_LE(r.achieved_rate, r.intended_rate * 1.000001);
  EXPECT_EQ(r.histogram.below_zero(), 0u);
}

TEST(Pacer, CallsGetTheirIndexInOrder) {
  kairos::Scheduler scheduler;
  kairos::Pacer pacer{scheduler, 0ns};
  std::vector<std::uint64_t> seen;
  seen.reserve(100);
  const PacerReport r = pacer.run_count([&](std::uint64_t n) { seen.push_back(n); }, 200us, 100);
  ASSERT_EQ(r.calls, 100u);
  ASSERT_EQ(seen.size(), 100u);
  for (std::uint64_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i], i);
}

// A call that takes 20 periods leaves the next calls due; they run back to back, each measured
// from its own intended start. Measured from their actual starts they would all look fast.
TEST(Pacer, ASlowCallMakesTheCallsQueuedBehindItLate) {
  kairos::Scheduler scheduler;
  kairos::Pacer pacer{scheduler};
  constexpr std::uint64_t kCalls = 50, kSlow = 10;
  const PacerReport r = pacer.run_count(
      [](std::uint64_t n) {
        if (n == kSlow) std::this_thread::sleep_for(20ms);
      },
      1ms, kCalls);
  print("one 20 ms call at 1,000/s", r);
  ASSERT_EQ(r.calls, kCalls);
  // Calls 10..19 were meant to start at most 9 ms after call 10, which ended >= 20 ms after its
  // own intended start: each of these ten ends >= 10 ms after its intended start.
  const std::uint64_t rank_of_tenth_largest = kCalls - 9;
  double p = 0;
  while (kairos::LatencyHistogram::rank_at_percentile(p, kCalls) < rank_of_tenth_largest) p += 0.5;
  EXPECT_GE(r.histogram.value_at_percentile(p), 9'900'000) << "p" << p;
  EXPECT_GE(r.histogram.max(), 20'000'000);
  EXPECT_GE(r.max_behind, 18ms);  // call 11 started >= 19 ms after its intended start
  // That the backlog then runs at once (catch-up) is checked exactly on a ManualClock below.
}

// The same on a ManualClock, where every latency is exact.
TEST(Pacer, CatchUpLatenciesOnAManualClock) {
  kairos::ManualClock clock;
  kairos::BasicScheduler<kairos::ManualClock> scheduler{kairos::Options{}, clock};
  kairos::BasicPacer<kairos::ManualClock> pacer{scheduler, clock, 0ns};
  std::atomic<std::uint64_t> calls{0};
  std::atomic<bool> slow_started{false}, release_slow{false}, stuck{false};

  std::thread driver([&] {
    auto wait_for = [&](auto done) {
      const auto give_up = std::chrono::steady_clock::now() + 10s;
      while (!done()) {
        if (std::chrono::steady_clock::now() > give_up) {
          stuck = true;
          scheduler.shutdown_now();  // the pacer then throws instead of waiting forever
          return false;
        }
        std::this_thread::sleep_for(100us);
      }
      return true;
    };
    // t = 0: call 0. Then calls 1 and 2 one period apart.
    if (!wait_for([&] { return calls.load() == 1; })) return;
    clock.advance(1ms);
    if (!wait_for([&] { return calls.load() == 2; })) return;
    clock.advance(1ms);
    if (!wait_for([&] { return calls.load() == 3; })) return;
    clock.advance(1ms);  // t = 3 ms: call 3 starts and blocks while 5 ms pass
    if (!wait_for([&] { return slow_started.load(); })) return;
    clock.advance(5ms);  // t = 8 ms: calls 4..8 are due
    release_slow = true;
    if (!wait_for([&] { return calls.load() == 9; })) return;
    clock.advance(1ms);  // t = 9 ms: call 9, on time
  });

  PacerReport r;
  try {
    r = pacer.run_count(
        [&](std::uint64_t n) {
          if (n == 3) {
            slow_started = true;
            while (!release_slow.load()) std::this_thread::sleep_for(50us);
          }
          calls.fetch_add(1);
        },
        1ms, 10);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "run_count threw: " << e.what();
  }
  driver.join();
  ASSERT_FALSE(stuck.load()) << "the scheduler did not run a due call within 10 s";
  print("manual clock", r);
  EXPECT_EQ(r.calls, 10u);
  // Latencies: calls 0, 1, 2, 9 on time; call 3 took 5 ms; calls 4..8 waited behind it.
  const kairos::LatencyHistogram& h = r.histogram;
  EXPECT_EQ(h.count(), 10u);
  EXPECT_EQ(h.min(), 0);
  EXPECT_EQ(h.max(), 5'000'000);
  EXPECT_DOUBLE_EQ(h.mean(), (5 + 4 + 3 + 2 + 1) * 1e6 / 10);
  EXPECT_EQ(h.value_at_percentile(50), 0);        // rank 5 of {0,0,0,0,0,1,2,3,4,5} ms
  EXPECT_NEAR(h.value_at_percentile(60), 1e6, 1e6 * 0.004);
  EXPECT_EQ(r.max_behind, 4ms);                   // call 4: meant for 4 ms, started at 8 ms
  EXPECT_EQ(r.behind_at_end, 0ns);
  EXPECT_EQ(r.elapsed, 9ms);
  EXPECT_DOUBLE_EQ(r.achieved_rate, 1000.0);
}

TEST(Pacer, AnExceptionFromTheFunctionStopsTheRunAndIsRethrown) {
  kairos::Scheduler scheduler;
  kairos::Pacer pacer{scheduler, 0ns};
  std::uint64_t made = 0;
  EXPECT_THROW(pacer.run_count(
                   [&](std::uint64_t n) {
                     if (n == 5) throw std::out_of_range("call 5");
                     ++made;
                   },
                   100us, 1000),
               std::out_of_range);
  EXPECT_EQ(made, 5u);
}

TEST(Pacer, ARunTheSchedulerEndsThrowsCancelledError) {
  kairos::Scheduler scheduler;
  kairos::Pacer pacer{scheduler};
  std::atomic<std::uint64_t> made{0};
  std::thread stopper([&] {
    while (made.load() < 10) std::this_thread::sleep_for(100us);
    scheduler.shutdown();  // periodic tasks do not continue after shutdown by default
  });
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_THROW(pacer.run_for([&] { made.fetch_add(1); }, 1ms, 60s), kairos::CancelledError);
  stopper.join();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 10s);
}

TEST(Pacer, BadArguments) {
  kairos::Scheduler scheduler;
  kairos::Pacer pacer{scheduler};
  EXPECT_THROW(pacer.run_count([] {}, 0ns, 10), std::invalid_argument);
  EXPECT_THROW(pacer.run_count([] {}, -1ms, 10), std::invalid_argument);
  EXPECT_THROW(kairos::Pacer::period_for_rate(0), std::invalid_argument);
  EXPECT_THROW(kairos::Pacer::period_for_rate(-5), std::invalid_argument);
  EXPECT_THROW((kairos::Pacer{scheduler, -1ns}), std::invalid_argument);
  EXPECT_EQ(kairos::Pacer::period_for_rate(100'000), 10us);
  EXPECT_EQ(kairos::Pacer::period_for_rate(3), kairos::Duration(333'333'333));
  const PacerReport none = pacer.run_count([] {}, 1ms, 0);
  EXPECT_EQ(none.calls, 0u);
  EXPECT_EQ(none.histogram.count(), 0u);
  const PacerReport zero = pacer.run_for([] {}, 1ms, 0s);
  EXPECT_EQ(zero.calls, 0u);
  const PacerReport one = pacer.run_for([] {}, 1ms, 1500us);  // intended starts 0 and 1 ms
  EXPECT_EQ(one.calls, 2u);
}

}  // namespace
