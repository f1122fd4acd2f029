// The indexed heap and the due FIFO beside it, against an ordered reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include <kairos/detail/task.hpp>

#include "timer_heap.hpp"
#include "timer_queue.hpp"

namespace kairos::detail {
namespace {

using Key = std::pair<std::int64_t, std::uint64_t>;

std::vector<std::unique_ptr<TaskBase>> make_nodes(std::size_t n) {
  std::vector<std::unique_ptr<TaskBase>> v;
  for (std::size_t i = 0; i < n; ++i) v.push_back(std::make_unique<TaskBase>());
  return v;
}

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

TEST(TimerQueue, DueFifoAndHeapPopInDeadlineThenSequenceOrder) {
  std::mt19937_64 rng(99);
  auto nodes = make_nodes(20000);
  TimerQueue q;
  std::set<Key> ref;
  std::int64_t now = 0;
  std::uint64_t seq = 0;
  std::size_t next = 0;
  std::size_t fifo_used = 0;
  for (int step = 0; step < 100000; ++step) {
    if (rng() % 3 != 0 && next < nodes.size()) {
      TaskBase* t = nodes[next++].get();
      // Mostly "already due, in order" (the FIFO's case), sometimes late or in the future.
      std::int64_t r = static_cast<std::int64_t>(rng() % 100);
      t->deadline = r < 70 ? now : r < 85 ? now - r : now + r;
      t->seq = seq++;
      q.push(t, now);
      if (t->heap_index == kInFifo) ++fifo_used;
      ref.insert({t->deadline, t->seq});
    } else if (!q.empty()) {
      TaskBase* t = q.pop();
      ASSERT_EQ(Key(t->deadline, t->seq), *ref.begin()) << "step " << step;
      ref.erase(ref.begin());
    }
    if (rng() % 50 == 0) now += static_cast<std::int64_t>(rng() % 20);
    ASSERT_EQ(q.size(), ref.size());
  }
  EXPECT_GT(fifo_used, 1000u);  // the FIFO was exercised, not bypassed
}

TEST(TimerQueue, EraseLeavesFifoTasksAndRemovesHeapTasks) {
  auto nodes = make_nodes(3);
  TimerQueue q;
  nodes[0]->deadline = 0;  nodes[0]->seq = 0;
  nodes[1]->deadline = 50; nodes[1]->seq = 1;
  nodes[2]->deadline = 0;  nodes[2]->seq = 2;
  q.push(nodes[0].get(), 10);  // due: FIFO
  q.push(nodes[1].get(), 10);  // later: heap
  q.push(nodes[2].get(), 10);  // due and after the FIFO's back: FIFO
  EXPECT_EQ(nodes[0]->heap_index, kInFifo);
  EXPECT_FALSE(q.erase(nodes[0].get()));
  EXPECT_TRUE(q.erase(nodes[1].get()));
  std::vector<TaskBase*> out;
  q.remove_if([&](TaskBase* t) { return t == nodes[0].get(); }, [&](TaskBase* t) { out.push_back(t); });
  EXPECT_EQ(out, std::vector<TaskBase*>{nodes[0].get()});
  EXPECT_EQ(nodes[0]->heap_index, kNotInHeap);
  EXPECT_EQ(q.size(), 1u);
  EXPECT_EQ(q.pop(), nodes[2].get());
  EXPECT_TRUE(q.empty());
}

TEST(TimerQueue, RemoveIfKeepsOrderOfBothPartsAgainstAnOrderedSet) {
  std::mt19937_64 rng(99);
  auto nodes = make_nodes(4000);
  TimerQueue q;
  std::set<Key> ref;
  std::int64_t now = 1000;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    TaskBase* t = nodes[i].get();
    t->deadline = static_cast<std::int64_t>(rng() % 2000);  // about half due: FIFO or heap
    t->seq = i;
    q.push(t, now);
    ref.insert({t->deadline, t->seq});
  }
  std::vector<TaskBase*> out;
  q.remove_if([](TaskBase* t) { return t->seq % 3 == 0; }, [&](TaskBase* t) { out.push_back(t); });
  for (TaskBase* t : out) {
    EXPECT_EQ(t->heap_index, kNotInHeap);
    ref.erase({t->deadline, t->seq});
  }
  EXPECT_EQ(out.size(), (nodes.size() + 2) / 3);
  EXPECT_TRUE(q.heap().check_invariants());
  while (!ref.empty()) {
    ASSERT_FALSE(q.empty());
    TaskBase* t = q.pop();
    ASSERT_EQ(Key(t->deadline, t->seq), *ref.begin());
    ref.erase(ref.begin());
  }
  EXPECT_TRUE(q.empty());
}

}  // namespace
}  // namespace kairos::detail
