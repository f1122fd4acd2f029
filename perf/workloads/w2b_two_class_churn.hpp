// w2b_two_class_churn.hpp, W2b of docs/workloads.md: W2 with two delay classes, interleaved.
//   producer --schedule(i, even i: 100 ms, odd i: 10 s), cancel(i - 1024)--> System
//                                                                  (remove-on-cancel on)
// Why: W2 has one fixed delay, so its deadlines arrive in order; real timeout traffic mixes a few
// fixed delays (a request timeout and a session timeout), which interleave two rising streams.
// A scheduler that keeps only one of them in order pays for the other (kairos: a sorted run per
// delay class, core/src/timer_queue.hpp). W2's loop (run_churn in w2_timeout_churn.hpp), its
// figures, sized by the same iterations and window: pairs/s, one pair in every 64 timed (at a random
// position in each block of 64), and the pending count once every call has been applied (must be
// exactly `window`: the first short timeout left pending is due 100 ms after the loop, long after
// that count is read).
// Ending: the window still pending is cancelled before the slots the bodies write go away, and a
// 100 ms body that won against its cancel (a very slow run) is waited for.
#pragma once
#include <cstdint>
#include <vector>

#include "result.hpp"
#include "start_slots.hpp"
#include "system.hpp"
#include "w2_timeout_churn.hpp"

namespace kairos::perf {

struct W2bParams {
  std::size_t iterations = 1'000'000;
  std::size_t window = 1024;                    // task i - window is cancelled after task i is scheduled
  std::int64_t short_delay_ns = 100'000'000;     // even i: 100 ms
  std::int64_t long_delay_ns = 10'000'000'000;   // odd i: 10 s
  std::size_t sample_every = 64;

  // W2b sized as W2 (kairos-lat's --w2-iterations and --quick apply to both).
  static W2bParams sized_as(const W2Params& w2) {
    W2bParams p;
    p.iterations = w2.iterations;
    p.window = w2.window;
    p.sample_every = w2.sample_every;
    return p;
  }
};

template <class System>
RunResult run_w2b(System& sys, const SystemConfig& cfg, const W2bParams& p) {
  RunResult r;
  r.param("iterations", static_cast<std::int64_t>(p.iterations));
  r.param("window", static_cast<std::int64_t>(p.window));
  r.param("short_delay_ns", p.short_delay_ns);
  r.param("long_delay_ns", p.long_delay_ns);
  r.param("remove_on_cancel", std::int64_t{1});
  if (cfg.producer_cpu >= 0) pin_this_thread(cfg.producer_cpu);

  StartSlots sink(p.window);
  std::vector<typename System::Handle> ring(p.window);
  const std::int64_t delays[2] = {p.short_delay_ns, p.long_delay_ns};
  run_churn(sys, p.iterations, p.sample_every, [&](std::size_t i) { return delays[i & 1]; }, sink, ring, r);

  // Nothing may write to `sink` once it is gone: cancel what is left, wait for a body that won.
  const std::size_t left = p.iterations < p.window ? p.iterations : p.window;
  std::vector<std::size_t> running;
  for (std::size_t k = 0; k < left; ++k)
    if (!System::cancel(ring[k])) running.push_back(k);
  const std::int64_t give_up = now_ns() + 30'000'000'000;
  for (std::size_t k : running)
    while (sink.value(k) == StartSlots::kUnset && now_ns() < give_up) sleep_until_ns(now_ns() + 100'000);
  r.figure("fired_before_cleanup", static_cast<std::int64_t>(running.size()));
  return r;
}

}  // namespace kairos::perf
