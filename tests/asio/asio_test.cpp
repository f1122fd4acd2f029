// asio_test.cpp: kairos/asio.hpp with Boost.Asio: async_sleep_for / async_sleep_until /
// async_wait under every completion token Boost has (use_awaitable in co_spawn, callbacks,
// use_future, deferred), where and when the handler runs (its associated executor, a strand,
// never inline, never early, never on a kairos thread, exactly once, io_context::run() kept
// busy), what kairos dropping the task gives (cancel, shutdown_now, the destructor, rejection:
// operation_aborted once), cancellation slots (each type, the awaitable || operator, a cancel
// racing the deadline) and PollBridge (a poll-mode scheduler on the io_context's thread).
// Tests that need a newer Boost than the one found (cancellation slots: 1.77; deferred: 1.80)
// skip themselves, saying so. Deterministic on a ManualClock where the point is "not yet".
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <future>
#include <memory>
#include <optional>
#include <random>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <vector>

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/asio/version.hpp>

#include <kairos/asio.hpp>
#include <kairos/kairos.hpp>

#if defined(BOOST_ASIO_HAS_CO_AWAIT)
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>
#define KAIROS_TEST_AWAITABLE 1
#else
#define KAIROS_TEST_AWAITABLE 0
#endif
#if KAIROS_ASIO_HAS_CANCELLATION
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#endif
#if __has_include(<boost/asio/deferred.hpp>)
#include <boost/asio/deferred.hpp>
#define KAIROS_TEST_DEFERRED 1
#else
#define KAIROS_TEST_DEFERRED 0
#endif
#if KAIROS_TEST_AWAITABLE && __has_include(<boost/asio/experimental/awaitable_operators.hpp>)
#include <boost/asio/experimental/awaitable_operators.hpp>
#define KAIROS_TEST_OPERATORS 1
#else
#define KAIROS_TEST_OPERATORS 0
#endif

#include "support.hpp"

namespace {

using namespace std::chrono_literals;
using kairos_test::kPatience;
namespace ka = kairos::asio;
using boost::system::error_code;
using ManualScheduler = kairos::BasicScheduler<kairos::ManualClock>;

const error_code kAborted = boost::asio::error::operation_aborted;

// Runs `io` on this thread until pred() holds or kPatience passes; true iff it held.
template <class Pred>
bool run_until(boost::asio::io_context& io, Pred pred) {
  auto until = std::chrono::steady_clock::now() + kPatience;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > until) return pred();
    if (io.stopped()) io.restart();
    io.run_one_for(10ms);
  }
  return true;
}

// What one operation's handler saw. Written by the handler, read by the test after it ran.
struct Outcome {
  std::atomic<int> calls{0};
  std::atomic<int> aborted{0};
  std::atomic<int> other_errors{0};
  std::atomic<std::thread::id> thread{};
  void record(const error_code& ec) {
    thread.store(std::this_thread::get_id());
    if (ec == kAborted) aborted.fetch_add(1);
    else if (ec) other_errors.fetch_add(1);
    calls.fetch_add(1);
  }
};

// The handler of an Outcome: a plain callable, bound to an executor by the tests.
auto recorder(Outcome& o) {
  return [&o](error_code ec) { o.record(ec); };
}

std::thread::id kairos_thread(kairos::Scheduler& s) {
  return s.submit([] { return std::this_thread::get_id(); }).get();
}

kairos::Options one_thread() {
  kairos::Options o;
  o.wait = kairos::WaitPolicy::sleep();
  return o;
}

// ---- when and where the handler runs --------------------------------------------------------

TEST(AsioSleep, CallbackRunsOnItsExecutorNeverEarlyOnce) {
  boost::asio::io_context io;  // before the scheduler: destroyed after it (see kairos/asio.hpp, Life)
  kairos::ManualClock clock;
  ManualScheduler s(one_thread(), clock);
  Outcome o;
  ka::async_sleep_for(s, 10ms, boost::asio::bind_executor(io, recorder(o)));
  // 9 ms: a marker task due then has run, so kairos has seen 9 ms and (never early) not the
  // sleep's 10 ms task; nothing can have been posted.
  auto marker = s.schedule([] {}, 9ms);
  clock.advance(9ms);
  marker.get();
  io.poll();
  EXPECT_EQ(o.calls.load(), 0) << "completed before its deadline";
  clock.advance(1ms);
  ASSERT_TRUE(run_until(io, [&] { return o.calls.load() == 1; }));
  EXPECT_EQ(o.aborted.load() + o.other_errors.load(), 0);
  EXPECT_EQ(o.thread.load(), std::this_thread::get_id()) << "not run by the io_context";
  io.restart();
  io.poll();
  EXPECT_EQ(o.calls.load(), 1);
}

TEST(AsioSleep, SleepUntilADeadlineOfTheSchedulersClock) {
  boost::asio::io_context io;  // before the scheduler: destroyed after it (see kairos/asio.hpp, Life)
  kairos::ManualClock clock;
  ManualScheduler s(one_thread(), clock);
  Outcome o;
  ka::async_sleep_until(s, clock.now() + 5ms, boost::asio::bind_executor(io, recorder(o)));
  auto marker = s.schedule_at([] {}, clock.now() + 4ms);
  clock.advance(4ms);
  marker.get();
  io.poll();
  EXPECT_EQ(o.calls.load(), 0) << "completed before its deadline";
  clock.advance(1ms);
  ASSERT_TRUE(run_until(io, [&] { return o.calls.load() == 1; }));
  EXPECT_EQ(o.aborted.load() + o.other_errors.load(), 0);
}

TEST(AsioSleep, HandlerRunsOnTheIoThreadNotOnKairossThread) {
  boost::asio::io_context io;  // before the scheduler: destroyed after it (see kairos/asio.hpp, Life)
  kairos::Scheduler s(one_thread());
  std::thread::id kairos_id = kairos_thread(s);
  Outcome o;
  ka::async_sleep_for(s, 1ms, boost::asio::bind_executor(io, recorder(o)));
  ASSERT_TRUE(run_until(io, [&] { return o.calls.load() == 1; }));
  EXPECT_EQ(o.thread.load(), std::this_thread::get_id());
  EXPECT_NE(o.thread.load(), kairos_id);
}

// io_context::run() with nothing but a pending sleep returns only after its handler ran (the
// operation holds work on the handler's executor).
TEST(AsioSleep, RunDoesNotReturnWhileASleepIsPending) {
  boost::asio::io_context io;  // before the scheduler: destroyed after it (see kairos/asio.hpp, Life)
  kairos::Scheduler s(one_thread());
  Outcome o;
  auto start = std::chrono::steady_clock::now();
  ka::async_sleep_for(s, 20ms, boost::asio::bind_executor(io, recorder(o)));
  io.run();
  EXPECT_EQ(o.calls.load(), 1) << "io.run() returned before the sleep ended";
  EXPECT_GE(std::chrono::steady_clock::now() - start, 20ms);
}

TEST(AsioSleep, NeverCompletesInsideTheInitiatingCall) {
  boost::asio::io_context io;  // before the scheduler: destroyed after it (see kairos/asio.hpp, Life)
  kairos::Scheduler s(one_thread());
  auto done = s.schedule([] { return 1; }, 0ms);
  done.wait();
  Outcome o;
  ka::async_wait(done, boost::asio::bind_executor(io, recorder(o)));  // done already: posted
  kairos::Scheduler stopped(one_thread());
  stopped.shutdown();
  Outcome rejected;
  ka::async_sleep_for(stopped, 1ms, boost::asio::bind_executor(io, recorder(rejected)));  // posted
  EXPECT_EQ(o.calls.load(), 0);
  EXPECT_EQ(rejected.calls.load(), 0);
  ASSERT_TRUE(run_until(io, [&] { return o.calls.load() == 1 && rejected.calls.load() == 1; }));
  EXPECT_EQ(o.aborted.load(), 0);
  EXPECT_EQ(rejected.aborted.load(), 1);
}

TEST(AsioSleep, HandlersBoundToAStrandRunOnTheStrand) {
  boost::asio::io_context io;  // before the scheduler: destroyed after it (see kairos/asio.hpp, Life)
  kairos::Scheduler s(one_thread());
  auto strand = boost::asio::make_strand(io);
  constexpr int kOps = 200;
  std::atomic<int> on_strand{0}, calls{0}, inside{0}, overlapped{0};
  for (int i = 0; i < kOps; ++i) {
    ka::async_sleep_for(s, std::chrono::microseconds(i * 10),
                        boost::asio::bind_executor(strand, [&](error_code) {
                          if (inside.fetch_add(1) != 0) overlapped.fetch_add(1);
                          if (strand.running_in_this_thread()) on_strand.fetch_add(1);
                          inside.fetch_sub(1);
                          calls.fetch_add(1);
                        }));
  }
  std::thread second([&] { io.run(); });
  io.run();
  second.join();
  EXPECT_EQ(calls.load(), kOps);
  EXPECT_EQ(on_strand.load(), kOps);
  EXPECT_EQ(overlapped.load(), 0);
}

// ---- async_wait -----------------------------------------------------------------------------

TEST(AsioWait, CompletesWhenTheTaskIsDoneAndLeavesTheResultInTheFuture) {
  boost::asio::io_context io;  // before the scheduler: destroyed after it (see kairos/asio.hpp, Life)
  kairos::Scheduler s(one_thread());
  auto value = s.schedule([] { return std::make_unique<int>(7); }, 1ms);  // move-only result
  auto failing = s.schedule([]() -> int { throw std::runtime_error("task failed"); }, 1ms);
  Outcome ov, of;
  ka::async_wait(value, boost::asio::bind_executor(io, recorder(ov)));
  ka::async_wait(failing, boost::asio::bind_executor(io, recorder(of)));
  ASSERT_TRUE(run_until(io, [&] { return ov.calls.load() == 1 && of.calls.load() == 1; }));
  EXPECT_EQ(ov.aborted.load() + ov.other_errors.load(), 0);
  EXPECT_EQ(of.aborted.load() + of.other_errors.load(), 0) << "a task's exception is get()'s, not the wait's";
  ASSERT_TRUE(value.is_done());
  EXPECT_EQ(*value.get(), 7) << "the wait took the move-only result";
  EXPECT_THROW(failing.get(), std::runtime_error);
}

TEST(AsioWait, ACancelledTaskGivesOperationAborted) {
  boost::asio::io_context io;  // before the scheduler: destroyed after it (see kairos/asio.hpp, Life)
  kairos::Scheduler s(one_thread());
  auto f = s.schedule([] {}, 1h);
  Outcome o, again;
  ka::async_wait(f, boost::asio::bind_executor(io, recorder(o)));
  ka::async_wait(f, boost::asio::bind_executor(io, recorder(again)));  // two waits on one task
  io.poll();
  EXPECT_EQ(o.calls.load(), 0);
  ASSERT_TRUE(f.cancel());
  ASSERT_TRUE(run_until(io, [&] { return o.calls.load() == 1 && again.calls.load() == 1; }));
  EXPECT_EQ(o.aborted.load(), 1);
  EXPECT_EQ(again.aborted.load(), 1);
}

TEST(AsioWait, AnEmptyFutureThrowsAndStartsNothing) {
  boost::asio::io_context io;
  Outcome o;
  EXPECT_THROW(ka::async_wait(kairos::ScheduledFuture<int>{}, boost::asio::bind_executor(io, recorder(o))),
               std::future_error);
  io.poll();
  EXPECT_EQ(o.calls.load(), 0);
}

// ---- completion tokens ----------------------------------------------------------------------

TEST(AsioTokens, UseFuture) {
  kairos::Scheduler s(one_thread());
  std::future<void> slept = ka::async_sleep_for(s, 1ms, boost::asio::use_future);
  ASSERT_EQ(slept.wait_for(kPatience), std::future_status::ready);
  EXPECT_NO_THROW(slept.get());

  auto task = s.schedule([] { return 5; }, 1h);
  std::future<void> waited = ka::async_wait(task, boost::asio::use_future);
  task.cancel();
  ASSERT_EQ(waited.wait_for(kPatience), std::future_status::ready);
  try {
    waited.get();
    ADD_FAILURE() << "a cancelled task's wait succeeded";
  } catch (const boost::system::system_error& e) {
    EXPECT_EQ(e.code(), kAborted);
  }
}

TEST(AsioTokens, UseAwaitableInCoSpawn) {
#if KAIROS_TEST_AWAITABLE
  boost::asio::io_context io;  // before the scheduler: destroyed after it (see kairos/asio.hpp, Life)
  kairos::Scheduler s(one_thread());
  std::thread::id kairos_id = kairos_thread(s);
  std::atomic<int> reached{0};
  std::exception_ptr failure;
  boost::asio::co_spawn(
      io,
      [&]() -> boost::asio::awaitable<void> {
        auto before = s.now();
        co_await ka::async_sleep_for(s, 5ms, boost::asio::use_awaitable);
        EXPECT_GE(s.now() - before, 5ms);
        EXPECT_NE(std::this_thread::get_id(), kairos_id);
        reached.fetch_add(1);
        co_await ka::async_sleep_until(s, s.now() + 1ms, boost::asio::use_awaitable);
        reached.fetch_add(1);
        auto answer = s.schedule([] { return 42; }, 1ms);
        co_await ka::async_wait(answer, boost::asio::use_awaitable);
        EXPECT_EQ(answer.get(), 42);
        reached.fetch_add(1);
        auto never = s.schedule([] {}, 1h);
        never.cancel();
        try {
          co_await ka::async_wait(never, boost::asio::use_awaitable);
          ADD_FAILURE() << "a cancelled task's wait succeeded";
        } catch (const boost::system::system_error& e) {
          EXPECT_EQ(e.code(), kAborted);
          reached.fetch_add(1);
        }
      },
      [&](std::exception_ptr e) { failure = e; });
  io.run();  // returns once the coroutine ended: every await kept the io_context busy
  EXPECT_EQ(reached.load(), 4);
  EXPECT_FALSE(failure);
#else
  GTEST_SKIP() << "Boost.Asio " << BOOST_ASIO_VERSION << " has no co_await support with this compiler";
#endif
}

TEST(AsioTokens, Deferred) {
#if KAIROS_TEST_DEFERRED
  boost::asio::io_context io;  // before the scheduler: destroyed after it (see kairos/asio.hpp, Life)
  kairos::ManualClock clock;
  ManualScheduler s(one_thread(), clock);
  Outcome o;
  auto op = ka::async_sleep_for(s, 1ms, boost::asio::deferred);
  EXPECT_EQ(s.queue_size(), 0u) << "a deferred operation started before it was invoked";
  std::move(op)(boost::asio::bind_executor(io, recorder(o)));
  EXPECT_EQ(s.queue_size(), 1u);
  clock.advance(1ms);
  ASSERT_TRUE(run_until(io, [&] { return o.calls.load() == 1; }));
  EXPECT_EQ(o.aborted.load(), 0);
#else
  GTEST_SKIP() << "Boost.Asio " << BOOST_ASIO_VERSION << " has no asio::deferred (Boost 1.80+)";
#endif
}

// ---- kairos lets the task go: operation_aborted, once ---------------------------------------

TEST(AsioDropped, SchedulerDestroyedWithOperationsPending) {
  boost::asio::io_context io;
  constexpr int kOps = 50;
  std::deque<Outcome> sleeps(kOps), waits(kOps);
  {
    kairos::Scheduler s(one_thread());
    for (int i = 0; i < kOps; ++i) {
      ka::async_sleep_for(s, 1h, boost::asio::bind_executor(io, recorder(sleeps[i])));
      ka::async_wait(s.schedule([] { return 1; }, 1h), boost::asio::bind_executor(io, recorder(waits[i])));
    }
    io.poll();
  }
  io.restart();
  io.run();  // returns when every handler ran: the work the operations held is gone
  for (int i = 0; i < kOps; ++i) {
    EXPECT_EQ(sleeps[i].calls.load(), 1);
    EXPECT_EQ(sleeps[i].aborted.load(), 1);
    EXPECT_EQ(waits[i].calls.load(), 1);
    EXPECT_EQ(waits[i].aborted.load(), 1);
  }
}

TEST(AsioDropped, ShutdownNowWithOperationsPending) {
  boost::asio::io_context io;  // before the scheduler: destroyed after it (see kairos/asio.hpp, Life)
  kairos::Scheduler s(one_thread());
  Outcome sleep, wait, ran;
  ka::async_sleep_for(s, 1h, boost::asio::bind_executor(io, recorder(sleep)));
  ka::async_wait(s.schedule([] {}, 1h), boost::asio::bind_executor(io, recorder(wait)));
  ka::async_sleep_for(s, 2h, boost::asio::bind_executor(io, recorder(ran)));
  std::vector<kairos::Task> left = s.shutdown_now();
  ASSERT_EQ(left.size(), 3u);
  io.poll();
  EXPECT_EQ(sleep.calls.load() + wait.calls.load() + ran.calls.load(), 0) << "completed before the tasks were dropped";
  left[2].run();  // the 2 h sleep's task, run by hand: completes it (early: the caller's choice)
  left.clear();   // the others dropped: aborted
  io.restart();
  ASSERT_TRUE(run_until(io, [&] { return sleep.calls.load() + wait.calls.load() + ran.calls.load() == 3; }));
  EXPECT_EQ(sleep.aborted.load(), 1);
  EXPECT_EQ(wait.aborted.load(), 1);
  EXPECT_EQ(ran.aborted.load(), 0);
  io.restart();
  io.poll();
  EXPECT_EQ(sleep.calls.load() + wait.calls.load() + ran.calls.load(), 3);
}

TEST(AsioDropped, RejectedUnderEveryPolicy) {
  for (kairos::Rejection r : {kairos::Rejection::abort, kairos::Rejection::discard}) {
    kairos::Options opts = one_thread();
    opts.rejection = r;
    boost::asio::io_context io;
    kairos::Scheduler s(opts);
    s.shutdown();
    Outcome o;
    EXPECT_NO_THROW(ka::async_sleep_for(s, 1ms, boost::asio::bind_executor(io, recorder(o))));
    ASSERT_TRUE(run_until(io, [&] { return o.calls.load() == 1; }));
    EXPECT_EQ(o.aborted.load(), 1);
  }
}

TEST(AsioDropped, ShutdownDroppingDelayedTasks) {
  kairos::Options opts = one_thread();
  opts.execute_existing_delayed_tasks_after_shutdown = false;
  boost::asio::io_context io;  // before the scheduler: destroyed after it (see kairos/asio.hpp, Life)
  kairos::Scheduler s(opts);
  Outcome o;
  ka::async_sleep_for(s, 1h, boost::asio::bind_executor(io, recorder(o)));
  s.shutdown();
  ASSERT_TRUE(run_until(io, [&] { return o.calls.load() == 1; }));
  EXPECT_EQ(o.aborted.load(), 1);
}

// ---- cancellation slots ---------------------------------------------------------------------

#if KAIROS_ASIO_HAS_CANCELLATION
// Cancelled tasks leave their shard at once, so stats().cancelled counts them at once.
kairos::Options removing() {
  kairos::Options o = one_thread();
  o.remove_on_cancel = true;
  return o;
}
constexpr boost::asio::cancellation_type kTypes[] = {boost::asio::cancellation_type::terminal,
                                                     boost::asio::cancellation_type::partial,
                                                     boost::asio::cancellation_type::total};
#define KAIROS_NEEDS_SLOTS() (void)0
#else
#define KAIROS_NEEDS_SLOTS() GTEST_SKIP() << "Boost.Asio " << BOOST_ASIO_VERSION << " has no cancellation slots (Boost 1.77+)"
#endif

TEST(AsioCancel, EveryTypeCancelsASleep) {
  KAIROS_NEEDS_SLOTS();
#if KAIROS_ASIO_HAS_CANCELLATION
  for (auto type : kTypes) {
    boost::asio::io_context io;  // before the scheduler: destroyed after it (see kairos/asio.hpp, Life)
    kairos::ManualClock clock;
    ManualScheduler s(removing(), clock);
    boost::asio::cancellation_signal signal;
    Outcome o;
    ka::async_sleep_for(s, 1h, boost::asio::bind_cancellation_slot(signal.slot(), boost::asio::bind_executor(io, recorder(o))));
    io.poll();
    EXPECT_EQ(o.calls.load(), 0);
    signal.emit(type);
    ASSERT_TRUE(run_until(io, [&] { return o.calls.load() == 1; })) << "type " << static_cast<int>(type);
    EXPECT_EQ(o.aborted.load(), 1);
    EXPECT_TRUE(kairos_test::eventually([&] { return s.stats().total().cancelled == 1; }))
        << "the sleep's task was not cancelled";
    signal.emit(type);  // after completion: nothing to stop
    io.restart();
    io.poll();
    EXPECT_EQ(o.calls.load(), 1);
  }
#endif
}

TEST(AsioCancel, TerminalAndPartialCancelTheAwaitedTaskTotalIsIgnored) {
  KAIROS_NEEDS_SLOTS();
#if KAIROS_ASIO_HAS_CANCELLATION
  for (auto type : kTypes) {
    boost::asio::io_context io;  // before the scheduler: destroyed after it (see kairos/asio.hpp, Life)
    kairos::Scheduler s(one_thread());
    boost::asio::cancellation_signal signal;
    Outcome o;
    auto task = s.schedule([] { return 3; }, 1h);
    ka::async_wait(task, boost::asio::bind_cancellation_slot(signal.slot(), boost::asio::bind_executor(io, recorder(o))));
    signal.emit(type);
    if (type == boost::asio::cancellation_type::total) {
      io.poll();
      EXPECT_FALSE(task.is_done()) << "total cancellation cancelled the task";
      EXPECT_EQ(o.calls.load(), 0);
      task.cancel();
    } else {
      EXPECT_TRUE(task.is_cancelled()) << "type " << static_cast<int>(type);
    }
    ASSERT_TRUE(run_until(io, [&] { return o.calls.load() == 1; }));
    EXPECT_EQ(o.aborted.load(), 1);
  }
#endif
}

// The slot keeps the operation's cancellation handler until it is reused: emitting after the
// operation ended, even after the scheduler is gone, does nothing.
TEST(AsioCancel, EmitAfterCompletionAndAfterTheSchedulerIsGone) {
  KAIROS_NEEDS_SLOTS();
#if KAIROS_ASIO_HAS_CANCELLATION
  boost::asio::io_context io;
  boost::asio::cancellation_signal sleep_signal, wait_signal;
  Outcome slept, waited;
  {
    kairos::Scheduler s(one_thread());
    ka::async_sleep_for(s, 1ms, boost::asio::bind_cancellation_slot(sleep_signal.slot(), boost::asio::bind_executor(io, recorder(slept))));
    ka::async_wait(s.schedule([] {}, 1ms),
                   boost::asio::bind_cancellation_slot(wait_signal.slot(), boost::asio::bind_executor(io, recorder(waited))));
    ASSERT_TRUE(run_until(io, [&] { return slept.calls.load() == 1 && waited.calls.load() == 1; }));
    sleep_signal.emit(boost::asio::cancellation_type::terminal);
    wait_signal.emit(boost::asio::cancellation_type::terminal);
  }
  sleep_signal.emit(boost::asio::cancellation_type::terminal);
  wait_signal.emit(boost::asio::cancellation_type::terminal);
  io.restart();
  io.poll();
  EXPECT_EQ(slept.calls.load(), 1);
  EXPECT_EQ(waited.calls.load(), 1);
  EXPECT_EQ(slept.aborted.load() + waited.aborted.load(), 0);
#endif
}

// A cancel emitted on the io thread (this one) races the task's start on kairos's thread (due at
// once or within microseconds, the leader spinning for it): each operation completes exactly once,
// with one outcome or the other.
TEST(AsioCancel, CancelRacingTheDeadlineCompletesOnce) {
  KAIROS_NEEDS_SLOTS();
#if KAIROS_ASIO_HAS_CANCELLATION
  kairos::Options opts;
  opts.wait = kairos::WaitPolicy::hybrid(200us);
  boost::asio::io_context io;  // before the scheduler: destroyed after it (see kairos/asio.hpp, Life)
  kairos::Scheduler s(opts);
  const int ops = kairos_test::sanitized_build() ? 1000 : 5000;
  std::deque<Outcome> outcomes(ops);
  std::deque<boost::asio::cancellation_signal> signals(ops);
  std::mt19937 rng(static_cast<std::uint32_t>(kairos_test::stress_seed()));
  std::uniform_int_distribution<int> delay_us(0, 20), spin_us(0, 20);
  for (int i = 0; i < ops; ++i) {
    auto delay = std::chrono::microseconds(delay_us(rng));
    auto handler = boost::asio::bind_cancellation_slot(signals[i].slot(), boost::asio::bind_executor(io, recorder(outcomes[i])));
    if (i % 2 == 0) ka::async_sleep_for(s, delay, std::move(handler));
    else ka::async_wait(s.schedule([] {}, delay), std::move(handler));
    auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(spin_us(rng));
    while (std::chrono::steady_clock::now() < until) {
    }
    signals[i].emit(boost::asio::cancellation_type::terminal);
    if (i % 8 == 0) io.poll();
  }
  ASSERT_TRUE(run_until(io, [&] {
    for (auto& o : outcomes)
      if (o.calls.load() == 0) return false;
    return true;
  }));
  io.restart();
  io.poll();
  int aborted = 0;
  for (auto& o : outcomes) {
    EXPECT_EQ(o.calls.load(), 1);
    EXPECT_EQ(o.other_errors.load(), 0);
    aborted += o.aborted.load();
  }
  std::printf("%d of %d operations cancelled, %d completed by kairos first\n", aborted, ops, ops - aborted);
  EXPECT_GT(aborted, 0) << "no emit cancelled its operation (most are emitted before the deadline)";
#endif
}

TEST(AsioCancel, AwaitableOrOperatorCancelsTheLoser) {
#if KAIROS_TEST_OPERATORS
  using namespace boost::asio::experimental::awaitable_operators;
  kairos::Options opts;
  opts.remove_on_cancel = true;
  boost::asio::io_context io;  // before the scheduler: destroyed after it (see kairos/asio.hpp, Life)
  kairos::Scheduler s(opts);
  std::atomic<int> winner{-1};
  std::atomic<bool> done{false};
  boost::asio::co_spawn(
      io,
      [&]() -> boost::asio::awaitable<void> {
        auto r = co_await (ka::async_sleep_for(s, 1h, boost::asio::use_awaitable) ||
                           ka::async_sleep_for(s, 2ms, boost::asio::use_awaitable));
        winner.store(static_cast<int>(r.index()));
        auto slow = s.schedule([] { return 1; }, 1h);
        auto r2 = co_await (ka::async_wait(slow, boost::asio::use_awaitable) ||
                            ka::async_sleep_for(s, 1ms, boost::asio::use_awaitable));
        EXPECT_EQ(r2.index(), 1u);
        EXPECT_TRUE(slow.is_cancelled()) << "the timed-out task was not cancelled";
        done.store(true);
      },
      boost::asio::detached);
  ASSERT_TRUE(run_until(io, [&] { return done.load(); })) << "the 1 h sleep was not cancelled";
  EXPECT_EQ(winner.load(), 1);
  EXPECT_TRUE(kairos_test::eventually([&] { return s.stats().total().cancelled >= 2; }));
#else
  GTEST_SKIP() << "Boost.Asio " << BOOST_ASIO_VERSION << " has no awaitable operators (Boost 1.77+)";
#endif
}

// ---- PollBridge -----------------------------------------------------------------------------

kairos::Options poll_mode() {
  kairos::Options o;
  o.poll_mode = true;
  return o;
}

TEST(PollBridge, RunsTasksOnTheIoThreadWokenByAnotherThread) {
  boost::asio::io_context io;  // before the scheduler: destroyed after it (see kairos/asio.hpp, Life)
  kairos::Scheduler s(poll_mode());
  ka::PollBridge bridge(io, s);
  auto far = s.schedule([] {}, 1h);  // the bridge's timer waits for it: only a wake is in time
  std::atomic<std::thread::id> io_id{};
  std::thread io_thread([&] {
    io_id.store(std::this_thread::get_id());
    boost::asio::post(io, [&] { bridge.start(); });
    auto work = boost::asio::make_work_guard(io);
    io.run();
  });
  ASSERT_TRUE(kairos_test::eventually([&] { return bridge.iterations() >= 1; }));
  constexpr int kTasks = 20;
  std::vector<kairos::ScheduledFuture<std::thread::id>> ran;
  for (int i = 0; i < kTasks; ++i) {
    ran.push_back(s.schedule([] { return std::this_thread::get_id(); }, 1ms));
    ASSERT_EQ(ran.back().wait_for(kPatience), std::future_status::ready) << "task " << i << " never ran";
    EXPECT_EQ(ran.back().get(), io_id.load());
  }
  EXPECT_GE(bridge.wakes(), 1u);
  EXPECT_GE(bridge.iterations(), bridge.wakes());
  boost::asio::post(io, [&] {
    bridge.stop();
    io.stop();
  });
  io_thread.join();
  far.cancel();
}

TEST(PollBridge, AsyncSleepOnAPollModeSchedulerBesideAsiosHandlers) {
#if KAIROS_TEST_AWAITABLE
  boost::asio::io_context io;  // before the scheduler: destroyed after it (see kairos/asio.hpp, Life)
  kairos::Scheduler s(poll_mode());
  ka::PollBridge bridge(io, s);
  bridge.start();
  std::atomic<bool> done{false};
  boost::asio::co_spawn(
      io,
      [&]() -> boost::asio::awaitable<void> {
        for (int i = 0; i < 3; ++i) {
          auto before = s.now();
          co_await ka::async_sleep_for(s, 2ms, boost::asio::use_awaitable);
          EXPECT_GE(s.now() - before, 2ms);
        }
        done.store(true);
        bridge.stop();
      },
      boost::asio::detached);
  io.run();  // ends when the coroutine stopped the bridge: nothing else is pending
  EXPECT_TRUE(done.load());
  EXPECT_GE(bridge.iterations(), 3u);
#else
  GTEST_SKIP() << "Boost.Asio " << BOOST_ASIO_VERSION << " has no co_await support with this compiler";
#endif
}

// Destroyed with its timer's and the fd's waits still queued: they must not touch it (ASan).
TEST(PollBridge, DestroyedWithWaitsQueued) {
  boost::asio::io_context io;  // before the scheduler: destroyed after it (see kairos/asio.hpp, Life)
  kairos::Scheduler s(poll_mode());
  auto task = s.schedule([] {}, 0ms);
  {
    ka::PollBridge bridge(io, s);
    bridge.start();  // ran the task, armed the timer (nothing pending: never) and the fd wait
    EXPECT_TRUE(task.is_done());
    s.schedule([] {}, 0ms);  // earlier than "never": signals the wake fd
    io.poll_one();
  }
  io.restart();
  io.poll();
  SUCCEED();
}

TEST(PollBridge, NeedsAPollModeScheduler) {
  boost::asio::io_context io;  // before the scheduler: destroyed after it (see kairos/asio.hpp, Life)
  kairos::Scheduler s(one_thread());
  EXPECT_THROW(ka::PollBridge(io, s), std::logic_error);
}

}  // namespace
