// kairos_system.hpp: KairosSystem, kairos::Scheduler behind the workload adapter (system.hpp).
// Config: wait sleep | spin | hybrid(spin_window_ns) | adaptive (its defaults), shards, threads
//         per shard, cpus; every other option is kairos's default (remove_on_cancel as the
//         workload asks; record_lateness off with kairos-lat --no-lateness).
// add_figures(): what the scheduler's threads cost, for workloads that report it (W3):
//   leader_cpu_ms   on-CPU time of the scheduler's threads (named "lat-<shard>-<n>"), summed, from
//                   /proc/self/task/<tid>/schedstat (ns; utime + stime from .../stat if absent).
//                   With one thread per shard that thread is the leader; the task bodies it runs
//                   are a store each.
//   spin_window_ns, wake_overshoot_ns   stats().total(): the widest shard's window and estimate.
#pragma once
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

#include <kairos/kairos.hpp>

#include "result.hpp"
#include "system.hpp"

namespace kairos::perf {

class KairosSystem {
 public:
  using Handle = kairos::ScheduledFuture<void>;
  static constexpr bool kAbsoluteDeadlines = true;

  explicit KairosSystem(const SystemConfig& c) : sched_(options(c)) {}

  template <class F>
  Handle schedule(F&& f, std::int64_t delay_ns) {
    return sched_.schedule(std::forward<F>(f), std::chrono::nanoseconds(delay_ns));
  }
  template <class F>
  Handle schedule_at(F&& f, std::int64_t deadline_ns) {
    return sched_.schedule_at(std::forward<F>(f),
                              kairos::SteadyClock::time_point(std::chrono::nanoseconds(deadline_ns)));
  }
  template <class F>
  Handle schedule_at_fixed_rate(F&& f, std::int64_t initial_delay_ns, std::int64_t period_ns) {
    return sched_.schedule_at_fixed_rate(std::forward<F>(f), std::chrono::nanoseconds(initial_delay_ns),
                                         std::chrono::nanoseconds(period_ns));
  }
  template <class F>
  void execute(F&& f) {
    sched_.execute(std::forward<F>(f));
  }
  // W1 --w1-post: a delayed task with no handle (execute_after).
  template <class F>
  void post(F&& f, std::int64_t delay_ns) {
    sched_.execute_after(std::forward<F>(f), std::chrono::nanoseconds(delay_ns));
  }
  template <class F>
  Handle submit(F&& f) {
    return sched_.submit(std::forward<F>(f));
  }
  static bool cancel(Handle& h) { return h.cancel(); }
  std::size_t queue_size() { return sched_.queue_size(); }
  bool drain(std::chrono::nanoseconds timeout) { return sched_.wait_idle(timeout); }

  kairos::Scheduler& scheduler() noexcept { return sched_; }

  // The scheduler's threads' on-CPU time so far (W2 and W2b: the leader's share of the loop).
  std::int64_t scheduler_cpu_ns() { return threads_cpu_ns(kName); }

  // Far timers given their deadline by the leader so far (ShardStats::far_timers; W2, W2b).
  std::uint64_t far_timers_stamped() { return sched_.stats().total().far_timers; }

  void add_figures(RunResult& r) {
    r.figure("leader_cpu_ms", static_cast<double>(threads_cpu_ns(kName)) * 1e-6);
    kairos::ShardStats t = sched_.stats().total();
    r.figure("spin_window_ns", t.spin_window_ns);
    r.figure("wake_overshoot_ns", t.wake_overshoot_ns);
  }

  // On-CPU nanoseconds of this process's threads whose name starts with `name` + "-".
  static std::int64_t threads_cpu_ns(const std::string& name) {
    std::int64_t sum = 0;
    std::error_code ec;
    for (const auto& task : std::filesystem::directory_iterator("/proc/self/task", ec)) {
      std::string comm;
      std::getline(std::ifstream(task.path() / "comm"), comm);
      if (comm.rfind(name + "-", 0) != 0) continue;
      std::int64_t ns = -1;
      if (std::ifstream ss(task.path() / "schedstat"); ss >> ns) {
        sum += ns;
        continue;
      }
      std::string stat;
      std::getline(std::ifstream(task.path() / "stat"), stat);
      std::size_t close = stat.rfind(')');  // the name may hold spaces; fields follow it
      if (close == std::string::npos) continue;
      std::istringstream fields(stat.substr(close + 2));
      std::string f;
      std::int64_t utime = 0, stime = 0;
      for (int i = 3; fields >> f; ++i) {  // field 3 is the state; 14 utime, 15 stime
        if (i == 14) utime = std::stoll(f);
        if (i == 15) {
          stime = std::stoll(f);
          break;
        }
      }
      sum += (utime + stime) * (1'000'000'000 / sysconf(_SC_CLK_TCK));
    }
    return sum;
  }

 private:
  static kairos::Options options(const SystemConfig& c) {
    kairos::Options o;
    o.shards = c.shards;
    o.threads_per_shard = c.threads;
    o.cpus = c.cpus;
    o.remove_on_cancel = c.remove_on_cancel;
    o.record_lateness = c.record_lateness;
    if (c.far_timer_slack_ns >= 0) o.far_timer_slack = std::chrono::nanoseconds(c.far_timer_slack_ns);
    if (c.wait == "sleep") o.wait = kairos::WaitPolicy::sleep();
    else if (c.wait == "spin") o.wait = kairos::WaitPolicy::spin();
    else if (c.wait == "hybrid") o.wait = kairos::WaitPolicy::hybrid(std::chrono::nanoseconds(c.spin_window_ns));
    else if (c.wait == "adaptive" && c.adaptive_percentile > 0)
      o.wait = kairos::WaitPolicy::adaptive(kairos::WaitPolicy::kAdaptiveFloor, kairos::WaitPolicy::kAdaptiveCeiling,
                                            c.adaptive_percentile);
    else if (c.wait == "adaptive") o.wait = kairos::WaitPolicy::adaptive();
    else if (c.wait == "fitted") o.wait = kairos::WaitPolicy::fitted();  // Options{}'s own
    else throw std::invalid_argument("kairos-lat: unknown wait mode '" + c.wait + "'");
    o.name = kName;
    return o;
  }

  static constexpr const char* kName = "lat";  // Options::name: its threads are lat-<shard>-<n>
  kairos::Scheduler sched_;
};

}  // namespace kairos::perf
