// shard.hpp: one shard of a scheduler: its inbox, its timer queue, its leader/follower threads.
//
// Data path (one direction): producer --publish--> Inbox --drain (leader, lazily)--> accept -->
//   TimerQueue --pop due (leader)--> batch --run (no lock)--> after_run --> re-queue or bury.
//
// Lazy draining. The leader never chases producers: it drains when it wakes — for a deadline,
// for a submission due before the deadline it waits for (leader_wait.hpp), when the inbox
// passes kDrainEvery items, or when a lifecycle call (wait_idle, stats, shutdown, a policy
// setter, discard_oldest) asks. An awake leader reads no line that producers write per
// submission except once per wait (the count read of the wait protocol).
//
// Cancel without a second message. A task the leader has not accepted (no kQueued) is cancelled
// by its state word alone; the leader drops the node when it drains it. Only a cancel that sees
// kQueued posts a remove request, and only under remove-on-cancel.
//
// Locks. `mu_` guards the timer queue, the batches (staged_), and the fields marked below.
// Producers and cancellers never take it. No user code runs under it: a task reference or a
// callable that must go while mu_ is held is put in graveyard_, and buried (released) by the
// thread that holds mu_ right after it unlocks.
//
// Counting (queue_size, capacity): pending = submitted - removes_requested - out. Submitted and
// removes_requested move when submit()/cancel() return; out counts the tasks that left
// otherwise (started, dropped, cancelled by a policy; a periodic re-queue counts back in).
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <new>
#include <optional>
#include <vector>

#include <kairos/detail/task.hpp>
#include <kairos/latency_histogram.hpp>
#include <kairos/stats.hpp>

#include "batch_clock.hpp"
#include "engine_state.hpp"
#include "inbox.hpp"
#include "leader_wait.hpp"
#include "overshoot_estimator.hpp"
#include "timer_queue.hpp"

namespace kairos::detail {

class Shard {
 public:
  static constexpr std::uint64_t kDrainEvery = 8192;  // inbox high-water mark (power of two)
  static constexpr std::size_t kMaxBatch = 64;        // due tasks one leader takes at once
  static constexpr std::int64_t kRetryAcceptNs = 1'000'000;  // after the queue could not grow
  static constexpr std::int64_t kPrepareAheadNs = 2'000'000;  // task_pool_prepare() only when the
                                                             // next deadline is further away

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
    return pending_of(engine_.opt.capacity != 0 ? admitted_.load(std::memory_order_acquire)
                                                : inbox_.seqs_taken() - inbox_.abandoned());
  }
  // Options::capacity: counts one more pending task unless `cap` are pending already.
  bool try_admit(std::size_t cap) noexcept {
    std::uint64_t a = admitted_.load(std::memory_order_acquire);
    for (;;) {
      std::int64_t p = pending_of(a);
      if (p >= 0 && static_cast<std::uint64_t>(p) >= cap) return false;
      // (CN3) acq_rel: admissions are one total order, so two producers cannot both take the
      // last place.
      if (admitted_.compare_exchange_weak(a, a + 1, std::memory_order_acq_rel, std::memory_order_acquire)) return true;
    }
  }
  // A periodic task's next run re-enters from the caller (caller_runs): counted, never refused.
  void admit_unchecked() noexcept {
    if (engine_.opt.capacity != 0) admitted_.fetch_add(1, std::memory_order_acq_rel);  // (CN3)
  }

  // Enqueues t (the caller's scheduler reference) with sequence number seq, and wakes the leader
  // if t is due before the deadline it waits for. std::bad_alloc (t released) if it cannot.
  void publish(TaskBase* t, std::uint64_t seq, bool never) {
    t->seq = static_cast<std::uint32_t>(seq);  // the order stamp (seq_before)
    t->never = never;
    if (t->flags & kRearmable) {  // not yet re-armed: the latest key is the filed one
      auto* r = static_cast<RearmBase*>(t);
      r->latest_deadline = t->deadline;
      r->latest_seq = t->seq;
      r->latest_never = t->never;
    }
    const std::int64_t deadline = t->deadline;  // once enqueued, t may run and be re-queued
    if (!inbox_.push(t)) {
      inbox_.abandon();
      if (engine_.opt.capacity != 0) admitted_.fetch_sub(1, std::memory_order_acq_rel);  // (CN3)
      wait_.kick();  // drain_all() may be waiting for this seq
      release(t);
      throw std::bad_alloc();
    }
    wait_.notify_earlier(never ? kMaxNs : deadline);
    if ((seq & (kDrainEvery - 1)) == kDrainEvery - 1) wait_.kick();  // high-water: drain in bulk
  }
  void count_rejected() noexcept { rejected_.fetch_add(1, std::memory_order_relaxed); }
  // The canceller's half (SchedulerCore::on_cancelled): t is kCancelled|kPin.
  void on_cancelled(TaskBase* t, bool queued) noexcept;
  // The re-armer's half (SchedulerCore::rearm_locked): t is held in kRearming.
  void rearm_locked(TaskBase* t, std::int64_t deadline, bool never) noexcept;

  // ---- the shard's threads -------------------------------------------------------------------
  void add_thread();       // before a thread starts (index = the count before)
  void thread_not_started() noexcept;
  void run_worker(unsigned index);  // a worker thread's life; returns when it must exit

  // ---- poll mode (shard_poll.cpp): the owner's thread is the shard's one runner ---------------
  // Runs the tasks due at `now` inline, at most `limit` taken from the queue; returns how many
  // executions started. `retired`: this call found the shard finished after a shutdown and
  // settled it (once per shard; the engine then counts it like an exiting thread). A poll that
  // finds another poll of this shard in progress (a task calling poll()) returns 0.
  std::size_t poll(std::int64_t now, std::size_t limit, bool& retired);
  // The earliest deadline in the timer queue after taking in the inbox; kMaxNs if none is due
  // ever (empty, or only never-due tasks).
  // Arms the loop's wake-up there (Scheduler::next_deadline, shard_poll.cpp).
  std::int64_t earliest_deadline();
  void lower_wake(std::int64_t deadline) noexcept { wait_.lower(deadline); }

  // ---- lifecycle calls: any thread; each takes mu_ ----------------------------------------------
  void after_racing_shutdown();      // a submission that saw shutdown only after its enqueue
  bool make_room();                  // discard_oldest: cancels the earliest pending task
  void apply_shutdown();             // shutdown(), and a policy turned off after it
  void take_pending(std::vector<TaskBase*>& orphans);  // shutdown_now()
  void cancel_pending_in_place() noexcept;            // the destructor, out of memory
  void settle_if_dead();             // the destructor, after the threads are gone
  bool idle(std::uint64_t submitted, std::uint64_t removes, std::int64_t now);  // wait_idle()
  ShardStats stats() const;
  void kick() noexcept { wait_.kick(); }
  void notify_state_changed();       // lifecycle: re-examine must_exit
  std::size_t purge();              // purge(): drops retained cancelled tasks (shard_hooks.cpp)
  unsigned active() const;           // threads of this shard holding a batch (active_count)
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
  using Lock = std::unique_lock<std::mutex>;
  // Graveyard entries: the task pointer, low bit set if its callable must be destroyed too.
  static constexpr std::uintptr_t kDropCallable = 1;

  std::size_t lead(Lock& lk, Slot* batch, std::vector<TaskBase*>& grave);
  void wait_for(Lock& lk, std::uint32_t w, std::int64_t deadline, bool forever, std::vector<TaskBase*>& grave);
  bool arm_and_check(std::int64_t deadline);
  std::size_t pop_due(std::int64_t now, Slot* batch, std::size_t max);
  bool must_exit() const noexcept;
  bool inbox_settled() const noexcept;
  void drain();
  bool drain_all();  // false: stopped early, the timer queue could not grow (inbox.hpp)
  void drain_through(std::uint64_t counted, std::uint64_t seq_bound);
  std::int64_t effective_earliest();
  std::size_t accept_all(std::span<TaskBase* const> confirmed);
  bool reserve_graveyard(std::size_t more) noexcept;
  void accept(TaskBase* t);
  void request(TaskBase* t, std::uintptr_t tag);
  void refile(TaskBase* t);
  Start try_start(TaskBase* t) noexcept;
  bool refiled_at_newest(TaskBase* t);
  bool refiled_after_shutdown(TaskBase* t);
  bool retained_after_rearm(TaskBase* t) noexcept;
  TaskBase* settled_head();
  // A task's place in the queue's order: (deadline, never, seq), as filed_before compares them.
  struct Key {
    std::int64_t deadline = 0;
    std::uint32_t seq = 0;
    bool never = false;
    bool operator<(const Key& o) const noexcept { return key_before(deadline, never, seq, o.deadline, o.never, o.seq); }
  };
  static std::optional<Key> newest_key(TaskBase* t) noexcept;
  bool start_stoppable(TaskBase* t);
  void run_task(Slot& slot, BatchClock& clock);
  void finish_run(TaskBase* t, bool ok);
  void run_hooked(TaskBase* t, std::int64_t deadline);  // run_task with Options' hooks
  void after_run(const Slot& slot, bool taken);
  void finish_one_shot(TaskBase* t, bool ok);
  void fail_periodic(TaskBase* t);
  void next_deadline(TaskBase* t) noexcept;
  bool allowed_after_shutdown(TaskBase* t, std::int64_t now) const noexcept;
  void apply_policies();
  void settle_after_exit();
  void drop(TaskBase* t, bool drop_callable);
  void drop_cancelled(TaskBase* t, bool drop_callable = false);
  void bury_later(TaskBase* t, bool drop_callable = false) {
    graveyard_.push_back(reinterpret_cast<TaskBase*>(reinterpret_cast<std::uintptr_t>(t) |
                                                     (drop_callable ? kDropCallable : 0)));
  }
  void unlock_and_bury(Lock& lk, std::vector<TaskBase*>& grave);
  static void bury(std::vector<TaskBase*>& grave) noexcept;
  // `in` tasks counted in, less cancels and departures. (CN2) acquire, pairs with (CN1) in
  // add_out and the canceller's count: a task counted out is seen gone, with what its leaving
  // published.
  std::int64_t pending_of(std::uint64_t in) const noexcept {
    return static_cast<std::int64_t>(in - removes_requested_.load(std::memory_order_acquire)) -
           out_.load(std::memory_order_acquire);
  }
  // (CN1) release: pairs with (CN2): a producer that sees this count sees the task gone.
  void add_out(std::int64_t d) noexcept { out_.fetch_add(d, std::memory_order_release); }
  static void bump(std::atomic<std::uint64_t>& c) noexcept {  // mu_ held: one writer
    c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }

  const EngineState& engine_;
  const unsigned index_;

  // -- lock-free: own lines (inbox.hpp, leader_wait.hpp) -------------------------------------
  Inbox inbox_;
  LeaderWait wait_;
  // -- written by cancellers and rejected producers --------------------------------------------
  alignas(64) std::atomic<std::uint64_t> admitted_{0};  // Options::capacity: producers (try_admit)
  alignas(64) std::atomic<std::uint64_t> removes_requested_{0};  // cancels under remove-on-cancel
  std::atomic<std::uint64_t> rejected_{0};
  // -- guarded by mu_ (atomics where others read them without it) -----------------------------
  alignas(64) mutable std::mutex mu_;
  std::condition_variable followers_cv_;
  TimerQueue queue_;
  std::vector<TaskBase*> running_stoppable_;  // executions shutdown_now must ask to stop
  // Per worker: due tasks it popped and has not started (still kPending: a cancel, discard_oldest
  // or shutdown_now can take them); nullptr where shutdown_now took one.
  std::vector<std::vector<TaskBase*>> staged_;
  std::vector<TaskBase*> graveyard_;
  bool has_leader_ = false;
  bool polling_ = false;       // poll mode: a poll() holds the runner's role (also while unlocked)
  bool stop_done_ = false;     // shutdown_now() has taken this shard's tasks
  unsigned running_ = 0;       // batches popped and not yet finished
  unsigned threads_alive_ = 0;
  std::atomic<std::int64_t> out_{0};  // see "Counting"; runners add without mu_ (an RMW)
  std::atomic<std::uint64_t> ran_{0};
  std::atomic<std::uint64_t> cancelled_{0};
  std::atomic<std::uint64_t> periodic_failures_{0};
  LatencyHistogram lateness_;
  AdaptiveWindow adaptive_{engine_.opt.wait};  // the spin window: leader-written (wait_for)
};

}  // namespace kairos::detail
