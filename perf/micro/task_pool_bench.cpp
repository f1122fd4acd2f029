// task_pool_bench.cpp: the pooled node memory every submission takes (task_pool.hpp), for the
// class of a capture-less one-shot node (56 bytes).
//   TaskPool_AllocFree           alloc then free on one thread: the thread-local free list only
//   TaskPool_AllocFreeBurst      one thread allocates 1,024 nodes, then frees them: the free list
//                                overflows (chains go to the global stack) and is refilled from it
//   TaskPool_CrossThread         the engine's shape: the producer allocates (a submission), a
//                                second thread frees (the task ran); handed over through an SPSC
//                                ring. Nodes travel back in chains through the global stack.
//   TaskPool_CrossThreadRingOnly the same ring, passing a fixed pointer, no pool: subtract it from
//                                TaskPool_CrossThread to see the pool's own cross-thread cost
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <thread>
#include <vector>

#include <kairos/detail/task_pool.hpp>

#include "micro_common.hpp"

namespace {

using kairos::detail::task_alloc;
using kairos::detail::task_free;
using kairos_micro::backoff;
using kairos_micro::report_per_op;

constexpr std::uint8_t kClass = kairos::detail::size_class_for(56, 8);
static_assert(kairos::detail::kClassSizes[kClass] == 56);

void TaskPool_AllocFree(benchmark::State& state) {
  for (auto _ : state) {
    void* p = task_alloc(kClass);
    benchmark::DoNotOptimize(p);
    task_free(p, kClass);
  }
  report_per_op(state, 1);
}
BENCHMARK(TaskPool_AllocFree);

void TaskPool_AllocFreeBurst(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  std::vector<void*> held(n);
  for (auto _ : state) {
    for (std::size_t i = 0; i < n; ++i) held[i] = task_alloc(kClass);
    benchmark::DoNotOptimize(held.data());
    for (std::size_t i = 0; i < n; ++i) task_free(held[i], kClass);
  }
  report_per_op(state, static_cast<double>(n));  // one alloc + one free
}
BENCHMARK(TaskPool_AllocFreeBurst)->Arg(1024);

// Single-producer single-consumer ring of pointers; indices on their own cache lines, each side
// keeping a cached copy of the other's index so that it reads the shared one only when it must.
class SpscRing {
 public:
  bool try_push(void* p) noexcept {
    std::size_t t = tail_.load(std::memory_order_relaxed);
    if (t - head_seen_ == kSize) {
      head_seen_ = head_.load(std::memory_order_acquire);  // pairs with the release in try_pop
      if (t - head_seen_ == kSize) return false;
    }
    slots_[t % kSize] = p;
    tail_.store(t + 1, std::memory_order_release);  // publishes the slot; pairs with try_pop
    return true;
  }
  bool try_pop(void*& p) noexcept {
    std::size_t h = head_.load(std::memory_order_relaxed);
    if (h == tail_seen_) {
      tail_seen_ = tail_.load(std::memory_order_acquire);  // pairs with the release in try_push
      if (h == tail_seen_) return false;
    }
    p = slots_[h % kSize];
    head_.store(h + 1, std::memory_order_release);  // the slot may be reused; pairs with try_push
    return true;
  }

 private:
  static constexpr std::size_t kSize = 1024;
  alignas(64) std::atomic<std::size_t> tail_{0};  // producer writes
  std::size_t head_seen_ = 0;                     // producer's copy of head_
  alignas(64) std::atomic<std::size_t> head_{0};  // consumer writes
  std::size_t tail_seen_ = 0;                     // consumer's copy of tail_
  alignas(64) std::array<void*, kSize> slots_{};
};

// Runs the timed producer loop; a second thread pops and, with the pool, frees what it pops.
void cross_thread(benchmark::State& state, bool use_pool) {
  SpscRing ring;
  std::atomic<bool> stop{false};
  std::thread consumer([&] {
    void* p;
    int spins = 0;
    for (;;) {
      if (ring.try_pop(p)) {
        if (use_pool) task_free(p, kClass);
        spins = 0;
      } else if (stop.load(std::memory_order_acquire)) {
        if (!ring.try_pop(p)) break;
        if (use_pool) task_free(p, kClass);
      } else {
        backoff(spins);
      }
    }
  });
  int fixed = 0;
  for (auto _ : state) {
    void* p = use_pool ? task_alloc(kClass) : &fixed;
    for (int spins = 0; !ring.try_push(p);) backoff(spins);
  }
  stop.store(true, std::memory_order_release);
  consumer.join();
  report_per_op(state, 1);
}

void TaskPool_CrossThread(benchmark::State& state) { cross_thread(state, true); }
BENCHMARK(TaskPool_CrossThread)->UseRealTime();

void TaskPool_CrossThreadRingOnly(benchmark::State& state) { cross_thread(state, false); }
BENCHMARK(TaskPool_CrossThreadRingOnly)->UseRealTime();

}  // namespace
