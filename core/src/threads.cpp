// threads.cpp: the OS calls kairos makes: futex waits, clock reads, thread names, affinity,
// timer slack.
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <fstream>
#include <string>

#include <kairos/detail/futex.hpp>
#include <kairos/detail/steady_clock.hpp>

#include "threads.hpp"

namespace kairos::detail {

// The kernel keeps CLOCK_MONOTONIC with the TSC only when it found the counter constant and
// synchronised across CPUs (batch_clock.hpp relies on that). Read once; false if unreadable.
bool tsc_is_clocksource() noexcept {
  static const bool tsc = [] {
    try {
      std::ifstream f("/sys/devices/system/clocksource/clocksource0/current_clocksource");
      std::string name;
      return static_cast<bool>(f >> name) && name == "tsc";
    } catch (...) {
      return false;
    }
  }();
  return tsc;
}

bool futex_wait(std::atomic<std::uint32_t>* word, std::uint32_t expected, std::int64_t deadline_ns) noexcept {
  static_assert(sizeof(std::atomic<std::uint32_t>) == sizeof(std::uint32_t));
  timespec ts{};
  timespec* tsp = nullptr;
  if (deadline_ns >= 0) {
    ts.tv_sec = deadline_ns / 1'000'000'000;
    ts.tv_nsec = deadline_ns % 1'000'000'000;
    tsp = &ts;
  }
  // FUTEX_WAIT_BITSET takes an absolute CLOCK_MONOTONIC deadline: no drift from re-computing a
  // relative timeout, and the thread's 1 ns timer slack applies.
  long r = syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(word), FUTEX_WAIT_BITSET_PRIVATE, expected, tsp,
                   nullptr, FUTEX_BITSET_MATCH_ANY);
  if (r == -1 && errno == ETIMEDOUT) return false;
  return true;
}

void futex_wake_all(std::atomic<std::uint32_t>* word) noexcept {
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(word), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
}

void set_current_thread_name(const std::string& name) noexcept {
  std::string cut = name.substr(0, 15);  // Linux keeps 15 characters
  pthread_setname_np(pthread_self(), cut.c_str());
}

bool pin_current_thread(int cpu) noexcept {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0;
}

void set_timer_slack_1ns() noexcept { prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0); }

}  // namespace kairos::detail
