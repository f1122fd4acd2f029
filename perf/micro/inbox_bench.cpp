// inbox_bench.cpp: a shard's inbox, moodycamel::ConcurrentQueue<void*> with the engine's traits
// (blocks of 256: producer_tokens.hpp), nearly as the engine uses it: producers enqueue without a
// token here (implicit producer; the engine gives each thread a token), the leader drains with
// try_dequeue_bulk of 256 without a token. Initial capacity 1024, as a shard's.
//   Inbox_Enqueue             one thread: enqueue 256 (timed), drain them (untimed); blocks are
//                             recycled, the steady state of a drained inbox
//   Inbox_DequeueBulk256      one thread: fill 256 (untimed), one try_dequeue_bulk of 256 (timed)
//   Inbox_EnqueueWithConsumer one producer enqueues while another thread drains in bulk, as a
//                             leader does: the cost includes moving cache lines between cores
//   Inbox_EnqueueUndrained    enqueue with nobody draining (a leader asleep for 1 h, the W1
//                             shape): every 256 items need a fresh block from the heap
#include <atomic>
#include <cstddef>
#include <thread>

#include <concurrentqueue.h>

#include "micro_common.hpp"
#include "producer_tokens.hpp"

namespace {

using kairos_micro::report_per_op;
using kairos_micro::SpanTimer;

constexpr std::size_t kBulk = 256;    // the engine's kDrainChunk
constexpr std::size_t kInitial = 1024;

using Inbox = moodycamel::ConcurrentQueue<void*, kairos::detail::InboxQueueTraits>;

// Out of line, as in the engine (publish() reaches a shard's inbox through a pointer): inlined
// into the benchmark loop, the compiler would keep the producer lookup's work across calls.
[[gnu::noinline]] bool enqueue_one(Inbox& q, void* item) { return q.enqueue(item); }
[[gnu::noinline]] std::size_t dequeue_bulk(Inbox& q, void** buf) { return q.try_dequeue_bulk(buf, kBulk); }

void Inbox_Enqueue(benchmark::State& state) {
  Inbox q(kInitial);
  void* buf[kBulk];
  int item = 0;
  SpanTimer timer;
  for (auto _ : state) {
    timer.start();
    for (std::size_t i = 0; i < kBulk; ++i) enqueue_one(q, &item);
    timer.stop(state);
    while (q.try_dequeue_bulk(buf, kBulk) != 0) {
    }
  }
  report_per_op(state, kBulk);
}
BENCHMARK(Inbox_Enqueue)->UseManualTime();

void Inbox_DequeueBulk256(benchmark::State& state) {
  Inbox q(kInitial);
  void* buf[kBulk];
  int item = 0;
  std::size_t got = 0;
  SpanTimer timer;
  for (auto _ : state) {
    for (std::size_t i = 0; i < kBulk; ++i) q.enqueue(&item);
    timer.start();
    got += dequeue_bulk(q, buf);
    timer.stop(state);
    benchmark::DoNotOptimize(buf);
  }
  if (got != state.iterations() * kBulk) state.SkipWithError("a bulk dequeue came back short");
  report_per_op(state, kBulk);
}
BENCHMARK(Inbox_DequeueBulk256)->UseManualTime();

void Inbox_EnqueueWithConsumer(benchmark::State& state) {
  Inbox q(kInitial);
  std::atomic<bool> stop{false};
  std::atomic<std::size_t> drained{0};
  std::thread consumer([&] {
    void* buf[kBulk];
    std::size_t n = 0;
    int spins = 0;
    for (;;) {
      std::size_t got = q.try_dequeue_bulk(buf, kBulk);
      n += got;
      if (got != 0) {
        spins = 0;
      } else {
        if (stop.load(std::memory_order_acquire)) break;
        kairos_micro::backoff(spins);
      }
    }
    while (std::size_t got = q.try_dequeue_bulk(buf, kBulk)) n += got;
    drained.store(n, std::memory_order_release);
  });
  int item = 0;
  for (auto _ : state) enqueue_one(q, &item);
  stop.store(true, std::memory_order_release);
  consumer.join();
  if (drained.load(std::memory_order_acquire) != static_cast<std::size_t>(state.iterations()))
    state.SkipWithError("the consumer lost items");
  report_per_op(state, 1);
}
BENCHMARK(Inbox_EnqueueWithConsumer)->UseRealTime();

void Inbox_EnqueueUndrained(benchmark::State& state) {
  Inbox q(kInitial);
  int item = 0;
  for (auto _ : state) enqueue_one(q, &item);
  report_per_op(state, 1);
}
// 1,000,000 items, as one W1 producer leaves in a sleeping leader's inbox.
BENCHMARK(Inbox_EnqueueUndrained)->Iterations(1'000'000);

}  // namespace
