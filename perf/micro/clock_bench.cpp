// clock_bench.cpp: what one clock read costs. Every submission reads the clock once (its deadline
// is now + delay), and a leader reads it on every wake-up, so this is a floor under both.
//   Clock_SteadyClockNow      std::chrono::steady_clock::now() (what SteadyClock::now() is)
//   Clock_SteadyNowNs         kairos::detail::steady_now_ns(), the engine's read (out of line)
//   Clock_ClockGettime        clock_gettime(CLOCK_MONOTONIC) called directly (vDSO)
//   Clock_ClockGettimeCoarse  CLOCK_MONOTONIC_COARSE: tick resolution, for scale only
//   Clock_Rdtsc, Clock_Rdtscp the TSC itself, unserialised and serialised (x86 only)
//   Clock_SubmitNowNs         the submission clock (core/src/tsc_clock.hpp), calls back to back:
//                             its counter path where the kernel keeps an invariant TSC
//   Clock_SubmitNowNsSparse   the same, one call every 50 us (a timer's pace, W3's): time is
//                             the span of clock read + call + clock read, skew_ns how far the
//                             answer lies past the clock read just before the call (what a
//                             deadline carries), both medians over the calls
#include <time.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include <kairos/detail/steady_clock.hpp>  // steady_now_ns, submit_now_ns

#include "micro_common.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

namespace {

using kairos_micro::report_per_op;

void Clock_SteadyClockNow(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(std::chrono::steady_clock::now());
  report_per_op(state, 1);
}
BENCHMARK(Clock_SteadyClockNow);

void Clock_SteadyNowNs(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(kairos::detail::steady_now_ns());
  report_per_op(state, 1);
}
BENCHMARK(Clock_SteadyNowNs);

void Clock_ClockGettime(benchmark::State& state) {
  timespec ts;
  for (auto _ : state) {
    clock_gettime(CLOCK_MONOTONIC, &ts);
    benchmark::DoNotOptimize(ts);
  }
  report_per_op(state, 1);
}
BENCHMARK(Clock_ClockGettime);

void Clock_ClockGettimeCoarse(benchmark::State& state) {
  timespec ts;
  for (auto _ : state) {
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    benchmark::DoNotOptimize(ts);
  }
  report_per_op(state, 1);
}
BENCHMARK(Clock_ClockGettimeCoarse);

void Clock_SubmitNowNs(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(kairos::detail::submit_now_ns());
  report_per_op(state, 1);
}
BENCHMARK(Clock_SubmitNowNs);

void Clock_SubmitNowNsSparse(benchmark::State& state) {
  using kairos::detail::steady_now_ns;
  constexpr std::int64_t kPaceNs = 50'000;
  std::vector<std::int64_t> spans, skews;
  spans.reserve(state.max_iterations);
  skews.reserve(state.max_iterations);
  std::int64_t slot = steady_now_ns();
  for (auto _ : state) {
    slot += kPaceNs;
    while (steady_now_ns() < slot) {
    }
    const std::int64_t t0 = steady_now_ns();
    const std::int64_t v = kairos::detail::submit_now_ns();
    const std::int64_t t1 = steady_now_ns();
    benchmark::DoNotOptimize(v);
    state.SetIterationTime(static_cast<double>(t1 - t0) * 1e-9);
    spans.push_back(t1 - t0);
    skews.push_back(v - t0);
  }
  auto median = [](std::vector<std::int64_t>& v) {
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
    return static_cast<double>(v[v.size() / 2]);
  };
  state.counters["span_ns_p50"] = median(spans);
  state.counters["skew_ns_p50"] = median(skews);
}
BENCHMARK(Clock_SubmitNowNsSparse)->UseManualTime()->Iterations(20'000);

#if defined(__x86_64__) || defined(__i386__)
void Clock_Rdtsc(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(__rdtsc());
  report_per_op(state, 1);
}
BENCHMARK(Clock_Rdtsc);

void Clock_Rdtscp(benchmark::State& state) {
  unsigned aux;
  for (auto _ : state) benchmark::DoNotOptimize(__rdtscp(&aux));
  report_per_op(state, 1);
}
BENCHMARK(Clock_Rdtscp);
#endif

}  // namespace
