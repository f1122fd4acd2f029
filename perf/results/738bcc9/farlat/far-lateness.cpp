// far-lateness.cpp: what a far timer's deadline costs in lateness (Options::far_timer_slack).
// One producer submits N one-shot timers open loop, one every `gap` us by the clock, delays
// uniform in [1 s, 2 s) from a fixed seed (all far under the default slack); each body stores its
// start. Lateness = start - (t0 + delay), t0 read right before the call (docs/workloads.md's rule).
// Prints p50/p90/p99/p99.9/max and the early count, for the slack given (us; 0 = no far timers).
// Build: g++ -O2 -std=c++20 -I core -I policies -I build/release/generated far-lateness.cpp build/release/libkairos.a -lpthread
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <thread>
#include <vector>

#include <kairos/kairos.hpp>

static std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

int main(int argc, char** argv) {
  const double slack_us = argc > 1 ? std::atof(argv[1]) : 1000;
  const int n = argc > 2 ? std::atoi(argv[2]) : 4000;
  const int gap_us = argc > 3 ? std::atoi(argv[3]) : 250;
  kairos::Options o;
  o.far_timer_slack = std::chrono::nanoseconds(static_cast<std::int64_t>(slack_us * 1000));
  std::vector<std::atomic<std::int64_t>> start(static_cast<std::size_t>(n));
  std::vector<std::int64_t> due(static_cast<std::size_t>(n));
  std::mt19937_64 rng(11);
  std::uniform_int_distribution<std::int64_t> delay(1'000'000'000, 1'999'999'999);
  {
    kairos::Scheduler s(o);
    const std::int64_t begin = now_ns();
    for (int i = 0; i < n; ++i) {
      const std::int64_t at = begin + std::int64_t{i} * gap_us * 1000;
      while (now_ns() < at) {}
      const std::int64_t d = delay(rng);
      auto* slot = &start[static_cast<std::size_t>(i)];
      const std::int64_t t0 = now_ns();
      s.execute_after([slot] { slot->store(now_ns(), std::memory_order_relaxed); }, std::chrono::nanoseconds(d));
      due[static_cast<std::size_t>(i)] = t0 + d;
    }
    std::printf("far timers %llu\n", static_cast<unsigned long long>(s.stats().total().far_timers));
    while (std::any_of(start.begin(), start.end(), [](auto& a) { return a.load() == 0; }))
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::vector<std::int64_t> late;
  int early = 0;
  for (int i = 0; i < n; ++i) {
    const std::int64_t l = start[static_cast<std::size_t>(i)].load() - due[static_cast<std::size_t>(i)];
    if (l < 0) ++early;
    late.push_back(l);
  }
  std::sort(late.begin(), late.end());
  auto q = [&](double p) { return late[static_cast<std::size_t>(p * (late.size() - 1))] / 1000.0; };
  std::printf("slack %.0f us, %d timers, 1-2 s delays, one every %d us: lateness us p50 %.1f p90 %.1f p99 %.1f p99.9 %.1f max %.1f, early %d\n",
              slack_us, n, gap_us, q(0.5), q(0.9), q(0.99), q(0.999), late.back() / 1000.0, early);
}
