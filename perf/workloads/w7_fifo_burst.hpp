// w7_fifo_burst.hpp, W7 of docs/workloads.md: equal deadlines.
//   one thread --schedule_at(task i, D) x N, D = now + 20 ms fixed before the first call--> System
// A system without absolute deadlines gets delay = D - now() per call (its adapter does that), and
// its inversions show what that costs.
// inversions: pairs (i < j) where task j started strictly before task i (exact, by merge sort).
// out_of_order_tasks: tasks that started before some task submitted earlier than them.
// deadline_to_last_start_ns: the last start - D.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "result.hpp"
#include "start_slots.hpp"
#include "system.hpp"

namespace kairos::perf {

struct W7Params {
  std::size_t tasks = 100'000;
  std::int64_t ahead_ns = 20'000'000;
};

// Pairs i < j with v[j] < v[i]; sorts v.
inline std::uint64_t count_inversions(std::vector<std::int64_t>& v) {
  std::vector<std::int64_t> tmp(v.size());
  std::uint64_t inv = 0;
  for (std::size_t width = 1; width < v.size(); width *= 2) {
    for (std::size_t lo = 0; lo < v.size(); lo += 2 * width) {
      std::size_t mid = std::min(lo + width, v.size()), hi = std::min(lo + 2 * width, v.size());
      std::size_t a = lo, b = mid, o = lo;
      while (a < mid && b < hi) {
        if (v[b] < v[a]) {
          inv += mid - a;
          tmp[o++] = v[b++];
        } else {
          tmp[o++] = v[a++];
        }
      }
      while (a < mid) tmp[o++] = v[a++];
      while (b < hi) tmp[o++] = v[b++];
    }
    v.swap(tmp);
  }
  return inv;
}

template <class System>
RunResult run_w7(System& sys, const SystemConfig& cfg, const W7Params& p) {
  RunResult r;
  r.param("tasks", static_cast<std::int64_t>(p.tasks));
  r.param("ahead_ns", p.ahead_ns);
  if (cfg.producer_cpu >= 0) pin_this_thread(cfg.producer_cpu);
  StartSlots starts(p.tasks);

  const std::int64_t deadline = now_ns() + p.ahead_ns;
  std::int64_t first = now_ns();
  for (std::size_t i = 0; i < p.tasks; ++i) {
    auto* slot = starts.at(i);
    sys.schedule_at([slot] { slot->store(now_ns(), std::memory_order_release); }, deadline);
  }
  std::int64_t submitted = now_ns();
  std::size_t missing = starts.wait_all(deadline + 30'000'000'000, 1'000'000, [](std::size_t) {});

  std::vector<std::int64_t> v;
  v.reserve(p.tasks);
  std::int64_t last = 0, first_start = INT64_MAX, running_max = 0;
  std::size_t out_of_order = 0;
  for (std::size_t i = 0; i < p.tasks; ++i) {
    std::int64_t s = starts.value(i);
    if (s == StartSlots::kUnset) continue;
    v.push_back(s);
    if (s < running_max) ++out_of_order;
    running_max = std::max(running_max, s);
    last = std::max(last, s);
    first_start = std::min(first_start, s);
  }
  r.figure("absolute_deadlines", static_cast<std::int64_t>(System::kAbsoluteDeadlines));
  r.figure("inversions", static_cast<std::int64_t>(count_inversions(v)));
  r.figure("out_of_order_tasks", static_cast<std::int64_t>(out_of_order));
  r.figure("deadline_to_last_start_ns", last - deadline);
  r.figure("deadline_to_first_start_ns", first_start - deadline);
  r.figure("early_fires", static_cast<std::int64_t>(
                              std::count_if(v.begin(), v.end(), [&](std::int64_t s) { return s < deadline; })));
  r.figure("submit_ns", submitted - first);
  r.figure("missing", static_cast<std::int64_t>(missing));
  return r;
}

}  // namespace kairos::perf
