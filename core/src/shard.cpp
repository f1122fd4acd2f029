// shard.cpp: a shard's state and its lock: construction, the graveyard (no user code under mu_),
// and what the lifecycle and query calls read (idle, take_in_arrived, stats).
//
// The shard's protocols, one file each, in the order a task meets them:
//   shard.hpp           producers: publish and the pending count (CT edges)
//   shard_leader.cpp    the consumer path: drain, take in, wait, pop, the batch loop (run, after
//                       the run), shared with poll mode
//   completion.hpp      how a task completes and how a run ends (complete, run_once)
//   shard_cancel.cpp    cancel and the pin (CN edges)
//   shard_rearm.cpp     re-arm (RA edges)
//   shard_retire.cpp    drop, make room, the shutdown policies, take pending, cancel leftovers
//   shard_poll.cpp      the same consumer path driven by the owner's loop (poll mode)
//   shard_hooks.cpp     the execution hooks, purge(), the active count
//
// Ownership (who may touch what): see the member list of shard.hpp; every field there is marked
// lock-free, written by one kind of thread, or guarded by mu_.
//
// The lock. mu_ guards the timer queue, the running batches (batches_), and the fields marked in
// shard.hpp.
// Producers and cancellers never take it. No user code runs under it: a task reference or a
// callable that must go while mu_ is held is put in graveyard_ (bury_later), and buried (released)
// by the thread that holds mu_ right after it unlocks (unlock_and_bury). The lock is checked by
// the compiler: shard.hpp marks each field mu_ guards KAIROS_GUARDED_BY(mu_) and each function
// that needs it held KAIROS_REQUIRES(mu_), and clang's -Wthread-safety proves every access and
// call holds it (thread_annotations.hpp says what that does and does not cover; CI builds the
// library so, warnings as errors). Most such functions take the holder's Lock&, to release it
// while they wait or bury, and check it in debug builds (KAIROS_DCHECK).
//
// A completion under mu_ (a terminal transition: the policies, discard_oldest, the exit, a
// periodic task's last run) is the CAS alone; the task goes to the graveyard, and bury finishes
// the completion after the unlock (finish_completion, completion.hpp: the awaiter wake).
//
// Edges (each names its partner):
//   (AW3) bury: a task completed under mu_ has its awaiters resumed here, with no lock held
//         (awaiters.cpp).
#include <algorithm>

#include "freed_nodes.hpp"
#include "shard.hpp"

namespace kairos::detail {

Shard::Shard(const EngineState& engine, unsigned index)
    : engine_(engine),
      index_(index),
      runners_(engine.opt.threads_per_shard),
      starts_(std::make_unique<StartCount[]>(runners_)) {
  batches_.resize(runners_);
  graveyard_.reserve(2 * kMaxBatch);
  g_newest_for_testing.store(this, std::memory_order_relaxed);  // a test seam
  if (engine.loop_wake) wait_.set_loop_wake(engine.loop_wake.get());  // before any producer
  (void)tsc_is_clocksource();  // its one file read here, not in a runner's first batch
  BatchClock::anchor();         // the lateness clock's rate is measured from here
}

Shard::~Shard() {
  Shard* self = this;
  g_newest_for_testing.compare_exchange_strong(self, nullptr, std::memory_order_relaxed);  // a test seam
}

// ---- the graveyard ------------------------------------------------------------------------------
void Shard::unlock_and_bury(Lock& lk, std::vector<TaskBase*>& grave) {
  KAIROS_DCHECK(lk.owns_lock() && grave.empty());
  grave.swap(graveyard_);  // graveyard_ keeps the (empty) capacity of grave
  lk.unlock(mu_);
  bury(grave);
}

void Shard::bury(std::vector<TaskBase*>& grave) noexcept {
  FreedNodes freed;  // the nodes' memory goes back a class at a time, when it ends
  for (TaskBase* item : grave) {
    auto bits = reinterpret_cast<std::uintptr_t>(item);
    TaskBase* t = reinterpret_cast<TaskBase*>(bits & ~kDropCallable);
    if (bits & kDropCallable) drop_callable(t);
    // (AW3) completed under mu_ (cancelled by the shutdown policies, discard_oldest, the exit, a
    // periodic task's last run): the completion finishes here, with no lock held.
    std::uint32_t s = t->state.load(std::memory_order_acquire);  // (RC2) when the count is 1
    if ((s & kAwaited) && is_terminal(s)) finish_completion(t, s);  // kAwaited first: rarely set
    // The scheduler's reference is the last (an execute() task, a dropped future): nobody else
    // can change the count any more, so the node goes without the RMW.
    if (only_reference(s)) freed.destroy(t);
    else release(t);
  }
  grave.clear();
}

// ---- what the lifecycle calls read --------------------------------------------------------------
bool Shard::idle(std::uint64_t submitted, std::uint64_t removes, std::int64_t now) {
  std::vector<TaskBase*> grave;
  Lock lk(mu_);
  bool dead = threads_alive_ == 0;
  bool idle = true;
  if (running_ != 0) idle = false;
  else if (!dead && (inbox_.drained() < submitted || inbox_.removes_done() < removes || inbox_.has_unconfirmed())) idle = false;
  else if (!dead && !queue_.empty() && is_due(queue_.top(), now)) idle = false;
  else if (!dead && held_due(now)) idle = false;  // held back in the inbox (take_in_all), due
  if (!idle) wait_.wake();
  unlock_and_bury(lk, grave);
  return idle;
}

// queue_size(), stats(), the remove-on-cancel setter: every submission counted before the call
// is taken in (and a one-CAS cancel met there counted out: shard_cancel.cpp). No wake-up is
// owed: the leader computes its wait under mu_ (so it sees what this took in), and a submission
// this took in after the leader armed was counted after its arm, so its producer met that arm
// (LW3) and woke it if it had to. Before shutdown only: after it, the shutdown took in what had
// arrived, and a racing submission was counted by it or is rejected by its producer (RS2).
// Bounded (kQueryRounds): under producers faster than the drain it returns with what it took in
// (queue_size() is exact only while producers are quiet).
void Shard::take_in_arrived() noexcept {
  std::vector<TaskBase*> grave;  // empty unless the drain dropped something: no allocation then
  Lock lk(mu_);
  if (threads_alive_ > 0 && engine_.state() == RunState::kActive) {
    const std::uint64_t counted = inbox_.submitted(), seq_bound = inbox_.seqs_taken();  // (IN5), (IN8)
    drain_through(lk, counted, seq_bound, Inbox::kQueryRounds);  // never chases faster producers
  }
  unlock_and_bury(lk, grave);
}

std::size_t Shard::held_for_testing() const {
  Lock lk(mu_);
  return inbox_.held();
}

ShardStats Shard::stats() const {
  ShardStats s;
  s.submitted = inbox_.submitted();
  s.ran = ran_.load(std::memory_order_relaxed);
  s.cancelled = cancelled_.load(std::memory_order_relaxed) + removes_requested_.load(std::memory_order_relaxed);
  s.rejected = rejected_.load(std::memory_order_relaxed);
  s.pending = static_cast<std::uint64_t>(std::max<std::int64_t>(0, pending()));
  s.periodic_failures = periodic_failures_.load(std::memory_order_relaxed);
  s.spin_window_ns = adaptive_.published_window();
  s.wake_overshoot_ns = adaptive_.published_estimate();
  s.wake_overshoot_samples = adaptive_.published_samples();
  s.loop_wakes = wait_.loop_wakes();
  s.far_timers = far_timers_.load(std::memory_order_relaxed);
  // A snapshot: each count only grows and the later one read may have moved past the earlier.
  auto behind = [](std::uint64_t in, std::uint64_t out) { return in > out ? in - out : 0; };
  s.in_inbox = behind(s.submitted, inbox_.drained()) + behind(inbox_.removes_sent(), inbox_.removes_done());
  Lock lk(mu_);
  s.lateness = lateness_;
  return s;
}

}  // namespace kairos::detail
