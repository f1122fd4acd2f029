// schedulers.hpp: the schedulers kairos's tests build, and the options they build them with.
//   Scheduler, ManualScheduler  kairos's schedulers on the steady clock and on a ManualClock;
//                               in the *_poll_test executables, the same driven by a loop.
//   Manual                      a ManualScheduler with a ManualClock of its own: step(d)
//                               advances the clock and waits until everything due has run.
//   single_thread(), threads(shards, per_shard)   the usual Options.
//   ns(t)                       a ManualClock time point in nanoseconds since its epoch.
#pragma once
#include <atomic>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <thread>
#include <type_traits>
#include <utility>

#include <kairos/kairos.hpp>

#include "patience.hpp"

namespace kairos_test {

using namespace std::chrono_literals;

namespace detail {
// Which schedulers this executable's tests build: false in every test executable, true in the
// *_poll_test ones (tests/core/CMakeLists.txt), decided when it is linked (poll_mode.cpp,
// kairos_test_threads_mode or kairos_test_poll_mode): a test file is compiled once for both.
extern const bool poll_mode_flag;
}  // namespace detail
// A reference bound to a constant-initialized object: readable from any static initializer.
inline const bool& kPollMode = detail::poll_mode_flag;

// In the *_poll executables the tests run against poll mode: each scheduler is an inline shard
// (Options::poll_mode) whose loop is a thread of the test's own, polling while the test runs.
// Options that need scheduler threads are narrowed to what poll mode has (one runner per shard);
// tests that are about threads skip themselves (SKIP_IN_POLL_MODE). Elsewhere it is kairos's
// scheduler as it stands: the options as given, no loop.
template <class Clock>
class LoopDriven : public kairos::BasicScheduler<Clock> {
  using Base = kairos::BasicScheduler<Clock>;

 public:
  explicit LoopDriven(kairos::Options o = {})
    requires std::is_same_v<Clock, kairos::SteadyClock>
      : Base(for_mode(std::move(o))) {
    start();
  }
  LoopDriven(kairos::Options o, Clock& clock) : Base(for_mode(std::move(o)), clock) { start(); }
  // In poll mode, as ~BasicScheduler: shutdown_now(), its tasks dropped, running tasks asked to
  // stop — then the loop ends (after the task it runs returns) and ~BasicScheduler settles the rest.
  ~LoopDriven() {
    if (!loop_.joinable()) return;
    this->shutdown_now().clear();
    stop_.store(true, std::memory_order_release);
    loop_.join();
  }

 private:
  static kairos::Options for_mode(kairos::Options o) {
    if (!kPollMode) return o;
    o.poll_mode = true;
    o.threads_per_shard = 1;
    o.cpus.clear();
    o.on_thread_start = nullptr;
    return o;
  }
  // The loop's first poll happens before the constructor returns: from then on it is the
  // loop's thread, and the test's wait_idle() / await_termination() wait for it.
  void start() {
    if (!kPollMode) return;
    std::atomic<bool> first{false};
    loop_ = std::thread([this, &first] {
      this->poll();
      first.store(true, std::memory_order_release);
      while (!stop_.load(std::memory_order_acquire))
        if (this->poll() == 0) std::this_thread::sleep_for(std::chrono::microseconds(20));
    });
    while (!first.load(std::memory_order_acquire)) std::this_thread::yield();
  }
  std::atomic<bool> stop_{false};
  std::thread loop_;
};
using ManualScheduler = LoopDriven<kairos::ManualClock>;
using Scheduler = LoopDriven<kairos::SteadyClock>;
// (if/else: the macro is a whole statement, safe after an if of the caller's.)
#define SKIP_IN_POLL_MODE(why)          \
  if (!::kairos_test::kPollMode) {      \
  } else                                \
    GTEST_SKIP() << "poll mode: " << why

// One shard served by one thread: the tasks of a test run one at a time, in deadline order.
inline kairos::Options single_thread() {
  kairos::Options o;
  o.shards = 1;
  o.threads_per_shard = 1;
  return o;
}

inline kairos::Options threads(unsigned shards, unsigned per_shard) {
  kairos::Options o;
  o.shards = shards;
  o.threads_per_shard = per_shard;
  return o;
}

// Nanoseconds since the epoch of a ManualClock time point.
inline std::int64_t ns(kairos::ManualClock::time_point t) { return t.time_since_epoch().count(); }

namespace detail {
struct OwnClock {  // a base, so that the clock is built before the scheduler that reads it
  kairos::ManualClock clock;
};
}  // namespace detail

// A ManualScheduler on a ManualClock of its own, the set-up of most deterministic tests:
//   Manual s;                      // single_thread(), or Manual s(threads(1, 2));
//   s.schedule(task, 10ms);
//   s.step(10ms);                  // the clock moves 10 ms; every task due by then has run
// step() and settle() throw NotIdle (the test fails there, as an ASSERT would) when the
// scheduler is not idle within kPatience. A test that must not wait for idle (a task it blocks
// on a Gate is running) moves s.clock itself.
class Manual : public detail::OwnClock, public ManualScheduler {
 public:
  struct NotIdle : std::runtime_error {
    NotIdle() : std::runtime_error("kairos_test::Manual: not idle within kPatience (a due task never ran?)") {}
  };
  explicit Manual(kairos::Options o = single_thread()) : ManualScheduler(std::move(o), clock) {}

  // Advances the clock by d, then waits until every task due by the new time has run.
  template <class Rep, class Period>
  void step(std::chrono::duration<Rep, Period> d) {
    clock.advance(d);
    settle();
  }
  // Waits until every task due by the clock's time has run (wait_idle(kPatience) or NotIdle).
  void settle() {
    if (!this->wait_idle(kPatience)) throw NotIdle();
  }
};

}  // namespace kairos_test
