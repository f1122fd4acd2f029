// stress_support.hpp: how long the stress, fault and soak tests of kairos run, which seed they
// use, a watchdog that turns a hang into a failure, and a gate tasks can block on.
//   KAIROS_STRESS_SECONDS  seconds per timed stress test (default 3; CI under sanitizers may
//                          shorten it, a long run may lengthen it). 0.5 is the floor.
//   KAIROS_STRESS_SEED     run one given seed instead of a fresh one (print on failure).
//   KAIROS_SOAK_SECONDS    seconds of the soak test (default 10).
#pragma once
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <random>
#include <string>
#include <thread>

namespace kairos_test {

inline double env_seconds(const char* name, double fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  double d = std::strtod(v, &end);
  if (end == v || !(d > 0)) return fallback;
  return d;
}

inline std::chrono::nanoseconds stress_budget(double default_seconds = 3.0) {
  double s = env_seconds("KAIROS_STRESS_SECONDS", default_seconds);
  if (s < 0.5) s = 0.5;
  return std::chrono::nanoseconds(static_cast<std::int64_t>(s * 1e9));
}

// The seed of a randomised test: KAIROS_STRESS_SEED if set, else fresh from the OS.
inline std::uint64_t stress_seed() {
  if (const char* v = std::getenv("KAIROS_STRESS_SEED"); v && *v) return std::strtoull(v, nullptr, 0);
  std::random_device rd;
  return (std::uint64_t{rd()} << 32) ^ rd();
}

inline bool sanitized_build() {
#if defined(KAIROS_SANITIZED)
  return true;
#elif defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  return true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
  return true;
#else
  return false;
#endif
#else
  return false;
#endif
}

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

// A task blocks on it until the test opens it; wait() gives up after a real-time bound a
// correct scheduler never gets near (then the test fails instead of hanging).
class Gate {
 public:
  void open() {
    {
      std::lock_guard lock(mu_);
      open_ = true;
    }
    cv_.notify_all();
  }
  bool wait(std::chrono::nanoseconds bound = std::chrono::seconds(30)) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, bound, [&] { return open_; });
  }
  bool is_open() {
    std::lock_guard lock(mu_);
    return open_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

// Polls pred until it holds or `bound` (real time) passes; true iff it held.
template <class Pred>
bool eventually(Pred pred, std::chrono::nanoseconds bound = std::chrono::seconds(30)) {
  auto until = std::chrono::steady_clock::now() + bound;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > until) return pred();
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return true;
}

}  // namespace kairos_test
