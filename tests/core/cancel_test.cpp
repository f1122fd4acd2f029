// cancel_test.cpp: cancel() on kairos tasks (pending, running, done), retention of cancelled
// tasks in queue_size(), remove_on_cancel, and queue_size() counting inbox submissions.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <latch>
#include <thread>
#include <vector>

#include <kairos/kairos.hpp>

#include "support.hpp"

namespace {

using namespace std::chrono_literals;
using kairos_test::Gate;
using kairos_test::kPatience;
using kairos_test::Manual;
using kairos_test::single_thread;

TEST(Cancel, NotStartedTaskNeverRuns) {
  std::atomic<int> runs{0};
  Manual s;
  auto f = s.schedule([&] { ++runs; }, 10ms);
  auto p = s.schedule_at_fixed_rate([&] { ++runs; }, 5ms, 1ms);
  EXPECT_TRUE(f.cancel());
  EXPECT_TRUE(p.cancel());
  EXPECT_FALSE(f.cancel());
  EXPECT_FALSE(p.cancel());
  s.step(20ms);
  EXPECT_EQ(runs, 0);
  EXPECT_THROW(f.get(), kairos::CancelledError);
  EXPECT_THROW(p.get(), kairos::CancelledError);
}

TEST(Cancel, DoneTaskReturnsFalse) {
  Manual s;
  auto f = s.schedule([] { return 1; }, 1ms);
  auto g = s.schedule([]() -> int { throw 5; }, 1ms);
  s.step(1ms);
  EXPECT_FALSE(f.cancel());
  EXPECT_FALSE(f.cancel(true));
  EXPECT_FALSE(g.cancel());
  EXPECT_FALSE(f.is_cancelled());
  EXPECT_FALSE(g.is_cancelled());
  EXPECT_EQ(f.get(), 1);
  EXPECT_THROW(g.get(), int);
}

// cancel() on a running task returns true and completes the future as cancelled at once,
// while the body is still blocked; the body's result is dropped; cancel(false) leaves its stop
// token alone.
TEST(Cancel, RunningTaskCompletesAsCancelledAtOnce) {
  kairos_test::Scheduler s(single_thread());
  Gate gate;
  std::latch started(1);
  std::atomic<bool> stop_seen{true};
  std::atomic<bool> finished{false};
  auto f = s.submit([&](std::stop_token st) {
    started.count_down();
    gate.wait();
    stop_seen = st.stop_requested();
    finished = true;
    return 5;
  });
  started.wait();
  EXPECT_FALSE(f.is_done());
  EXPECT_TRUE(f.cancel(false));
  EXPECT_TRUE(f.is_done());
  EXPECT_TRUE(f.is_cancelled());
  EXPECT_EQ(f.wait_for(0ms), std::future_status::ready);
  EXPECT_THROW(f.get(), kairos::CancelledError);
  EXPECT_FALSE(finished) << "get() must not wait for the body";
  EXPECT_FALSE(f.cancel());
  gate.open();
  // The thread finishes the body and goes on with later tasks.
  EXPECT_EQ(s.submit([] { return 8; }).get(), 8);
  EXPECT_TRUE(finished);
  EXPECT_FALSE(stop_seen) << "cancel(false) must not request stop";
  EXPECT_THROW(f.get(), kairos::CancelledError) << "the late result must be dropped";
}

// A periodic task cancelled during a run finishes that run and is not run again.
TEST(Cancel, RunningPeriodicTaskIsNotRequeued) {
  Gate gate;
  std::latch started(1);
  std::atomic<int> runs{0};
  Manual s(kairos_test::threads(1, 2));
  auto f = s.schedule_at_fixed_rate(
      [&] {
        if (++runs == 1) {
          started.count_down();
          gate.wait();
        }
      },
      1ms, 1ms);
  s.clock.advance(1ms);
  started.wait();
  EXPECT_TRUE(f.cancel());
  EXPECT_TRUE(f.is_cancelled());
  s.clock.advance(5ms);  // runs 2..6 would be due
  gate.open();
  ASSERT_TRUE(s.wait_idle(kPatience));
  EXPECT_EQ(runs, 1);
  EXPECT_EQ(s.queue_size(), 0u);
}

// Without remove_on_cancel a cancelled task stays queued (and counted) until its deadline.
TEST(Cancel, CancelledTaskIsRetainedUntilItsDeadline) {
  Manual s;
  auto a = s.schedule([] {}, 10ms);
  auto b = s.schedule([] {}, 20ms);
  auto c = s.schedule([] {}, 30ms);
  EXPECT_EQ(s.queue_size(), 3u);
  EXPECT_TRUE(b.cancel());
  EXPECT_EQ(s.queue_size(), 3u);
  ASSERT_TRUE(s.wait_idle(kPatience));
  EXPECT_EQ(s.queue_size(), 3u);
  s.step(10ms);
  EXPECT_EQ(s.queue_size(), 2u);  // a ran; b still retained
  s.step(10ms);
  EXPECT_EQ(s.queue_size(), 1u);  // b reached its deadline and left
  EXPECT_FALSE(c.is_done());
  EXPECT_TRUE(a.is_done());
}

TEST(Cancel, RemoveOnCancelDropsTheTaskAtOnce) {
  kairos::Options o = single_thread();
  o.remove_on_cancel = true;
  Manual s(o);
  std::vector<kairos::ScheduledFuture<void>> fs;
  for (int i = 0; i < 100; ++i) fs.push_back(s.schedule([] {}, std::chrono::hours(1 + i)));
  auto p = s.schedule_with_fixed_delay([] {}, 1h, 1h);
  EXPECT_EQ(s.queue_size(), 101u);
  EXPECT_TRUE(fs[50].cancel());
  EXPECT_EQ(s.queue_size(), 100u);
  EXPECT_TRUE(p.cancel());
  EXPECT_EQ(s.queue_size(), 99u);
  for (auto& f : fs) f.cancel();
  EXPECT_EQ(s.queue_size(), 0u);
  ASSERT_TRUE(s.wait_idle(kPatience));
  EXPECT_EQ(s.queue_size(), 0u);
}

// set_remove_on_cancel(true) applies to later cancels; an earlier cancelled task stays
// retained until its deadline, as in Java.
TEST(Cancel, SetRemoveOnCancelAppliesToLaterCancels) {
  Manual s;
  auto a = s.schedule([] {}, 1h);
  auto b = s.schedule([] {}, 2h);
  auto c = s.schedule([] {}, 3h);
  EXPECT_TRUE(a.cancel());
  EXPECT_EQ(s.queue_size(), 3u);
  s.set_remove_on_cancel(true);
  EXPECT_TRUE(b.cancel());
  EXPECT_EQ(s.queue_size(), 2u);
  s.set_remove_on_cancel(false);
  EXPECT_TRUE(c.cancel());
  EXPECT_EQ(s.queue_size(), 2u);
}

// queue_size() counts submissions still in an inbox: checked right after the submitting loop,
// from the submitting thread, before the leader can have drained them.
TEST(QueueSize, CountsTasksNotYetDrained) {
  constexpr int kTasks = 5000;
  Manual s(kairos_test::threads(1, 2));
  std::size_t seen_by_submitter = 0;
  std::thread submitter([&] {
    for (int i = 0; i < kTasks; ++i) s.schedule([] {}, 1h);
    seen_by_submitter = s.queue_size();
  });
  submitter.join();
  EXPECT_EQ(seen_by_submitter, static_cast<std::size_t>(kTasks));
  EXPECT_EQ(s.queue_size(), static_cast<std::size_t>(kTasks));
  for (int i = 0; i < kTasks; ++i) s.execute([] {});
  // The due ones may be running already; never more than submitted, never below the far ones.
  std::size_t now = s.queue_size();
  EXPECT_GE(now, static_cast<std::size_t>(kTasks));
  EXPECT_LE(now, static_cast<std::size_t>(2 * kTasks));
  ASSERT_TRUE(s.wait_idle(kPatience));
  EXPECT_EQ(s.queue_size(), static_cast<std::size_t>(kTasks));
}

TEST(QueueSize, CountsEachShardAndPeriodicTasksOnce) {
  Manual s(kairos_test::threads(2, 2));
  std::vector<std::thread> producers;
  for (int t = 0; t < 4; ++t)
    producers.emplace_back([&] {
      for (int i = 0; i < 250; ++i) s.schedule([] {}, 1h);
    });
  for (auto& t : producers) t.join();
  EXPECT_EQ(s.queue_size(), 1000u);
  auto p = s.schedule_at_fixed_rate([] {}, 1ms, 1ms);
  EXPECT_EQ(s.queue_size(), 1001u);
  s.step(10ms);
  EXPECT_EQ(s.queue_size(), 1001u);  // the periodic task is queued again, once
  EXPECT_TRUE(p.cancel());
  EXPECT_EQ(s.queue_size(), 1001u);  // retained until its next deadline
  s.step(1h);
  EXPECT_EQ(s.queue_size(), 0u);
}

// ---- the one-CAS cancel (core/src/shard_cancel.cpp) ------------------------------------------
// A task not taken in is cancelled by its state word alone; the drain that meets it applies the
// policy and counts it. A poll-mode scheduler that is never polled drains only when a call asks:
// what these tests count was cancelled in the inbox.

kairos::Options never_polled() {
  kairos::Options o;
  o.poll_mode = true;
  return o;
}

TEST(Cancel, CancelsInTheInboxAreCountedAtOnceByQueueSizeStatsAndShutdownNow) {
  kairos::Options o = never_polled();
  o.remove_on_cancel = true;
  kairos::ManualClock clock;
  kairos::BasicScheduler<kairos::ManualClock> s(o, clock);
  std::vector<kairos::ScheduledFuture<void>> fs;
  for (int i = 0; i < 1000; ++i) fs.push_back(s.schedule([] {}, std::chrono::hours(1)));
  for (int i = 0; i < 1000; i += 5) {
    for (int k = 0; k < 3; ++k) EXPECT_TRUE(fs[i + k].cancel());
  }
  EXPECT_EQ(s.stats().total().cancelled, 600u);  // before queue_size(): stats() takes them in too
  EXPECT_EQ(s.queue_size(), 400u);
  EXPECT_EQ(s.stats().total().pending, 400u);
  for (int i = 0; i < 1000; i += 5) EXPECT_FALSE(fs[i].cancel());  // cancelled once only
  EXPECT_EQ(s.shutdown_now().size(), 400u);
  EXPECT_EQ(s.stats().total().cancelled, 600u);
}

// The remove-on-cancel policy a cancel was made under is the one that applies to it, also when
// no drain met it before the policy changed (the setter takes in what arrived first): removed
// under true, retained until its deadline under false, as Java's class does.
TEST(Cancel, ACancelMadeBeforeThePolicyChangesIsJudgedByThePolicyItWasMadeUnder) {
  kairos::ManualClock clock;
  kairos::BasicScheduler<kairos::ManualClock> s(never_polled(), clock);
  auto retained = s.schedule([] {}, 1h);
  auto kept = s.schedule([] {}, 2h);
  EXPECT_TRUE(retained.cancel());  // remove-on-cancel off: retained
  s.set_remove_on_cancel(true);
  auto removed = s.schedule([] {}, 3h);
  EXPECT_TRUE(removed.cancel());  // on: removed
  s.set_remove_on_cancel(false);
  EXPECT_EQ(s.queue_size(), 2u);  // kept and the retained one
  EXPECT_EQ(s.stats().total().cancelled, 1u);
  EXPECT_EQ(s.purge(), 1u);  // Java's purge(): the retained one goes
  EXPECT_EQ(s.queue_size(), 1u);
  EXPECT_FALSE(kept.is_done());
}

// Capacity: a task's admission counted it, so its cancel counts it out at once (the pinned
// cancel), and its place is free for the next submission without any drain.
TEST(Cancel, UnderACapacityACancelInTheInboxFreesItsPlaceAtOnce) {
  kairos::Options o = never_polled();
  o.remove_on_cancel = true;
  o.capacity = 10;
  o.rejection = kairos::Rejection::abort;
  kairos::ManualClock clock;
  kairos::BasicScheduler<kairos::ManualClock> s(o, clock);
  std::vector<kairos::ScheduledFuture<void>> fs;
  for (int i = 0; i < 10; ++i) fs.push_back(s.schedule([] {}, 1h));
  EXPECT_THROW(s.schedule([] {}, 1h), kairos::RejectedExecution);
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(fs[i].cancel());
  for (int i = 0; i < 4; ++i) fs.push_back(s.schedule([] {}, 1h));
  EXPECT_THROW(s.schedule([] {}, 1h), kairos::RejectedExecution);
  EXPECT_EQ(s.queue_size(), 10u);
}

// Producers cancel their own timeouts (W2's shape, some in the inbox, some taken in) while the
// leader drains, a monitor reads queue_size() and stats() and flips the policy: every task runs
// or is cancelled (a cancel of a running task does both: cancel() is true, the run goes on), and
// the counts agree at the end.
TEST(Cancel, OneCasCancelsRacingTheDrainsAndThePolicySetterLoseNothing) {
  kairos::Options o = kairos_test::threads(2, 1);
  o.remove_on_cancel = true;
  kairos::Scheduler s(o);
  constexpr int kProducers = 2, kPerProducer = 20000, kLag = 64;
  constexpr std::uint8_t kRan = 1, kCancelled = 2;
  std::vector<std::atomic<std::uint8_t>> outcome(kProducers * kPerProducer);
  std::atomic<bool> done{false};
  std::thread monitor([&] {
    for (bool on = false; !done.load(std::memory_order_acquire); on = !on) {
      (void)s.queue_size();
      (void)s.stats();
      s.set_remove_on_cancel(on);
    }
    s.set_remove_on_cancel(true);
  });
  std::vector<std::thread> producers;
  for (int p = 0; p < kProducers; ++p)
    producers.emplace_back([&, p] {
      std::vector<kairos::ScheduledFuture<void>> window(kLag);
      std::vector<int> id_of(kLag, -1);
      auto cancel = [&](std::size_t slot) {
        if (window[slot].cancel()) outcome[static_cast<std::size_t>(id_of[slot])].fetch_or(kCancelled);
      };
      for (int i = 0; i < kPerProducer; ++i) {
        const std::size_t slot = static_cast<std::size_t>(i) % kLag;
        if (window[slot].valid()) cancel(slot);
        // every 16th is due soon and runs unless cancelled first; the rest are timeouts
        auto delay = (i + p) % 16 == 0 ? std::chrono::microseconds(50) : std::chrono::microseconds(60'000'000);
        const int id = p * kPerProducer + i;
        id_of[slot] = id;
        window[slot] = s.schedule([&outcome, id] { outcome[static_cast<std::size_t>(id)].fetch_or(kRan); }, delay);
      }
      for (std::size_t slot = 0; slot < kLag; ++slot) cancel(slot);
    });
  for (auto& t : producers) t.join();
  done.store(true, std::memory_order_release);
  monitor.join();
  // Past the short delay first: wait_idle returns once nothing is due, and a 50 us task cancelled
  // under the policy off is retained until its deadline; one reaching it between the counts below
  // would be counted out between them.
  std::this_thread::sleep_for(std::chrono::microseconds(50));
  ASSERT_TRUE(s.wait_idle(kPatience));
  std::uint64_t ran = 0, cancelled_unstarted = 0, neither = 0;
  for (auto& x : outcome) {
    const std::uint8_t v = x.load();
    ran += (v & kRan) != 0;
    cancelled_unstarted += v == kCancelled;
    neither += v == 0;
  }
  EXPECT_EQ(neither, 0u);  // nothing lost
  const auto total = s.stats().total();
  EXPECT_EQ(total.ran, ran);
  // Cancels made under the policy off are retained until their deadlines (60 s): counted
  // pending, not cancelled, until then.
  const std::size_t retained = s.queue_size();
  EXPECT_EQ(total.cancelled + retained, cancelled_unstarted);
  EXPECT_EQ(s.purge(), retained);
  EXPECT_EQ(s.queue_size(), 0u);
  EXPECT_TRUE(s.shutdown_now().empty());
}

}  // namespace
