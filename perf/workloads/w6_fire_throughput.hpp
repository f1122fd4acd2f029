// w6_fire_throughput.hpp, W6 of docs/workloads.md: how fast due work is run.
//   producer --execute(task) x N, as fast as it can--> System
// tasks_per_s = N / (start of the last task to start - the first submit): the task bodies only
// store their start time, so the last start is the last task's end to within one clock read.
// An inline system (kInline: poll mode) submits and runs on this one thread; its figure is then
// the whole cost of a task, submit to run, with no second core.
#pragma once
#include <algorithm>
#include <chrono>
#include <cstdint>

#include "result.hpp"
#include "start_slots.hpp"
#include "system.hpp"

namespace kairos::perf {

struct W6Params {
  std::size_t tasks = 1'000'000;
};

template <class System>
RunResult run_w6(System& sys, const SystemConfig& cfg, const W6Params& p, const Progress& progress) {
  RunResult r;
  r.param("tasks", static_cast<std::int64_t>(p.tasks));
  if (cfg.producer_cpu >= 0) pin_this_thread(cfg.producer_cpu);
  StartSlots starts(p.tasks);

  std::int64_t first = now_ns();
  for (std::size_t i = 0; i < p.tasks; ++i) {
    auto* slot = starts.at(i);
    sys.execute([slot] { slot->store(now_ns(), std::memory_order_release); });
  }
  std::int64_t submitted = now_ns();
  // An inline system (poll mode) runs its tasks on this thread: its loop polls here.
  if constexpr (requires { System::kInline; }) sys.run_inline(std::chrono::seconds(60));
  std::size_t missing = starts.wait_all(now_ns() + 60'000'000'000, 1'000'000, [&](std::size_t done) {
    if (progress) progress(done, p.tasks);
  });
  std::int64_t last = first;
  for (std::size_t i = 0; i < p.tasks; ++i) last = std::max(last, starts.value(i));

  double n = static_cast<double>(p.tasks - missing);
  r.figure("tasks_per_s", n / (static_cast<double>(last - first) * 1e-9));
  r.figure("submits_per_s", static_cast<double>(p.tasks) / (static_cast<double>(submitted - first) * 1e-9));
  r.figure("first_submit_to_last_start_ns", last - first);
  r.figure("missing", static_cast<std::int64_t>(missing));
  return r;
}

}  // namespace kairos::perf
