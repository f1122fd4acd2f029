// submit_clock_test.cpp: a deadline computed at submission (schedule(f, delay), execute, submit,
// rearm(delay)) is now + delay, "now" read from CLOCK_MONOTONIC (steady_now_ns), the clock the
// leader tests deadlines against: no task starts before (the clock before the call) + delay, also
// while the kernel slews the clock, and equal delays submitted from two threads in happens-before
// order start in that order.
#include <gtest/gtest.h>

#include <sys/timex.h>

#include <atomic>
#include <chrono>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include <kairos/detail/futex.hpp>  // cpu_relax
#include <kairos/detail/steady_clock.hpp>  // steady_now_ns
#include <kairos/kairos.hpp>

#include "support.hpp"

namespace {

using namespace std::chrono_literals;
using kairos::detail::steady_now_ns;
using kairos_test::kPatience;
using kairos_test::Scheduler;

// A leader that spins to its deadline starts tasks within a few hundred ns of it, so an early
// deadline shows as an early start.
kairos::Options spinning() {
  kairos::Options o;
  o.shards = 1;
  o.wait = kairos::WaitPolicy::spin();
  return o;
}

struct Counts {
  long tasks = 0, early = 0;
};

// n tasks with delays of 0 to 20 us (a fifth by execute, a fifth by submit, a fifth re-armed
// from 1 s to the small delay): each records its start; early if it is before the clock read
// before the call that set its deadline + that delay. Paced: each task is waited for before the
// next is submitted, so the spinning leader is idle at each deadline and starts the task within
// a few hundred ns of it (an early deadline shows); else a burst.
Counts submit_and_count(Scheduler& s, int n, std::uint64_t seed, bool paced = false) {
  std::mt19937_64 rng(seed);
  std::vector<std::int64_t> earliest(n);
  std::vector<std::atomic<std::int64_t>> start(n);
  for (auto& v : start) v.store(-1, std::memory_order_relaxed);
  std::vector<kairos::ScheduledFuture<void>> rearmable;
  for (int i = 0; i < n; ++i) {
    const std::int64_t d = static_cast<std::int64_t>(rng() % 20'000);
    auto body = [&start, i] { start[i].store(steady_now_ns(), std::memory_order_release); };
    switch (i % 5) {
      case 0:
        earliest[i] = steady_now_ns();
        s.execute(body);
        break;
      case 1:
        earliest[i] = steady_now_ns();
        (void)s.submit(body);
        break;
      case 2: {
        auto f = s.schedule_rearmable(body, 1s);
        earliest[i] = steady_now_ns() + d;
        EXPECT_TRUE(f.rearm(std::chrono::nanoseconds(d)));
        rearmable.push_back(std::move(f));
        break;
      }
      default:
        earliest[i] = steady_now_ns() + d;
        (void)s.schedule(body, std::chrono::nanoseconds(d));
        break;
    }
    if (paced) {
      const std::int64_t until = steady_now_ns() + 1'000'000'000;
      while (start[i].load(std::memory_order_acquire) < 0 && steady_now_ns() < until) kairos::detail::cpu_relax();
    }
  }
  // wait_idle() returns once nothing is due: a task whose small delay has not passed yet may still
  // be pending then. Every task is waited for (bounded), then the scheduler is idle.
  EXPECT_TRUE(kairos_test::eventually([&] {
    for (const auto& v : start)
      if (v.load(std::memory_order_acquire) < 0) return false;
    return true;
  }));
  EXPECT_TRUE(s.wait_idle(kPatience));
  Counts c;
  for (int i = 0; i < n; ++i) {
    const std::int64_t at = start[i].load(std::memory_order_acquire);
    EXPECT_GE(at, 0) << i;
    ++c.tasks;
    c.early += at < earliest[i];
  }
  return c;
}

TEST(SubmitClock, SmallDelaysNeverStartEarly) {
  Scheduler s(spinning());
  Counts c = submit_and_count(s, 20'000, 1);
  EXPECT_EQ(c.early, 0) << "of " << c.tasks << " in a burst";
  c = submit_and_count(s, 1'000, 2, /*paced=*/true);
  EXPECT_EQ(c.early, 0) << "of " << c.tasks << " one at a time";
}

// Thread A schedules a_i with delay D, then publishes i; thread B waits for i, then schedules b_i
// with the same D. B's "now" is read after A's (happens-before through the acquire load), so b_i's
// deadline is never before a_i's, and on a tie a_i was submitted first: a_i starts first, for
// every pair. On the steady clock, not a ManualClock (Fifo's tests): the deadlines come from
// separate clock reads on two threads. One runner, so the start order is the run order.
TEST(SubmitClock, EqualDelaysAcrossThreadsKeepHappensBeforeOrder) {
  constexpr int kPairs = 10'000;
  constexpr auto kDelay = 200us;  // a's and b's sit in the shard together, racing its drains
  kairos_test::Recorder order;
  Scheduler s(kairos_test::single_thread());
  std::atomic<int> published{-1};
  std::thread a([&] {
    for (int i = 0; i < kPairs; ++i) {
      (void)s.schedule([&order, i] { order.add(2 * i); }, kDelay);
      published.store(i, std::memory_order_release);
    }
  });
  std::thread b([&] {
    for (int i = 0; i < kPairs; ++i) {
      while (published.load(std::memory_order_acquire) < i) std::this_thread::yield();
      (void)s.schedule([&order, i] { order.add(2 * i + 1); }, kDelay);
    }
  });
  a.join();
  b.join();
  // wait_idle returns once nothing is due: every deadline must have passed first (each is at most
  // kDelay after its submission, all of which came before this read). A leader that keeps up
  // with the submissions otherwise finds the last ones not due yet and lets wait_idle return.
  std::this_thread::sleep_until(std::chrono::steady_clock::now() + kDelay);
  ASSERT_TRUE(s.wait_idle(kPatience));
  const std::vector<int> ids = order.ids();
  ASSERT_EQ(ids.size(), static_cast<std::size_t>(2 * kPairs));
  std::vector<int> position(2 * kPairs, -1);
  for (int at = 0; at < 2 * kPairs; ++at) position[ids[at]] = at;
  int inversions = 0;
  for (int i = 0; i < kPairs; ++i) {
    inversions += position[2 * i] > position[2 * i + 1];
    if (i > 0) {
      ASSERT_LT(position[2 * (i - 1)], position[2 * i]) << "thread A's own order";
      ASSERT_LT(position[2 * (i - 1) + 1], position[2 * i + 1]) << "thread B's own order";
    }
  }
  EXPECT_EQ(inversions, 0) << "of " << kPairs << " pairs";
}

// Restores the kernel's NTP frequency on every way out.
class FrequencyGuard {
 public:
  explicit FrequencyGuard(long original) : original_(original) {}
  ~FrequencyGuard() {
    timex tx{};
    tx.modes = ADJ_FREQUENCY;
    tx.freq = original_;
    if (adjtimex(&tx) == -1) ADD_FAILURE() << "could not restore the NTP frequency: " << std::strerror(errno);
  }
  FrequencyGuard(const FrequencyGuard&) = delete;
  FrequencyGuard& operator=(const FrequencyGuard&) = delete;

 private:
  long original_;
};

// CLOCK_MONOTONIC slewed by +500 ppm, then -500 ppm (NTP's whole range, crossed), while tasks
// with small delays are submitted: none starts early. The deadlines and the leader's test read
// the same clock, so a slew moves both; this guards that against a cheaper submission clock
// tried later (one read from the CPU's counter was removed: docs/design.md). Needs
// CAP_SYS_TIME (root outside a container that drops it); skipped otherwise, with the reason.
TEST(SubmitClock, NeverEarlyWhileTheKernelSlewsTheClock) {
  timex now{};
  if (adjtimex(&now) == -1) GTEST_SKIP() << "adjtimex cannot be read: " << std::strerror(errno);
  const long original = now.freq;
  FrequencyGuard restore(original);
  long early = 0, tasks = 0;
  for (long ppm : {500L, -500L}) {
    timex set{};
    set.modes = ADJ_FREQUENCY;
    set.freq = ppm << 16;  // scaled ppm: 16 fractional bits
    if (adjtimex(&set) == -1) {
      if (errno == EPERM)
        GTEST_SKIP() << "slewing the clock needs CAP_SYS_TIME (adjtimex ADJ_FREQUENCY: EPERM)";
      FAIL() << "adjtimex ADJ_FREQUENCY: " << std::strerror(errno);
    }
    timex check{};
    ASSERT_NE(adjtimex(&check), -1);
    ASSERT_EQ(check.freq, ppm << 16);
    Scheduler s(spinning());
    const std::int64_t until = steady_now_ns() + 300'000'000;
    std::uint64_t seed = 10;
    while (steady_now_ns() < until) {
      ++seed;
      Counts c = submit_and_count(s, 500, seed, /*paced=*/seed % 2 == 0);
      tasks += c.tasks;
      early += c.early;
    }
  }
  EXPECT_GT(tasks, 0);
  EXPECT_EQ(early, 0) << "of " << tasks << " tasks";
}

}  // namespace
