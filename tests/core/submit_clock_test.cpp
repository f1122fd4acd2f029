// submit_clock_test.cpp: a deadline computed at submission (schedule(f, delay), execute, submit,
// rearm(delay)) is read from the submission clock (core/src/tsc_clock.hpp), an upper bound of
// the steady clock at the call: no task starts before (the clock before the call) + delay, on
// the counter path, on the forced clock-read path, and while the kernel slews the clock.
#include <gtest/gtest.h>

#include <sys/timex.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include <kairos/detail/futex.hpp>
#include <kairos/detail/steady_clock.hpp>  // steady_now_ns, submit_now_ns
#include <kairos/kairos.hpp>

#include "support.hpp"
#include "tsc_clock.hpp"

namespace {

using namespace std::chrono_literals;
using kairos::detail::steady_now_ns;
using kairos_test::kPatience;
using kairos_test::Scheduler;

// Until the process's counter path answers (a rate needs 50 ms of baseline), where it may be used.
void warm_up() {
  auto& clock = kairos::detail::process_submit_clock();
  kairos::detail::submit_now_ns();
  const std::int64_t until = steady_now_ns() + 3'000'000'000;
  while (clock.mode() == clock.kTsc && !clock.calibrated() && steady_now_ns() < until) {
    kairos::detail::submit_now_ns();
    std::this_thread::sleep_for(200us);
  }
  if (kairos::detail::HardwareTicks::eligible()) {
    ASSERT_EQ(clock.mode(), clock.kTsc);
    ASSERT_TRUE(clock.calibrated());
  }
}

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
  warm_up();
  Scheduler s(spinning());
  Counts c = submit_and_count(s, 20'000, 1);
  EXPECT_EQ(c.early, 0) << "of " << c.tasks << " in a burst";
  c = submit_and_count(s, 1'000, 2, /*paced=*/true);
  EXPECT_EQ(c.early, 0) << "of " << c.tasks << " one at a time";
}

// submit_now_ns() against the clock around it, many calls: never below the clock before.
TEST(SubmitClock, SubmitNowIsNeverBelowTheClock) {
  warm_up();
  long early = 0, backwards = 0;
  std::int64_t last = INT64_MIN;
  for (int i = 0; i < 200'000; ++i) {
    const std::int64_t before = steady_now_ns();
    const std::int64_t v = kairos::detail::submit_now_ns();
    early += v < before;
    backwards += v < last;
    last = v;
  }
  EXPECT_EQ(early, 0);
  EXPECT_EQ(backwards, 0);
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
// with small delays are submitted: none starts early. Needs CAP_SYS_TIME (root outside a
// container that drops it); skipped otherwise, with the reason.
TEST(SubmitClock, NeverEarlyWhileTheKernelSlewsTheClock) {
  timex now{};
  if (adjtimex(&now) == -1) GTEST_SKIP() << "adjtimex cannot be read: " << std::strerror(errno);
  const long original = now.freq;
  FrequencyGuard restore(original);
  warm_up();
  long early = 0, tasks = 0, calls = 0, calls_early = 0;
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
      for (int i = 0; i < 10'000; ++i, ++calls) {
        const std::int64_t before = steady_now_ns();
        calls_early += kairos::detail::submit_now_ns() < before;
      }
    }
  }
  EXPECT_GT(tasks, 0);
  EXPECT_EQ(early, 0) << "of " << tasks << " tasks";
  EXPECT_EQ(calls_early, 0) << "of " << calls << " calls";
}

// The path a machine without an invariant TSC takes (forced through the test seam): the same.
// Last in this file: it turns the process's counter path off for good.
TEST(SubmitClock, ForcedClockReadsGiveTheSameGuarantees) {
  auto& clock = kairos::detail::process_submit_clock();
  clock.disable();
  const std::int64_t until = steady_now_ns() + 1'000'000'000;
  while (clock.mode() != clock.kClock && steady_now_ns() < until) kairos::detail::submit_now_ns();
  ASSERT_EQ(clock.mode(), clock.kClock);
  Scheduler s(spinning());
  Counts c = submit_and_count(s, 20'000, 3);
  EXPECT_EQ(c.early, 0) << "of " << c.tasks << " in a burst";
  c = submit_and_count(s, 1'000, 4, /*paced=*/true);
  EXPECT_EQ(c.early, 0) << "of " << c.tasks << " one at a time";
  std::int64_t before = steady_now_ns();
  EXPECT_GE(kairos::detail::submit_now_ns(), before);
}

}  // namespace
