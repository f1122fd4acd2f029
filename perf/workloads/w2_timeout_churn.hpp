// w2_timeout_churn.hpp, W2 of docs/workloads.md: the order-timeout pattern, almost every timer cancelled.
//   producer --schedule(i, 10 s), cancel(i - 1024)--> System      (remove-on-cancel on)
// Reports schedule+cancel pairs/s, the latency of one pair in every 64 (at a random position in
// each block of 64, see SampleClock in result.hpp), and the pending count once every call has
// been applied (must be exactly `window`); on kairos also leader_cpu_ms, the scheduler's
// threads' on-CPU time during the loop (/proc, read outside it), and far_timers_stamped.
#pragma once
#include <cstdint>
#include <vector>

#include "result.hpp"
#include "start_slots.hpp"
#include "system.hpp"

namespace kairos::perf {

struct W2Params {
  std::size_t iterations = 1'000'000;
  std::size_t window = 1024;            // task i - window is cancelled after task i is scheduled
  std::int64_t delay_ns = 10'000'000'000;  // 10 s
  std::size_t sample_every = 64;
};

// The loop W2 and W2b share: task i is scheduled with delay_of(i) into ring[i % window], then
// task i - window (the slot's previous handle) is cancelled. Writes pairs_per_s, ns_per_pair, the
// sampled pair latencies, cancels_won, drained and pending_at_end into r. The bodies write into
// sink (window slots).
template <class System, class DelayOf>
void run_churn(System& sys, std::size_t iterations, std::size_t sample_every, DelayOf&& delay_of, StartSlots& sink,
               std::vector<typename System::Handle>& ring, RunResult& r) {
  const std::size_t window = ring.size();
  std::vector<std::int64_t> samples;
  samples.reserve(iterations / sample_every + 1);
  std::size_t cancelled = 0;

  SampleClock sampled(sample_every, 7);
  std::int64_t cpu_before = 0;  // the scheduler's threads (kairos): their share of the loop, below
  if constexpr (requires { sys.scheduler_cpu_ns(); }) cpu_before = sys.scheduler_cpu_ns();
  std::int64_t start = now_ns();
  for (std::size_t i = 0; i < iterations; ++i) {
    std::size_t k = i % window;
    auto* slot = sink.at(k);
    auto body = [slot] { slot->store(now_ns(), std::memory_order_release); };
    if (sampled(i)) {
      std::int64_t a = now_ns();
      auto h = sys.schedule(body, delay_of(i));
      if (i >= window) cancelled += System::cancel(ring[k]);
      ring[k] = std::move(h);
      samples.push_back(now_ns() - a);
    } else {
      auto h = sys.schedule(body, delay_of(i));
      if (i >= window) cancelled += System::cancel(ring[k]);
      ring[k] = std::move(h);
    }
  }
  std::int64_t end = now_ns();
  if constexpr (requires { sys.scheduler_cpu_ns(); })
    r.figure("leader_cpu_ms", static_cast<double>(sys.scheduler_cpu_ns() - cpu_before) * 1e-6);
  // kairos: the far timers its leader gave a deadline, i.e. read before their cancel (taken in or
  // held back), the last `window` pending ones included: a leader that chases the producer reads
  // nearly every timeout first (docs/design.md, "Far timers").
  if constexpr (requires { sys.far_timers_stamped(); })
    r.figure("far_timers_stamped", static_cast<std::int64_t>(sys.far_timers_stamped()));

  double secs = static_cast<double>(end - start) * 1e-9;
  r.figure("pairs_per_s", static_cast<double>(iterations) / secs);
  r.figure("ns_per_pair", static_cast<double>(end - start) / static_cast<double>(iterations));
  add_percentiles(r, samples, false);
  r.figure("cancels_won", static_cast<std::int64_t>(cancelled));
  bool drained = sys.drain(std::chrono::seconds(30));
  r.figure("drained", static_cast<std::int64_t>(drained));
  r.figure("pending_at_end", static_cast<std::int64_t>(sys.queue_size()));
}

template <class System>
RunResult run_w2(System& sys, const SystemConfig& cfg, const W2Params& p) {
  RunResult r;
  r.param("iterations", static_cast<std::int64_t>(p.iterations));
  r.param("window", static_cast<std::int64_t>(p.window));
  r.param("delay_ns", p.delay_ns);
  r.param("remove_on_cancel", std::int64_t{1});
  if (cfg.producer_cpu >= 0) pin_this_thread(cfg.producer_cpu);

  StartSlots sink(p.window);
  std::vector<typename System::Handle> ring(p.window);
  run_churn(sys, p.iterations, p.sample_every, [&](std::size_t) { return p.delay_ns; }, sink, ring, r);
  return r;
}

}  // namespace kairos::perf
