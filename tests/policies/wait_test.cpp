// wait_test.cpp: policies/kairos/wait.hpp. The same small real-clock contract under every kairos
// WaitPolicy: never early against std::chrono::steady_clock, deadline order, fixed-rate phase,
// wake-up on an earlier submission. Lateness is bounded only loosely. Then adaptive()'s own
// checks: bad parameters, the window it measures and reports.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <stdexcept>
#include <mutex>
#include <thread>
#include <vector>

#include <kairos/kairos.hpp>

#include "support.hpp"

namespace {

using namespace std::chrono_literals;
using kairos_test::kPatience;
using steady = std::chrono::steady_clock;

struct Sleep {
  static kairos::WaitPolicy make() { return kairos::WaitPolicy::sleep(); }
};
struct Spin {
  static kairos::WaitPolicy make() { return kairos::WaitPolicy::spin(); }
};
struct Hybrid {
  static kairos::WaitPolicy make() { return kairos::WaitPolicy::hybrid(200us); }
};
struct HybridZeroWindow {
  static kairos::WaitPolicy make() { return kairos::WaitPolicy::hybrid(0ns); }
};
struct Adaptive {
  static kairos::WaitPolicy make() { return kairos::WaitPolicy::adaptive(); }
};
struct AdaptiveNoWindow {  // floor = ceiling = 0: every wait a measured sleep to the deadline
  static kairos::WaitPolicy make() { return kairos::WaitPolicy::adaptive(0ns, 0ns, 0.5); }
};

template <class Policy>
class WaitPolicyContract : public testing::Test {
 protected:
  static kairos::Options options(unsigned shards = 1, unsigned per_shard = 1) {
    kairos::Options o = kairos_test::threads(shards, per_shard);
    o.wait = Policy::make();
    return o;
  }
};

using WaitPolicies = testing::Types<Sleep, Spin, Hybrid, HybridZeroWindow, Adaptive, AdaptiveNoWindow>;
TYPED_TEST_SUITE(WaitPolicyContract, WaitPolicies);

// Absolute deadlines submitted out of order; each task reads steady_clock first thing. A start
// before its deadline is an early fire. One thread: starts follow deadline order exactly.
// The only worker is held by a gate task until every task is submitted, so a submitter
// preempted past some deadlines (a loaded machine, a sanitizer build) cannot let a later
// deadline run before an earlier one that was not yet submitted.
TYPED_TEST(WaitPolicyContract, NeverEarlyAndInDeadlineOrder) {
  constexpr int kTasks = 24;
  std::vector<steady::time_point> deadline(kTasks), started(kTasks);
  std::vector<int> order;
  std::mutex mu;
  std::vector<kairos::ScheduledFuture<void>> fs;
  kairos::Scheduler s(this->options());
  auto base = steady::now();
  kairos_test::Gate holding, all_submitted;
  auto holder = s.schedule_at([&] {
    holding.open();
    all_submitted.wait();
  }, base);
  // The holder runs before anything else is submitted: popped later, it could share its batch
  // with deadlines a slow submitter let pass (then one submitted after that batch, and due
  // before some of it, would start after them).
  ASSERT_TRUE(holding.wait());
  base = steady::now();
  for (int k = 0; k < kTasks; ++k) {
    int i = (k * 7) % kTasks;  // a permutation: deadlines do not follow submission order
    deadline[i] = base + 300us + i * 250us;
    fs.push_back(s.schedule_at(
        [&, i] {
          auto now = steady::now();
          std::lock_guard lock(mu);
          started[i] = now;
          order.push_back(i);
        },
        deadline[i]));
  }
  all_submitted.open();
  ASSERT_EQ(holder.wait_for(kPatience), std::future_status::ready);
  for (auto& f : fs) ASSERT_EQ(f.wait_for(kPatience), std::future_status::ready);
  std::lock_guard lock(mu);
  for (int i = 0; i < kTasks; ++i) {
    EXPECT_GE(started[i], deadline[i]) << "task " << i << " fired early";
    EXPECT_LT(started[i], deadline[i] + 5s) << "task " << i << " absurdly late";
  }
  std::vector<int> expected(kTasks);
  for (int i = 0; i < kTasks; ++i) expected[i] = i;
  EXPECT_EQ(order, expected);
}

// Relative delays: t0 is read before the schedule call, so t0 + delay is a lower bound.
TYPED_TEST(WaitPolicyContract, NeverEarlyWithRelativeDelays) {
  constexpr int kTasks = 24;
  std::atomic<int> early{0};
  std::vector<kairos::ScheduledFuture<void>> fs;
  kairos::Scheduler s(this->options());
  for (int k = 0; k < kTasks; ++k) {
    auto delay = std::chrono::microseconds(200 + ((k * 7) % kTasks) * 150);
    auto t0 = steady::now();
    fs.push_back(s.schedule(
        [&early, t0, delay] {
          if (steady::now() - t0 < delay) ++early;
        },
        delay));
  }
  for (auto& f : fs) ASSERT_EQ(f.wait_for(kPatience), std::future_status::ready);
  EXPECT_EQ(early, 0);
}

// Run n of a fixed-rate task never starts before t0 + initial + n * period.
TYPED_TEST(WaitPolicyContract, FixedRateKeepsItsPhase) {
  constexpr int kRuns = 15;
  constexpr auto kInitial = 1ms;
  constexpr auto kPeriod = 700us;
  std::vector<steady::time_point> starts;
  std::mutex mu;
  kairos_test::Gate enough;
  kairos::Scheduler s(this->options());
  auto t0 = steady::now();
  auto f = s.schedule_at_fixed_rate(
      [&] {
        auto now = steady::now();
        std::lock_guard lock(mu);
        starts.push_back(now);
        if (starts.size() == kRuns) enough.open();
      },
      kInitial, kPeriod);
  ASSERT_TRUE(enough.wait());
  f.cancel();
  std::lock_guard lock(mu);
  for (std::size_t n = 0; n < starts.size(); ++n)
    EXPECT_GE(starts[n] - t0, kInitial + static_cast<long>(n) * kPeriod) << "run " << n << " early";
}

// A leader waiting for a far deadline is woken by an earlier submission.
TYPED_TEST(WaitPolicyContract, EarlierSubmissionWakesTheLeader) {
  kairos::Scheduler s(this->options());
  auto far = s.schedule([] {}, 1h);
  std::this_thread::sleep_for(2ms);  // let the leader settle on the 1 h deadline
  auto t0 = steady::now();
  auto near = s.schedule([] { return steady::now(); }, 2ms);
  ASSERT_EQ(near.wait_for(kPatience), std::future_status::ready);
  EXPECT_GE(near.get() - t0, 2ms);
  EXPECT_FALSE(far.is_done());
}

// Several threads per shard and several shards: everything runs once, never early.
TYPED_TEST(WaitPolicyContract, SeveralShardsAndThreads) {
  constexpr int kTasks = 200;
  std::atomic<int> early{0};
  std::vector<kairos::ScheduledFuture<int>> fs;
  kairos::Scheduler s(this->options(2, 2));
  for (int i = 0; i < kTasks; ++i) {
    auto delay = std::chrono::microseconds(100 + (i * 37) % 3000);
    auto t0 = steady::now();
    fs.push_back(s.schedule(
        [&, t0, delay, i] {
          if (steady::now() - t0 < delay) ++early;
          return i;
        },
        delay));
  }
  for (int i = 0; i < kTasks; ++i) EXPECT_EQ(fs[i].get(), i);
  EXPECT_EQ(early, 0);
  s.shutdown();
  ASSERT_TRUE(s.await_termination(kPatience));
}

// ---- adaptive() alone ------------------------------------------------------------------------

TEST(AdaptiveWait, RejectsBadParameters) {
  using kairos::WaitPolicy;
  EXPECT_THROW(WaitPolicy::adaptive(-1ns, 10us), std::invalid_argument);
  EXPECT_THROW(WaitPolicy::adaptive(10us, 9us), std::invalid_argument);
  EXPECT_THROW(WaitPolicy::adaptive(1us, 10us, 0.0), std::invalid_argument);
  EXPECT_THROW(WaitPolicy::adaptive(1us, 10us, 1.0), std::invalid_argument);
  EXPECT_THROW(WaitPolicy::adaptive(1us, 10us, std::nan("")), std::invalid_argument);
  WaitPolicy p = WaitPolicy::adaptive(2us, 2us, 0.5);  // floor == ceiling is a fixed window
  EXPECT_EQ(p.spin_floor(), 2us);
  EXPECT_EQ(p.spin_ceiling(), 2us);
  EXPECT_EQ(p.percentile(), 0.5);
  EXPECT_EQ(WaitPolicy::adaptive(std::chrono::duration<double, std::micro>(0.5), 1us).spin_floor(), 500ns);
}

// Timers far enough apart that the leader sleeps before each: every sleep that timed out is
// measured, the window stays within its bounds, and stats() shows both.
TEST(AdaptiveWait, MeasuresTimedSleepsAndReportsItsWindow) {
  constexpr int kTasks = 20;
  kairos::Options o = kairos_test::threads(1, 1);
  o.wait = kairos::WaitPolicy::adaptive(3us, 400us, 0.9);
  kairos::Scheduler s(o);
  std::atomic<int> early{0};
  std::vector<kairos::ScheduledFuture<void>> fs;
  auto base = steady::now();
  for (int i = 0; i < kTasks; ++i) {
    auto deadline = base + 2ms + i * 1ms;
    fs.push_back(s.schedule_at([&early, deadline] { early += steady::now() < deadline; }, deadline));
  }
  for (auto& f : fs) ASSERT_EQ(f.wait_for(kPatience), std::future_status::ready);
  EXPECT_EQ(early, 0);
  kairos::ShardStats st = s.stats().shards.at(0);
  EXPECT_GE(st.wake_overshoot_samples, 1u);
  EXPECT_LE(st.wake_overshoot_samples, static_cast<std::uint64_t>(kTasks) + 1);  // one per timed sleep
  EXPECT_GE(st.spin_window_ns, 3'000);
  EXPECT_LE(st.spin_window_ns, 400'000);
  EXPECT_GE(st.wake_overshoot_ns, 0);
  EXPECT_EQ(s.stats().total().wake_overshoot_samples, st.wake_overshoot_samples);
}

// A leader woken by earlier submissions (kicks) measures nothing: only timeouts say how late the
// kernel wakes.
TEST(AdaptiveWait, KicksAreNotMeasured) {
  kairos::Options o = kairos_test::threads(1, 1);
  o.wait = kairos::WaitPolicy::adaptive();
  kairos::Scheduler s(o);
  auto far = s.schedule([] {}, 2h);
  for (int i = 0; i < 20; ++i) {
    s.schedule([] {}, 1h - std::chrono::minutes(i));  // each earlier than the last: a kick
    ASSERT_TRUE(s.wait_idle(kPatience));
  }
  EXPECT_EQ(s.stats().shards.at(0).wake_overshoot_samples, 0u);
  auto near = s.schedule([] {}, 2ms);
  ASSERT_EQ(near.wait_for(kPatience), std::future_status::ready);
  EXPECT_GE(s.stats().shards.at(0).wake_overshoot_samples, 1u);
  EXPECT_FALSE(far.is_done());
}

// The other policies report their fixed window and measure nothing.
TEST(AdaptiveWait, OtherPoliciesReportTheirFixedWindow) {
  struct Case {
    kairos::WaitPolicy wait;
    std::int64_t window;
  };
  for (const Case& c : {Case{kairos::WaitPolicy::hybrid(70us), 70'000}, Case{kairos::WaitPolicy::sleep(), 0},
                        Case{kairos::WaitPolicy::spin(), 0}}) {
    kairos::Options o = kairos_test::threads(1, 1);
    o.wait = c.wait;
    kairos::Scheduler s(o);
    ASSERT_EQ(s.schedule([] {}, 1ms).wait_for(kPatience), std::future_status::ready);
    kairos::ShardStats st = s.stats().shards.at(0);
    EXPECT_EQ(st.spin_window_ns, c.window) << c.wait.name();
    EXPECT_EQ(st.wake_overshoot_samples, 0u) << c.wait.name();
    EXPECT_EQ(st.wake_overshoot_ns, 0) << c.wait.name();
  }
}

}  // namespace
