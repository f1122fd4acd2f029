// w1_submit.hpp, W1 of docs/workloads.md: the cost of scheduling.
//   P producers --schedule(no-op, 1 h) x calls--> System     (the tasks never fire)
// Reports submits/s over all producers, from the start barrier to the last producer's end, and
// the per-call latency of one call in every 64 (two clock reads around one call; the cost of one
// clock read, clock_read_ns, is reported beside it and not subtracted). The sampled call sits at a
// random position within each block of 64 (SampleClock), so that sampling cannot alias with a
// period of the system under test: a scheduler that does extra work on every 64th submission is
// sampled there 1 time in 64, not every time.
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

struct W1Params {
  unsigned producers = 1;
  std::size_t calls_per_producer = 1'000'000;
  std::int64_t delay_ns = 3'600'000'000'000;  // 1 h
  std::size_t sample_every = 64;
  // The call: schedule(f, delay) with its handle dropped (the default, the workload's own), or,
  // with post, the system's delayed call with no handle where it has one (kairos: execute_after;
  // a system without one, naive-stpe and Java's class among them, still calls schedule: what its
  // users do for a timer they never cancel). Recorded: the parameter "post" (asked) and the figure
  // "used_post" (1 where the system made the call with no handle).
  bool post = false;
};

// Median cost of one steady_clock read, from back-to-back pairs.
inline std::int64_t clock_read_cost_ns() {
  std::vector<std::int64_t> d(10'001);
  for (auto& v : d) {
    std::int64_t a = now_ns();
    v = now_ns() - a;
  }
  std::nth_element(d.begin(), d.begin() + 5000, d.end());
  return d[5000];
}

template <class System>
RunResult run_w1(System& sys, const SystemConfig& cfg, const W1Params& p) {
  RunResult r;
  r.param("producers", static_cast<std::int64_t>(p.producers));
  r.param("calls_per_producer", static_cast<std::int64_t>(p.calls_per_producer));
  r.param("delay_ns", p.delay_ns);
  r.param("sample_every", static_cast<std::int64_t>(p.sample_every));
  constexpr bool kHasPost = requires(System& s) { s.post([] {}, std::int64_t{0}); };
  const bool post = p.post && kHasPost;
  r.param("post", static_cast<std::int64_t>(p.post));  // asked: the same for every system of a table
  r.figure("used_post", static_cast<std::int64_t>(post));  // done: 0 where the system has no post
  auto submit_one = [&](auto&& body) {
    if constexpr (kHasPost) {
      if (post) {
        sys.post(body, p.delay_ns);
        return;
      }
    }
    sys.schedule(body, p.delay_ns);
  };

  StartSlots sink(1024);  // the bodies would write here; they never run
  std::vector<std::vector<std::int64_t>> samples(p.producers);
  std::vector<std::int64_t> ends(p.producers, 0);
  std::atomic<unsigned> ready{0};
  std::atomic<bool> go{false};
  std::int64_t start = 0;

  std::vector<std::thread> producers;
  for (unsigned k = 0; k < p.producers; ++k) {
    producers.emplace_back([&, k] {
      if (cfg.producer_cpu >= 0)
        pin_this_thread((cfg.producer_cpu + static_cast<int>(k)) %
                        static_cast<int>(std::thread::hardware_concurrency()));
      auto& mine = samples[k];
      mine.reserve(p.calls_per_producer / p.sample_every + 1);
      ready.fetch_add(1, std::memory_order_acq_rel);
      while (!go.load(std::memory_order_acquire)) {
      }
      SampleClock sampled(p.sample_every, 1 + k);
      for (std::size_t i = 0; i < p.calls_per_producer; ++i) {
        auto* slot = sink.at(i & 1023);
        auto body = [slot] { slot->store(now_ns(), std::memory_order_release); };
        if (sampled(i)) {
          std::int64_t a = now_ns();
          submit_one(body);
          mine.push_back(now_ns() - a);
        } else {
          submit_one(body);
        }
      }
      ends[k] = now_ns();
    });
  }
  while (ready.load(std::memory_order_acquire) != p.producers) std::this_thread::yield();
  start = now_ns();
  go.store(true, std::memory_order_release);
  for (auto& t : producers) t.join();

  std::int64_t end = *std::max_element(ends.begin(), ends.end());
  double total = static_cast<double>(p.producers) * static_cast<double>(p.calls_per_producer);
  double secs = static_cast<double>(end - start) * 1e-9;
  r.figure("submits_per_s", total / secs);
  r.figure("ns_per_submit", static_cast<double>(end - start) * p.producers / total);
  std::vector<std::int64_t> all;
  for (auto& s : samples) all.insert(all.end(), s.begin(), s.end());
  add_percentiles(r, all, false);
  r.figure("clock_read_ns", clock_read_cost_ns());
  sys.drain(std::chrono::seconds(30));
  r.figure("pending_at_end", static_cast<std::int64_t>(sys.queue_size()));
  return r;
}

}  // namespace kairos::perf
