// scheduler_core.hpp: the engine behind BasicScheduler<Clock>, compiled once (core/src).
// BasicScheduler builds typed task nodes and computes deadlines; everything else happens here.
#pragma once
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <vector>

#include <kairos/clock.hpp>
#include <kairos/detail/steady_clock.hpp>
#include <kairos/detail/task.hpp>
#include <kairos/options.hpp>
#include <kairos/stats.hpp>

namespace kairos::detail {

class SchedulerCore {
 public:
  // Validates the options (std::invalid_argument) and starts the threads.
  static std::shared_ptr<SchedulerCore> create(const Options& options, ManualClock* clock);
  virtual ~SchedulerCore() = default;

  using UncaughtHandler = std::shared_ptr<const std::function<void(std::exception_ptr)>>;
  // Options::on_uncaught, shared with the Tasks shutdown_now() returns (they may outlive us).
  virtual UncaughtHandler uncaught_handler() const noexcept = 0;

  std::int64_t now_ns() const noexcept { return manual_ ? manual_->now_ns() : steady_now_ns(); }
  ManualClock* manual_clock() const noexcept { return manual_; }
  // Far timers (Options::far_timer_slack): the least delay that makes one (kMaxNs: none, in poll
  // mode, on a ManualClock, or with a slack of zero). Set by the engine's constructor.
  std::int64_t far_from_ns() const noexcept { return far_from_ns_; }

  // Takes over the caller's scheduler reference on t, due at `deadline` (never due if `never`).
  // Applies the rejection policy: throws RejectedExecution (abort), completes t as cancelled
  // (discard), or runs it in the caller (caller_runs). Lock-free unless rejected under
  // discard_oldest.
  virtual void submit(TaskBase* t, std::int64_t deadline, bool never) = 0;
  // A cancel that won kPending -> kCancelled|kPin on an attached task (`queued`: the leader had
  // taken it into its timer queue): counts it out and posts a remove request under remove-on-cancel, then clears
  // the pin. The task is attached, so this scheduler is alive until the pin clears.
  virtual void on_cancelled(TaskBase* t, bool queued) noexcept = 0;
  // rearm() of t (re-armable, held in kRearming by the caller): records the new deadline with a
  // fresh sequence number, and tells the leader at once if it is earlier than the filed one.
  // Non-null when that woke a poll-mode loop with an Options::on_wake: the engine, kept alive
  // for the caller, which runs run_wake_callback() once it has let go of t.
  virtual std::shared_ptr<SchedulerCore> rearm_locked(TaskBase* t, std::int64_t deadline, bool never) noexcept = 0;
  // Options::on_wake on the calling thread, which holds nothing of kairos (rearm_locked).
  virtual void run_wake_callback() noexcept = 0;

  virtual void shutdown() = 0;
  virtual std::vector<TaskBase*> shutdown_now() = 0;  // references now owned by the caller
  virtual bool await_termination(std::int64_t timeout_ns) = 0;
  virtual bool is_shutdown() const noexcept = 0;
  virtual bool is_terminating() const noexcept = 0;
  virtual bool is_terminated() const noexcept = 0;
  virtual void set_remove_on_cancel(bool) = 0;
  virtual void set_execute_existing_delayed_tasks_after_shutdown(bool) = 0;
  virtual void set_continue_existing_periodic_tasks_after_shutdown(bool) = 0;
  virtual std::size_t queue_size() const noexcept = 0;
  virtual bool wait_idle(std::int64_t timeout_ns) = 0;
  virtual SchedulerStats stats() const = 0;
  // The destructor's work: shutdown_now, drop its tasks, stop and join the threads.
  virtual void close() noexcept = 0;

  // Java's ThreadPoolExecutor surface (BasicScheduler::purge, active_count, ...).
  struct PoolCounts {
    std::size_t active = 0;       // threads running a batch of tasks
    std::uint64_t completed = 0;  // executions finished (each periodic run counts)
    std::size_t pool = 0;         // scheduler threads alive
    std::size_t largest = 0;      // most threads alive at once
  };
  virtual PoolCounts pool_counts() const = 0;
  virtual std::size_t purge() = 0;
  virtual bool on_own_thread() const noexcept = 0;
  // The caller is a task of this scheduler and the only thread that could run what it submits
  // (its shard's one thread, or the poll it runs in): an untimed invoke_all/invoke_any from it
  // would wait for itself for ever.
  virtual bool would_wait_for_itself() const noexcept = 0;  // the caller is one of its threads (poll
                                                    // mode: runs a task inside this one's poll())

  // Poll mode (Options::poll_mode; std::logic_error otherwise). poll: runs the tasks due at
  // `now` on the calling thread, at most `limit` of them; returns how many started.
  // next_deadline: the earliest pending deadline, kMaxNs if there is none.
  virtual std::size_t poll(std::int64_t now, std::size_t limit) = 0;
  virtual std::int64_t next_deadline() = 0;
  virtual int wake_fd() const = 0;  // the loop's eventfd (loop_wake.hpp)

 protected:
  explicit SchedulerCore(ManualClock* clock) noexcept : manual_(clock) {}
  ManualClock* manual_;
  std::int64_t far_from_ns_ = kMaxNs;
};

// ScheduledFuture::rearm: the task's next deadline becomes `deadline` (never due if `never`).
// True iff it was pending and re-armable: it then starts at the new deadline, not the old one.
bool rearm_task(TaskBase* t, SchedulerCore* core, std::int64_t deadline, bool never) noexcept;
// Runs an orphaned task (from shutdown_now) once in the calling thread, with a fresh stop token;
// an execute()d task's exception goes to `on_uncaught` (stderr if empty).
void run_orphan(TaskBase* t, const std::function<void(std::exception_ptr)>* on_uncaught) noexcept;
// Completes an orphaned task's future as cancelled.
void drop_orphan(TaskBase* t) noexcept;
// What a handle's cancel did (cancel_task).
enum class CancelOutcome : std::uint8_t {
  kLost,      // the task was not pending or running (done, cancelled, returned): nothing changed
  kWon,       // this call moved it to kCancelled; the caller keeps its reference
  kWonAndLet  // this call moved it to kCancelled and let go of the caller's reference in the same
              // CAS: the node may already be gone, the caller must not touch it again
};
// cancel_task's every case but the one-CAS cancel (core/src/shard_cancel.cpp, where the cancel's
// protocol is argued): `s` is the state word last read. True iff it moved t to kCancelled.
bool cancel_task_in_general(TaskBase* t, SchedulerCore* core, bool may_interrupt_if_running,
                            std::uint32_t s) noexcept;

// Cancels t (ScheduledFuture::cancel); `core` is the scheduler it was submitted to (touched only
// while t is attached). A cancel that wins destroys the callable if the task will never run
// again (no kairos lock held). With `let_go` non-null the caller offers its reference: when the
// cancel is the one CAS and nothing is left to do on the node after it (a one-shot task, not
// re-armable, whose callable needs no destructor), the CAS drops that reference too, `*let_go`
// receives the task's deadline, and the result is kWonAndLet.
// The common case is here, inline in the handle's cancel: a pending task not taken in (no
// kQueued), not counted by an admission, with no waiter and no awaiter, is cancelled by one CAS
// on its state word (CN1, core/src/shard_cancel.cpp), nothing sent, nothing counted: the drain
// that meets it applies remove-on-cancel. Every other case, and a CAS that loses to any change of
// the word (a take-in, a waiter, a reference), goes to cancel_task_in_general, which decides again.
inline CancelOutcome cancel_task(TaskBase* t, SchedulerCore* core, bool may_interrupt_if_running,
                                 std::int64_t* let_go) noexcept {
  std::uint32_t s = t->state.load(std::memory_order_acquire);  // (CN1) its CAS below
  constexpr std::uint32_t kNotPlain = kStateMask | kQueued | kWaiters | kAwaited;
  if ((s & kNotPlain) == kPending && !(t->flags & kCountsCancel)) {
    constexpr std::uint8_t kLetGoFlags = kTrivialCallable | kPeriodic | kRearmable;
    if (let_go != nullptr && (t->flags & kLetGoFlags) == kTrivialCallable && !(s & kSpilled)) {
      // The handle's releasing cancel: the scheduler's reference (the inbox holds it) keeps the
      // count >= 1 after the CAS, so the node outlives it; whoever drains it drops the last. The
      // deadline the handle reports from now on (delay()) is read first: after the CAS t may be
      // gone. A plain task's deadline is its submitter's until the take-in, which the CAS would
      // fail against (kQueued); a far timer's may get its leader's stamp just before (FS1,
      // core/src/shard_leader.cpp): (FS2) this relaxed load reads the encoded delay or the stamp.
      *let_go = std::atomic_ref<std::int64_t>(t->deadline).load(std::memory_order_relaxed);
      // (CN1) and the handle's (RC1) in one: acq_rel, one winner against a start, a completion,
      // shutdown_now and the take-in (TI1), and the release of the caller's reference, which the
      // last owner's (RC1) acquires (it sees this word's every earlier change through the release
      // sequence). Nothing is left to do after it: no awaiter or waiter to wake, a callable with
      // nothing to destroy.
      if (t->state.compare_exchange_strong(s, (s | kCancelled) - kRefOne, std::memory_order_acq_rel,
                                           std::memory_order_acquire)) [[likely]]
        return CancelOutcome::kWonAndLet;
    } else {
      // (CN1) acq_rel, as above.
      if (t->state.compare_exchange_strong(s, s | kCancelled, std::memory_order_acq_rel,
                                           std::memory_order_acquire)) [[likely]] {
        drop_callable(t);  // it will never run: its captures go now (no lock held: the
                                   // caller's thread, in cancel()); no awaiter to resume
        return CancelOutcome::kWon;
      }
    }
  }
  return cancel_task_in_general(t, core, may_interrupt_if_running, s) ? CancelOutcome::kWon : CancelOutcome::kLost;
}

}  // namespace kairos::detail
