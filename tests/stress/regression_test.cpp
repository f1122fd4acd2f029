// regression_test.cpp: one test per defect found by trying kairos as an adversarial user would
// (issue 9). Each names the defect it pins, uses the public API (kairos::detail only where a
// fault has to be injected), and failed on the engine before the defect was fixed:
//   1  Task::run() of a returned task racing cancel(true): the fresh stop source was installed
//      after the task was visible as running (data race / use-after-free; ThreadSanitizer);
//   2  shutdown() racing shutdown_now(): shutdown()'s policy pass cancelled the tasks of shards
//      shutdown_now() had not reached yet, so fewer tasks came back than were pending;
//   3  a captured object's destructor calling the scheduler (stats, wait_idle, shutdown, a
//      submission at capacity under discard_oldest) deadlocked: the scheduler destroyed
//      callables under its shard lock;
//   5  capacity >= 2^63 (SIZE_MAX: "no limit") rejected every submission;
//   6  discard_oldest ignored a due task waiting in a runner's batch and cancelled a later one;
//   6b ... and compared such a task by the key it was filed at, not the one it was re-armed to;
//   7  a constructor that could not start all its threads threw and left the started ones
//      running for ever;
//   8  is_periodic() read the task's flags while a run whose next deadline saturates wrote them
//      (data race; ThreadSanitizer);
//   2b the loss of 2 through a policy setter racing shutdown_now();
//   9  shutdown() took time quadratic in the due tasks it removed (the due FIFO's erase_any).
// (4, task-pool growth with overlapping short-lived submitting threads, has its own churn test.)
// A hang is turned into a failure with a message (watchdogs); no test depends on a sleep.
// Each test failed before the fix of its defect (see the comment above it).
#include <gtest/gtest.h>

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include <kairos/kairos.hpp>

#include "support.hpp"

namespace kairos_test {
namespace {

using namespace std::chrono_literals;


// Spins (yielding) until pred holds or `bound` passes; no synchronisation of its own.
template <class Pred>
bool spin_until(Pred pred, std::chrono::nanoseconds bound = kPatience) {
  auto until = std::chrono::steady_clock::now() + bound;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > until) return pred();
    std::this_thread::yield();
  }
  return true;
}

// ---- 1 ----------------------------------------------------------------------------------------
// A periodic task taking a stop token is returned by shutdown_now(); one thread run()s it while
// another cancel(true)s it as it runs. The two threads share nothing but kairos: the canceller
// learns that the body started through a relaxed flag, so any ordering between run()'s set-up of
// the stop source and the canceller's request_stop() must come from kairos itself. Before the
// fix run_orphan() made the task kRunning and only then replaced its stop source: the canceller
// read (and requested stop on) the stop state the runner was replacing and freeing.
TEST(Regression, RunOfReturnedTaskRacingCancelTrueIsRaceFree) {
  Watchdog dog("Task::run() racing cancel(true)", kHangLimit);
  // Part 1: the cancel lands while the body runs (every round).
  for (int round = 0; round < 20; ++round) {
    kairos::Scheduler s(single_thread());
    std::atomic<int> started{0};
    std::atomic<int> cancel_done{0};
    std::atomic<bool> saw_stop{false};
    auto f = s.schedule_at_fixed_rate(
        [&](std::stop_token st) {
          started.store(1, std::memory_order_relaxed);
          spin_until([&] { return st.stop_requested() || cancel_done.load(std::memory_order_relaxed) != 0; });
          saw_stop.store(st.stop_requested(), std::memory_order_relaxed);
        },
        1h, 1h);
    std::vector<kairos::Task> tasks = s.shutdown_now();
    ASSERT_EQ(tasks.size(), 1u);
    bool won = false;
    std::thread canceller([&] {
      spin_until([&] { return started.load(std::memory_order_relaxed) != 0; });
      won = f.cancel(true);
      cancel_done.store(1, std::memory_order_relaxed);
    });
    tasks[0].run();
    canceller.join();
    EXPECT_TRUE(won) << "round " << round << ": cancel(true) of the running task returned false";
    EXPECT_TRUE(f.is_cancelled());
    EXPECT_TRUE(saw_stop.load()) << "round " << round << ": the running body never saw its stop requested";
  }
  // Part 2: run() and cancel(true) start together, many times (a crash in any build).
  std::uint64_t seed = stress_seed();
  for (int round = 0; round < 5; ++round) {
    kairos::Scheduler s(single_thread());
    constexpr int kTasks = 100;
    std::vector<kairos::ScheduledFuture<void>> futures;
    for (int i = 0; i < kTasks; ++i)
      futures.push_back(s.schedule_at_fixed_rate([](std::stop_token st) { (void)st.stop_requested(); }, 1h, 1h));
    std::vector<kairos::Task> tasks = s.shutdown_now();
    ASSERT_EQ(tasks.size(), static_cast<std::size_t>(kTasks));
    // shutdown_now() returns earliest first; equal deadlines keep submission order.
    std::atomic<int> turn{-1};
    std::atomic<int> arrived{0};
    std::thread canceller([&] {
      std::uint64_t r = seed + static_cast<std::uint64_t>(round);
      for (int i = 0; i < kTasks; ++i) {
        while (turn.load(std::memory_order_acquire) < i) std::this_thread::yield();
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        for (std::uint64_t k = (r >> 33) % 2000; k > 0; --k) std::atomic_signal_fence(std::memory_order_seq_cst);
        futures[static_cast<std::size_t>(i)].cancel(true);
        arrived.fetch_add(1, std::memory_order_acq_rel);
      }
    });
    for (int i = 0; i < kTasks; ++i) {
      turn.store(i, std::memory_order_release);
      tasks[static_cast<std::size_t>(i)].run();
      while (arrived.load(std::memory_order_acquire) <= i) std::this_thread::yield();
    }
    canceller.join();
    for (auto& f : futures) EXPECT_TRUE(f.is_done());
  }
}

// ---- 2 ----------------------------------------------------------------------------------------
// 4 shards full of delayed tasks (default policies: shutdown() keeps them), then shutdown() on
// one thread and shutdown_now() on two others while it runs. Every pending task must come back
// from one of the shutdown_now() calls. Before the fix, once shutdown_now() had set the state to
// "stop", shutdown()'s policy pass cancelled every task on the shards shutdown_now() had not
// reached yet: they were neither run nor returned.
// To make the overlap certain, each shard also holds a periodic task that shutdown() cancels (the
// continue policy is off); the capture of the first one destroyed takes a while: the
// shutdown_now() callers start once it runs, and it returns 20 ms after they did. Wherever
// kairos runs that destructor, shutdown_now() must still return every delayed task.
struct SlowToDestroy {
  struct Shared {
    std::atomic<int> destroyed{0};       // the first destroyed capture waits; the rest do not
    std::atomic<bool> in_destructor{false};
    std::atomic<bool> racer_ready{false};
  };
  Shared* shared;
  bool armed = true;
  explicit SlowToDestroy(Shared* s) : shared(s) {}
  SlowToDestroy(SlowToDestroy&& o) noexcept : shared(o.shared), armed(std::exchange(o.armed, false)) {}
  SlowToDestroy(const SlowToDestroy&) = delete;
  ~SlowToDestroy() {
    if (!armed || shared->destroyed.fetch_add(1) != 0) return;
    shared->in_destructor.store(true);
    spin_until([&] { return shared->racer_ready.load(); });
    std::this_thread::sleep_for(20ms);
  }
};

TEST(Regression, ShutdownRacingShutdownNowLosesNoReturnedTask) {
  Watchdog dog("shutdown() racing shutdown_now()", 240s);
  constexpr unsigned kShards = 4;
  const int per_shard = sanitized_build() ? 5'000 : 25'000;
  const std::size_t total = static_cast<std::size_t>(per_shard) * kShards;
  int bad_rounds = 0;
  std::string report;
  for (int round = 0; round < 4; ++round) {
    kairos::Options o;
    o.shards = kShards;
    o.threads_per_shard = 1;
    o.wait = kairos::WaitPolicy::sleep();
    kairos::Scheduler s(o);
    SlowToDestroy::Shared slow;
    std::atomic<bool> closer_done{false};
    std::vector<kairos::ScheduledFuture<void>> futures(total);
    {
      // Four fresh threads take four consecutive shard slots: one producer per shard.
      std::vector<std::thread> producers;
      for (unsigned p = 0; p < kShards; ++p)
        producers.emplace_back([&, p] {
          (void)s.schedule_at_fixed_rate([c = SlowToDestroy(&slow)] {}, 1h, 1h);
          for (int i = 0; i < per_shard; ++i)
            futures[p * static_cast<std::size_t>(per_shard) + static_cast<std::size_t>(i)] = s.schedule([] {}, 1h);
        });
      for (auto& t : producers) t.join();
    }
    kairos::SchedulerStats st = s.stats();
    for (unsigned i = 0; i < kShards; ++i)
      ASSERT_GT(st.shards[i].pending, 0u) << "set-up: shard " << i << " got no task";
    std::vector<kairos::Task> returned_a, returned_b;
    // The shutdown_now() callers start once shutdown() is under way (inside the slow destructor,
    // wherever kairos runs it, or done).
    auto under_way = [&] { return slow.in_destructor.load() || closer_done.load(); };
    std::thread closer([&] {
      s.shutdown();
      closer_done.store(true);
    });
    std::thread other([&] {
      spin_until(under_way);
      returned_b = s.shutdown_now();
    });
    spin_until(under_way);
    slow.racer_ready.store(true);
    returned_a = s.shutdown_now();
    closer.join();
    other.join();
    std::size_t returned = 0;  // the delayed one-shot tasks (shutdown_now() may return periodic ones too)
    for (auto* v : {&returned_a, &returned_b})
      for (kairos::Task& t : *v) returned += t.is_periodic() ? 0 : 1;
    std::size_t cancelled = 0;
    for (auto& f : futures) cancelled += f.is_cancelled() ? 1 : 0;
    if (returned != total) {
      ++bad_rounds;
      report += "round " + std::to_string(round) + ": shutdown_now() returned " + std::to_string(returned) +
                " of " + std::to_string(total) + " pending delayed tasks; " + std::to_string(cancelled) +
                " completed as cancelled though nobody cancelled them\n";
    }
    returned_a.clear();
    returned_b.clear();
    ASSERT_TRUE(s.await_termination(kPatience));
  }
  EXPECT_EQ(bad_rounds, 0) << report;
}

// 2b: the same loss through a policy setter. After a quiet shutdown() (periodic tasks kept by
// the continue policy), one thread turns that policy off while another calls shutdown_now().
// The setter's pass must cancel only what the policy covers (periodic tasks); before the fix
// it cancelled every delayed one-shot on the shards shutdown_now() had not reached yet.
TEST(Regression, PolicySetterRacingShutdownNowLosesNoReturnedTask) {
  Watchdog dog("a policy setter racing shutdown_now()", 240s);
  constexpr unsigned kShards = 4;
  const int per_shard = sanitized_build() ? 5'000 : 25'000;
  const std::size_t total = static_cast<std::size_t>(per_shard) * kShards;
  int bad_rounds = 0;
  std::string report;
  for (int round = 0; round < 4; ++round) {
    kairos::Options o;
    o.shards = kShards;
    o.threads_per_shard = 1;
    o.wait = kairos::WaitPolicy::sleep();
    o.continue_existing_periodic_tasks_after_shutdown = true;
    kairos::Scheduler s(o);
    SlowToDestroy::Shared slow;
    std::atomic<bool> setter_done{false};
    std::vector<kairos::ScheduledFuture<void>> futures(total);
    {
      std::vector<std::thread> producers;
      for (unsigned p = 0; p < kShards; ++p)
        producers.emplace_back([&, p] {
          (void)s.schedule_at_fixed_rate([c = SlowToDestroy(&slow)] {}, 1h, 1h);
          for (int i = 0; i < per_shard; ++i)
            futures[p * static_cast<std::size_t>(per_shard) + static_cast<std::size_t>(i)] = s.schedule([] {}, 1h);
        });
      for (auto& t : producers) t.join();
    }
    s.shutdown();  // keeps everything: delayed one-shots and (continue policy) periodic tasks
    std::thread setter([&] {
      s.set_continue_existing_periodic_tasks_after_shutdown(false);
      setter_done.store(true);
    });
    spin_until([&] { return slow.in_destructor.load() || setter_done.load(); });
    slow.racer_ready.store(true);
    std::vector<kairos::Task> returned_tasks = s.shutdown_now();
    setter.join();
    std::size_t returned = 0;
    for (kairos::Task& t : returned_tasks) returned += t.is_periodic() ? 0 : 1;
    std::size_t cancelled = 0;
    for (auto& f : futures) cancelled += f.is_cancelled() ? 1 : 0;
    if (returned != total) {
      ++bad_rounds;
      report += "round " + std::to_string(round) + ": shutdown_now() returned " + std::to_string(returned) +
                " of " + std::to_string(total) + " pending delayed one-shot tasks; " + std::to_string(cancelled) +
                " completed as cancelled by a setter of the periodic policy\n";
    }
    returned_tasks.clear();
    ASSERT_TRUE(s.await_termination(kPatience));
  }
  EXPECT_EQ(bad_rounds, 0) << report;
}

// ---- 3 ----------------------------------------------------------------------------------------
// An object captured by a task calls the scheduler from its destructor; the scheduler drops the
// last reference. Before the fix it destroyed the callable with its shard lock held (after a
// run, when dropping a cancelled or policy-cancelled task, when applying a remove request), and
// the destructor's call blocked on that same lock for ever: the shard's thread, shutdown(),
// await_termination() and the scheduler's destructor with it.
struct OnDestroy {
  std::function<void()> fn;
  explicit OnDestroy(std::function<void()> f) : fn(std::move(f)) {}
  OnDestroy(const OnDestroy&) = delete;
  OnDestroy& operator=(const OnDestroy&) = delete;
  ~OnDestroy() {
    if (fn) fn();
  }
};

struct Scenario {
  std::string what;
  std::function<void()> body;
  std::atomic<bool> done{false};
  std::thread thread;
};

TEST(Regression, DestructorOfCaptureMayCallTheScheduler) {
  std::vector<std::unique_ptr<Scenario>> scenarios;
  auto add = [&](std::string what, std::function<void()> body) {
    auto sc = std::make_unique<Scenario>();
    sc->what = std::move(what);
    sc->body = std::move(body);
    scenarios.push_back(std::move(sc));
  };
  // Each scenario waits (bounded) for the destructor to return, then stops its scheduler.
  auto finish = [](auto& s, std::atomic<bool>& dtor_done, const std::string& what) {
    if (!eventually([&] { return dtor_done.load(); }))
      std::fprintf(stderr, "%s: the destructor did not return\n", what.c_str());
    (void)s.shutdown_now();
    EXPECT_TRUE(s.await_termination(kPatience)) << what;
  };

  add("stats() from the destructor of an execute()d task's capture", [&] {
    kairos::Scheduler s(single_thread());
    std::atomic<bool> dtor_done{false};
    s.execute([p = std::make_shared<OnDestroy>([&] {
                 (void)s.stats();
                 dtor_done.store(true);
               })] {});
    finish(s, dtor_done, "stats()");
  });
  add("wait_idle() from the destructor of an execute()d task's capture", [&] {
    kairos::Scheduler s(single_thread());
    std::atomic<bool> dtor_done{false};
    s.execute([p = std::make_shared<OnDestroy>([&] {
                 (void)s.wait_idle(10ms);
                 dtor_done.store(true);
               })] {});
    finish(s, dtor_done, "wait_idle()");
  });
  add("shutdown() from the destructor of an execute()d task's capture", [&] {
    kairos::Scheduler s(single_thread());
    std::atomic<bool> dtor_done{false};
    s.execute([p = std::make_shared<OnDestroy>([&] {
                 s.shutdown();
                 dtor_done.store(true);
               })] {});
    finish(s, dtor_done, "shutdown()");
  });
  add("a submission at capacity under discard_oldest from the destructor of a task's capture", [&] {
    kairos::Options o = single_thread();
    o.capacity = 1;
    o.rejection = kairos::Rejection::discard_oldest;
    kairos::Scheduler s(o);
    std::atomic<bool> dtor_done{false};
    kairos::ScheduledFuture<void> queued, from_dtor;  // written on the scheduler's thread
    s.execute([&, p = std::make_shared<OnDestroy>([&] {
                    from_dtor = s.schedule([] {}, 2h);  // the shard is full: discard_oldest makes room
                    dtor_done.store(true);
                  })] { queued = s.schedule([] {}, 1h); });
    // Checked before finish(): its shutdown_now() returns (and so cancels) the pending task.
    if (eventually([&] { return dtor_done.load(); })) {
      EXPECT_TRUE(queued.is_cancelled()) << "discard_oldest should have cancelled the queued task";
      EXPECT_FALSE(from_dtor.is_cancelled()) << "the submission from the destructor was discarded";
    }
    finish(s, dtor_done, "submission at capacity");
  });
  add("stats() from the destructor of a periodic task's capture, cancelled by shutdown()", [&] {
    kairos::Scheduler s(single_thread());
    std::atomic<bool> dtor_done{false};
    (void)s.schedule_at_fixed_rate([p = std::make_shared<OnDestroy>([&] {
                                      (void)s.stats();
                                      dtor_done.store(true);
                                    })] {},
                                   1h, 1h);
    ASSERT_TRUE(s.wait_idle(kPatience));
    s.shutdown();  // the continue policy is off: shutdown() cancels and drops it
    finish(s, dtor_done, "cancelled by shutdown()");
  });
  add("stats() from the destructor of a cancelled task's capture, removed by the leader", [&] {
    kairos::Options o = single_thread();
    o.remove_on_cancel = true;
    o.wait = kairos::WaitPolicy::sleep();
    kairos::Scheduler s(o);
    constexpr int kTasks = 64;
    std::atomic<int> dtors{0};
    std::vector<kairos::ScheduledFuture<void>> fs;
    for (int i = 0; i < kTasks; ++i)
      fs.push_back(s.schedule([p = std::make_shared<OnDestroy>([&] {
                                (void)s.stats();
                                dtors.fetch_add(1);
                              })] {},
                              1h));
    ASSERT_TRUE(s.wait_idle(kPatience));  // all in the heap; the leader sleeps for an hour
    for (auto& f : fs) f.cancel();
    fs.clear();               // the scheduler holds the last references (heap, remove requests)
    (void)s.submit([] {});    // wakes the leader: it applies the removals
    std::atomic<bool> all{false};
    if (eventually([&] { return dtors.load() == kTasks; })) all.store(true);
    finish(s, all, "removed by the leader");
  });

  std::mutex mu;
  std::condition_variable cv;
  for (auto& sc : scenarios) {
    Scenario* p = sc.get();
    p->thread = std::thread([p, &mu, &cv] {
      p->body();
      {
        std::lock_guard lock(mu);
        p->done.store(true);
      }
      cv.notify_all();
    });
  }
  {
    std::unique_lock lock(mu);
    cv.wait_for(lock, 3 * kPatience, [&] {  // each scenario waits kPatience at most, twice
      for (auto& sc : scenarios)
        if (!sc->done.load()) return false;
      return true;
    });
  }
  std::string hung;
  for (auto& sc : scenarios)
    if (!sc->done.load()) hung += "  " + sc->what + "\n";
  if (!hung.empty()) {
    std::fprintf(stderr,
                 "\nRegression.DestructorOfCaptureMayCallTheScheduler: deadlock; these did not "
                 "finish within %lld s:\n%s",
                 static_cast<long long>((3 * kPatience).count()), hung.c_str());
    std::fflush(stderr);
    std::_Exit(3);  // the hung threads hold the schedulers' locks: nothing can be cleaned up
  }
  for (auto& sc : scenarios) sc->thread.join();
}

// ---- 9 ----------------------------------------------------------------------------------------
// shutdown() must take time linear in what it removes. Due tasks wait in the shard's sorted run
// (then its due FIFO; timer_queue.hpp) when the runner is behind: an overloaded one-thread
// shard, or, as here, discard_oldest draining the inbox while the only thread runs a long task.
// Before the fix
// shutdown()'s policy pass removed each cancelled FIFO task with TimerQueue::erase_any(), which
// copies the whole FIFO: quadratic (40,000 due periodic tasks: ~13 s with the shard lock held,
// against ~10 ms for the same tasks in the heap). The same pass runs for a policy setter after
// shutdown() and for cancelled-but-retained due tasks.
double shutdown_ms_with_backlog(int n, bool due) {
  kairos::Options o = single_thread();
  o.capacity = static_cast<std::size_t>(n) + 1;
  o.rejection = kairos::Rejection::discard_oldest;
  kairos::Scheduler s(o);
  Gate gate;
  std::atomic<bool> started{false};
  auto blocker = s.submit([&] {
    started.store(true);
    gate.wait();
  });
  EXPECT_TRUE(eventually([&] { return started.load(); }));
  // n periodic tasks (the continue policy is off: shutdown() cancels them all), due at once or
  // in an hour; the only thread is busy, so they wait in the inbox.
  for (int i = 0; i < n; ++i) (void)s.schedule_at_fixed_rate([] {}, due ? 0h : 1h, 1h);
  (void)s.schedule([] {}, 1h);  // the shard is full
  (void)s.schedule([] {}, 2h);  // discard_oldest drains the inbox: due tasks into the FIFO
  auto t0 = std::chrono::steady_clock::now();
  s.shutdown();
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  gate.open();
  (void)s.shutdown_now();
  EXPECT_TRUE(s.await_termination(2 * kPatience));
  return ms;
}

TEST(Regression, ShutdownTimeIsLinearInTheDueBacklog) {
  Watchdog dog("shutdown() with a due backlog", 600s);
  const int n = sanitized_build() ? 20'000 : 40'000;
  double heap_ms = shutdown_ms_with_backlog(n, false);
  double fifo_ms = shutdown_ms_with_backlog(n, true);
  EXPECT_LE(fifo_ms, 20 * heap_ms + 250)
      << "shutdown() took " << fifo_ms << " ms to cancel " << n << " due periodic tasks, against " << heap_ms
      << " ms for as many delayed ones: quadratic in the due backlog";
}

// ---- 5 ----------------------------------------------------------------------------------------
// capacity >= 2^63 (SIZE_MAX is a common spelling of "no limit") must accept submissions. Before
// the fix the pending count was compared with static_cast<int64_t>(capacity), which is negative.
TEST(Regression, CapacityAtOrAbove2To63AcceptsSubmissions) {
  Watchdog dog("huge capacities", kHangLimit);
  const std::size_t caps[] = {std::numeric_limits<std::size_t>::max(), std::size_t{1} << 63,
                              (std::size_t{1} << 63) + 1, std::numeric_limits<std::size_t>::max() - 1};
  const kairos::Rejection policies[] = {kairos::Rejection::abort, kairos::Rejection::discard,
                                        kairos::Rejection::discard_oldest, kairos::Rejection::caller_runs};
  const char* names[] = {"abort", "discard", "discard_oldest", "caller_runs"};
  std::string failures;
  for (std::size_t cap : caps) {
    for (int p = 0; p < 4; ++p) {
      kairos::Options o = single_thread();
      o.capacity = cap;
      o.rejection = policies[p];
      kairos::Scheduler s(o);
      const std::thread::id me = std::this_thread::get_id();
      std::string what = "capacity " + std::to_string(cap) + ", " + names[p] + ": ";
      try {
        auto f = s.submit([me] { return std::this_thread::get_id() != me; });
        auto g = s.schedule([] {}, 1h);
        if (g.is_cancelled()) failures += what + "a delayed task was discarded\n";
        if (f.wait_for(kPatience) != std::future_status::ready) failures += what + "a due task never ran\n";
        else if (f.is_cancelled()) failures += what + "the submission was discarded\n";
        else if (!f.get()) failures += what + "the task ran in the caller (rejected as over capacity)\n";
        else if (s.queue_size() != 1u) failures += what + "queue_size() " + std::to_string(s.queue_size()) + ", not 1\n";
      } catch (const kairos::RejectedExecution& e) {
        failures += what + "RejectedExecution: " + e.what() + "\n";
      }
      (void)s.shutdown_now();
    }
  }
  EXPECT_TRUE(failures.empty()) << failures;
}

// ---- 6 ----------------------------------------------------------------------------------------
// A one-thread shard at capacity 2 under discard_oldest, on a ManualClock: A (due at +10 ms) and
// D (+20 ms) fall due together, so the runner takes them in one batch and starts A, which blocks
// on `gate`; D waits in the batch behind it (pending, cancellable, counted by queue_size()).
struct RunnerBlockedWithABatchedTask {
  kairos::ManualClock clock;
  kairos::BasicScheduler<kairos::ManualClock> s;
  Gate gate;
  std::atomic<bool> a_started{false};
  kairos::ScheduledFuture<void> a, d;
  bool ready = false;  // the set-up held

  explicit RunnerBlockedWithABatchedTask(bool d_rearmable) : s(options(), clock) {
    a = s.schedule(
        [this] {
          a_started.store(true);
          gate.wait();
        },
        10ms);
    d = d_rearmable ? s.schedule_rearmable([] {}, 20ms) : s.schedule([] {}, 20ms);
    if (!s.wait_idle(kPatience)) return;  // both queued, neither due
    clock.advance(30ms);            // both due: the runner takes them together and starts A
    ready = eventually([&] { return a_started.load(); });
  }
  ~RunnerBlockedWithABatchedTask() {
    gate.open();
    EXPECT_EQ(a.wait_for(kPatience), std::future_status::ready);
    (void)s.shutdown_now();
    EXPECT_TRUE(s.await_termination(kPatience));
  }
  static kairos::Options options() {
    kairos::Options o = single_thread();
    o.capacity = 2;
    o.rejection = kairos::Rejection::discard_oldest;
    return o;
  }
};

// discard_oldest must cancel the pending task with the earliest deadline, also when that task is
// the batched D. Before the fix only the heap was searched, and a later task was cancelled.
TEST(Regression, DiscardOldestCancelsTheEarliestIncludingABatchedDueTask) {
  Watchdog dog("discard_oldest with a batched due task", kHangLimit);
  RunnerBlockedWithABatchedTask f(false);
  ASSERT_TRUE(f.ready);
  EXPECT_EQ(f.s.queue_size(), 1u) << "set-up: D should be pending behind the running A";
  auto later = f.s.schedule([] {}, 1h);
  EXPECT_EQ(f.s.queue_size(), 2u) << "set-up: the shard should be at capacity";
  auto newest = f.s.schedule([] {}, 2h);  // at capacity: discard_oldest makes room
  EXPECT_TRUE(f.d.is_cancelled()) << "discard_oldest did not cancel the earliest-deadline pending task (due at "
                                     "+20 ms, waiting behind a running task)";
  EXPECT_FALSE(later.is_cancelled()) << "discard_oldest cancelled a task due in 1 h instead of the one due at +20 ms";
  EXPECT_FALSE(newest.is_cancelled());
}

// 6b: the same with D re-armed to +3 h while it waits: its runner re-files it at that deadline, so
// the earliest pending task is the one due in 1 h. Before the fix discard_oldest compared D by
// the key it was filed at (+20 ms) and cancelled it.
TEST(Regression, DiscardOldestComparesABatchedTaskByItsNewestDeadline) {
  Watchdog dog("discard_oldest with a re-armed batched task", kHangLimit);
  RunnerBlockedWithABatchedTask f(true);
  ASSERT_TRUE(f.ready);
  ASSERT_TRUE(f.d.rearm(3h)) << "set-up: D should still be pending behind the running A";
  auto later = f.s.schedule([] {}, 1h);
  EXPECT_EQ(f.s.queue_size(), 2u) << "set-up: the shard should be at capacity";
  auto newest = f.s.schedule([] {}, 2h);  // at capacity: discard_oldest makes room
  EXPECT_TRUE(later.is_cancelled()) << "discard_oldest did not cancel the task due in 1 h";
  EXPECT_FALSE(f.d.is_cancelled()) << "discard_oldest cancelled a task re-armed to +3 h by the key it was filed at";
  EXPECT_FALSE(newest.is_cancelled());
  f.gate.open();
  EXPECT_EQ(f.a.wait_for(kPatience), std::future_status::ready);
  ASSERT_TRUE(f.s.wait_idle(kPatience));
  EXPECT_FALSE(f.d.is_done()) << "D ran for the deadline it was re-armed away from";
}

// ---- 7 ----------------------------------------------------------------------------------------
// The OS refuses a thread part-way through the constructor: it must throw and leave no thread
// behind. Before the fix the started threads kept running for ever (nothing could stop them).
// Runs in a forked child, as an unprivileged user with RLIMIT_NPROC just above its thread
// count, so the limit leaks into nothing else.
std::size_t count_threads() {
  std::size_t n = 0;
  if (DIR* d = opendir("/proc/self/task")) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') ++n;
    closedir(d);
  }
  return n;
}

std::string thread_names() {
  std::string out;
  if (DIR* d = opendir("/proc/self/task")) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] == '.') continue;
      std::ifstream f(std::string("/proc/self/task/") + e->d_name + "/comm");
      std::string name;
      std::getline(f, name);
      out += name + " ";
    }
    closedir(d);
  }
  return out;
}

// Threads (kernel tasks) of every process whose real uid is `uid`: what RLIMIT_NPROC counts.
long tasks_of_uid(uid_t uid) {
  long total = 0;
  DIR* d = opendir("/proc");
  if (!d) return -1;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    std::ifstream f(std::string("/proc/") + e->d_name + "/status");
    std::string line;
    long threads = 0;
    bool mine = false;
    while (std::getline(f, line)) {
      if (line.rfind("Uid:", 0) == 0) mine = std::strtol(line.c_str() + 4, nullptr, 10) == static_cast<long>(uid);
      if (line.rfind("Threads:", 0) == 0) threads = std::strtol(line.c_str() + 8, nullptr, 10);
    }
    if (mine) total += threads;
  }
  closedir(d);
  return total;
}

// The child: 0 no thread leaked; 1 threads leaked; 2 the environment could not refuse threads.
[[noreturn]] void constructor_leak_child(int out_fd) {
  auto say = [out_fd](const std::string& s) { (void)!write(out_fd, s.data(), s.size()); };
  constexpr long kStartable = 9;  // the OS lets this many more threads start, then refuses
  if (geteuid() == 0) {
    // RLIMIT_NPROC does not bind root: become nobody (the limit must be set first).
    const uid_t nobody = 65534;
    long others = tasks_of_uid(nobody);
    rlimit lim{static_cast<rlim_t>(others + 1 + kStartable), static_cast<rlim_t>(others + 1 + kStartable)};
    if (others < 0 || setrlimit(RLIMIT_NPROC, &lim) != 0 || setgid(65534) != 0 || setuid(nobody) != 0) {
      say("cannot drop to an unprivileged user: " + std::string(std::strerror(errno)));
      _exit(2);
    }
    prctl(PR_SET_DUMPABLE, 1);  // keep /proc/self readable
  } else {
    long mine = tasks_of_uid(getuid());
    rlimit lim{static_cast<rlim_t>(mine + kStartable), static_cast<rlim_t>(mine + kStartable)};
    if (mine < 0 || setrlimit(RLIMIT_NPROC, &lim) != 0) {
      say("cannot lower RLIMIT_NPROC: " + std::string(std::strerror(errno)));
      _exit(2);
    }
  }
  // A first thread (ThreadSanitizer starts a helper thread of its own along with it), so that
  // the count below is the settled baseline.
  std::thread([] {}).join();
  const std::size_t before = count_threads();
  kairos::Options o;
  o.shards = 2;
  o.threads_per_shard = 32;  // 64 threads: far more than the limit lets start
  o.name = "leaky";
  bool threw = false;
  std::string error;
  try {
    kairos::Scheduler s(o);
  } catch (const std::exception& e) {
    threw = true;
    error = e.what();
  }
  if (!threw) {
    say("the constructor started 64 threads: the OS did not refuse any (limit not effective)");
    _exit(2);
  }
  // A constructor that cleans up joins what it started before it throws; allow a generous
  // bound for threads that are still on their way out.
  bool clean = eventually([&] { return count_threads() <= before; }, 5s);
  std::size_t after = count_threads();
  say("constructor threw (" + error + "); threads before " + std::to_string(before) + ", after " +
      std::to_string(after) + " [" + thread_names() + "]");
  _exit(clean ? 0 : 1);
}

TEST(Regression, ConstructorThatCannotStartAllThreadsLeaksNone) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  pid_t pid = fork();
  ASSERT_GE(pid, 0) << std::strerror(errno);
  if (pid == 0) {
    close(fds[0]);
    constructor_leak_child(fds[1]);
  }
  close(fds[1]);
  int status = 0;
  bool exited = eventually([&] { return waitpid(pid, &status, WNOHANG) == pid; }, 2 * kPatience);
  if (!exited) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
  }
  std::string msg;
  char buf[512];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) msg.append(buf, static_cast<std::size_t>(n));
  close(fds[0]);
  ASSERT_TRUE(exited) << "the child hung: " << msg;
  ASSERT_TRUE(WIFEXITED(status)) << "the child died (status " << status << "): " << msg;
  int code = WEXITSTATUS(status);
  ASSERT_NE(code, 2) << "set-up failed, the test proves nothing: " << msg;
  EXPECT_EQ(code, 0) << "threads leaked: " << msg;
}

// ---- 8 ----------------------------------------------------------------------------------------
// is_periodic() on one thread while the task's first run ends on another and its next deadline
// saturates (period Duration::max()). The reader and the task share nothing but kairos (relaxed
// flags only), so ThreadSanitizer sees any unsynchronised access. Before the fix the runner set
// kNever in the task's flags (a plain write) while is_periodic() read them.
TEST(Regression, IsPeriodicDoesNotRaceASaturatingRun) {
  Watchdog dog("is_periodic() racing a saturating run", kHangLimit);
  for (int round = 0; round < 5; ++round) {
    kairos::Scheduler s(single_thread());
    std::atomic<long> reads{0};
    std::atomic<bool> stop{false};
    auto f = s.schedule_at_fixed_rate(
        [&] { spin_until([&] { return reads.load(std::memory_order_relaxed) > 0; }); }, 0ms,
        kairos::Duration::max());
    long periodic = 0;
    std::thread reader([&, g = f] {
      while (!stop.load(std::memory_order_relaxed)) {
        periodic += g.is_periodic() ? 1 : 0;
        reads.fetch_add(1, std::memory_order_relaxed);
      }
    });
    // The run ends and the task is re-queued, due never; let the reader go on a little after.
    ASSERT_TRUE(eventually([&] { return s.stats().total().ran >= 1; }));
    long seen = reads.load(std::memory_order_relaxed);
    spin_until([&] { return reads.load(std::memory_order_relaxed) > seen + 1000; }, 5s);
    stop.store(true, std::memory_order_relaxed);
    reader.join();
    EXPECT_EQ(periodic, reads.load());
    EXPECT_TRUE(f.is_periodic());
    EXPECT_TRUE(f.cancel());
  }
}

}  // namespace
}  // namespace kairos_test
