// The task node (core/kairos/detail/task.hpp): its 32-byte base, the reference count in the state
// word, and the order stamp compared modulo 2^32.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <random>
#include <stop_token>
#include <thread>
#include <utility>
#include <vector>

#include <kairos/detail/task.hpp>
#include <kairos/duration.hpp>

#include "sorted_run.hpp"
#include "task_nodes.hpp"
#include "timer_heap.hpp"

namespace kairos::detail {
namespace {

using testing::make_nodes;

struct NoOp {
  void operator()() const noexcept {}
};
struct OnePointer {
  int* p;
  void operator()() const noexcept { ++*p; }
};

TEST(Task, BaseIs32BytesAndAOneShotTaskOfAtMostOnePointerIsA40ByteNode) {
  static_assert(sizeof(TaskBase) == 32);
  using Empty = Node<NoOp, void, false, false>;
  using Pointer = Node<OnePointer, void, false, false>;
  using Value = Node<NoOp, long, false, false>;
  EXPECT_EQ(sizeof(Empty), 40u);
  EXPECT_EQ(sizeof(Pointer), 40u);
  EXPECT_EQ(sizeof(Value), 40u);  // the callable and the result share one union
  EXPECT_EQ(kClassSizes[size_class_for(sizeof(Pointer), alignof(Pointer))], 40u);
}

TEST(Task, ReferencesLiveAboveTheStateAndTransitionsKeepThem) {
  int runs = 0;
  auto* n = make_node<false>(OnePointer{&runs}, 0, 2);  // made with its count: no second store
  EXPECT_EQ(refs_of(n->state.load()), 2u);
  EXPECT_EQ(n->state.load() & kStateMask, kPending);
  ASSERT_TRUE(transition(n, kPending, kRunning));
  add_ref(n);
  EXPECT_EQ(refs_of(n->state.load()), 3u);
  EXPECT_EQ(n->state.load() & kStateMask, kRunning);
  n->state.fetch_or(kWaiters);
  ASSERT_TRUE(n->ops->invoke(n));
  ASSERT_TRUE(transition(n, kRunning, kNormal));
  EXPECT_EQ(runs, 1);
  EXPECT_EQ(refs_of(n->state.load()), 3u);
  EXPECT_TRUE(n->state.load() & kWaiters);
  release(n);
  release(n);
  EXPECT_EQ(refs_of(n->state.load()), 1u);
  release(n);  // the last: destroys (ASan sees a leak or a double free otherwise)
}

// Past kSpillAt references a chunk moves to the spill table (kSpilled set, the field far below
// its capacity); releases below the refill mark take chunks back, and the last one clears
// kSpilled; the node goes with the last reference, not before (ASan).
TEST(Task, ReferencesBeyondTheFieldSpillAndComeBack) {
  int runs = 0;
  auto* n = make_node<false>(OnePointer{&runs}, 0, 1);
  const std::uint32_t total = 3 * kSpillAt;  // more than the field holds (2^22 - 1) would be
  for (std::uint32_t i = 1; i < total; ++i) add_ref(n);
  std::uint32_t s = n->state.load();
  EXPECT_TRUE(s & kSpilled);
  EXPECT_LE(refs_of(s), kSpillAt);
  EXPECT_GT(refs_of(s), kRefillBelow);
  EXPECT_EQ(s & kStateMask, kPending);
  ASSERT_TRUE(transition(n, kPending, kRunning));  // transitions keep the flag and the count
  EXPECT_TRUE(n->state.load() & kSpilled);
  for (std::uint32_t i = 1; i < total; ++i) release(n);
  s = n->state.load();
  EXPECT_FALSE(s & kSpilled) << "the last chunk came back";
  EXPECT_EQ(refs_of(s), 1u);
  EXPECT_TRUE(only_reference(s));
  release(n);
}

// Owners taking and dropping references while two threads race transitions on the same word:
// every CAS keeps the count, and the node is destroyed exactly once, by the last release.
TEST(Task, ConcurrentReferencesAndTransitionsNeitherLoseNorInventAReference) {
  int destroyed = 0;
  for (int round = 0; round < 200; ++round) {
    auto* n = make_node<false>(NoOp{}, 0, 1);
    constexpr int kHolders = 4, kEach = 500;
    std::atomic<bool> go{false};
    std::vector<std::thread> th;
    for (int h = 0; h < kHolders; ++h)
      th.emplace_back([&] {
        while (!go.load()) {
        }
        for (int i = 0; i < kEach; ++i) {
          add_ref(n);
          release(n);
        }
      });
    th.emplace_back([&] {
      while (!go.load()) {
      }
      transition(n, kPending, kRunning);
      transition(n, kRunning, kCancelled);
    });
    go.store(true);
    for (auto& t : th) t.join();
    EXPECT_EQ(refs_of(n->state.load()), 1u) << "round " << round;
    EXPECT_EQ(n->state.load() & kStateMask, kCancelled);
    drop_callable(n);
    release(n);
    ++destroyed;
  }
  EXPECT_EQ(destroyed, 200);
}

// The node's type is asked for (TaskOps::manage) only when its flags name something to
// destroy; each destructor runs once, whoever ends the node (drop_callable, destroy_node).
struct Counted {
  int* dtors;
  explicit Counted(int* d) : dtors(d) {}
  Counted(Counted&& o) noexcept : dtors(std::exchange(o.dtors, nullptr)) {}
  ~Counted() {
    if (dtors != nullptr) ++*dtors;
  }
};
struct CountedCall {
  Counted c;
  void operator()() const noexcept {}
};
struct ReturnsCounted {
  int* dtors;
  Counted operator()() const { return Counted(dtors); }
};

TEST(Task, DestroyingANodeRunsEachDestructorItsFlagsNameOnce) {
  int dtors = 0;
  {  // a callable with a destructor, never run: destroy_node destroys it
    auto* n = make_node<false>(CountedCall{Counted(&dtors)}, 0, 1);
    EXPECT_FALSE(n->flags & kTrivialCallable);
    EXPECT_FALSE(nothing_to_destruct(n));
    release(n);
    EXPECT_EQ(dtors, 1);
  }
  dtors = 0;
  {  // dropped first (a cancel): once, not again at the end
    auto* n = make_node<false>(CountedCall{Counted(&dtors)}, 0, 1);
    drop_callable(n);
    EXPECT_EQ(dtors, 1);
    EXPECT_TRUE(nothing_to_destruct(n));
    drop_callable(n);  // nothing live: nothing to do
    release(n);
    EXPECT_EQ(dtors, 1);
  }
  dtors = 0;
  {  // a result with a destructor: the value is destroyed with the node
    auto* n = make_node<false>(ReturnsCounted{&dtors}, 0, 1);
    ASSERT_TRUE(n->ops->invoke(n));
    const int after_run = dtors;  // the temporaries of the run
    EXPECT_TRUE(n->life & kHasValue);
    EXPECT_EQ(static_cast<Counted*>(task_result(n))->dtors, &dtors);
    release(n);
    EXPECT_EQ(dtors, after_run + 1);
  }
  {  // a trivial callable: nothing to destroy, the type's function is not asked
    auto* n = make_node<false>(NoOp{}, 0, 1);
    EXPECT_TRUE(n->flags & kTrivialCallable);
    EXPECT_TRUE(nothing_to_destruct(n));
    EXPECT_EQ(task_stop_source(n), nullptr);
    release(n);
  }
  {  // a stop source: destroyed with the node (its token's stop_possible() ends with it)
    auto* n = make_node<false>([](std::stop_token) {}, 0, 1);
    std::stop_source* src = task_stop_source(n);
    ASSERT_NE(src, nullptr);
    *src = std::stop_source();
    const std::stop_token token = src->get_token();
    EXPECT_TRUE(token.stop_possible());
    EXPECT_FALSE(nothing_to_destruct(n));
    release(n);
    EXPECT_FALSE(token.stop_possible()) << "the node's stop source was not destroyed";
  }
}

TEST(Task, OrderStampsCompareModulo2To32) {
  EXPECT_TRUE(seq_before(1, 2));
  EXPECT_FALSE(seq_before(2, 1));
  EXPECT_FALSE(seq_before(7, 7));
  EXPECT_TRUE(seq_before(0xFFFFFFFFu, 0));  // across the wrap
  EXPECT_TRUE(seq_before(0xFFFFFF00u, 0x100));
  EXPECT_FALSE(seq_before(0, 0xFFFFFFFFu));
  // Equal deadlines: a never-due task after a due one whatever their stamps.
  EXPECT_TRUE(filed_before(FiledKey{kMaxNs, 9, false}, FiledKey{kMaxNs, 1, true}));
  EXPECT_FALSE(filed_before(FiledKey{kMaxNs, 1, true}, FiledKey{kMaxNs, 9, false}));
  EXPECT_TRUE(filed_before(FiledKey{5, 9, true}, FiledKey{6, 1, false}));  // the deadline first
}

// A shard's sequence numbers wrap past 2^32 after four billion submissions: equal deadlines
// stamped on both sides of the wrap still leave the heap and the sorted run in stamp order.
TEST(Task, EqualDeadlinesAcrossTheStampsWrapKeepSubmissionOrder) {
  constexpr std::uint32_t kFirst = 0xFFFFFFF0u;
  constexpr int kN = 64;
  auto nodes = make_nodes(kN);
  for (int i = 0; i < kN; ++i) {
    nodes[i]->deadline = 1000;
    nodes[i]->seq = kFirst + static_cast<std::uint32_t>(i);  // wraps at i = 16
  }
  std::vector<TaskBase*> shuffled;
  for (auto& n : nodes) shuffled.push_back(n.get());
  std::shuffle(shuffled.begin(), shuffled.end(), std::mt19937(7));
  TimerHeap heap;
  ASSERT_TRUE(heap.try_reserve(kN));
  for (TaskBase* t : shuffled) (void)heap.push(t);
  for (int i = 0; i < kN; ++i) {
    ASSERT_EQ(heap.top(), nodes[i].get()) << i;
    heap.pop();
  }
  SortedRun run;
  for (int i = 0; i < kN; ++i) {
    ASSERT_TRUE(run.accepts(nodes[i].get())) << i;  // each sorts after the one before, wrap or not
    run.append(nodes[i].get());
  }
  EXPECT_TRUE(run.check_invariants());
  EXPECT_FALSE(run.accepts(nodes[3].get()));  // an older stamp at the same deadline does not
}

}  // namespace
}  // namespace kairos::detail
