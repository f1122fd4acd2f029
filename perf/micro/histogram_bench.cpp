// histogram_bench.cpp: kairos::LatencyHistogram::record, which a leader calls once per started
// task (the lateness statistic) and every latency workload calls once per sample.
//   Histogram_RecordSpread    values spread log-uniformly over 10 ns .. 10 ms (fixed seed), so
//                             the bucket index and the counter touched change every call
//   Histogram_RecordConstant  one value again and again: the best case, for scale
#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include <kairos/latency_histogram.hpp>

#include "micro_common.hpp"

namespace {

using kairos_micro::report_per_op;

constexpr std::size_t kSamples = 4096;  // a power of two: the index wraps with a mask

std::vector<std::int64_t> spread_samples() {
  std::mt19937_64 rng(kairos_micro::kSeed);
  std::uniform_real_distribution<double> exponent(1.0, 7.0);  // 10^1 .. 10^7 ns
  std::vector<std::int64_t> out(kSamples);
  for (auto& v : out) v = static_cast<std::int64_t>(std::pow(10.0, exponent(rng)));
  return out;
}

void Histogram_RecordSpread(benchmark::State& state) {
  auto h = std::make_unique<kairos::LatencyHistogram>();  // 57 KiB: not on the stack
  const std::vector<std::int64_t> samples = spread_samples();
  std::size_t i = 0;
  for (auto _ : state) h->record(samples[i++ & (kSamples - 1)]);
  benchmark::DoNotOptimize(h->count());
  report_per_op(state, 1);
}
BENCHMARK(Histogram_RecordSpread);

void Histogram_RecordConstant(benchmark::State& state) {
  auto h = std::make_unique<kairos::LatencyHistogram>();
  std::int64_t v = 12'345;
  for (auto _ : state) {
    benchmark::DoNotOptimize(v);
    h->record(v);
  }
  benchmark::DoNotOptimize(h->count());
  report_per_op(state, 1);
}
BENCHMARK(Histogram_RecordConstant);

}  // namespace
