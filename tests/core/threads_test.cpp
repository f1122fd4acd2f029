// threads_test.cpp: the threads of a kairos scheduler: their names (<name>-<shard>-<n>, cut to
// the 15 characters Linux keeps) and schedulers with several shards and threads per shard.
#include <gtest/gtest.h>

#include <pthread.h>

#include <atomic>
#include <cstdint>
#include <chrono>
#include <mutex>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <kairos/kairos.hpp>

#include "support.hpp"

namespace {

using namespace std::chrono_literals;
using kairos_test::kPatience;
using kairos_test::Manual;
using kairos_test::Recorder;

std::string current_thread_name() {
  char buf[64] = {};
  if (pthread_getname_np(pthread_self(), buf, sizeof buf) != 0) return "<error>";
  return buf;
}

TEST(ThreadNames, SingleThreadIsNameDashShardDashIndex) {
  SKIP_IN_POLL_MODE("no scheduler thread to name");
  kairos::Options o = kairos_test::single_thread();
  o.name = "sched";
  kairos_test::Scheduler s(o);
  EXPECT_EQ(s.submit([] { return current_thread_name(); }).get(), "sched-0-0");
}

TEST(ThreadNames, EveryThreadOfEveryShardIsNamed) {
  SKIP_IN_POLL_MODE("no scheduler thread to name");
  kairos::Options o = kairos_test::threads(2, 2);
  o.name = "kt";
  std::set<std::string> names;
  std::mutex mu;
  kairos_test::Scheduler s(o);
  // Several submitting threads (a thread's tasks go to one shard), tasks long enough that
  // the other threads of a shard take some.
  std::vector<std::thread> producers;
  std::vector<kairos::ScheduledFuture<void>> fs;
  for (int p = 0; p < 8; ++p)
    producers.emplace_back([&] {
      for (int i = 0; i < 4; ++i) {
        auto f = s.submit([&] {
          std::this_thread::sleep_for(200us);
          std::lock_guard lock(mu);
          names.insert(current_thread_name());
        });
        std::lock_guard lock(mu);
        fs.push_back(f);
      }
    });
  for (auto& t : producers) t.join();
  for (auto& f : fs) ASSERT_EQ(f.wait_for(kPatience), std::future_status::ready);
  std::lock_guard lock(mu);
  std::regex pattern("kt-([0-9]+)-([0-9]+)");
  ASSERT_GE(names.size(), 1u);
  EXPECT_LE(names.size(), 4u);
  for (const auto& n : names) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(n, m, pattern)) << n;
    EXPECT_LT(std::stoi(m[1]), 2) << n;
    EXPECT_LT(std::stoi(m[2]), 2) << n;
  }
}

TEST(ThreadNames, LongNamesAreCutTo15Characters) {
  SKIP_IN_POLL_MODE("no scheduler thread to name");
  kairos::Options o = kairos_test::single_thread();
  o.name = "averyveryverylongschedulername";
  kairos_test::Scheduler s(o);
  std::string n = s.submit([] { return current_thread_name(); }).get();
  EXPECT_EQ(n.size(), 15u);
  EXPECT_EQ(n, std::string("averyveryverylongschedulername-0-0").substr(0, 15));
}

// ---- several shards --------------------------------------------------------------------------

// Tasks from many submitting threads spread over the shards; every one runs exactly once at or
// after its deadline, and wait_idle/queue_size cover all shards.
TEST(MultiShard, EveryTaskRunsOnceAndNeverEarly) {
  constexpr int kProducers = 4;
  constexpr int kPerProducer = 250;
  std::vector<std::atomic<int>> runs(kProducers * kPerProducer);
  std::vector<std::atomic<std::int64_t>> started(kProducers * kPerProducer);
  Manual s(kairos_test::threads(2, 2));
  std::vector<std::thread> producers;
  for (int p = 0; p < kProducers; ++p)
    producers.emplace_back([&, p] {
      for (int i = 0; i < kPerProducer; ++i) {
        int id = p * kPerProducer + i;
        s.schedule([&, id] {
          started[id] = kairos_test::ns(s.clock.now());
          ++runs[id];
        }, std::chrono::microseconds(id % 100));
      }
    });
  for (auto& t : producers) t.join();
  ASSERT_TRUE(s.wait_idle(kPatience));
  // Only the tasks with delay 0 (one in a hundred) have run.
  EXPECT_EQ(s.queue_size(), static_cast<std::size_t>(kProducers * kPerProducer * 99 / 100));
  for (int step = 0; step < 100; ++step) {
    s.step(1us);
    std::int64_t now = kairos_test::ns(s.clock.now());
    for (int id = 0; id < kProducers * kPerProducer; ++id) {
      std::int64_t deadline = (id % 100) * 1000;
      if (deadline <= now) {
        ASSERT_EQ(runs[id], 1) << id;
        ASSERT_GE(started[id], deadline) << id;
      } else {
        ASSERT_EQ(runs[id], 0) << id << " ran early";
      }
    }
  }
  EXPECT_EQ(s.queue_size(), 0u);
}

TEST(MultiShard, PeriodicAndShutdownAcrossShards) {
  std::vector<std::atomic<int>> runs(8);
  std::vector<kairos::ScheduledFuture<void>> fs;
  std::mutex fs_mu;
  kairos::Options o = kairos_test::threads(2, 2);
  o.continue_existing_periodic_tasks_after_shutdown = true;
  Manual s(o);
  std::vector<std::thread> producers;
  for (int p = 0; p < 8; ++p)
    producers.emplace_back([&, p] {
      auto f = s.schedule_at_fixed_rate([&, p] { ++runs[p]; }, 1ms, 1ms);
      std::lock_guard lock(fs_mu);
      fs.push_back(f);
    });
  for (auto& t : producers) t.join();
  s.step(10ms);
  for (int p = 0; p < 8; ++p) EXPECT_EQ(runs[p], 10) << p;
  s.shutdown();
  s.step(5ms);
  for (int p = 0; p < 8; ++p) EXPECT_EQ(runs[p], 15) << p;
  EXPECT_FALSE(s.is_terminated());
  s.set_continue_existing_periodic_tasks_after_shutdown(false);
  ASSERT_TRUE(s.await_termination(kPatience));
  for (auto& f : fs) EXPECT_TRUE(f.is_cancelled());
}

TEST(MultiShard, ShutdownNowCollectsEveryShardInDeadlineOrder) {
  Manual s(kairos_test::threads(2, 2));
  Recorder order;
  std::vector<std::thread> producers;
  for (int p = 0; p < 4; ++p)
    producers.emplace_back([&, p] {
      for (int i = 0; i < 25; ++i) {
        int id = i * 4 + p;  // deadlines interleave across producers (and shards)
        s.schedule([&, id] { order.add(id); }, std::chrono::milliseconds(1 + id));
      }
    });
  for (auto& t : producers) t.join();
  auto tasks = s.shutdown_now();
  ASSERT_EQ(tasks.size(), 100u);
  for (auto& t : tasks) t.run();
  std::vector<int> expected(100);
  for (int i = 0; i < 100; ++i) expected[i] = i;
  EXPECT_EQ(order.ids(), expected);
}

TEST(MultiShard, RealClockWorkAcrossShards) {
  kairos_test::Scheduler s(kairos_test::threads(2, 2));
  std::vector<kairos::ScheduledFuture<int>> fs;
  std::mutex mu;
  std::vector<std::thread> producers;
  for (int p = 0; p < 4; ++p)
    producers.emplace_back([&, p] {
      for (int i = 0; i < 50; ++i) {
        auto f = s.schedule([p, i] { return p * 1000 + i; }, std::chrono::microseconds(i * 20));
        std::lock_guard lock(mu);
        fs.push_back(f);
      }
    });
  for (auto& t : producers) t.join();
  long sum = 0;
  for (auto& f : fs) sum += f.get();
  long expected = 0;
  for (int p = 0; p < 4; ++p)
    for (int i = 0; i < 50; ++i) expected += p * 1000 + i;
  EXPECT_EQ(sum, expected);
  s.shutdown();
  ASSERT_TRUE(s.await_termination(kPatience));
}

}  // namespace
