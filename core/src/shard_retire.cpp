// shard_retire.cpp: how tasks leave a shard without running, and how the shard ends: drop,
// make room (discard_oldest), the shutdown policies, take pending (shutdown_now), and the
// cancelling of what is left (cancel_leftovers) that every end goes through.
//
// Ownership (who may touch what):
//   queue_, batches_, graveyard_, threads_alive_, pending_taken_   mu_; every call here takes it.
//   a dropped task            its references and callable go after mu_ (bury_later, then
//                             unlock_and_bury, shard.cpp): no user code runs under mu_.
//   a task taken by shutdown_now   kOrphan: its scheduler reference now belongs to the caller.
//   kRemoved                  set by whoever counted the task out at its cancel (shard_cancel.cpp,
//                             make_room): nobody counts it out again (drop_cancelled).
//
// One exit. The shard's last thread (run_worker's exit, shard_leader.cpp), a thread that never
// started, the poller's retirement (shard_poll.cpp), a submission that saw shutdown only after its
// enqueue, and the destructor all end in cancel_leftovers under mu_: whatever is still pending
// there (in the inbox, confirmed or not, and in the queue) is cancelled and dropped. After
// shutdown_now() took the tasks (pending_taken_), nothing is left for it but what raced the end.
//
// Edges (each names its partner):
//   (CN3) wait_unpinned before a cancelled task's kRemoved is read (shard.hpp, shard_cancel.cpp).
//   (CT1) count_departed for every task that leaves uncounted (shard.hpp).
//   (RT1) take_pending: the kOrphan CAS acq_rel: no re-arm after it; its acquire sees the last
//         re-arm's keys (pairs with RA2), so adopt_latest reads final keys.
//   (RT2) make_room: kRemoved fetch_or relaxed: the victim's runner reads it under mu_, which
//         orders it (the mutex is the edge; the atomic publishes nothing).
#include <algorithm>

#include "shard.hpp"

namespace kairos::detail {

// ---- drop ---------------------------------------------------------------------------------------
// A task that leaves without running: counted as cancelled unless cancel() counted it already;
// its references and callable are released after mu_, or at once when that runs no user code
// (freeable_in_place, shard.hpp: a cancelled task whose last reference is ours).
void Shard::drop(Lock& lk, TaskBase* t, bool drop_callable) {
  KAIROS_DCHECK(lk.owns_lock() && !TimerQueue::queued(t));
  wait_unpinned(t);  // (CN3)
  std::uint32_t s = t->state.load(std::memory_order_acquire);  // (RC2) when the count is 1
  if ((s & kStateMask) == kCancelled && !(s & kRemoved)) bump(cancelled_);
  if (freeable_in_place(t, s)) {  // nothing of it is user code: freed here, not after mu_
    destroy_node(t);
    return;
  }
  bury_later(t, drop_callable);
}

// A task that left the queue or inbox cancelled: it leaves the count unless cancel() already
// took it out (kRemoved). drop_callable: the caller won that cancel itself.
void Shard::drop_cancelled(Lock& lk, TaskBase* t, bool drop_callable) {
  wait_unpinned(t);  // (CN3)
  if (!(t->state.load(std::memory_order_acquire) & kRemoved)) count_departed(1);
  drop(lk, t, drop_callable);
}

// ---- make room: discard_oldest ------------------------------------------------------------------
// Cancels the earliest-deadline pending task: the head of the timer queue or a due task waiting
// in a runner's batch, whichever is earlier. False if there is none.
bool Shard::make_room() {
  std::vector<TaskBase*> grave;
  Lock lk(mu_);
  drain_all(lk);
  wait_.wake();  // what was drained here may be earlier than the deadline the leader waits for
  bool made = false;
  while (!made) {
    TaskBase* oldest = head_at_newest_key(lk);
    FiledKey oldest_key = oldest == nullptr ? FiledKey{} : filed_key(oldest);
    bool in_batch = false;
    for (const std::vector<TaskBase*>& popped : batches_)
      for (TaskBase* t : popped) {
        if (t == nullptr || (t->state.load(std::memory_order_acquire) & kStateMask) != kPending) continue;  // (TI2)
        std::optional<FiledKey> k = newest_key(t);  // re-armed while it waited: re-filed at that key
        if (k && (oldest == nullptr || filed_before(*k, oldest_key))) {
          oldest = t;
          oldest_key = *k;
          in_batch = true;
        }
      }
    if (oldest == nullptr) break;
    if (in_batch) {
      if (!reserve_graveyard(1)) break;  // no memory to bury it: no room made (nothing throws)
      if (!cancel_in_batch(lk, oldest)) continue;  // started or cancelled meanwhile
      add_ref(oldest);  // ours: its callable and awaiters go after mu_ (bury), its node with its runner
      bury_later(oldest, /*drop_callable=*/true);
    } else {
      queue_.pop();
      drop_cancelled(lk, oldest, transition(oldest, kPending, kCancelled));  // a retained cancelled
                                                                             // task makes room too
    }
    made = true;
  }
  unlock_and_bury(lk, grave);
  return made;
}

// A pending task waiting in a runner's batch, cancelled where it is (mu_ held): its runner will
// find it cancelled and drop it; kRemoved: counted out here already. The caller takes a reference
// and buries it with kDropCallable: its callable and its awaiters go after mu_ (bury). False if
// it started or was cancelled meanwhile.
bool Shard::cancel_in_batch(Lock& lk, TaskBase* t) {
  KAIROS_DCHECK(lk.owns_lock());
  if (!transition(t, kPending, kCancelled)) return false;
  t->state.fetch_or(kRemoved, std::memory_order_relaxed);  // (RT2) its runner reads it under mu_
  count_departed(1);
  bump(cancelled_);
  return true;
}

// ---- the policies of shutdown() -----------------------------------------------------------------
void Shard::apply_shutdown() {
  std::vector<TaskBase*> grave;
  Lock lk(mu_);
  if (threads_alive_ > 0) drain_all(lk);
  apply_policies(lk);
  wait_.wake();
  followers_cv_.notify_all();
  unlock_and_bury(lk, grave);
}

// After shutdown: cancels and removes what the policies no longer allow, and every cancelled task
// retained in the queue. After shutdown_now() started, nothing: it takes them.
void Shard::apply_policies(Lock& lk) {
  KAIROS_DCHECK(lk.owns_lock());
  if (engine_.state() >= RunState::kShutdownNow) return;
  std::int64_t now = engine_.now_ns();
  auto refused = [&](TaskBase* t) {  // the lambdas here run at once, on this thread: under mu_
    mu_.assert_held();
    std::uint32_t s = t->state.load(std::memory_order_acquire) & kStateMask;  // (TI2)
    return s == kCancelled || !allowed_after_shutdown(lk, t, now);
  };
  std::size_t in_batches = 0;
  for (const std::vector<TaskBase*>& popped : batches_) in_batches += popped.size();
  if (!reserve_graveyard(queue_.size() + in_batches)) {
    // No memory to bury them now: cancelled in place (their callables go with their nodes),
    // they leave the queue at their deadline like any retained cancelled task.
    queue_.for_each([&](TaskBase* t) {
      if (refused(t)) transition(t, kPending, kCancelled);
    });
    return;
  }
  queue_.remove_if(refused, [&](TaskBase* t) {
    mu_.assert_held();
    drop_cancelled(lk, t, transition(t, kPending, kCancelled));
  });
  // A task waiting in a runner's batch was due when it was popped. A periodic one not yet
  // started is refused as in the queue when periodic tasks stop at shutdown (several may share a
  // batch: pop_due, next_run_after), as Java's run() checks its run state before each run: it is
  // cancelled before shutdown() returns, its callable and awaiters released after mu_ under a
  // reference of ours (bury), its node by its runner. A run already started (kRunning) ends, and
  // its runner cancels the series after it (after_run). A one-shot task stays allowed, unless it
  // was re-armed there since (to later: it is no longer due): judged at its newest key, as in the
  // queue. Only a re-armable task can have moved, and only a delayed one can be refused: one read
  // of its keys.
  const bool periodic_stop = !engine_.continue_periodic.load(std::memory_order_acquire);  // (PO2)
  const bool delayed_stop = !engine_.exec_delayed.load(std::memory_order_acquire);       // (PO2)
  if (!periodic_stop && !delayed_stop) return;
  for (const std::vector<TaskBase*>& popped : batches_)
    for (TaskBase* t : popped) {
      if (t == nullptr) continue;
      if (t->periodic()) {
        if (periodic_stop && cancel_in_batch(lk, t)) {
          add_ref(t);
          bury_later(t, /*drop_callable=*/true);
        }
        continue;
      }
      if (!delayed_stop || !(t->flags & kRearmable)) continue;
      const std::optional<FiledKey> k = newest_key(t);  // nullopt: no longer pending
      // The filed key as a snapshot: its runner adopts a re-arm without mu_ (try_start), and
      // then refiles it itself, judged again at that key (refiled_after_shutdown).
      const bool moved = k && (k->deadline != std::atomic_ref<std::int64_t>(t->deadline).load(std::memory_order_relaxed) ||
                               k->never != (std::atomic_ref<std::uint8_t>(t->never).load(std::memory_order_relaxed) != 0));
      if (!moved || (k->deadline <= now && !k->never) || !cancel_in_batch(lk, t)) continue;
      add_ref(t);
      bury_later(t, /*drop_callable=*/true);
    }
}

// The caller has seen run_state == kShutdown; a shutdown_now() racing it takes what is allowed
// here: it needs mu_, which the caller holds. A re-armed task is judged at its newest deadline
// (the one it will start at), not the one it is filed at: one re-armed to later must not slip
// through as "due" after shutdown.
bool Shard::allowed_after_shutdown(Lock& lk, TaskBase* t, std::int64_t now) const noexcept {
  KAIROS_DCHECK(lk.owns_lock());
  if (t->periodic()) return engine_.continue_periodic.load(std::memory_order_acquire);  // (PO2)
  if (engine_.exec_delayed.load(std::memory_order_acquire)) return true;                // (PO2)
  if (!(t->flags & kRearmable)) return is_due(t, now);
  std::optional<FiledKey> k = newest_key(t);  // nullopt: no longer pending (cancelled, started)
  return k ? (k->deadline <= now && !k->never) : is_due(t, now);
}

// ---- take pending: shutdown_now() ---------------------------------------------------------------
// Every pending task of this shard leaves as an orphan, at its newest key (the order
// shutdown_now() returns them in). The room it needs (the result, the graveyard) is made before
// anything is taken: if the memory is not there, bad_alloc leaves with the tasks still here, for
// a later shutdown_now() or the destructor (the engine's caller decides).
void Shard::take_pending(std::vector<TaskBase*>& orphans) {
  std::vector<TaskBase*> grave;
  Lock lk(mu_);
  auto take = [&](TaskBase* t) {
    mu_.assert_held();  // called at once, on this thread
    stamp_if_far(t);  // a far timer still in the inbox (its take-in refused): the list is sorted by deadline
    if (transition(t, kPending, kOrphan)) {  // (RT1) waits out a re-arm in progress (kRearming)
      // No re-arm after kOrphan; the acquire of that CAS sees the last one's keys (RA2).
      if (t->flags & kRearmable) static_cast<RearmBase*>(t)->adopt_latest();
      count_departed(1);
      orphans.push_back(t);  // the scheduler's reference now belongs to the caller
    } else {
      drop_cancelled(lk, t);
    }
  };
  for (bool drained = false; !drained;) {
    drained = drain_all(lk);  // false: the queue could not take some in; they are taken from the inbox
    std::size_t n = queue_.size() + inbox_.unconfirmed_count();
    for (const std::vector<TaskBase*>& popped : batches_) n += popped.size();
    orphans.reserve(orphans.size() + n);  // std::bad_alloc: nothing of this round taken yet
    if (!reserve_graveyard(n)) throw std::bad_alloc();
    stamp_now_ = kMinNs;  // stamp_if_far: a clock read after these tasks' dequeues
    inbox_.take_unconfirmed(take);
    queue_.remove_if([](TaskBase*) { return true; }, take);
  }
  for (std::vector<TaskBase*>& popped : batches_) {
    for (TaskBase*& t : popped) {
      if (t != nullptr && transition(t, kPending, kOrphan)) {  // (RT1)
        if (t->flags & kRearmable) static_cast<RearmBase*>(t)->adopt_latest();  // as above
        add_ref(t);  // the Task's; the runner releases the batch's own
        count_departed(1);
        orphans.push_back(t);
        t = nullptr;
      }
    }
  }
  pending_taken_ = true;
  for (TaskBase* t : running_stoppable_)
    if (std::stop_source* src = task_stop_source(t)) src->request_stop();
  wait_.wake();
  followers_cv_.notify_all();
  unlock_and_bury(lk, grave);
}

// The destructor, when shutdown_now() could not allocate its list: what waits in a runner's
// batch is cancelled where it is (its runner drops it; its callable goes with its node), the
// rest is left to cancel_leftovers, which the exit of this shard's threads (or poller) runs.
void Shard::cancel_pending_in_place() noexcept {
  Lock lk(mu_);
  for (std::vector<TaskBase*>& popped : batches_)
    for (TaskBase* t : popped)
      if (t != nullptr) transition(t, kPending, kCancelled);
  pending_taken_ = true;
  wait_.wake();
  followers_cv_.notify_all();
}

// ---- cancel leftovers: the one exit --------------------------------------------------------
void Shard::add_thread() {
  Lock lk(mu_);
  ++threads_alive_;
}

void Shard::thread_not_started() noexcept {
  std::vector<TaskBase*> grave;
  Lock lk(mu_);
  if (--threads_alive_ == 0) cancel_leftovers(lk);
  unlock_and_bury(lk, grave);
}

// A periodic task's next run, queued by a caller_runs caller, that saw the scheduler shut down
// only after it was enqueued (RS5; a submission checks before its enqueue, RS2, engine.cpp).
// Under mu_ the shard's threads are either still there (they will drain it: their exit waits for
// the inbox to catch up) or gone; then this thread drains the inbox and cancels what it finds.
void Shard::after_racing_shutdown() {
  std::vector<TaskBase*> grave;
  Lock lk(mu_);
  if (threads_alive_ == 0) cancel_leftovers(lk);
  else wait_.wake();
  unlock_and_bury(lk, grave);
}

// The destructor, after the threads are gone.
void Shard::cancel_leftovers_if_dead() {
  std::vector<TaskBase*> grave;
  Lock lk(mu_);
  if (threads_alive_ == 0) cancel_leftovers(lk);
  unlock_and_bury(lk, grave);
}

// The shard's last thread is gone: nothing may stay pending in it.
void Shard::cancel_leftovers(Lock& lk) {
  KAIROS_DCHECK(lk.owns_lock() && threads_alive_ == 0);
  // No order is needed here: everything left is cancelled, in place (no list of them is built).
  auto drop_one = [&](TaskBase* t) {  // the lambdas here run at once, on this thread: under mu_
    mu_.assert_held();
    drop_cancelled(lk, t, transition(t, kPending, kCancelled));
  };
  (void)reserve_graveyard(queue_.size() + inbox_.unconfirmed_count());
  inbox_.take_unconfirmed(drop_one);
  do {
    inbox_.drain(
        [&](std::span<TaskBase* const> confirmed) {
          for (TaskBase* t : confirmed) drop_one(t);
          return confirmed.size();
        },
        request_callback(lk));
  } while (inbox_.has_unconfirmed());
  queue_.remove_if([](TaskBase*) { return true; }, drop_one);
}

}  // namespace kairos::detail
