// wait_policy_test.cpp: the same small real-clock contract under every kairos WaitPolicy:
// never early against std::chrono::steady_clock, deadline order, fixed-rate phase, wake-up on
// an earlier submission. Lateness is bounded only loosely.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
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

template <class Policy>
class WaitPolicyContract : public testing::Test {
 protected:
  static kairos::Options options(unsigned shards = 1, unsigned per_shard = 1) {
    kairos::Options o = kairos_test::threads(shards, per_shard);
    o.wait = Policy::make();
    return o;
  }
};

using WaitPolicies = testing::Types<Sleep, Spin, Hybrid, HybridZeroWindow>;
TYPED_TEST_SUITE(WaitPolicyContract, WaitPolicies);

// Absolute deadlines submitted out of order; each task reads steady_clock first thing. A start
// before its deadline is an early fire. One thread: starts follow deadline order exactly.
TYPED_TEST(WaitPolicyContract, NeverEarlyAndInDeadlineOrder) {
  constexpr int kTasks = 24;
  std::vector<steady::time_point> deadline(kTasks), started(kTasks);
  std::vector<int> order;
  std::mutex mu;
  std::vector<kairos::ScheduledFuture<void>> fs;
  kairos::Scheduler s(this->options());
  auto base = steady::now();
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

}  // namespace
