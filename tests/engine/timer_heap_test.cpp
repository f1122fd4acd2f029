// The indexed heap, against an ordered reference; with slots that hold the node (the default
// window), with most nodes in the side table (a window of 64 bytes), and with both mixed.
#include <gtest/gtest.h>

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
    EXPECT_EQ(most_wide, 0u) << "nodes of one process lie within 16 GiB of each other";
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

}  // namespace
}  // namespace kairos::detail
