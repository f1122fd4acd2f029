// storm_test.cpp: shapes the other stress tests never tried, each checked by the ledger.
//   - 16..64 producers on whatever cores there are (CI: 2), against 1..4 shards, with capacity
//     at its extremes (1, 2, INT64_MAX) under every rejection policy, ending in overlapping
//     lifecycle calls: shutdown() || shutdown(), shutdown_now() || shutdown_now(), shutdown() ||
//     the policy setters; then the tasks shutdown_now() returned are run or dropped on one
//     thread while others use their futures;
//   - Task::run() of returned tasks racing every future operation: cancel(), cancel(true), get(),
//     wait_for(), is_done(), is_periodic(), delay(), copies made and destroyed;
//   - on_uncaught re-entering the scheduler (stats(), queue_size(), submissions);
//   - the task memory pool refusing to grow part of the time, during a storm.
// Every accepted task ran exactly once (one-shot), was cancelled, or was returned by
// shutdown_now(); every rejected one never ran; every future completed (ledger.hpp).
// Budget per test: KAIROS_STRESS_SECONDS (default 1.5 s); KAIROS_STRESS_SEED replays the random
// decisions of one run (the interleaving is the machine's).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <memory>
#include <mutex>
#include <new>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include <kairos/detail/task_pool.hpp>
#include <kairos/kairos.hpp>

#include "ledger.hpp"
#include "page_array.hpp"
#include "support.hpp"
#include "task_pool_testing.hpp"

namespace kairos_test {
namespace {

using namespace std::chrono_literals;

struct Rng {
  std::uint64_t s;
  explicit Rng(std::uint64_t seed) : s(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  std::uint64_t below(std::uint64_t n) { return n ? next() % n : 0; }
  bool chance(unsigned percent) { return below(100) < percent; }
};

// Figures summed over every storm of a test (printed at the end).
struct Totals {
  std::size_t storms = 0, producers = 0, submitted = 0, accepted = 0, rejected = 0, failed = 0;
  std::size_t one_shot_ran = 0, cancelled = 0, periodic_runs = 0, returned = 0, orphan_runs = 0;
  std::size_t future_ops = 0;
  void add(const Summary& s) {
    submitted += s.submitted;
    accepted += s.accepted;
    rejected += s.rejected + s.discarded;
    failed += s.failed;
    one_shot_ran += s.one_shot_ran;
    cancelled += s.cancelled;
    periodic_runs += s.periodic_runs;
    orphan_runs += s.orphan_runs;
  }
  std::string str() const {
    return std::to_string(storms) + " storms, " + std::to_string(producers) + " producers, " +
           std::to_string(submitted) + " submissions (" + std::to_string(accepted) + " accepted, " +
           std::to_string(rejected) + " rejected/discarded, " + std::to_string(failed) + " bad_alloc), " +
           std::to_string(one_shot_ran) + " one-shot runs, " + std::to_string(periodic_runs) + " periodic runs, " +
           std::to_string(cancelled) + " cancelled, " + std::to_string(returned) + " returned by shutdown_now (" +
           std::to_string(orphan_runs) + " run), " + std::to_string(future_ops) + " racing future operations";
  }
};

// ---- the task memory pool refusing to grow ------------------------------------------------------
std::atomic<bool> g_refuse_slabs{false};
std::atomic<std::uint64_t> g_slab_calls{0};
void* sometimes_refuse_slab(std::size_t bytes) {
  // Refuses every other growth while the storm asks for refusals.
  if (g_refuse_slabs.load() && (g_slab_calls.fetch_add(1) & 1) == 0) return nullptr;
  return ::operator new(bytes, std::nothrow);
}
struct PoolRestorer {
  ~PoolRestorer() {
    g_refuse_slabs.store(false);
    kairos::detail::set_slab_allocator_for_testing(nullptr);
  }
};

enum class Lifecycle { shutdown_twice, shutdown_now_twice, shutdown_and_setters, shutdown_then_now };
const char* lifecycle_name(Lifecycle l) {
  switch (l) {
    case Lifecycle::shutdown_twice: return "shutdown||shutdown";
    case Lifecycle::shutdown_now_twice: return "shutdown_now||shutdown_now";
    case Lifecycle::shutdown_and_setters: return "shutdown||setters";
    case Lifecycle::shutdown_then_now: return "shutdown;shutdown_now";
  }
  return "?";
}

struct StormOptions {
  unsigned producers = 16;
  bool refuse_slabs = false;   // the task pool refuses half its growths during the storm
  bool refuse_queue_growth = false;  // the timer queue's arrays refuse to grow every other ms
  bool reenter_from_on_uncaught = false;
};

// One storm: producers submit and cancel until `length` ends or the ledger is full, while a
// lifecycle ending overlaps them; then the returned tasks are run or dropped while other threads
// use the futures; then the ledger is checked. Returns the problems found.
std::vector<std::string> run_storm(std::uint64_t seed, std::chrono::nanoseconds length, const StormOptions& so,
                                   Totals& totals, std::string& config) {
  Rng r(seed);
  kairos::Options o;
  o.shards = 1 + static_cast<unsigned>(r.below(4));
  o.threads_per_shard = 1 + static_cast<unsigned>(r.below(2));
  o.wait = r.chance(50) ? kairos::WaitPolicy::sleep() : kairos::WaitPolicy::hybrid(std::chrono::microseconds(r.below(30)));
  static const std::size_t caps[] = {0, 0, 1, 2, 64, static_cast<std::size_t>(std::numeric_limits<std::int64_t>::max())};
  o.capacity = caps[r.below(6)];
  o.rejection = static_cast<kairos::Rejection>(r.below(4));
  o.remove_on_cancel = r.chance(50);
  o.continue_existing_periodic_tasks_after_shutdown = r.chance(30);
  Lifecycle ending = static_cast<Lifecycle>(r.below(4));
  static const char* rej[] = {"abort", "caller_runs", "discard", "discard_oldest"};
  config = std::to_string(so.producers) + " producers, " + std::to_string(o.shards) + "x" +
           std::to_string(o.threads_per_shard) + ", capacity " + std::to_string(o.capacity) + ", " +
           rej[static_cast<int>(o.rejection)] + ", remove_on_cancel " + std::to_string(o.remove_on_cancel) +
           ", continue_periodic " + std::to_string(o.continue_existing_periodic_tasks_after_shutdown) + ", " +
           lifecycle_name(ending) + (so.refuse_slabs ? ", pool refusing" : "") +
           (so.refuse_queue_growth ? ", queue refusing to grow" : "") +
           (so.reenter_from_on_uncaught ? ", on_uncaught re-enters" : "");

  const std::size_t kEntries = 6000 + 250 * so.producers;
  Ledger ledger(kEntries);
  std::atomic<std::int64_t> uncaught{0};
  std::atomic<kairos::Scheduler*> self_ptr{nullptr};  // for on_uncaught's re-entry
  o.on_uncaught = [&](std::exception_ptr) {
    uncaught.fetch_add(1);
    if (!so.reenter_from_on_uncaught) return;
    if (kairos::Scheduler* s = self_ptr.load()) {
      (void)s->stats();
      (void)s->queue_size();
      (void)s->is_shutdown();
      try {
        (void)s->schedule([] {}, 10us);  // not in the ledger: no entry, nothing to check but a hang
      } catch (const std::exception&) {
      }
    }
  };
  bool delayed_policy_off = false;
  std::size_t dropped = 0;
  auto noop = [](Entry&, int, const std::stop_token*) {};
  {
    PoolRestorer restore;
    kairos::Scheduler s(o);
    self_ptr.store(&s);
    if (so.refuse_slabs) {
      kairos::detail::set_slab_allocator_for_testing(&sometimes_refuse_slab);
      g_refuse_slabs.store(true);
    }
    std::atomic<bool> stop{false};
    std::thread toggler;  // memory short for the timer queue one millisecond in two
    if (so.refuse_queue_growth)
      toggler = std::thread([&] {
        for (bool on = true; !stop.load(); on = !on) {
          kairos::detail::g_refuse_growth_for_testing.store(on);
          std::this_thread::sleep_for(1ms);
        }
        kairos::detail::g_refuse_growth_for_testing.store(false);
      });
    auto producer = [&](unsigned index) {
      OutsideScheduler outside;
      Rng pr(seed ^ (0x1000 + index) * 0x9E3779B97F4A7C15ull);
      if (so.refuse_slabs && pr.chance(30)) kairos::detail::release_thread_cache_for_testing();
      while (!stop.load(std::memory_order_relaxed)) {
        unsigned op = static_cast<unsigned>(pr.below(20));
        if (op >= 17) {  // cancel a random published entry
          if (Entry* e = ledger.pick(pr.next())) ledger.cancel(*e, pr.chance(50));
          continue;
        }
        std::int64_t delay = op == 16 || op == 10 || op == 11 ? 0 : static_cast<std::int64_t>(pr.below(2'000'000));
        Kind kind = op < 10 ? Kind::one_shot : op < 12 ? Kind::execute : op < 14 ? Kind::fixed_rate
                  : op < 16 ? Kind::fixed_delay : Kind::one_shot;
        std::int64_t period = 100'000 + static_cast<std::int64_t>(pr.below(900'000));
        int throw_on = pr.chance(3) ? static_cast<int>(pr.below(3)) : -1;
        if (kind == Kind::one_shot || kind == Kind::execute) throw_on = throw_on >= 0 ? 0 : -1;
        Entry* e = ledger.add(kind, ledger.now() + delay, period, throw_on);
        if (!e) break;  // ledger full
        try {
          switch (kind) {
            case Kind::one_shot:
              if (op == 16) ledger.publish(*e, s.submit(ledger.body(*e, noop)));
              else ledger.publish(*e, s.schedule(ledger.body(*e, noop), std::chrono::nanoseconds(delay)));
              break;
            case Kind::execute:
              s.execute(ledger.body(*e, noop));
              // Under abort a refusal throws; otherwise execute() may drop it silently.
              if (o.rejection == kairos::Rejection::abort) ledger.accepted_without_future(*e);
              else ledger.maybe_dropped(*e);
              break;
            case Kind::fixed_rate:
              ledger.publish(*e, s.schedule_at_fixed_rate(ledger.body(*e, noop), std::chrono::nanoseconds(delay),
                                                          std::chrono::nanoseconds(period)));
              break;
            case Kind::fixed_delay:
              ledger.publish(*e, s.schedule_with_fixed_delay(ledger.body(*e, noop), std::chrono::nanoseconds(delay),
                                                             std::chrono::nanoseconds(period)));
              break;
          }
        } catch (const kairos::RejectedExecution&) {
          ledger.rejected(*e);
        } catch (const std::bad_alloc&) {
          ledger.failed(*e);
        }
      }
    };
    std::vector<std::thread> threads;
    for (unsigned p = 0; p < so.producers; ++p) threads.emplace_back(producer, p);
    // The lifecycle ending overlaps the producers' second half.
    std::this_thread::sleep_for(length / 2);
    std::vector<kairos::Task> returned_a, returned_b;
    {
      std::atomic<int> ready{0};
      auto together = [&] {  // the two lifecycle threads start at once
        ready.fetch_add(1);
        while (ready.load() < 2) std::this_thread::yield();
      };
      std::thread x, y;
      switch (ending) {
        case Lifecycle::shutdown_twice:
          x = std::thread([&] { together(); s.shutdown(); });
          y = std::thread([&] { together(); s.shutdown(); });
          break;
        case Lifecycle::shutdown_now_twice:
          x = std::thread([&] { together(); returned_a = s.shutdown_now(); });
          y = std::thread([&] { together(); returned_b = s.shutdown_now(); });
          break;
        case Lifecycle::shutdown_and_setters:
          delayed_policy_off = true;
          x = std::thread([&] { together(); s.shutdown(); });
          y = std::thread([&] {
            together();
            for (int i = 0; i < 50; ++i) {
              s.set_remove_on_cancel(i & 1);
              s.set_continue_existing_periodic_tasks_after_shutdown(i % 3 == 0);
              s.set_execute_existing_delayed_tasks_after_shutdown(i % 5 != 4);
            }
          });
          break;
        case Lifecycle::shutdown_then_now:
          x = std::thread([&] { together(); s.shutdown(); });
          y = std::thread([&] { together(); });
          break;
      }
      x.join();
      y.join();
      if (ending == Lifecycle::shutdown_now_twice) ledger.stop_all();
      else if (!o.continue_existing_periodic_tasks_after_shutdown || ending == Lifecycle::shutdown_and_setters)
        ledger.stop_periodic();
    }
    std::this_thread::sleep_for(length / 4);  // producers go on, now rejected
    stop.store(true);
    for (auto& t : threads) t.join();
    if (toggler.joinable()) toggler.join();
    g_refuse_slabs.store(false);
    // Whatever is still pending comes back now (periodic tasks under the continue policy too).
    std::vector<kairos::Task> rest = s.shutdown_now();
    ledger.stop_all();
    for (auto& t : rest) returned_b.push_back(std::move(t));
    std::vector<kairos::Task> all = std::move(returned_a);
    for (auto& t : returned_b) all.push_back(std::move(t));
    totals.returned += all.size();
    // The returned tasks are run or dropped on one thread while two others use the futures.
    std::atomic<bool> orphans_done{false};
    std::atomic<std::size_t> ops{0};
    auto future_user = [&](std::uint64_t useed) {
      Rng ur(useed);
      // Until the returned tasks are all run or dropped, and at least 500 operations each.
      for (int n = 0; n < 500 || !orphans_done.load(std::memory_order_relaxed); ++n) {
        Entry* e = ledger.pick(ur.next());
        if (!e) continue;
        ops.fetch_add(1, std::memory_order_relaxed);
        switch (ur.below(8)) {
          case 0: ledger.cancel(*e, false); break;
          case 1: ledger.cancel(*e, true); break;  // the bodies take no stop token
          case 2: (void)e->future.wait_for(std::chrono::microseconds(ur.below(50))); break;
          case 3: (void)e->future.is_done(); (void)e->future.is_cancelled(); break;
          case 4: (void)e->future.is_periodic(); break;
          case 5: (void)e->future.delay(); break;
          case 6: {
            kairos::ScheduledFuture<void> copy = e->future;
            kairos::ScheduledFuture<void> moved = std::move(copy);
            (void)moved.valid();
            break;
          }
          case 7:
            if (e->future.is_done() && !e->periodic()) {
              try {
                e->future.get();
              } catch (...) {
              }
            }
            break;
        }
      }
    };
    std::thread u1(future_user, seed ^ 0xA11CE), u2(future_user, seed ^ 0xB0B);
    {
      for (int i = 0; i < 100000 && ops.load(std::memory_order_relaxed) == 0; ++i) std::this_thread::yield();
      t_running_orphans = true;
      OutsideScheduler outside;
      Rng rr(seed ^ 0x0F0F);
      for (kairos::Task& t : all) {
        if (rr.chance(60)) t.run();
        else {
          ++dropped;
          kairos::Task gone = std::move(t);
        }
      }
      t_running_orphans = false;
    }
    orphans_done.store(true);
    u1.join();
    u2.join();
    totals.future_ops += ops.load();
    if (!s.await_termination(2 * kPatience)) return {"the scheduler did not terminate within 2 * kPatience (" + config + ")"};
    self_ptr.store(nullptr);
  }
  Allowances allow;
  allow.dropped_tasks = dropped;
  allow.delayed_cancelled_by_policy = delayed_policy_off;
  allow.periodic_cancelled_by_policy = true;
  allow.evictions = o.rejection == kairos::Rejection::discard_oldest && o.capacity != 0;
  allow.on_uncaught_calls = uncaught.load();
  allow.max_starts_after_stop = static_cast<std::size_t>(o.shards) * o.threads_per_shard;
  Summary sum;
  std::vector<std::string> problems = ledger.verify(allow, sum);
  ledger.release_futures();
  for (auto& p : ledger.verify_destroyed()) problems.push_back(p);
  totals.add(sum);
  totals.storms += 1;
  totals.producers += so.producers;
  return problems;
}

void storms(const char* name, StormOptions so, std::initializer_list<unsigned> producer_counts) {
  auto budget = stress_budget(1.5);
  Watchdog dog(name, budget * 10 + kHangLimit);
  std::uint64_t seed = stress_seed();
  auto until = std::chrono::steady_clock::now() + budget;
  Totals totals;
  std::vector<unsigned> counts(producer_counts);
  auto start = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i == 0 || std::chrono::steady_clock::now() < until; ++i) {
    so.producers = counts[i % counts.size()];
    std::uint64_t storm_seed = seed + i;
    std::string config;
    // Each storm is short: many storms, many endings.
    auto problems = run_storm(storm_seed, std::chrono::milliseconds(sanitized_build() ? 120 : 60), so, totals, config);
    if (!problems.empty()) {
      std::string all;
      for (auto& p : problems) all += "  " + p + "\n";
      ADD_FAILURE() << name << ": storm seed " << storm_seed << " (" << config << ") broke the ledger:\n" << all
                    << "replay: KAIROS_STRESS_SEED=" << storm_seed;
      return;
    }
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%s: %.1f s, %s; nothing lost\n", name, secs, totals.str().c_str());
}

TEST(Storm, ManyProducersWithOverlappingLifecycleCallsLoseNothing) {
  storms("many producers, overlapping lifecycle", StormOptions{}, {16, 32, 64});
}

TEST(Storm, OnUncaughtReenteringTheSchedulerLosesNothing) {
  StormOptions so;
  so.reenter_from_on_uncaught = true;
  storms("on_uncaught re-entry", so, {16, 24});
}

TEST(Storm, TaskPoolRefusingToGrowDuringAStormLosesNothing) {
  StormOptions so;
  so.refuse_slabs = true;
  storms("task pool refusing growth", so, {16, 32});
}

// The timer queue cannot grow one millisecond in two (tasks wait in the inbox, retried): every
// accepted task still runs once, is cancelled, or is returned; nothing throws on the runner.
TEST(Storm, TimerQueueRefusingToGrowDuringAStormLosesNothing) {
  StormOptions so;
  so.refuse_queue_growth = true;
  storms("timer queue refusing growth", so, {16});
}

}  // namespace
}  // namespace kairos_test
