// w9_loop_wakeup.hpp, W9 of docs/workloads.md: cross-thread timeouts into a sleeping loop.
//   submitter (the workload's thread) --timeout i, delay d_i--> System (its loop sleeps when idle)
// One thread submits `count` timeouts open loop, at seeded random gaps (uniform in
// [0, 2 * mean_gap], so the loop is idle between them) with seeded random delays (uniform in
// [min_delay, max_delay]); many are earlier than every timeout already pending, so a loop asleep
// until its earliest deadline must be woken for them. Each timeout's body stores its start time
// into its own slot. Lateness = start - (t0 + d_i), t0 = now just before the schedule call;
// negative is an early fire. Reported: lateness p50..max, early fires, missing (never fired), how
// many submissions were earlier than every pending one (`earlier_than_pending`), and for a
// system that counts them (loop_wakes(): kairos-loop) the wakes signalled and wakes per
// submission, and (wake_fd_seen(), with the wake fd registered) the loop's iterations woken by a
// readable wake fd per wake signalled: about 1; above 2 (`iterations_per_wake`) the loop came
// round on a fd nobody read back, a broken rule (kairos-lat exits 1).
#pragma once
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <queue>
#include <vector>

#include "result.hpp"
#include "system.hpp"

namespace kairos::perf {

struct W9Params {
  std::size_t count = 5'000;
  std::int64_t mean_gap_ns = 1'000'000;  // one submission per ms on average
  std::int64_t min_delay_ns = 100'000;   // 100 us
  std::int64_t max_delay_ns = 20'000'000;  // 20 ms
  std::uint64_t seed = 9;
};

template <class System>
RunResult run_w9(System& sys, const SystemConfig& cfg, const W9Params& p) {
  RunResult r;
  r.param("count", static_cast<std::int64_t>(p.count));
  r.param("mean_gap_ns", p.mean_gap_ns);
  r.param("min_delay_ns", p.min_delay_ns);
  r.param("max_delay_ns", p.max_delay_ns);
  r.param("seed", static_cast<std::int64_t>(p.seed));
  if (cfg.producer_cpu >= 0) pin_this_thread(cfg.producer_cpu);

  std::vector<std::int64_t> delays = seeded_delays(p.count, p.min_delay_ns, p.max_delay_ns, p.seed);
  std::vector<std::int64_t> gaps = seeded_delays(p.count, 0, 2 * p.mean_gap_ns, p.seed + 1);
  auto fired = std::make_unique<std::atomic<std::int64_t>[]>(p.count);
  for (std::size_t i = 0; i < p.count; ++i) fired[i].store(0, std::memory_order_relaxed);
  std::vector<std::int64_t> intended(p.count);
  std::vector<typename System::Handle> handles(p.count);
  // The deadlines still pending as the submitter sees them (intended, not yet passed).
  std::priority_queue<std::int64_t, std::vector<std::int64_t>, std::greater<>> pending;
  std::int64_t earlier = 0;

  std::uint64_t wakes_before = 0, seen_before = 0;
  if constexpr (requires { sys.loop_wakes(); }) wakes_before = sys.loop_wakes();
  if constexpr (requires { sys.wake_fd_seen(); }) seen_before = sys.wake_fd_seen();
  std::int64_t next = now_ns();
  for (std::size_t i = 0; i < p.count; ++i) {
    next += gaps[i];
    sleep_until_ns(next);  // the submitter idles too: the loop is asleep when it submits
    std::atomic<std::int64_t>* slot = &fired[i];
    std::int64_t t0 = now_ns();
    handles[i] = sys.schedule([slot] { slot->store(now_ns(), std::memory_order_release); }, delays[i]);
    intended[i] = t0 + delays[i];
    while (!pending.empty() && pending.top() <= t0) pending.pop();
    if (pending.empty() || intended[i] < pending.top()) ++earlier;
    pending.push(intended[i]);
  }
  std::int64_t last = 0;
  for (std::int64_t t : intended) last = std::max(last, t);
  sleep_until_ns(last + 200'000'000);
  std::uint64_t wakes = 0;
  if constexpr (requires { sys.loop_wakes(); }) wakes = sys.loop_wakes() - wakes_before;

  std::vector<std::int64_t> lateness;
  lateness.reserve(p.count);
  std::int64_t missing = 0;
  for (std::size_t i = 0; i < p.count; ++i) {
    std::int64_t at = fired[i].load(std::memory_order_acquire);
    if (at == 0) ++missing;
    else lateness.push_back(at - intended[i]);
  }
  add_percentiles(r, lateness, true);
  r.figure("missing", missing);
  r.figure("earlier_than_pending", earlier);
  if constexpr (requires { sys.loop_wakes(); }) {
    r.figure("wakes", static_cast<std::int64_t>(wakes));
    r.figure("wakes_per_submission", static_cast<double>(wakes) / static_cast<double>(p.count));
  }
  if constexpr (requires { sys.wake_fd_seen(); }) {
    if (sys.listens_to_wakes()) {
      const std::uint64_t seen = sys.wake_fd_seen() - seen_before;
      r.figure("wake_fd_iterations", static_cast<std::int64_t>(seen));
      r.figure("iterations_per_wake", wakes == 0 ? 0.0 : static_cast<double>(seen) / static_cast<double>(wakes));
    }
  }
  for (auto& h : handles) System::cancel(h);
  return r;
}

}  // namespace kairos::perf
