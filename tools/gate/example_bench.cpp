// example_bench.cpp: a user's Google Benchmark, for showing (and measuring) kairos-gate on a
// workload it knows nothing about. "order-send" encodes an order as FIX-like text and checksums
// it; KAIROS_GATE_EXAMPLE_WORK_PERCENT (default 100) scales the work of every call, so the
// kairos-gate-example-slow build (120) is 20% slower per call.
//   kairos-gate-example --benchmark_repetitions=10 --benchmark_format=json > base.json
//   kairos-gate-example-slow --benchmark_repetitions=10 --benchmark_format=json > now.json
//   kairos-gate -b base.json -c now.json -t cpu_time=10%      # exit 1: regression
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdio>
#include <string>

#ifndef KAIROS_GATE_EXAMPLE_WORK_PERCENT
#define KAIROS_GATE_EXAMPLE_WORK_PERCENT 100
#endif

namespace {

constexpr int kFieldsPerOrder = 40 * KAIROS_GATE_EXAMPLE_WORK_PERCENT / 100;

std::uint32_t send_order(std::uint64_t id, char* buf) {
  std::uint32_t sum = 0;
  for (int f = 0; f < kFieldsPerOrder; ++f) {
    const int n = std::snprintf(buf, 64, "%d=%llu\x01", 100 + f, static_cast<unsigned long long>(id * 31 + f));
    for (int k = 0; k < n; ++k) sum = sum * 31 + static_cast<unsigned char>(buf[k]);
  }
  return sum;
}

void BM_order_send(benchmark::State& state) {
  char buf[64];
  std::uint64_t id = 0;
  for (auto _ : state) benchmark::DoNotOptimize(send_order(++id, buf));
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}
BENCHMARK(BM_order_send);

}  // namespace

BENCHMARK_MAIN();
