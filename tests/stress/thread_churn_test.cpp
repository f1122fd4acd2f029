// thread_churn_test.cpp: issue 9, item 4. Waves of short-lived threads that overlap, each
// submitting a few tasks through the public API and exiting, must leave memory flat: the task
// pool is bounded by the tasks alive and the threads alive, not by the threads that ever ran.
//   KAIROS_CHURN_THREADS  threads in all (default 100,000; 4,096 in sanitized builds)
// Every wave: 64 threads alive at once (a latch holds each until all have submitted), each one
// submits a task that runs at once, schedules one an hour ahead and cancels it (remove-on-cancel),
// and waits for its run. After a warm-up, the pool's slab memory and the heap in use (mallinfo2)
// may not grow by more than 1 MiB; every task ran or was cancelled exactly once.
#include <gtest/gtest.h>
#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <latch>
#include <memory>
#include <thread>
#include <vector>

#include <kairos/detail/task_pool.hpp>
#include <kairos/kairos.hpp>

#include "support.hpp"

namespace {

using namespace std::chrono_literals;
using kairos_test::kPatience;

long churn_threads() {
  const long fallback = kairos_test::sanitized_build() ? 4096 : 100'000;
  const char* v = std::getenv("KAIROS_CHURN_THREADS");
  if (v == nullptr || *v == '\0') return fallback;
  long n = std::strtol(v, nullptr, 10);
  return n > 0 ? n : fallback;
}

std::size_t heap_in_use() {
  struct mallinfo2 mi = ::mallinfo2();
  return mi.uordblks + mi.hblkhd;
}

TEST(ThreadChurn, OverlappingWavesOfSubmittingThreadsKeepMemoryFlat) {
  kairos_test::Watchdog dog("thread churn", 300s);
  const long threads = churn_threads();
  constexpr int kWave = 64;
  const long waves = (threads + kWave - 1) / kWave;
  const long warmup_waves = std::max(8L, waves / 20);

  kairos::Options o;
  o.shards = 2;
  o.threads_per_shard = 2;
  o.remove_on_cancel = true;
  kairos::Scheduler s(o);
  std::atomic<long> runs{0};
  std::atomic<long> cancelled{0};
  std::atomic<long> lost{0};
  auto payload = std::make_shared<int>(7);  // a capture, released with each task

  std::size_t slab_at_warm = 0, heap_at_warm = 0, slab_max = 0, heap_max = 0;
  for (long w = 0; w < waves; ++w) {
    std::latch all_submitted(kWave);
    std::vector<std::thread> wave;
    wave.reserve(kWave);
    for (int i = 0; i < kWave; ++i) {
      wave.emplace_back([&] {
        auto now = s.submit([&runs, payload] { runs.fetch_add(1, std::memory_order_relaxed); });
        auto later = s.schedule([&runs, payload] { runs.fetch_add(1, std::memory_order_relaxed); }, 1h);
        if (later.cancel()) cancelled.fetch_add(1, std::memory_order_relaxed);
        all_submitted.arrive_and_wait();  // all 64 threads alive, each with tasks in flight
        if (now.wait_for(kPatience) != std::future_status::ready) lost.fetch_add(1, std::memory_order_relaxed);
      });
    }
    for (std::thread& t : wave) t.join();
    ASSERT_TRUE(s.wait_idle(kPatience));
    if (w + 1 == warmup_waves) {
      slab_at_warm = kairos::detail::slab_bytes_reserved();
      heap_at_warm = heap_in_use();
    } else if (w + 1 > warmup_waves) {
      slab_max = std::max(slab_max, kairos::detail::slab_bytes_reserved());
      heap_max = std::max(heap_max, heap_in_use());
    }
  }
  s.shutdown();
  ASSERT_TRUE(s.await_termination(kPatience));
  const long total = waves * kWave;
  std::printf("[ churn    ] %ld threads in waves of %d through kairos::Scheduler: slab %zu -> %zu bytes, "
              "heap %zu -> %zu bytes\n",
              total, kWave, slab_at_warm, slab_max, heap_at_warm, heap_max);
  EXPECT_EQ(lost.load(), 0);
  EXPECT_EQ(runs.load(), total) << "every task submitted for now ran, none of the cancelled ones";
  EXPECT_EQ(cancelled.load(), total);
  EXPECT_EQ(payload.use_count(), 1) << "a task's capture outlived it";
  constexpr std::size_t kMiB = 1 << 20;
  EXPECT_LE(slab_max, slab_at_warm + kMiB) << "the task pool grows with threads that came and went";
  EXPECT_LE(heap_max, heap_at_warm + kMiB) << "the heap grows with threads that came and went";
}

}  // namespace
