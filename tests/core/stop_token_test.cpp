// stop_token_test.cpp: tasks of kairos that take a std::stop_token: cancel(true) requests
// stop on the running execution only; each execution has a fresh token.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <latch>
#include <stop_token>
#include <thread>

#include <kairos/kairos.hpp>

#include "support.hpp"

namespace {

using namespace std::chrono_literals;
using kairos_test::kPatience;
using kairos_test::Manual;
using kairos_test::single_thread;

// Spins until stop is requested or the real-time bound passes; true iff stop was seen.
bool spin_until_stopped(const std::stop_token& st) {
  auto until = std::chrono::steady_clock::now() + kPatience;
  while (!st.stop_requested()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::yield();
  }
  return true;
}

TEST(StopToken, CancelTrueRequestsStopOnTheRunningTask) {
  kairos_test::Scheduler s(single_thread());
  std::latch started(1);
  std::atomic<bool> saw_stop{false};
  std::atomic<bool> body_done{false};
  auto f = s.submit([&](std::stop_token st) {
    EXPECT_FALSE(st.stop_requested());
    started.count_down();
    saw_stop = spin_until_stopped(st);
    body_done = true;
    return 1;
  });
  started.wait();
  EXPECT_TRUE(f.cancel(true));
  EXPECT_TRUE(f.is_cancelled());
  EXPECT_THROW(f.get(), kairos::CancelledError);
  // The same thread then runs the next task with a fresh, unstopped token.
  auto next = s.submit([](std::stop_token st) { return st.stop_requested(); });
  EXPECT_FALSE(next.get());
  EXPECT_TRUE(body_done);
  EXPECT_TRUE(saw_stop);
}

TEST(StopToken, CancelTrueOnAPendingTaskJustCancels) {
  std::atomic<int> runs{0};
  Manual s;
  auto f = s.schedule([&](std::stop_token) { ++runs; }, 1ms);
  EXPECT_TRUE(f.cancel(true));
  s.step(1ms);
  EXPECT_EQ(runs, 0);
  EXPECT_THROW(f.get(), kairos::CancelledError);
}

// Each run of a periodic task gets its own token, never stopped by normal operation; cancel(true)
// during a run stops that run and ends the series.
TEST(StopToken, PeriodicRunsGetFreshTokens) {
  std::atomic<int> runs{0};
  std::atomic<int> stopped_at_start{0};
  std::latch third_started(1);
  std::atomic<bool> saw_stop{false};
  Manual s(kairos_test::threads(1, 2));
  auto f = s.schedule_at_fixed_rate(
      [&](std::stop_token st) {
        if (st.stop_requested()) ++stopped_at_start;
        if (++runs == 3) {
          third_started.count_down();
          saw_stop = spin_until_stopped(st);
        }
      },
      1ms, 1ms);
  s.clock.advance(3ms);
  third_started.wait();
  EXPECT_TRUE(f.cancel(true));
  ASSERT_TRUE(s.wait_idle(kPatience));
  EXPECT_TRUE(saw_stop);
  EXPECT_EQ(stopped_at_start, 0);
  s.step(10ms);
  EXPECT_EQ(runs, 3);
}

// cancel(true) on one running task does not touch another task running on another thread.
TEST(StopToken, StopIsPerExecution) {
  SKIP_IN_POLL_MODE("two tasks running at once need two threads");
  kairos_test::Scheduler s(kairos_test::threads(1, 2));
  std::latch both_started(2);
  std::atomic<bool> release{false};
  std::atomic<bool> a_stopped{false}, b_stopped{false};
  auto a = s.submit([&](std::stop_token st) {
    both_started.count_down();
    a_stopped = spin_until_stopped(st);
  });
  auto b = s.submit([&](std::stop_token st) {
    both_started.count_down();
    while (!release) std::this_thread::yield();
    b_stopped = st.stop_requested();
  });
  both_started.wait();
  EXPECT_TRUE(a.cancel(true));
  ASSERT_TRUE(kairos_test::eventually([&] { return a_stopped.load(); }));
  release = true;
  ASSERT_EQ(b.wait_for(kPatience), std::future_status::ready);
  b.get();
  EXPECT_FALSE(b_stopped);
}

// A task taking a stop token may also return a value.
TEST(StopToken, StoppableTaskReturnsItsValue) {
  kairos_test::Scheduler s(single_thread());
  auto f = s.schedule([](std::stop_token st) { return st.stop_possible() ? 11 : 12; }, 1ms);
  EXPECT_EQ(f.get(), 11);
}

}  // namespace
