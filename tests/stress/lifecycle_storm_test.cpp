// lifecycle_storm_test.cpp: many producers against one kairos scheduler while its lifecycle calls
// (shutdown(), shutdown_now(), the policy setters, the destructor) land, checked by the ledger.
//
// A storm: 2..4 producers submit one-shot and periodic tasks with small random delays (schedule,
// schedule_at, submit, execute, both periodic kinds), cancel random tasks from their threads,
// while task bodies cancel other tasks or themselves, submit new tasks, and some throw. A
// controller thread flips the shutdown policies and, at a random moment, calls shutdown(),
// shutdown_now(), or both, or the storm ends by destroying the scheduler while tasks are pending
// and running; the tasks shutdown_now() returns are run or dropped at random. Afterwards the
// scheduler must terminate, and the ledger must balance (ledger.hpp).
// ManualClock storms do the same on a ManualClock that a thread moves in small steps: its
// leaders sleep with no timeout, so a lost wake-up leaves the storm unable to terminate.
// Poll-mode storms do the same with no scheduler thread: a loop thread of the storm polls, and
// destroys the scheduler itself when the storm ends that way.
// Each storm draws its configuration (1..4 shards x 1..3 threads, wait policy, rejection
// policy, capacity, pinning, policies) from its seed; a failure prints the seed, and
// KAIROS_STRESS_SEED=<seed> replays the storm's configuration and random decisions (the
// interleaving of the threads is the machine's).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include <kairos/kairos.hpp>

#include "support.hpp"
#include "ledger.hpp"

namespace kairos_test {
namespace {

using namespace std::chrono_literals;

inline std::uint64_t splitmix(std::uint64_t& s) {
  std::uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

struct Rng {
  std::uint64_t s;
  explicit Rng(std::uint64_t seed) : s(seed) {}
  std::uint64_t next() { return splitmix(s); }
  std::uint64_t below(std::uint64_t n) { return n ? next() % n : 0; }
  bool chance(unsigned percent) { return below(100) < percent; }
};

enum class Ending { shutdown, shutdown_now, shutdown_then_now, destroy };

struct StormConfig {
  unsigned shards = 1, threads = 1, producers = 2;
  int wait = 0;  // 0 sleep, 1 hybrid, 2 spin
  std::int64_t spin_window_ns = 0;
  kairos::Rejection rejection = kairos::Rejection::abort;
  std::size_t capacity = 0;
  bool pin = false;
  bool remove_on_cancel = false;
  bool execute_delayed = true;
  bool continue_periodic = false;
  bool flip_after_shutdown = true;  // false: strict accounting, policies fixed at shutdown
  bool far_future = false;          // some tasks due in an hour (cancelled at the end)
  bool poll = false;                // poll mode: a loop thread of the storm runs the tasks
  Ending ending = Ending::shutdown;

  std::string str() const {
    static const char* rej[] = {"abort", "caller_runs", "discard", "discard_oldest"};
    static const char* waits[] = {"sleep", "hybrid", "spin"};
    static const char* ends[] = {"shutdown", "shutdown_now", "shutdown+shutdown_now", "destructor"};
    std::ostringstream o;
    o << shards << " shards x " << threads << " threads, " << producers << " producers, wait="
      << waits[wait] << (wait == 1 ? "(" + std::to_string(spin_window_ns) + "ns)" : "")
      << ", rejection=" << rej[static_cast<int>(rejection)] << ", capacity=" << capacity
      << (pin ? ", pinned" : "") << ", remove_on_cancel=" << remove_on_cancel
      << ", execute_delayed=" << execute_delayed << ", continue_periodic=" << continue_periodic
      << ", flips=" << flip_after_shutdown << ", far_future=" << far_future
      << ", ending=" << ends[static_cast<int>(ending)] << (poll ? ", poll mode" : "");
    return o.str();
  }
};

enum class Flavor { mixed, strict, shutdown_now, capacity, manual, poll };

StormConfig draw_config(Rng& r, Flavor flavor) {
  StormConfig c;
  c.shards = 1 + static_cast<unsigned>(r.below(4));
  c.threads = 1 + static_cast<unsigned>(r.below(3));
  c.producers = 2 + static_cast<unsigned>(r.below(3));
  c.wait = r.chance(40) ? 0 : 1;
  if (c.shards * c.threads <= 2 && r.chance(25)) c.wait = 2;
  c.spin_window_ns = static_cast<std::int64_t>(r.below(50'000));
  c.rejection = static_cast<kairos::Rejection>(r.below(4));
  c.capacity = r.chance(20) ? 16 + r.below(240) : 0;
  c.pin = r.chance(20);
  c.remove_on_cancel = r.chance(50);
  c.execute_delayed = r.chance(60);
  c.continue_periodic = r.chance(40);
  c.flip_after_shutdown = r.chance(50);
  c.far_future = r.chance(30);
  c.ending = r.chance(20) ? Ending::destroy : static_cast<Ending>(r.below(3));
  switch (flavor) {
    case Flavor::mixed: break;
    case Flavor::strict:  // every one-shot must run; periodic tasks end only by cancel()
      c.capacity = 0;
      c.execute_delayed = true;
      c.continue_periodic = true;
      c.flip_after_shutdown = false;
      c.ending = Ending::shutdown;
      break;
    case Flavor::shutdown_now:
      c.ending = r.chance(50) ? Ending::shutdown_now : Ending::shutdown_then_now;
      break;
    case Flavor::capacity: c.capacity = 4 + r.below(60); break;
    case Flavor::manual: break;  // a ManualClock that a thread of the test moves
    case Flavor::poll:           // no scheduler thread: the storm's loop thread polls
      c.poll = true;
      c.threads = 1;
      c.pin = false;
      break;
  }
  return c;
}

// Clock: kairos::SteadyClock, or kairos::ManualClock moved forward by a thread of the storm in
// steps of up to 0.5 ms (a lost wake-up then shows as a storm that never terminates).
template <class Clock>
class Storm {
  static constexpr bool kManual = std::is_same_v<Clock, kairos::ManualClock>;

 public:
  Storm(std::uint64_t seed, Flavor flavor, std::chrono::nanoseconds length)
      : seed_(seed), length_(length), ledger_(kMaxEntries, kManual ? &clock_ : nullptr) {
    Rng r(seed);
    config_ = draw_config(r, flavor);
  }

  const StormConfig& config() const { return config_; }
  const Summary& summary() const { return summary_; }

  // Runs the storm; returns the problems found.
  std::vector<std::string> run() {
    kairos::Options o;
    o.shards = config_.shards;
    o.threads_per_shard = config_.threads;
    o.wait = config_.wait == 0   ? kairos::WaitPolicy::sleep()
             : config_.wait == 1 ? kairos::WaitPolicy::hybrid(std::chrono::nanoseconds(config_.spin_window_ns))
                                 : kairos::WaitPolicy::spin();
    o.rejection = config_.rejection;
    o.capacity = config_.capacity;
    if (config_.pin) {
      unsigned hw = std::max(1u, std::thread::hardware_concurrency());
      for (unsigned i = 0; i < hw; ++i) o.cpus.push_back(static_cast<int>(i));
    }
    o.remove_on_cancel = config_.remove_on_cancel;
    o.execute_existing_delayed_tasks_after_shutdown = config_.execute_delayed;
    o.continue_existing_periodic_tasks_after_shutdown = config_.continue_periodic;
    o.on_uncaught = [this](std::exception_ptr) { uncaught_.fetch_add(1); };
    o.name = "storm";
    o.poll_mode = config_.poll;
    allow_.evictions = config_.capacity != 0 && config_.rejection == kairos::Rejection::discard_oldest;
    std::vector<std::string> problems;
    {
      Watchdog dog("storm seed " + std::to_string(seed_), std::chrono::seconds(240));
      if constexpr (kManual) sched_ = std::make_unique<Sched>(o, clock_);
      else sched_ = std::make_unique<Sched>(o);
      raw_ = sched_.get();
      start_ns_ = steady_ns();
      std::vector<std::thread> producers;
      for (unsigned p = 0; p < config_.producers; ++p)
        producers.emplace_back([this, p] { produce(seed_ * 31 + p + 1); });
      std::thread controller([this] { control(seed_ * 17 + 5); });
      std::thread mover;
      if constexpr (kManual) mover = std::thread([this] { move_clock(seed_ * 13 + 3); });
      std::thread loop;
      if (config_.poll) loop = std::thread([this] { poll_loop(); });
      controller.join();
      for (std::thread& t : producers) t.join();
      if (config_.ending == Ending::destroy) destroy(loop);
      else finish(problems);
      stop_loop_.store(true);
      if (loop.joinable()) loop.join();
      stop_clock_.store(true);
      if (mover.joinable()) mover.join();
      Allowances allow = allow_;
      allow.on_uncaught_calls = uncaught_.load();
      allow.max_starts_after_stop = config_.shards * config_.threads;
      for (std::string& p : ledger_.verify(allow, summary_)) problems.push_back(std::move(p));
      sched_.reset();
    }
    ledger_.release_futures();
    for (std::string& p : ledger_.verify_destroyed()) problems.push_back(std::move(p));
    return problems;
  }

 private:
  static constexpr std::size_t kMaxEntries = 300'000;
  static constexpr int kMaxLivePeriodic = 24;
  static constexpr std::int64_t kHour = 3'600'000'000'000;

  // What a body does on each run, decided by its entry's seed and the run number.
  struct Act {
    Storm* s;
    void operator()(Entry& e, int run, const std::stop_token* st) const {
      if (st && st->stop_requested()) return;
      std::uint64_t x = e.seed * 0x9E3779B97F4A7C15ull + static_cast<std::uint64_t>(run) + 1;
      std::uint64_t r = splitmix(x);
      unsigned roll = static_cast<unsigned>(r % 100);
      bool periodic = e.periodic();
      if (periodic && run >= static_cast<int>((r >> 8) % 24)) {
        s->cancel(e, (r >> 16) & 1);  // periodic tasks end themselves after a few runs
      } else if (roll < 4) {
        s->cancel(e, (r >> 16) & 1);  // cancelling itself while it runs
      } else if (roll < 12) {
        if (Entry* other = s->ledger_.pick(r >> 20)) s->cancel(*other, (r >> 17) & 1);
      } else if (roll < 20) {
        Rng inner(r);
        s->submit_one(inner);
      } else if (roll < 22) {
        std::int64_t until = steady_ns() + 30'000;  // a short busy run: other runs pile up
        while (steady_ns() < until) {
          if (st && st->stop_requested()) break;
        }
      }
    }
  };

  bool cancel(Entry& e, bool interrupt) {
    bool won = ledger_.cancel(e, interrupt);
    if (won && e.periodic()) live_periodic_.fetch_sub(1);
    return won;
  }

  std::int64_t draw_delay_ns(Rng& r) {
    unsigned roll = static_cast<unsigned>(r.below(100));
    if (roll < 20) return 0;
    if (roll < 25) return -1'000'000;  // negative: as soon as possible
    if (config_.far_future && roll < 28) return kHour;
    return static_cast<std::int64_t>(r.below(3'000'000));
  }

  // One submission of a random kind; returns false once the ledger is full.
  bool submit_one(Rng& r) {
    unsigned roll = static_cast<unsigned>(r.below(100));
    bool want_periodic = roll >= 85 && live_periodic_.load() < kMaxLivePeriodic;
    std::int64_t delay = draw_delay_ns(r);
    std::int64_t t0 = ledger_.now();
    std::int64_t earliest = delay > 0 ? t0 + delay : t0;
    Kind kind = Kind::one_shot;
    std::int64_t period = 0;
    if (want_periodic) {
      kind = r.chance(50) ? Kind::fixed_rate : Kind::fixed_delay;
      period = 200'000 + static_cast<std::int64_t>(r.below(1'800'000));
      if (delay == kHour) delay = 0, earliest = t0;
    } else if (roll < 8) {
      kind = Kind::execute;
      earliest = t0;
    }
    int throw_on = -1;
    if (r.chance(3)) throw_on = want_periodic ? static_cast<int>(r.below(4)) : 0;
    Entry* e = ledger_.add(kind, earliest, period, throw_on, static_cast<std::uint32_t>(r.next()));
    if (!e) return false;
    bool stoppable = r.chance(30);
    bool was_shutdown = raw_->is_shutdown();
    try {
      if (kind == Kind::execute) {
        if (stoppable) raw_->execute(ledger_.stoppable_body(*e, Act{this}));
        else raw_->execute(ledger_.body(*e, Act{this}));
        // execute() has no future: a rejection other than abort drops it without a trace.
        if (was_shutdown) ledger_.dropped_without_future(*e);
        else if (raw_->is_shutdown() ||
                 (config_.capacity && config_.rejection == kairos::Rejection::discard))
          ledger_.maybe_dropped(*e);
        else ledger_.accepted_without_future(*e);
        return true;
      }
      kairos::ScheduledFuture<void> f;
      if (kind == Kind::fixed_rate) {
        f = stoppable ? raw_->schedule_at_fixed_rate(ledger_.stoppable_body(*e, Act{this}),
                                                       std::chrono::nanoseconds(delay), std::chrono::nanoseconds(period))
                      : raw_->schedule_at_fixed_rate(ledger_.body(*e, Act{this}), std::chrono::nanoseconds(delay),
                                                       std::chrono::nanoseconds(period));
      } else if (kind == Kind::fixed_delay) {
        f = stoppable ? raw_->schedule_with_fixed_delay(ledger_.stoppable_body(*e, Act{this}),
                                                          std::chrono::nanoseconds(delay), std::chrono::nanoseconds(period))
                      : raw_->schedule_with_fixed_delay(ledger_.body(*e, Act{this}), std::chrono::nanoseconds(delay),
                                                          std::chrono::nanoseconds(period));
      } else {
        unsigned how = static_cast<unsigned>(r.below(3));
        if (how == 0 || delay == kHour) {
          f = stoppable ? raw_->schedule(ledger_.stoppable_body(*e, Act{this}), std::chrono::nanoseconds(delay))
                        : raw_->schedule(ledger_.body(*e, Act{this}), std::chrono::nanoseconds(delay));
        } else if (how == 1) {
          auto at = typename Clock::time_point(std::chrono::duration_cast<typename Clock::time_point::duration>(
              std::chrono::nanoseconds(ledger_.now() + delay)));
          f = stoppable ? raw_->schedule_at(ledger_.stoppable_body(*e, Act{this}), at)
                        : raw_->schedule_at(ledger_.body(*e, Act{this}), at);
        } else {
          e->earliest_ns = t0;
          f = stoppable ? raw_->submit(ledger_.stoppable_body(*e, Act{this}))
                        : raw_->submit(ledger_.body(*e, Act{this}));
        }
      }
      bool cancelled_at_once = f.is_cancelled();
      ledger_.publish(*e, std::move(f));
      if (cancelled_at_once && e->fate.load() == Fate::discarded) {
        // Legitimate only as a rejection: after shutdown, or over capacity.
        if (!was_shutdown && !raw_->is_shutdown() && config_.capacity == 0) {
          std::lock_guard lock(mu_);
          side_problems_.push_back(std::string(kind_name(kind)) + " task " + std::to_string(e->id) +
                                   ": future cancelled at once, with no shutdown and no capacity");
        }
      } else if (e->periodic()) {
        live_periodic_.fetch_add(1);
      }
      if (delay == kHour) {
        std::lock_guard lock(mu_);
        far_.push_back(e);
      }
    } catch (const kairos::RejectedExecution&) {
      ledger_.rejected(*e);
      std::lock_guard lock(mu_);
      if (config_.capacity == 0 && !was_shutdown && !raw_->is_shutdown())
        side_problems_.push_back(std::string(kind_name(kind)) + " task " + std::to_string(e->id) +
                                 ": RejectedExecution with no shutdown and no capacity");
      if (config_.rejection != kairos::Rejection::abort)
        side_problems_.push_back(std::string(kind_name(kind)) + " task " + std::to_string(e->id) +
                                 ": RejectedExecution under a rejection policy other than abort");
    } catch (const std::runtime_error& ex) {
      // Only a caller_runs task's planned failure could get here: it must stay in its future
      // (or go to on_uncaught), never escape from the submission.
      ledger_.failed(*e);
      std::lock_guard lock(mu_);
      side_problems_.push_back(std::string(kind_name(kind)) + " task " + std::to_string(e->id) +
                               ": the task's exception escaped from the submission: " + ex.what());
    } catch (const std::exception& ex) {
      ledger_.failed(*e);
      std::lock_guard lock(mu_);
      side_problems_.push_back(std::string(kind_name(kind)) + " task " + std::to_string(e->id) +
                               ": submission threw " + ex.what());
    }
    return true;
  }

  // ManualClock storms: time moves in small random steps, from its own thread, until the end.
  void move_clock(std::uint64_t seed) {
    Rng r(seed);
    while (!stop_clock_.load()) {
      std::this_thread::sleep_for(std::chrono::microseconds(50 + r.below(200)));
      clock_.advance(std::chrono::nanoseconds(r.below(500'000)));
    }
  }

  void produce(std::uint64_t seed) {
    OutsideScheduler outside;
    Rng r(seed);
    while (!stop_producers_.load()) {
      unsigned burst = 1 + static_cast<unsigned>(r.below(32));
      for (unsigned i = 0; i < burst; ++i) {
        unsigned roll = static_cast<unsigned>(r.below(100));
        if (roll < 70) {
          if (!submit_one(r)) return;
        } else if (roll < 92) {
          if (Entry* e = ledger_.pick(r.next())) cancel(*e, r.chance(50));
        } else {
          (void)raw_->queue_size();
          (void)raw_->is_terminated();
        }
      }
      std::this_thread::sleep_for(std::chrono::microseconds(r.below(1000)));
    }
  }

  void set_continue(bool v) {
    raw_->set_continue_existing_periodic_tasks_after_shutdown(v);
    continue_ = v;
    if (!v && shut_down_) {
      allow_.periodic_cancelled_by_policy = true;
      ledger_.stop_periodic();
    }
  }
  void set_delayed(bool v) {
    raw_->set_execute_existing_delayed_tasks_after_shutdown(v);
    delayed_ = v;
    if (!v && shut_down_) allow_.delayed_cancelled_by_policy = true;
  }

  void do_shutdown() {
    raw_->shutdown();
    shut_down_ = true;
    if (!continue_) {
      allow_.periodic_cancelled_by_policy = true;
      ledger_.stop_periodic();
    }
    if (!delayed_) allow_.delayed_cancelled_by_policy = true;
  }

  void do_shutdown_now(Rng& r) {
    std::vector<kairos::Task> tasks = raw_->shutdown_now();
    shut_down_ = true;
    ledger_.stop_all();
    allow_.periodic_cancelled_by_policy = true;
    t_running_orphans = true;
    for (kairos::Task& t : tasks) {
      if (r.chance(50)) {
        try {
          t.run();
        } catch (...) {
          std::lock_guard lock(mu_);
          side_problems_.push_back("Task::run() let an exception out");
        }
      } else {
        ++allow_.dropped_tasks;
        kairos::Task dropped = std::move(t);
      }
    }
    t_running_orphans = false;
  }

  void control(std::uint64_t seed) {
    OutsideScheduler outside;
    Rng r(seed);
    continue_ = config_.continue_periodic;
    delayed_ = config_.execute_delayed;
    std::int64_t len = length_.count();
    std::int64_t shutdown_at = start_ns_ + len * (30 + static_cast<std::int64_t>(r.below(50))) / 100;
    std::int64_t now_at = shutdown_at + (len - (shutdown_at - start_ns_)) * static_cast<std::int64_t>(r.below(60)) / 100;
    std::int64_t end = start_ns_ + len;
    bool flips_before = config_.flip_after_shutdown || r.chance(50);
    // Before shutdown: flipping policies changes nothing yet, but races with every submission.
    while (steady_ns() < shutdown_at) {
      std::this_thread::sleep_for(std::chrono::microseconds(200 + r.below(2000)));
      if (flips_before && r.chance(30)) {
        bool c = r.chance(50), d = r.chance(50);
        raw_->set_continue_existing_periodic_tasks_after_shutdown(c);
        raw_->set_execute_existing_delayed_tasks_after_shutdown(d);
        raw_->set_remove_on_cancel(r.chance(50));
      }
    }
    raw_->set_remove_on_cancel(config_.remove_on_cancel);  // what the storm was drawn with
    remove_on_cancel_ = config_.remove_on_cancel;
    if (flips_before) {  // settle the policies the shutdown will see
      set_continue(config_.continue_periodic);
      set_delayed(config_.execute_delayed);
    }
    if (config_.ending == Ending::destroy) {  // the storm's end destroys the running scheduler
      stop_producers_.store(true);
      return;
    }
    if (config_.ending == Ending::shutdown_now) {
      do_shutdown_now(r);
    } else {
      do_shutdown();
    }
    bool now_pending = config_.ending == Ending::shutdown_then_now;
    while (steady_ns() < end) {
      std::this_thread::sleep_for(std::chrono::microseconds(200 + r.below(2000)));
      if (now_pending && steady_ns() >= now_at) {
        do_shutdown_now(r);
        now_pending = false;
      }
      if (config_.flip_after_shutdown && r.chance(20)) {
        if (r.chance(50)) set_continue(r.chance(50));
        else set_delayed(r.chance(50));
      }
      if (config_.flip_after_shutdown && r.chance(10)) {
        remove_on_cancel_ = r.chance(50);
        raw_->set_remove_on_cancel(remove_on_cancel_);
      }
    }
    if (now_pending) do_shutdown_now(r);
    stop_producers_.store(true);
  }

  // Poll mode: the owner's loop, on a thread of its own (a scheduler thread for the ledger):
  // polls until the storm ends, or destroys the scheduler itself when asked (destroy()).
  void poll_loop() {
    while (!stop_loop_.load()) {
      if (destroy_in_loop_.load()) {
        sched_.reset();
        return;
      }
      if (raw_->poll() == 0) std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }

  // The destructor with tasks pending and running: the pending ones are dropped (cancelled),
  // the running ones finish; afterwards nothing runs, every future is done. Poll mode: the
  // loop's own thread destroys it, between two polls.
  void destroy(std::thread& loop) {
    OutsideScheduler outside;
    allow_.dropped_tasks = static_cast<std::size_t>(-1) / 2;
    allow_.periodic_cancelled_by_policy = true;
    if (loop.joinable()) {
      destroy_in_loop_.store(true);
      loop.join();
    } else {
      sched_.reset();
    }
    ledger_.stop_all();
  }

  // After the producers stopped: end what may still run, then wait for termination.
  void finish(std::vector<std::string>& problems) {
    OutsideScheduler outside;
    {
      std::lock_guard lock(mu_);
      for (Entry* e : far_) cancel(*e, false);  // due in an hour: cancel rather than wait
    }
    if (continue_) {
      // Periodic tasks may go on forever: end them by cancel(), keeping the accounting strict.
      for (std::size_t i = 0; i < ledger_.size(); ++i) {
        Entry& e = ledger_.at(i);
        if (e.periodic()) cancel(e, false);
      }
    }
    // Cancelled tasks are retained until their deadline unless remove_on_cancel was on when
    // they were cancelled; a further shutdown() removes them (as Java's onShutdown does).
    if (!remove_on_cancel_) raw_->shutdown();
    if (!raw_->await_termination(kPatience)) {  // (the clock thread still runs)
      std::size_t not_done = 0;
      std::string first;
      for (std::size_t i = 0; i < ledger_.size(); ++i) {
        Entry& e = ledger_.at(i);
        if (e.future_ready.load() && !e.future.is_done()) {
          if (!not_done++) first = std::string(kind_name(e.kind)) + " task " + std::to_string(e.id);
        }
      }
      problems.push_back("no termination within 20 s after shutdown: queue_size=" +
                         std::to_string(raw_->queue_size()) + ", " + std::to_string(not_done) +
                         " futures not done (first: " + first + ")");
    }
    if (!raw_->is_terminated()) problems.push_back("await_termination() returned but is_terminated() is false");
    std::lock_guard lock(mu_);
    for (std::string& p : side_problems_) problems.push_back(p);
  }

  std::uint64_t seed_;
  std::chrono::nanoseconds length_;
  StormConfig config_;
  Ledger ledger_;
  Summary summary_;
  Allowances allow_;
  using Sched = kairos::BasicScheduler<Clock>;
  kairos::ManualClock clock_;  // the storm's time when Clock is ManualClock
  std::atomic<bool> stop_clock_{false};
  std::unique_ptr<Sched> sched_;
  Sched* raw_ = nullptr;  // stays valid while the destructor runs (tasks may still call it)
  std::int64_t start_ns_ = 0;
  std::atomic<bool> stop_producers_{false};
  std::atomic<bool> stop_loop_{false};
  std::atomic<bool> destroy_in_loop_{false};
  std::atomic<int> live_periodic_{0};
  std::atomic<std::int64_t> uncaught_{0};
  bool continue_ = false, delayed_ = true, shut_down_ = false;  // controller thread only
  bool remove_on_cancel_ = false;
  std::mutex mu_;
  std::vector<Entry*> far_;
  std::vector<std::string> side_problems_;
};

// Runs storms of one flavor for the test's time budget, a third of it each.
template <class Clock = kairos::SteadyClock>
void run_storms(Flavor flavor, const char* name) {
  std::uint64_t base = stress_seed();
  std::chrono::nanoseconds budget = stress_budget();
  bool replay = std::getenv("KAIROS_STRESS_SEED") != nullptr;
  std::int64_t end = steady_ns() + budget.count();
  std::size_t storms = 0, tasks = 0, runs = 0;
  for (std::uint64_t i = 0;; ++i) {
    std::uint64_t seed = replay ? base : base + i * 0x9E3779B97F4A7C15ull;
    Storm<Clock> storm(seed, flavor, budget / 3);
    std::vector<std::string> problems = storm.run();
    ++storms;
    tasks += storm.summary().accepted;
    runs += storm.summary().one_shot_ran + storm.summary().periodic_runs;
    if (!problems.empty()) {
      std::string all;
      for (const std::string& p : problems) all += "  " + p + "\n";
      ADD_FAILURE() << name << " storm failed: KAIROS_STRESS_SEED=" << seed << "\n  config: "
                    << storm.config().str() << "\n  " << storm.summary().str() << "\n"
                    << all;
      return;
    }
    std::printf("[ storm    ] seed=%llu %s\n             %s\n", static_cast<unsigned long long>(seed),
                storm.config().str().c_str(), storm.summary().str().c_str());
    if (replay || steady_ns() >= end) break;
  }
  std::printf("[ storms   ] %s: %zu storms, %zu tasks accepted, %zu runs\n", name, storms, tasks, runs);
}

TEST(Stress, MixedStormsBalanceTheLedger) { run_storms(Flavor::mixed, "mixed"); }
TEST(Stress, StrictStormsRunEveryAcceptedOneShot) { run_storms(Flavor::strict, "strict"); }
TEST(Stress, ShutdownNowStormsLoseNothing) { run_storms(Flavor::shutdown_now, "shutdown_now"); }
TEST(Stress, CapacityStormsUnderEveryRejectionPolicy) { run_storms(Flavor::capacity, "capacity"); }
TEST(Stress, ManualClockStormsLoseNoWakeUp) { run_storms<kairos::ManualClock>(Flavor::manual, "manual"); }
TEST(Stress, PollModeStormsBalanceTheLedger) { run_storms(Flavor::poll, "poll"); }

// Happens-before FIFO: thread A submits at deadline D, then signals B; B submits at the same D.
// Within a shard (one shard here), A's task must start first, every time.
TEST(Stress, EqualDeadlinesKeepHappensBeforeOrderAcrossThreads) {
  std::chrono::nanoseconds budget = stress_budget() / 2;
  for (unsigned threads : {1u, 2u}) {
    kairos::Options o;
    o.shards = 1;
    o.threads_per_shard = threads;
    o.wait = kairos::WaitPolicy::hybrid(20us);
    kairos::Scheduler sched(o);
    constexpr int kPairs = 256;
    std::int64_t end = steady_ns() + budget.count() / 2;
    std::size_t pairs_checked = 0, inversions = 0;
    std::string first_bad;
    while (steady_ns() < end) {
      std::vector<std::atomic<int>> order(kPairs * 2);  // start ticket of A's and B's task
      std::atomic<int> ticket{0};
      std::atomic<int> handed{-1};  // A has submitted pair i: B may go
      auto deadline = kairos::SteadyClock::now() + 5ms;
      std::vector<kairos::ScheduledFuture<void>> fa(kPairs), fb(kPairs);
      std::thread b([&] {
        for (int i = 0; i < kPairs; ++i) {
          while (handed.load(std::memory_order_acquire) < i) std::this_thread::yield();
          fb[i] = sched.schedule_at([&order, &ticket, i] { order[2 * i + 1] = ticket.fetch_add(1); }, deadline);
        }
      });
      for (int i = 0; i < kPairs; ++i) {
        fa[i] = sched.schedule_at([&order, &ticket, i] { order[2 * i] = ticket.fetch_add(1); }, deadline);
        handed.store(i, std::memory_order_release);
      }
      b.join();
      for (int i = 0; i < kPairs; ++i) {
        ASSERT_EQ(fa[i].wait_for(kPatience), std::future_status::ready);
        ASSERT_EQ(fb[i].wait_for(kPatience), std::future_status::ready);
      }
      for (int i = 0; i < kPairs; ++i) {
        ++pairs_checked;
        if (order[2 * i].load() > order[2 * i + 1].load()) {
          if (!inversions++)
            first_bad = "pair " + std::to_string(i) + ": A started " + std::to_string(order[2 * i].load()) +
                        "th, B " + std::to_string(order[2 * i + 1].load()) + "th";
        }
      }
    }
    // With one thread per shard, start order is run order: strict. With two, a follower may be
    // descheduled between taking A's task and running it, so the body's ticket is only checked
    // for the one-thread shard.
    if (threads == 1) {
      EXPECT_EQ(inversions, 0u) << pairs_checked << " pairs, first inversion: " << first_bad;
    }
    std::printf("[ fifo     ] threads_per_shard=%u: %zu pairs, %zu body-order inversions\n", threads,
                pairs_checked, inversions);
  }
}

// ---- regressions: engine bugs the storms found ------------------------------------------------

// Found by StrictStormsRunEveryAcceptedOneShot: after shutdown(), cancelling the last pending
// task under remove_on_cancel posts a remove request but does not wake the shard's leader, which
// sleeps until the cancelled task's deadline; the scheduler does not terminate until then (an
// hour here). queue_size() already reads 0.
TEST(StressRegression, RemoveOnCancelAfterShutdownLetsTheSchedulerTerminate) {
  for (unsigned threads : {1u, 2u}) {
    SCOPED_TRACE(threads);
    kairos::Options o;
    o.shards = 1;
    o.threads_per_shard = threads;
    o.remove_on_cancel = true;
    kairos::Scheduler s(o);
    auto f = s.schedule([] {}, 1h);
    ASSERT_TRUE(s.wait_idle(kPatience));
    // The pauses only let the leader fall asleep until the task's deadline, the case at issue;
    // a correct scheduler terminates with or without them.
    std::this_thread::sleep_for(20ms);
    s.shutdown();
    std::this_thread::sleep_for(20ms);
    ASSERT_TRUE(f.cancel());
    EXPECT_EQ(s.queue_size(), 0u);
    EXPECT_TRUE(s.await_termination(kPatience)) << "nothing is pending, nothing runs: terminated";
  }
}

}  // namespace
}  // namespace kairos_test
