// shard.hpp: one shard of a scheduler: its inbox, its timer queue, its leader/follower threads.
//
// Data path (one direction): producer --publish--> Inbox --drain (leader, lazily)--> take_in -->
//   TimerQueue --pop due (leader)--> batch --run (no lock)--> after_run --> re-queue or bury.
// The protocols, one file each, are listed at the top of shard.cpp; this header holds the
// producers' half (publish, the pending count) because it is inline on every submission.
//
// Counting (queue_size, capacity): pending = submitted - removes_requested - departed - started.
// Submitted moves when submit() returns, removes_requested when a pinned cancel returns (a queued
// task, or one its admission counted: shard_cancel.cpp); started counts the executions the
// runners started with no lock held (one counter per runner: starts_), departed the tasks that
// left otherwise, under mu_ (started under it, dropped, cancelled by a policy, a one-CAS cancel
// met in the inbox; a periodic re-queue counts back in). queue_size() and stats() take in what
// arrived first (take_in_arrived), so a cancel that returned before them is counted. Edges:
//   (CT1) count_departed: release store of the count + d (one writer at a time, the holder of
//         mu_); count_started: release store of the runner's own
//         count + 1 (one writer per counter: no RMW on the runner's path) -> pair with (CT2): a
//         producer that sees a count sees the task gone, with what its leaving published.
//   (CT2) pending_of: acquire loads of removes_requested_, departed_ and then the starts; pair
//         with (CT1) and the canceller's (CN4, shard_cancel.cpp). departed_ is read before the
//         starts: a periodic task's re-queue (departed_ - 1) comes after its start (+1) on the
//         same runner, so a reader that sees the - 1 sees the + 1 too, and never counts a
//         pending task out twice.
//   (CT3) admitted_ (Options::capacity): acq_rel RMWs; admissions are one total order, so two
//         producers cannot both take the last place (try_admit, admit_unchecked, publish's undo).
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <limits>
#include <memory>
#include <new>
#include <optional>
#include <thread>
#include <vector>

#include <kairos/detail/task.hpp>
#include <kairos/latency_histogram.hpp>
#include <kairos/stats.hpp>

#include "batch_clock.hpp"
#include "cache_line.hpp"
#include "completion.hpp"
#include "dcheck.hpp"
#include "engine_state.hpp"
#include "inbox.hpp"
#include "leader_wait.hpp"
#include "overshoot_estimator.hpp"
#include "restamp.hpp"
#include "thread_annotations.hpp"
#include "timer_queue.hpp"

namespace kairos::detail {

class FreedNodes;  // freed_nodes.hpp

// A task is due once the clock reaches its deadline, unless its deadline lies past the clock's
// range (never due: hours::max(), a saturated period), even on a ManualClock at its end.
inline bool is_due(const TaskBase* t, std::int64_t now) noexcept {
  return t->deadline <= now && !t->never_due();
}

// (CN3) acquire, pairs with the canceller's pin-clearing release (CN2, shard_cancel.cpp): once
// the pin is clear, the canceller is out of this shard and its kRemoved is visible.
inline void wait_unpinned(TaskBase* t) noexcept {
  // The pin is held for a few instructions (counting, one enqueue); spin, then yield.
  for (int i = 0; t->state.load(std::memory_order_acquire) & kPin; ++i) {  // (CN3)
    if (i < 1000) cpu_relax();
    else std::this_thread::yield();
  }
}

// A cancelled task the caller may free at once, under mu_: the scheduler's reference is the only
// one (no handle left: nobody can pin, await, wait on or count it any more, so the word s, read
// with acquire after the last other owner's release (RC2 with RC1), is final), not pinned, no
// awaiter to resume, and a callable with no destructor and no result (it never ran): its
// destruction runs no user code, so it needs neither the graveyard nor bury's re-read. `clear`:
// more flags the caller needs clear, tested in the same mask (take_in's kRemoved).
inline bool freeable_in_place(const TaskBase* t, std::uint32_t s, std::uint32_t clear = 0) noexcept {
  return (s & (kStateMask | kPin | kAwaited | clear)) == kCancelled && only_reference(s) &&
         (t->flags & kTrivialCallable);
}

class Shard {
 public:
  // Remove requests wake the leader every this many (submissions: LeaderWait::high_water_mask).
  static constexpr std::uint64_t kRemoveRequestHighWater = kShortHighWater;
  static constexpr std::size_t kMaxBatch = 64;        // due tasks one leader takes at once
  static constexpr std::int64_t kRetryTakeInNs = 1'000'000;  // after the queue could not grow
  static constexpr std::int64_t kPrepareAheadNs = 2'000'000;  // task_pool_prepare() only when the
                                                             // next deadline is further away
  static constexpr std::size_t kTakeInAhead = 8;  // take_in_all: nodes asked for this many tasks ahead
  static constexpr std::int64_t kHoldAheadNs = 2'000'000;  // a submission due later than this may
                                                          // be held back in the inbox (take_in_all)

  Shard(const EngineState& engine, unsigned index);
  ~Shard();

  // ---- producers and cancellers: any thread, lock-free ---------------------------------------
  Inbox& inbox() noexcept { return inbox_; }
  LeaderWait& leader_wait() noexcept { return wait_; }
  // Pending tasks (queue_size()). Without a capacity: submissions (seqs taken, less abandoned
  // ones) less cancels and departures; a re-arm in progress, whose seq is abandoned only when it
  // ends, counts for a moment. With one: admitted_, which re-arms never touch, so that the
  // capacity check counts what is pending and nothing in flight.
  std::int64_t pending() const noexcept {
    return pending_of(engine_.opt.capacity != 0 ? admitted_.load(std::memory_order_acquire)  // (CT3)
                                                : inbox_.submitted());  // (IN5): abandons read first
  }
  // Options::capacity: counts one more pending task unless `cap` are pending already.
  [[nodiscard]] bool try_admit(std::size_t cap) noexcept {
    std::uint64_t a = admitted_.load(std::memory_order_acquire);  // (CT3)
    for (;;) {
      std::int64_t p = pending_of(a);
      if (p >= 0 && static_cast<std::uint64_t>(p) >= cap) return false;
      // (CT3) acq_rel: admissions are one total order, so two producers cannot both take the
      // last place.
      if (admitted_.compare_exchange_weak(a, a + 1, std::memory_order_acq_rel, std::memory_order_acquire)) return true;
    }
  }
  // A periodic task's next run re-enters from the caller (caller_runs): counted, never refused.
  void admit_unchecked() noexcept {
    if (engine_.opt.capacity != 0) admitted_.fetch_add(1, std::memory_order_acq_rel);  // (CT3)
  }

  // A sequence number for a submission or a re-arm (IN1). The first one of each restamp period
  // (restamp.hpp) but the very first asks the leader for a restamp pass (RN1): a test and a
  // branch on the value the RMW returned, nothing more on the other 2^28 - 1.
  std::uint64_t take_seq() noexcept {
    const std::uint64_t s = inbox_.take_seq();  // (IN1)
    if (restamp_period_begins_at(s)) [[unlikely]] wait_.ask_restamp();  // (RN1)
    return s;
  }
  // Test seams (tests/core/fifo_test.cpp): the newest shard built, its sequence moved on by n
  // (a period at a time, each asking for its pass as take_seq would), and the passes run.
  static inline std::atomic<Shard*> g_newest_for_testing{nullptr};
  void skip_seqs_for_testing(std::uint64_t n) noexcept {
    while (n > 0) {  // other threads may take sequence numbers meanwhile: ask for every period begun
      const std::uint64_t chunk = std::min(n, kRestampEvery);
      if (restamp_period_begins(inbox_.skip_for_testing(chunk), chunk)) wait_.ask_restamp();  // (RN1)
      n -= chunk;
    }
  }
  std::uint64_t restamps_for_testing() const noexcept { return restamps_.load(std::memory_order_relaxed); }
  std::uint64_t seqs_taken_for_testing() const noexcept { return inbox_.seqs_taken(); }
  // Test seams (tests/engine/shard_leader_test.cpp): submissions the leader drained, tasks the
  // inbox holds back (take_in_all), remove requests posted (pinned cancels of queued tasks).
  std::uint64_t drained_for_testing() const noexcept { return inbox_.drained(); }
  // Test seam: the inbox's complete passes that saw items so far (a confirm each). Under the lock.
  std::uint64_t seen_complete_passes_for_testing() {
    Lock lk(mu_);
    return inbox_.seen_complete_passes();
  }
  std::size_t held_for_testing() const KAIROS_EXCLUDES(mu_);  // shard.cpp
  std::uint64_t removes_sent_for_testing() const noexcept { return inbox_.removes_sent(); }
  // Test seam (tests/engine/shard_leader_test.cpp): called by every leader of the process after
  // its pass's drain, before its pop (lead()), under the shard lock. A test switch (relaxed: the
  // test sets it before it makes the pass happen, and the handshake it does inside orders the rest).
  static inline std::atomic<void (*)()> g_before_pop_for_testing{nullptr};
  // Test seam (shard_leader_test.cpp): -1 (the default) asks the task pool whether it grows when
  // the leader chooses the high-water interval (wait_for); 0 or 1 answers for it.
  static inline std::atomic<int> g_pool_grows_for_testing{-1};

  // Enqueues t (the caller's scheduler reference) with sequence number seq, and wakes the leader
  // if t is due before the deadline it waits for. std::bad_alloc (t released) if it cannot.
  // True: it woke a poll-mode loop whose Options::on_wake the caller owes (LoopWake::run_callback,
  // once it holds nothing of kairos).
  [[nodiscard, gnu::always_inline]] bool publish(TaskBase* t, std::uint64_t seq, bool never) {
    t->seq = static_cast<std::uint32_t>(seq);  // the order stamp (seq_before)
    t->never = never;
    if (t->flags & kRearmable) {  // not yet re-armed: the latest key is the filed one
      auto* r = static_cast<RearmBase*>(t);
      r->latest_deadline = t->deadline;
      r->latest_seq = t->seq;
      r->latest_never = t->never;
    }
    const std::int64_t deadline = t->deadline;  // once enqueued, t may run and be re-queued
    const bool far = t->flags & kFarStamp;        // a far timer: its deadline is the leader's to take
    if (!inbox_.push(t)) [[unlikely]] publish_failed(t);
    const bool callback_owed = far ? wait_.notify_far(far_slack_ns_) : wait_.notify_earlier(never ? kMaxNs : deadline);
    const std::uint64_t mask = wait_.high_water_mask();  // the line LW3 just read
    if ((seq & mask) == mask) wait_.wake();  // high-water: drain in bulk
    return callback_owed;
  }
  // publish()'s push found no memory: the seq is given back, t released; throws std::bad_alloc.
  [[noreturn, gnu::cold, gnu::noinline]] void publish_failed(TaskBase* t) {
    give_back_seq();
    release(t);
    throw std::bad_alloc();
  }
  // A seq taken by a submission that is not enqueued after all (no memory, or it saw the shutdown
  // after its seq: Engine::submit, RS2), and its admission under Options::capacity (a submission
  // takes its place before its seq). The lifecycle's count read may have seen the seq: the
  // abandon (IN4) settles it.
  [[gnu::cold, gnu::noinline]] void give_back_seq() noexcept {
    inbox_.abandon();
    if (engine_.opt.capacity != 0) admitted_.fetch_sub(1, std::memory_order_acq_rel);  // (CT3)
    wait_.wake();  // drain_all() may be waiting for this seq
  }
  void count_rejected() noexcept { rejected_.fetch_add(1, std::memory_order_relaxed); }
  // The canceller's half (SchedulerCore::on_cancelled, shard_cancel.cpp): t is kCancelled|kPin.
  void on_cancelled(TaskBase* t, bool queued) noexcept;
  // The re-armer's half (SchedulerCore::rearm_locked, shard_rearm.cpp): t is held in kRearming.
  // True: a poll-mode loop was woken and its Options::on_wake is owed (run after the unlock).
  [[nodiscard]] bool rearm_locked(TaskBase* t, std::int64_t deadline, bool never) noexcept;

  // ---- the shard's threads -------------------------------------------------------------------
  void add_thread() KAIROS_EXCLUDES(mu_);  // before a thread starts (index = the count before; shard_retire.cpp)
  void thread_not_started() noexcept KAIROS_EXCLUDES(mu_);
  void run_worker(unsigned index) KAIROS_EXCLUDES(mu_);  // a worker thread's life; returns when it must exit (shard_leader.cpp)

  // ---- poll mode (shard_poll.cpp): the owner's thread is the shard's one runner ---------------
  // Runs the tasks due at `now` inline, at most `limit` taken from the queue; returns how many
  // executions started. `retired`: this call found the shard finished after a shutdown and
  // cancelled what was left (once per shard; the engine then counts it like an exiting thread).
  // A poll that finds another poll of this shard in progress (a task calling poll()) returns 0.
  std::size_t poll(std::int64_t now, std::size_t limit, bool& retired) KAIROS_EXCLUDES(mu_);
  // The earliest deadline in the timer queue after taking in the inbox; kMaxNs if none is due
  // ever (empty, or only never-due tasks).
  // Arms the loop's wake-up there (Scheduler::next_deadline, shard_poll.cpp).
  std::int64_t earliest_deadline() KAIROS_EXCLUDES(mu_);
  // Takes in every submission counted before the call (queue_size, stats, the remove-on-cancel
  // setter: a cancel made before them is counted). shard.cpp.
  void take_in_arrived() noexcept KAIROS_EXCLUDES(mu_);
  void lower_wake(std::int64_t deadline) noexcept { wait_.lower(deadline); }

  // ---- lifecycle calls: any thread; each takes mu_ (shard_retire.cpp, shard.cpp) ---------------
  void after_racing_shutdown() KAIROS_EXCLUDES(mu_);  // a periodic re-queue that saw shutdown only after its enqueue (RS5)
  [[nodiscard]] bool make_room() KAIROS_EXCLUDES(mu_);  // discard_oldest: cancels the earliest pending task
  void apply_shutdown() KAIROS_EXCLUDES(mu_);  // shutdown(), and a policy turned off after it
  void take_pending(std::vector<TaskBase*>& orphans) KAIROS_EXCLUDES(mu_);  // shutdown_now()
  void cancel_pending_in_place() noexcept KAIROS_EXCLUDES(mu_);  // the destructor, out of memory
  void cancel_leftovers_if_dead() KAIROS_EXCLUDES(mu_);  // the destructor, after the threads are gone
  [[nodiscard]] bool idle(std::uint64_t submitted, std::uint64_t removes, std::int64_t now)
      KAIROS_EXCLUDES(mu_);  // wait_idle()
  ShardStats stats() const KAIROS_EXCLUDES(mu_);
  void wake_leader() noexcept { wait_.wake(); }  // the leader re-examines its state and queue
  std::size_t purge() KAIROS_EXCLUDES(mu_);  // purge(): drops retained cancelled tasks (shard_hooks.cpp)
  unsigned active() const KAIROS_EXCLUDES(mu_);  // threads of this shard holding a batch (active_count)
  std::uint64_t completed() const noexcept;  // executions finished (completed_task_count)

 private:
  struct Slot {
    TaskBase* task;
    std::int64_t deadline;  // the deadline it was due at (a periodic task's moves on)
    std::int64_t start;     // when it started (lateness), if recorded
    bool started_at_pop;    // a stoppable task: started under mu_, alone in its batch
    bool started;
    bool refile = false;    // re-armed after it was popped: back to the queue
  };
  enum class Start { started, refile, gone };
  // Graveyard entries: the task pointer, low bit set if its callable must be destroyed too.
  static constexpr std::uintptr_t kDropCallable = 1;

  // Who holds mu_, checked by clang (KAIROS_THREAD_SAFETY_ANALYSIS, thread_annotations.hpp):
  // KAIROS_REQUIRES(mu_) on a function: its caller holds mu_ (most take the holder's Lock&, to
  // release it while they wait or bury: lk.unlock(mu_) / lk.lock(mu_)); KAIROS_EXCLUDES(mu_):
  // it takes mu_ itself, or runs user code, which never runs under mu_. The fields mu_ guards
  // are marked KAIROS_GUARDED_BY(mu_) below.
  // shard_leader.cpp, in the order of the data path:
  std::size_t lead(Lock& lk, Slot* batch, std::vector<TaskBase*>& grave) KAIROS_REQUIRES(mu_);
  bool must_exit(Lock& lk) const noexcept KAIROS_REQUIRES(mu_);
  bool inbox_caught_up() const noexcept KAIROS_REQUIRES(mu_);  // reads the inbox's leader half
  // The inbox's two callbacks for a drain under mu_: confirmed submissions into the timer queue,
  // requests (remove, refile) applied. The inbox calls them back at once, on this thread.
  auto take_in_callback(Lock& lk) KAIROS_REQUIRES(mu_) {
    return [this, &lk](std::span<TaskBase* const> confirmed) {
      mu_.assert_held();
      return take_in_all(lk, confirmed);
    };
  }
  auto request_callback(Lock& lk) KAIROS_REQUIRES(mu_) {
    return [this, &lk](TaskBase* t, std::uintptr_t tag) {
      mu_.assert_held();
      apply_request(lk, t, tag);
    };
  }
  // hold_far: the leader's own drains (lead, arm_and_check) may hold the newest far-future
  // submissions back (take_in_all); every other drain takes everything in.
  void drain(Lock& lk, bool hold_far = false) KAIROS_REQUIRES(mu_);
  // The scheduler is active: only then may the leader wait with items seen and not yet confirmed
  // (Inbox::needs_confirm_pass); after a shutdown every drain takes everything in.
  bool scheduler_active() const noexcept { return engine_.state() == RunState::kActive; }
  bool drain_all(Lock& lk) KAIROS_REQUIRES(mu_);  // false: stopped early, the timer queue could not grow (inbox.hpp)
  // How many of the span's last tasks may wait in the inbox (take_in_all), and their earliest
  // deadline into held_earliest_.
  std::size_t count_holdable(std::span<TaskBase* const> confirmed) KAIROS_REQUIRES(mu_);
  // drain_for_leader's may_wait (Inbox): the items of the drain's last complete pass may stay
  // unconfirmed while the leader waits; records what the wait must heed (unconfirmed_far_,
  // unconfirmed_earliest_).
  bool unconfirmed_may_wait(std::span<TaskBase* const> seen) KAIROS_REQUIRES(mu_);
  // The earliest deadline of the tasks waiting in the inbox on purpose: held back, or seen and
  // left unconfirmed by a drain that ended at a pass that may wait (kMaxNs: none, or none ever due).
  std::int64_t waiting_earliest() const noexcept KAIROS_REQUIRES(mu_) {
    std::int64_t e = inbox_.held() != 0 ? held_earliest_ : kMaxNs;
    if (inbox_.has_unconfirmed()) e = std::min(e, unconfirmed_earliest_);
    return e;
  }
  // When the leader must wake for them: kHoldAheadNs before the earliest is due (kMaxNs: never).
  std::int64_t held_wake() const noexcept KAIROS_REQUIRES(mu_) {
    const std::int64_t e = waiting_earliest();
    return e == kMaxNs ? kMaxNs : e - kHoldAheadNs;  // each was due after now + kHoldAheadNs: no underflow
  }
  // One of them is due at `now` (the leader was late: it takes them in before it pops).
  // (kMaxNs is "never due", not a time: a ManualClock advanced to its end must not find it due.)
  bool held_due(std::int64_t now) const noexcept KAIROS_REQUIRES(mu_) {
    const std::int64_t e = waiting_earliest();
    return e != kMaxNs && e <= now;
  }
  std::size_t take_in_all(Lock& lk, std::span<TaskBase* const> confirmed) KAIROS_REQUIRES(mu_);
  // A far timer (Options::far_timer_slack) not given its deadline yet gets it: stamp_now_ (a
  // clock read) + its delay (stamp_far, shard_leader.cpp). Anything else: nothing (the test
  // inline: every take-in makes it).
  void stamp_if_far(TaskBase* t) noexcept KAIROS_REQUIRES(mu_) {
    if (t->flags & kFarStamp) stamp_far(t);
  }
  void stamp_far(TaskBase* t) noexcept KAIROS_REQUIRES(mu_);
  [[nodiscard]] bool reserve_graveyard(std::size_t more) noexcept KAIROS_REQUIRES(mu_);
  // `freed` keeps the memory of the nodes it frees in place, for take_in_all to free in batches.
  void take_in(Lock& lk, TaskBase* t, std::uint32_t s, FreedNodes& freed) KAIROS_REQUIRES(mu_);
  void apply_request(Lock& lk, TaskBase* t, std::uintptr_t tag) KAIROS_REQUIRES(mu_);
  // shard_restamp.cpp: the order stamps renumbered before they leave the modular window.
  // Before anything compares order stamps under mu_ (the leader's pass, a poll, next_deadline,
  // every drain): the pass, if a producer asked for it (RN2) or the last one could not run.
  void restamp_if_due(Lock& lk) KAIROS_REQUIRES(mu_) {
    if (wait_.take_restamp_request() || restamp_due_) [[unlikely]] restamp(lk);
  }
  void restamp(Lock& lk) KAIROS_REQUIRES(mu_);
  // `now`: the clock read of the pass that arms (LeaderWait::arm, notify_far).
  [[nodiscard]] bool arm_and_check(Lock& lk, std::int64_t deadline, std::int64_t now) KAIROS_REQUIRES(mu_);
  // Held on entry and exit, released while it waits.
  // drain_by_due != kMinNs: `deadline` only ends the wait for a drain (far timers, lead()); the
  // earliest deadline is drain_by_due.
  std::int64_t wait_for(Lock& lk, std::uint32_t w, std::int64_t deadline, bool forever, std::vector<TaskBase*>& grave,
                        std::int64_t drain_by_due = kMinNs) KAIROS_REQUIRES(mu_);
  std::size_t pop_due(Lock& lk, std::int64_t now, Slot* batch, std::size_t max) KAIROS_REQUIRES(mu_);
  bool start_stoppable(Lock& lk, TaskBase* t) KAIROS_REQUIRES(mu_);
  // The batch loop of both runners (run_worker, poll): held on entry and exit, released while the
  // batch runs. Returns the executions started.
  std::size_t run_batch(Lock& lk, Slot* batch, std::size_t n, unsigned runner, std::vector<TaskBase*>& grave)
      KAIROS_REQUIRES(mu_);
  // What a batch's runs read of the options, once per batch (not re-read after each callable).
  struct RunMode {
    bool time_starts;  // the lateness histogram's start times (not in poll mode: the poll's now)
    bool hooked;       // Options' hooks (run_hooked)
  };
  void run_task(Slot& slot, BatchClock& clock, unsigned runner, RunMode mode) KAIROS_EXCLUDES(mu_);  // run_once
  void count_ran(const Slot& slot) KAIROS_REQUIRES(mu_);  // ran_ and the lateness of one started run
  void count_ran(std::span<const std::int64_t> lateness) KAIROS_REQUIRES(mu_);  // ... of a batch's plain runs
  bool mark_plain_queued(TaskBase* t, std::uint32_t& s) noexcept;  // take_in's common case (under mu_; touches no field it guards)
  static void prefetch_task_for_write(const TaskBase* t) noexcept;  // take_in_all, kTakeInAhead tasks ahead
  void run_hooked(TaskBase* t, std::int64_t deadline) KAIROS_EXCLUDES(mu_);  // run_task with Options' hooks (shard_hooks.cpp)
  // What run_once (completion.hpp) reports a failure to: on_uncaught, periodic_failures_.
  RunContext run_context() noexcept { return {engine_.on_uncaught.get(), &periodic_failures_}; }
  void after_run(Lock& lk, const Slot& slot, bool taken) KAIROS_REQUIRES(mu_);
  // shard_poll.cpp:
  void drain_through(Lock& lk, std::uint64_t counted, std::uint64_t seq_bound,
                     int max_rounds = std::numeric_limits<int>::max()) KAIROS_REQUIRES(mu_);
  std::int64_t effective_earliest(Lock& lk) KAIROS_REQUIRES(mu_);
  // shard_rearm.cpp. The common case, a task that cannot be re-armed, is decided here inline.
  [[nodiscard]] Start try_start(TaskBase* t) noexcept {
    if (t->flags & kRearmable) return try_start_rearmable(t);
    return transition(t, kPending, kRunning) ? Start::started : Start::gone;
  }
  // t, just out of the timer queue: true if it went back in line at its newest key (or was
  // dropped after shutdown); false: it was not re-armed since it was filed.
  [[nodiscard]] bool refiled_at_newest(Lock& lk, TaskBase* t) KAIROS_REQUIRES(mu_) {
    return (t->flags & kRearmable) && refile_rearmable_at_newest(lk, t);
  }
  Start try_start_rearmable(TaskBase* t) noexcept;
  bool refile_rearmable_at_newest(Lock& lk, TaskBase* t) KAIROS_REQUIRES(mu_);
  void refile(Lock& lk, TaskBase* t) KAIROS_REQUIRES(mu_);
  [[nodiscard]] bool refiled_after_shutdown(Lock& lk, TaskBase* t) KAIROS_REQUIRES(mu_);
  bool retained_after_rearm(TaskBase* t) noexcept KAIROS_REQUIRES(mu_);  // t's filed key stays put
  TaskBase* head_at_newest_key(Lock& lk) KAIROS_REQUIRES(mu_);
  static std::optional<FiledKey> newest_key(TaskBase* t) noexcept;  // any thread: a snapshot
  // shard_retire.cpp:
  void drop(Lock& lk, TaskBase* t, bool drop_callable) KAIROS_REQUIRES(mu_);
  void drop_cancelled(Lock& lk, TaskBase* t, bool drop_callable = false) KAIROS_REQUIRES(mu_);
  [[nodiscard]] bool cancel_in_batch(Lock& lk, TaskBase* t) KAIROS_REQUIRES(mu_);
  void apply_policies(Lock& lk) KAIROS_REQUIRES(mu_);
  bool allowed_after_shutdown(Lock& lk, TaskBase* t, std::int64_t now) const noexcept KAIROS_REQUIRES(mu_);
  void cancel_leftovers(Lock& lk) KAIROS_REQUIRES(mu_);
  // shard.cpp: the graveyard.
  void bury_later(TaskBase* t, bool drop_callable = false) KAIROS_REQUIRES(mu_) {
    graveyard_.push_back(reinterpret_cast<TaskBase*>(reinterpret_cast<std::uintptr_t>(t) |
                                                     (drop_callable ? kDropCallable : 0)));
  }
  void unlock_and_bury(Lock& lk, std::vector<TaskBase*>& grave) KAIROS_RELEASE(mu_);
  static void bury(std::vector<TaskBase*>& grave) noexcept;  // no lock held: releases references
  // `in` tasks counted in, less cancels and departures. (CT2) acquire, pairs with (CT1) in
  // count_departed and the canceller's count (CN4): a task counted out is seen gone, with what its
  // leaving published.
  std::int64_t pending_of(std::uint64_t in) const noexcept {
    std::int64_t p = static_cast<std::int64_t>(in - removes_requested_.load(std::memory_order_acquire)) -
                     departed_.load(std::memory_order_acquire);  // (CT2) departed_ first: see "Counting"
    for (std::size_t r = 0; r < runners_; ++r) p -= starts_[r].n.load(std::memory_order_acquire);  // (CT2)
    return p;
  }
  // (CT1) release: pairs with (CT2): a producer that sees this count sees the task gone. One
  // writer at a time (the holder of mu_): a load and a store, no locked RMW (the leader counts
  // out every one-CAS cancel it meets in the inbox here).
  void count_departed(std::int64_t d) noexcept KAIROS_REQUIRES(mu_) {
    departed_.store(departed_.load(std::memory_order_relaxed) + d, std::memory_order_release);
  }
  // An execution runner `runner` started with no lock held (run_task). Only that runner writes
  // its counter (poll mode: the poller of the moment, one at a time under polling_ and mu_).
  void count_started(unsigned runner) noexcept {
    std::atomic<std::int64_t>& c = starts_[runner].n;
    c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_release);  // (CT1)
  }
  // ran_, cancelled_: one writer at a time, the holder of mu_ (no RMW); read without it.
  void bump(std::atomic<std::uint64_t>& c, std::uint64_t by = 1) noexcept KAIROS_REQUIRES(mu_) {
    c.store(c.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
  }

  const EngineState& engine_;
  const unsigned index_;
  // Options::far_timer_slack in ns (read by far timers' producers: publish, notify_far).
  const std::int64_t far_slack_ns_ = engine_.opt.far_timer_slack.count();
  // Per runner (batches_'s index), on lines of their own: the executions it started
  // (count_started). The pointer and the count never change after construction: read-only here.
  struct alignas(kCacheLine) StartCount {
    std::atomic<std::int64_t> n{0};
  };
  const std::size_t runners_;
  const std::unique_ptr<StartCount[]> starts_;

  // -- lock-free: own lines (inbox.hpp, leader_wait.hpp) -------------------------------------
  // inbox_'s producer half is lock-free; its leader half (drain*, the unconfirmed items) is
  // called under mu_ only (not checked: inbox_ itself is not guarded).
  Inbox inbox_;
  LeaderWait wait_;
  // -- written by cancellers and rejected producers --------------------------------------------
  alignas(kCacheLine) std::atomic<std::uint64_t> admitted_{0};  // Options::capacity: producers (try_admit)
  alignas(kCacheLine) std::atomic<std::uint64_t> removes_requested_{0};  // cancels under remove-on-cancel
  std::atomic<std::uint64_t> rejected_{0};
  // -- guarded by mu_ (atomics where others read them without it) -----------------------------
  alignas(kCacheLine) mutable Mutex mu_;
  std::condition_variable followers_cv_;  // waited on under mu_ (a follower for the leadership)
  TimerQueue queue_ KAIROS_GUARDED_BY(mu_);
  std::vector<TaskBase*> running_stoppable_ KAIROS_GUARDED_BY(mu_);  // executions shutdown_now must ask to stop
  // Per runner (a worker, or the poller: batches_[0]): the batch it popped and runs now, the tasks
  // not started yet still kPending (a cancel, discard_oldest or shutdown_now can take them);
  // nullptr where shutdown_now took one (run_batch).
  std::vector<std::vector<TaskBase*>> batches_ KAIROS_GUARDED_BY(mu_);
  std::vector<TaskBase*> graveyard_ KAIROS_GUARDED_BY(mu_);
  bool has_leader_ KAIROS_GUARDED_BY(mu_) = false;
  bool polling_ KAIROS_GUARDED_BY(mu_) = false;  // poll mode: a poll() holds the runner's role (also while unlocked)
  bool pending_taken_ KAIROS_GUARDED_BY(mu_) = false;  // shutdown_now() has taken this shard's pending tasks
  unsigned running_ KAIROS_GUARDED_BY(mu_) = 0;  // batches popped and not yet finished
  unsigned threads_alive_ KAIROS_GUARDED_BY(mu_) = 0;
  // The restamp pass (shard_restamp.cpp): one asked for could not run yet (no memory), and how
  // many ran (tests).
  bool restamp_due_ KAIROS_GUARDED_BY(mu_) = false;
  // The leader's own drain is running (drain(lk, true)): take_in_all may hold tasks back.
  bool hold_far_ KAIROS_GUARDED_BY(mu_) = false;
  std::int64_t hold_horizon_ KAIROS_GUARDED_BY(mu_) = kMinNs;  // hold only tasks due after this (a drain's
                                                               // clock read, at its first confirm; kMinNs: not yet)
  // The earliest deadline of the tasks the inbox holds back (inbox_.held()), kMaxNs if none ever due.
  std::int64_t held_earliest_ KAIROS_GUARDED_BY(mu_) = kMaxNs;
  // The items the leader's last drain left unconfirmed on purpose (unconfirmed_may_wait): the
  // earliest deadline among those that are not far timers (kMaxNs: none), and whether any is a
  // far timer (then the next wait ends within the slack, as after a stamp: far_seen_). Kept
  // (an earlier bound, safe) while a flood leaves items unconfirmed; reset once none is.
  std::int64_t unconfirmed_earliest_ KAIROS_GUARDED_BY(mu_) = kMaxNs;
  bool unconfirmed_far_ KAIROS_GUARDED_BY(mu_) = false;
  // The timer queue's size when the running drain began (unconfirmed_may_wait: kBehind).
  std::size_t queued_at_drain_ KAIROS_GUARDED_BY(mu_) = 0;
  static constexpr std::size_t kBehind = 4096;
  // Far timers: a take-in since the leader's last wait gave one its deadline (stamp_far), so
  // the next wait ends within far_slack_ns_ of a clock read after that pass's drain (lead()).
  bool far_seen_ KAIROS_GUARDED_BY(mu_) = false;
  std::int64_t stamp_now_ KAIROS_GUARDED_BY(mu_) = kMinNs;  // stamp_if_far's clock read (kMinNs: not yet)
  std::atomic<std::uint64_t> restamps_{0};  // written under mu_, read by tests without it
  // Written under mu_ (count_departed, bump: KAIROS_REQUIRES(mu_)), read without it.
  std::atomic<std::int64_t> departed_{0};  // see "Counting"
  std::atomic<std::uint64_t> ran_{0};
  std::atomic<std::uint64_t> far_timers_{0};  // stamp_far's count (a statistic: bump, mu_)
  std::atomic<std::uint64_t> cancelled_{0};
  std::atomic<std::uint64_t> periodic_failures_{0};  // the runners, no lock: a relaxed RMW (run_once)
  LatencyHistogram lateness_ KAIROS_GUARDED_BY(mu_);  // after_run records, stats() copies
  AdaptiveWindow adaptive_{engine_.opt.wait};  // the spin window: leader-written (wait_for, mu_ released)
};

// The lines written by producers, by cancellers and under mu_ do not share a line.
static_assert(alignof(Shard) == kCacheLine);

}  // namespace kairos::detail
