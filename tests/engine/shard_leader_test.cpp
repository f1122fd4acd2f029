// The leader's loop (core/src/shard_leader.cpp): a wait that reaches its deadline with no
// wake-up starts the due tasks before it drains the inbox, under every wait policy; what the
// inbox held is taken in right after. The newest far-future submissions of the leader's drain
// are held back in the inbox (take_in_all): a cancel then finds them not taken in (no remove
// request), they still run on time and in order, and every lifecycle call still reaches them.
// Periodic tasks due together share a batch unless one is behind its schedule (pop_due), and
// shutdown() cancels those not yet started there (apply_policies).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <thread>
#include <vector>

#include <kairos/kairos.hpp>

#include "shard.hpp"  // the held-back tasks' test seams
#include "support.hpp"

namespace {

using namespace std::chrono_literals;
using kairos_test::kPatience;
using kairos::detail::Shard;

std::uint64_t in_inbox(kairos::Scheduler& s) { return s.stats().total().in_inbox; }
// What waits in one shard's inbox, read without taking it in: Scheduler::stats() takes in what
// arrived before it counts (a cancel made before it is counted), so it always reads 0 here.
std::uint64_t in_inbox_untouched(Shard* shard) { return shard->stats().in_inbox; }

// The newest shard's leader has drained `n` submissions (e.g. the high-water wake at the n-th).
bool leader_drained(Shard* shard, std::uint64_t n) {
  return kairos_test::eventually([&] { return shard->drained_for_testing() >= n; });
}

bool wait_until_drained(kairos::Scheduler& s) {
  const auto until = std::chrono::steady_clock::now() + kPatience;
  while (in_inbox(s) != 0)
    if (std::chrono::steady_clock::now() > until) return false;
    else std::this_thread::sleep_for(1ms);
  return true;
}

class ShardLeader : public ::testing::TestWithParam<kairos::WaitPolicy> {};

// Task A is due in 400 ms; once the leader waits for it, 1,000 tasks due in an hour are
// submitted: later than A, so none wakes the leader, and far below the inbox's high-water mark.
// No far timers (far_timer_slack 0): a far timer wakes a leader that would sleep longer than the
// slack (LeaderWait::notify_far), and these must not.
// When A starts they must still be in the inbox (a drain before the pop would have taken them
// in between A's deadline and its start). If the leader took them in before it waited (it was
// still arming when they came), the round says nothing and is tried again. A is re-armable: the
// leader's drain would otherwise hold it back in the inbox (far from due) and wake 2 ms before it
// is due to take in everything, the later tasks too (take_in_all; not a drain between its
// deadline and its start).
TEST_P(ShardLeader, AReachedDeadlineStartsItsTaskBeforeTheInboxIsDrained) {
  constexpr std::uint64_t kLater = 1000;
  int rounds_that_said_something = 0;
  for (int round = 0; round < 5 && rounds_that_said_something == 0; ++round) {
    kairos::Options o;
    o.wait = GetParam();
    o.far_timer_slack = std::chrono::nanoseconds(0);
    kairos::Scheduler s(o);
    Shard* shard = Shard::g_newest_for_testing.load();
    ASSERT_NE(shard, nullptr);
    std::atomic<std::int64_t> seen_in_inbox{-1};
    auto a = s.schedule_rearmable([&] { seen_in_inbox.store(static_cast<std::int64_t>(in_inbox_untouched(shard))); }, 400ms);
    ASSERT_TRUE(wait_until_drained(s));  // A taken in; the leader arms for it
    std::this_thread::sleep_for(20ms);
    std::vector<kairos::ScheduledFuture<void>> later;
    later.reserve(kLater);
    for (std::uint64_t i = 0; i < kLater; ++i) later.push_back(s.schedule([] {}, 1h));
    std::this_thread::sleep_for(20ms);
    const bool waited_first = in_inbox_untouched(shard) == kLater;
    ASSERT_EQ(a.wait_for(kPatience), std::future_status::ready);
    ASSERT_TRUE(wait_until_drained(s)) << "taken in after the batch";
    if (!waited_first) continue;
    ++rounds_that_said_something;
    EXPECT_EQ(seen_in_inbox.load(), static_cast<std::int64_t>(kLater));
    EXPECT_EQ(s.queue_size(), kLater);
  }
  if (rounds_that_said_something == 0) GTEST_SKIP() << "the leader never waited before the later submissions came";
}

// ---- the pop's clock: read before the drain ------------------------------------------------------
// A hook the leader calls between its drain and its pop (Shard::g_before_pop_for_testing). Its
// first call after the handshake is made blocks until release(): the test submits and moves time
// meanwhile, as a producer would while the leader drains. Installed by the constructor, removed
// (and a leader still inside let go) by the destructor.
class BeforePopHandshake {
 public:
  BeforePopHandshake() {
    state_.store(kArmed);
    Shard::g_before_pop_for_testing.store(&hook);
  }
  ~BeforePopHandshake() {
    Shard::g_before_pop_for_testing.store(nullptr);
    state_.store(kReleased);  // a leader still inside goes on
  }
  // The leader is between a drain and a pop, and stays there until release().
  bool entered() {
    return kairos_test::eventually([] { return state_.load() == kEntered; });
  }
  void release() { state_.store(kReleased); }

 private:
  enum State { kArmed, kEntered, kReleased };
  static void hook() {
    int armed = kArmed;
    if (!state_.compare_exchange_strong(armed, kEntered)) return;  // the first pass only
    const auto until = std::chrono::steady_clock::now() + kPatience;
    while (state_.load() != kReleased && std::chrono::steady_clock::now() < until) std::this_thread::yield();
  }
  static inline std::atomic<int> state_{kReleased};
};

// Task B is due at +1 us; the leader has taken it in. Z (due now) wakes it; after its drain (Z
// taken in) and before its pop, A is submitted, due now, and the clock moves to B's deadline.
// A and Z are due before B, and both were submitted before the leader could read the time at
// which B is due: Z, A, B. A pop at a clock read after the drain started B before A, which was
// still in the inbox (Fifo.MixedDeadlinesKeepTieOrder failed so once in a CI run).
TEST(PopClock, ASubmissionBeforeThePopsClockReadIsPoppedInDeadlineOrder) {
  kairos::ManualClock clock;
  kairos::BasicScheduler<kairos::ManualClock> s(kairos_test::single_thread(), clock);
  Shard* shard = Shard::g_newest_for_testing.load();
  ASSERT_NE(shard, nullptr);
  kairos_test::Recorder order;
  s.schedule([&] { order.add('B'); }, 1us);
  ASSERT_TRUE(leader_drained(shard, 1));
  BeforePopHandshake handshake;
  s.schedule([&] { order.add('Z'); }, 0us);
  ASSERT_TRUE(handshake.entered());
  s.schedule([&] { order.add('A'); }, 0us);
  clock.advance(1us);
  handshake.release();
  ASSERT_TRUE(s.wait_idle(kPatience));
  EXPECT_EQ(order.ids(), (std::vector<int>{'Z', 'A', 'B'}));
}

// The same on the steady clock, under each wait policy: B (re-armable, so that it is never held
// back in the inbox) is due in 20 ms; inside the handshake the test waits past B's deadline and
// submits A due 1 ms before it, so A is due at every clock read after the drain and before B.
TEST_P(ShardLeader, ASubmissionBeforeThePopsClockReadIsPoppedInDeadlineOrder) {
  kairos::Options o = kairos_test::single_thread();
  o.wait = GetParam();
  kairos::Scheduler s(o);
  Shard* shard = Shard::g_newest_for_testing.load();
  ASSERT_NE(shard, nullptr);
  kairos_test::Recorder order;
  const auto b_due = std::chrono::steady_clock::now() + 20ms;
  auto b = s.schedule_rearmable_at([&] { order.add('B'); }, b_due);
  ASSERT_TRUE(leader_drained(shard, 1));
  {
    BeforePopHandshake handshake;
    s.schedule([&] { order.add('Z'); }, 0us);
    ASSERT_TRUE(handshake.entered());
    if (std::chrono::steady_clock::now() >= b_due - 2ms) GTEST_SKIP() << "B came due before the pass (a stalled test thread)";
    std::this_thread::sleep_until(b_due + 1ms);
    s.schedule_at([&] { order.add('A'); }, b_due - 1ms);
    handshake.release();
  }
  ASSERT_EQ(b.wait_for(kPatience), std::future_status::ready);
  ASSERT_TRUE(s.wait_idle(kPatience));
  EXPECT_EQ(order.ids(), (std::vector<int>{'Z', 'A', 'B'}));
}

// ---- held back: the newest far-future submissions stay in the inbox -------------------------------
// The submission that wakes the leader to drain: the long interval's, which ends a short interval
// too, so the count is the same whichever the leader chose (LeaderWait::set_high_water_mask).
constexpr std::size_t kHighWater = kairos::detail::kLongHighWater;

// Tasks held back due kHeldDue from their submission: the leader takes them in kHoldAheadNs before
// that, so how many it holds says something only when read well before (kHeldReadWithin). A test
// thread can stall longer than any short due time (300 ms once, under ThreadSanitizer beside
// another suite): a round read later says nothing, and the test tries again (kHeldRounds).
constexpr auto kHeldDue = 2s;
constexpr auto kHeldReadWithin = 1500ms;
constexpr int kHeldRounds = 3;

// After the high-water drain of the newest shard: how many tasks it holds back, or nothing when
// read later than kHeldReadWithin after `submitted`.
std::optional<std::size_t> held_if_read_in_time(std::chrono::steady_clock::time_point submitted) {
  Shard* shard = Shard::g_newest_for_testing.load();
  if (shard == nullptr || !leader_drained(shard, kHighWater)) {
    ADD_FAILURE() << "no shard, or its leader did not drain at the high-water mark";
    return std::nullopt;
  }
  const std::size_t held = shard->held_for_testing();
  if (std::chrono::steady_clock::now() - submitted >= kHeldReadWithin) return std::nullopt;
  return held;
}

// Runs round() (a fresh scheduler each, returning held_if_read_in_time's answer) until one reads
// the held count in time, at most kHeldRounds times: that count must be above 0.
template <class Round>
void expect_held_back_in_a_round(Round round) {
  for (int i = 0; i < kHeldRounds; ++i) {
    if (const std::optional<std::size_t> held = round()) {
      EXPECT_GT(*held, 0u);
      return;
    }
  }
  GTEST_SKIP() << "the held tasks were never counted in time";
}

// W2's shape: timeouts far in the future, each cancelled a little after it was scheduled. The
// leader drains the whole inbox at the high-water mark; the newest of those timeouts are held
// back, so that their cancels, after the drain, find them not taken in: one CAS each, no remove
// request. (Taken in, each would post one: the old behaviour, 1,000 requests here.)
TEST(HeldBack, CancelsOfTheNewestFarTimeoutsAfterADrainPostNoRemoveRequest) {
  kairos::Options o;
  o.remove_on_cancel = true;
  kairos::Scheduler s(o);
  Shard* shard = Shard::g_newest_for_testing.load();
  ASSERT_NE(shard, nullptr);
  std::vector<kairos::ScheduledFuture<void>> timeouts;
  timeouts.reserve(kHighWater);
  for (std::size_t i = 0; i < kHighWater; ++i) timeouts.push_back(s.schedule([] {}, 10s));
  ASSERT_TRUE(leader_drained(shard, kHighWater));
  EXPECT_EQ(shard->held_for_testing(), kairos::detail::Inbox::kMaxHeld);
  const std::uint64_t requests_before = shard->removes_sent_for_testing();
  for (std::size_t i = kHighWater - 1000; i < kHighWater; ++i) EXPECT_TRUE(timeouts[i].cancel());
  EXPECT_EQ(shard->removes_sent_for_testing(), requests_before) << "a cancel found its timeout taken in";
  // Counted out at once all the same (queue_size takes in what arrived: the cancelled are dropped).
  EXPECT_EQ(s.queue_size(), kHighWater - 1000);
  EXPECT_EQ(shard->held_for_testing(), 0u);
  s.shutdown_now();
}

// Held back, still on time: the newest submissions are due in kHeldDue, everything older in an
// hour. The leader must wake for the held ones though its timer queue's earliest is an hour away.
TEST(HeldBack, HeldTasksRunOnTimeThoughTheQueueHoldsOnlyLaterOnes) {
  expect_held_back_in_a_round([] {
    kairos::Scheduler s;
    std::atomic<std::size_t> ran{0};
    std::vector<kairos::ScheduledFuture<void>> later;
    later.reserve(kHighWater);
    for (std::size_t i = 0; i < kHighWater - 1000; ++i) later.push_back(s.schedule([] {}, 1h));
    const auto submitted = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < 1000; ++i) s.schedule([&] { ran.fetch_add(1); }, kHeldDue);
    const std::optional<std::size_t> held = held_if_read_in_time(submitted);
    EXPECT_TRUE(kairos_test::eventually([&] { return ran.load() == 1000; })) << ran.load() << " of 1,000 ran";
    EXPECT_EQ(s.queue_size(), kHighWater - 1000);
    s.shutdown_now();
    return held;
  });
}

// Equal deadlines across the boundary between the tasks taken in and the ones held back: they
// start in submission order (FIFO), on a ManualClock.
TEST(HeldBack, EqualDeadlinesRunInSubmissionOrderAcrossTheHeldBoundary) {
  kairos::ManualClock clock;
  kairos::BasicScheduler<kairos::ManualClock> s(kairos::Options{}, clock);
  Shard* shard = Shard::g_newest_for_testing.load();
  ASSERT_NE(shard, nullptr);
  kairos_test::Recorder order;
  for (std::size_t i = 0; i < kHighWater; ++i) s.schedule([&order, i] { order.add(static_cast<int>(i)); }, 10s);
  ASSERT_TRUE(leader_drained(shard, kHighWater));
  EXPECT_GT(shard->held_for_testing(), 0u);
  clock.advance(10s);
  ASSERT_TRUE(kairos_test::eventually([&] { return order.size() == kHighWater; }));
  const std::vector<int> ids = order.ids();
  for (std::size_t i = 0; i < ids.size(); ++i) ASSERT_EQ(ids[i], static_cast<int>(i)) << "at " << i;
}

// Every lifecycle call reaches the held tasks: wait_idle() returns (nothing is due), and
// shutdown_now() returns every pending task, the held ones with the rest.
TEST(HeldBack, ShutdownNowReturnsTheHeldTasksAndWaitIdleDoesNotWaitForThem) {
  kairos::Scheduler s;
  Shard* shard = Shard::g_newest_for_testing.load();
  ASSERT_NE(shard, nullptr);
  for (std::size_t i = 0; i < kHighWater; ++i) s.schedule([] {}, 1h);
  ASSERT_TRUE(leader_drained(shard, kHighWater));
  ASSERT_GT(shard->held_for_testing(), 0u);
  EXPECT_TRUE(s.wait_idle(kairos_test::kPatience));
  EXPECT_EQ(s.shutdown_now().size(), kHighWater);
}

// After shutdown() (delayed tasks still run: Java's default policy) the held tasks are taken in
// and run at their deadline; the scheduler then terminates.
TEST(HeldBack, AfterShutdownTheHeldTasksStillRun) {
  expect_held_back_in_a_round([] {
    kairos::Scheduler s;
    std::atomic<std::size_t> ran{0};
    const auto submitted = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < kHighWater; ++i) s.schedule([&] { ran.fetch_add(1); }, kHeldDue);
    const std::optional<std::size_t> held = held_if_read_in_time(submitted);
    s.shutdown();
    EXPECT_TRUE(s.await_termination(kairos_test::kPatience));
    EXPECT_EQ(ran.load(), kHighWater);
    return held;
  });
}

// ---- the high-water interval follows the task pool ------------------------------------------------
// Sets what the leader is told about the task pool when it chooses the interval, for one test.
class PoolGrows {
 public:
  explicit PoolGrows(bool grows) { Shard::g_pool_grows_for_testing.store(grows ? 1 : 0); }
  ~PoolGrows() { Shard::g_pool_grows_for_testing.store(-1); }
  PoolGrows(const PoolGrows&) = delete;
  PoolGrows& operator=(const PoolGrows&) = delete;
};

// The leader sleeps with this interval chosen: past its count read, so that nothing submitted
// from now on is drained before a wake-up (a high-water mark or an earlier deadline).
bool asleep_with_high_water(Shard* shard, std::uint32_t interval) {
  return kairos_test::eventually([&] {
    return shard->leader_wait().asleep_for_testing() && shard->leader_wait().high_water_mask() == interval - 1;
  });
}

// While the pool does not grow, far-future submissions wake the leader every kLongHighWater, not
// every kShortHighWater (W2's steady state: the held-back count reads the newest pending timeouts an
// eighth as often); once it grows (W1 fresh), every kShortHighWater again, so that the leader
// prepares slabs often enough. No deadline is involved: the tasks are due in an hour.
TEST(HighWater, TheLeaderDrainsEveryLongIntervalWhileThePoolDoesNotGrowAndEveryShortOneOnceItDoes) {
  using kairos::detail::kLongHighWater;
  using kairos::detail::kShortHighWater;
  PoolGrows still(false);
  // No far timers: those make the leader drain every far_timer_slack (FarTimers, below), and this
  // is about the high-water wakes of timers whose deadlines their callers read.
  kairos::Options no_far;
  no_far.far_timer_slack = std::chrono::nanoseconds(0);
  kairos::Scheduler s(no_far);
  Shard* shard = Shard::g_newest_for_testing.load();
  ASSERT_NE(shard, nullptr);
  s.execute_after([] {}, 1h);  // wakes the leader, which then waits an hour and chooses the interval
  ASSERT_TRUE(leader_drained(shard, 1));
  ASSERT_TRUE(asleep_with_high_water(shard, kLongHighWater));
  for (std::size_t i = 1; i < kShortHighWater; ++i) s.execute_after([] {}, 1h);
  // The short interval's last submission is in: with the short interval it would have woken the
  // leader, which drains within microseconds; 200 ms is a generous bound for a wake that must not come.
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(shard->drained_for_testing(), 1u) << "the leader drained at the short interval";
  for (std::size_t i = kShortHighWater; i < kLongHighWater; ++i) s.execute_after([] {}, 1h);
  ASSERT_TRUE(leader_drained(shard, kLongHighWater));
  PoolGrows grows(true);
  std::atomic<bool> ran{false};
  s.execute_after([&] { ran.store(true); }, 1ms);  // due first: wakes the leader, whose next wait chooses again
  ASSERT_TRUE(kairos_test::eventually([&] { return ran.load(); }));
  ASSERT_TRUE(asleep_with_high_water(shard, kShortHighWater));
  const std::size_t submitted = kLongHighWater + 1;
  for (std::size_t i = submitted; i < kLongHighWater + kShortHighWater; ++i) s.execute_after([] {}, 1h);
  EXPECT_TRUE(leader_drained(shard, kLongHighWater + kShortHighWater)) << "no drain at the short interval";
  s.shutdown_now();
}

// ---- a stream of timeouts is not chased --------------------------------------------------------------
// A producer streams timeouts (W2's order timeouts: each cancelled 1,024 submissions later) for
// 300 ms: far timers (1 h, the default slack of 1 ms), or, with no far timers (slack 0), tasks due
// in 100 ms (W2b's short class). The leader's drains end at a complete pass whose items may wait
// unconfirmed (Inbox::needs_confirm_pass, Shard::unconfirmed_may_wait), and it then sleeps until
// the slack has passed, kHoldAheadNs before the earliest of them is due, or a high-water mark
// wakes it: a few complete passes that saw items (confirms) per wake. A leader that drained
// again whenever a pass had seen items it could not confirm yet chased the producer: on a 2-vCPU
// host 14-18 complete passes a millisecond (one every few hundred timeouts, each read before its
// cancel), against ~2.3 with far timers left to wait. The bound: 4 a millisecond, 3 per long
// high-water interval, plus 50. (Empty complete passes are not counted: a leader may spin on them
// while a counted submission is between its seq and its enqueue, arm_and_check; under
// ThreadSanitizer that window is long.)
class TimeoutStream : public ::testing::TestWithParam<bool> {};

TEST_P(TimeoutStream, ALeaderDoesNotChaseAStreamOfTimeouts) {
  const bool far = GetParam();
  kairos::Options o;
  o.remove_on_cancel = true;
  if (!far) o.far_timer_slack = std::chrono::nanoseconds(0);
  const auto delay = far ? std::chrono::nanoseconds(1h) : std::chrono::nanoseconds(100ms);
  kairos::Scheduler s(o);
  Shard* shard = Shard::g_newest_for_testing.load();
  ASSERT_NE(shard, nullptr);
  std::vector<kairos::ScheduledFuture<void>> ring(1024);
  const std::uint64_t passes_at_start = shard->seen_complete_passes_for_testing();
  const auto start = std::chrono::steady_clock::now();
  std::uint64_t pairs = 0;
  while (std::chrono::steady_clock::now() - start < 300ms) {
    for (auto& h : ring) {
      h.cancel();
      h = s.schedule([] {}, delay);
    }
    pairs += ring.size();
  }
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
  const std::uint64_t passes = shard->seen_complete_passes_for_testing() - passes_at_start;
  EXPECT_LE(passes, 4 * static_cast<std::uint64_t>(ms) + 3 * pairs / kairos::detail::kLongHighWater + 50)
      << pairs << " submissions in " << ms << " ms";
  s.shutdown_now();  // (a slow producer, as under a sanitizer, may let some 100 ms timeouts run)
}

// The stream ends with a few tasks due in 50 ms, the earliest of all (the others are due in an
// hour). Those the leader's last drain left unconfirmed (no take-in, no wake-up owed by their
// producers: the leader had them) still run, and not early: the leader wakes kHoldAheadNs before
// the earliest of them (held_wake), or within the slack of a far timer. A leader that waited as if
// they were not there would sleep until the hour's tasks are due.
TEST_P(TimeoutStream, TheLastTimeoutsOfAStreamRunOnTime) {
  const bool far = GetParam();
  kairos::Options o;
  o.remove_on_cancel = true;
  o.far_timer_slack = far ? std::chrono::nanoseconds(10us) : std::chrono::nanoseconds(0);  // far: from 10 ms
  const auto delay = std::chrono::nanoseconds(50ms);
  kairos::Scheduler s(o);
  std::vector<kairos::ScheduledFuture<void>> ring(1024);
  for (int round = 0; round < 200; ++round)
    for (auto& h : ring) {
      h.cancel();
      h = s.schedule([] {}, 1h);
    }
  constexpr int kKept = 16;
  std::atomic<int> ran{0};
  std::atomic<int> early{0};
  for (int i = 0; i < kKept; ++i) {
    const auto called = std::chrono::steady_clock::now();
    s.execute_after([&ran, &early, called, delay] {
      if (std::chrono::steady_clock::now() < called + delay) early.fetch_add(1);
      ran.fetch_add(1);
    }, delay);
  }
  EXPECT_TRUE(kairos_test::eventually([&] { return ran.load() == kKept; })) << ran.load() << " of " << kKept << " ran";
  EXPECT_EQ(early.load(), 0);
  s.shutdown_now();
}

INSTANTIATE_TEST_SUITE_P(FarAndNot, TimeoutStream, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& i) { return i.param ? "FarTimers" : "DueIn100ms"; });

// ---- periodic runs in a batch ----------------------------------------------------------------------
// Periodic tasks due together whose next runs come after the batch's `now` start in one batch
// and are re-queued at its end (next_run_after, shard_leader.cpp): while the last of them runs, the earlier
// ones are not back in the queue yet. One at a time (each periodic task its own batch, the old
// way) they would be: queue_size() 2 there, not 0.
TEST(PeriodicBatch, PeriodicTasksDueTogetherStartInOneBatchAndAreReQueuedAtItsEnd) {
  kairos_test::Manual s;
  std::atomic<int> c_runs{0};
  std::atomic<std::int64_t> queued_during_c{-1};
  s.schedule_at_fixed_rate([] {}, 1ms, 1ms);                                             // A
  s.schedule_with_fixed_delay([] {}, 1ms, 1ms);                                          // B
  s.schedule_at_fixed_rate([&] {                                                         // C
    if (c_runs.fetch_add(1) == 0) queued_during_c.store(static_cast<std::int64_t>(s.queue_size()));
  }, 1ms, 1ms);
  // Taken in now (queue_size takes in what arrived): a leader armed for A's deadline is not woken
  // by B and C (not earlier), and a reached deadline's batch is popped before the next drain.
  ASSERT_EQ(s.queue_size(), 3u);
  s.step(1ms);
  ASSERT_EQ(c_runs.load(), 1);
  EXPECT_EQ(queued_during_c.load(), 0) << "A and B were re-queued before C ran: not one batch";
  EXPECT_EQ(s.queue_size(), 3u);  // all three back, their next runs due at 2 ms
  s.step(1ms);
  EXPECT_EQ(c_runs.load(), 2);
}

// A fixed-rate task behind its schedule (its next run is due at the batch's `now` or before) still
// ends its batch: each catch-up run is re-queued before anything later is popped, so it keeps its
// place in (deadline, seq) order among one-shot tasks. Time jumps 5 ms at once: A's runs are due
// at 1..5 ms, C at 2.5 ms, B at 3 ms (submitted after A: A's run at 3 ms goes first).
TEST(PeriodicBatch, CatchUpRunsKeepTheirPlaceAmongOneShotTasks) {
  kairos_test::Manual s;
  kairos_test::Recorder order;
  std::atomic<int> a_runs{0};
  s.schedule_at_fixed_rate([&] { order.add(a_runs.fetch_add(1) + 1); }, 1ms, 1ms);  // 1, 2, 3, 4, 5
  s.schedule([&] { order.add(30); }, 3ms);                                           // B
  s.schedule([&] { order.add(25); }, 2500us);                                        // C
  ASSERT_EQ(s.queue_size(), 3u);  // all three in the timer queue when the clock jumps
  s.step(5ms);
  EXPECT_EQ(order.ids(), (std::vector<int>{1, 2, 25, 3, 30, 4, 5}));
}

// shutdown() from the batch's first task: the periodic tasks waiting behind it in the same batch
// do not start (periodic tasks stop at shutdown by default; Java's run() checks its run state
// before each run). shutdown() cancels them where they wait (Shard::apply_policies), as it
// cancels those in the queue; a run already started would end, and its series with it.
TEST(PeriodicBatch, ShutdownCancelsThePeriodicTasksWaitingInTheBatch) {
  kairos_test::Manual s;
  std::atomic<int> periodic_runs{0};
  auto stopper = s.schedule([&] { s.shutdown(); }, 1ms);
  auto a = s.schedule_at_fixed_rate([&] { periodic_runs.fetch_add(1); }, 1ms, 1ms);
  auto b = s.schedule_with_fixed_delay([&] { periodic_runs.fetch_add(1); }, 1ms, 1ms);
  ASSERT_EQ(s.queue_size(), 3u);  // all three popped in one batch when the clock moves
  s.clock.advance(1ms);
  ASSERT_TRUE(s.await_termination(kPatience));
  EXPECT_EQ(stopper.wait_for(kPatience), std::future_status::ready);
  EXPECT_EQ(periodic_runs.load(), 0) << "a periodic task popped with the stopper ran after shutdown() returned";
  EXPECT_TRUE(a.is_cancelled());
  EXPECT_TRUE(b.is_cancelled());
}

INSTANTIATE_TEST_SUITE_P(EveryWaitPolicy, ShardLeader,
                         ::testing::Values(kairos::WaitPolicy::sleep(), kairos::WaitPolicy::hybrid(std::chrono::microseconds(50)), kairos::WaitPolicy::adaptive(),
                                           kairos::WaitPolicy::spin()),
                         [](const ::testing::TestParamInfo<kairos::WaitPolicy>& p) {
                           switch (p.param.mode()) {
                             case kairos::WaitPolicy::Mode::sleep: return "Sleep";
                             case kairos::WaitPolicy::Mode::hybrid: return "Hybrid";
                             case kairos::WaitPolicy::Mode::spin: return "Spin";
                             case kairos::WaitPolicy::Mode::adaptive: return "Adaptive";
                           }
                           return "Unknown";
                         });

}  // namespace
