// atomic_bench.cpp: what one atomic read-modify-write costs, alone and on a cache line another
// core uses. A submission does several (next_seq, the task's reference count), a cancel under
// remove-on-cancel several more (cancel_removed, removes_requested, the task's state and count),
// and the shard's leader reads the shard counters on every pass: these set the floor under them.
//   Atomic_FetchAddLocal        seq_cst fetch_add on a line only this thread touches
//   Atomic_FetchAddWithReader   the same while a second thread keeps loading that line (seq_cst),
//                               as a leader polls next_seq and removes_requested
//   Atomic_FetchAddPingPong     both threads fetch_add the same line
//   Atomic_SubmitFloor          one clock_gettime(CLOCK_MONOTONIC), a seq_cst fetch_add and a
//                               compare_exchange on lines only this thread touches: the floor under
//                               a submission whose handle is dropped (its clock read, IN1 and RC1),
//                               with no instruction of kairos's own; W1's aim (4x naive-stpe) is
//                               set against it in PERF.md
#include <time.h>

#include <atomic>
#include <cstdint>
#include <thread>

#include "micro_common.hpp"

namespace {

using kairos_micro::report_per_op;

struct alignas(64) PaddedCounter {
  std::atomic<std::uint64_t> value{0};
};
static_assert(sizeof(PaddedCounter) == 64);

void Atomic_FetchAddLocal(benchmark::State& state) {
  PaddedCounter c;
  for (auto _ : state) c.value.fetch_add(1, std::memory_order_seq_cst);
  benchmark::DoNotOptimize(c.value.load(std::memory_order_relaxed));
  report_per_op(state, 1);
}
BENCHMARK(Atomic_FetchAddLocal);

// Runs the timed fetch_add loop while a second thread reads (or also increments) the counter.
void with_second_thread(benchmark::State& state, bool second_writes) {
  PaddedCounter c;
  std::atomic<bool> stop{false};
  std::thread other([&] {
    std::uint64_t seen = 0;
    while (!stop.load(std::memory_order_relaxed)) {
      if (second_writes) c.value.fetch_add(1, std::memory_order_seq_cst);
      else seen += c.value.load(std::memory_order_seq_cst);
      kairos_micro::cpu_relax();
    }
    benchmark::DoNotOptimize(seen);
  });
  for (auto _ : state) c.value.fetch_add(1, std::memory_order_seq_cst);
  stop.store(true, std::memory_order_relaxed);
  other.join();
  report_per_op(state, 1);
}

void Atomic_FetchAddWithReader(benchmark::State& state) { with_second_thread(state, false); }
BENCHMARK(Atomic_FetchAddWithReader)->UseRealTime();

void Atomic_FetchAddPingPong(benchmark::State& state) { with_second_thread(state, true); }
BENCHMARK(Atomic_FetchAddPingPong)->UseRealTime();

void Atomic_SubmitFloor(benchmark::State& state) {
  PaddedCounter seq;
  PaddedCounter word;
  for (auto _ : state) {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    benchmark::DoNotOptimize(ts);
    benchmark::DoNotOptimize(seq.value.fetch_add(1, std::memory_order_seq_cst));
    std::uint64_t w = word.value.load(std::memory_order_relaxed);
    benchmark::DoNotOptimize(word.value.compare_exchange_strong(w, w + 1, std::memory_order_acq_rel));
  }
  report_per_op(state, 1);
}
BENCHMARK(Atomic_SubmitFloor);

}  // namespace
