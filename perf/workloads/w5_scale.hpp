// w5_scale.hpp, W5 of docs/workloads.md: memory and cost per pending timer.
//   one thread --schedule x N, delays uniform in [1 h, 2 h]--> System, then --cancel x N-->
// The handle array is allocated and touched before the first RSS reading, so bytes_per_timer
// = (RSS after the inserts - RSS before) / N is the system's own memory per pending timer.
// inserts_per_s and cancels_per_s are the producer's call rates; *_applied_per_s also wait
// until the system has applied every call (drain), which matters for systems that hand the
// work to another thread.
#pragma once
#include <cstdint>
#include <vector>

#include "result.hpp"
#include "start_slots.hpp"
#include "system.hpp"

namespace kairos::perf {

struct W5Params {
  std::size_t timers = 1'000'000;
  std::int64_t min_delay_ns = 3'600'000'000'000;  // 1 h
  std::int64_t max_delay_ns = 7'200'000'000'000;  // 2 h
  std::uint64_t seed = 5;
};

template <class System>
RunResult run_w5(System& sys, const SystemConfig& cfg, const W5Params& p, const Progress& progress) {
  RunResult r;
  r.param("timers", static_cast<std::int64_t>(p.timers));
  r.param("min_delay_ns", p.min_delay_ns);
  r.param("max_delay_ns", p.max_delay_ns);
  r.param("seed", static_cast<std::int64_t>(p.seed));
  r.param("remove_on_cancel", std::int64_t{1});
  if (cfg.producer_cpu >= 0) pin_this_thread(cfg.producer_cpu);

  std::vector<std::int64_t> delays = seeded_delays(p.timers, p.min_delay_ns, p.max_delay_ns, p.seed);
  std::vector<typename System::Handle> handles(p.timers);  // constructed, so its pages are resident
  StartSlots sink(1024);
  const double n = static_cast<double>(p.timers);

  sys.drain(std::chrono::seconds(5));
  std::int64_t rss_before = resident_bytes();
  std::int64_t t_start = now_ns();
  for (std::size_t i = 0; i < p.timers; ++i) {
    auto* slot = sink.at(i & 1023);
    handles[i] = sys.schedule([slot] { slot->store(now_ns(), std::memory_order_release); }, delays[i]);
    if ((i & 65535) == 0 && progress) progress(i, 2 * p.timers);
  }
  std::int64_t t_inserted = now_ns();
  bool drained = sys.drain(std::chrono::seconds(120));
  std::int64_t t_applied = now_ns();
  std::int64_t rss_after = resident_bytes();
  std::size_t pending = sys.queue_size();

  std::size_t cancelled = 0;
  std::int64_t c_start = now_ns();
  for (std::size_t i = 0; i < p.timers; ++i) {
    cancelled += System::cancel(handles[i]);
    if ((i & 65535) == 0 && progress) progress(p.timers + i, 2 * p.timers);
  }
  std::int64_t c_end = now_ns();
  drained = sys.drain(std::chrono::seconds(120)) && drained;
  std::int64_t c_applied = now_ns();

  r.figure("inserts_per_s", n / (static_cast<double>(t_inserted - t_start) * 1e-9));
  r.figure("inserts_applied_per_s", n / (static_cast<double>(t_applied - t_start) * 1e-9));
  r.figure("bytes_per_timer", static_cast<double>(rss_after - rss_before) / n);
  r.figure("rss_growth_bytes", rss_after - rss_before);
  r.figure("pending_after_inserts", static_cast<std::int64_t>(pending));
  r.figure("cancels_per_s", n / (static_cast<double>(c_end - c_start) * 1e-9));
  r.figure("cancels_applied_per_s", n / (static_cast<double>(c_applied - c_start) * 1e-9));
  r.figure("cancels_won", static_cast<std::int64_t>(cancelled));
  r.figure("pending_at_end", static_cast<std::int64_t>(sys.queue_size()));
  r.figure("drained", static_cast<std::int64_t>(drained));
  return r;
}

}  // namespace kairos::perf
