// The indexed heap, against an ordered reference; with slots that hold the node (the default
// window), with most nodes in the side table (a window of 64 bytes), and with both mixed; where
// the default window is placed (on pooled nodes, whatever came first).
#include <gtest/gtest.h>

#include <sys/mman.h>

#include <algorithm>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <kairos/detail/task.hpp>

#include "timer_heap.hpp"
#include "task_nodes.hpp"

namespace kairos::detail {
namespace {

using testing::Key;
using testing::kPooledTestOps;
using testing::make_nodes;

class TimerHeapWindow : public ::testing::TestWithParam<std::uint64_t> {};

INSTANTIATE_TEST_SUITE_P(Windows, TimerHeapWindow,
                         ::testing::Values(TimerHeap::kWindowBytes, std::uint64_t{1} << 16, std::uint64_t{64}),
                         [](const ::testing::TestParamInfo<std::uint64_t>& p) { return "window_" + std::to_string(p.param); });

TEST_P(TimerHeapWindow, RandomPushPopEraseMatchesAnOrderedSet) {
  std::mt19937_64 rng(12345);
  auto nodes = make_nodes(5000);
  TimerHeap heap(GetParam());
  std::size_t most_wide = 0;
  std::set<Key> ref;
  std::vector<TaskBase*> in;
  std::uint64_t seq = 0;
  for (int step = 0; step < 200000; ++step) {
    int op = static_cast<int>(rng() % 10);
    if (op < 5 && in.size() < nodes.size()) {
      TaskBase* t = nullptr;
      for (auto& n : nodes)
        if (n->queue_slot == kNotQueued) { t = n.get(); break; }
      t->deadline = static_cast<std::int64_t>(rng() % 64);  // many equal deadlines
      t->seq = seq++;
      heap.push(t);
      ref.insert({t->deadline, t->seq});
      in.push_back(t);
    } else if (op < 8 && !in.empty()) {
      TaskBase* t = heap.pop();
      ASSERT_EQ(Key(t->deadline, t->seq), *ref.begin());
      ref.erase(ref.begin());
      EXPECT_EQ(t->queue_slot, kNotQueued);
      std::erase(in, t);
    } else if (!in.empty()) {
      TaskBase* t = in[rng() % in.size()];
      ASSERT_TRUE(heap.erase(t));
      ASSERT_FALSE(heap.erase(t));  // a second erase finds nothing
      ref.erase({t->deadline, t->seq});
      std::erase(in, t);
    }
    if (step % 997 == 0) {
      ASSERT_TRUE(heap.check_invariants());
    }
    ASSERT_EQ(heap.size(), ref.size());
    ASSERT_LE(heap.wide(), heap.size());
    most_wide = std::max(most_wide, heap.wide());
  }
  if (GetParam() == 64) {
    EXPECT_GT(most_wide, heap.size() / 2) << "a window of 64 bytes holds few nodes in their slots";
  } else if (GetParam() == TimerHeap::kWindowBytes) {
    EXPECT_EQ(most_wide, 0u) << "the task pool's nodes lie within 16 GiB of each other";
  }
  heap.clear();
  EXPECT_EQ(heap.wide(), 0u);
  for (auto& n : nodes) EXPECT_EQ(n->queue_slot, kNotQueued);
}

// Side-table entries freed by pops and erases are taken again: churn at a steady size does not
// grow the table past the most tasks held at once.
TEST(TimerHeap, SideTableEntriesAreReused) {
  auto nodes = make_nodes(256);
  TimerHeap heap(64);
  ASSERT_TRUE(heap.try_reserve(nodes.size()));
  const std::size_t capacity = heap.capacity();
  std::mt19937_64 rng(3);
  std::vector<TaskBase*> in;
  std::uint64_t seq = 0;
  for (int round = 0; round < 20000; ++round) {
    if (in.size() < 128 || rng() % 2 == 0) {
      TaskBase* t = nullptr;
      for (auto& n : nodes)
        if (n->queue_slot == kNotQueued) { t = n.get(); break; }
      if (t == nullptr) continue;
      t->deadline = static_cast<std::int64_t>(rng() % 1000);
      t->seq = static_cast<std::uint32_t>(seq++);
      heap.push(t);
      in.push_back(t);
    } else if (rng() % 2 == 0) {
      std::erase(in, heap.pop());
    } else {
      TaskBase* t = in[rng() % in.size()];
      ASSERT_TRUE(heap.erase(t));
      std::erase(in, t);
    }
  }
  EXPECT_TRUE(heap.check_invariants());
  EXPECT_EQ(heap.capacity(), capacity) << "no growth within the reservation";
  EXPECT_GT(heap.wide(), 0u);
}

// remove_if keeps the others in order and frees the side-table entries of those it removes.
TEST_P(TimerHeapWindow, RemoveIfKeepsOrderAndFreesEntries) {
  auto nodes = make_nodes(2000);
  TimerHeap heap(GetParam());
  std::mt19937_64 rng(11);
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    nodes[i]->deadline = static_cast<std::int64_t>(rng() % 500);
    nodes[i]->seq = static_cast<std::uint32_t>(i);
    heap.push(nodes[i].get());
  }
  std::vector<TaskBase*> removed;
  heap.remove_if([](const TaskBase* t) { return t->seq % 3 == 0; }, [&](TaskBase* t) { removed.push_back(t); });
  EXPECT_EQ(removed.size(), (nodes.size() + 2) / 3);
  for (TaskBase* t : removed) EXPECT_EQ(t->queue_slot, kNotQueued);
  ASSERT_TRUE(heap.check_invariants());
  std::set<Key> ref;
  for (auto& n : nodes)
    if (n->seq % 3 != 0) ref.insert({n->deadline, n->seq});
  for (const Key& k : ref) {
    TaskBase* t = heap.pop();
    ASSERT_EQ(Key(t->deadline, t->seq), k);
  }
  EXPECT_TRUE(heap.empty());
  EXPECT_EQ(heap.wide(), 0u);
}

TEST_P(TimerHeapWindow, EqualDeadlinesPopInSequenceOrder) {
  auto nodes = make_nodes(1000);
  TimerHeap heap(GetParam());
  std::vector<std::size_t> order(nodes.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), std::mt19937_64(7));
  for (std::size_t i : order) {
    nodes[i]->deadline = 5;
    nodes[i]->seq = i;
    heap.push(nodes[i].get());
  }
  for (std::size_t i = 0; i < nodes.size(); ++i) EXPECT_EQ(heap.pop()->seq, i);
}

// The premise of the default window: the task pool's slabs, every class's, lie close together,
// so a scheduler's nodes all fit in their slots (none in the side table).
TEST(TimerHeap, PooledNodesOfEveryClassFitTheDefaultWindow) {
  constexpr std::size_t kPerClass = 3 * kSlabBytes / 40;  // several slabs of the smallest class
  std::vector<std::pair<void*, std::uint8_t>> memory;
  std::vector<TaskOps> ops(kClassCount, kPooledTestOps);
  for (std::uint8_t c = 0; c < kClassCount; ++c) ops[c].size_class = c;
  TimerHeap heap;
  std::uint32_t seq = 0;
  for (std::uint8_t c = 0; c < kClassCount; ++c) {
    for (std::size_t i = 0; i < kPerClass * kClassSizes[0] / kClassSizes[c]; ++i) {
      void* p = task_alloc(c);
      memory.emplace_back(p, c);
      auto* t = ::new (p) TaskBase();
      t->ops = &ops[c];
      t->deadline = static_cast<std::int64_t>(seq % 97);
      t->seq = seq++;
      heap.push(t);
    }
  }
  EXPECT_EQ(heap.wide(), 0u) << "of " << heap.size() << " pooled nodes";
  EXPECT_TRUE(heap.check_invariants());
  heap.clear();
  for (auto [p, c] : memory) task_free(p, c);
}

// A node of operator new (a callable too large for the pool) may lie terabytes from the slabs.
// Pushed first, it must not place the window: every pooled node after it would go to the side
// table for the heap's life. It goes there itself, and the pooled nodes keep their slots.
TEST(TimerHeap, AnOperatorNewNodeFirstDoesNotPlaceTheWindow) {
#if defined(__SANITIZE_THREAD__)
  // ThreadSanitizer's mmap interceptor ends the process on a fixed mapping outside its application
  // ranges ("mmap at bad address": once in a CI run, where the pool's slabs lay near a range's
  // edge), instead of failing it. The test has one thread: the normal and ASan+UBSan runs keep it.
  GTEST_SKIP() << "a fixed mapping 64 GiB from the pool may fall outside ThreadSanitizer's ranges";
#endif
  auto nodes = make_nodes(100);
  // A page 64 GiB from the pooled nodes (either side, wherever the address space is free).
  const auto near = reinterpret_cast<std::uintptr_t>(nodes[0].get()) & ~std::uintptr_t{4095};
  void* far = MAP_FAILED;
  for (const std::uintptr_t hint : {near + (std::uintptr_t{64} << 30), near - (std::uintptr_t{64} << 30)}) {
    far = ::mmap(reinterpret_cast<void*>(hint), 4096, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (far != MAP_FAILED) break;
  }
  ASSERT_NE(far, MAP_FAILED) << "no free page 64 GiB either side of the pool";
  constexpr TaskOps kNewOps{nullptr, nullptr, kHeapClass};
  auto* lone = ::new (far) TaskBase();
  lone->ops = &kNewOps;
  lone->deadline = 50;
  TimerHeap heap;
  heap.push(lone);
  EXPECT_EQ(heap.wide(), 1u);
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    nodes[i]->deadline = static_cast<std::int64_t>(i);
    nodes[i]->seq = static_cast<std::uint32_t>(i + 1);
    heap.push(nodes[i].get());
  }
  EXPECT_EQ(heap.wide(), 1u) << "the pooled nodes went to the side table";
  EXPECT_TRUE(heap.check_invariants());
  for (std::size_t i = 0; i <= nodes.size(); ++i) {  // in order, the far node among them
    TaskBase* t = heap.pop();
    EXPECT_EQ(t, i < 50 ? nodes[i].get() : i == 50 ? lone : nodes[i - 1].get()) << i;
  }
  EXPECT_EQ(heap.wide(), 0u);
  lone->~TaskBase();
  ::munmap(far, 4096);
}

}  // namespace
}  // namespace kairos::detail
