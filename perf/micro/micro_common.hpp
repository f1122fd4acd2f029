// micro_common.hpp: what the microbenchmark files share: the fixed seed, the per-operation
// counter, and a timer for benchmarks that time only part of each iteration.
// Reading the output: where one iteration is one operation, the Time column is the cost of one
// operation. Where one iteration is a batch (heap, inbox bulk, execute throughput), the Time
// column is per batch and the `per_op` counter (e.g. "23.4ns") is per operation.
#pragma once
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <thread>

namespace kairos_micro {

inline constexpr std::uint64_t kSeed = 0x6b6169726f73;  // every random input derives from it

// Sets `per_op` to the benchmark's own measured time (manual, real or CPU: whichever its Time
// column shows) divided by the operations done, and items_per_second to match. Google Benchmark
// sums both over threads: every thread counts its own items, and only thread 0 sets per_op (it
// is scaled by the iterations of all threads).
inline void report_per_op(benchmark::State& state, double ops_per_iteration) {
  state.SetItemsProcessed(static_cast<std::int64_t>(static_cast<double>(state.iterations()) * ops_per_iteration));
  if (state.thread_index() != 0) return;
  state.counters["per_op"] = benchmark::Counter(
      ops_per_iteration, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

// For UseManualTime benchmarks: times the span between start() and stop(state).
class SpanTimer {
 public:
  void start() noexcept { t0_ = std::chrono::steady_clock::now(); }
  void stop(benchmark::State& state) noexcept {
    auto t1 = std::chrono::steady_clock::now();
    state.SetIterationTime(std::chrono::duration<double>(t1 - t0_).count());
  }

 private:
  std::chrono::steady_clock::time_point t0_;
};

inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// One step of waiting for another thread: pause for a while, then give the core away, so that
// two threads sharing one core (a busy 2-core machine) still make progress.
inline void backoff(int& spins) noexcept {
  if (++spins < 256) cpu_relax();
  else std::this_thread::yield();
}

}  // namespace kairos_micro
