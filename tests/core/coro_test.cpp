// coro_test.cpp: kairos/coro.hpp, co_await on sleeps and futures from coroutines of the test's
// own types (kairos imposes none): where and when a sleeping coroutine resumes (a scheduler
// thread or the polling loop, never early, FIFO), awaited futures (value, exception,
// cancelled), cancellation by a stop token (also racing the deadline), and what shutdown(),
// shutdown_now() and the destructor do to suspended coroutines (resumed once with
// CancelledError, every frame ends: RAII counted, no leak under ASan). No allocation per sleep.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <coroutine>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <new>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include <kairos/coro.hpp>
#include <kairos/kairos.hpp>

#include "detached.hpp"
#include "support.hpp"

// Counts every operator new of the process (the no-allocation test reads it around its sleeps).
// The whole unaligned family is replaced, so that no pair mixes ours with the runtime's (ASan).
// noinline: g++ otherwise sees free() inlined where a frame's operator new was called and warns.
namespace {
std::atomic<long> g_news{0};
[[gnu::noinline]] void* counted_malloc(std::size_t n) noexcept {
  g_news.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(n ? n : 1);
}
}  // namespace
[[gnu::noinline]] void* operator new(std::size_t n) {
  if (void* p = counted_malloc(n)) return p;
  throw std::bad_alloc();
}
[[gnu::noinline]] void* operator new[](std::size_t n) {
  if (void* p = counted_malloc(n)) return p;
  throw std::bad_alloc();
}
[[gnu::noinline]] void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return counted_malloc(n); }
[[gnu::noinline]] void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return counted_malloc(n); }
[[gnu::noinline]] void operator delete(void* p) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete[](void* p) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete(void* p, std::size_t) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }

namespace {

using namespace std::chrono_literals;
using kairos::CancelledError;
using kairos::ManualClock;
using kairos_test::eventually;
using kairos_test::kPatience;
using kairos_test::Manual;
using kairos_test::ManualScheduler;
using kairos_test::Recorder;
using Polled = kairos::BasicScheduler<ManualClock>;  // never the suite's polling wrapper

using kairos_test::Detached;  // the smallest coroutine type (tests/support/detached.hpp)

// A coroutine type that owns its frame (like a lazy task): destroying it destroys the frame,
// also while it is suspended.
struct Owned {
  struct promise_type {
    Owned get_return_object() noexcept { return Owned{std::coroutine_handle<promise_type>::from_promise(*this)}; }
    std::suspend_never initial_suspend() noexcept { return {}; }
    std::suspend_always final_suspend() noexcept { return {}; }
    void return_void() noexcept {}
    void unhandled_exception() noexcept { std::terminate(); }
  };
  explicit Owned(std::coroutine_handle<promise_type> h) noexcept : h_(h) {}
  Owned(Owned&& o) noexcept : h_(std::exchange(o.h_, {})) {}
  ~Owned() {
    if (h_) h_.destroy();
  }
  bool done() const { return h_.done(); }
  std::coroutine_handle<promise_type> h_;
};

// An RAII object living in a frame: counts the frames alive.
struct Alive {
  explicit Alive(std::atomic<int>& n) : n_(n) { n_.fetch_add(1); }
  ~Alive() { n_.fetch_sub(1); }
  std::atomic<int>& n_;
};

// What one sleeping coroutine saw.
struct Outcome {
  std::atomic<int> resumed{0};  // times the code after co_await ran
  std::atomic<bool> cancelled{false};
  std::atomic<bool> other_error{false};
  std::atomic<std::int64_t> at_ns{-1};  // the clock when it resumed
  std::thread::id on;
};

template <class Clock>
Detached sleep_once(kairos::BasicScheduler<Clock>& s, kairos::Duration d, Outcome& out, std::atomic<int>& frames,
                    std::stop_token token = {}) {
  Alive alive(frames);
  try {
    co_await kairos::sleep_for(s, d, token);
  } catch (const CancelledError&) {
    out.cancelled.store(true);
  } catch (...) {
    out.other_error.store(true);
  }
  out.on = std::this_thread::get_id();
  out.at_ns.store(s.now().time_since_epoch().count());
  out.resumed.fetch_add(1);
}

Detached sleep_until_then_record(ManualScheduler& s, ManualClock::time_point t, Recorder& order, int id) {
  co_await kairos::sleep_until(s, t);
  order.add(id);
}

TEST(CoroSleep, ResumesOnASchedulerThreadAtTheDeadlineNeverBefore) {
  Manual s;
  Outcome out;
  std::atomic<int> frames{0};
  sleep_once(s, 10ms, out, frames);
  EXPECT_EQ(frames.load(), 1);
  s.step(9ms);
  EXPECT_EQ(out.resumed.load(), 0);  // 1 ms early: still asleep
  s.clock.advance(1ms);
  ASSERT_TRUE(eventually([&] { return out.resumed.load() == 1; }));
  EXPECT_EQ(out.at_ns.load(), std::chrono::nanoseconds(10ms).count());
  EXPECT_FALSE(out.cancelled.load());
  EXPECT_NE(out.on, std::this_thread::get_id());  // a scheduler thread (or the suite's loop)
  ASSERT_TRUE(eventually([&] { return frames.load() == 0; }));
}

TEST(CoroSleep, EqualDeadlinesResumeInTheOrderTheSleepsBegan) {
  Manual s;
  Recorder order;
  auto t = s.clock.now() + 5ms;
  for (int id = 0; id < 50; ++id) sleep_until_then_record(s, t, order, id);
  s.step(4ms);
  EXPECT_EQ(order.size(), 0u);
  s.clock.advance(1ms);
  ASSERT_TRUE(eventually([&] { return order.size() == 50; }));
  std::vector<int> expected;
  for (int id = 0; id < 50; ++id) expected.push_back(id);
  EXPECT_EQ(order.ids(), expected);
}

TEST(CoroSleep, EarlierDeadlinesResumeFirst) {
  Manual s;
  Recorder order;
  for (int id : {3, 1, 2}) sleep_until_then_record(s, s.clock.now() + id * 1ms, order, id);
  s.clock.advance(3ms);
  ASSERT_TRUE(eventually([&] { return order.size() == 3; }));
  EXPECT_EQ(order.ids(), (std::vector<int>{1, 2, 3}));
}

TEST(CoroSleep, InPollModeResumesOnTheLoopThread) {
  ManualClock clock;
  kairos::Options o;
  o.poll_mode = true;
  Polled s(o, clock);
  Outcome out;
  std::atomic<int> frames{0};
  sleep_once(s, 2ms, out, frames);
  std::thread loop([&] {
    clock.advance(2ms);
    EXPECT_EQ(s.poll(), 1u);
  });
  std::thread::id loop_id = loop.get_id();
  loop.join();
  EXPECT_EQ(out.resumed.load(), 1);
  EXPECT_EQ(out.on, loop_id);
  EXPECT_EQ(frames.load(), 0);
}

TEST(CoroSleep, EachSleepCostsOnlyItsPooledTaskNode) {
  ManualClock clock;
  kairos::Options o;
  o.poll_mode = true;  // everything on this thread: nothing else allocates meanwhile
  Polled s(o, clock);
  std::atomic<int> frames{0};
  std::vector<Outcome> outs(2000);
  auto round = [&](std::size_t from, std::size_t to) {
    for (std::size_t i = from; i < to; ++i) sleep_once(s, 1ms, outs[i], frames);
    clock.advance(1ms);
    s.poll();
  };
  round(0, 1000);  // warms the pool and the inbox
  ASSERT_EQ(frames.load(), 0);
  // The frames themselves are allocated by the coroutine calls: count the sleeps apart from them.
  // Two rounds: the first lets the engine size its own per-poll bookkeeping for 1000 tasks.
  auto sleeper = [&](Outcome& out) -> Owned {
    co_await kairos::sleep_for(s, 1ms);
    out.resumed.fetch_add(1);
  };
  for (int pass = 0; pass < 2; ++pass) {
    std::vector<Owned> held;
    held.reserve(1000);
    std::vector<Outcome> more(1000);
    long before_frames = g_news.load();
    for (auto& out : more) held.push_back(sleeper(out));  // frames + each sleep's submission
    EXPECT_EQ(g_news.load() - before_frames, 1000);  // one per frame: the sleeps took nothing
    long before = g_news.load();
    clock.advance(1ms);
    EXPECT_EQ(s.poll(), 1000u);
    if (pass == 1) {
      EXPECT_EQ(g_news.load() - before, 0);  // resuming allocates nothing either
    }
    for (auto& out : more) EXPECT_EQ(out.resumed.load(), 1);
  }
}

TEST(CoroSleep, AStopRequestedBeforeTheSleepThrowsAtOnce) {
  Manual s;
  std::stop_source stop;
  stop.request_stop();
  Outcome out;
  std::atomic<int> frames{0};
  sleep_once(s, 1h, out, frames, stop.get_token());
  EXPECT_EQ(out.resumed.load(), 1);
  EXPECT_TRUE(out.cancelled.load());
  EXPECT_EQ(out.on, std::this_thread::get_id());
  EXPECT_EQ(s.queue_size(), 0u);  // no task was made
}

TEST(CoroSleep, AStopCancelsTheSleepAndResumesOnTheStoppingThread) {
  Manual s;
  std::stop_source stop;
  Outcome out;
  std::atomic<int> frames{0};
  sleep_once(s, 1h, out, frames, stop.get_token());
  EXPECT_EQ(out.resumed.load(), 0);
  std::thread stopper([&] { stop.request_stop(); });
  std::thread::id stopper_id = stopper.get_id();
  stopper.join();
  EXPECT_EQ(out.resumed.load(), 1);
  EXPECT_TRUE(out.cancelled.load());
  EXPECT_EQ(out.on, stopper_id);
  EXPECT_EQ(frames.load(), 0);
  s.clock.advance(2h);  // the cancelled task never runs: nothing resumes twice
  ASSERT_TRUE(s.wait_idle(kPatience));
  EXPECT_EQ(out.resumed.load(), 1);
}

TEST(CoroSleep, AStopAfterTheDeadlineHasNoEffect) {
  Manual s;
  std::stop_source stop;
  Outcome out;
  std::atomic<int> frames{0};
  sleep_once(s, 1ms, out, frames, stop.get_token());
  s.clock.advance(1ms);
  ASSERT_TRUE(eventually([&] { return out.resumed.load() == 1; }));
  stop.request_stop();
  EXPECT_FALSE(out.cancelled.load());
  EXPECT_EQ(out.resumed.load(), 1);
}

// The deadline and the stop race on a real clock: each coroutine is resumed exactly once, by
// one side or the other, and every frame ends.
TEST(CoroSleep, AStopRacingTheDeadlineResumesExactlyOnce) {
  kairos_test::Scheduler s(kairos_test::threads(1, 2));
  constexpr int kRounds = 2000;
  std::vector<Outcome> outs(kRounds);
  std::vector<std::stop_source> stops(kRounds);
  std::atomic<int> frames{0};
  for (int i = 0; i < kRounds; ++i) {
    sleep_once(s, std::chrono::microseconds(i % 50), outs[i], frames, stops[i].get_token());
    if (i % 3 != 0) std::this_thread::sleep_for(std::chrono::microseconds(i % 40));
    stops[i].request_stop();
  }
  ASSERT_TRUE(eventually([&] { return frames.load() == 0; }));
  int cancelled = 0;
  for (auto& o : outs) {
    EXPECT_EQ(o.resumed.load(), 1);
    EXPECT_FALSE(o.other_error.load());
    cancelled += o.cancelled.load();
  }
  ASSERT_TRUE(s.wait_idle(kPatience));
  for (auto& o : outs) EXPECT_EQ(o.resumed.load(), 1);  // nothing resumed twice, later either
  std::printf("stop won %d of %d races\n", cancelled, kRounds);
}

// A stop that wins (the sleep ends in CancelledError) resumes the coroutine on the stopping
// thread, inside request_stop(), every time; one that loses leaves the sleep to end normally on
// the scheduler's thread. Driven thousands of times at the deadline, so that the stop lands
// between the runner's start of the task and its run (where it once resumed the coroutine with
// CancelledError on the runner, after request_stop() had returned).
TEST(CoroSleep, AStopThatWinsResumesOnTheStoppingThreadInsideRequestStop) {
  kairos_test::Scheduler s(kairos_test::threads(1, 1));
  const auto budget = kairos_test::stress_budget(1.0);
  const auto until = std::chrono::steady_clock::now() + budget;
  const std::thread::id me = std::this_thread::get_id();
  constexpr int kMaxRounds = 20'000;
  std::vector<Outcome> outs(kMaxRounds);
  std::vector<int> resumed_by_return(kMaxRounds, 0);
  std::atomic<int> frames{0};
  int rounds = 0;
  for (; rounds < kMaxRounds && (rounds < 2'000 || std::chrono::steady_clock::now() < until); ++rounds) {
    std::stop_source stop;
    const auto delay = std::chrono::microseconds(rounds % 20);
    const auto due = std::chrono::steady_clock::now() + delay;
    sleep_once(s, delay, outs[rounds], frames, stop.get_token());
    while (std::chrono::steady_clock::now() < due) {  // stop at about the deadline
    }
    stop.request_stop();
    resumed_by_return[rounds] = outs[rounds].resumed.load();
  }
  ASSERT_TRUE(eventually([&] { return frames.load() == 0; }));
  int won = 0;
  for (int i = 0; i < rounds; ++i) {
    ASSERT_EQ(outs[i].resumed.load(), 1) << "round " << i;
    if (!outs[i].cancelled.load()) continue;
    ++won;
    EXPECT_EQ(outs[i].on, me) << "round " << i << ": a winning stop resumed the sleep on another thread";
    EXPECT_EQ(resumed_by_return[i], 1) << "round " << i << ": resumed after request_stop() returned";
  }
  std::printf("stop won %d of %d races at the deadline\n", won, rounds);
}

// The idle-timeout pattern of docs/coroutines.md: one re-armable task awaited once, pushed later
// by every message; the coroutine resumes only after a whole idle period without one, and the
// re-arms never wake it.
Detached await_idle(kairos::ScheduledFuture<void> idle, Outcome& out, std::atomic<int>& frames) {
  Alive alive(frames);
  try {
    co_await idle;
  } catch (const CancelledError&) {
    out.cancelled.store(true);
  } catch (...) {
    out.other_error.store(true);
  }
  out.on = std::this_thread::get_id();
  out.resumed.fetch_add(1);
}

TEST(CoroFuture, TheIdleTimeoutPatternResumesOnlyAfterAQuietPeriod) {
  Manual s;
  Outcome out;
  std::atomic<int> frames{0};
  auto idle = s.schedule_rearmable([] {}, 30s);
  await_idle(idle, out, frames);
  for (int message = 0; message < 100; ++message) {  // a message every 20 s: never idle for 30
    s.clock.advance(20s);
    ASSERT_TRUE(idle.rearm(30s));
    ASSERT_TRUE(s.wait_idle(kPatience));
    ASSERT_EQ(out.resumed.load(), 0) << "resumed after message " << message;
  }
  s.clock.advance(29s);
  ASSERT_TRUE(s.wait_idle(kPatience));
  EXPECT_EQ(out.resumed.load(), 0);
  s.clock.advance(1s);  // 30 s without a message
  ASSERT_TRUE(eventually([&] { return out.resumed.load() == 1; }));
  EXPECT_FALSE(out.cancelled.load());
  EXPECT_EQ(frames.load(), 0);
}

// ---- shutdown, shutdown_now, destructor -----------------------------------------------------

TEST(CoroSleep, ShutdownLetsSleepsEndAtTheirDeadlinesByDefault) {
  ManualClock clock;
  Polled s(kairos_test::single_thread(), clock);
  Outcome out;
  std::atomic<int> frames{0};
  sleep_once(s, 5ms, out, frames);
  s.shutdown();
  EXPECT_EQ(out.resumed.load(), 0);
  clock.advance(5ms);
  ASSERT_TRUE(s.await_termination(kPatience));
  EXPECT_EQ(out.resumed.load(), 1);
  EXPECT_FALSE(out.cancelled.load());
  EXPECT_EQ(frames.load(), 0);
}

TEST(CoroSleep, ShutdownThatDropsDelayedTasksResumesSleepsWithCancelledError) {
  ManualClock clock;
  Polled s(kairos_test::single_thread(), clock);
  s.set_execute_existing_delayed_tasks_after_shutdown(false);
  std::vector<Outcome> outs(10);
  std::atomic<int> frames{0};
  for (auto& o : outs) sleep_once(s, 5ms, o, frames);
  ASSERT_TRUE(s.wait_idle(kPatience));  // queued: shutdown's policy drops them from the queue
  EXPECT_EQ(frames.load(), 10);
  s.shutdown();
  for (auto& o : outs) {
    EXPECT_EQ(o.resumed.load(), 1);  // before shutdown() returned, on this thread
    EXPECT_TRUE(o.cancelled.load());
    EXPECT_EQ(o.on, std::this_thread::get_id());
  }
  EXPECT_EQ(frames.load(), 0);
}

TEST(CoroSleep, ShutdownNowResumesSleepsWithCancelledErrorWhenItsTasksAreDropped) {
  ManualClock clock;
  Polled s(kairos_test::single_thread(), clock);
  std::vector<Outcome> outs(10);
  std::atomic<int> frames{0};
  for (auto& o : outs) sleep_once(s, 5ms, o, frames);
  std::vector<kairos::Task> taken = s.shutdown_now();
  EXPECT_EQ(taken.size(), 10u);
  EXPECT_EQ(frames.load(), 10);  // the Tasks hold the sleeps: still suspended
  taken.clear();
  for (auto& o : outs) {
    EXPECT_EQ(o.resumed.load(), 1);
    EXPECT_TRUE(o.cancelled.load());
  }
  EXPECT_EQ(frames.load(), 0);
}

TEST(CoroSleep, TheDestructorResumesSleepsWithCancelledError) {
  std::vector<Outcome> outs(10);
  std::atomic<int> frames{0};
  {
    Manual s(kairos_test::threads(2, 1));
    for (auto& o : outs) sleep_once(s, 5ms, o, frames);
    EXPECT_EQ(frames.load(), 10);
  }
  for (auto& o : outs) {
    EXPECT_EQ(o.resumed.load(), 1);
    EXPECT_TRUE(o.cancelled.load());
  }
  EXPECT_EQ(frames.load(), 0);
}

TEST(CoroSleep, ASleepAfterShutdownFollowsTheRejectionPolicy) {
  ManualClock clock;
  Polled s(kairos_test::single_thread(), clock);
  s.shutdown();
  std::atomic<bool> rejected{false};
  auto body = [&]() -> Detached {
    try {
      co_await kairos::sleep_for(s, 1ms);
    } catch (const kairos::RejectedExecution&) {
      rejected.store(true);
    }
  };
  body();
  EXPECT_TRUE(rejected.load());  // Rejection::abort, the default

  kairos::Options o = kairos_test::single_thread();
  o.rejection = kairos::Rejection::discard;
  Polled d(o, clock);
  d.shutdown();
  Outcome out;
  std::atomic<int> frames{0};
  sleep_once(d, 1ms, out, frames);
  EXPECT_EQ(out.resumed.load(), 1);
  EXPECT_TRUE(out.cancelled.load());
}

TEST(CoroSleep, AFrameDestroyedWhileSleepingIsNotResumedAndItsTaskIsCancelled) {
  Manual s;
  std::atomic<int> frames{0};
  std::atomic<int> resumed{0};
  auto sleeper = [&]() -> Owned {
    Alive alive(frames);
    co_await kairos::sleep_for(s, 5ms);
    resumed.fetch_add(1);
  };
  {
    Owned o = sleeper();
    EXPECT_EQ(frames.load(), 1);
  }
  EXPECT_EQ(frames.load(), 0);
  s.step(5ms);
  EXPECT_EQ(resumed.load(), 0);
  EXPECT_EQ(s.completed_task_count(), 0u);  // its task was cancelled, never ran
}

// ---- co_await on a ScheduledFuture ----------------------------------------------------------

template <class T>
Detached await_into(kairos::ScheduledFuture<T> f, std::atomic<int>& resumed, std::string& what,
                    std::thread::id& on, std::atomic<int>& frames) {
  Alive alive(frames);
  try {
    if constexpr (std::is_void_v<T>) {
      co_await f;
      what = "void";
    } else {
      what = std::to_string(co_await f);
    }
  } catch (const CancelledError&) {
    what = "cancelled";
  } catch (const std::runtime_error& e) {
    what = e.what();
  }
  on = std::this_thread::get_id();
  resumed.fetch_add(1);
}

struct Awaiting {
  std::atomic<int> resumed{0};
  std::string what;
  std::thread::id on;
};

TEST(CoroFuture, AwaitsTheValueOnTheThreadThatRanTheTask) {
  Manual s;
  std::atomic<int> frames{0};
  Awaiting a;
  std::thread::id ran_on;
  await_into(s.schedule([&] { ran_on = std::this_thread::get_id(); return 42; }, 3ms), a.resumed, a.what, a.on, frames);
  s.step(2ms);
  EXPECT_EQ(a.resumed.load(), 0);
  s.clock.advance(1ms);
  ASSERT_TRUE(eventually([&] { return a.resumed.load() == 1; }));
  EXPECT_EQ(a.what, "42");
  EXPECT_EQ(a.on, ran_on);
  ASSERT_TRUE(eventually([&] { return frames.load() == 0; }));
}

TEST(CoroFuture, RethrowsTheTasksException) {
  Manual s;
  std::atomic<int> frames{0};
  Awaiting a;
  await_into(s.schedule([]() -> int { throw std::runtime_error("boom"); }, 1ms), a.resumed, a.what, a.on, frames);
  s.clock.advance(1ms);
  ASSERT_TRUE(eventually([&] { return a.resumed.load() == 1; }));
  EXPECT_EQ(a.what, "boom");
}

TEST(CoroFuture, ACancelResumesWithCancelledErrorOnTheCancellingThread) {
  Manual s;
  std::atomic<int> frames{0};
  Awaiting a;
  auto f = s.schedule([] { return 1; }, 1h);
  await_into(f, a.resumed, a.what, a.on, frames);
  EXPECT_EQ(a.resumed.load(), 0);
  std::thread canceller([&] { EXPECT_TRUE(f.cancel()); });
  std::thread::id canceller_id = canceller.get_id();
  canceller.join();
  EXPECT_EQ(a.resumed.load(), 1);
  EXPECT_EQ(a.what, "cancelled");
  EXPECT_EQ(a.on, canceller_id);
  EXPECT_EQ(frames.load(), 0);
}

TEST(CoroFuture, ADoneFutureDoesNotSuspend) {
  Manual s;
  std::atomic<int> frames{0};
  Awaiting a;
  auto f = s.submit([] { return 7; });
  ASSERT_EQ(f.get(), 7);
  await_into(f, a.resumed, a.what, a.on, frames);
  EXPECT_EQ(a.resumed.load(), 1);
  EXPECT_EQ(a.what, "7");
  EXPECT_EQ(a.on, std::this_thread::get_id());
}

Detached await_then_record(kairos::ScheduledFuture<int> f, Recorder& order, int id) {
  order.add(id * 100 + co_await f);
}

// The registration finds the task already done (completed after await_ready looked, or before
// a second awaiter came): it does not suspend, and nothing is left registered.
TEST(CoroFuture, ARegistrationAfterTheCompletionDoesNotSuspend) {
  Manual s;
  auto f = s.submit([] { return 3; });
  ASSERT_EQ(f.get(), 3);
  kairos::FutureAwaiter<int> late(f);
  EXPECT_FALSE(late.await_suspend(std::noop_coroutine()));
  EXPECT_EQ(late.await_resume(), 3);

  auto g = s.schedule([] { return 4; }, 1ms);
  std::atomic<int> frames{0};
  Awaiting first;
  await_into(g, first.resumed, first.what, first.on, frames);  // sets the task's awaited flag
  s.clock.advance(1ms);
  ASSERT_TRUE(eventually([&] { return first.resumed.load() == 1; }));
  kairos::FutureAwaiter<int> second(g);  // the flag is set, the task done: the second must not wait
  EXPECT_FALSE(second.await_suspend(std::noop_coroutine()));
  EXPECT_EQ(second.await_resume(), 4);
}

TEST(CoroFuture, ManyCoroutinesAwaitOneFutureEachResumedOnceInTheOrderTheyBegan) {
  Manual s;
  std::atomic<int> frames{0};
  std::vector<Awaiting> as(20);
  auto f = s.schedule([] { return 5; }, 1ms);
  for (auto& a : as) await_into(f, a.resumed, a.what, a.on, frames);
  Recorder order;
  auto g = s.schedule([] { return 7; }, 1ms);  // its records share the buckets with f's
  for (int id = 1; id <= 5; ++id) await_then_record(g, order, id);
  s.clock.advance(1ms);
  ASSERT_TRUE(eventually([&] { return frames.load() == 0 && order.size() == 5; }));
  for (auto& a : as) {
    EXPECT_EQ(a.resumed.load(), 1);
    EXPECT_EQ(a.what, "5");
  }
  EXPECT_EQ(order.ids(), (std::vector<int>{107, 207, 307, 407, 507}));
}

TEST(CoroFuture, ShutdownPoliciesShutdownNowAndTheDestructorResumeAwaiters) {
  ManualClock clock;
  std::atomic<int> frames{0};
  std::vector<Awaiting> as(3);
  {
    Polled s(kairos_test::single_thread(), clock);
    s.set_execute_existing_delayed_tasks_after_shutdown(false);
    await_into(s.schedule([] { return 1; }, 1h), as[0].resumed, as[0].what, as[0].on, frames);
    ASSERT_TRUE(s.wait_idle(kPatience));  // queued: the shutdown policy removes it under a lock
    s.shutdown();
    EXPECT_EQ(as[0].what, "cancelled");
  }
  {
    Polled s(kairos_test::single_thread(), clock);
    await_into(s.schedule([] { return 1; }, 1h), as[1].resumed, as[1].what, as[1].on, frames);
    s.shutdown_now().clear();
    EXPECT_EQ(as[1].what, "cancelled");
  }
  {
    ManualScheduler s(kairos_test::single_thread(), clock);
    await_into(s.schedule([] { return 1; }, 1h), as[2].resumed, as[2].what, as[2].on, frames);
  }
  EXPECT_EQ(as[2].what, "cancelled");
  for (auto& a : as) EXPECT_EQ(a.resumed.load(), 1);
  EXPECT_EQ(frames.load(), 0);
}

TEST(CoroFuture, ARunOfATaskShutdownNowReturnedResumesWithItsValue) {
  ManualClock clock;
  Polled s(kairos_test::single_thread(), clock);
  std::atomic<int> frames{0};
  Awaiting a;
  await_into(s.schedule([] { return 9; }, 1h), a.resumed, a.what, a.on, frames);
  std::vector<kairos::Task> taken = s.shutdown_now();
  ASSERT_EQ(taken.size(), 1u);
  EXPECT_EQ(a.resumed.load(), 0);
  taken[0].run();  // completes the future here (the run's own completion, not a drop)
  EXPECT_EQ(a.resumed.load(), 1);
  EXPECT_EQ(a.what, "9");
  EXPECT_EQ(a.on, std::this_thread::get_id());
  EXPECT_EQ(frames.load(), 0);
}

TEST(CoroFuture, AFrameDestroyedWhileAwaitingIsUnlinked) {
  Manual s;
  std::atomic<int> resumed{0};
  auto f = s.schedule([] { return 1; }, 1ms);
  auto waiter = [&]() -> Owned {
    (void)co_await f;
    resumed.fetch_add(1);
  };
  { Owned o = waiter(); }  // destroyed suspended
  s.clock.advance(1ms);
  EXPECT_EQ(f.get(), 1);  // completing finds no record of the gone frame (ASan: no use after free)
  EXPECT_EQ(resumed.load(), 0);
}

// A completion racing the registration: each awaiter resumes once, whichever side wins.
TEST(CoroFuture, ACompletionRacingTheAwaitResumesExactlyOnce) {
  kairos_test::Scheduler s(kairos_test::threads(1, 2));
  constexpr int kRounds = 2000;
  std::vector<Awaiting> as(kRounds);
  std::atomic<int> frames{0};
  for (int i = 0; i < kRounds; ++i) {
    auto f = s.schedule([i] { return i; }, std::chrono::microseconds(i % 20));
    if (i % 2) std::this_thread::sleep_for(std::chrono::microseconds(i % 15));
    await_into(f, as[i].resumed, as[i].what, as[i].on, frames);
  }
  ASSERT_TRUE(eventually([&] { return frames.load() == 0; }));
  for (int i = 0; i < kRounds; ++i) {
    EXPECT_EQ(as[i].resumed.load(), 1);
    EXPECT_EQ(as[i].what, std::to_string(i));
  }
}

}  // namespace
