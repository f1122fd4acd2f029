// The leader's loop (core/src/shard_leader.cpp): a wait that reaches its deadline with no
// wake-up starts the due tasks before it drains the inbox, under every wait policy; what the
// inbox held is taken in right after.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include <kairos/kairos.hpp>

#include "support.hpp"

namespace {

using namespace std::chrono_literals;
using kairos_test::kPatience;

std::uint64_t in_inbox(kairos::Scheduler& s) { return s.stats().total().in_inbox; }

bool wait_until_drained(kairos::Scheduler& s) {
  const auto until = std::chrono::steady_clock::now() + kPatience;
  while (in_inbox(s) != 0)
    if (std::chrono::steady_clock::now() > until) return false;
    else std::this_thread::sleep_for(1ms);
  return true;
}

class ShardLeader : public ::testing::TestWithParam<kairos::WaitPolicy> {};

// Task A is due in 400 ms; once the leader waits for it, 1,000 tasks due in an hour are
// submitted: later than A, so none wakes the leader, and far below the inbox's high-water mark.
// When A starts they must still be in the inbox (a drain before the pop would have taken them
// in between A's deadline and its start). If the leader took them in before it waited (it was
// still arming when they came), the round says nothing and is tried again.
TEST_P(ShardLeader, AReachedDeadlineStartsItsTaskBeforeTheInboxIsDrained) {
  constexpr std::uint64_t kLater = 1000;
  int rounds_that_said_something = 0;
  for (int round = 0; round < 5 && rounds_that_said_something == 0; ++round) {
    kairos::Options o;
    o.wait = GetParam();
    kairos::Scheduler s(o);
    std::atomic<std::int64_t> seen_in_inbox{-1};
    auto a = s.schedule([&] { seen_in_inbox.store(static_cast<std::int64_t>(in_inbox(s))); }, 400ms);
    ASSERT_TRUE(wait_until_drained(s));  // A taken in; the leader arms for it
    std::this_thread::sleep_for(20ms);
    std::vector<kairos::ScheduledFuture<void>> later;
    later.reserve(kLater);
    for (std::uint64_t i = 0; i < kLater; ++i) later.push_back(s.schedule([] {}, 1h));
    std::this_thread::sleep_for(20ms);
    const bool waited_first = in_inbox(s) == kLater;
    ASSERT_EQ(a.wait_for(kPatience), std::future_status::ready);
    ASSERT_TRUE(wait_until_drained(s)) << "taken in after the batch";
    if (!waited_first) continue;
    ++rounds_that_said_something;
    EXPECT_EQ(seen_in_inbox.load(), static_cast<std::int64_t>(kLater));
    EXPECT_EQ(s.queue_size(), kLater);
  }
  if (rounds_that_said_something == 0) GTEST_SKIP() << "the leader never waited before the later submissions came";
}

INSTANTIATE_TEST_SUITE_P(EveryWaitPolicy, ShardLeader,
                         ::testing::Values(kairos::WaitPolicy::sleep(), kairos::WaitPolicy::hybrid(std::chrono::microseconds(50)), kairos::WaitPolicy::adaptive(),
                                           kairos::WaitPolicy::spin()),
                         [](const ::testing::TestParamInfo<kairos::WaitPolicy>& p) {
                           switch (p.param.mode()) {
                             case kairos::WaitPolicy::Mode::sleep: return "Sleep";
                             case kairos::WaitPolicy::Mode::hybrid: return "Hybrid";
                             case kairos::WaitPolicy::Mode::spin: return "Spin";
                             case kairos::WaitPolicy::Mode::adaptive: return "Adaptive";
                           }
                           return "Unknown";
                         });

}  // namespace
