// loop_wake_test.cpp: the wake-up of a poll-mode loop (loop_wake.hpp, the poll-mode part of
// leader_wait.hpp): one signal per arm, the fd read back only when it was signalled, and no lost
// wake-up when a submission races the loop arming it — every interleaving of the producer's
// steps (take its seq: I1, enqueue, compare with the armed deadline: N1/N2) with the loop's
// (arm: LW1, count read, drain what was counted, look at the earliest deadline), run one step at
// a time on this thread: either the loop sees the task (the deadline it reports is the task's)
// or the loop's fd is readable.
#include <gtest/gtest.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <kairos/detail/task.hpp>

#include "inbox.hpp"
#include "leader_wait.hpp"
#include "loop_wake.hpp"

namespace kairos::detail {
namespace {

bool readable(int fd) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

std::shared_ptr<const std::function<void(std::exception_ptr)>> no_handler() {
  return std::make_shared<const std::function<void(std::exception_ptr)>>();
}

TEST(LoopWake, ASignalMakesTheFdReadableAndConsumeReadsItBack) {
  int calls = 0;
  LoopWake w([&] { ++calls; }, no_handler());
  EXPECT_FALSE(readable(w.fd()));
  w.consume();  // nothing signalled: nothing to read (and no blocking read on an empty fd)
  w.signal();
  EXPECT_TRUE(readable(w.fd()));
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(w.signalled(), 1u);
  w.consume();
  EXPECT_FALSE(readable(w.fd()));
}

TEST(LoopWake, AThrowingCallbackGoesToTheUncaughtHandler) {
  int reported = 0;
  auto handler = std::make_shared<const std::function<void(std::exception_ptr)>>(
      [&](std::exception_ptr) { ++reported; });
  LoopWake w([] { throw 1; }, handler);
  w.signal();
  EXPECT_EQ(reported, 1);
  EXPECT_TRUE(readable(w.fd()));
}

TEST(LoopWake, OneWakePerArmWhateverTheNumberOfEarlierSubmissions) {
  LoopWake lw(nullptr, no_handler());
  LeaderWait wait;
  wait.set_loop_wake(&lw);
  wait.arm(1'000);
  (void)wait.notify_earlier(2'000);  // later: nothing
  EXPECT_EQ(wait.loop_wakes(), 0u);
  EXPECT_FALSE(readable(lw.fd()));
  for (int i = 0; i < 10; ++i) (void)wait.notify_earlier(500);  // earlier, ten times: one wake
  EXPECT_EQ(wait.loop_wakes(), 1u);
  EXPECT_TRUE(readable(lw.fd()));
  lw.consume();
  wait.arm(1'000);
  wait.lower(800);             // several shards: the loop's deadline is the earliest of theirs
  (void)wait.notify_earlier(900);    // later than the lowered arm: nothing
  EXPECT_EQ(wait.loop_wakes(), 1u);
  (void)wait.notify_earlier(700);
  EXPECT_EQ(wait.loop_wakes(), 2u);
  wait.lower(100);             // after its wake: stays disarmed until armed again
  (void)wait.notify_earlier(50);
  EXPECT_EQ(wait.loop_wakes(), 2u);
}

TEST(LoopWake, ALoopWithNothingPendingIsWokenByAnyTask) {
  LoopWake lw(nullptr, no_handler());
  LeaderWait wait;
  wait.set_loop_wake(&lw);
  wait.arm(kMaxNs);  // next_deadline() returned nullopt
  (void)wait.notify_earlier(kMaxNs - 1);
  EXPECT_EQ(wait.loop_wakes(), 1u);
}

// ---- the race, every interleaving --------------------------------------------------------------
// The loop's deadline before the submission is kLoopDeadline; the producer's task is earlier.
constexpr std::int64_t kLoopDeadline = 1'000'000;
constexpr std::int64_t kTaskDeadline = 10;

struct Race {
  LoopWake lw{nullptr, no_handler()};
  LeaderWait wait;
  Inbox inbox;
  TaskBase task;
  std::uint64_t seq = 0;
  std::uint64_t counted = 0, seq_bound = 0;
  std::vector<TaskBase*> accepted;
  std::int64_t reported = kLoopDeadline;  // what next_deadline() returns
  Race() { wait.set_loop_wake(&lw); }

  // Producer steps (Shard::publish after Engine::submit's seq).
  void take_seq() { seq = inbox.take_seq(); }  // (I1)
  void enqueue() {
    task.seq = seq;
    task.deadline = kTaskDeadline;
    ASSERT_TRUE(inbox.push(&task));
  }
  void notify() { (void)wait.notify_earlier(kTaskDeadline); }  // (N1)/(N2)
  // Loop steps (Shard::earliest_deadline).
  void arm() { wait.arm(kLoopDeadline); }  // (LW1)
  void count() {
    counted = inbox.submitted();
    seq_bound = inbox.seqs_taken();
  }
  // The drain waits for counted submissions; in a one-thread schedule it can only run once the
  // producer has enqueued a counted task (the scheduler below defers it until then).
  bool drain_would_wait() const { return counted > 0 && !enqueued; }
  void drain() {
    inbox.drain_through(
        counted, seq_bound,
        [&](std::span<TaskBase* const> c) {
          accepted.insert(accepted.end(), c.begin(), c.end());
          return c.size();
        },
        [](TaskBase*, std::uintptr_t) {});
    for (TaskBase* t : accepted) reported = std::min(reported, t->deadline);
  }
  bool enqueued = false;
};

TEST(LoopWake, NoInterleavingOfASubmissionWithTheLoopArmingLosesTheWake) {
  // Producer: P0 take_seq, P1 enqueue, P2 notify. Loop: L0 arm, L1 count, L2 drain + look.
  // Every order of the two sequences: C(6, 3) = 20.
  int orders = 0, seen_by_loop = 0, woken = 0;
  std::vector<int> schedule = {0, 0, 0, 1, 1, 1};  // 0: producer step, 1: loop step
  do {
    Race r;
    int p = 0, l = 0;
    std::string trace;
    std::vector<int> pending_loop;  // a deferred drain (it would wait for the enqueue)
    auto run_loop_step = [&](int step) {
      if (step == 0) r.arm();
      if (step == 1) r.count();
      if (step == 2) r.drain();
      trace += "L" + std::to_string(step) + " ";
    };
    for (int who : schedule) {
      if (who == 0) {
        if (p == 0) r.take_seq();
        if (p == 1) {
          r.enqueue();
          r.enqueued = true;
        }
        if (p == 2) r.notify();
        trace += "P" + std::to_string(p) + " ";
        ++p;
        // A drain that waited for this enqueue goes on now (as the real drain's loop would).
        if (!pending_loop.empty() && !r.drain_would_wait()) {
          run_loop_step(pending_loop.back());
          pending_loop.clear();
        }
      } else {
        if (l == 2 && r.drain_would_wait()) pending_loop.push_back(l);
        else run_loop_step(l);
        ++l;
      }
    }
    if (!pending_loop.empty()) run_loop_step(pending_loop.back());
    ++orders;
    bool saw = r.reported == kTaskDeadline;
    bool wake = readable(r.lw.fd());
    seen_by_loop += saw;
    woken += wake;
    EXPECT_TRUE(saw || wake) << "lost wake-up in the order " << trace;
  } while (std::next_permutation(schedule.begin(), schedule.end()));
  EXPECT_EQ(orders, 20);
  // Both sides of the argument happen: some orders are caught by the count, others by the wake.
  EXPECT_GT(seen_by_loop, 0);
  EXPECT_GT(woken, 0);
}

}  // namespace
}  // namespace kairos::detail
