// system.hpp: what every workload of docs/workloads.md needs from a scheduler, and the clock it reads.
//
// A System is kairos or a peer behind one small adapter, so that W1..W7 are the same code for all:
//
//   class System {
//    public:
//     using Handle = ...;                       // default-constructible, movable, copyable
//     static constexpr bool kAbsoluteDeadlines; // false: schedule_at passes deadline - now()
//     explicit System(const SystemConfig&);     // threads started, ready to schedule
//     template <class F> Handle schedule(F&& f, std::int64_t delay_ns);
//     template <class F> Handle schedule_at(F&& f, std::int64_t deadline_ns);  // steady clock
//     template <class F> Handle schedule_at_fixed_rate(F&& f, std::int64_t initial_delay_ns,
//                                                      std::int64_t period_ns);
//     template <class F> void execute(F&& f);   // as soon as possible, no handle
//     template <class F> void post(F&& f, std::int64_t delay_ns);  // optional: a delayed task with
//                                               // no handle (W1 --w1-post); without it, schedule
//     static bool cancel(Handle&);              // true iff it was still pending
//     std::size_t queue_size();                 // pending timers (racy while producers run)
//     bool drain(std::chrono::nanoseconds);     // every submission and cancel that returned
//                                               // before the call has been applied
//   };
//
// Clock: every timestamp is std::chrono::steady_clock (CLOCK_MONOTONIC) in nanoseconds, the clock
//        Java's System.nanoTime() reads too, so lateness means the same for every system.
#pragma once
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include <pthread.h>
#include <sched.h>
#include <sys/prctl.h>
#include <time.h>

namespace kairos::perf {

// How one system is configured for one run; recorded in every result.
struct SystemConfig {
  std::string system;                 // kairos-sleep, kairos-hybrid, kairos-spin, naive-stpe, asio
  std::string wait;                   // sleep | spin | hybrid (kairos); "" for peers
  std::int64_t spin_window_ns = 50'000;  // kairos hybrid only
  double adaptive_percentile = 0;     // kairos adaptive only; 0: WaitPolicy's default
  unsigned shards = 1;                // kairos shards; 1 for peers
  unsigned threads = 1;               // threads per shard (peers: worker threads)
  std::vector<int> cpus;              // scheduler thread i on cpus[i % size]; empty: not pinned
  int producer_cpu = -1;              // the workload's producer thread(s); -1: not pinned
  bool remove_on_cancel = false;      // W2 and W5 turn it on
  bool record_lateness = true;        // kairos: Options::record_lateness (kairos-lat --no-lateness)
  std::int64_t far_timer_slack_ns = -1;  // kairos: Options::far_timer_slack (-1: its default;
                                         // kairos-lat --far-timer-slack-us)
};

inline std::int64_t now_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Sleeps until an absolute steady-clock time (returns at once if it has passed).
inline void sleep_until_ns(std::int64_t deadline_ns) noexcept {
  timespec ts{static_cast<time_t>(deadline_ns / 1'000'000'000),
              static_cast<long>(deadline_ns % 1'000'000'000)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
  }
}

// Timer slack of the calling thread (Linux default 50 us): threads created later inherit it.
inline bool set_timer_slack_ns(unsigned long ns) noexcept {
  return prctl(PR_SET_TIMERSLACK, ns, 0, 0, 0) == 0;
}

// Pins the calling thread to one CPU; false if the CPU does not exist or the call failed.
inline bool pin_this_thread(int cpu) noexcept {
  if (cpu < 0) return false;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0;
}

}  // namespace kairos::perf
