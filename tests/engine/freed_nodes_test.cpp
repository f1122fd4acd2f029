// FreedNodes (core/src/freed_nodes.hpp): every node a burial lets go is destroyed once, at
// once, and its memory goes back to the pool (the next allocations of its class on this thread
// take exactly those nodes), across class changes, a full buffer and heap-class nodes.
#include <gtest/gtest.h>

#include <cstddef>
#include <memory>
#include <set>
#include <vector>

#include <kairos/detail/task.hpp>
#include <kairos/detail/task_pool.hpp>

#include "freed_nodes.hpp"

namespace kairos::detail {
namespace {

// A callable of a given size whose destructor counts: the node's class follows its size.
template <std::size_t Bytes>
struct Counted {
  int* destroyed;
  unsigned char pad[Bytes];
  explicit Counted(int* d) : destroyed(d), pad{} {}
  Counted(Counted&& o) noexcept : destroyed(o.destroyed), pad{} { o.destroyed = nullptr; }
  ~Counted() {
    if (destroyed != nullptr) ++*destroyed;
  }
  void operator()() const {}
};
struct alignas(64) OverAligned {  // the heap class: operator new
  int* destroyed;
  explicit OverAligned(int* d) : destroyed(d) {}
  OverAligned(OverAligned&& o) noexcept : destroyed(o.destroyed) { o.destroyed = nullptr; }
  ~OverAligned() {
    if (destroyed != nullptr) ++*destroyed;
  }
  void operator()() const {}
};

template <class F>
TaskBase* node(int* destroyed) {
  return make_node<false>(F(destroyed), 0, 1);
}

TEST(FreedNodes, EveryNodeIsDestroyedOnceAndItsMemoryGoesBackToItsClass) {
  int destroyed = 0;
  std::vector<TaskBase*> small, large, heap;
  // More than the buffer holds of one class, interleaved with another class and the heap class.
  for (int i = 0; i < 150; ++i) {
    small.push_back(node<Counted<8>>(&destroyed));
    if (i % 3 == 0) large.push_back(node<Counted<40>>(&destroyed));
    if (i % 50 == 0) heap.push_back(node<OverAligned>(&destroyed));
  }
  const std::uint8_t small_cls = small[0]->ops->size_class, large_cls = large[0]->ops->size_class;
  ASSERT_NE(small_cls, large_cls);
  ASSERT_NE(small_cls, kHeapClass);
  ASSERT_NE(large_cls, kHeapClass);
  ASSERT_EQ(heap[0]->ops->size_class, kHeapClass);
  const std::set<void*> small_set(small.begin(), small.end()), large_set(large.begin(), large.end());
  {
    FreedNodes freed;
    std::size_t l = 0, h = 0;
    for (std::size_t i = 0; i < small.size(); ++i) {
      freed.destroy(small[i]);
      if (i % 3 == 0) freed.destroy(large[l++]);
      if (i % 50 == 0) freed.destroy(heap[h++]);
    }
    EXPECT_EQ(destroyed, static_cast<int>(small.size() + large.size() + heap.size()))
        << "each node's remains go at once, not at the flush";
  }
  EXPECT_EQ(destroyed, static_cast<int>(small.size() + large.size() + heap.size())) << "destroyed twice";
  // This thread's cache took the freed memory back: its next allocations of each class are
  // exactly those nodes (the cache hands back what it was given before it grows).
  std::set<void*> again_small, again_large;
  for (std::size_t i = 0; i < small.size(); ++i) again_small.insert(task_alloc(small_cls));
  for (std::size_t i = 0; i < large.size(); ++i) again_large.insert(task_alloc(large_cls));
  EXPECT_EQ(again_small, small_set);
  EXPECT_EQ(again_large, large_set);
  for (void* p : again_small) task_free(p, small_cls);
  for (void* p : again_large) task_free(p, large_cls);
}

}  // namespace
}  // namespace kairos::detail
