// The timer queue (heap plus sorted run), against an ordered reference.
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include <kairos/detail/task.hpp>
#include <kairos/duration.hpp>

#include "timer_queue.hpp"
#include "task_nodes.hpp"

namespace kairos::detail {
namespace {

using testing::Key;
using testing::make_nodes;

// Pushes, pops and erases at random, with keys mostly in order (the run's case: zero delays,
// equal delays) and sometimes earlier or far later (the heap's).
TEST(TimerQueue, RandomPushPopEraseMatchesAnOrderedSet) {
  std::mt19937_64 rng(99);
  auto nodes = make_nodes(20000);
  TimerQueue q;
  std::set<Key> ref;
  std::vector<TaskBase*> in;
  std::int64_t now = 0;
  std::uint64_t seq = 0;
  std::size_t next = 0;
  std::size_t run_used = 0;
  std::size_t erased_from_run = 0;
  for (int step = 0; step < 200000; ++step) {
    const int op = static_cast<int>(rng() % 6);
    if (op < 3 && next < nodes.size()) {
      TaskBase* t = nodes[next++].get();
      std::int64_t r = static_cast<std::int64_t>(rng() % 100);
      t->deadline = r < 70 ? now + 1000 : r < 85 ? now : r < 97 ? now - r : now + r * 50;
      t->seq = seq++;
      q.push(t);
      if (TimerQueue::in_run(t)) ++run_used;
      ref.insert({t->deadline, t->seq});
      in.push_back(t);
    } else if (op == 3 && !in.empty()) {
      std::size_t k = rng() % in.size();
      TaskBase* t = in[k];
      const bool from_run = TimerQueue::in_run(t);
      if (TimerQueue::queued(t)) {
        ASSERT_TRUE(q.erase(t)) << "step " << step;
        ref.erase({t->deadline, t->seq});
        erased_from_run += from_run;
      } else {
        ASSERT_FALSE(q.erase(t));
      }
      EXPECT_FALSE(TimerQueue::queued(t));
      in[k] = in.back();
      in.pop_back();
    } else if (!q.empty()) {
      TaskBase* t = q.pop();
      ASSERT_EQ(Key(t->deadline, t->seq), *ref.begin()) << "step " << step;
      EXPECT_FALSE(TimerQueue::queued(t));
      ref.erase(ref.begin());
    }
    if (rng() % 50 == 0) now += static_cast<std::int64_t>(rng() % 20);
    ASSERT_EQ(q.size(), ref.size());
    if (step % 997 == 0) {
      ASSERT_TRUE(q.heap().check_invariants());
      ASSERT_TRUE(q.run().check_invariants());
    }
  }
  std::printf("[ queue    ] pushes %zu, into the run %zu, erased from it %zu\n", next, run_used, erased_from_run);
  EXPECT_GT(run_used, 10000u);       // the run was exercised, not bypassed
  EXPECT_GT(erased_from_run, 1000u);  // and so was erasing from it
}

// 100,000 equal deadlines (W7) go to the run and leave it in submission order, without the heap.
TEST(TimerQueue, EqualDeadlinesTakeTheRunAndLeaveInSubmissionOrder) {
  auto nodes = make_nodes(100000);
  TimerQueue q;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    nodes[i]->deadline = 20'000'000;
    nodes[i]->seq = i;
    q.push(nodes[i].get());
  }
  EXPECT_EQ(q.heap().size(), 0u);
  EXPECT_EQ(q.run().size(), nodes.size());
  for (std::size_t i = 0; i < nodes.size(); ++i) ASSERT_EQ(q.pop(), nodes[i].get());
  EXPECT_TRUE(q.empty());
}

// A task that sorts before at most four tasks at the run's back takes their place, and they
// go to the heap; before more than four, it takes the heap. top() is the earlier of both parts.
TEST(TimerQueue, ATaskBeforeTheBackMovesAFewLaterTasksToTheHeap) {
  auto nodes = make_nodes(8);
  TimerQueue q;
  auto key = [&](int i, std::int64_t d) {
    nodes[i]->deadline = d;
    nodes[i]->seq = static_cast<std::uint64_t>(i);
    return nodes[i].get();
  };
  EXPECT_TRUE(q.push(key(0, 10)));
  EXPECT_FALSE(q.push(key(1, 50)));  // far later: the run's back
  EXPECT_FALSE(q.push(key(2, 20)));  // before it: takes its place, 50 goes to the heap
  EXPECT_TRUE(TimerQueue::in_run(nodes[2].get()));
  EXPECT_FALSE(TimerQueue::in_run(nodes[1].get()));
  EXPECT_TRUE(TimerQueue::queued(nodes[1].get()));
  for (int i = 3; i < 7; ++i) q.push(key(i, 100 + i));  // four at the back, later than 30
  EXPECT_EQ(q.run().size(), 6u);
  EXPECT_FALSE(q.push(key(7, 30)));  // before the four: they move to the heap
  EXPECT_TRUE(TimerQueue::in_run(nodes[7].get()));
  EXPECT_EQ(q.run().size(), 3u);
  EXPECT_EQ(q.heap().size(), 5u);
  std::vector<std::int64_t> order;
  while (!q.empty()) order.push_back(q.pop()->deadline);
  EXPECT_EQ(order, (std::vector<std::int64_t>{10, 20, 30, 50, 103, 104, 105, 106}));
}

TEST(TimerQueue, ATaskBeforeMoreThanFourAtTheBackTakesTheHeap) {
  auto nodes = make_nodes(7);
  TimerQueue q;
  for (int i = 0; i < 6; ++i) {
    nodes[i]->deadline = 100 + i;
    nodes[i]->seq = static_cast<std::uint64_t>(i);
    q.push(nodes[i].get());
  }
  nodes[6]->deadline = 100;  // before five of them
  nodes[6]->seq = 6;
  EXPECT_FALSE(q.push(nodes[6].get()));
  EXPECT_FALSE(TimerQueue::in_run(nodes[6].get()));
  EXPECT_EQ(q.heap().size(), 1u);
  EXPECT_EQ(q.pop(), nodes[0].get());
  EXPECT_EQ(q.pop(), nodes[6].get());
  EXPECT_EQ(q.pop(), nodes[1].get());
}

// A task never due stays in the heap: it would close the run to every other task.
TEST(TimerQueue, ATaskNeverDueTakesTheHeap) {
  auto nodes = make_nodes(2);
  TimerQueue q;
  nodes[0]->deadline = kMaxNs; nodes[0]->seq = 0; nodes[0]->never = 1;
  nodes[1]->deadline = 5;      nodes[1]->seq = 1;
  q.push(nodes[0].get());
  q.push(nodes[1].get());
  EXPECT_FALSE(TimerQueue::in_run(nodes[0].get()));
  EXPECT_TRUE(TimerQueue::in_run(nodes[1].get()));
  EXPECT_EQ(q.pop(), nodes[1].get());
  EXPECT_EQ(q.pop(), nodes[0].get());
}

TEST(TimerQueue, RemoveIfKeepsOrderOfBothPartsAgainstAnOrderedSet) {
  std::mt19937_64 rng(99);
  auto nodes = make_nodes(4000);
  TimerQueue q;
  std::set<Key> ref;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    TaskBase* t = nodes[i].get();
    // Rising with noise: about half take the run, half the heap.
    t->deadline = static_cast<std::int64_t>(i * 10 + rng() % 40);
    t->seq = i;
    q.push(t);
    ref.insert({t->deadline, t->seq});
  }
  ASSERT_GT(q.run().size(), 500u);
  ASSERT_GT(q.heap().size(), 500u);
  std::vector<TaskBase*> out;
  q.remove_if([](TaskBase* t) { return t->seq % 3 == 0; }, [&](TaskBase* t) { out.push_back(t); });
  for (TaskBase* t : out) {
    EXPECT_EQ(t->heap_index, kNotInHeap);
    ref.erase({t->deadline, t->seq});
  }
  EXPECT_EQ(out.size(), (nodes.size() + 2) / 3);
  EXPECT_TRUE(q.heap().check_invariants());
  EXPECT_TRUE(q.run().check_invariants());
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
