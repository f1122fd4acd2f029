// support.hpp: small pieces shared by the semantic tests of kairos.
// Gate:       a task blocks on it until the test opens it (real time bounded, never hangs).
// Recorder:   an ordered log of ids written by task bodies, read by the test.
// eventually: polls a predicate until it holds or a generous real-time bound passes.
// Real-time bounds here are only upper limits a correct scheduler never gets near; no test
// sleeps to make something happen.
#pragma once
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include <kairos/kairos.hpp>

namespace kairos_test {

using namespace std::chrono_literals;
using ManualScheduler = kairos::BasicScheduler<kairos::ManualClock>;

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
