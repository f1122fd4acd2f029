// scheduler_bench.cpp: BasicScheduler end to end, one call at a time. Real time throughout: the
// scheduler's own thread works beside the producer (one shard, one thread, no pinning).
//   Sched_Schedule1h/threads:P   the W1 shape: P producers each schedule 1,000,000 no-op tasks
//                                1 h ahead, futures dropped. Nothing fires; the leader sleeps for
//                                the whole run, so submissions pile up in its inbox. With P = 2
//                                the Time column is the inverse of the total submit rate.
//   Sched_ScheduleCancel/lag:L   the W2 shape: remove-on-cancel on, 1,000,000 iterations of
//                                schedule task i (10 s ahead), then cancel task i - L (L = 0:
//                                the task just scheduled). Time is one schedule + cancel pair.
//   Sched_ExecuteThroughput      execute() 4,096 tasks that count themselves, then wait until all
//                                ran; per_op is one task submitted and run, per wait policy.
//   Sched_RestampPass/pending:N  the leader's pause for one restamp pass (core/src/restamp.hpp)
//                                over N pending tasks 1 h ahead, every one old (2^29 + 2^28
//                                sequence numbers skipped first through the shard's test seam):
//                                from the period's first sequence number to the pass's end.
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

#include <kairos/kairos.hpp>

#include "micro_common.hpp"
#include "shard.hpp"  // the sequence's test seams (restamp)

namespace {

using namespace std::chrono_literals;
using kairos_micro::report_per_op;

constexpr std::int64_t kW1Submits = 1'000'000;  // per producer
constexpr std::int64_t kW2Iterations = 1'000'000;
constexpr std::size_t kExecuteBatch = 4096;

kairos::Scheduler* g_shared = nullptr;  // Sched_Schedule1h: built by thread 0 before the start barrier

void Sched_Schedule1h(benchmark::State& state) {
  if (state.thread_index() == 0) g_shared = new kairos::Scheduler();
  for (auto _ : state) g_shared->schedule([] {}, 1h);
  if (state.thread_index() == 0) {  // after the stop barrier: every producer is done
    state.counters["pending_at_end"] = static_cast<double>(g_shared->queue_size());
    delete g_shared;  // drops the pending tasks: not timed
    g_shared = nullptr;
  }
  report_per_op(state, 1);
}
BENCHMARK(Sched_Schedule1h)->Iterations(kW1Submits)->Threads(1)->Threads(2)->UseRealTime();

void Sched_ScheduleCancel(benchmark::State& state) {
  const auto lag = static_cast<std::size_t>(state.range(0));
  kairos::Options options;
  options.remove_on_cancel = true;
  kairos::Scheduler sched(options);
  std::vector<kairos::ScheduledFuture<void>> window(lag == 0 ? 1 : lag);
  std::size_t i = 0;
  for (auto _ : state) {
    kairos::ScheduledFuture<void> f = sched.schedule([] {}, 10s);
    if (lag == 0) {
      f.cancel();
    } else {
      kairos::ScheduledFuture<void>& slot = window[i++ % lag];
      if (slot.valid()) slot.cancel();
      slot = std::move(f);
    }
  }
  state.counters["pending_at_end"] = static_cast<double>(sched.queue_size());  // lag:1024 -> 1024
  report_per_op(state, 1);
}
BENCHMARK(Sched_ScheduleCancel)->ArgName("lag")->Arg(0)->Arg(1024)->Iterations(kW2Iterations)->UseRealTime();

kairos::WaitPolicy policy_of(std::int64_t arg) {
  switch (arg) {
    case 0: return kairos::WaitPolicy::sleep();
    case 1: return kairos::WaitPolicy::hybrid(50us);
    default: return kairos::WaitPolicy::spin();
  }
}

void Sched_ExecuteThroughput(benchmark::State& state) {
  kairos::Options options;
  options.wait = policy_of(state.range(0));
  state.SetLabel(options.wait.name());
  kairos::Scheduler sched(options);
  std::atomic<std::uint64_t> ran{0};
  std::uint64_t submitted = 0;
  for (auto _ : state) {
    for (std::size_t k = 0; k < kExecuteBatch; ++k)
      sched.execute([&ran] { ran.fetch_add(1, std::memory_order_relaxed); });
    submitted += kExecuteBatch;
    for (int spins = 0; ran.load(std::memory_order_relaxed) < submitted;) kairos_micro::backoff(spins);
  }
  report_per_op(state, kExecuteBatch);
}
// wait: 0 sleep, 1 hybrid(50 us), 2 spin.
BENCHMARK(Sched_ExecuteThroughput)->ArgName("wait")->Arg(0)->Arg(1)->Arg(2)->UseRealTime();

// One period's worth of sequence numbers, then the wait for the pass it asks for.
void restamp_once(kairos::detail::Shard& shard) {
  const std::uint64_t passes = shard.restamps_for_testing();
  shard.skip_seqs_for_testing(kairos::detail::kRestampEvery);
  for (int spins = 0; shard.restamps_for_testing() == passes;) kairos_micro::backoff(spins);
}

void Sched_RestampPass(benchmark::State& state) {
  kairos::Options options;
  options.shards = 1;
  kairos::Scheduler sched(options);
  kairos::detail::Shard& shard = *kairos::detail::Shard::g_newest_for_testing.load();
  std::vector<kairos::ScheduledFuture<void>> keep;
  keep.reserve(static_cast<std::size_t>(state.range(0)));
  for (std::int64_t i = 0; i < state.range(0); ++i) keep.push_back(sched.schedule([] {}, 1h + std::chrono::microseconds(i % 977)));
  // Start the sequence at a period's beginning, then age every task past the young span.
  shard.skip_seqs_for_testing(kairos::detail::kRestampEvery - shard.seqs_taken_for_testing() % kairos::detail::kRestampEvery);
  for (int k = 0; k < 3; ++k) restamp_once(shard);
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    restamp_once(shard);
    state.SetIterationTime(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  state.counters["pending"] = static_cast<double>(sched.queue_size());
  sched.shutdown_now();
}
BENCHMARK(Sched_RestampPass)->ArgName("pending")->Arg(10'000)->Arg(100'000)->Arg(1'000'000)->Iterations(5)->UseManualTime()->Unit(benchmark::kMillisecond);

}  // namespace
