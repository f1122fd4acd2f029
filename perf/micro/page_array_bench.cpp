// page_array_bench.cpp: growing the timer heap's array to 2^20 pointers, std::vector against
// PageArray (core/src/page_array.hpp). The counter that matters is worst_push_us: the longest
// single push_back, which for a vector is the doubling that copies 4 MB (and faults the new
// block in) while the shard's lock is held; PageArray grows with mremap and copies nothing.
#include <benchmark/benchmark.h>

#include <chrono>
#include <vector>

#include "page_array.hpp"

namespace {

template <class Array>
void BM_GrowToAMillion(benchmark::State& state) {
  double worst_us = 0;
  for (auto _ : state) {
    Array a;
    for (std::size_t i = 0; i < (std::size_t{1} << 20) + 1; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      a.push_back(&a);
      double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
      if (us > worst_us) worst_us = us;
    }
    benchmark::DoNotOptimize(a[12345]);
  }
  state.counters["worst_push_us"] = worst_us;
}

BENCHMARK(BM_GrowToAMillion<std::vector<void*>>)->Name("GrowToAMillion/std_vector")->Unit(benchmark::kMillisecond)->Iterations(5);
BENCHMARK(BM_GrowToAMillion<kairos::detail::PageArray<void*>>)->Name("GrowToAMillion/PageArray")->Unit(benchmark::kMillisecond)->Iterations(5);

}  // namespace
