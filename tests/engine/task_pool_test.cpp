// The task pool: no node handed out twice, magazines move between threads, batch frees, slabs
// prepared off the allocating thread (no page fault there), growth failure is loud, and memory
// stays flat under thread churn.
//   KAIROS_CHURN_THREADS  threads of the churn test (default 100,000; 4,096 in sanitized builds)
#include <gtest/gtest.h>
#include <malloc.h>
#include <sys/resource.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <latch>
#include <mutex>
#include <new>
#include <set>
#include <thread>
#include <vector>

#include <kairos/detail/task_pool.hpp>

#include "task_pool_testing.hpp"

namespace kairos::detail {
namespace {

bool sanitized() {
#if defined(KAIROS_SANITIZED) || defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  return true;
#else
  return false;
#endif
}

bool thread_sanitizer() {
#if defined(__SANITIZE_THREAD__)
  return true;
#else
  return false;
#endif
}

long env_long(const char* name, long fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  long n = std::strtol(v, nullptr, 10);
  return n > 0 ? n : fallback;
}

// Heap in use as glibc counts it (arenas + mmapped chunks); 0 under the sanitizers' allocators.
std::size_t heap_in_use() {
  struct mallinfo2 mi = ::mallinfo2();
  return mi.uordblks + mi.hblkhd;
}

long minor_faults_of_this_thread() {
  rusage ru{};
  ::getrusage(RUSAGE_THREAD, &ru);
  return ru.ru_minflt;
}

TEST(TaskPool, NoNodeIsHandedOutTwiceAcrossThreads) {
  constexpr int kN = 20000;
  std::vector<void*> a(kN);
  for (int i = 0; i < kN; ++i) a[i] = task_alloc(0);
  std::set<void*> unique(a.begin(), a.end());
  EXPECT_EQ(unique.size(), a.size());
  // Free on another thread (its magazines go to the global pool), allocate again here.
  std::thread([&] {
    for (void* p : a) task_free(p, 0);
  }).join();
  std::vector<void*> b(kN);
  for (int i = 0; i < kN; ++i) b[i] = task_alloc(0);
  std::set<void*> unique_b(b.begin(), b.end());
  EXPECT_EQ(unique_b.size(), b.size());
  std::size_t reused = 0;
  for (void* p : b) reused += unique.count(p);
  EXPECT_GT(reused, static_cast<std::size_t>(kN / 2));  // the other thread's frees came back
  for (void* p : b) task_free(p, 0);
}

TEST(TaskPool, NodesAreDistinctAlignedAndOfTheirClassSize) {
  for (std::uint8_t cls = 0; cls < kClassCount; ++cls) {
    std::vector<char*> held;
    for (int i = 0; i < 300; ++i) {
      auto* p = static_cast<char*>(task_alloc(cls));
      ASSERT_EQ(reinterpret_cast<std::uintptr_t>(p) % 8, 0u);
      std::memset(p, 0xA5, kClassSizes[cls]);  // the whole node is writable (ASan: unpoisoned)
      held.push_back(p);
    }
    std::set<char*> sorted(held.begin(), held.end());
    ASSERT_EQ(sorted.size(), held.size());
    char* prev = nullptr;
    for (char* p : sorted) {  // no two nodes overlap
      if (prev != nullptr) {
        EXPECT_GE(static_cast<std::size_t>(p - prev), kClassSizes[cls]);
      }
      prev = p;
    }
    for (char* p : held) task_free(p, cls);
  }
}

TEST(TaskPool, BatchFreeHandsNodesBackWithoutGrowth) {
  constexpr std::uint8_t kCls = 4;
  // Sizes around the magazine's: within one, exactly one, spilling into the next, several.
  for (std::size_t n : {std::size_t{1}, kMagazineSlots - 1, kMagazineSlots, kMagazineSlots + 1, 5 * kMagazineSlots + 7}) {
    std::vector<void*> a(n);
    std::thread([&] {
      for (void*& p : a) p = task_alloc(kCls);
    }).join();
    const std::size_t reserved = slab_bytes_reserved();
    // Freed in one call on a thread that then exits: its magazines go to the global pool whole.
    std::thread([&] { task_free_batch(a.data(), a.size(), kCls); }).join();
    std::thread([&] {
      // A thread with an empty cache takes exactly those magazines back.
      std::vector<void*> b(n);
      for (void*& p : b) p = task_alloc(kCls);
      EXPECT_EQ(slab_bytes_reserved(), reserved) << "n=" << n << ": the batch did not come back";
      std::set<void*> sa(a.begin(), a.end()), sb(b.begin(), b.end());
      EXPECT_EQ(sb.size(), n) << "a node handed out twice";
      EXPECT_EQ(sa, sb) << "n=" << n;
      // And through this thread's own cache, in one call, then taken again.
      task_free_batch(b.data(), b.size(), kCls);
      std::vector<void*> c(n);
      for (void*& p : c) p = task_alloc(kCls);
      EXPECT_EQ(std::set<void*>(c.begin(), c.end()), sa) << "n=" << n;
      task_free_batch(c.data(), c.size(), kCls);
    }).join();
  }
}

TEST(TaskPool, CrossThreadFreesComeBackInWholeMagazines) {
  // A consumer frees what a producer allocated (the engine's shape): the producer must get the
  // nodes back rather than carve new ones, however many rounds run.
  constexpr std::uint8_t kCls = 5;
  constexpr int kRounds = 200;
  constexpr std::size_t kPerRound = 3 * kMagazineSlots;
  std::vector<void*> held(kPerRound);
  std::size_t reserved_after_first = 0;
  for (int r = 0; r < kRounds; ++r) {
    for (void*& p : held) p = task_alloc(kCls);
    std::thread consumer([&] {
      for (void* p : held) task_free(p, kCls);
    });
    consumer.join();
    if (r == 0) reserved_after_first = slab_bytes_reserved();
  }
  EXPECT_EQ(slab_bytes_reserved(), reserved_after_first);
}

TEST(TaskPool, PrepareKeepsASlabReadySoTheAllocatingThreadNeitherGrowsNorFaults) {
  constexpr std::uint8_t kCls = 1;  // 56 bytes: a capture-less one-shot node
  const std::size_t per_slab = kSlabBytes / kClassSizes[kCls];
  const std::size_t n = 3 * per_slab + 100;
  // No free node of the class may serve this test: set aside what the pool holds. Then one node
  // carved puts the class in use and asks for its ready slabs (TP8), whatever an earlier test
  // left (a failed prepare clears the request).
  release_thread_cache_for_testing();
  void* first = task_alloc(kCls);
  // A second thread plays the engine's leader: it prepares when asked, between "tasks".
  std::mutex mu;
  std::condition_variable cv;
  int asked = 0, done = 0;
  bool stop = false;
  std::thread leader([&] {
    std::unique_lock lock(mu);
    for (;;) {
      cv.wait(lock, [&] { return stop || asked > done; });
      if (stop) return;
      lock.unlock();
      task_pool_prepare();
      lock.lock();
      ++done;
      cv.notify_all();
    }
  });
  auto prepare_now = [&] {
    std::unique_lock lock(mu);
    int ticket = ++asked;
    cv.notify_all();
    cv.wait(lock, [&] { return done >= ticket; });
  };
  prepare_now();  // the slab dropped above is replaced before the first allocation
  std::vector<char*> held(n);
  std::memset(held.data(), 0, n * sizeof(char*));  // its pages fault now, not in the loop
  const TaskPoolStats before = task_pool_stats();
  const long faults_before = minor_faults_of_this_thread();
  for (std::size_t i = 0; i < n; ++i) {
    held[i] = static_cast<char*>(task_alloc(kCls));
    std::memset(held[i], 0x5A, kClassSizes[kCls]);  // the producer writes its node, as submit does
    if (i % kMagazineSlots == 0) prepare_now();     // the leader's loop, between tasks
  }
  const long faults = minor_faults_of_this_thread() - faults_before;
  const TaskPoolStats after = task_pool_stats();
  {
    std::lock_guard lock(mu);
    stop = true;
  }
  cv.notify_all();
  leader.join();
  EXPECT_EQ(after.slabs_grown_by_alloc, before.slabs_grown_by_alloc) << "the allocating thread populated a slab";
  EXPECT_GE(after.slabs_prepared, before.slabs_prepared + 3);
  // A node's page faulting on the allocating thread costs ~1 us; 3 slabs are ~190 pages. Thread
  // sanitizer faults in its own shadow of each page on first access, so it is exempt.
  if (!thread_sanitizer()) {
    EXPECT_LE(faults, 4) << "page faults on the allocating thread";
  }
  std::printf("[ pool     ] %zu allocations from prepared slabs: %ld minor faults on the allocating thread\n", n,
              faults);

  // Nothing to do: prepare changes nothing.
  task_pool_prepare();
  const TaskPoolStats idle = task_pool_stats();
  task_pool_prepare();
  EXPECT_EQ(task_pool_stats().slabs_prepared, idle.slabs_prepared);
  EXPECT_EQ(task_pool_stats().slab_bytes_reserved, idle.slab_bytes_reserved);

  // Without prepare the allocating thread grows by itself, counted, and does not fail (past
  // the rest of its slab and the two slabs kept ready).
  const TaskPoolStats unprepared = task_pool_stats();
  std::vector<void*> more(3 * per_slab + 10);
  for (void*& p : more) p = task_alloc(kCls);
  EXPECT_GE(task_pool_stats().slabs_grown_by_alloc, unprepared.slabs_grown_by_alloc + 1);
  for (void* p : more) task_free(p, kCls);
  for (char* p : held) task_free(p, kCls);
  task_free(first, kCls);
  set_slab_allocator_for_testing(nullptr);  // returns the nodes set aside
}

TEST(TaskPool, ASlabIsItsOwnMappingWhateverMallocsThresholdIs) {
  // glibc serves a 256 KiB request from mmap until a larger mmapped block is freed, then from an
  // arena (its dynamic threshold). W5 measured 46 bytes per pending timer in a process's first
  // run and 55 in its later ones while slabs came from operator new; a slab of its own mapping
  // costs its pages and nothing of the heap's, whatever ran before.
  if (sanitized()) GTEST_SKIP() << "the sanitizers' allocators: mallinfo2 counts nothing";
  // (the asm keeps the compiler from eliding a malloc whose block nothing reads)
  auto opaque = [](void* p) { asm volatile("" : "+r"(p)::"memory"); return p; };
  std::free(opaque(std::malloc(4 << 20)));  // a freed mmapped block: the threshold rises above it
  {  // the premise: a slab-sized block now comes from an arena
    const std::size_t arena = ::mallinfo2().uordblks;
    void* probe = opaque(std::malloc(kSlabBytes));
    const bool from_arena = ::mallinfo2().uordblks >= arena + kSlabBytes;
    std::free(probe);
    if (!from_arena) GTEST_SKIP() << "malloc's threshold did not move (M_MMAP_THRESHOLD set?)";
  }
  constexpr std::uint8_t kCls = 1;
  release_thread_cache_for_testing();  // the next allocation grows a slab
  const TaskPoolStats before = task_pool_stats();
  const std::size_t heap_before = heap_in_use();
  void* node = task_alloc(kCls);
  const std::size_t heap_after = heap_in_use();
  EXPECT_GE(task_pool_stats().slab_bytes_reserved, before.slab_bytes_reserved + kSlabBytes);
  EXPECT_LT(heap_after, heap_before + kSlabBytes / 4) << "the slab came from malloc's heap";
  task_free(node, kCls);
  set_slab_allocator_for_testing(nullptr);  // returns the nodes set aside
}

TEST(TaskPool, PrepareOncePerDrainIntervalStillKeepsTheAllocatingThreadFromGrowing) {
  // W1's shape: the leader prepares only when it wakes, every kShortHighWater = 8,192 far-future
  // submissions while the pool grows (LeaderWait::set_high_water_mask): more than one slab's nodes
  // (5,461 of 48 bytes). With two slabs kept ready, the allocating thread never has to grow (and
  // fault) a slab itself; with one it grew half of them.
  constexpr std::uint8_t kCls = 1;  // 48 bytes: a one-shot node with a one-pointer capture
  constexpr std::size_t kWake = 8192;
  static_assert(kWake > kSlabBytes / 48);
  release_thread_cache_for_testing();  // no free node of the class may serve this test
  std::vector<void*> held;
  held.reserve(12 * kWake + 1);
  held.push_back(task_alloc(kCls));  // carved: the class is in use and asks for its ready slabs (TP8)
  task_pool_prepare();
  const TaskPoolStats before = task_pool_stats();
  for (std::size_t i = 0; i < 12 * kWake; ++i) {
    held.push_back(task_alloc(kCls));
    if (i % kWake == kWake - 1) task_pool_prepare();  // the leader's wake
  }
  const TaskPoolStats after = task_pool_stats();
  EXPECT_EQ(after.slabs_grown_by_alloc, before.slabs_grown_by_alloc) << "the allocating thread grew slabs itself";
  EXPECT_GE(after.slabs_prepared, before.slabs_prepared + 12 * kWake / (kSlabBytes / 48));
  for (void* p : held) task_free(p, kCls);
  set_slab_allocator_for_testing(nullptr);  // returns the nodes set aside
}

TEST(TaskPool, PrepareMakesMagazinesAheadSoABurstOfFreesMakesNone) {
  // W7's shape on a fresh process: one thread allocates a burst, another frees it all at once.
  // The freeing thread needs one empty magazine per 64 nodes; task_pool_prepare() (the leader's,
  // before it waits) has made them ahead, so the frees make none and fault no page for them.
  constexpr std::uint8_t kCls = 7;  // 112 bytes: no other test of this binary uses the class much
  constexpr std::size_t kN = 40000;  // 625 magazines' worth, below kMagazinesAhead
  static_assert(kN / kMagazineSlots < kMagazinesAhead);
  std::vector<void*> held(kN);
  for (void*& p : held) p = task_alloc(kCls);
  const TaskPoolStats before_prepare = task_pool_stats();
  for (int i = 0; i < 16; ++i) task_pool_prepare();  // each call makes at most 256 (cut short: asks again)
  const TaskPoolStats before = task_pool_stats();
  long faults = 0;
  std::thread consumer([&] {
    const long faults_before = minor_faults_of_this_thread();
    for (void* p : held) task_free(p, kCls);
    faults = minor_faults_of_this_thread() - faults_before;
  });
  consumer.join();
  const TaskPoolStats after = task_pool_stats();
  EXPECT_EQ(after.magazines, before.magazines) << "the freeing thread made magazines of its own";
  // ~40 pages of magazines would fault on the freeing thread without them (the sanitizers'
  // allocators and shadow pages fault on their own: exempt).
  if (!sanitized()) {
    EXPECT_LE(faults, 8) << "page faults on the freeing thread";
  }
  std::printf("[ pool     ] %zu frees on a fresh thread: %llu magazines made there, %ld minor faults\n", kN,
              static_cast<unsigned long long>(after.magazines - before.magazines), faults);
  // The memory made ahead is bounded by the class's slabs: one magazine per 64 nodes they hold, + 2.
  const std::size_t per_slab = (kSlabBytes - 64) / kClassSizes[kCls];
  const std::size_t slabs = (before.slab_bytes_reserved + kSlabBytes - 1) / kSlabBytes;  // every class's: a bound
  EXPECT_LE(before.magazines - before_prepare.magazines, slabs * per_slab / kMagazineSlots + 2);
}

std::atomic<int> g_slab_calls{0};
void* refuse_slab(std::size_t) {
  g_slab_calls.fetch_add(1);
  return nullptr;
}

TEST(TaskPool, FailingGrowthThrowsBadAllocAndRecovers) {
  set_slab_allocator_for_testing(&refuse_slab);
  release_thread_cache_for_testing();
  const int calls = g_slab_calls.load();
  EXPECT_THROW(task_alloc(3), std::bad_alloc);
  EXPECT_GT(g_slab_calls.load(), calls) << "the pool never tried to grow";
  // Every class, and on a thread whose cache never held anything.
  std::thread([] {
    for (std::uint8_t cls = 0; cls < kClassCount; ++cls) EXPECT_THROW(task_alloc(cls), std::bad_alloc);
  }).join();
  // A failing prepare leaves nothing ready and does not throw.
  const TaskPoolStats before = task_pool_stats();
  task_pool_prepare();
  EXPECT_EQ(task_pool_stats().slabs_prepared, before.slabs_prepared);
  EXPECT_THROW(task_alloc(3), std::bad_alloc);
  set_slab_allocator_for_testing(nullptr);
  void* p = task_alloc(3);
  EXPECT_NE(p, nullptr);
  task_free(p, 3);
}

TEST(TaskPool, FreesWhileGrowthFailsAreKeptAndReturn) {
  constexpr std::uint8_t kCls = 6;
  std::vector<void*> a(4 * kMagazineSlots);
  for (void*& p : a) p = task_alloc(kCls);
  set_slab_allocator_for_testing(&refuse_slab);
  release_thread_cache_for_testing();
  // Frees never fail: they need no slab.
  std::thread([&] {
    for (void* p : a) task_free(p, kCls);
  }).join();
  // The freed nodes are in the global pool again: allocations succeed without growing.
  std::vector<void*> b(a.size());
  for (void*& p : b) p = task_alloc(kCls);
  EXPECT_EQ(std::set<void*>(a.begin(), a.end()), std::set<void*>(b.begin(), b.end()));
  EXPECT_THROW(task_alloc(kCls), std::bad_alloc);
  set_slab_allocator_for_testing(nullptr);
  for (void* p : b) task_free(p, kCls);
}

#if defined(__SANITIZE_ADDRESS__)
TEST(TaskPoolDeathTest, AFreedNodeIsPoisonedWhole) {
  // Every byte of a free node, the first included (no link lives in it any more).
  for (std::size_t offset : {std::size_t{0}, kClassSizes[2] - 1}) {
    EXPECT_DEATH(
        {
          auto* p = static_cast<volatile char*>(task_alloc(2));
          task_free(const_cast<char*>(p), 2);
          p[offset] = 1;
        },
        "use-after-poison");
  }
}
#endif

TEST(TaskPool, SizeClassesFitTheirNodes) {
  EXPECT_EQ(size_class_for(1, 8), 0);
  EXPECT_EQ(kClassSizes[size_class_for(56, 8)], 56u);
  EXPECT_EQ(kClassSizes[size_class_for(57, 8)], 64u);
  EXPECT_EQ(size_class_for(257, 8), kHeapClass);
  EXPECT_EQ(size_class_for(64, 32), kHeapClass);  // over-aligned: operator new
}

// Issue 9, item 4: waves of short-lived threads that overlap, each allocating a few nodes and
// freeing a neighbour's, must not grow the pool: memory is bounded by the threads alive.
TEST(TaskPool, ThreadChurnInOverlappingWavesKeepsMemoryFlat) {
  const long threads = env_long("KAIROS_CHURN_THREADS", sanitized() ? 4096 : 100'000);
  constexpr int kWave = 64;
  constexpr int kNodesPerThread = 4;
  const long waves = (threads + kWave - 1) / kWave;
  const long warmup_waves = std::max(4L, waves / 20);
  std::size_t slab_at_warm = 0, heap_at_warm = 0;
  std::size_t slab_max = 0, heap_max = 0;
  std::vector<std::array<void*, kNodesPerThread>> nodes(kWave);
  for (long w = 0; w < waves; ++w) {
    std::latch all_allocated(kWave);
    std::vector<std::thread> wave;
    wave.reserve(kWave);
    for (int i = 0; i < kWave; ++i) {
      wave.emplace_back([&, i] {
        // Several classes, as tasks of different captures would.
        for (int k = 0; k < kNodesPerThread; ++k) nodes[i][k] = task_alloc(static_cast<std::uint8_t>(k % 3));
        all_allocated.arrive_and_wait();  // all 64 alive, each holding its nodes
        const auto& other = nodes[(i + 1) % kWave];  // free a neighbour's: cross-thread frees
        for (int k = 0; k < kNodesPerThread; ++k) task_free(other[k], static_cast<std::uint8_t>(k % 3));
      });
    }
    for (std::thread& t : wave) t.join();
    if (w + 1 == warmup_waves) {
      slab_at_warm = slab_bytes_reserved();
      heap_at_warm = heap_in_use();
    } else if (w + 1 > warmup_waves) {
      slab_max = std::max(slab_max, slab_bytes_reserved());
      heap_max = std::max(heap_max, heap_in_use());
    }
  }
  constexpr std::size_t kMiB = 1 << 20;
  std::printf("[ churn    ] %ld threads in waves of %d: slab %zu -> %zu bytes, heap %zu -> %zu bytes\n",
              waves * kWave, kWave, slab_at_warm, slab_max, heap_at_warm, heap_max);
  EXPECT_LE(slab_max, slab_at_warm + kMiB) << "the pool grows with threads that came and went";
  EXPECT_LE(heap_max, heap_at_warm + kMiB) << "the heap grows with threads that came and went";
}

}  // namespace
}  // namespace kairos::detail
