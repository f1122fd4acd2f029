// task_pool_bench.cpp: the pooled node memory every submission takes (task_pool.hpp), for the
// class of a capture-less one-shot node (56 bytes).
//   TaskPool_AllocFree           alloc then free on one thread: the thread's magazine only
//   TaskPool_AllocFreeBurst      one thread allocates 1,024 nodes, then frees them: magazines go
//                                to the global pool full and come back from it
//   TaskPool_AllocFreeBatch      64 allocations, then one task_free_batch of the 64 (compare with
//                                TaskPool_AllocFreeBurst/64)
//   TaskPool_PrepareIdle         task_pool_prepare() with nothing to do (the engine's per-loop cost)
//   TaskPool_FreshAlloc          allocations that are never freed (a growing timer population)
//                                while a second thread calls task_pool_prepare() as a leader
//                                would; counters: page faults per 1M allocations on the
//                                allocating thread, slabs that thread had to grow itself. Each
//                                run sets the free nodes of earlier runs aside (56 MiB a run).
//   TaskPool_CrossThread         the engine's shape: the producer allocates (a submission), a
//                                second thread frees (the task ran) and calls task_pool_prepare()
//                                between tasks; handed over through an SPSC ring. Nodes travel
//                                back in magazines through the global pool. Counter: producer
//                                page faults per 1M allocations.
//   TaskPool_CrossThreadRingOnly the same ring, passing a fixed pointer, no pool: subtract it from
//                                TaskPool_CrossThread to see the pool's own cross-thread cost
#include <sys/resource.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <thread>
#include <vector>

#include <kairos/detail/task_pool.hpp>

#include "micro_common.hpp"
#include "task_pool_testing.hpp"

namespace {

using kairos::detail::task_alloc;
using kairos::detail::task_free;
using kairos::detail::task_free_batch;
using kairos::detail::task_pool_prepare;
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
BENCHMARK(TaskPool_AllocFreeBurst)->Arg(64)->Arg(1024);

void TaskPool_AllocFreeBatch(benchmark::State& state) {
  constexpr std::size_t kBatch = kairos::detail::kMagazineSlots;
  std::array<void*, kBatch> held{};
  for (auto _ : state) {
    for (void*& p : held) p = task_alloc(kClass);
    benchmark::DoNotOptimize(held.data());
    task_free_batch(held.data(), kBatch, kClass);
  }
  report_per_op(state, static_cast<double>(kBatch));  // one alloc + one free
}
BENCHMARK(TaskPool_AllocFreeBatch);

void TaskPool_PrepareIdle(benchmark::State& state) {
  task_pool_prepare();  // whatever was asked for is done before timing
  for (auto _ : state) task_pool_prepare();
  report_per_op(state, 1);
}
BENCHMARK(TaskPool_PrepareIdle);

long minor_faults_of_this_thread() {
  rusage ru{};
  ::getrusage(RUSAGE_THREAD, &ru);
  return ru.ru_minflt;
}

// Runs task_pool_prepare() on its own thread until destroyed, as an engine leader would.
class Preparer {
 public:
  Preparer()
      : thread_([this] {
          int spins = 0;
          while (!stop_.load(std::memory_order_acquire)) {  // pairs with the release in ~Preparer
            task_pool_prepare();
            backoff(spins);
          }
        }) {}
  ~Preparer() {
    stop_.store(true, std::memory_order_release);
    thread_.join();
  }

 private:
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

void TaskPool_FreshAlloc(benchmark::State& state) {
  std::vector<void*> held(static_cast<std::size_t>(state.max_iterations), nullptr);  // faults now
  // Fresh memory: the free nodes of earlier runs are set aside (returned below).
  kairos::detail::release_thread_cache_for_testing();
  Preparer preparer;
  const auto grown = kairos::detail::task_pool_stats().slabs_grown_by_alloc;
  const long faults = minor_faults_of_this_thread();
  std::size_t i = 0;
  for (auto _ : state) {
    void* p = task_alloc(kClass);
    static_cast<char*>(p)[0] = 1;  // the producer writes its node, as a submission does
    held[i++] = p;
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["faults_per_1M"] = static_cast<double>(minor_faults_of_this_thread() - faults) * 1e6 / n;
  state.counters["grown_by_alloc"] =
      static_cast<double>(kairos::detail::task_pool_stats().slabs_grown_by_alloc - grown);
  report_per_op(state, 1);
  for (std::size_t k = 0; k < i; ++k) task_free(held[k], kClass);
  kairos::detail::set_slab_allocator_for_testing(nullptr);
}
BENCHMARK(TaskPool_FreshAlloc)->Iterations(1 << 20)->UseRealTime();

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
        if (use_pool) task_pool_prepare();  // between tasks, as the engine's leader does
        backoff(spins);
      }
    }
  });
  int fixed = 0;
  const long faults = minor_faults_of_this_thread();
  for (auto _ : state) {
    void* p = use_pool ? task_alloc(kClass) : &fixed;
    for (int spins = 0; !ring.try_push(p);) backoff(spins);
  }
  state.counters["faults_per_1M"] = static_cast<double>(minor_faults_of_this_thread() - faults) * 1e6 /
                                    static_cast<double>(state.iterations());
  stop.store(true, std::memory_order_release);
  consumer.join();
  report_per_op(state, 1);
}

void TaskPool_CrossThread(benchmark::State& state) { cross_thread(state, true); }
BENCHMARK(TaskPool_CrossThread)->UseRealTime();

void TaskPool_CrossThreadRingOnly(benchmark::State& state) { cross_thread(state, false); }
BENCHMARK(TaskPool_CrossThreadRingOnly)->UseRealTime();

}  // namespace
