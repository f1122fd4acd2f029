// The timer queue (heap plus sorted runs), against an ordered reference: delay classes each keep
// a run of their own and stay out of the heap, equal deadlines leave in submission order across
// runs and heap, and a queue whose arrays cannot grow still takes every task.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <unordered_map>
#include <string>
#include <utility>
#include <vector>

#include <kairos/detail/task.hpp>
#include <kairos/duration.hpp>

#include "page_array.hpp"
#include "task_nodes.hpp"
#include "timer_queue.hpp"

namespace kairos::detail {
namespace {

using testing::Key;
using testing::make_nodes;

// Half the pops take the top the caller read (pop_top: the leader's pop_due), half pop() it; both
// must keep first_ and the busy runs (check_invariants) as the reference expects.
template <class Step>
TaskBase* pop_either(TimerQueue& q, Step step) {
  if (step % 2 == 0) return q.pop();
  TaskBase* t = q.top();
  q.pop_top(t);
  return t;
}

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
      TaskBase* t = pop_either(q, step);
      ASSERT_EQ(Key(t->deadline, t->seq), *ref.begin()) << "step " << step;
      EXPECT_FALSE(TimerQueue::queued(t));
      ref.erase(ref.begin());
    }
    if (rng() % 50 == 0) now += static_cast<std::int64_t>(rng() % 20);
    ASSERT_EQ(q.size(), ref.size());
    if (step % 997 == 0) {
      ASSERT_TRUE(q.check_invariants());
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
  EXPECT_EQ(q.in_runs(), nodes.size());
  for (std::size_t i = 0; i < nodes.size(); ++i) ASSERT_EQ(q.pop(), nodes[i].get());
  EXPECT_TRUE(q.empty());
}

// Fills the four runs so that none accepts a task near 300: run 0 [1000..1004], run 1 [500],
// run 2 [400], run 3 [300, 310, ...] (`in_last` tasks from 300 on, 10 apart).
void four_busy_runs(TimerQueue& q, testing::Nodes& nodes, std::size_t in_last) {
  std::size_t i = 0;
  auto push = [&](std::int64_t d) {
    nodes[i]->deadline = d;
    nodes[i]->seq = i;
    q.push(nodes[i].get());
    ASSERT_TRUE(TimerQueue::in_run(nodes[i].get()));
    ++i;
  };
  for (std::int64_t d = 1000; d < 1005; ++d) push(d);
  push(500);
  push(400);
  for (std::size_t k = 0; k < in_last; ++k) push(300 + 10 * static_cast<std::int64_t>(k));
  ASSERT_EQ(q.heap().size(), 0u);
  for (unsigned r = 0; r < TimerQueue::kRuns; ++r) ASSERT_FALSE(q.run(r).empty());
}

// Every run busy and none accepting: a task that sorts before at most four tasks at the back of
// the run with the earliest back takes their place, and they go to the heap. top() and pop() see
// all five parts.
TEST(TimerQueue, ATaskBeforeFourAtTheEarliestBackMovesThemToTheHeap) {
  auto nodes = make_nodes(16);
  TimerQueue q;
  four_busy_runs(q, nodes, 5);  // run 3: 300, 310, 320, 330, 340
  TaskBase* t = nodes[15].get();
  t->deadline = 305;
  t->seq = 15;
  q.push(t);
  EXPECT_TRUE(TimerQueue::in_run(t));
  EXPECT_EQ(q.moved_to_heap(), 4u);
  EXPECT_EQ(q.heap().size(), 4u);
  EXPECT_TRUE(q.check_invariants());
  std::vector<std::int64_t> order;
  while (!q.empty()) {
    TaskBase* top = q.top();
    TaskBase* popped = q.pop();
    ASSERT_EQ(top, popped);
    order.push_back(popped->deadline);
  }
  EXPECT_EQ(order, (std::vector<std::int64_t>{300, 305, 310, 320, 330, 340, 400, 500, 1000, 1001, 1002, 1003, 1004}));
}

TEST(TimerQueue, ATaskBeforeMoreThanFourAtTheEarliestBackTakesTheHeap) {
  auto nodes = make_nodes(16);
  TimerQueue q;
  four_busy_runs(q, nodes, 6);  // run 3: 300 .. 350
  TaskBase* t = nodes[15].get();
  t->deadline = 305;
  t->seq = 15;
  q.push(t);
  EXPECT_FALSE(TimerQueue::in_run(t));
  EXPECT_EQ(q.moved_to_heap(), 0u);
  EXPECT_EQ(q.heap().size(), 1u);
  EXPECT_EQ(q.pop()->deadline, 300);
  EXPECT_EQ(q.pop(), t);
  EXPECT_EQ(q.pop()->deadline, 310);
  EXPECT_TRUE(q.check_invariants());
}

// An out-of-order task takes an empty run before it moves anything: a straggler of one class
// and a second class both keep the heap empty.
TEST(TimerQueue, ATaskNoRunAcceptsTakesAnEmptyRunFirst) {
  auto nodes = make_nodes(3);
  TimerQueue q;
  nodes[0]->deadline = 10; nodes[0]->seq = 0;
  nodes[1]->deadline = 50; nodes[1]->seq = 1;
  nodes[2]->deadline = 20; nodes[2]->seq = 2;
  for (auto& n : nodes) q.push(n.get());
  EXPECT_EQ(TimerQueue::run_of(nodes[0].get()), TimerQueue::run_of(nodes[1].get()));  // 50 fits after 10
  EXPECT_NE(TimerQueue::run_of(nodes[2].get()), TimerQueue::run_of(nodes[1].get()));  // 20 does not: a new run
  EXPECT_EQ(q.heap().size(), 0u);
  EXPECT_EQ(q.pop(), nodes[0].get());
  EXPECT_EQ(q.pop(), nodes[2].get());
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
  EXPECT_EQ(q.top(), nodes[1].get());
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
    // Rising with noise wider than four runs absorb: some take the runs, some the heap.
    t->deadline = static_cast<std::int64_t>(i * 10 + rng() % 4000);
    t->seq = i;
    q.push(t);
    ref.insert({t->deadline, t->seq});
  }
  ASSERT_GT(q.in_runs(), 500u);
  ASSERT_GT(q.heap().size(), 500u);
  std::vector<TaskBase*> out;
  q.remove_if([](TaskBase* t) { return t->seq % 3 == 0; }, [&](TaskBase* t) { out.push_back(t); });
  for (TaskBase* t : out) {
    EXPECT_EQ(t->queue_slot, kNotQueued);
    ref.erase({t->deadline, t->seq});
  }
  EXPECT_EQ(out.size(), (nodes.size() + 2) / 3);
  EXPECT_TRUE(q.check_invariants());
  while (!ref.empty()) {
    ASSERT_FALSE(q.empty());
    TaskBase* t = q.pop();
    ASSERT_EQ(Key(t->deadline, t->seq), *ref.begin());
    ref.erase(ref.begin());
  }
  EXPECT_TRUE(q.empty());
}

// W2b's shape at the queue: one producer files task i at `now` with the delay of its class, then
// cancels task i - window unless i - window is a multiple of 5 (those fire: the runs' heads leave
// while tasks are appended behind them); time moves 1 us per step, so a 100 ms task is due 100,000
// steps later; at the end everything left is popped. Every delay class keeps a run of its own:
// the heap stays empty and no task moves to it. Classes alternate in order, or at random.
void delay_classes_stay_out_of_the_heap(const std::vector<std::int64_t>& delays, bool random_order) {
  constexpr std::size_t kSteps = 250'000;
  constexpr std::size_t kWindow = 1024;
  auto nodes = make_nodes(kSteps);
  TimerQueue q;
  std::multiset<Key> ref;
  std::mt19937_64 rng(17);
  std::vector<std::size_t> class_of(kSteps);
  std::vector<std::size_t> cancelled(delays.size()), popped(delays.size());
  std::int64_t now = 0;
  auto pop_one = [&] {
    TaskBase* t = pop_either(q, ref.size());
    ASSERT_EQ(Key(t->deadline, t->seq), *ref.begin());
    ref.erase(ref.begin());
    ++popped[class_of[t->seq]];
  };
  for (std::size_t i = 0; i < kSteps; ++i) {
    const std::size_t c = random_order ? rng() % delays.size() : i % delays.size();
    TaskBase* t = nodes[i].get();
    class_of[i] = c;
    t->deadline = now + delays[c];
    t->seq = i;
    q.push(t);
    ref.insert({t->deadline, t->seq});
    ASSERT_TRUE(TimerQueue::in_run(t)) << "step " << i << ", class " << c;
    if (i >= kWindow && (i - kWindow) % 5 != 0) {
      TaskBase* old = nodes[i - kWindow].get();
      if (TimerQueue::queued(old)) {
        ASSERT_TRUE(q.erase(old));
        ref.erase({old->deadline, old->seq});
        ++cancelled[class_of[old->seq]];
      }
    }
    now += 1000;
    while (!q.empty() && q.top()->deadline <= now) pop_one();
    ASSERT_EQ(q.heap().size(), 0u) << "step " << i;
    ASSERT_EQ(q.size(), ref.size());
    if (i % 9973 == 0) {
      ASSERT_TRUE(q.check_invariants()) << "step " << i;
    }
  }
  EXPECT_EQ(q.moved_to_heap(), 0u);
  std::size_t runs_used = 0;
  for (unsigned r = 0; r < TimerQueue::kRuns; ++r) runs_used += q.run(r).capacity() != 0;
  EXPECT_GE(runs_used, delays.size());
  while (!q.empty()) pop_one();
  EXPECT_TRUE(ref.empty());
  for (std::size_t c = 0; c < delays.size(); ++c) {
    std::printf("[ classes  ] delay %lld ns: cancelled %zu, popped %zu\n", static_cast<long long>(delays[c]),
                cancelled[c], popped[c]);
    EXPECT_GT(cancelled[c], kSteps / delays.size() / 2) << "class " << c;
    EXPECT_GT(popped[c], kSteps / delays.size() / 8) << "class " << c;
  }
}

TEST(TimerQueue, TwoInterleavedDelayClassesStayOutOfTheHeap) {
  delay_classes_stay_out_of_the_heap({100'000'000, 10'000'000'000}, false);
}

TEST(TimerQueue, TwoDelayClassesInRandomOrderStayOutOfTheHeap) {
  delay_classes_stay_out_of_the_heap({100'000'000, 10'000'000'000}, true);
}

TEST(TimerQueue, ThreeInterleavedDelayClassesStayOutOfTheHeap) {
  delay_classes_stay_out_of_the_heap({100'000'000, 1'000'000'000, 10'000'000'000}, false);
  delay_classes_stay_out_of_the_heap({10'000'000'000, 100'000'000, 1'000'000'000}, true);
}

// Equal deadlines filed in different runs and in the heap leave in submission order: keys from
// eight deadlines in random order spread a deadline over several runs and the heap.
TEST(TimerQueue, EqualDeadlinesLeaveInSubmissionOrderAcrossRunsAndHeap) {
  auto nodes = make_nodes(20000);
  TimerQueue q;
  std::mt19937_64 rng(3);
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    TaskBase* t = nodes[i].get();
    t->deadline = 100 * static_cast<std::int64_t>(1 + rng() % 8);
    t->seq = i;
    q.push(t);
  }
  // Per deadline: the tasks in each run, and in the heap (the last slot).
  std::map<std::int64_t, std::array<std::size_t, TimerQueue::kRuns + 1>> where;
  q.for_each([&](const TaskBase* t) { ++where[t->deadline][TimerQueue::in_run(t) ? TimerQueue::run_of(t) : TimerQueue::kRuns]; });
  std::size_t spread = 0;  // deadlines found in two runs or more and in the heap
  for (const auto& [deadline, n] : where) {
    std::size_t runs = 0;
    for (unsigned r = 0; r < TimerQueue::kRuns; ++r) runs += n[r] != 0;
    spread += runs >= 2 && n[TimerQueue::kRuns] != 0;
  }
  EXPECT_GE(spread, 1u);
  ASSERT_TRUE(q.check_invariants());
  Key prev{0, 0};
  while (!q.empty()) {
    TaskBase* t = q.pop();
    ASSERT_LT(prev, Key(t->deadline, t->seq));
    prev = {t->deadline, t->seq};
  }
}

// The explicit case: a deadline in a run and in the heap, the heap's task submitted first.
TEST(TimerQueue, EqualDeadlinesInARunAndTheHeapLeaveBySeq) {
  auto nodes = make_nodes(16);
  TimerQueue q;
  four_busy_runs(q, nodes, 5);  // run 3: 300 .. 340, seqs 7 .. 11
  TaskBase* a = nodes[12].get();  // 305 in run 3 after 300; 310 .. 340 move to the heap
  a->deadline = 305;
  a->seq = 12;
  q.push(a);
  TaskBase* b = nodes[13].get();  // 310 again, after the 310 now in the heap: fits run 3 (back 305)
  b->deadline = 310;
  b->seq = 13;
  q.push(b);
  TaskBase* c = nodes[14].get();  // 1004 again: run 0, after the first 1004 (seq 4)
  c->deadline = 1004;
  c->seq = 14;
  q.push(c);
  ASSERT_TRUE(TimerQueue::in_run(b));
  ASSERT_TRUE(TimerQueue::in_run(c));
  TaskBase* in_heap_310 = nodes[8].get();
  ASSERT_EQ(in_heap_310->deadline, 310);
  ASSERT_FALSE(TimerQueue::in_run(in_heap_310));
  std::vector<std::uint64_t> seqs;
  while (!q.empty()) seqs.push_back(q.pop()->seq);
  EXPECT_EQ(seqs, (std::vector<std::uint64_t>{7, 12, 8, 13, 9, 10, 11, 6, 5, 0, 1, 2, 3, 4, 14}));
}

// Millions of pushes, pops and erases against a std::multiset: keys from four fixed delays
// (zero included), random delays, earlier than now, and never due; nodes are reused.
// The heap's slots hold their node (the default window), or most nodes sit in its side table (a
// window of 64 bytes: timer_heap.hpp); order and erase are the same either way.
class TimerQueueHeapWindow : public ::testing::TestWithParam<std::uint64_t> {};

INSTANTIATE_TEST_SUITE_P(HeapWindows, TimerQueueHeapWindow, ::testing::Values(TimerHeap::kWindowBytes, std::uint64_t{64}),
                         [](const ::testing::TestParamInfo<std::uint64_t>& p) { return "window_" + std::to_string(p.param); });

TEST_P(TimerQueueHeapWindow, MillionsOfMixedOperationsMatchAMultiset) {
  constexpr std::size_t kNodes = 40000;
  constexpr std::size_t kSteps = 3'000'000;
  auto nodes = make_nodes(kNodes);
  std::vector<TaskBase*> free_nodes;
  for (auto& n : nodes) free_nodes.push_back(n.get());
  std::vector<TaskBase*> pending;                   // in the queue, in any order
  std::unordered_map<TaskBase*, std::size_t> where;  // its index in `pending`
  auto forget = [&](TaskBase* t) {
    const std::size_t k = where.at(t);
    pending[k] = pending.back();
    where[pending[k]] = k;
    pending.pop_back();
    where.erase(t);
    free_nodes.push_back(t);
  };
  TimerQueue q(GetParam());
  std::multiset<Key> ref;
  std::mt19937_64 rng(2024);
  const std::int64_t delays[] = {0, 100'000, 1'000'000, 10'000'000};
  std::int64_t now = 0;
  std::uint64_t seq = 0;
  std::array<std::size_t, TimerQueue::kRuns> pushed_to_run{};
  std::size_t pushed_to_heap = 0, erased = 0, popped = 0, most_wide = 0;
  for (std::size_t step = 0; step < kSteps; ++step) {
    const std::uint64_t op = rng() % 100;
    if (op < 50 && !free_nodes.empty()) {
      TaskBase* t = free_nodes.back();
      free_nodes.pop_back();
      const std::uint64_t kind = rng() % 100;
      t->seq = static_cast<std::uint32_t>(seq++);
      t->never = 0;
      if (kind < 80) t->deadline = now + delays[rng() % 4];
      else if (kind < 92) t->deadline = now + static_cast<std::int64_t>(rng() % 20'000'000);
      else if (kind < 99) t->deadline = now - static_cast<std::int64_t>(rng() % 1000);
      else {
        t->deadline = kMaxNs;
        t->never = 1;
      }
      q.push(t);
      if (TimerQueue::in_run(t)) ++pushed_to_run[TimerQueue::run_of(t)];
      else ++pushed_to_heap;
      ref.insert({t->deadline, t->seq});
      where[t] = pending.size();
      pending.push_back(t);
    } else if (op < 75 && !pending.empty()) {
      TaskBase* t = pending[rng() % pending.size()];
      ASSERT_TRUE(q.erase(t)) << "step " << step;
      ASSERT_FALSE(q.erase(t));
      ASSERT_FALSE(TimerQueue::queued(t));
      ref.erase(ref.find({t->deadline, t->seq}));
      forget(t);
      ++erased;
    } else if (!q.empty()) {
      ASSERT_EQ(Key(q.top()->deadline, q.top()->seq), *ref.begin()) << "step " << step;
      TaskBase* t = pop_either(q, step);
      ASSERT_EQ(Key(t->deadline, t->seq), *ref.begin()) << "step " << step;
      ASSERT_FALSE(TimerQueue::queued(t));
      ref.erase(ref.begin());
      forget(t);
      ++popped;
    }
    now += static_cast<std::int64_t>(rng() % 200);
    ASSERT_EQ(q.size(), ref.size());
    most_wide = std::max(most_wide, q.heap().wide());
    if (step % 100'003 == 0) {
      ASSERT_TRUE(q.check_invariants()) << "step " << step;
    }
  }
  std::printf("[ mixed    ] runs %zu/%zu/%zu/%zu, heap %zu, moved %llu, erased %zu, popped %zu\n", pushed_to_run[0],
              pushed_to_run[1], pushed_to_run[2], pushed_to_run[3], pushed_to_heap,
              static_cast<unsigned long long>(q.moved_to_heap()), erased, popped);
  for (std::size_t n : pushed_to_run) EXPECT_GT(n, 10'000u);  // every run was exercised
  EXPECT_GT(pushed_to_heap, 10'000u);                         // and so was the heap
  if (GetParam() == 64) EXPECT_GT(most_wide, 1'000u);          // and its side table
  else EXPECT_EQ(most_wide, 0u);
  while (!q.empty()) {
    TaskBase* t = q.pop();
    ASSERT_EQ(Key(t->deadline, t->seq), *ref.begin());
    ref.erase(ref.begin());
  }
}

// The leader's span pop against a multiset: pops come in batches as pop_due takes them
// (pop_due_span, then top()/pop_top() for the rest of the batch), between drains of pushes that
// are mostly one delay class, a few of another or at random (a second busy run, the heap: the
// span stops before their heads). A task the leader would not take plain (one in 16, at random)
// is refused by take(t) and goes the one-at-a-time way. Every pop is the reference's earliest
// and due, and the span does take a large share of the tasks.
TEST(TimerQueue, SpanPopMatchesOneAtATimeAgainstAMultiset) {
  constexpr std::size_t kNodes = 20000;
  auto nodes = make_nodes(kNodes);
  std::vector<TaskBase*> free_nodes;
  for (auto& n : nodes) free_nodes.push_back(n.get());
  std::vector<TaskBase*> pending;
  TimerQueue q;
  std::multiset<Key> ref;
  std::mt19937_64 rng(77);
  std::int64_t now = 0;
  std::uint64_t seq = 0;
  std::size_t span_popped = 0, one_popped = 0;
  std::vector<bool> plain(kNodes);
  std::unordered_map<const TaskBase*, std::size_t> id;
  for (std::size_t i = 0; i < kNodes; ++i) id[nodes[i].get()] = i;
  for (int round = 0; round < 20000; ++round) {
    // A drain: a few dozen submissions, nearly all of one class (zero delay, then one fixed
    // delay, by phases: W6's and W7's shape, where the spans apply), a few of another class or
    // at random (a second busy run, the heap: the spans step aside until those have left).
    std::vector<TaskBase*> drain;
    const std::size_t k = std::min<std::size_t>(free_nodes.size(), rng() % 80);
    const std::int64_t delay = round / 500 % 2 == 0 ? 0 : 5'000;
    for (std::size_t i = 0; i < k; ++i) {
      TaskBase* t = free_nodes.back();
      free_nodes.pop_back();
      const std::uint64_t kind = rng() % 1000;
      t->deadline = kind < 995 ? now + delay : kind < 998 ? now + 50'000 : now + static_cast<std::int64_t>(rng() % 20'000);
      t->seq = static_cast<std::uint32_t>(seq++);
      t->never = 0;
      plain[id[t]] = rng() % 16 != 0;
      drain.push_back(t);
    }
    for (TaskBase* t : drain) q.push(t);
    for (TaskBase* t : drain) {
      ASSERT_TRUE(TimerQueue::queued(t));
      ref.insert({t->deadline, t->seq});
      pending.push_back(t);
    }
    // Sometimes an erase (a cancel's remove request): a hole in a run.
    if (!pending.empty() && rng() % 4 == 0) {
      const std::size_t j = rng() % pending.size();
      TaskBase* t = pending[j];
      if (TimerQueue::queued(t)) {
        ASSERT_TRUE(q.erase(t));
        ref.erase(ref.find({t->deadline, t->seq}));
        free_nodes.push_back(t);
      }
      pending[j] = pending.back();
      pending.pop_back();
    }
    now += static_cast<std::int64_t>(rng() % 3000);
    // Batches of at most 64 due tasks, as pop_due takes them, until none is due (the leader's
    // loop: pop, run, pop again).
    for (bool due = true; due;) {
      std::vector<TaskBase*> batch;
      const std::size_t max = 1 + rng() % 64;
      const std::size_t n = q.pop_due_span(now, max, [&](TaskBase* t) {
        if (!plain[id[t]]) return false;
        batch.push_back(t);
        return true;
      });
      ASSERT_EQ(n, batch.size());
      span_popped += n;
      while (batch.size() < max && !q.empty() && q.top()->deadline <= now) {
        TaskBase* t = q.top();
        q.pop_top(t);
        batch.push_back(t);
        ++one_popped;
      }
      for (TaskBase* t : batch) {
        ASSERT_LE(t->deadline, now);
        ASSERT_EQ(Key(t->deadline, t->seq), *ref.begin()) << "round " << round;
        ASSERT_FALSE(TimerQueue::queued(t));
        ref.erase(ref.begin());
        free_nodes.push_back(t);
      }
      due = !batch.empty();
    }
    std::erase_if(pending, [](const TaskBase* t) { return !TimerQueue::queued(t); });
    ASSERT_EQ(q.size(), ref.size());
    if (!q.empty()) {
      ASSERT_EQ(Key(q.top()->deadline, q.top()->seq), *ref.begin());
    }
    if (round % 997 == 0) {
      ASSERT_TRUE(q.check_invariants()) << "round " << round;
    }
  }
  std::printf("[ spans    ] popped %zu in spans, %zu one at a time\n", span_popped, one_popped);
  EXPECT_GT(span_popped, 100'000u);  // the span carried a large share
  EXPECT_GT(one_popped, 10'000u);           // and the fallbacks were exercised too
}

// Sets the growth-refusal seam (page_array.hpp) for one scope.
struct RefuseGrowth {
  RefuseGrowth() { g_refuse_growth_for_testing.store(true); }
  ~RefuseGrowth() { g_refuse_growth_for_testing.store(false); }
};

// After a successful try_reserve(), push never needs memory: with every array refusing to grow,
// two delay classes fill the rings they have and the rest takes the reserved heap, which does not
// grow either; order is kept. Rings never allocated stay empty.
TEST(TimerQueue, PushAfterAReservationNeedsNoGrowth) {
  constexpr std::size_t kTasks = 6000;
  auto nodes = make_nodes(kTasks);
  TimerQueue q;
  for (int i = 0; i < 2; ++i) {  // two rings of 1024 slots, then empty again
    nodes[i]->deadline = 1'000'000'000 - i;
    nodes[i]->seq = static_cast<std::uint64_t>(i);
    q.push(nodes[i].get());
  }
  ASSERT_NE(TimerQueue::run_of(nodes[0].get()), TimerQueue::run_of(nodes[1].get()));
  while (!q.empty()) q.pop();
  ASSERT_TRUE(q.try_reserve(kTasks));
  const std::size_t heap_capacity = q.heap().capacity();
  std::multiset<Key> ref;
  {
    RefuseGrowth refuse;
    EXPECT_FALSE(q.try_reserve(16 * heap_capacity));  // the seam works: nothing changed
    for (std::size_t i = 0; i < kTasks; ++i) {
      TaskBase* t = nodes[i].get();
      t->deadline = static_cast<std::int64_t>(i) * 10 + (i % 2 == 0 ? 100'000'000 : 10'000'000'000);
      t->seq = 100 + i;
      q.push(t);  // no throw
      ref.insert({t->deadline, t->seq});
    }
  }
  EXPECT_EQ(q.size(), kTasks);
  EXPECT_EQ(q.heap().capacity(), heap_capacity);
  EXPECT_EQ(q.in_runs(), 2 * q.run(TimerQueue::run_of(nodes[0].get())).capacity());  // both rings full
  EXPECT_EQ(q.heap().size(), kTasks - q.in_runs());
  for (unsigned r = 0; r < TimerQueue::kRuns; ++r)
    if (q.run(r).capacity() == 0) {
      EXPECT_TRUE(q.run(r).empty());
    }
  EXPECT_TRUE(q.check_invariants());
  while (!q.empty()) {
    TaskBase* t = q.pop();
    ASSERT_EQ(Key(t->deadline, t->seq), *ref.begin());
    ref.erase(ref.begin());
  }
}

}  // namespace
}  // namespace kairos::detail
