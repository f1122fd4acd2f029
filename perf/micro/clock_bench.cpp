// clock_bench.cpp: what one clock read costs. Every submission reads the clock once (its deadline
// is now + delay), and a leader reads it on every wake-up, so this is a floor under both.
//   Clock_SteadyClockNow      std::chrono::steady_clock::now() (what SteadyClock::now() is)
//   Clock_SteadyNowNs         kairos::detail::steady_now_ns(), the engine's read (out of line)
//   Clock_ClockGettime        clock_gettime(CLOCK_MONOTONIC) called directly (vDSO)
//   Clock_ClockGettimeCoarse  CLOCK_MONOTONIC_COARSE: tick resolution, for scale only
//   Clock_Rdtsc, Clock_Rdtscp the TSC itself, unserialised (what the lateness statistic's start
//                             times read: core/src/batch_clock.hpp) and serialised (x86 only)
#include <time.h>

#include <chrono>

#include <kairos/detail/steady_clock.hpp>  // steady_now_ns

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
