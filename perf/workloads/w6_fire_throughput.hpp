// w6_fire_throughput.hpp, W6 of docs/workloads.md: how fast due work is run.
//   producer --execute(task) x N, as fast as it can--> System
//   then the same with schedule(task, 0) (handle dropped) and with submit(task)
// tasks_per_s (execute; schedule0_ and submit_tasks_per_s likewise) = N / (start of the last task to start - the first submit): the task bodies only
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

// How each pass submits: execute() (no handle), schedule(f, 0) with the handle dropped at once,
// and submit(f) (a system without submit() is given schedule(f, 0)). Each pass runs `tasks`
// tasks on the same system, one after the other, in this order.
enum class W6Call { execute, schedule0, submit };

struct W6Pass {
  double tasks_per_s = 0;
  double submits_per_s = 0;
  std::int64_t first_to_last_ns = 0;
  std::size_t missing = 0;
};

template <class System>
W6Pass run_w6_pass(System& sys, W6Call call, std::size_t tasks, const Progress& progress) {
  StartSlots starts(tasks);
  std::int64_t first = now_ns();
  for (std::size_t i = 0; i < tasks; ++i) {
    auto* slot = starts.at(i);
    auto body = [slot] { slot->store(now_ns(), std::memory_order_release); };
    if (call == W6Call::execute) {
      sys.execute(body);
    } else if (call == W6Call::submit) {
      if constexpr (requires { sys.submit(body); }) (void)sys.submit(body);
      else (void)sys.schedule(body, 0);
    } else {
      (void)sys.schedule(body, 0);  // the handle is dropped here, as `sched.schedule(f, 0s);` does
    }
  }
  std::int64_t submitted = now_ns();
  // An inline system (poll mode) runs its tasks on this thread: its loop polls here.
  if constexpr (requires { System::kInline; }) sys.run_inline(std::chrono::seconds(60));
  W6Pass p;
  p.missing = starts.wait_all(now_ns() + 60'000'000'000, 1'000'000, [&](std::size_t done) {
    if (progress) progress(done, tasks);
  });
  std::int64_t last = first;
  for (std::size_t i = 0; i < tasks; ++i) last = std::max(last, starts.value(i));
  p.first_to_last_ns = last - first;
  p.tasks_per_s = static_cast<double>(tasks - p.missing) / (static_cast<double>(last - first) * 1e-9);
  p.submits_per_s = static_cast<double>(tasks) / (static_cast<double>(submitted - first) * 1e-9);
  return p;
}

template <class System>
RunResult run_w6(System& sys, const SystemConfig& cfg, const W6Params& p, const Progress& progress) {
  RunResult r;
  r.param("tasks", static_cast<std::int64_t>(p.tasks));
  if (cfg.producer_cpu >= 0) pin_this_thread(cfg.producer_cpu);
  const W6Pass ex = run_w6_pass(sys, W6Call::execute, p.tasks, progress);
  const W6Pass sc = run_w6_pass(sys, W6Call::schedule0, p.tasks, progress);
  const W6Pass su = run_w6_pass(sys, W6Call::submit, p.tasks, progress);
  r.figure("tasks_per_s", ex.tasks_per_s);
  r.figure("submits_per_s", ex.submits_per_s);
  r.figure("first_submit_to_last_start_ns", ex.first_to_last_ns);
  r.figure("schedule0_tasks_per_s", sc.tasks_per_s);
  r.figure("submit_tasks_per_s", su.tasks_per_s);
  r.figure("missing", static_cast<std::int64_t>(ex.missing + sc.missing + su.missing));
  return r;
}

}  // namespace kairos::perf
