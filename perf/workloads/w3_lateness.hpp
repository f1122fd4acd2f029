// w3_lateness.hpp, W3 of docs/workloads.md: how precisely one-shot timers fire.
//   producer --open loop, one submission every 50 us by the clock--> System
//   delays uniform in [100 us, 10 ms] from a fixed seed (SplitMix64, the same in LatHarness.java)
// The producer sleeps until each submission's slot on an absolute clock (it never sleeps "a fixed
// amount", so a late wake-up does not shift the following slots), then takes t0 = now() and
// schedules. Lateness = start - (t0 + delay); negative values are early fires, counted apart.
//
// run_w3_kernel_floor() is the same shape with the kernel as the scheduler: a pool of threads,
// each timer a clock_nanosleep(TIMER_ABSTIME) with 1 ns timer slack. It is what a sleeping
// scheduler cannot beat: the kernel's own wake-up latency at this timer rate.
#pragma once
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "result.hpp"
#include "start_slots.hpp"
#include "system.hpp"

namespace kairos::perf {

struct W3Params {
  std::size_t count = 200'000;
  std::int64_t interval_ns = 50'000;  // 20,000 submissions/s
  std::int64_t min_delay_ns = 100'000;
  std::int64_t max_delay_ns = 10'000'000;
  std::uint64_t seed = 42;
  unsigned kernel_threads = 256;  // run_w3_kernel_floor only: sleepers in flight at most
};

inline void add_w3_params(RunResult& r, const W3Params& p) {
  r.param("count", static_cast<std::int64_t>(p.count));
  r.param("interval_ns", p.interval_ns);
  r.param("min_delay_ns", p.min_delay_ns);
  r.param("max_delay_ns", p.max_delay_ns);
  r.param("seed", static_cast<std::int64_t>(p.seed));
}

// Lateness figures from the start slots and intended deadlines; `lag` is how late each
// submission left the producer relative to its pacing slot.
inline void add_w3_figures(RunResult& r, const StartSlots& starts,
                           const std::vector<std::int64_t>& deadlines, std::vector<std::int64_t>& lag,
                           std::size_t missing, std::int64_t first_slot, std::int64_t last_submit) {
  std::vector<std::int64_t> late;
  late.reserve(deadlines.size());
  for (std::size_t i = 0; i < deadlines.size(); ++i)
    if (starts.value(i) != StartSlots::kUnset) late.push_back(starts.value(i) - deadlines[i]);
  add_percentiles(r, late, true);
  r.figure("missing", static_cast<std::int64_t>(missing));
  std::sort(lag.begin(), lag.end());
  r.figure("pacing_lag_p99_ns", nearest_rank(lag, 99.0));
  r.figure("pacing_lag_max_ns", lag.empty() ? std::int64_t{0} : lag.back());
  double secs = static_cast<double>(last_submit - first_slot) * 1e-9;
  r.figure("submissions_per_s", secs > 0 ? static_cast<double>(deadlines.size()) / secs : 0.0);
}

template <class System>
RunResult run_w3(System& sys, const SystemConfig& cfg, const W3Params& p, const Progress& progress) {
  RunResult r;
  add_w3_params(r, p);
  if (cfg.producer_cpu >= 0) pin_this_thread(cfg.producer_cpu);
  std::vector<std::int64_t> delays = seeded_delays(p.count, p.min_delay_ns, p.max_delay_ns, p.seed);
  std::vector<std::int64_t> deadlines(p.count), lag(p.count);
  StartSlots starts(p.count);

  std::int64_t first_slot = now_ns() + 1'000'000;
  std::int64_t last_submit = first_slot;
  for (std::size_t i = 0; i < p.count; ++i) {
    std::int64_t slot_time = first_slot + static_cast<std::int64_t>(i) * p.interval_ns;
    sleep_until_ns(slot_time);
    auto* slot = starts.at(i);
    std::int64_t t0 = now_ns();
    sys.schedule([slot] { slot->store(now_ns(), std::memory_order_release); }, delays[i]);
    deadlines[i] = t0 + delays[i];
    lag[i] = t0 - slot_time;
    last_submit = t0;
    if ((i & 4095) == 0 && progress) progress(i, p.count);
  }
  std::size_t missing = starts.wait_all(now_ns() + p.max_delay_ns + 5'000'000'000, 1'000'000,
                                        [](std::size_t) {});
  add_w3_figures(r, starts, deadlines, lag, missing, first_slot, last_submit);
  if constexpr (requires { sys.add_figures(r); }) sys.add_figures(r);  // e.g. the leader's CPU time
  return r;
}

inline RunResult run_w3_kernel_floor(const W3Params& p, const Progress& progress) {
  RunResult r;
  add_w3_params(r, p);
  std::vector<std::int64_t> delays = seeded_delays(p.count, p.min_delay_ns, p.max_delay_ns, p.seed);
  std::vector<std::int64_t> deadlines(p.count), lag(p.count);
  StartSlots starts(p.count);
  std::atomic<std::size_t> next{0};
  std::atomic<std::int64_t> last_submit{0};  // t0 of the last submission
  std::int64_t first_slot = now_ns() + 20'000'000;  // after every sleeper has started

  std::vector<std::thread> sleepers;
  for (unsigned k = 0; k < p.kernel_threads; ++k) {
    sleepers.emplace_back([&] {
      set_timer_slack_ns(1);
      for (;;) {
        std::size_t i = next.fetch_add(1, std::memory_order_relaxed);
        if (i >= p.count) return;
        std::int64_t slot_time = first_slot + static_cast<std::int64_t>(i) * p.interval_ns;
        sleep_until_ns(slot_time);
        std::int64_t t0 = now_ns();
        deadlines[i] = t0 + delays[i];
        lag[i] = t0 - slot_time;
        sleep_until_ns(deadlines[i]);
        starts.at(i)->store(now_ns(), std::memory_order_release);
        std::int64_t prev = last_submit.load(std::memory_order_relaxed);
        while (prev < t0 && !last_submit.compare_exchange_weak(prev, t0, std::memory_order_relaxed)) {
        }
      }
    });
  }
  while (next.load(std::memory_order_relaxed) < p.count) {  // progress from this thread only
    sleep_until_ns(now_ns() + 200'000'000);
    if (progress) progress(std::min(next.load(std::memory_order_relaxed), p.count), p.count);
  }
  for (auto& t : sleepers) t.join();
  add_w3_figures(r, starts, deadlines, lag, 0, first_slot, last_submit.load());
  return r;
}

}  // namespace kairos::perf
