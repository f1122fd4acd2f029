// The task pool: no node handed out twice, chains move between threads, growth failure is loud.
#include <gtest/gtest.h>

#include <atomic>
#include <new>
#include <set>
#include <thread>
#include <vector>

#include <kairos/detail/task_pool.hpp>

namespace kairos::detail {
namespace {

TEST(TaskPool, NoNodeIsHandedOutTwiceAcrossThreads) {
  constexpr int kN = 20000;
  std::vector<void*> a(kN);
  for (int i = 0; i < kN; ++i) a[i] = task_alloc(0);
  std::set<void*> unique(a.begin(), a.end());
  EXPECT_EQ(unique.size(), a.size());
  // Free on another thread (its chains go to the global stack), allocate again here.
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

TEST(TaskPool, FailingGrowthThrowsBadAllocAndRecovers) {
  set_slab_allocator_for_testing([](std::size_t) -> void* { return nullptr; });
  release_thread_cache_for_testing();
  EXPECT_THROW(task_alloc(3), std::bad_alloc);
  set_slab_allocator_for_testing(nullptr);
  void* p = task_alloc(3);
  EXPECT_NE(p, nullptr);
  task_free(p, 3);
}

TEST(TaskPool, SizeClassesFitTheirNodes) {
  EXPECT_EQ(size_class_for(1, 8), 0);
  EXPECT_EQ(kClassSizes[size_class_for(56, 8)], 56u);
  EXPECT_EQ(kClassSizes[size_class_for(57, 8)], 64u);
  EXPECT_EQ(size_class_for(257, 8), kHeapClass);
  EXPECT_EQ(size_class_for(64, 32), kHeapClass);  // over-aligned: operator new
}

}  // namespace
}  // namespace kairos::detail
