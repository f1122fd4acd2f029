// ledger.hpp: test-side accounting of every submission made to a kairos scheduler.
//
// Every submission gets an Entry before it is made. Its callable carries a Probe (counts
// constructions and destructions of every copy) and reports each run to the ledger. At the end
// verify() checks the conservation rules:
//   - an accepted one-shot ran exactly once, or its future reports cancelled (by a cancel()
//     that returned true, by a shutdown policy, or because shutdown_now() returned it and it
//     was dropped); one returned by shutdown_now() and run() ran once, in the caller;
//   - a rejected submission (RejectedExecution, or a future cancelled at once) never ran;
//   - every future of an accepted task is done once the scheduler has terminated: nothing lost;
//   - runs of a task never overlap and none starts early (against steady_clock, or the
//     ManualClock the scheduler runs on); after a winning cancel() at most the run already
//     under way starts; after shutdown_now() (or, for a periodic task, shutdown() without the
//     continue policy) at most one more run of a task starts, and at most one per thread in all;
//   - on_uncaught ran once for each failure nobody can get() (execute()'d, periodic);
//   - a periodic future completes only by cancellation or by the exception of its last run;
//   - every copy of every callable is destroyed exactly once (Probe: live count back to zero,
//     no destructor on a dead object).
// Threads: add(), publish(), cancel() and the bodies may run on any thread; verify() runs once
//          the scheduler has terminated and no other thread touches the ledger.
// Usage:   Entry* e = ledger.add(Kind::one_shot, ledger.now() + delay, 0);
//          ledger.publish(*e, sched.schedule(ledger.body(*e, action), delay));
//          ... shutdown, await_termination ...
//          problems = ledger.verify(allowances, summary);
//          ledger.release_futures(); destroy the scheduler; ledger.verify_destroyed();
#pragma once
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <limits>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <vector>

#include <kairos/kairos.hpp>

namespace kairos_test {

inline std::int64_t steady_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

inline std::int64_t sat_add(std::int64_t a, std::int64_t b) noexcept {
  std::int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return b > 0 ? std::numeric_limits<std::int64_t>::max()
                                                     : std::numeric_limits<std::int64_t>::min();
  return r;
}

inline std::int64_t sat_mul(std::int64_t a, std::int64_t b) noexcept {
  std::int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::numeric_limits<std::int64_t>::max();
  return r;
}

// ---- where a body runs -------------------------------------------------------------------
// Set by the test on threads that are not the scheduler's (producers, the controller): a body
// that starts there was run by the caller (Rejection::caller_runs) or by Task::run().
inline thread_local bool t_outside_scheduler = false;
// Set while the test calls Task::run() on tasks shutdown_now() returned.
inline thread_local bool t_running_orphans = false;
// Depth of tracked bodies on this thread: a body that starts inside another one was run by
// its caller (a submission from inside a task under caller_runs).
inline thread_local int t_body_depth = 0;

struct OutsideScheduler {
  OutsideScheduler() { t_outside_scheduler = true; }
  ~OutsideScheduler() { t_outside_scheduler = false; }
};

// ---- Probe: one per callable, copied with it ----------------------------------------------
struct ProbeCounters {
  std::atomic<std::int64_t> constructed{0};
  std::atomic<std::int64_t> destroyed{0};
  std::int64_t live() const { return constructed.load() - destroyed.load(); }
};
// Destructors that ran on an object that was not alive (destroyed twice, or never built).
inline std::atomic<std::int64_t> g_bad_probe_destroys{0};

class Probe {
 public:
  explicit Probe(ProbeCounters& c) noexcept : c_(&c) { c_->constructed.fetch_add(1); }
  Probe(const Probe& o) noexcept : c_(o.c_) { c_->constructed.fetch_add(1); }
  Probe(Probe&& o) noexcept : c_(o.c_) { c_->constructed.fetch_add(1); }
  Probe& operator=(const Probe&) noexcept { return *this; }  // same counters: nothing changes
  Probe& operator=(Probe&&) noexcept { return *this; }
  ~Probe() {
    if (magic_ != kAlive) {
      g_bad_probe_destroys.fetch_add(1);
      return;
    }
    magic_ = kDead;
    c_->destroyed.fetch_add(1);
  }

 private:
  static constexpr std::uint64_t kAlive = 0x6b6169726f73A11Eull;
  static constexpr std::uint64_t kDead = 0xDEADDEADDEADDEADull;
  ProbeCounters* c_;
  volatile std::uint64_t magic_ = kAlive;
};

// ---- one submission -------------------------------------------------------------------------
enum class Kind : std::uint8_t { one_shot, fixed_rate, fixed_delay, execute };
enum class Fate : std::uint8_t {
  submitting,  // the submission call has not returned yet
  accepted,    // the call returned a live future (or, for execute(), returned)
  rejected,    // the call threw RejectedExecution
  discarded,   // the call returned a future already cancelled (rejection policy)
  failed,      // the call threw something else (std::bad_alloc, std::invalid_argument)
  unknown,     // execute() returned while a rejection may have dropped it silently (it has no
               // future to tell): racing shutdown(), or over capacity under discard
};

inline const char* kind_name(Kind k) {
  switch (k) {
    case Kind::one_shot: return "one-shot";
    case Kind::fixed_rate: return "fixed-rate";
    case Kind::fixed_delay: return "fixed-delay";
    case Kind::execute: return "execute";
  }
  return "?";
}

struct Entry {
  std::uint32_t id = 0;
  Kind kind = Kind::one_shot;
  std::int64_t earliest_ns = 0;  // steady ns before which the first run must not start
  std::int64_t period_ns = 0;    // fixed rate: period; fixed delay: the delay between runs
  int throw_on_run = -1;         // the body throws std::runtime_error on this run (0-based)
  std::uint32_t seed = 0;        // randomness of the body's own actions

  std::atomic<Fate> fate{Fate::submitting};
  std::atomic<int> starts{0};           // bodies begun
  std::atomic<int> active{0};           // bodies running now
  std::atomic<int> overlaps{0};         // a body began while another run of this task ran
  std::atomic<int> early{0};            // a body began before its earliest allowed time
  std::atomic<std::int64_t> worst_early_ns{0};
  std::atomic<std::int64_t> last_end_ns{0};
  std::atomic<int> cancels_won{0};      // cancel() calls that returned true
  std::atomic<int> starts_at_cancel{-1};
  std::atomic<int> orphan_runs{0};      // runs through Task::run() after shutdown_now()
  std::atomic<int> caller_runs{0};      // runs in the submitting thread (caller_runs policy)
  std::atomic<int> starts_after_stop{0};  // began after the scheduler stopped this kind of task
  std::atomic<int> throws{0};
  std::atomic<bool> future_ready{false};
  kairos::ScheduledFuture<void> future;  // valid once future_ready (acquire)

  bool periodic() const { return kind == Kind::fixed_rate || kind == Kind::fixed_delay; }
};

struct Allowances {
  // shutdown_now() was called: tasks it returned and the test dropped complete as cancelled.
  std::size_t dropped_tasks = 0;
  // execute_existing_delayed_tasks_after_shutdown was false at some time after shutdown():
  // delayed one-shot tasks may have been cancelled by the scheduler.
  bool delayed_cancelled_by_policy = false;
  // continue_existing_periodic_tasks_after_shutdown was false at some time after shutdown(),
  // or shutdown_now() was called: periodic tasks may have been cancelled by the scheduler.
  bool periodic_cancelled_by_policy = false;
  // Rejection::discard_oldest with a capacity: queued tasks may have been cancelled to make room.
  bool evictions = false;
  // on_uncaught calls the scheduler made, -1: not counted. Checked against the failures seen:
  // at least every failed periodic task and every execute()'d task that threw on a scheduler
  // thread; at most that plus the failures whose futures were cancelled while they ran.
  std::int64_t on_uncaught_calls = -1;
  // Runs that may begin after the scheduler stopped them (shutdown_now(), or shutdown() for
  // periodic tasks without the continue policy): at most one already handed to each thread.
  std::size_t max_starts_after_stop = static_cast<std::size_t>(-1);
};

struct Summary {
  std::size_t submitted = 0, accepted = 0, rejected = 0, discarded = 0, failed = 0, unknown = 0;
  std::size_t one_shot_ran = 0, cancelled = 0, periodic = 0, periodic_runs = 0;
  std::size_t orphan_runs = 0, caller_runs = 0, failures = 0, unexplained_cancels = 0;
  std::size_t starts_after_stop = 0;
  std::string str() const {
    return "submitted=" + std::to_string(submitted) + " accepted=" + std::to_string(accepted) +
           " rejected=" + std::to_string(rejected) + " discarded=" + std::to_string(discarded) +
           " failed=" + std::to_string(failed) + " execute_unknown=" + std::to_string(unknown) +
           " one_shot_ran=" + std::to_string(one_shot_ran) +
           " cancelled=" + std::to_string(cancelled) + " periodic=" + std::to_string(periodic) +
           " periodic_runs=" + std::to_string(periodic_runs) +
           " orphan_runs=" + std::to_string(orphan_runs) +
           " caller_runs=" + std::to_string(caller_runs) + " failures=" + std::to_string(failures) +
           " cancelled_by_scheduler=" + std::to_string(unexplained_cancels) +
           " starts_after_stop=" + std::to_string(starts_after_stop);
  }
};

class Ledger {
 public:
  // `manual`: the clock a ManualClock scheduler runs on; "early" is then judged against it.
  explicit Ledger(std::size_t capacity, const kairos::ManualClock* manual = nullptr)
      : capacity_(capacity), manual_(manual) {
    for (std::size_t i = 0; i < capacity; i += kChunk) chunks_.push_back(std::make_unique<Entry[]>(kChunk));
  }
  Ledger(const Ledger&) = delete;
  Ledger& operator=(const Ledger&) = delete;

  // A new entry, or nullptr once `capacity` entries exist.
  Entry* add(Kind kind, std::int64_t earliest_ns, std::int64_t period_ns, int throw_on_run = -1,
             std::uint32_t seed = 0) {
    std::size_t i = next_.fetch_add(1);
    if (i >= capacity_) {
      next_.fetch_sub(1);  // others may be past capacity too; size() clamps
      return nullptr;
    }
    Entry& e = at(i);
    e.id = static_cast<std::uint32_t>(i);
    e.kind = kind;
    e.earliest_ns = earliest_ns;
    e.period_ns = period_ns;
    e.throw_on_run = throw_on_run;
    e.seed = seed;
    return &e;
  }
  std::size_t size() const { return std::min(next_.load(), capacity_); }
  // An entry whose future is published, at a random position < size(), or nullptr.
  Entry* pick(std::uint64_t r) {
    std::size_t n = size();
    if (n == 0) return nullptr;
    Entry& e = at(r % n);
    return e.future_ready.load(std::memory_order_acquire) ? &e : nullptr;
  }
  Entry& at(std::size_t i) { return chunks_[i / kChunk][i % kChunk]; }

  // The submission returned this future: accepted, or discarded if already cancelled.
  void publish(Entry& e, kairos::ScheduledFuture<void> f) {
    bool discarded = f.is_cancelled() && e.starts.load() == 0;
    e.future = std::move(f);
    e.fate.store(discarded ? Fate::discarded : Fate::accepted);
    e.future_ready.store(true, std::memory_order_release);
  }
  void accepted_without_future(Entry& e) { e.fate.store(Fate::accepted); }
  void dropped_without_future(Entry& e) { e.fate.store(Fate::discarded); }
  void maybe_dropped(Entry& e) { e.fate.store(Fate::unknown); }
  void rejected(Entry& e) { e.fate.store(Fate::rejected); }
  void failed(Entry& e) { e.fate.store(Fate::failed); }

  // Cancels through the entry's future and records a win.
  bool cancel(Entry& e, bool may_interrupt) {
    if (!e.future_ready.load(std::memory_order_acquire)) return false;
    bool won = e.future.cancel(may_interrupt);
    if (won && e.cancels_won.fetch_add(1) == 0) e.starts_at_cancel.store(e.starts.load());
    return won;
  }

  // After shutdown() with the continue policy false, or after shutdown_now(): periodic runs
  // that begin later (not through Task::run) are counted. Set once the call has returned.
  void stop_periodic() { periodic_stopped_.store(true); }
  void stop_all() { all_stopped_.store(true); periodic_stopped_.store(true); }

  ProbeCounters probes;

  // Now on the clock the scheduler runs on, in ns.
  std::int64_t now() const noexcept { return manual_ ? manual_->now_ns() : steady_ns(); }

  // ---- bodies ----------------------------------------------------------------------------
  // One run: construct at the start of the body, destroy at its end (also by exception).
  class Run {
   public:
    Run(Ledger& l, Entry& e) : l_(l), e_(e) {
      std::int64_t now = l.now();
      index_ = e.starts.fetch_add(1);
      if (e.active.fetch_add(1) != 0) e.overlaps.fetch_add(1);
      bool orphan = t_running_orphans && t_body_depth == 0;
      bool by_caller = !orphan && (t_outside_scheduler || t_body_depth > 0);
      if (orphan) e.orphan_runs.fetch_add(1);
      if (by_caller) e.caller_runs.fetch_add(1);
      if (!orphan && !by_caller) {
        if (l.all_stopped_.load() || (e.periodic() && l.periodic_stopped_.load()))
          e.starts_after_stop.fetch_add(1);
        if (e.caller_runs.load() == 0) check_not_early(now);
      }
      ++t_body_depth;
    }
    ~Run() {
      --t_body_depth;
      e_.last_end_ns.store(l_.now());
      e_.active.fetch_sub(1);
    }
    Run(const Run&) = delete;
    Run& operator=(const Run&) = delete;
    int index() const { return index_; }

   private:
    void check_not_early(std::int64_t now) {
      std::int64_t earliest = e_.earliest_ns;
      if (index_ > 0 && e_.kind == Kind::fixed_rate)
        earliest = sat_add(e_.earliest_ns, sat_mul(index_, e_.period_ns));
      else if (index_ > 0 && e_.kind == Kind::fixed_delay)
        earliest = sat_add(e_.last_end_ns.load(), e_.period_ns);
      if (now < earliest) {
        e_.early.fetch_add(1);
        std::int64_t by = earliest - now;
        std::int64_t w = e_.worst_early_ns.load();
        while (by > w && !e_.worst_early_ns.compare_exchange_weak(w, by)) {}
      }
    }
    Ledger& l_;
    Entry& e_;
    int index_;
  };

  // The callable given to the scheduler: Action is void(Entry&, int run, const stop_token*).
  template <class Action>
  struct Call {
    Ledger* ledger;
    Entry* entry;
    Probe probe;
    Action action;
    void operator()() { run(nullptr); }
    void run(const std::stop_token* st) {
      Run r(*ledger, *entry);
      action(*entry, r.index(), st);
      if (r.index() == entry->throw_on_run) {
        entry->throws.fetch_add(1);
        throw std::runtime_error("kairos stress: planned failure of task " + std::to_string(entry->id));
      }
    }
  };
  template <class Action>
  struct StoppableCall : Call<Action> {
    void operator()(std::stop_token st) { this->run(&st); }
  };

  template <class Action>
  Call<Action> body(Entry& e, Action a) {
    return Call<Action>{this, &e, Probe(probes), std::move(a)};
  }
  template <class Action>
  StoppableCall<Action> stoppable_body(Entry& e, Action a) {
    return StoppableCall<Action>{{this, &e, Probe(probes), std::move(a)}};
  }

  // ---- the end ---------------------------------------------------------------------------
  // Checks every entry (see the header). Returns the problems found, at most `max_problems`.
  std::vector<std::string> verify(const Allowances& allow, Summary& sum, std::size_t max_problems = 20) {
    std::vector<std::string> problems;
    auto bad = [&](const Entry& e, const std::string& what) {
      if (problems.size() < max_problems)
        problems.push_back(std::string(kind_name(e.kind)) + " task " + std::to_string(e.id) + ": " + what);
      else if (problems.size() == max_problems)
        problems.push_back("(more problems not shown)");
    };
    std::size_t unexplained_one_shot = 0;
    std::size_t executes_never_ran = 0;  // of those: execute() tasks (no future) that never started
    std::int64_t uncaught_min = 0, uncaught_max = 0;
    std::size_t n = size();
    for (std::size_t i = 0; i < n; ++i) {
      Entry& e = at(i);
      ++sum.submitted;
      int starts = e.starts.load();
      sum.caller_runs += e.caller_runs.load() ? 1 : 0;
      sum.orphan_runs += static_cast<std::size_t>(e.orphan_runs.load());
      sum.starts_after_stop += static_cast<std::size_t>(e.starts_after_stop.load());
      if (e.overlaps.load()) bad(e, "runs overlapped " + std::to_string(e.overlaps.load()) + " times");
      if (e.early.load())
        bad(e, "started early " + std::to_string(e.early.load()) + " times, worst by " +
                   std::to_string(e.worst_early_ns.load()) + " ns");
      if (e.active.load()) bad(e, "still running after termination");
      if (e.cancels_won.load() > 1)
        bad(e, "cancel() returned true " + std::to_string(e.cancels_won.load()) + " times");
      if (e.starts_after_stop.load() > 1)
        bad(e, std::to_string(e.starts_after_stop.load()) + " runs started after the scheduler stopped it");
      Fate fate = e.fate.load();
      switch (fate) {
        case Fate::submitting: bad(e, "its submission never returned"); continue;
        case Fate::rejected:
        case Fate::failed:
          ++(fate == Fate::rejected ? sum.rejected : sum.failed);
          if (starts) bad(e, "rejected, yet ran " + std::to_string(starts) + " times");
          continue;
        case Fate::discarded:
          ++sum.discarded;
          if (starts) bad(e, "discarded (future cancelled at once), yet ran " + std::to_string(starts) + " times");
          continue;
        case Fate::unknown:
          ++sum.unknown;
          if (starts > 1) bad(e, "ran " + std::to_string(starts) + " times");
          if (e.throws.load()) {
            ++uncaught_max;
            if (!e.caller_runs.load() && !e.orphan_runs.load()) ++uncaught_min;
          }
          continue;
        case Fate::accepted: ++sum.accepted; break;
      }
      if (e.cancels_won.load() && starts > e.starts_at_cancel.load() + 1)
        bad(e, "started " + std::to_string(starts - e.starts_at_cancel.load()) +
                   " times after a cancel() returned true");
      if (e.kind == Kind::execute) {
        if (starts > 1) bad(e, "ran " + std::to_string(starts) + " times");
        if (starts == 1) ++sum.one_shot_ran;
        if (starts == 0) {
          ++unexplained_one_shot;
          ++executes_never_ran;
        }
        if (e.throws.load()) {
          ++uncaught_max;
          if (!e.caller_runs.load() && !e.orphan_runs.load()) ++uncaught_min;
        }
        continue;
      }
      kairos::ScheduledFuture<void>& f = e.future;
      if (!f.is_done()) {
        bad(e, "its future never completed (ran " + std::to_string(starts) + " times): lost");
        continue;
      }
      bool cancelled = f.is_cancelled();
      if (cancelled) ++sum.cancelled;
      std::exception_ptr error;
      if (!cancelled) {
        try {
          f.get();
        } catch (...) {
          error = std::current_exception();
        }
      }
      bool threw_runtime = false;
      if (error) {
        try {
          std::rethrow_exception(error);
        } catch (const std::runtime_error&) {
          threw_runtime = true;
        } catch (...) {
        }
      }
      bool explained = e.cancels_won.load() > 0;
      if (cancelled && e.throws.load()) ++uncaught_max;
      if (!e.periodic()) {
        if (starts > 1) bad(e, "ran " + std::to_string(starts) + " times");
        if (!cancelled) {
          if (starts != 1) bad(e, "completed normally but ran " + std::to_string(starts) + " times");
          bool planned = e.throw_on_run == 0;
          if (planned && !threw_runtime) bad(e, "threw, but get() did not rethrow its exception");
          if (!planned && error) bad(e, "get() threw though the body did not");
          if (starts == 1) ++sum.one_shot_ran;
        } else if (!explained) {
          if (starts) bad(e, "ran, yet its future reports cancelled and no cancel() won");
          ++unexplained_one_shot;
        }
        continue;
      }
      ++sum.periodic;
      sum.periodic_runs += static_cast<std::size_t>(starts);
      if (!cancelled) {
        if (!error) {
          bad(e, "a periodic future completed normally");
        } else {
          ++sum.failures;
          if (!threw_runtime || !e.throws.load()) bad(e, "completed exceptionally, but no run threw");
          else if (starts != e.throw_on_run + 1)
            bad(e, "ran " + std::to_string(starts) + " times, though run " +
                       std::to_string(e.throw_on_run) + " threw");
          ++uncaught_max;
          if (!e.orphan_runs.load() && !e.caller_runs.load()) ++uncaught_min;
        }
        continue;
      }
      bool allowed = explained || e.orphan_runs.load() || allow.periodic_cancelled_by_policy ||
                     allow.evictions || allow.dropped_tasks;
      if (!allowed && e.throws.load()) bad(e, "a run threw, but the future reports cancelled");
      else if (!allowed) bad(e, "cancelled, though nobody cancelled it and the policies let it run");
      if (!explained) ++sum.unexplained_cancels;
    }
    sum.unexplained_cancels += unexplained_one_shot;
    if (!allow.delayed_cancelled_by_policy && !allow.evictions && unexplained_one_shot > allow.dropped_tasks) {
      problems.push_back(std::to_string(unexplained_one_shot) +
                         " one-shot tasks never ran and nobody cancelled them (" +
                         std::to_string(executes_never_ran) + " execute(), the rest with a future reporting "
                         "cancelled); shutdown_now() accounts for at most " + std::to_string(allow.dropped_tasks) + ": lost");
    }
    if (sum.starts_after_stop > allow.max_starts_after_stop) {
      problems.push_back(std::to_string(sum.starts_after_stop) +
                         " runs started after shutdown_now() (or, periodic, after shutdown()) had "
                         "returned; the scheduler's threads account for at most " +
                         std::to_string(allow.max_starts_after_stop));
    }
    if (allow.on_uncaught_calls >= 0 &&
        (allow.on_uncaught_calls < uncaught_min || allow.on_uncaught_calls > uncaught_max)) {
      problems.push_back("on_uncaught ran " + std::to_string(allow.on_uncaught_calls) +
                         " times; the failures seen need between " + std::to_string(uncaught_min) +
                         " and " + std::to_string(uncaught_max));
    }
    return problems;
  }

  // Drops the ledger's future handles (the callables live as long as a handle does).
  void release_futures() {
    for (std::size_t i = 0; i < size(); ++i) at(i).future = {};
  }
  // After release_futures() and the scheduler's destruction: every callable copy destroyed once.
  std::vector<std::string> verify_destroyed() const {
    std::vector<std::string> problems;
    if (probes.live() != 0)
      problems.push_back(std::to_string(probes.live()) + " callable copies never destroyed (" +
                         std::to_string(probes.constructed.load()) + " built, " +
                         std::to_string(probes.destroyed.load()) + " destroyed)");
    if (g_bad_probe_destroys.load())
      problems.push_back(std::to_string(g_bad_probe_destroys.load()) + " callables destroyed twice");
    return problems;
  }

 private:
  static constexpr std::size_t kChunk = 1024;

  std::size_t capacity_;
  const kairos::ManualClock* manual_;
  std::atomic<std::size_t> next_{0};
  std::vector<std::unique_ptr<Entry[]>> chunks_;
  std::atomic<bool> periodic_stopped_{false};
  std::atomic<bool> all_stopped_{false};
};

}  // namespace kairos_test
