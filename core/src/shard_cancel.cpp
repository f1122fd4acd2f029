// shard_cancel.cpp: cancel (ScheduledFuture::cancel) and the pin that keeps the shard alive
// behind it.
//
// Ownership (who may touch what):
//   TaskBase::state           one word, changed only by CAS (detail/task.hpp). A cancel wins
//                             kPending -> kCancelled (or kRunning/kOrphan -> kCancelled) against
//                             a start, a completion, shutdown_now and the leader's take-in.
//   kPin                      set by the cancel's own CAS when the canceller must enter the shard
//                             (below), cleared by on_cancelled: while it is set, the canceller is
//                             inside this shard (counting, one post), so the shard and its
//                             scheduler stay alive.
//   kRemoved                  set together with the pin's release (CN2): the task is counted out
//                             already (removes_requested_), nobody counts it out again.
//   removes_requested_        pinned cancellers add (CN4); pending_of reads (CT2, shard.hpp).
//   the remove request        a queued task only, under remove-on-cancel: a reference of its
//                             own, posted to the inbox, taken by the leader (apply_request).
//
// The common cancel is one CAS and never enters the shard. A task the leader has not taken in
// (no kQueued: a timeout cancelled well before it is due, W2) is cancelled by its state word
// alone: kPending -> kCancelled, no pin, no count, no message. Whoever next drains the inbox
// meets it there (Shard::take_in) and applies the remove-on-cancel policy then: drops it and
// counts it out (departed_, cancelled_), or retains it until its deadline as Java's class does
// with the policy off. A count that must be exact at once drains first: queue_size(), stats()
// and the policy's setter take in what arrived before them (Shard::take_in_arrived), so a cancel
// that returned before them is counted, under the policy it was made under. The transfer budget
// (docs/design.md): the canceller writes only the task's own line, which it wrote at submission
// and which the leader has not read yet, and makes one locked RMW on it. When the cancel comes
// from a handle (ScheduledFuture::cancel) and nothing is left to do on the node after the CAS
// (a one-shot task, not re-armable, whose callable has no destructor), that CAS also drops the
// handle's reference: the handle keeps the deadline and forgets the node, and its destruction is
// no RMW (a W2 pair: two locked RMWs, the seq's and this one, down from three).
// The pinned cancel (CAS with kPin, on_cancelled, the pin's release) remains where the shard must
// know at once: a queued task (a remove request), and a task whose admission counted it
// (kCountsCancel: Options::capacity, whose try_admit reads removes_requested_ on every
// submission).
//
// Edges (each names its partner):
//   (CN1) cancel CAS acq_rel: one winner against a start, a completion, shutdown_now and the
//         take-in CAS (TI1, shard_leader.cpp): a take-in that fails against it reloads and sees
//         kCancelled (and, for the one-CAS cancel, the canceller's writes before it); a cancel
//         that fails against TI1 reloads, sees kQueued, and posts a request.
//   (CN2) on_cancelled: fetch_and / fetch_xor release clears the pin (and sets kRemoved) ->
//         pairs with (CN3).
//   (CN3) wait_unpinned (shard.hpp): acquire loads until the pin is clear; whoever drops or
//         re-files a cancelled task waits there, then sees kRemoved and the count (CN4).
//   (CN4) removes_requested_.fetch_add release -> pairs with the counting acquires (CT2): a
//         queue_size() that sees the count also sees the cancel.
#include <kairos/detail/scheduler_core.hpp>

#include "shard.hpp"

namespace kairos::detail {

// cancel_task's every other case: a task taken in, counted by its admission, waited on, held by a
// re-arm, running, an orphan, or a CAS that lost to another change of the word. `s`: the word
// last read. Not complete() (completion.hpp): its CAS takes kPending, kRunning or kOrphan
// (whichever it meets) and sets the pin with kCancelled when it must enter the shard, the shard
// clears the pin before the awaiters are resumed (a resumed coroutine may destroy the scheduler,
// whose shards wait for every pin), and a task cancelled while it runs keeps its callable for its
// runner.
bool cancel_task_in_general(TaskBase* t, SchedulerCore* core, bool may_interrupt_if_running,
                            std::uint32_t s) noexcept {
  KAIROS_DCHECK(no_kairos_lock_held());
  for (;;) {
    std::uint32_t st = s & kStateMask;
    std::uint32_t n;
    if (st == kRearming) {  // a re-arm holds it for a few instructions
      cpu_relax();
      s = t->state.load(std::memory_order_acquire);
      continue;
    }
    // The one-CAS cancel (cancel_task, kairos/detail/scheduler_core.hpp) unless taken in or
    // counted by an admission.
    const bool pinned = st == kPending && ((s & kQueued) || (t->flags & kCountsCancel));
    if (st == kPending) n = (s & ~kStateMask) | kCancelled | (pinned ? kPin : 0);
    else if (st == kRunning || st == kOrphan) n = (s & ~kStateMask) | kCancelled;
    else return false;
    // (CN1) acq_rel: one winner against a start, a completion, shutdown_now and the leader's
    // take-in (TI1); the pin keeps the shard alive until on_cancelled clears it (CN2).
    if (!t->state.compare_exchange_weak(s, n, std::memory_order_acq_rel, std::memory_order_acquire)) continue;
    if (s & kWaiters) futex_wake_all(&t->state);
    if (st == kPending) {
      if (pinned) core->on_cancelled(t, s & kQueued);  // clears the pin
      drop_callable(t);                                  // it will never run: its captures go now
    } else if (st == kOrphan) {
      drop_callable(t);
    } else if (may_interrupt_if_running) {
      if (std::stop_source* src = task_stop_source(t)) src->request_stop();
    }
    finish_completion(t, (s & ~kStateMask) | kCancelled);  // (AW3) the caller's handle keeps t alive
    return true;
  }
}

// The shard's half (SchedulerCore::on_cancelled): t is kCancelled|kPin.
void Shard::on_cancelled(TaskBase* t, bool queued) noexcept {
  KAIROS_DCHECK((t->state.load(std::memory_order_relaxed) & (kStateMask | kPin)) == (kCancelled | kPin));
  // t is kCancelled|kPin: attached, so this shard is alive until the pin is cleared below.
  if (!engine_.remove_on_cancel.load(std::memory_order_acquire)) {  // (PO2)
    t->state.fetch_and(~kPin, std::memory_order_release);  // (CN2) retained until its deadline
    return;
  }
  // (CN4) release: a queue_size() that sees the count (CT2) also sees the cancel.
  std::uint64_t n = removes_requested_.fetch_add(1, std::memory_order_release);
  bool wake = engine_.state() != RunState::kActive;  // after shutdown at once: it may be the last task
  if (queued) {  // in the timer queue (or a batch): the leader must be told
    add_ref(t);  // the request's reference
    if (!inbox_.post(t, Inbox::kRemoveTag)) release(t);  // no memory: it stays queued until its deadline,
                                             // already uncounted (kRemoved); not the last ref
    else if ((n & (kRemoveRequestHighWater - 1)) == kRemoveRequestHighWater - 1) wake = true;
  }  // not queued: the leader drops the node when it drains it; nothing to send
  if (wake) wait_.wake();
  // (CN2) release: sets kRemoved and clears the pin in one step; pairs with (CN3).
  t->state.fetch_xor(kPin | kRemoved, std::memory_order_release);
}

}  // namespace kairos::detail
