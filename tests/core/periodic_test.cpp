// periodic_test.cpp: fixed-rate and fixed-delay tasks on kairos: exact run times, catch-up
// after an overrun, no overlap, happens-before between runs, and how a failure ends a series.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <latch>
#include <mutex>
#include <stdexcept>
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
using kairos_test::single_thread;

class StartTimes {
 public:
  explicit StartTimes(const ManualClock& c) : clock_(c) {}
  void record() {
    std::lock_guard lock(mu_);
    starts_.push_back(std::chrono::duration_cast<std::chrono::microseconds>(
                          clock_.now().time_since_epoch())
                          .count());
  }
  std::vector<long> get() const {
    std::lock_guard lock(mu_);
    return starts_;
  }
  std::size_t size() const {
    std::lock_guard lock(mu_);
    return starts_.size();
  }

 private:
  const ManualClock& clock_;
  mutable std::mutex mu_;
  std::vector<long> starts_;  // in microseconds of the ManualClock
};

// ---- fixed rate -------------------------------------------------------------------------

TEST(FixedRate, RunNIsDueAtFirstPlusNPeriods) {
  ManualClock clock;
  StartTimes starts(clock);
  ManualScheduler s(single_thread(), clock);
  auto f = s.schedule_at_fixed_rate([&] { starts.record(); }, 5ms, 10ms);
  EXPECT_TRUE(f.is_periodic());
  EXPECT_EQ(f.delay(), 5ms);

  clock.advance(5ms - 1ns);
  ASSERT_TRUE(s.wait_idle(kPatience));
  EXPECT_EQ(starts.size(), 0u);
  clock.advance(1ns);
  ASSERT_TRUE(s.wait_idle(kPatience));
  EXPECT_EQ(starts.get(), (std::vector<long>{5'000}));
  for (int n = 1; n <= 5; ++n) {
    EXPECT_EQ(f.delay(), 10ms);
    clock.advance(10ms - 1ns);
    ASSERT_TRUE(s.wait_idle(kPatience));
    ASSERT_EQ(starts.size(), static_cast<std::size_t>(n)) << "run " << n << " started early";
    clock.advance(1ns);
    ASSERT_TRUE(s.wait_idle(kPatience));
    ASSERT_EQ(starts.size(), static_cast<std::size_t>(n + 1));
  }
  EXPECT_EQ(starts.get(), (std::vector<long>{5'000, 15'000, 25'000, 35'000, 45'000, 55'000}));
  EXPECT_FALSE(f.is_done());
}

// Time jumps past many periods at once: every missed run happens, one after another, and the
// schedule keeps its phase (the next run is due at first + n * period, not "now + period").
TEST(FixedRate, CatchesUpEveryMissedRunWithoutOverlap) {
  std::atomic<int> runs{0};
  std::atomic<bool> inside{false};
  std::atomic<int> overlaps{0};
  Manual s(kairos_test::threads(1, 3));
  auto f = s.schedule_at_fixed_rate(
      [&] {
        if (inside.exchange(true)) ++overlaps;
        for (int i = 0; i < 20; ++i) std::this_thread::yield();
        ++runs;
        inside.store(false);
      },
      5ms, 10ms);
  s.clock.advance(98ms);  // runs due at 5, 15, ..., 95: ten of them
  ASSERT_TRUE(s.wait_idle(kPatience));
  EXPECT_EQ(runs, 10);
  EXPECT_EQ(overlaps, 0);
  EXPECT_EQ(f.delay(), 7ms);  // run 10 is due at 105 ms
  s.step(7ms - 1ns);
  EXPECT_EQ(runs, 10);
  s.step(1ns);
  EXPECT_EQ(runs, 11);
  s.clock.advance(1000ms);  // 100 more: due at 115 ... 1105
  ASSERT_TRUE(s.wait_idle(kPatience));
  EXPECT_EQ(runs, 111);
  EXPECT_EQ(overlaps, 0);
  EXPECT_EQ(s.queue_size(), 1u);
}

// A run that takes longer than the period (the body moves the clock) does not shift the
// schedule: the next runs are due at first + n * period and start back to back.
TEST(FixedRate, LongRunIsFollowedByImmediateCatchUp) {
  ManualClock clock;
  StartTimes starts(clock);
  std::atomic<int> runs{0};
  ManualScheduler s(single_thread(), clock);
  s.schedule_at_fixed_rate(
      [&] {
        starts.record();
        if (runs++ == 0) clock.advance(25ms);  // the first run "takes" 25 ms
      },
      5ms, 10ms);
  clock.advance(5ms);
  ASSERT_TRUE(s.wait_idle(kPatience));
  // First run 5 -> 30 ms; runs due at 15 and 25 start at once; the next is due at 35.
  EXPECT_EQ(starts.get(), (std::vector<long>{5'000, 30'000, 30'000}));
  clock.advance(5ms);
  ASSERT_TRUE(s.wait_idle(kPatience));
  EXPECT_EQ(starts.get(), (std::vector<long>{5'000, 30'000, 30'000, 35'000}));
}

// ---- fixed delay ------------------------------------------------------------------------

// The next run is due `delay` after the previous run ends; the body moves the clock to
// simulate a run that takes 3 ms.
TEST(FixedDelay, NextRunIsDueDelayAfterThePreviousRunEnds) {
  ManualClock clock;
  StartTimes starts(clock);
  ManualScheduler s(single_thread(), clock);
  auto f = s.schedule_with_fixed_delay(
      [&] {
        starts.record();
        clock.advance(3ms);
      },
      5ms, 10ms);
  EXPECT_TRUE(f.is_periodic());
  clock.advance(5ms);
  ASSERT_TRUE(s.wait_idle(kPatience));
  EXPECT_EQ(starts.get(), (std::vector<long>{5'000}));
  EXPECT_EQ(clock.now(), ManualClock::time_point(8ms));
  EXPECT_EQ(f.delay(), 10ms);  // due at 18 ms, not at 15

  clock.advance(10ms - 1ns);
  ASSERT_TRUE(s.wait_idle(kPatience));
  EXPECT_EQ(starts.size(), 1u);
  clock.advance(1ns);
  ASSERT_TRUE(s.wait_idle(kPatience));
  EXPECT_EQ(starts.get(), (std::vector<long>{5'000, 18'000}));
  EXPECT_EQ(clock.now(), ManualClock::time_point(21ms));

  // A big jump gives one run, not a catch-up burst: fixed delay never piles up.
  clock.advance(100ms);
  ASSERT_TRUE(s.wait_idle(kPatience));
  EXPECT_EQ(starts.get(), (std::vector<long>{5'000, 18'000, 121'000}));
  EXPECT_EQ(f.delay(), 10ms);
  EXPECT_FALSE(f.is_done());
}

// ---- no overlap, happens-before -------------------------------------------------------

// Three threads share the shard; each run of one periodic task may land on any of them. A
// plain counter is safe only if each run happens-before the next (ThreadSanitizer checks it).
TEST(Periodic, RunsNeverOverlapAndEachHappensBeforeTheNext) {
  for (bool fixed_rate : {true, false}) {
    long plain_counter = 0;
    std::atomic<bool> inside{false};
    std::atomic<int> overlaps{0};
    std::atomic<int> runs{0};
    Manual s(kairos_test::threads(1, 3));
    std::atomic<int> lost_updates{0};
    auto body = [&] {
      if (inside.exchange(true, std::memory_order_relaxed)) ++overlaps;
      if (++plain_counter != runs.load(std::memory_order_relaxed) + 1) ++lost_updates;
      for (int i = 0; i < 5; ++i) std::this_thread::yield();
      inside.store(false, std::memory_order_relaxed);
      runs.fetch_add(1, std::memory_order_relaxed);
    };
    // Another task keeps the other threads busy and moving between tasks.
    std::atomic<int> filler_runs{0};
    auto filler = s.schedule_at_fixed_rate([&] { ++filler_runs; }, 0ns, 1us);
    auto f = fixed_rate ? s.schedule_at_fixed_rate(body, 0ns, 1us)
                        : s.schedule_with_fixed_delay(body, 0ns, 1us);
    ASSERT_TRUE(s.wait_idle(kPatience));  // the runs due at 0 have happened
    for (int step = 0; step < 300; ++step) {
      s.step(fixed_rate ? 3us : 1us);
    }
    EXPECT_EQ(overlaps, 0);
    f.cancel();
    filler.cancel();
    ASSERT_TRUE(s.wait_idle(kPatience));
    EXPECT_EQ(lost_updates, 0);
    EXPECT_EQ(runs, fixed_rate ? 901 : 301);
  }
}

// The same on the real clock, with the threads' own timing.
TEST(Periodic, NoOverlapOnTheSteadyClock) {
  long plain_counter = 0;
  std::atomic<bool> inside{false};
  std::atomic<int> overlaps{0};
  std::atomic<int> runs{0};
  std::atomic<int> lost_updates{0};
  Gate enough;
  kairos_test::Scheduler s(kairos_test::threads(1, 3));
  auto f = s.schedule_at_fixed_rate(
      [&] {
        if (inside.exchange(true)) ++overlaps;
        if (++plain_counter != runs.load() + 1) ++lost_updates;
        std::this_thread::sleep_for(50us);  // longer than the period: always behind
        inside.store(false);
        if (++runs == 300) enough.open();
      },
      0ns, 10us);
  ASSERT_TRUE(enough.wait());
  f.cancel();
  s.shutdown();
  ASSERT_TRUE(s.await_termination(kPatience));
  EXPECT_EQ(overlaps, 0);
  EXPECT_EQ(lost_updates, 0);
}

// ---- futures of periodic tasks ----------------------------------------------------------

TEST(Periodic, FutureNeverCompletesNormally) {
  std::atomic<int> runs{0};
  Manual s;
  auto f = s.schedule_at_fixed_rate([&] { ++runs; }, 1ms, 1ms);
  std::atomic<bool> get_returned{false};
  std::atomic<bool> got_cancelled{false};
  std::thread waiter([&, g = f]() mutable {
    try {
      g.get();
    } catch (const kairos::CancelledError&) {
      got_cancelled = true;
    }
    get_returned = true;
  });
  for (int i = 0; i < 5; ++i) {
    s.step(1ms);
  }
  EXPECT_EQ(runs, 5);
  EXPECT_FALSE(f.is_done());
  EXPECT_FALSE(f.is_cancelled());
  EXPECT_EQ(f.wait_for(10ms), std::future_status::timeout);
  EXPECT_FALSE(get_returned);
  EXPECT_TRUE(f.cancel());
  waiter.join();
  EXPECT_TRUE(got_cancelled);
  EXPECT_TRUE(f.is_done());
  EXPECT_TRUE(f.is_cancelled());
  s.step(10ms);
  EXPECT_EQ(runs, 5);
}

// A periodic task that cancels itself from inside a run gets no further run.
TEST(Periodic, CancelFromInsideARunStopsTheSeries) {
  std::atomic<int> runs{0};
  kairos::ScheduledFuture<void> self;
  std::latch self_set(1);
  Manual s(kairos_test::threads(1, 2));
  self = s.schedule_at_fixed_rate(
      [&] {
        self_set.wait();
        if (++runs == 3) {
          EXPECT_TRUE(self.cancel());
        }
      },
      1ms, 1ms);
  self_set.count_down();
  s.step(10ms);
  EXPECT_EQ(runs, 3);
  EXPECT_TRUE(self.is_cancelled());
}

// ---- failures ---------------------------------------------------------------------------

struct PeriodicFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

TEST(Periodic, ExceptionSuppressesLaterRunsAndReachesGetAndOnUncaught) {
  for (bool fixed_rate : {true, false}) {
    std::atomic<int> runs{0};
    std::mutex mu;
    std::vector<std::exception_ptr> uncaught;
    std::exception_ptr thrown;
    std::atomic<bool> done_when_reported{false};
    kairos::ScheduledFuture<void> f;
    std::latch f_set(1);
    kairos::Options o = kairos_test::threads(1, 2);
    o.on_uncaught = [&](std::exception_ptr e) {
      done_when_reported = f.is_done();
      std::lock_guard lock(mu);
      uncaught.push_back(e);
    };
    Manual s(o);
    auto body = [&] {
      f_set.wait();
      if (++runs == 3) {
        auto e = std::make_exception_ptr(PeriodicFailure("third run"));
        {
          std::lock_guard lock(mu);
          thrown = e;
        }
        std::rethrow_exception(e);
      }
    };
    f = fixed_rate ? s.schedule_at_fixed_rate(body, 1ms, 1ms)
                   : s.schedule_with_fixed_delay(body, 1ms, 1ms);
    f_set.count_down();
    for (int i = 0; i < 10; ++i) {
      s.step(1ms);
    }
    EXPECT_EQ(runs, 3);
    EXPECT_TRUE(f.is_done());
    EXPECT_FALSE(f.is_cancelled());
    EXPECT_EQ(s.queue_size(), 0u);
    try {
      f.get();
      ADD_FAILURE() << "get() returned normally";
    } catch (const PeriodicFailure& e) {
      std::lock_guard lock(mu);
      try {
        std::rethrow_exception(thrown);
      } catch (const PeriodicFailure& original) {
        EXPECT_EQ(&e, &original) << "get() must rethrow the same exception object";
      }
    }
    ASSERT_TRUE(kairos_test::eventually([&] {
      std::lock_guard lock(mu);
      return !uncaught.empty();
    }));
    ASSERT_TRUE(s.wait_idle(kPatience));
    std::lock_guard lock(mu);
    ASSERT_EQ(uncaught.size(), 1u);
    EXPECT_EQ(uncaught[0], thrown);
    EXPECT_TRUE(done_when_reported) << "on_uncaught must run after the future completed";
  }
}

// The worker survives a failed periodic task: other tasks keep running on the same thread.
TEST(Periodic, FailureLeavesTheThreadWorking) {
  std::atomic<int> uncaught{0};
  kairos::Options o = single_thread();
  o.on_uncaught = [&](std::exception_ptr) { ++uncaught; };
  Manual s(o);
  auto p = s.schedule_with_fixed_delay([] { throw 42; }, 1ms, 1ms);
  auto other = s.schedule([] { return std::this_thread::get_id(); }, 2ms);
  s.step(2ms);
  EXPECT_TRUE(p.is_done());
  EXPECT_THROW(p.get(), int);
  EXPECT_TRUE(other.is_done());
  EXPECT_NE(other.get(), std::this_thread::get_id());
  EXPECT_TRUE(kairos_test::eventually([&] { return uncaught == 1; }));
}

}  // namespace
