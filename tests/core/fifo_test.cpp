// fifo_test.cpp: kairos starts tasks with equal deadlines in submission order within a shard,
// also when the submissions come from different threads ordered by happens-before, and also
// between tasks billions of submissions apart (the order stamps' restamp pass, restamp.hpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <mutex>
#include <thread>
#include <vector>

#include <kairos/kairos.hpp>

#include "shard.hpp"  // the sequence's test seams
#include "support.hpp"

namespace {

using namespace std::chrono_literals;
using kairos_test::kPatience;
using kairos_test::Manual;
using kairos_test::Recorder;
using kairos_test::single_thread;
using kairos::detail::kRestampEvery;
using kairos::detail::Shard;

// The shard of the newest scheduler (one shard): its sequence moved on by n, a restamp period at
// a time, waiting after each for the pass the period asks for, as a shard would run it long
// before 2^28 more submissions came. False if a pass did not run within kPatience.
bool skip_sequence(Shard& shard, std::uint64_t n) {
  while (n > 0) {
    const std::uint64_t chunk = std::min(n, kRestampEvery);
    const std::uint64_t passes = shard.restamps_for_testing();
    const std::uint64_t boundaries_before = shard.seqs_taken_for_testing() / kRestampEvery;
    shard.skip_seqs_for_testing(chunk);
    n -= chunk;
    if (shard.seqs_taken_for_testing() / kRestampEvery == boundaries_before) continue;  // no period began
    const auto until = std::chrono::steady_clock::now() + kPatience;
    while (shard.restamps_for_testing() == passes)
      if (std::chrono::steady_clock::now() > until) return false;
      else std::this_thread::sleep_for(100us);
  }
  return true;
}

Shard& newest_shard() {
  Shard* shard = Shard::g_newest_for_testing.load();
  if (shard == nullptr) throw std::logic_error("no shard");
  return *shard;
}

// Equal deadlines between tasks of one shard submitted 2^31 + 2^28 submissions apart (without
// the restamp pass, their 32-bit stamps compare the wrong way round): the early ones, spread over
// ten deadlines in shuffled order (so the heap and the sorted runs both hold some), start before
// the late ones at each deadline, and each group in its own submission order.
TEST(Fifo, EqualDeadlinesBillionsOfSubmissionsApartKeepSubmissionOrder) {
  constexpr int kEach = 200, kDeadlines = 10;
  Recorder order;
  Manual s;
  Shard& shard = newest_shard();
  const auto base = s.clock.now() + 1h;
  std::vector<int> key_of(2 * kEach);  // the deadline index of task i
  std::vector<kairos::ScheduledFuture<void>> keep;  // futures held: a cancel-free, handle-holding load
  for (int i = 0; i < kEach; ++i) {
    key_of[i] = (i * 7) % kDeadlines;  // shuffled: 0, 7, 4, 1, 8, ...
    keep.push_back(s.schedule_at([&, i] { order.add(i); }, base + std::chrono::seconds(key_of[i])));
  }
  ASSERT_TRUE(skip_sequence(shard, (std::uint64_t{1} << 31) + kRestampEvery));
  EXPECT_GE(shard.restamps_for_testing(), 9u);
  for (int i = kEach; i < 2 * kEach; ++i) {
    key_of[i] = (i * 3) % kDeadlines;
    keep.push_back(s.schedule_at([&, i] { order.add(i); }, base + std::chrono::seconds(key_of[i])));
  }
  s.step(1h + std::chrono::seconds(kDeadlines));
  std::vector<int> ids = order.ids();
  ASSERT_EQ(ids.size(), static_cast<std::size_t>(2 * kEach));
  std::vector<int> expected;
  for (int d = 0; d < kDeadlines; ++d)
    for (int i = 0; i < 2 * kEach; ++i)
      if (key_of[i] == d) expected.push_back(i);
  EXPECT_EQ(ids, expected) << kairos_test::where_they_differ(ids, expected);
}

// The same across the restamp of a re-armed task's keys and of a periodic task's stamp (a
// periodic task keeps the stamp of its submission for every run, as Java's class keeps its
// sequence number): each ties with a task submitted 2^31 + 2^28 submissions later.
TEST(Fifo, ReArmedAndPeriodicTasksKeepTheirPlaceBillionsOfSubmissionsLater) {
  Recorder order;
  Manual s;
  Shard& shard = newest_shard();
  const auto d = s.clock.now() + 2h;
  // Re-armed earlier (a refile request: filed at d at once) and re-armed later (filed at d - 1h,
  // its latest key d adopted when d - 1h comes), both before the skip.
  auto earlier = s.schedule_rearmable_at([&] { order.add(1); }, d + 1h);
  auto later = s.schedule_rearmable_at([&] { order.add(2); }, d - 1h);
  ASSERT_TRUE(earlier.rearm_at(d));
  ASSERT_TRUE(later.rearm_at(d));
  // Runs at d - 1h, d, d + 1h, ...
  auto periodic = s.schedule_at_fixed_rate([&] { order.add(3); }, 1h, 1h);
  ASSERT_TRUE(skip_sequence(shard, (std::uint64_t{1} << 31) + kRestampEvery));
  auto late = s.schedule_at([&] { order.add(4); }, d);
  s.step(1h);  // d - 1h: the periodic task's first run; `later` goes back in line at d
  EXPECT_EQ(order.ids(), std::vector<int>({3}));
  ASSERT_TRUE(skip_sequence(shard, (std::uint64_t{1} << 31) + kRestampEvery));  // passes over a
  auto last = s.schedule_at([&] { order.add(5); }, d);                          // batch-free queue again
  s.step(1h);
  EXPECT_EQ(order.ids(), std::vector<int>({3, 1, 2, 3, 4, 5}));
  periodic.cancel();
}

// Restamp passes racing re-arms and cancels from other threads (the pass holds each pending
// re-armable task in kRearming while it renumbers its keys): nothing is lost or run twice, and
// the tasks run in the order of their final keys (deadline, then the order of the last re-arms),
// before tasks submitted after the passes at the same deadlines.
TEST(Fifo, RestampPassesRacingReArmsAndCancelsKeepOrderAndLoseNothing) {
  constexpr int kTasks = 200;
  Recorder order;
  Manual s;
  Shard& shard = newest_shard();
  const auto base = s.clock.now() + 1h;
  std::vector<kairos::ScheduledFuture<void>> tasks;
  for (int i = 0; i < kTasks; ++i)
    tasks.push_back(s.schedule_rearmable_at([&, i] { order.add(i); }, base + std::chrono::seconds(i % 17)));
  // The re-armer's last successful re-arm of each task: its final key (the only re-armer).
  std::vector<int> final_second(kTasks), final_rank(kTasks, -1);
  for (int i = 0; i < kTasks; ++i) final_second[i] = i % 17;
  std::vector<bool> cancelled(kTasks, false);
  // A fixed number of re-arms, not "until the passes are done": a poll loop drains a re-armer's
  // flood of refile requests before it gets to the pass.
  std::thread rearmer([&] {
    std::uint32_t x = 12345;
    for (int k = 0; k < 20000; ++k) {
      x = x * 1664525u + 1013904223u;
      const int i = static_cast<int>((x >> 8) % kTasks);
      const int second = static_cast<int>((x >> 20) % 17);
      if (tasks[i].rearm_at(base + std::chrono::seconds(second))) {
        final_second[i] = second;
        final_rank[i] = k;
      }
    }
  });
  std::thread canceller([&] {
    for (int i = 0; i < kTasks; i += 7) cancelled[i] = tasks[i].cancel();
  });
  for (int k = 0; k < 12; ++k) {
    const std::uint64_t passes = shard.restamps_for_testing();
    shard.skip_seqs_for_testing(kRestampEvery);
    const auto until = std::chrono::steady_clock::now() + kPatience;
    while (shard.restamps_for_testing() == passes && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(100us);
    EXPECT_GT(shard.restamps_for_testing(), passes) << "pass " << k;
  }
  rearmer.join();
  canceller.join();
  // Then one new task at each deadline: submitted after every re-arm, far later in the sequence.
  constexpr int kSeconds = 17;
  final_second.resize(kTasks + kSeconds);
  final_rank.resize(kTasks + kSeconds);
  for (int k = 0; k < kSeconds; ++k) {
    const int id = kTasks + k;
    final_second[id] = k;
    final_rank[id] = 1'000'000 + k;
    s.schedule_at([&, id] { order.add(id); }, base + std::chrono::seconds(k));
  }
  s.step(2h);
  std::vector<int> ids = order.ids();
  std::vector<int> expected;
  for (int i = 0; i < kTasks; ++i)
    if (!cancelled[i]) expected.push_back(i);
  for (int k = 0; k < kSeconds; ++k) expected.push_back(kTasks + k);
  // Final key: the deadline, then the re-arm order (a task never re-armed keeps its submission
  // stamp, before every re-arm's: rank -1, and submission order among those).
  std::stable_sort(expected.begin(), expected.end(), [&](int a, int b) {
    if (final_second[a] != final_second[b]) return final_second[a] < final_second[b];
    return final_rank[a] < final_rank[b];
  });
  EXPECT_EQ(ids, expected) << kairos_test::where_they_differ(ids, expected);
}

// The sequence itself passes 2^32 (stamps wrap to 0) between equal deadlines.
TEST(Fifo, EqualDeadlinesAcrossTheStampsWrapKeepSubmissionOrder) {
  struct Seed {
    Seed() { kairos::detail::Inbox::g_first_seq_for_testing.store((std::uint64_t{1} << 32) - 100); }
    ~Seed() { kairos::detail::Inbox::g_first_seq_for_testing.store(0); }
  } seed;
  Recorder order;
  Manual s;
  const auto deadline = s.clock.now() + 1ms;
  for (int i = 0; i < 300; ++i) s.schedule_at([&, i] { order.add(i); }, deadline);
  s.step(1ms);
  std::vector<int> ids = order.ids();
  ASSERT_EQ(ids.size(), 300u);
  for (int i = 0; i < 300; ++i) ASSERT_EQ(ids[i], i);
}

TEST(Fifo, EqualDeadlinesStartInSubmissionOrder) {
  constexpr int kTasks = 2000;
  Recorder order;
  Manual s;
  auto deadline = s.clock.now() + 1ms;
  for (int i = 0; i < kTasks; ++i) s.schedule_at([&, i] { order.add(i); }, deadline);
  // A later deadline submitted in between must not break the tie order of the others.
  s.schedule_at([&] { order.add(-1); }, deadline + 1ns);
  s.step(1ms);
  std::vector<int> ids = order.ids();
  ASSERT_EQ(ids.size(), static_cast<std::size_t>(kTasks));
  for (int i = 0; i < kTasks; ++i) ASSERT_EQ(ids[i], i) << "position " << i;
}

// schedule() with equal delays from one thread is a tie too, whatever the heap shape.
TEST(Fifo, MixedDeadlinesKeepTieOrder) {
  constexpr int kTasks = 3000;
  Recorder order;
  Manual s;
  for (int i = 0; i < kTasks; ++i) s.schedule([&, i] { order.add(i); }, std::chrono::microseconds(i % 5));
  s.step(5us);
  std::vector<int> ids = order.ids();
  ASSERT_EQ(ids.size(), static_cast<std::size_t>(kTasks));
  std::vector<int> expected;
  for (int d = 0; d < 5; ++d)
    for (int i = d; i < kTasks; i += 5) expected.push_back(i);
  EXPECT_EQ(ids, expected) << kairos_test::where_they_differ(ids, expected);
}

// Thread A submits task a_i, then publishes i; thread B waits for i, then submits b_i with the
// same deadline. a_i happens-before b_i, so a_i must start first, for every pair, every batch.
// A runs ahead of B, so both threads' submissions sit in the inbox together.
TEST(Fifo, EqualDeadlinesAcrossThreadsKeepHappensBeforeOrder) {
  constexpr int kBatches = 20;
  constexpr int kPairs = 1000;  // per batch: 20,000 pairs in all
  std::vector<int> position(2 * kPairs);
  std::mutex mu;
  int next_position = 0;
  Manual s;

  int inversions = 0;
  for (int batch = 0; batch < kBatches; ++batch) {
    {
      std::lock_guard lock(mu);
      next_position = 0;
    }
    auto record = [&](int id) {
      std::lock_guard lock(mu);
      position[id] = next_position++;
    };
    auto deadline = s.clock.now() + 1ms;
    std::atomic<int> published{-1};
    std::thread a([&] {
      for (int i = 0; i < kPairs; ++i) {
        s.schedule_at([&record, i] { record(2 * i); }, deadline);
        published.store(i, std::memory_order_release);
      }
    });
    std::thread b([&] {
      for (int i = 0; i < kPairs; ++i) {
        while (published.load(std::memory_order_acquire) < i) std::this_thread::yield();
        s.schedule_at([&record, i] { record(2 * i + 1); }, deadline);
      }
    });
    a.join();
    b.join();
    s.step(1ms);
    std::lock_guard lock(mu);
    ASSERT_EQ(next_position, 2 * kPairs) << "batch " << batch;
    for (int i = 0; i < kPairs; ++i) {
      if (position[2 * i] > position[2 * i + 1]) ++inversions;
      if (i > 0) {
        ASSERT_LT(position[2 * (i - 1)], position[2 * i]) << "thread A's own order, batch " << batch;
        ASSERT_LT(position[2 * (i - 1) + 1], position[2 * i + 1]) << "thread B's own order";
      }
    }
  }
  EXPECT_EQ(inversions, 0);
}

// Strict lockstep: B submits right after it sees A's submission return, A waits for B before
// the next pair. Each pair is its own tie, racing the leader's drain of the inbox.
TEST(Fifo, EqualDeadlinesAcrossThreadsInLockstep) {
  constexpr int kPairs = 4000;
  std::vector<int> position(2 * kPairs, -1);
  std::mutex mu;
  int next_position = 0;
  auto record = [&](int id) {
    std::lock_guard lock(mu);
    position[id] = next_position++;
  };
  Manual s;
  auto deadline = s.clock.now() + 1ms;
  std::atomic<int> a_done{-1}, b_done{-1};
  std::thread b([&] {
    for (int i = 0; i < kPairs; ++i) {
      while (a_done.load(std::memory_order_acquire) < i) std::this_thread::yield();
      s.schedule_at([&record, i] { record(2 * i + 1); }, deadline);
      b_done.store(i, std::memory_order_release);
    }
  });
  for (int i = 0; i < kPairs; ++i) {
    s.schedule_at([&record, i] { record(2 * i); }, deadline);
    a_done.store(i, std::memory_order_release);
    while (b_done.load(std::memory_order_acquire) < i) std::this_thread::yield();
  }
  b.join();
  s.step(1ms);
  std::lock_guard lock(mu);
  ASSERT_EQ(next_position, 2 * kPairs);
  int inversions = 0;
  for (int i = 0; i < kPairs; ++i) inversions += position[2 * i] > position[2 * i + 1];
  EXPECT_EQ(inversions, 0);
  // Lockstep makes every submission a total order: the start order is exactly that order.
  for (int id = 0; id < 2 * kPairs; ++id) ASSERT_EQ(position[id], id);
}

// Zero-delay submissions on a clock that never moves all share the deadline "now": a task that
// was submitted first (and whose submission returned before the other began) starts first, even
// while the single thread is draining and running tasks concurrently.
TEST(Fifo, ExecuteAcrossThreadsWhileRunning) {
  constexpr int kPairs = 3000;
  std::vector<int> position(2 * kPairs, -1);
  std::mutex mu;
  int next_position = 0;
  auto record = [&](int id) {
    std::lock_guard lock(mu);
    position[id] = next_position++;
  };
  Manual s;
  std::atomic<int> a_done{-1}, b_done{-1};
  std::thread b([&] {
    for (int i = 0; i < kPairs; ++i) {
      while (a_done.load(std::memory_order_acquire) < i) std::this_thread::yield();
      s.execute([&record, i] { record(2 * i + 1); });
      b_done.store(i, std::memory_order_release);
    }
  });
  for (int i = 0; i < kPairs; ++i) {
    s.execute([&record, i] { record(2 * i); });
    a_done.store(i, std::memory_order_release);
    while (b_done.load(std::memory_order_acquire) < i) std::this_thread::yield();
  }
  b.join();
  ASSERT_TRUE(s.wait_idle(kPatience));
  std::lock_guard lock(mu);
  ASSERT_EQ(next_position, 2 * kPairs);
  int inversions = 0;
  for (int i = 0; i < kPairs; ++i) inversions += position[2 * i] > position[2 * i + 1];
  EXPECT_EQ(inversions, 0);
}

}  // namespace
