// The sorted run: O(1) append, pop and erase, holes squeezed out, memory bounded; a run's id in
// its tasks' queue_slot; one run per delay class; a ring that cannot grow refuses, unchanged.
#include <gtest/gtest.h>

#include <deque>
#include <memory>
#include <new>
#include <random>
#include <vector>

#include <kairos/detail/task.hpp>
#include <kairos/duration.hpp>

#include "page_array.hpp"
#include "sorted_run.hpp"
#include "task_nodes.hpp"

namespace kairos::detail {
namespace {

using testing::make_nodes;

TEST(SortedRun, AcceptsOnlyWhatSortsAtOrAfterTheLastAppended) {
  auto nodes = make_nodes(4);
  SortedRun run;
  nodes[0]->deadline = 10; nodes[0]->seq = 5;
  EXPECT_TRUE(run.accepts(nodes[0].get()));  // empty: anything
  run.append(nodes[0].get());
  nodes[1]->deadline = 10; nodes[1]->seq = 4;
  EXPECT_FALSE(run.accepts(nodes[1].get()));  // equal deadline, earlier seq
  nodes[2]->deadline = 9;  nodes[2]->seq = 9;
  EXPECT_FALSE(run.accepts(nodes[2].get()));  // earlier deadline
  nodes[3]->deadline = 10; nodes[3]->seq = 8;
  EXPECT_TRUE(run.accepts(nodes[3].get()));
  run.append(nodes[3].get());
  // The back bounds the order; once it is erased, the last live task does.
  nodes[1]->deadline = 10; nodes[1]->seq = 7;
  EXPECT_FALSE(run.accepts(nodes[1].get()));
  EXPECT_TRUE(run.erase(nodes[3].get()));
  EXPECT_TRUE(run.accepts(nodes[1].get()));
  EXPECT_EQ(run.front(), nodes[0].get());
  EXPECT_TRUE(run.erase(nodes[0].get()));
  EXPECT_TRUE(run.empty());
  EXPECT_TRUE(run.accepts(nodes[2].get()));  // empty again: anything
}

// W2's shape: a window of timeouts, each cancelled soon after it is set, keys rising. Every
// operation is O(1); the holes are squeezed out, so the ring stays near twice the window.
TEST(SortedRun, ChurnKeepsTheRingNearTwiceThePeakOfLiveTasks) {
  constexpr std::size_t kWindow = 1024;
  auto nodes = make_nodes(kWindow * 4);
  SortedRun run;
  std::deque<TaskBase*> window;
  std::vector<TaskBase*> free_nodes;
  for (auto& n : nodes) free_nodes.push_back(n.get());
  std::mt19937_64 rng(5);
  std::size_t max_capacity = 0;
  for (std::uint64_t i = 0; i < 2'000'000; ++i) {
    TaskBase* t = free_nodes.back();
    free_nodes.pop_back();
    t->deadline = static_cast<std::int64_t>(i);
    t->seq = i;
    ASSERT_TRUE(run.accepts(t));
    run.append(t);
    window.push_back(t);
    if (window.size() > kWindow) {  // cancel one at random within the window
      const std::size_t k = rng() % window.size();
      TaskBase* c = window[k];
      window.erase(window.begin() + static_cast<std::ptrdiff_t>(k));
      ASSERT_TRUE(run.erase(c));
      ASSERT_FALSE(run.erase(c));  // once
      free_nodes.push_back(c);
    }
    max_capacity = std::max(max_capacity, run.capacity());
    if (i % 100'003 == 0) {
      ASSERT_TRUE(run.check_invariants());
    }
  }
  EXPECT_EQ(run.size(), kWindow);
  EXPECT_LE(max_capacity, 4 * kWindow);
  EXPECT_TRUE(run.check_invariants());
}

// Pops come out in order past holes, and positions survive growth and squeezing.
TEST(SortedRun, PopsInOrderPastHolesThroughGrowthAndSqueezing) {
  auto nodes = make_nodes(50000);
  SortedRun run;
  std::mt19937_64 rng(11);
  std::deque<TaskBase*> expect;
  std::uint64_t key = 0;
  std::size_t next = 0;
  for (int round = 0; round < 200; ++round) {
    for (int i = 0; i < 200 && next < nodes.size(); ++i) {
      TaskBase* t = nodes[next++].get();
      t->deadline = static_cast<std::int64_t>(key / 3);  // runs of equal deadlines
      t->seq = key++;
      run.append(t);
      expect.push_back(t);
    }
    for (int i = 0; i < 60 && !expect.empty(); ++i) {  // erase some anywhere
      std::size_t k = rng() % expect.size();
      ASSERT_TRUE(run.erase(expect[k]));
      expect.erase(expect.begin() + static_cast<std::ptrdiff_t>(k));
    }
    for (int i = 0; i < 100 && !expect.empty(); ++i) {
      ASSERT_EQ(run.front(), expect.front());
      ASSERT_EQ(run.pop_front(), expect.front());
      EXPECT_EQ(expect.front()->queue_slot, kNotQueued);
      expect.pop_front();
    }
    ASSERT_EQ(run.size(), expect.size());
    ASSERT_TRUE(run.check_invariants());
  }
  while (!expect.empty()) {
    ASSERT_EQ(run.pop_front(), expect.front());
    expect.pop_front();
  }
  EXPECT_TRUE(run.empty());
}

// The span pop (the leader's batch path): pop_front_while takes due tasks past holes and stops at
// the first one not due, not before the bound, or refused, which stays the front; what it takes
// is what pop_front() would have given, in order.
TEST(SortedRun, SpanPopStopsAtTheFirstRefusalAndMatchesOneAtATime) {
  constexpr FiledKey kAfterAll{kMaxNs, 0, true};  // no other part bounds the spans
  auto nodes = make_nodes(3000);
  SortedRun run;
  for (std::size_t i = 0; i < 1000; ++i) {  // deadlines 0, 0, 1, 1, ...: equal pairs, seq order
    nodes[i]->deadline = static_cast<std::int64_t>(i / 2);
    nodes[i]->seq = static_cast<std::uint32_t>(i);
    run.append(nodes[i].get());
  }
  ASSERT_EQ(run.capacity(), 1024u);
  for (std::size_t i = 1; i < 40; i += 3) ASSERT_TRUE(run.erase(nodes[i].get()));  // holes among the due
  std::vector<TaskBase*> got;
  auto take_all = [&](TaskBase* t) {
    got.push_back(t);
    return true;
  };
  // At most 10, due at 9: nodes 0, 2, 3, 5, 6, 8, 9, 11, 12, 14 (1, 4, 7, 10, 13 are holes).
  EXPECT_EQ(run.pop_front_while(9, kAfterAll, 10, take_all), 10u);
  const std::vector<TaskBase*> first{nodes[0].get(), nodes[2].get(), nodes[3].get(), nodes[5].get(), nodes[6].get(),
                                     nodes[8].get(), nodes[9].get(), nodes[11].get(), nodes[12].get(), nodes[14].get()};
  EXPECT_EQ(got, first);
  for (TaskBase* t : got) EXPECT_EQ(t->queue_slot, kNotQueued);
  EXPECT_EQ(run.front(), nodes[15].get());  // the next live one, past no hole
  // Due at 9 is up to node 19; node 17 refused: 15 taken, then the stop, 17 stays the front.
  got.clear();
  EXPECT_EQ(run.pop_front_while(9, kAfterAll, 64, [&](TaskBase* t) { return t != nodes[17].get() && take_all(t); }), 1u);
  EXPECT_EQ(got, std::vector<TaskBase*>{nodes[15].get()});  // 16 is a hole
  EXPECT_EQ(run.front(), nodes[17].get());
  EXPECT_NE(nodes[17]->queue_slot, kNotQueued);
  got.clear();
  // Another part's head at node 18's key (deadline 9, seq 18) bounds the span: 17 only.
  EXPECT_EQ(run.pop_front_while(9, FiledKey{9, 18}, 64, take_all), 1u);
  EXPECT_EQ(run.front(), nodes[18].get());
  EXPECT_EQ(run.pop_front_while(9, kAfterAll, 64, take_all), 1u);  // 18 (19 is a hole, 20 due at 10)
  EXPECT_EQ(got, (std::vector<TaskBase*>{nodes[17].get(), nodes[18].get()}));
  EXPECT_EQ(run.pop_front_while(9, kAfterAll, 64, take_all), 0u);  // node 20: due at 10
  EXPECT_EQ(run.front(), nodes[20].get());
  ASSERT_TRUE(run.check_invariants());
}

TEST(SortedRun, RemoveIfAndClearLeaveNoTaskMarkedQueued) {
  auto nodes = make_nodes(3000);
  SortedRun run;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    nodes[i]->deadline = static_cast<std::int64_t>(i);
    nodes[i]->seq = i;
    run.append(nodes[i].get());
  }
  std::size_t out = 0;
  run.remove_if([](TaskBase* t) { return t->seq < 1000 || t->seq % 2 == 0; },
                [&](TaskBase* t) {
                  EXPECT_EQ(t->queue_slot, kNotQueued);
                  ++out;
                });
  EXPECT_EQ(out, 2000u);
  EXPECT_EQ(run.size(), 1000u);
  EXPECT_EQ(run.front()->seq, 1001u);
  EXPECT_TRUE(run.check_invariants());
  run.clear();
  EXPECT_TRUE(run.empty());
  for (auto& n : nodes) EXPECT_EQ(n->queue_slot, kNotQueued);
}

// later_at_back() remembers a refusal only while the run does not change.
TEST(SortedRun, ARefusalHoldsUntilTheRunChanges) {
  auto nodes = make_nodes(8);
  SortedRun run;
  for (int i = 0; i < 7; ++i) {
    nodes[i]->deadline = 100 + 10 * i;  // 100 .. 160
    nodes[i]->seq = static_cast<std::uint64_t>(i);
    run.append(nodes[i].get());
  }
  nodes[7]->deadline = 105;  // before six of them
  nodes[7]->seq = 7;
  EXPECT_EQ(run.later_at_back(nodes[7].get(), 4), 5u);
  EXPECT_EQ(run.later_at_back(nodes[7].get(), 4), 5u);  // remembered
  ASSERT_TRUE(run.erase(nodes[6].get()));
  ASSERT_TRUE(run.erase(nodes[5].get()));
  EXPECT_EQ(run.later_at_back(nodes[7].get(), 4), 4u);  // forgotten: four now
  for (int i = 0; i < 4; ++i) EXPECT_EQ(run.pop_back(), nodes[4 - i].get());
  EXPECT_TRUE(run.accepts(nodes[7].get()));
  run.append(nodes[7].get());
  EXPECT_TRUE(run.check_invariants());
  EXPECT_EQ(run.pop_front(), nodes[0].get());
  EXPECT_EQ(run.pop_front(), nodes[7].get());
  EXPECT_TRUE(run.empty());
}

// A run's id is in the queue_slot of each task it holds: erase finds the run without a search,
// and a run does not erase another run's task at the same position.
TEST(SortedRun, RunIdsTagTheirTasksAndEachErasesOnlyItsOwn) {
  auto nodes = make_nodes(4);
  SortedRun one(1), three(3);
  EXPECT_EQ(one.id(), 1u);
  EXPECT_EQ(three.id(), 3u);
  for (int i = 0; i < 4; ++i) {
    nodes[i]->deadline = 10 + i;
    nodes[i]->seq = static_cast<std::uint64_t>(i);
  }
  one.append(nodes[0].get());
  three.append(nodes[1].get());  // position 0 in both rings
  one.append(nodes[2].get());
  three.append(nodes[3].get());
  EXPECT_TRUE(SortedRun::holds(nodes[1]->queue_slot));
  EXPECT_EQ(SortedRun::id_of(nodes[0]->queue_slot), 1u);
  EXPECT_EQ(SortedRun::id_of(nodes[1]->queue_slot), 3u);
  EXPECT_NE(nodes[1]->queue_slot, kNotQueued);
  EXPECT_FALSE(one.erase(nodes[1].get()));
  EXPECT_FALSE(three.erase(nodes[0].get()));
  EXPECT_TRUE(one.check_invariants());
  EXPECT_TRUE(three.check_invariants());
  EXPECT_TRUE(three.erase(nodes[1].get()));
  EXPECT_EQ(nodes[1]->queue_slot, kNotQueued);
  EXPECT_EQ(one.size(), 2u);
  EXPECT_EQ(three.front(), nodes[3].get());
}

// Two delay classes interleaved (100 ms and 10 s, W2b's shape): one run refuses every task of the
// short class filed after a long one; two runs, one per class, take every task, cancels included.
TEST(SortedRun, TwoInterleavedDelayClassesNeedARunEach) {
  constexpr std::size_t kTasks = 100'000;
  constexpr std::size_t kWindow = 1024;
  auto nodes = make_nodes(kTasks);
  auto copies = make_nodes(kTasks);  // the same keys, for one run taking both classes
  SortedRun shorter(0), longer(1), single(2);
  std::size_t single_refused = 0;
  for (std::size_t i = 0; i < kTasks; ++i) {
    TaskBase* t = nodes[i].get();
    const std::int64_t now = static_cast<std::int64_t>(i) * 100;
    t->deadline = now + (i % 2 == 0 ? 100'000'000 : 10'000'000'000);
    t->seq = i;
    SortedRun& own = i % 2 == 0 ? shorter : longer;
    ASSERT_TRUE(own.accepts(t)) << i;
    own.append(t);
    copies[i]->deadline = t->deadline;
    copies[i]->seq = t->seq;
    if (single.accepts(copies[i].get())) single.append(copies[i].get());
    else ++single_refused;
    if (i >= kWindow) {
      TaskBase* old = nodes[i - kWindow].get();
      ASSERT_TRUE((i - kWindow) % 2 == 0 ? shorter.erase(old) : longer.erase(old));
      single.erase(copies[i - kWindow].get());  // false if it was refused
    }
  }
  EXPECT_GE(single_refused, kTasks / 2 - 1);
  EXPECT_EQ(shorter.size() + longer.size(), kWindow);
  EXPECT_TRUE(shorter.check_invariants());
  EXPECT_TRUE(longer.check_invariants());
}

struct RefuseGrowth {
  RefuseGrowth() { g_refuse_growth_for_testing.store(true); }
  ~RefuseGrowth() { g_refuse_growth_for_testing.store(false); }
};

// A full ring that may not grow refuses the task and stays as it was (try_append false, append
// throws); once half of it is holes, the squeeze makes room without growing.
TEST(SortedRun, AFullRingThatCannotGrowRefusesUnchanged) {
  auto nodes = make_nodes(2000);
  SortedRun run;
  std::size_t n = 0;
  for (; n < 1024; ++n) {
    nodes[n]->deadline = static_cast<std::int64_t>(n);
    nodes[n]->seq = n;
    ASSERT_TRUE(run.try_append(nodes[n].get()));
  }
  ASSERT_EQ(run.capacity(), 1024u);
  RefuseGrowth refuse;
  TaskBase* t = nodes[n].get();
  t->deadline = static_cast<std::int64_t>(n);
  t->seq = n;
  EXPECT_FALSE(run.try_append(t));
  EXPECT_EQ(t->queue_slot, kNotQueued);
  EXPECT_THROW(run.append(t), std::bad_alloc);
  EXPECT_EQ(run.size(), 1024u);
  EXPECT_EQ(run.capacity(), 1024u);
  EXPECT_TRUE(run.check_invariants());
  EXPECT_TRUE(run.accepts(t));  // its back is still task 1023
  for (std::size_t i = 1; i < 1024; i += 2) ASSERT_TRUE(run.erase(nodes[i].get()));  // half holes
  EXPECT_TRUE(run.try_append(t));  // squeezed, not grown
  EXPECT_EQ(run.capacity(), 1024u);
  EXPECT_EQ(run.size(), 513u);
  EXPECT_TRUE(run.check_invariants());
}

}  // namespace
}  // namespace kairos::detail
