// poll_wake_test.cpp: waking the owner's loop in poll mode (BasicScheduler::wake_fd(),
// Options::on_wake, next_deadline() arming; docs/poll-mode.md). A loop thread blocks in
// epoll_wait or poll(2) with a long timeout; another thread's submission earlier than the
// loop's deadline wakes it, a later one does not (counted by stats().total().loop_wakes). The
// interleavings of a submission with the arming itself: tests/engine/loop_wake_test.cpp.
// Also: Options::on_wake runs with nothing of kairos held (every call from inside it returns,
// after a wake by a submission, a re-arm, shutdown or shutdown_now, and it may destroy the
// scheduler); a loop is woken once per wake, never spinning on a readable fd, even when the
// waking thread is preempted in the middle of its wake; a wake read back by next_deadline() is
// never lost (next_deadline() after shutdown_now() reports the retirement as due).
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <stdexcept>
#include <thread>
#include <vector>

#include "support.hpp"

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

// ---- Options::on_wake holds nothing of kairos ------------------------------------------------
// Runs `f` on a thread of its own and waits for it to return; a call that never returns (a
// deadlock on kairos itself) ends the process with a message rather than hanging the suite.
template <class F>
void returns_within(std::chrono::seconds limit, const char* what, F&& f) {
  auto done = std::make_shared<std::atomic<bool>>(false);
  std::thread worker([done, &f] {
    f();
    done->store(true);
  });
  const auto until = std::chrono::steady_clock::now() + limit;
  while (!done->load() && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(1ms);
  if (!done->load()) {
    std::fprintf(stderr, "FAILED: %s did not return within %llds: a deadlock\n", what,
                 static_cast<long long>(limit.count()));
    std::fflush(stderr);
    std::_Exit(1);
  }
  worker.join();
}

// What on_wake calls on the scheduler that woke it.
enum class Inside { next_deadline, poll, shutdown, shutdown_now, cancel_the_task, destroy };
constexpr Inside kEveryCall[] = {Inside::next_deadline, Inside::poll,           Inside::shutdown,
                                 Inside::shutdown_now,  Inside::cancel_the_task, Inside::destroy};
const char* name(Inside c) {
  switch (c) {
    case Inside::next_deadline: return "next_deadline()";
    case Inside::poll: return "poll()";
    case Inside::shutdown: return "shutdown()";
    case Inside::shutdown_now: return "shutdown_now()";
    case Inside::cancel_the_task: return "cancel() of the task that woke it";
    case Inside::destroy: return "the scheduler's destructor";
  }
  return "?";
}

// How the loop is woken: a re-arm (rearm or rearm_at) of a re-armable task to earlier than the
// loop's deadline, or a submission earlier than it.
enum class WokenBy { rearm, rearm_at, submission };

// Poll mode: a task pending at +1 h, a re-armable one at +2 h; the loop asked next_deadline()
// (armed at +1 h); another thread wakes it to +1 ms and on_wake, on that thread, makes `call`.
void wake_then_call(WokenBy by, Inside call) {
  SCOPED_TRACE(name(call));
  kairos::ManualClock clock;
  std::unique_ptr<Polled> s;
  kairos::ScheduledFuture<void> target;  // what cancel() cancels: the re-armed task, or the
                                         // pending one when a submission woke the loop
  std::atomic<int> callbacks{0};
  std::atomic<bool> inside_returned{false};
  kairos::Options o = polled();
  o.on_wake = [&] {
    if (callbacks.fetch_add(1) != 0) return;  // the first wake only (shutdown's own wakes too)
    switch (call) {
      case Inside::next_deadline: (void)s->next_deadline(); break;
      case Inside::poll: (void)s->poll(); break;
      case Inside::shutdown: s->shutdown(); break;
      case Inside::shutdown_now: (void)s->shutdown_now(); break;
      case Inside::cancel_the_task: (void)target.cancel(); break;
      case Inside::destroy: s.reset(); break;
    }
    inside_returned = true;
  };
  s = std::make_unique<Polled>(o, clock);
  auto pending = s->schedule([] {}, 1h);
  auto rearmable = s->schedule_rearmable([] {}, 2h);
  ASSERT_EQ(s->next_deadline(), kairos::ManualClock::time_point(1h));  // arms at +1 h
  target = by == WokenBy::submission ? pending : rearmable;
  kairos::ScheduledFuture<void> submitted;
  returns_within(60s, name(call), [&] {
    switch (by) {
      case WokenBy::rearm: EXPECT_TRUE(rearmable.rearm(1ms)); break;
      case WokenBy::rearm_at: EXPECT_TRUE(rearmable.rearm_at(clock.now() + 1ms)); break;
      case WokenBy::submission: submitted = s->schedule([] {}, 1ms); break;
    }
  });
  EXPECT_GE(callbacks.load(), 1);  // a shutdown inside wakes the loop (and calls back) again
  EXPECT_TRUE(inside_returned.load());
  switch (call) {
    case Inside::next_deadline:  // it saw the wake's deadline
    case Inside::poll:
      ASSERT_TRUE(s);
      EXPECT_EQ(s->next_deadline(), kairos::ManualClock::time_point(1ms));
      break;
    case Inside::shutdown:
    case Inside::shutdown_now: EXPECT_TRUE(s && s->is_shutdown()); break;
    case Inside::cancel_the_task: EXPECT_TRUE(target.is_cancelled()); break;
    case Inside::destroy:
      EXPECT_FALSE(s);
      EXPECT_TRUE(pending.is_cancelled());
      EXPECT_TRUE(rearmable.is_cancelled());
      if (by == WokenBy::submission) {
        EXPECT_TRUE(submitted.is_cancelled());
      }
      break;
  }
}

TEST(PollWake, OnWakeAfterAReArmMayMakeAnyCallAndDestroyTheScheduler) {
  for (Inside call : kEveryCall) wake_then_call(WokenBy::rearm, call);
}

TEST(PollWake, OnWakeAfterARearmAtMayMakeAnyCallAndDestroyTheScheduler) {
  for (Inside call : kEveryCall) wake_then_call(WokenBy::rearm_at, call);
}

TEST(PollWake, OnWakeAfterASubmissionMayMakeAnyCallAndDestroyTheScheduler) {
  for (Inside call : kEveryCall) wake_then_call(WokenBy::submission, call);
}

// shutdown() and shutdown_now() wake the loop too; an on_wake that destroys the scheduler then
// must not pull the engine from under the call that woke it (ASan: use after free).
TEST(PollWake, OnWakeMayDestroyTheSchedulerDuringShutdownAndShutdownNow) {
  for (bool now : {false, true}) {
    std::unique_ptr<kairos::Scheduler> s;
    std::atomic<int> callbacks{0};
    kairos::Options o = polled();
    o.on_wake = [&] {
      callbacks.fetch_add(1);
      s.reset();
    };
    s = std::make_unique<kairos::Scheduler>(o);
    auto pending = s->schedule([] {}, 1h);
    (void)s->next_deadline();
    std::vector<kairos::Task> taken;
    if (now) taken = s->shutdown_now();
    else s->shutdown();
    EXPECT_FALSE(s);
    EXPECT_GE(callbacks.load(), 1);  // the destructor's shutdown_now() wakes (and calls back) too
    EXPECT_EQ(taken.size(), now ? 1u : 0u);
    taken.clear();  // a dropped Task completes as cancelled
    EXPECT_TRUE(pending.is_cancelled());
  }
}

// ---- a wake is read back once, and never lost --------------------------------------------------
// shutdown_now() on another thread while the loop sleeps: its wake, read back by next_deadline(),
// comes with the answer "due now" (the shard must retire), so the loop polls, never sleeps for
// ever with the wake consumed (close() on the loop thread once waited there for good).
TEST(PollWake, NextDeadlineAfterShutdownNowReportsTheRetirementAsDue) {
  kairos::Scheduler s(kairos::Options{.shards = 2, .poll_mode = true});
  for (int i = 0; i < 20; ++i) s.schedule([] {}, std::chrono::hours(1 + i));
  ASSERT_TRUE(s.next_deadline());
  std::thread([&] { (void)s.shutdown_now(); }).join();
  EXPECT_TRUE(readable(s.wake_fd()));
  std::optional<kairos::SteadyClock::time_point> d = s.next_deadline();  // reads the wake back
  ASSERT_TRUE(d) << "the loop would sleep for ever";
  EXPECT_LE(*d, kairos::SteadyClock::now());
  EXPECT_FALSE(readable(s.wake_fd()));
  (void)s.poll();
  EXPECT_TRUE(s.is_terminated());
}

TEST(PollWake, NextDeadlineAfterAShutdownWithNothingLeftReportsTheRetirementAsDue) {
  kairos::Scheduler s(kairos::Options{.poll_mode = true});
  auto f = s.schedule([] {}, 1h);
  ASSERT_TRUE(s.next_deadline());
  s.set_execute_existing_delayed_tasks_after_shutdown(false);
  std::thread([&] { s.shutdown(); }).join();
  std::optional<kairos::SteadyClock::time_point> d = s.next_deadline();
  ASSERT_TRUE(d);
  EXPECT_LE(*d, kairos::SteadyClock::now());
  (void)s.poll();
  EXPECT_TRUE(s.is_terminated());
  EXPECT_TRUE(f.is_cancelled());
}

// close() on the loop's own thread (it drives the loop until terminated) while another thread
// calls shutdown_now() at a random moment: close() always returns.
TEST(PollWake, CloseOnTheLoopThreadRacingShutdownNowReturns) {
  const auto until = std::chrono::steady_clock::now() + kairos_test::stress_budget(1.0);
  std::mt19937_64 rng(kairos_test::stress_seed());
  int rounds = 0;
  for (; rounds < 20 || std::chrono::steady_clock::now() < until; ++rounds) {
    returns_within(60s, "close() racing shutdown_now()", [&] {
      kairos::Scheduler s(kairos::Options{.shards = 2, .poll_mode = true});
      for (int i = 0; i < 200; ++i) s.schedule([] {}, std::chrono::microseconds(rng() % 4000));
      (void)s.poll();
      const auto pause = std::chrono::microseconds(rng() % 3000);
      std::thread other([&] {
        std::this_thread::sleep_for(pause);
        (void)s.shutdown_now();
      });
      s.close();
      other.join();
      EXPECT_TRUE(s.is_terminated());
    });
  }
  std::printf("%d rounds\n", rounds);
}

// A loop is woken once per wake. The waking thread runs at SCHED_IDLE on the loop's own CPU, so
// the loop preempts it the moment the fd becomes readable, in the middle of its wake (between
// its write and whatever it does after): the fd must then already be one that next_deadline()
// reads back, or the loop comes round again and again (it once did thousands of times per
// wake, with the submitter's schedule() taking up to 182 ms to return).
TEST(PollWake, ALoopIsWokenOncePerWakeEvenWhenTheWakerIsPreemptedMidWake) {
  const int cpu = ::sched_getcpu();
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  cpu_set_t before;
  ASSERT_EQ(::pthread_getaffinity_np(::pthread_self(), sizeof before, &before), 0);
  if (cpu < 0 || ::pthread_setaffinity_np(::pthread_self(), sizeof one, &one) != 0)
    GTEST_SKIP() << "cannot pin the loop to one CPU here";
  kairos::Scheduler s(kairos::Options{.poll_mode = true});
  auto far = s.schedule([] {}, 1h);
  constexpr int kWakes = 20;
  std::atomic<int> ran{0};
  std::atomic<bool> idle_ok{true};
  std::thread waker([&] {
    sched_param none{};
    if (::pthread_setaffinity_np(::pthread_self(), sizeof one, &one) != 0 ||
        ::pthread_setschedparam(::pthread_self(), SCHED_IDLE, &none) != 0) {
      idle_ok = false;
      return;
    }
    for (int i = 0; i < kWakes; ++i) {
      // Runs only while the loop sleeps (SCHED_IDLE on its CPU): the loop armed already.
      const int target = i + 1;
      s.schedule([&ran] { ran.fetch_add(1); }, 0ms);
      const auto until = std::chrono::steady_clock::now() + 30s;
      while (ran.load() < target && std::chrono::steady_clock::now() < until) std::this_thread::yield();
    }
  });
  int ep = ::epoll_create1(EPOLL_CLOEXEC);
  ASSERT_GE(ep, 0);
  epoll_event ev{};
  ev.events = EPOLLIN;  // level-triggered, as the docs' loop
  ASSERT_EQ(::epoll_ctl(ep, EPOLL_CTL_ADD, s.wake_fd(), &ev), 0);
  int iterations = 0;
  const auto until = std::chrono::steady_clock::now() + 60s;
  while (ran.load() < kWakes && idle_ok.load() && std::chrono::steady_clock::now() < until) {
    std::optional<kairos::SteadyClock::time_point> d = s.next_deadline();  // arms, reads the wake back
    int timeout_ms = 1000;
    if (d && *d <= kairos::SteadyClock::now()) timeout_ms = 0;
    epoll_event out{};
    if (::epoll_wait(ep, &out, 1, timeout_ms) == 1) ++iterations;
    (void)s.poll();
  }
  waker.join();
  ::close(ep);
  (void)::pthread_setaffinity_np(::pthread_self(), sizeof before, &before);
  if (!idle_ok.load()) GTEST_SKIP() << "cannot run a thread at SCHED_IDLE on the loop's CPU here";
  ASSERT_EQ(ran.load(), kWakes);
  std::printf("%d loop iterations woken by the fd for %d wakes\n", iterations, kWakes);
  EXPECT_LE(iterations, 2 * kWakes) << "the loop came round on a readable fd nobody read back";
}

}  // namespace
