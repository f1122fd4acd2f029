// support.hpp: small pieces shared by the semantic tests of kairos.
// Gate:       a task blocks on it until the test opens it (real time bounded, never hangs).
// Recorder:   an ordered log of ids written by task bodies, read by the test.
// eventually: polls a predicate until it holds or a generous real-time bound passes.
// Real-time bounds here are only upper limits a correct scheduler never gets near; no test
// sleeps to make something happen.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include <kairos/kairos.hpp>

namespace kairos_test {

using namespace std::chrono_literals;

#if KAIROS_TEST_POLL_MODE
// The *_poll executables (tests/core/CMakeLists.txt) run the same tests against poll mode: each
// scheduler is an inline shard (Options::poll_mode) whose loop is a thread of the test's own,
// polling while the test runs. Options that need scheduler threads are narrowed to what poll
// mode has (one runner per shard); tests that are about threads skip themselves (SKIP_IN_POLL_MODE).
inline constexpr bool kPollMode = true;

template <class Clock>
class LoopDriven : public kairos::BasicScheduler<Clock> {
  using Base = kairos::BasicScheduler<Clock>;

 public:
  explicit LoopDriven(kairos::Options o = {})
    requires std::is_same_v<Clock, kairos::SteadyClock>
      : Base(inline_shards(std::move(o))) {
    start();
  }
  LoopDriven(kairos::Options o, Clock& clock) : Base(inline_shards(std::move(o)), clock) { start(); }
  // As ~BasicScheduler: shutdown_now(), its tasks dropped, running tasks asked to stop — then
  // the loop ends (after the task it runs returns) and ~BasicScheduler settles the rest.
  ~LoopDriven() {
    this->shutdown_now().clear();
    stop_.store(true, std::memory_order_release);
    loop_.join();
  }

 private:
  static kairos::Options inline_shards(kairos::Options o) {
    o.poll_mode = true;
    o.threads_per_shard = 1;
    o.cpus.clear();
    o.on_thread_start = nullptr;
    return o;
  }
  // The loop's first poll happens before the constructor returns: from then on it is the
  // loop's thread, and the test's wait_idle() / await_termination() wait for it.
  void start() {
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
#define SKIP_IN_POLL_MODE(why) GTEST_SKIP() << "poll mode: " << why
#else
inline constexpr bool kPollMode = false;
using ManualScheduler = kairos::BasicScheduler<kairos::ManualClock>;
using Scheduler = kairos::Scheduler;
#define SKIP_IN_POLL_MODE(why) static_cast<void>(0)
#endif

// Longest a correct scheduler may take to do something "at once" on a loaded machine
// (sanitizers, two shared cores). Reaching it means the behaviour is missing.
inline constexpr std::chrono::seconds kPatience{20};

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
inline std::int64_t ns(kairos::ManualClock::time_point t) {
  return t.time_since_epoch().count();
}

class Gate {
 public:
  void open() {
    {
      std::lock_guard lock(mu_);
      open_ = true;
    }
    cv_.notify_all();
  }
  // true once open; false if kPatience passed first
  bool wait() {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, kPatience, [&] { return open_; });
  }
  bool is_open() const {
    std::lock_guard lock(mu_);
    return open_;
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

class Recorder {
 public:
  void add(int id) {
    std::lock_guard lock(mu_);
    ids_.push_back(id);
  }
  std::vector<int> ids() const {
    std::lock_guard lock(mu_);
    return ids_;
  }
  std::size_t size() const {
    std::lock_guard lock(mu_);
    return ids_.size();
  }
  void clear() {
    std::lock_guard lock(mu_);
    ids_.clear();
  }

 private:
  mutable std::mutex mu_;
  std::vector<int> ids_;
};

template <class Pred>
bool eventually(Pred pred, std::chrono::nanoseconds bound = kPatience) {
  auto until = std::chrono::steady_clock::now() + bound;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > until) return pred();
    std::this_thread::sleep_for(200us);
  }
  return true;
}

}  // namespace kairos_test
