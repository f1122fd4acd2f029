// The inbox (core/src/inbox.hpp) driven by hand, without threads: FIFO confirmation by complete
// passes, remove requests at once, and the counts lifecycle calls rely on.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include <kairos/detail/task.hpp>

#include "inbox.hpp"

namespace kairos::detail {
namespace {

std::vector<std::unique_ptr<TaskBase>> nodes(std::size_t n) {
  std::vector<std::unique_ptr<TaskBase>> v;
  for (std::size_t i = 0; i < n; ++i) v.push_back(std::make_unique<TaskBase>());
  return v;
}

struct Sink {
  std::size_t room = SIZE_MAX;
  std::vector<TaskBase*> accepted;
  std::vector<TaskBase*> removed;
  auto accept() {
    return [this](std::span<TaskBase* const> confirmed) {
      EXPECT_FALSE(confirmed.empty());
      std::size_t n = std::min(confirmed.size(), room);  // room: what the timer queue can take
      accepted.insert(accepted.end(), confirmed.begin(), confirmed.begin() + static_cast<std::ptrdiff_t>(n));
      room -= n;
      return n;
    };
  }
  auto remove() {
    return [this](TaskBase* t, std::uintptr_t tag) {
      EXPECT_EQ(tag, Inbox::kRemoveTag);
      removed.push_back(t);
    };
  }
};

TEST(Inbox, ItemsSeenInAnIncompletePassWaitForTheNextCompletePass) {
  Inbox inbox;
  auto n = nodes(Inbox::kChunk + 44);
  for (auto& t : n) {
    inbox.take_seq();
    ASSERT_TRUE(inbox.push(t.get()));
  }
  Sink sink;
  // One pass takes a full chunk: it may have missed another producer's earlier item, so
  // nothing it saw may fire yet.
  inbox.drain(sink.accept(), sink.remove(), 1);
  EXPECT_TRUE(sink.accepted.empty());
  EXPECT_TRUE(inbox.has_unconfirmed());
  EXPECT_EQ(inbox.drained(), Inbox::kChunk);
  // The next pass is complete (fewer than a chunk): everything seen before it is confirmed.
  inbox.drain(sink.accept(), sink.remove(), 1);
  ASSERT_EQ(sink.accepted.size(), Inbox::kChunk);
  EXPECT_TRUE(inbox.has_unconfirmed());  // the 44 it saw itself
  inbox.drain(sink.accept(), sink.remove(), 1);
  ASSERT_EQ(sink.accepted.size(), n.size());
  EXPECT_FALSE(inbox.has_unconfirmed());
  for (std::size_t i = 0; i < n.size(); ++i) EXPECT_EQ(sink.accepted[i], n[i].get()) << i;
  EXPECT_EQ(inbox.drained(), inbox.submitted());
}

TEST(Inbox, RemoveRequestsArriveAtOnceAndAreCounted) {
  Inbox inbox;
  auto n = nodes(3);
  inbox.take_seq();
  ASSERT_TRUE(inbox.push(n[0].get()));
  ASSERT_TRUE(inbox.post(n[1].get(), Inbox::kRemoveTag));
  ASSERT_TRUE(inbox.post(n[2].get(), Inbox::kRemoveTag));
  EXPECT_EQ(inbox.removes_sent(), 2u);
  EXPECT_EQ(inbox.removes_done(), 0u);
  Sink sink;
  inbox.drain(sink.accept(), sink.remove(), 1);
  EXPECT_EQ(sink.removed, (std::vector<TaskBase*>{n[1].get(), n[2].get()}));  // tag stripped
  EXPECT_TRUE(sink.accepted.empty());  // a submission waits for a complete pass after it
  EXPECT_EQ(inbox.removes_done(), 2u);
  inbox.drain(sink.accept(), sink.remove());
  EXPECT_EQ(sink.accepted, (std::vector<TaskBase*>{n[0].get()}));
}

TEST(Inbox, DrainAllReturnsOnceEverythingCountedHasArrived) {
  Inbox inbox;
  auto n = nodes(1000);
  for (auto& t : n) {
    inbox.take_seq();
    ASSERT_TRUE(inbox.push(t.get()));
  }
  inbox.take_seq();
  inbox.abandon();  // a submission that took a seq and could not be enqueued
  Sink sink;
  inbox.drain_all(sink.accept(), sink.remove());
  EXPECT_EQ(sink.accepted.size(), 1000u);
  EXPECT_EQ(inbox.submitted(), 1000u);
  EXPECT_EQ(inbox.drained(), 1000u);
  EXPECT_FALSE(inbox.has_unconfirmed());
}

// More submissions than one drain takes in (kMaxPasses full passes): drain_through takes in and
// confirms every one counted before it, where one drain() leaves them unconfirmed.
TEST(Inbox, DrainThroughConfirmsABurstLargerThanOneDrain) {
  Inbox inbox;
  const std::size_t burst = Inbox::kChunk * Inbox::kMaxPasses * 3;
  auto n = nodes(burst);
  for (std::size_t i = 0; i < burst; ++i) {
    n[i]->seq = inbox.take_seq();
    ASSERT_TRUE(inbox.push(n[i].get()));
  }
  Sink one;
  inbox.drain(one.accept(), one.remove());
  EXPECT_LT(one.accepted.size(), burst) << "set-up: one drain should not take the whole burst";
  Inbox again;
  for (std::size_t i = 0; i < burst; ++i) {
    n[i]->seq = again.take_seq();
    ASSERT_TRUE(again.push(n[i].get()));
  }
  Sink all;
  again.drain_through(again.submitted(), again.seqs_taken(), all.accept(), all.remove());
  EXPECT_EQ(all.accepted.size(), burst);
  for (std::size_t i = 0; i < burst; ++i) ASSERT_EQ(all.accepted[i], n[i].get()) << "FIFO at " << i;
}

// Producers faster than the drain (here: each request handled posts two more, so every pass
// comes back full and none confirms): a drain_through bounded for a query (kQueryRounds) returns
// after its rounds, where an unbounded one chases them until they stop (here: until the
// handler stops posting, 2,000,000 requests later).
TEST(Inbox, DrainThroughForAQueryReturnsWhileProducersOutpaceIt) {
  for (const bool bounded : {true, false}) {
    Inbox inbox;
    auto n = nodes(1);
    n[0]->seq = static_cast<std::uint32_t>(inbox.take_seq());
    ASSERT_TRUE(inbox.push(n[0].get()));
    for (std::size_t i = 0; i < Inbox::kWideChunk; ++i) ASSERT_TRUE(inbox.post(n[0].get(), Inbox::kRemoveTag));
    constexpr std::size_t kStopPostingAfter = 2'000'000;
    std::size_t handled = 0;
    auto request = [&](TaskBase* t, std::uintptr_t tag) {
      EXPECT_EQ(tag, Inbox::kRemoveTag);
      if (++handled < kStopPostingAfter) {
        EXPECT_TRUE(inbox.post(t, tag));
        EXPECT_TRUE(inbox.post(t, tag));
      }
    };
    Sink sink;
    if (bounded) {
      inbox.drain_through(inbox.submitted(), inbox.seqs_taken(), sink.accept(), request, Inbox::kQueryRounds);
      EXPECT_LT(handled, 1'000'000u) << "a query's drain chased the producers";
    } else {
      inbox.drain_through(inbox.submitted(), inbox.seqs_taken(), sink.accept(), request);
      EXPECT_GE(handled, kStopPostingAfter) << "set-up: the unbounded drain should chase until the posts stop";
      EXPECT_EQ(sink.accepted.size(), 1u);
    }
  }
}

// The leader's may_wait here: every item of the pass is a far timer (Shard's also lets tasks due
// later than its hold horizon wait).
bool all_far(std::span<TaskBase* const> seen) {
  return std::all_of(seen.begin(), seen.end(), [](const TaskBase* t) { return (t->flags & kFarStamp) != 0; });
}

// A producer that enqueues while the leader takes in (here: 10 more items during each take-in,
// so every pass sees a few new ones and none comes back empty). The leader's drain
// (drain_for_leader) ends at the first complete pass whose items may wait; with others among them
// it chases the producer for all kMaxPasses passes, a confirm each, as every drain did before
// (W2's leader made a pass every ~25 timeouts and read each one before its cancel). Either way
// nothing is confirmed before a complete pass, and order is kept.
TEST(Inbox, TheLeadersDrainEndsWhereOnlyFarTimersAreLeftUnconfirmed) {
  for (const bool far : {true, false}) {
    SCOPED_TRACE(far ? "far timers" : "other submissions");
    Inbox inbox;
    auto n = nodes(Inbox::kChunk * Inbox::kMaxPasses * 2);
    std::size_t produced = 0;
    auto produce = [&](std::size_t k) {
      for (std::size_t i = 0; i < k; ++i, ++produced) {
        n[produced]->seq = static_cast<std::uint32_t>(inbox.take_seq());
        if (far) n[produced]->flags |= kFarStamp;
        ASSERT_TRUE(inbox.push(n[produced].get()));
      }
    };
    produce(Inbox::kChunk + 44);
    Sink sink;
    int confirms = 0;
    auto take_in = [&](std::span<TaskBase* const> confirmed) {
      ++confirms;
      const std::size_t taken = sink.accept()(confirmed);
      produce(10);
      return taken;
    };
    inbox.drain_for_leader(take_in, sink.remove(), all_far);
    if (far) {
      EXPECT_EQ(confirms, 1);  // the second pass (44 items) was complete: the first's 256 went in
      EXPECT_EQ(sink.accepted.size(), Inbox::kChunk);
      EXPECT_TRUE(inbox.has_unconfirmed());                // the 44 the complete pass saw itself
      EXPECT_FALSE(inbox.needs_confirm_pass(true));        // ... may wait for the next drain
      EXPECT_TRUE(inbox.needs_confirm_pass(false));        // ... unless nothing may wait (a shutdown)
    } else {
      EXPECT_EQ(confirms, Inbox::kMaxPasses - 1);  // every pass after the first confirmed the one before
      EXPECT_TRUE(inbox.needs_confirm_pass(true));
    }
    for (std::size_t i = 0; i < sink.accepted.size(); ++i) ASSERT_EQ(sink.accepted[i], n[i].get()) << "order at " << i;
    // A drain that is not the leader's own (a lifecycle call's) takes everything in.
    const std::size_t before = produced;
    inbox.drain(sink.accept(), sink.remove());
    EXPECT_FALSE(inbox.has_unconfirmed());
    ASSERT_EQ(sink.accepted.size(), before);
    for (std::size_t i = 0; i < before; ++i) ASSERT_EQ(sink.accepted[i], n[i].get()) << "order at " << i;
  }
}

// One item that is not a far timer among far ones: the drain goes on until a complete pass has
// confirmed it, and stops at the first complete pass after that which leaves only far timers.
TEST(Inbox, AnItemThatIsNotAFarTimerIsConfirmedBeforeTheLeadersDrainEnds) {
  Inbox inbox;
  auto n = nodes(Inbox::kChunk + 44 + 10);
  std::size_t produced = 0;
  for (; produced < Inbox::kChunk + 44; ++produced) {
    n[produced]->seq = static_cast<std::uint32_t>(inbox.take_seq());
    if (produced != Inbox::kChunk + 43) n[produced]->flags |= kFarStamp;  // the last one: not far
    ASSERT_TRUE(inbox.push(n[produced].get()));
  }
  Sink sink;
  int confirms = 0;
  auto take_in = [&](std::span<TaskBase* const> confirmed) {
    ++confirms;
    const std::size_t taken = sink.accept()(confirmed);
    for (int i = 0; i < 10 && produced < n.size(); ++i, ++produced) {
      n[produced]->seq = static_cast<std::uint32_t>(inbox.take_seq());
      n[produced]->flags |= kFarStamp;
      EXPECT_TRUE(inbox.push(n[produced].get()));
    }
    return taken;
  };
  inbox.drain_for_leader(take_in, sink.remove(), all_far);
  EXPECT_EQ(confirms, 2);
  EXPECT_EQ(sink.accepted.size(), Inbox::kChunk + 44);  // the one that is not far among them
  EXPECT_FALSE(inbox.needs_confirm_pass(true));         // the 10 far ones after it may wait
  EXPECT_TRUE(inbox.has_unconfirmed());
}

// The timer queue takes only some (no memory for more): the rest stay confirmed, in order, and
// come first at the next drain; drain_all() returns false instead of spinning.
TEST(Inbox, ARefusedAcceptKeepsTheRestInOrderForTheNextDrain) {
  Inbox inbox;
  auto n = nodes(10);
  for (auto& t : n) {
    t->seq = inbox.take_seq();
    ASSERT_TRUE(inbox.push(t.get()));
  }
  Sink sink;
  sink.room = 4;
  EXPECT_FALSE(inbox.drain_all(sink.accept(), sink.remove()));
  EXPECT_TRUE(inbox.take_in_refused());
  ASSERT_EQ(sink.accepted.size(), 4u);
  EXPECT_EQ(inbox.unconfirmed_count(), 6u);
  sink.room = SIZE_MAX;
  EXPECT_TRUE(inbox.drain_all(sink.accept(), sink.remove()));
  ASSERT_EQ(sink.accepted.size(), 10u);
  for (std::size_t i = 0; i < 10; ++i) EXPECT_EQ(sink.accepted[i], n[i].get());
  EXPECT_FALSE(inbox.take_in_refused());
}

}  // namespace
}  // namespace kairos::detail
