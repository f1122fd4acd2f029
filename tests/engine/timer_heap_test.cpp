// The indexed heap, against an ordered reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include <kairos/detail/task.hpp>

#include "timer_heap.hpp"
#include "task_nodes.hpp"

namespace kairos::detail {
namespace {

using testing::Key;
using testing::make_nodes;

TEST(TimerHeap, RandomPushPopEraseMatchesAnOrderedSet) {
  std::mt19937_64 rng(12345);
  auto nodes = make_nodes(5000);
  TimerHeap heap;
  std::set<Key> ref;
  std::vector<TaskBase*> in;
  std::uint64_t seq = 0;
  for (int step = 0; step < 200000; ++step) {
    int op = static_cast<int>(rng() % 10);
    if (op < 5 && in.size() < nodes.size()) {
      TaskBase* t = nullptr;
      for (auto& n : nodes)
        if (n->heap_index == kNotInHeap) { t = n.get(); break; }
      t->deadline = static_cast<std::int64_t>(rng() % 64);  // many equal deadlines
      t->seq = seq++;
      heap.push(t);
      ref.insert({t->deadline, t->seq});
      in.push_back(t);
    } else if (op < 8 && !in.empty()) {
      TaskBase* t = heap.pop();
      ASSERT_EQ(Key(t->deadline, t->seq), *ref.begin());
      ref.erase(ref.begin());
      EXPECT_EQ(t->heap_index, kNotInHeap);
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
  }
}

TEST(TimerHeap, EqualDeadlinesPopInSequenceOrder) {
  auto nodes = make_nodes(1000);
  TimerHeap heap;
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
