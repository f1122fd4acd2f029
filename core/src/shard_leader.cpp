// shard_leader.cpp: the consumer path of a shard, in the order a task travels it: the leader
// drains the inbox and takes the confirmed submissions into the timer queue, waits for the
// earliest deadline, pops what is due into a batch, hands the leadership on, runs the batch with
// no lock held, and files each task after its run (re-queue, or bury). The batch loop
// (run_batch) is the poller's too (shard_poll.cpp); each run ends in run_once (completion.hpp).
//
// Leader/followers. A shard's threads share one mutex, mu_. The thread that finds no leader
// (has_leader_) becomes it and loops in lead() until it holds a batch; it then promotes a
// follower (followers_cv_) and runs its batch as a plain worker, with mu_ released. One thread
// per shard (the default) leads, runs and leads again; with several, one waits for deadlines
// while the others run.
//
// Lazy draining. The leader never chases producers: it drains when it wakes — for a deadline,
// for a submission due before the deadline it waits for (leader_wait.hpp), when the inbox passes
// its high-water interval (8,192 items while the task pool grows, 65,536 otherwise: wait_for), or
// when a lifecycle call (wait_idle, stats, shutdown, a policy setter, discard_oldest) asks; after
// the batch when the wait reached its deadline unwoken (lead()). An awake leader reads no line
// that producers write per submission except once per wait (the count read of the wait protocol).
// Its own drains hold the newest far-future submissions back in the inbox (take_in_all, below)
// until a later drain or until 2 ms before they are due. And they end at the first complete pass
// whose items may all wait seen and unconfirmed (far timers, tasks due later than 2 ms from now:
// unconfirmed_may_wait, Inbox::needs_confirm_pass): the leader waits, in time for them, so that a
// steady stream of submissions, of which every pass sees a few new ones, does not keep it
// draining a pass at a time.
//
// Ownership (who may touch what):
//   queue_, batches_, running_stoppable_, has_leader_, running_, graveyard_   mu_ (shard.hpp).
//   a popped task             its runner owns its deadline and seq until it is filed again
//                             (advance_period writes them with no lock; lifecycle calls read a
//                             relaxed snapshot, newest_key); it stays kPending in batches_ until
//                             its runner starts it, so a cancel, discard_oldest or shutdown_now
//                             can still take it there.
//   the task's state word     CAS only (detail/task.hpp); kQueued is set here, once (TI1).
//   departed_                 under mu_ (CT1, shard.hpp); starts_[i]: runner i only, no lock.
//
// Edges (each names its partner):
//   (TI1) take_in: CAS kPending -> kPending|kQueued acq_rel: marks t queued; pairs with the
//         cancel CAS (CN1, shard_cancel.cpp): a cancel that fails against it reloads, sees
//         kQueued and posts a remove request; one that won first made this CAS fail.
//   (TI2) take_in / count_holdable / pop_due / run_task / after_run: acquire loads of the state
//         word: a cancel's kCancelled and what its canceller wrote (CN1's release) are seen
//         before the node goes (or is held back).
//   (LW1) lead: the wake epoch, read first (leader_wait.hpp); (LW2) arm, then the count read
//         (pairs with IN1): the leader's half of the no-lost-wake-up protocol.
//   (CT1) count_started: a task leaves the pending count when it starts (shard.hpp).
//   The inbox's own edges (IN2/IN3) publish each task's fields to drain().
//
// The one way back up this file is the wait's: arm_and_check drains again (drain, above) for the
// submissions its count read saw, before it lets the leader sleep.
#include <algorithm>
#include <thread>
#include <utility>

#include <kairos/wait.hpp>

#include "completion.hpp"
#include "freed_nodes.hpp"
#include "shard.hpp"
#include "threads.hpp"

namespace kairos::detail {

// ---- a thread of the shard ----------------------------------------------------------------------
void Shard::run_worker(unsigned index) {
  std::vector<TaskBase*> grave;
  grave.reserve(2 * kMaxBatch);
  Lock lk(mu_);
  batches_[index].reserve(kMaxBatch);
  Slot batch[kMaxBatch];
  for (;;) {
    while (has_leader_ && !must_exit(lk)) followers_cv_.wait(lk.native());
    if (must_exit(lk)) break;
    has_leader_ = true;
    std::size_t n = lead(lk, batch, grave);
    has_leader_ = false;
    if (n == 0) continue;  // must_exit became true
    (void)run_batch(lk, batch, n, index, grave);
  }
  if (--threads_alive_ == 0) cancel_leftovers(lk);
  followers_cv_.notify_all();
  wait_.wake();  // a leader asleep on the futex re-checks must_exit too
  unlock_and_bury(lk, grave);
}

// ---- the batch loop: one popped batch, run and filed --------------------------------------------
// The one loop of every runner, a worker thread (run_worker) or a poll (Shard::poll,
// shard_poll.cpp), as Asio's run() and poll() share do_run_one: the popped tasks wait in the
// runner's batches_ entry (still kPending: a cancel, discard_oldest or shutdown_now can take
// them there), a follower is promoted, the graveyard is buried, each task runs with mu_ released
// (run_task), and under mu_ again each is filed (after_run). mu_ held on entry and exit. Returns
// how many executions started.
std::size_t Shard::run_batch(Lock& lk, Slot* batch, std::size_t n, unsigned runner, std::vector<TaskBase*>& grave) {
  KAIROS_DCHECK(lk.owns_lock() && n > 0 && n <= kMaxBatch);
  std::vector<TaskBase*>& popped = batches_[runner];
  popped.resize(n);  // within its reserve (run_worker, poll): no allocation
  for (std::size_t i = 0; i < n; ++i) popped[i] = batch[i].task;
  running_ += 1;
  if (engine_.opt.threads_per_shard > 1) followers_cv_.notify_one();  // promote a follower
  unlock_and_bury(lk, grave);
  // Poll mode: every start is the poll's `now` (Shard::poll sets them), no clock read here.
  BatchClock clock(engine_.manual == nullptr && !engine_.opt.poll_mode);
  const RunMode mode{engine_.opt.record_lateness && !engine_.opt.poll_mode, engine_.exec_hooks};
  std::size_t started = 0;
  for (std::size_t i = 0; i < n; ++i) {
    run_task(batch[i], clock, runner, mode);
    started += batch[i].started;
  }
  lk.lock(mu_);
  // The plain runs' lateness, recorded at once after the loop (LatencyHistogram::record_all);
  // their count likewise. The histogram is read under mu_ only; ran_, read without it (stats),
  // moves by the batch's plain runs at once, where it moved by one a task a few instructions apart.
  std::int64_t lateness[kMaxBatch];
  std::size_t plain_runs = 0;
  for (std::size_t i = 0; i < n; ++i) {
    Slot& slot = batch[i];
    if (mode.time_starts) slot.start = clock.start_ns(i, slot.start);
    // A one-shot run with no stop token (every task of W6 and W7): counted, then buried. The
    // rest of after_run is for the others (not started, periodic, stoppable).
    if (slot.started && !(slot.task->flags & (kPeriodic | kStoppable))) {
      lateness[plain_runs++] = sub_saturated(slot.start, slot.deadline);
      bury_later(slot.task);
      continue;
    }
    after_run(lk, slot, popped[i] == nullptr);
  }
  count_ran(std::span<const std::int64_t>(lateness, plain_runs));
  popped.clear();
  running_ -= 1;
  return started;
}

// ---- the leader's loop --------------------------------------------------------------------------
// Returns with due tasks in `batch`, or 0 when the thread must exit. The tasks stay kPending
// until their runner starts them, one after another (a due task waiting behind a long one can
// still be cancelled, or taken by shutdown_now()). mu_ held on entry and exit; released while
// waiting.
std::size_t Shard::lead(Lock& lk, Slot* batch, std::vector<TaskBase*>& grave) {
  KAIROS_DCHECK(lk.owns_lock());
  // The clock read with which the last wait reached its deadline, no wake-up having come:
  // kMinNs otherwise. Such a wait's due tasks are popped before the inbox is drained. Every
  // submission counted before the wait was armed was taken in (arm_and_check) or was left
  // unconfirmed on purpose (unconfirmed_may_wait: a far timer, due 1000 slacks after a take-in
  // still to come, or a task due kHoldAheadNs after this wait's deadline or later, held_wake;
  // held_due below takes them in first should the wait have overrun that), and every later
  // one due before the armed deadline would have woken it (LW4), and a wake-up that came by the
  // clock read that reached the deadline voids the reach (LW11); so what the inbox holds is due
  // no earlier than the tasks just reached, and of those equal to them, submitted later (a
  // submission's take-in follows its seq order). The drain, with its misses on the lines the
  // producers wrote, comes after the batch, not between the deadline and the start.
  std::int64_t reached = kMinNs;
  for (;;) {
    // (LW1) first: a wake-up during this pass (the clock moved, a lifecycle call, a re-queue)
    // ends the wait it leads to at once. Read after the clock or the queue, it could swallow a
    // ManualClock::advance that came between: the leader would then sleep for ever.
    const std::uint32_t w = wait_.wake_epoch();
    const std::int64_t reached_at = std::exchange(reached, kMinNs);
    // The clock before the drain: every submission made before this read is in the timer queue
    // when the pop below takes what is due at it (the drain ends with a complete pass, inbox.hpp),
    // so a task due earlier than a popped one, submitted before the pop's clock read, is never
    // left behind in the inbox. Read after the drain, a submission due at once that came between
    // the two (and a ManualClock::advance after it) started after tasks due later
    // (ShardLeader.ASubmissionBeforeThePopsClockReadIsPoppedInDeadlineOrder). A task that comes
    // due during the drain waits for the next pass: its wait ends at once (its deadline passed).
    std::int64_t now = reached_at != kMinNs ? reached_at : engine_.now_ns();
    // The drain ends with the restamp pass if one was asked for (RN2); a reached deadline's pop
    // skips the drain, not the pass.
    if (reached_at == kMinNs) drain(lk, true);
    else restamp_if_due(lk);
    if (auto* hook = g_before_pop_for_testing.load(std::memory_order_relaxed)) [[unlikely]] hook();
    if (must_exit(lk)) return 0;
    if (engine_.state() >= RunState::kShutdownNow) {
      // Nothing starts after shutdown_now(); it takes the tasks and wakes this thread to exit.
      wait_for(lk, w, kMaxNs, true, grave);
      continue;
    }
    // A task held back in the inbox is due (the wait or the drain took longer than kHoldAheadNs):
    // into the timer queue first, so that what is popped next follows deadline order and FIFO.
    if (held_due(now)) drain(lk);
    if (held_due(now)) now = waiting_earliest() - 1;  // not confirmed yet (a flood): pop what is due before them
    if (std::size_t n = pop_due(lk, now, batch, engine_.opt.threads_per_shard == 1 ? kMaxBatch : 1)) return n;
    if (reached_at != kMinNs) continue;  // nothing due after all (cancelled, re-armed): the usual pass
    const bool refused = inbox_.take_in_refused();
    // One more (complete) pass confirms what was seen, unless the drain ended at a pass whose
    // items may wait (inbox.hpp, unconfirmed_may_wait): for the next drain, which comes within the
    // slack of a far timer (far_seen_, below) and kHoldAheadNs before any other is due (held_wake),
    // so that a steady stream of timeouts is not chased a pass at a time.
    if (inbox_.needs_confirm_pass(scheduler_active()) && !refused) continue;
    if (inbox_.has_unconfirmed() && unconfirmed_far_) far_seen_ = true;
    if (must_exit(lk)) return 0;             // pop_due may have dropped the last cancelled task
    TaskBase* head = queue_.empty() ? nullptr : queue_.top();
    bool forever = head == nullptr || head->never_due();
    std::int64_t deadline = forever ? kMaxNs : head->deadline;
    // The head came due during the drain (after this pass's clock read): the next pass pops it,
    // with no wait armed only to end at once (W6 and W7 meet this whenever the drain took in a
    // task submitted after the clock read).
    if (!forever && deadline <= engine_.now_ns()) continue;
    if (const std::int64_t h = held_wake(); h < deadline) {  // the inbox holds tasks back: in time for them
      deadline = h;
      forever = false;
    }
    if (refused) {  // the timer queue could not grow: try again in a while, not in a loop
      deadline = std::min(deadline, add_saturated(now, kRetryTakeInNs));
      forever = false;
    }
    // Far timers came since the last wait (stamp_if_far): more may be coming, each of which must
    // get its deadline within about far_slack_ns_, so this wait ends by then (a drain, not a
    // deadline: no spin). Counted from a clock read after this pass's drain, not before it: a
    // drain that took longer than the slack (slow handoffs, a flood) is followed by a sleep, not
    // by another drain at once, which would take every far timer in as soon as it came, before
    // its cancel, and chase its producer line by line. Producers of far timers measure the armed
    // wait against the clock read passed to the arm (notify_far): they wake a leader whose wait
    // ends later than that read + the slack, never this one.
    const std::int64_t due = forever ? kMaxNs : deadline;
    std::int64_t armed_at = now;
    bool drain_by = false;
    if (std::exchange(far_seen_, false)) {
      const std::int64_t after_drain = engine_.now_ns();
      if (add_saturated(after_drain, far_slack_ns_) < deadline) {
        armed_at = after_drain;
        deadline = add_saturated(after_drain, far_slack_ns_);
        forever = false;
        drain_by = true;
      }
    }
    if (!arm_and_check(lk, deadline, armed_at)) continue;
    reached = wait_for(lk, w, deadline, forever, grave, drain_by ? due : kMinNs);
  }
}

// True when the shard's threads must go: after shutdown_now() took the pending tasks, or after
// shutdown() once nothing is pending, running or in flight in the inbox.
bool Shard::must_exit(Lock& lk) const noexcept {
  KAIROS_DCHECK(lk.owns_lock());
  RunState st = engine_.state();
  if (st == RunState::kActive) return false;
  if (st >= RunState::kShutdownNow) return pending_taken_;
  return queue_.empty() && running_ == 0 && inbox_caught_up();
}

bool Shard::inbox_caught_up() const noexcept {
  return !inbox_.holds_any() && inbox_.drained() == inbox_.submitted() &&
         inbox_.removes_done() == inbox_.removes_sent();
}

// ---- drain: the inbox's consumer half -----------------------------------------------------------
// The inbox calls these back at once, on this thread: under mu_.
// Each ends with the restamp pass if one is asked for (shard_restamp.cpp): whoever drains goes on
// to compare order stamps.
void Shard::drain(Lock& lk, bool hold_far) {
  hold_far_ = hold_far && engine_.state() == RunState::kActive;
  hold_horizon_ = kMinNs;  // read at the drain's first confirm (count_holdable), once
  queued_at_drain_ = queue_.size();
  // The leader's own drains end at a complete pass whose items may wait (inbox.hpp).
  if (hold_far_)
    inbox_.drain_for_leader(take_in_callback(lk), request_callback(lk),
                            [this](std::span<TaskBase* const> seen) {
                              mu_.assert_held();  // called back at once, on this thread: under mu_
                              return unconfirmed_may_wait(seen);
                            });
  else
    inbox_.drain(take_in_callback(lk), request_callback(lk));
  if (!inbox_.has_unconfirmed()) {
    unconfirmed_earliest_ = kMaxNs;
    unconfirmed_far_ = false;
  }
  hold_far_ = false;  // the restamp pass takes everything in (drain_through)
  restamp_if_due(lk);
}

bool Shard::drain_all(Lock& lk) {
  const bool all = inbox_.drain_all(take_in_callback(lk), request_callback(lk));
  restamp_if_due(lk);
  return all;
}

// ---- take in: inbox -> timer queue --------------------------------------------------------------
// Growth happens here, before a task is taken in, and nowhere else on the runner's paths: the
// heap's capacity covers every task this shard may hold (the queue, the tasks out in batches,
// and these), so re-queues, refiles and moves never allocate (timer_queue.hpp), and the
// graveyard has room for each of these to leave. If the memory is not there, none is taken:
// they stay confirmed in the inbox, in order, and the leader retries after a pause (lead()).
// Nothing is lost and nothing throws on a runner; submissions meanwhile get bad_alloc when the
// pool cannot grow, and everything goes on once memory is back.
//
// Held back (the leader's own drains only: hold_far_). A timeout is usually cancelled long before
// it is due (W2: the order-timeout pattern), and a cancel that finds its task taken in is the
// costly one: a pinned cancel on lines the leader wrote, a remove request, a heap removal
// (shard_cancel.cpp). So the newest confirmed submissions due later than kHoldAheadNs (at most
// Inbox::kMaxHeld, a contiguous tail: take-in keeps its order) stay in the inbox until a later
// drain: newer submissions push them out, or the leader wakes kHoldAheadNs before the earliest
// of them is due (held_wake, lead() and arm_and_check). A cancel meanwhile is one CAS, and the
// next drain drops the node (take_in). The leader reads their state and deadline (a line the
// producer wrote), and writes only a far timer's deadline, once (stamp_if_far). Not held: a task
// that cannot stay put (re-armable: its key moves; cancelled or started: nothing to wait for),
// anything after shutdown, and anything a lifecycle call, a poll or the restamp pass drains
// (they take everything in).
// What the reached-deadline pop of lead() relies on still holds: held tasks are the newest
// taken in, and none is due before the wait's deadline; a wait or a drain that ran past the
// earliest of them (a preempted leader) takes them in before it pops (lead()).
std::size_t Shard::take_in_all(Lock& lk, std::span<TaskBase* const> confirmed) {
  stamp_now_ = kMinNs;  // stamp_if_far's clock read: one per call, after these tasks' dequeues
  const std::size_t hold = hold_far_ ? count_holdable(confirmed) : 0;
  const std::size_t take = confirmed.size() - hold;
  const std::size_t in_batches = kMaxBatch * batches_.size();
  if (!queue_.try_reserve(queue_.size() + in_batches + take) || !reserve_graveyard(take)) return 0;
  // One task at a time: a span push was tried and made W6 slower (PERF.md's eighth round).
  // Each node was last written on its producer's core: its first read here waits for a handoff
  // (100-250 ns on the hosts measured), one after another. Asked for kTakeInAhead tasks ahead
  // (for writing: its state and queue_slot are written here; both in its first 32 bytes, which
  // may straddle two lines), the handoffs overlap.
  const std::span<TaskBase* const> taking = confirmed.first(take);
  // The timeouts cancelled in the inbox (W2: nearly all of them) go back to the pool a class at a
  // time, not one task_free() each (freed_nodes.hpp): when this call returns, or every 64.
  FreedNodes freed;
  for (std::size_t i = 0; i < std::min(kTakeInAhead, take); ++i) prefetch_task_for_write(taking[i]);
  for (std::size_t i = 0; i < take; ++i) {
    if (i + kTakeInAhead < take) prefetch_task_for_write(taking[i + kTakeInAhead]);
    TaskBase* t = taking[i];
    std::uint32_t s;
    if (mark_plain_queued(t, s)) {
      stamp_if_far(t);
      queue_.push(t);
    } else {
      take_in(lk, t, s, freed);  // the rest of the cases, from the word read
    }
  }
  inbox_.hold_back(hold);
  return take;
}

// drain_for_leader's may_wait (inbox.hpp): the items of a complete pass, the newest seen, may stay
// unconfirmed while the leader waits if each is a far timer (not stamped before its take-in: due
// 1000 slacks after it), a task that will never be due, or one due later than the hold horizon
// (now + kHoldAheadNs) that is not re-armable (its key moves). Read newest first: in a stream of
// other submissions (W6: due at once) the first item ends the scan. Their fields were written
// before their enqueue (IN2/IN3) and no other thread writes them: flags are fixed, a deadline
// moves only by a re-arm or a run, neither of which an item in the inbox meets.
bool Shard::unconfirmed_may_wait(std::span<TaskBase* const> seen) {
  // Not while this drain queued more than kBehind tasks: the leader is behind a burst of pending
  // timers (W1, W5: each taken in is a heap insert, about as costly as its producer's call).
  // Were it to wait, it would meet a larger backlog at each wake, and the passes of a catch-up
  // confirm nothing until one comes back short: the inbox's list of items seen and not taken in
  // grew to 170,000-340,000 entries in W5's million-timer burst, kept for the scheduler's life
  // (W5 47.9 B a timer against 45.5; with this rule 45.4, PERF.md's eighteenth round). Draining
  // again at once keeps the batches as they were. (A burst of equal delays, cheap to take in,
  // grows that list too, with or without this rule: not traced.)
  if (queue_.size() > queued_at_drain_ + kBehind) return false;  // (remove requests may shrink it)
  std::int64_t earliest = kMaxNs;
  bool far = false;
  for (std::size_t i = seen.size(); i-- > 0;) {
    const TaskBase* t = seen[i];
    if (t->flags & kFarStamp) {
      far = true;
      continue;
    }
    if (t->flags & kRearmable) return false;
    if (t->never_due()) continue;
    if (hold_horizon_ == kMinNs) hold_horizon_ = add_saturated(engine_.now_ns(), kHoldAheadNs);
    if (t->deadline <= hold_horizon_) return false;
    earliest = std::min(earliest, t->deadline);
  }
  unconfirmed_far_ = far;
  unconfirmed_earliest_ = earliest;
  return true;
}

// stamp_if_far's out-of-line half (shard.hpp tests the flag inline).
// Far timers (Options::far_timer_slack) get their deadlines at their take-in, before anything
// reads them (the hold count, the shutdown policies, the timer queue; a task dropped cancelled
// needs none): a clock read of this leader's, made after their dequeues (IN3) and so after their
// calls, + each one's delay. So none is due before its call + its delay. One read per take_in_all
// call (stamp_now_, reset at its start), taken at its first far timer.
// (FS1) relaxed store through atomic_ref -> pairs with (FS2), the relaxed loads of delay() and
// of the handle's releasing cancel (cancel_task) on other threads: each reads the encoded delay
// or the stamped deadline, told apart by sign (kFarStamp, set before publication, says which
// encoding the field uses); nothing else travels with it.
void Shard::stamp_far(TaskBase* t) noexcept {
  const std::int64_t field = t->deadline;  // the leader is its only writer
  if (far_deadline_stamped(field)) return;  // held back earlier, or its take-in refused (no memory)
  if (stamp_now_ == kMinNs) stamp_now_ = engine_.now_ns();
  std::atomic_ref<std::int64_t>(t->deadline).store(stamp_now_ + far_deadline_delay(field), std::memory_order_relaxed);  // (FS1)
  far_seen_ = true;
  bump(far_timers_);
}

// A confirmed task's first 32 bytes (TaskBase: everything take-in reads and writes), asked for
// in the exclusive state.
inline void Shard::prefetch_task_for_write(const TaskBase* t) noexcept {
  prefetch_for_write(t);
  prefetch_for_write(reinterpret_cast<const char*>(t) + sizeof(TaskBase) - 1);
}

// take_in's common case, decided from one load of the state word: the scheduler's reference is
// the only one (execute(), a dropped future; not a re-armable task, whose re-arms may have come
// before its handle went), the task is pending, and the engine active. No cancel or re-arm can
// race the mark, so it is a plain store, not the CAS (TI1); the load is then (RC2) as well: the
// count it saw is 1, and nobody else can change the word after it. False: nothing written, and
// s holds the word as read (take_in starts from it).
inline bool Shard::mark_plain_queued(TaskBase* t, std::uint32_t& s) noexcept {
  s = t->state.load(std::memory_order_acquire);  // (TI2)
  if (!only_reference(s) || (s & kStateMask) != kPending || (t->flags & kRearmable) ||
      engine_.state() != RunState::kActive)
    return false;
  t->state.store(s | kQueued, std::memory_order_relaxed);
  return true;
}

// The tail of `confirmed` that may stay in the inbox. Its first previously_held() tasks were held
// back by the last confirm and checked then; only the newer ones are read here (each task's
// line once per hold, not once per drain), and the older ones stay held as a block while all of
// them are still far (held_earliest_, a bound: it may belong to one pushed out since, which only
// makes the leader wake earlier).
std::size_t Shard::count_holdable(std::span<TaskBase* const> confirmed) {
  if (hold_horizon_ == kMinNs) hold_horizon_ = add_saturated(engine_.now_ns(), kHoldAheadNs);
  const std::int64_t horizon = hold_horizon_;
  const std::size_t old_held = std::min(inbox_.previously_held(), confirmed.size());
  const std::size_t fresh = confirmed.size() - old_held;
  std::int64_t earliest = kMaxNs;
  std::size_t n = 0;
  for (; n < std::min(fresh, Inbox::kMaxHeld); ++n) {
    TaskBase* t = confirmed[confirmed.size() - 1 - n];
    // (TI2) acquire: the state a cancel or a start left, with the writes before it.
    const std::uint32_t s = t->state.load(std::memory_order_acquire);
    if ((t->flags & kRearmable) || (s & kStateMask) != kPending) break;
    stamp_if_far(t);
    if (!t->never_due()) {
      if (t->deadline <= horizon) break;
      earliest = std::min(earliest, t->deadline);
    }
  }
  if (n == fresh && old_held > 0 && held_earliest_ > horizon) {  // the older block stays held too
    n += std::min(old_held, Inbox::kMaxHeld - n);
    earliest = std::min(earliest, held_earliest_);
  }
  held_earliest_ = earliest;
  return n;
}

bool Shard::reserve_graveyard(std::size_t more) noexcept {
  if (graveyard_.size() + more <= graveyard_.capacity()) return true;
  try {
    graveyard_.reserve(std::max(graveyard_.size() + more, 2 * graveyard_.capacity()));
    return true;
  } catch (const std::bad_alloc&) {
    return false;
  }
}

// A confirmed submission that is not plain (take_in_all tried mark_plain_queued first; s: the
// state word it read, TI2) enters the timer queue, unless cancelled or refused by the shutdown
// policies.
void Shard::take_in(Lock& lk, TaskBase* t, std::uint32_t s, FreedNodes& freed) {
  KAIROS_DCHECK(lk.owns_lock() && !TimerQueue::queued(t));
  // A one-CAS cancel's leftover, the common end of a timeout (W2): cancelled in the inbox, the
  // scheduler's reference the only one (the handle let go in the cancel's CAS, or was dropped
  // since), freeable in place (shard.hpp: the word read above is final, its acquire, TI2, saw the
  // canceller's CAS or the handle's release, RC1), and not counted out by its cancel (no
  // kRemoved): counted out and freed here, as drop_cancelled and drop would, without their pin
  // waits and re-reads (the leader's share of a W2 pair).
  if (freeable_in_place(t, s, kRemoved) &&
      (engine_.state() != RunState::kActive || engine_.remove_on_cancel.load(std::memory_order_acquire))) {  // (PO2)
    count_departed(1);
    bump(cancelled_);
    freed.destroy(t);  // its destruction runs no user code (freeable_in_place): under mu_ is fine
    return;
  }
  stamp_if_far(t);  // every case below may read its deadline
  for (;;) {
    if ((s & kStateMask) == kCancelled) {  // cancelled before it was queued: no request was sent
      wait_unpinned(t);  // (CN3) a pinned cancel (kCountsCancel) counts before it unpins
      s = t->state.load(std::memory_order_acquire);
      // Removed: counted out by its cancel already. Else a one-CAS cancel (shard_cancel.cpp),
      // whose remove-on-cancel policy applies here (its setter took in every cancel made before
      // it), or a cancel under the policy off: dropped and counted out now, or retained until
      // its deadline as Java's class does (never after shutdown).
      if ((s & kRemoved) || engine_.state() != RunState::kActive ||
          engine_.remove_on_cancel.load(std::memory_order_acquire)) {  // (PO2)
        drop_cancelled(lk, t, false);
      } else {
        queue_.push(t);  // retained until its deadline, as Java's class does
      }
      return;
    }
    RunState st = engine_.state();
    bool refused = st >= RunState::kShutdownNow
                       ? pending_taken_
                       : (st == RunState::kShutdown && !allowed_after_shutdown(lk, t, engine_.now_ns()));
    if (refused) {
      // Before shutdown_now() took this shard's tasks, it goes to the queue for it to take.
      if (!transition(t, kPending, kCancelled)) {
        s = t->state.load(std::memory_order_acquire);
        continue;
      }
      count_departed(1);
      drop(lk, t, true);
      return;
    }
    if ((s & kStateMask) == kRearming) {  // a re-arm holds it for a moment
      cpu_relax();
      s = t->state.load(std::memory_order_acquire);
      continue;
    }
    // (TI1) acq_rel: marks t queued. Pairs with the cancel CAS (CN1): a cancel that fails against
    // it reloads, sees kQueued, and posts a remove request; one that won first made this fail.
    if (t->state.compare_exchange_weak(s, s | kQueued, std::memory_order_acq_rel, std::memory_order_acquire)) {
      if ((t->flags & kRearmable) && lock_pending(t)) {  // (RA1) filed at its latest key
        static_cast<RearmBase*>(t)->adopt_latest();
        unlock_pending(t);  // (RA2)
      }
      queue_.push(t);
      return;
    }
  }
}

// A request: remove (remove-on-cancel of a queued task; counted out at cancel()) or refile (a
// re-arm to an earlier deadline, shard_rearm.cpp).
void Shard::apply_request(Lock& lk, TaskBase* t, std::uintptr_t tag) {
  if (tag == Inbox::kRefileTag) {
    refile(lk, t);
    bury_later(t);  // the request's reference
    return;
  }
  if (queue_.erase(t)) bury_later(t);  // the queue's reference
  bury_later(t);                       // the request's reference
}

// ---- wait: until the earliest deadline, a wake-up or an earlier submission ----------------------
// Arms the wait for `deadline` and takes in every submission counted before (leader_wait.hpp).
// False (disarmed) if one of them must be looked at first: it is due, or earlier than deadline.
bool Shard::arm_and_check(Lock& lk, std::int64_t deadline, std::int64_t now) {
  wait_.arm(deadline, now);                   // (LW12), (LW2)
  std::uint64_t counted = inbox_.submitted();  // the count read (IN5): pairs with (IN1)
  // The requests posted so far (IN7), read after the count: a re-arm whose abandoned seq the
  // count read saw (IN4) posted its refile request before (IN6, in its program order), so it is
  // counted here. Without it, a re-arm made entirely between this leader's last drain and its
  // arm (its notify_earlier met no armed wait: LW3) left its request in the inbox while the
  // leader slept: Rearm.RearmAtChecksTheClockAndTheTask failed about once in 100 runs once
  // held-back tasks (take_in_all) gave the leader one more pass before it waited.
  std::uint64_t requested = inbox_.removes_sent();
  if (inbox_.drained() >= counted && inbox_.removes_done() >= requested) return true;
  // A few submissions passed (IN1) before the count read: drain until they are here (they may be
  // between their seq and their enqueue: a few instructions). Later ones see (LW2) themselves.
  // Requests likewise (posted_ moves before the item is enqueued; lost_ undoes a failed one).
  for (int i = 0; inbox_.drained() < std::min(counted, inbox_.submitted()) ||
                  inbox_.removes_done() < std::min(requested, inbox_.removes_sent()) ||
                  (inbox_.needs_confirm_pass(scheduler_active()) && !inbox_.take_in_refused());
       ++i) {
    drain(lk, true);
    if (i > 64) std::this_thread::yield();
  }
  // A counted seq may have been a re-arm's (abandoned after its request): take the request in.
  drain(lk, true);
  while (inbox_.needs_confirm_pass(scheduler_active()) && !inbox_.take_in_refused()) drain(lk, true);
  TaskBase* head = queue_.empty() ? nullptr : queue_.top();
  bool earlier = (head != nullptr && !head->never_due() && head->deadline < deadline) || held_wake() < deadline;
  // Far timers these drains saw and left unconfirmed: this wait must end within the slack of
  // them, which only a wait lead() capped (far_seen_: deadline = armed_at + slack) does. (Other
  // tasks left unconfirmed: held_wake, above.)
  if (inbox_.has_unconfirmed() && unconfirmed_far_ && !inbox_.take_in_refused() &&
      add_saturated(now, far_slack_ns_) < deadline)
    earlier = true;
  if (earlier || (head != nullptr && deadline == kMaxNs)) {
    wait_.disarm();
    return false;
  }
  return true;
}

// Waits until `deadline` (forever: no deadline), a wake-up or an earlier submission. mu_ held on
// entry and exit; released (and the graveyard buried) while waiting. The wait is armed. Returns
// the steady clock's read that found the deadline reached with no wake-up, else kMinNs (woken;
// a ManualClock, whose time is not the steady clock's).
std::int64_t Shard::wait_for(Lock& lk, std::uint32_t w, std::int64_t deadline, bool forever, std::vector<TaskBase*>& grave,
                             std::int64_t drain_by_due) {
  KAIROS_DCHECK(lk.owns_lock());
  const bool drain_by = drain_by_due != kMinNs;  // `deadline` only ends the wait for a drain (far timers)
  if (deadline == kMaxNs && !forever) forever = true;
  wait_.arm(deadline);  // (LW2) again: a no-op store when arm_and_check did it
  unlock_and_bury(lk, grave);
  // The task pool's next slab is populated here, off the producers' path and never just before
  // a deadline (it can take a few hundred microseconds on a VM). The high-water interval follows
  // the pool: while it grows, the short one, so that this runs often enough to keep its slabs
  // ready (W1 fresh: the submitting thread faults the pages of the slabs it grows itself); while
  // it does not, the long one, so that the held-back count reads the newest pending timeouts an
  // eighth as often (W2: their cancels then find their lines unshared; PERF.md's fifteenth and
  // sixteenth rounds).
  if (forever || sub_saturated(drain_by ? drain_by_due : deadline, engine_.now_ns()) > kPrepareAheadNs) {
    const int forced = g_pool_grows_for_testing.load(std::memory_order_relaxed);  // a test switch
    const bool grows = forced < 0 ? task_pool_grows() : forced != 0;
    wait_.set_high_water_mask((grows ? kShortHighWater : kLongHighWater) - 1);
    task_pool_prepare();
  }
  std::int64_t reached = kMinNs;
  if (engine_.manual) {
    wait_.sleep_until(w, -1);  // ManualClock::advance wakes every shard
  } else if (drain_by) {
    // Nothing is due by `deadline`: a sleep (no spin, nothing recorded for the adaptive window),
    // and the next pass drains (kMinNs, as after a wake-up).
    wait_.sleep_until(w, deadline);
  } else {
    WaitPolicy::Mode mode = engine_.opt.wait.mode();
    const bool adaptive = mode == WaitPolicy::Mode::adaptive;
    std::int64_t window = adaptive ? adaptive_.window() : engine_.opt.wait.spin_window().count();
    std::int64_t spin_from = mode == WaitPolicy::Mode::spin    ? kMinNs
                             : mode == WaitPolicy::Mode::sleep ? kMaxNs
                                                               : sub_saturated(deadline, window);
    bool woken = false;
    if (steady_now_ns() < spin_from) {
      std::int64_t until = spin_from == kMaxNs ? (forever ? -1 : deadline) : spin_from;
      woken = !wait_.sleep_until(w, until);
      // adaptive: how late a sleep that timed out woke (a wake-up's end says nothing of that).
      if (adaptive && !woken && !forever) adaptive_.record(steady_now_ns() - until);
    }
    if (!woken && mode != WaitPolicy::Mode::sleep) reached = wait_.spin_until(w, deadline);
    else if (!woken && !forever) reached = steady_now_ns();  // sleep mode: the futex timed out
    // A wake-up that came by that clock read (a submission due earlier, its enqueue just before
    // the read): the next pass drains before it pops, as for any wake-up.
    if (reached != kMinNs && wait_.woken_since(w)) reached = kMinNs;  // (LW11)
  }
  wait_.disarm();
  lk.lock(mu_);
  return reached;
}

// ---- pop: the due tasks into a batch ------------------------------------------------------------
namespace {
// A periodic task's next run is due after `now`, so after every task a batch popped at `now`
// holds and every task it leaves due: it may share that batch and be re-queued at its end
// (after_run), in (deadline, seq) order as ever (W4: 16 fixed-rate tasks due together run as one
// batch, not one lock, pop and clock read each). Fixed rate: this run's deadline + period.
// Fixed delay: the end of this run (read after `now`, on the same clock) + a period > 0
// (submit_periodic), past the clock's range never due. A task behind (a fixed-rate run due at or
// before `now` comes next) ends its batch as before, so catch-up runs keep their place in line.
bool next_run_after(const TaskBase* t, std::int64_t now) noexcept {
  if (t->flags & kFixedDelay) return true;
  return add_saturated(t->deadline, static_cast<const PeriodicBase*>(t)->period) > now;
}
}  // namespace

// At most `max` (<= kMaxBatch) due tasks into `batch`.
std::size_t Shard::pop_due(Lock& lk, std::int64_t now, Slot* batch, std::size_t max) {
  KAIROS_DCHECK(lk.owns_lock() && max <= kMaxBatch);
  // A burst's plain tasks (one-shot, no stop token, not re-armable, not cancelled) from the first
  // run's front in one loop, while they sort before every other part's head
  // (TimerQueue::pop_due_span): W6 and W7 take every batch so. The loop below takes what it
  // leaves, one task at a time, with the rules for the others.
  Slot* next = batch;
  std::size_t n = queue_.pop_due_span(now, max, [&next](TaskBase* t) {
    if (t->flags & (kStoppable | kRearmable | kPeriodic)) return false;
    if ((t->state.load(std::memory_order_acquire) & kStateMask) == kCancelled) return false;  // (TI2)
    *next++ = Slot{t, t->deadline, 0, false, false};
    return true;
  });
  while (n < max && !queue_.empty()) {
    TaskBase* t = queue_.top();
    if (!is_due(t, now)) break;
    bool stoppable = t->flags & kStoppable;
    if (stoppable && n > 0) break;  // starts alone: its stop source is set up under mu_
    queue_.pop_top(t);
    if (refiled_at_newest(lk, t)) continue;  // re-armed since it was filed (also a retained
                                             // cancelled task: it leaves at its newest deadline)
    if ((t->state.load(std::memory_order_acquire) & kStateMask) == kCancelled) {  // (TI2)
      drop_cancelled(lk, t);
      continue;
    }
    if (stoppable && !start_stoppable(lk, t)) continue;
    batch[n++] = Slot{t, t->deadline, 0, stoppable, stoppable};
    if (stoppable) break;
    if (t->periodic() && !next_run_after(t, now)) break;  // catching up: its next run may come
                                                          // before the rest, re-queue it first
  }
  return n;
}

// A task taking a stop token starts under mu_: a fresh stop source (written before the task is
// visible as running: cancel(true) touches it only after winning kRunning -> kCancelled), then
// kPending -> kRunning, and registered for shutdown_now()'s stop requests.
bool Shard::start_stoppable(Lock& lk, TaskBase* t) {
  if (std::stop_source* src = task_stop_source(t)) {
    *src = std::stop_source();
    if (engine_.state() >= RunState::kShutdownNow) src->request_stop();
  }
  switch (try_start(t)) {
    case Start::started: break;
    case Start::refile:
      if (refiled_after_shutdown(lk, t)) queue_.push(t);
      return false;
    case Start::gone: drop_cancelled(lk, t); return false;
  }
  running_stoppable_.push_back(t);
  count_departed(1);
  return true;
}

// ---- run: one execution, no lock held -----------------------------------------------------------
// Starts and runs one execution; run_once (completion.hpp) completes it, or sets a periodic
// task's next deadline (at the end of the run: fixed delay needs it) for after_run to re-queue.
// Leaves slot.started false if the task was cancelled or taken by shutdown_now() while it waited
// in the batch.
// The start is the last step before the invocation. A cancel that wins against a task started
// here (kRunning -> kCancelled) comes after the start, as one during the run does: the run goes
// on and the future says cancelled. So a cancel that wins kPending -> kCancelled is the only one
// that keeps the callable from running, and it destroys the callable itself, on its own thread
// (a sleeping coroutine is resumed inside request_stop(): kairos/coro.hpp). A task started at
// pop (one taking a stop token: start_stoppable) waited in the batch since, so a cancel meanwhile
// still keeps it from running, as Java's FutureTask.run() checks its state before call(); its
// callable then goes here, on the runner.
inline void Shard::run_task(Slot& slot, BatchClock& clock, unsigned runner, RunMode mode) {
  TaskBase* t = slot.task;
#if defined(KAIROS_SLOW_START_NS) && KAIROS_SLOW_START_NS > 0
  // A deliberately slowed build (CMake KAIROS_SLOW_START_NS): shows the latency gate failing.
  for (std::int64_t until = steady_now_ns() + KAIROS_SLOW_START_NS; steady_now_ns() < until;) cpu_relax();
#endif
  // Poll mode: the poll's `now` (set by Shard::poll), one clock read per poll, not per task.
  // The start's stamp (BatchClock::start_ns converts it at filing) is read before the start's CAS
  // and stored after it: a store before the locked instruction would make it wait for the read.
  const std::int64_t stamp = mode.time_starts ? clock.next_stamp([this] { return engine_.now_ns(); }) : 0;
  if (!slot.started_at_pop) {
    Start st = try_start(t);
    slot.started = st == Start::started;
    slot.refile = st == Start::refile;
    if (!slot.started) return;
    count_started(runner);  // (CT1) it left the queue (queue_size) the moment it started
  } else if ((t->state.load(std::memory_order_acquire) & kStateMask) == kCancelled) {  // (TI2)
    drop_callable(t);  // cancelled while it waited, started: the runner owns the callable
    return;
  }
  if (mode.time_starts) slot.start = stamp;
  if (mode.hooked) return run_hooked(t, slot.deadline);  // shard_hooks.cpp
  (void)run_once(t, [t] { return t->ops->invoke(t); }, true, [this] { return engine_.now_ns(); }, run_context());
}

// ---- after the run: re-queue or bury, under mu_ -------------------------------------------------
// Counts each task out, re-queues a periodic task or lets it go.
// taken: shutdown_now() took the task before it started (it holds its own reference).
void Shard::after_run(Lock& lk, const Slot& slot, bool taken) {
  KAIROS_DCHECK(lk.owns_lock());
  TaskBase* t = slot.task;
  if (!slot.started) {
    if (slot.refile && !taken) {  // re-armed after it was popped: still pending, back in line
      if (!refiled_after_shutdown(lk, t)) return;
      queue_.push(t);
      if (has_leader_) (void)wait_.notify_earlier(t->never_due() ? kMaxNs : t->deadline);  // a leader: no loop to call back
      return;
    }
    if (taken) bury_later(t);   // counted out by shutdown_now()
    else drop_cancelled(lk, t);  // cancelled while it waited in the batch
    return;
  }
  count_ran(slot);
  if (t->flags & kStoppable) std::erase(running_stoppable_, t);
  std::uint32_t s = t->state.load(std::memory_order_acquire) & kStateMask;  // (TI2)
  if (t->periodic() && s == kRunning) {
    RunState st = engine_.state();
    bool may_continue = st == RunState::kActive ||
                        (st == RunState::kShutdown &&
                         engine_.continue_periodic.load(std::memory_order_acquire));  // (PO2)
    if (may_continue && transition(t, kRunning, kPending)) {  // kQueued stays: it is queued again
      count_departed(-1);
      queue_.push(t);
      if (has_leader_) (void)wait_.notify_earlier(t->never_due() ? kMaxNs : t->deadline);  // a leader: no loop to call back
      return;
    }
    // A completion under mu_: the CAS here, the awaiter wake after the unlock (bury).
    if (transition(t, kRunning, kCancelled)) bump(cancelled_);
  }
  bury_later(t, t->periodic());  // a periodic task's callable goes with its last run
}

inline void Shard::count_ran(const Slot& slot) {
  bump(ran_);
  if (engine_.opt.record_lateness) lateness_.record(sub_saturated(slot.start, slot.deadline));
}

// As count_ran(slot) for each of a batch's plain runs, given their lateness.
inline void Shard::count_ran(std::span<const std::int64_t> lateness) {
  bump(ran_, lateness.size());
  if (engine_.opt.record_lateness) lateness_.record_all(lateness);
}

}  // namespace kairos::detail
