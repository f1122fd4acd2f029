// patience.hpp: how long a kairos test waits for something a correct scheduler does at once,
// and the two ways it waits: a Gate a task blocks on, and eventually(pred) for the test itself.
// kPatience is an upper bound only: a correct scheduler never gets near it, so reaching it
// means the behaviour is missing (the test fails instead of hanging). No test sleeps to make
// something happen; a test that must end whatever happens arms a Watchdog (kHangLimit).
#pragma once
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

namespace kairos_test {

// Longest a correct scheduler may take to do something "at once" on a loaded machine (two
// shared cores, a sanitizer build, other builds running beside the tests).
inline constexpr std::chrono::seconds kPatience{30};

// Longest a whole test may take before its Watchdog calls it a hang: room for several waits of
// kPatience each.
inline constexpr std::chrono::seconds kHangLimit = 4 * kPatience;

// Polls pred until it holds or `bound` (real time) passes; true iff it held.
template <class Pred>
bool eventually(Pred pred, std::chrono::nanoseconds bound = kPatience) {
  auto until = std::chrono::steady_clock::now() + bound;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > until) return pred();
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return true;
}

// A task blocks on it until the test opens it. Owned by the test; open() and wait() may be
// called from any thread (the mutex orders open_ for both).
class Gate {
 public:
  void open() {
    {
      std::lock_guard lock(mu_);
      open_ = true;
    }
    cv_.notify_all();
  }
  // true once open; false if `bound` passed first (then the test fails instead of hanging)
  bool wait(std::chrono::nanoseconds bound = kPatience) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, bound, [&] { return open_; });
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

// Aborts the process with a message if not disarmed (destroyed) within `limit`: a deadlock in
// kairos becomes a test failure with a reason instead of a ctest timeout.
class Watchdog {
 public:
  Watchdog(std::string what, std::chrono::nanoseconds limit) : what_(std::move(what)) {
    thread_ = std::thread([this, limit] {
      std::unique_lock lock(mu_);
      if (!cv_.wait_for(lock, limit, [&] { return done_; })) {
        std::fprintf(stderr, "\nWATCHDOG: %s did not finish within %.1f s: kairos hangs\n",
                     what_.c_str(), std::chrono::duration<double>(limit).count());
        std::fflush(stderr);
        std::_Exit(3);
      }
    });
  }
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;
  ~Watchdog() {
    {
      std::lock_guard lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  std::string what_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

}  // namespace kairos_test
