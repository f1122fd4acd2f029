// shard_restamp.cpp: the restamp pass on a shard: its order stamps renumbered, in order, before
// the oldest of them leave the modular window (the arithmetic and its argument: restamp.hpp).
//
// When. The producer that takes the first sequence number of a period asks (RN1, Shard::take_seq,
// and wakes the leader); the pass runs under mu_ before anything compares stamps again: at the
// top of the leader's loop (before a reached deadline's pop), and at the end of every drain
// (the leader's, a poll's, next_deadline()'s, a lifecycle call's).
//
// Which stamps. Every place a stamp of this shard lives while it may still be compared:
//   - the timer queue (heap and runs) and the runners' batches (batches_): mu_ is held, and no
//     runner writes a seq without mu_, except a re-armable task's start adopting its latest key
//     (try_start_rearmable), which holds the task in kRearming;
//   - a re-armable task's filed and latest key (RearmBase::latest_seq): read and written only
//     while the pass holds the task in kRearming (RA1/RA2) for the whole pass, or, for a task
//     no longer pending, not at all (a started one-shot task is never filed again) unless it
//     is cancelled (a retained task's keys are final and read under mu_ only);
//   - the inbox: the pass first takes in every submission stamped before its reference
//     (drain_through, as a poll does). If memory is short and some stay there, the pass waits
//     for the next drain (restamp_due_).
// Stamps taken after the reference (a re-arm meanwhile, a later submission) are young and left
// alone: a re-arm of a task the pass holds waits for it.
//
// Edges (each names its partner):
//   (RN1) Shard::take_seq -> LeaderWait::ask_restamp: relaxed store, then LW7 (leader_wait.hpp).
//   (RN2) restamp_if_due -> LeaderWait::take_restamp_request: relaxed load/exchange, after LW1.
//   (RA1)/(RA2) the re-arm lock, as every holder takes it (shard_rearm.cpp).
#include <new>
#include <vector>

#include "shard.hpp"

namespace kairos::detail {

namespace {

// The stamps the pass gathers, and the re-armable tasks it holds in kRearming meanwhile.
struct Gathered {
  std::uint32_t reference;
  std::vector<StampRef> old;
  std::vector<TaskBase*> held;

  void stamp(std::uint32_t& s) {  // may throw std::bad_alloc
    const std::uint32_t age = reference - s;
    if (stamp_is_old(age)) old.push_back(StampRef{&s, age});
  }
  void task(TaskBase* t) {  // may throw std::bad_alloc (t then not held)
    if (!(t->flags & kRearmable)) return stamp(t->seq);
    auto* r = static_cast<RearmBase*>(t);
    if (lock_pending(t)) {  // (RA1) until the pass ends
      try {
        held.push_back(t);
      } catch (...) {
        unlock_pending(t);  // (RA2)
        throw;
      }
    } else if ((t->state.load(std::memory_order_acquire) & kStateMask) != kCancelled) {
      return;  // started, done, or taken by shutdown_now(): never compared again
    }
    stamp(t->seq);
    stamp(r->latest_seq);
  }
  void let_go() noexcept {
    for (TaskBase* t : held) unlock_pending(t);  // (RA2)
    held.clear();
  }
};

}  // namespace

void Shard::restamp(Lock& lk) {
  KAIROS_DCHECK(lk.owns_lock());
  restamp_due_ = false;
  // Every submission stamped before the reference is taken in first (as a poll's drain does);
  // the inbox's own drain, not Shard::drain_through: that one ends by coming back here.
  const std::uint64_t counted = inbox_.submitted(), reference = inbox_.seqs_taken();
  inbox_.drain_through(counted, reference, take_in_callback(lk), request_callback(lk));
  if (inbox_.holds_unconfirmed_before(reference)) {  // no memory to take them in: later
    restamp_due_ = true;
    return;
  }
  Gathered g{static_cast<std::uint32_t>(reference), {}, {}};
  try {
    queue_.for_each([&](TaskBase* t) { g.task(t); });
    for (std::vector<TaskBase*>& batch : batches_)
      for (TaskBase* t : batch)
        if (t != nullptr && !TimerQueue::queued(t)) g.task(t);
  } catch (const std::bad_alloc&) {  // nothing renumbered: the next drain tries again
    g.let_go();
    restamp_due_ = true;
    return;
  }
  renumber_old(g.old, g.reference);
  g.let_go();
  queue_.restamped();
  restamps_.store(restamps_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);  // mu_: one writer
}

}  // namespace kairos::detail
