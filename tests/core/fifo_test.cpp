// fifo_test.cpp: kairos starts tasks with equal deadlines in submission order within a shard,
// also when the submissions come from different threads ordered by happens-before.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include <kairos/kairos.hpp>

#include "support.hpp"

namespace {

using namespace std::chrono_literals;
using kairos_test::kPatience;
using kairos_test::Manual;
using kairos_test::Recorder;
using kairos_test::single_thread;

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
  EXPECT_EQ(ids, expected);
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
