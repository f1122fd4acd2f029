// poll_wake_test.cpp: waking the owner's loop in poll mode (BasicScheduler::wake_fd(),
// Options::on_wake, next_deadline() arming; docs/poll-mode.md). A loop thread blocks in
// epoll_wait or poll(2) with a long timeout; another thread's submission earlier than the
// loop's deadline wakes it, a later one does not (counted by stats().total().loop_wakes). The
// interleavings of a submission with the arming itself: tests/engine/loop_wake_test.cpp.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <thread>

#include <kairos/kairos.hpp>

namespace {

using namespace std::chrono_literals;
using Polled = kairos::BasicScheduler<kairos::ManualClock>;

kairos::Options polled() {
  kairos::Options o;
  o.poll_mode = true;
  return o;
}

bool readable(int fd, int timeout_ms = 0) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, timeout_ms) == 1 && (p.revents & POLLIN);
}

std::uint64_t wakes(const Polled& s) { return s.stats().total().loop_wakes; }

TEST(PollWake, AnEarlierSubmissionFromAnotherThreadWakesALoopInEpollWait) {
  kairos::ManualClock clock;
  Polled s(polled(), clock);
  s.schedule([] {}, 1h);
  int ep = ::epoll_create1(EPOLL_CLOEXEC);
  ASSERT_GE(ep, 0);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ASSERT_EQ(::epoll_ctl(ep, EPOLL_CTL_ADD, s.wake_fd(), &ev), 0);
  ASSERT_EQ(s.next_deadline(), kairos::ManualClock::time_point(1h));  // arms the wake-up
  std::thread other([&] { s.schedule([] {}, 1ms); });
  epoll_event out{};
  auto t0 = std::chrono::steady_clock::now();
  int n = ::epoll_wait(ep, &out, 1, 30'000);  // the loop's sleep: far longer than the test
  auto slept = std::chrono::steady_clock::now() - t0;
  other.join();
  ::close(ep);
  EXPECT_EQ(n, 1) << "the loop was not woken";
  EXPECT_LT(slept, 20s);
  EXPECT_EQ(wakes(s), 1u);
  EXPECT_EQ(s.next_deadline(), kairos::ManualClock::time_point(1ms));  // reads the fd back to 0
  EXPECT_FALSE(readable(s.wake_fd()));
}

TEST(PollWake, ALaterSubmissionDoesNotWakeAndOnlyTheFirstEarlierOneDoes) {
  kairos::ManualClock clock;
  Polled s(polled(), clock);
  s.schedule([] {}, 10ms);
  ASSERT_TRUE(s.next_deadline().has_value());
  std::thread([&] {
    for (int i = 0; i < 100; ++i) s.schedule([] {}, 1h);  // later than the loop's deadline
  }).join();
  EXPECT_FALSE(readable(s.wake_fd()));
  EXPECT_EQ(wakes(s), 0u);
  std::thread([&] {
    for (int i = 0; i < 100; ++i) s.schedule([] {}, 1ms);  // earlier: one wake for all of them
  }).join();
  EXPECT_TRUE(readable(s.wake_fd()));
  EXPECT_EQ(wakes(s), 1u);
  (void)s.poll();  // the loop is awake: nothing wakes it again until it asks next_deadline()
  std::thread([&] { s.schedule([] {}, 0ms); }).join();
  EXPECT_EQ(wakes(s), 1u);
}

TEST(PollWake, AReArmToEarlierWakesTheLoopAndToLaterDoesNot) {
  kairos::ManualClock clock;
  Polled s(polled(), clock);
  auto r = s.schedule_rearmable([] {}, 1h);
  (void)s.poll();
  ASSERT_EQ(s.next_deadline(), kairos::ManualClock::time_point(1h));
  std::thread([&] { r.rearm(2h); }).join();
  EXPECT_EQ(wakes(s), 0u);
  std::thread([&] { r.rearm(5ms); }).join();
  EXPECT_EQ(wakes(s), 1u);
  EXPECT_TRUE(readable(s.wake_fd()));
}

TEST(PollWake, ALoopWithNothingPendingIsWokenByAnyTask) {
  kairos::Scheduler s(polled());
  ASSERT_FALSE(s.next_deadline().has_value());
  std::thread other([&] { s.schedule([] {}, 1h); });
  EXPECT_TRUE(readable(s.wake_fd(), 30'000));
  other.join();
  EXPECT_EQ(s.stats().total().loop_wakes, 1u);
}

TEST(PollWake, TheCallbackRunsOnTheWakingThreadOncePerArm) {
  std::atomic<int> calls{0};
  std::atomic<bool> on_submitter{false};
  std::thread::id submitter;
  kairos::Options o = polled();
  o.on_wake = [&] {
    calls.fetch_add(1);
    on_submitter = std::this_thread::get_id() == submitter;
  };
  kairos::ManualClock clock;
  Polled s(o, clock);
  s.schedule([] {}, 1h);
  (void)s.next_deadline();
  std::thread other([&] {
    for (int i = 0; i < 10; ++i) s.schedule([] {}, 1ms);
  });
  other.join();
  EXPECT_EQ(calls.load(), 1);
  (void)s.next_deadline();
  std::thread([&] {
    submitter = std::this_thread::get_id();
    s.schedule([] {}, 0ms);
  }).join();
  EXPECT_EQ(calls.load(), 2);
  EXPECT_TRUE(on_submitter.load());
}

TEST(PollWake, ShutdownWakesTheLoopSoThatItRetires) {
  int calls = 0;
  kairos::Options o = polled();
  o.on_wake = [&] { ++calls; };
  kairos::Scheduler s(o);
  (void)s.next_deadline();
  s.shutdown();
  EXPECT_TRUE(readable(s.wake_fd()));
  EXPECT_EQ(calls, 1);
  s.shutdown();  // once
  EXPECT_EQ(calls, 1);
}

TEST(PollWake, OnASchedulerWithThreadsWakeFdIsALogicError) {
  kairos::Scheduler s;
  EXPECT_THROW((void)s.wake_fd(), std::logic_error);
}

}  // namespace
