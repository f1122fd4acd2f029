// w4_periodic.hpp, W4 of docs/workloads.md: jitter of fixed-rate tasks.
//   producer --schedule_at_fixed_rate(task k, 1 ms, 1 ms), k < 16--> System, for 5 s
// Run n of task k is due at t0_k + initial + n * period, t0_k read just before its schedule call.
// Each task is cancelled 50 ms after its run `runs - 1` was due; only runs n < runs are counted
// (runs = duration / period), so a system that skips runs instead of catching up shows
// runs_per_task_min < runs. Lateness percentiles are over all counted runs of all tasks.
#pragma once
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "result.hpp"
#include "system.hpp"

namespace kairos::perf {

struct W4Params {
  unsigned tasks = 16;
  std::int64_t period_ns = 1'000'000;
  std::int64_t initial_delay_ns = 1'000'000;
  std::int64_t duration_ns = 5'000'000'000;
  std::int64_t grace_ns = 50'000'000;  // the cancel comes this long after the last counted run
};

// One periodic task's record: run n stores its start into starts[n]. Runs of one task never
// overlap and each happens-before the next, so `runs` is written by one run at a time.
struct PeriodicRecord {
  explicit PeriodicRecord(std::size_t capacity)
      : starts(new std::atomic<std::int64_t>[capacity]), cap(capacity) {}
  std::unique_ptr<std::atomic<std::int64_t>[]> starts;
  std::size_t cap;
  std::atomic<std::size_t> runs{0};
  std::int64_t t0 = 0;
  void record() noexcept {
    std::int64_t t = now_ns();
    std::size_t n = runs.load(std::memory_order_relaxed);
    if (n < cap) starts[n].store(t, std::memory_order_relaxed);
    runs.store(n + 1, std::memory_order_release);
  }
};

template <class System>
RunResult run_w4(System& sys, const SystemConfig& cfg, const W4Params& p, const Progress& progress) {
  RunResult r;
  const std::size_t runs = static_cast<std::size_t>(p.duration_ns / p.period_ns);
  r.param("tasks", static_cast<std::int64_t>(p.tasks));
  r.param("period_ns", p.period_ns);
  r.param("initial_delay_ns", p.initial_delay_ns);
  r.param("duration_ns", p.duration_ns);
  r.param("expected_runs_per_task", static_cast<std::int64_t>(runs));
  if (cfg.producer_cpu >= 0) pin_this_thread(cfg.producer_cpu);

  const std::size_t cap = runs + static_cast<std::size_t>(2 * p.grace_ns / p.period_ns) + 16;
  std::vector<std::unique_ptr<PeriodicRecord>> recs;
  for (unsigned k = 0; k < p.tasks; ++k) recs.push_back(std::make_unique<PeriodicRecord>(cap));
  std::vector<typename System::Handle> handles(p.tasks);

  for (unsigned k = 0; k < p.tasks; ++k) {
    PeriodicRecord* rec = recs[k].get();
    rec->t0 = now_ns();
    handles[k] = sys.schedule_at_fixed_rate([rec] { rec->record(); }, p.initial_delay_ns, p.period_ns);
  }
  for (unsigned k = 0; k < p.tasks; ++k) {
    std::int64_t last_due = recs[k]->t0 + p.initial_delay_ns + static_cast<std::int64_t>(runs - 1) * p.period_ns;
    std::int64_t cancel_at = last_due + p.grace_ns;
    while (now_ns() < cancel_at) {
      sleep_until_ns(std::min(cancel_at, now_ns() + 250'000'000));
      if (progress) progress(static_cast<std::uint64_t>(std::max<std::int64_t>(0, now_ns() - recs[0]->t0)),
                             static_cast<std::uint64_t>(p.duration_ns + p.grace_ns));
    }
    System::cancel(handles[k]);
  }
  sys.drain(std::chrono::seconds(5));
  sleep_until_ns(now_ns() + 2 * p.period_ns);  // a run that had started before its cancel ends

  std::vector<std::int64_t> late;
  late.reserve(p.tasks * runs);
  std::size_t min_runs = runs, max_runs = 0, total_runs = 0;
  for (auto& rec : recs) {
    std::size_t n = std::min(rec->runs.load(std::memory_order_acquire), rec->cap);
    std::size_t counted = 0;
    for (std::size_t i = 0; i < n && i < runs; ++i) {
      std::int64_t due = rec->t0 + p.initial_delay_ns + static_cast<std::int64_t>(i) * p.period_ns;
      late.push_back(rec->starts[i].load(std::memory_order_relaxed) - due);
      ++counted;
    }
    min_runs = std::min(min_runs, counted);
    max_runs = std::max(max_runs, counted);
    total_runs += counted;
  }
  add_percentiles(r, late, true);
  r.figure("runs_per_task", static_cast<double>(total_runs) / p.tasks);
  r.figure("runs_per_task_min", static_cast<std::int64_t>(min_runs));
  r.figure("runs_per_task_max", static_cast<std::int64_t>(max_runs));
  r.figure("missed_runs", static_cast<std::int64_t>(p.tasks * runs - total_runs));
  return r;
}

}  // namespace kairos::perf
