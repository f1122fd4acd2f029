// shard_rearm.cpp: re-arm (ScheduledFuture::rearm): a pending one-shot task moves to a new
// deadline without a second node, never early and never late.
//
// Ownership (who may touch what):
//   kRearming                 the re-arm lock: kPending held for a few instructions
//                             (lock_pending RA1 / unlock_pending RA2, detail/task.hpp). Every
//                             transition out of kPending waits for it, so a re-arm racing a start,
//                             a cancel or shutdown_now is ordered before or after it as a whole.
//   latest_deadline/latest_seq  the key rearm() asked for last (RearmBase): written by the
//                             re-armer, read by the leader, each only while it holds kRearming.
//   deadline/seq              the key the task is filed at in the timer queue: written by the
//                             leader under mu_ while the task is out of the queue (adopt_latest),
//                             by its only owner after kOrphan, and read by delay() (relaxed).
//   the refile request        a re-arm to an earlier deadline posts one (a reference of its own)
//                             to the inbox; the leader applies it under mu_ (refile). At most
//                             one per task until the leader files the task at its newest key
//                             (refile_posted, RearmBase: both sides hold kRearming).
//
// The protocol. The re-armer, holding kRearming, writes the latest key; the new key takes a
// sequence number like a submission (IN1), so equal deadlines keep re-arm order against other
// re-arms and submissions. Earlier than the filed deadline: it posts a refile request and
// notifies the leader's wait (never late). Later: nothing is sent; when the filed deadline
// comes, the leader finds the task re-armed and re-files it at its latest key (never early).
// The leader reads the latest key only under the same lock (RA1/RA2), wherever it meets the
// task: taking it in (take_in files it at its latest key), popping it (refiled_at_newest),
// starting it (try_start: a start and a re-arm never both win), judging it after shutdown
// (newest_key) and taking it for shutdown_now (after kOrphan no re-arm follows; the CAS's
// acquire sees the last one's keys, RA2). The seq the re-arm took is then counted as abandoned
// (no submission item follows), after any request: the leader's count read (leader_wait.hpp)
// that sees IN1 waits for that abandon, so it drains the request before it waits.
//
// Edges (each names its partner):
//   (RA1) lock_pending: CAS kPending -> kRearming acq_rel: the holder sees what the previous
//         holder wrote -> pairs with (RA2).
//   (RA2) unlock_pending: CAS kRearming -> kPending (or kRunning) acq_rel: its release publishes
//         the holder's writes (the latest key, an adopted key) -> pairs with (RA1) and with any
//         later acquire of the state word (shutdown_now's kOrphan CAS, the retained check RA3).
//   (RA3) retained_after_rearm: acquire load of a cancelled task's state after the pin (CN3):
//         sees the keys of the last re-arm, which let go (RA2) before the cancel (CN1) won.
//   (IN1) the re-arm's take_seq (inbox.hpp): the seq, seq_cst, as a submission's.
#include <kairos/detail/scheduler_core.hpp>

#include "shard.hpp"

namespace kairos::detail {

// ---- the re-armer (any thread) ------------------------------------------------------------------
bool rearm_task(TaskBase* t, SchedulerCore* core, std::int64_t deadline, bool never) noexcept {
  if (!(t->flags & kRearmable) || !lock_pending(t)) return false;  // (RA1)
  // Held: the task stays attached (no start, cancel or shutdown_now until unlock), so `core`
  // and its shard are alive. A loop woken by this re-arm has its Options::on_wake run only after
  // the unlock, with the sequence number given back: the callback holds nothing of kairos and
  // may call anything, on this task too, or destroy the scheduler (`owed` keeps the engine).
  std::shared_ptr<SchedulerCore> owed = core->rearm_locked(t, deadline, never);
  unlock_pending(t);  // (RA2)
  if (owed) owed->run_wake_callback();
  return true;
}

// (t held in kRearming by the caller: no start, cancel or shutdown_now until it lets go.)
bool Shard::rearm_locked(TaskBase* t, std::int64_t deadline, bool never) noexcept {
  KAIROS_DCHECK((t->state.load(std::memory_order_relaxed) & kStateMask) == kRearming);
  auto* r = static_cast<RearmBase*>(t);
  std::uint64_t seq = take_seq();  // (IN1; RN1 once a period)
  std::atomic_ref<std::int64_t>(r->latest_deadline).store(never ? kMaxNs : deadline, std::memory_order_relaxed);
  r->latest_seq = static_cast<std::uint32_t>(seq);  // the order stamp (seq_before)
  r->latest_never = never;
  // Filed later than the new deadline: the leader must move it now (never late). Filed earlier:
  // nothing to send; when the filed deadline comes, the leader re-files it (never early).
  std::int64_t filed = std::atomic_ref<std::int64_t>(t->deadline).load(std::memory_order_relaxed);
  bool earlier = !never && (deadline < filed || t->never_due());
  if (!earlier) {
    inbox_.abandon();
    return false;
  }
  // A request already in flight files the task at this newest key when the leader applies it
  // (refile_rearmable_at_newest reads the latest key under kRearming): no second one, so a flood
  // of earlier re-arms keeps one item per task in the inbox, not one per re-arm.
  if (!r->refile_posted) {
    add_ref(t);  // the request's reference
    // No memory for the request: it starts at its filed deadline, later than asked (the one
    // way a re-arm can be late; the inbox allocates only when it grows past its high-water).
    if (inbox_.post(t, Inbox::kRefileTag)) r->refile_posted = 1;
    else release(t);
  }
  // The seq is given back before the wake: a loop woken here drains the request without
  // waiting for this thread (its count read waits for every seq taken before it).
  inbox_.abandon();
  return wait_.notify_earlier(deadline);
}

// ---- the leader (under mu_) ---------------------------------------------------------------------
// A refile request: a re-arm to an earlier deadline. A task in the timer queue moves to its new
// key now; one in a batch or not yet taken in is checked when it starts (try_start).
void Shard::refile(Lock& lk, TaskBase* t) {
  KAIROS_DCHECK(lk.owns_lock());
  if (!TimerQueue::queued(t)) return;
  queue_.erase(t);  // its key changes only while it is out
  if (!refiled_at_newest(lk, t)) queue_.push(t);  // not re-armed after all: where it was (or
                                                  // gone: refiled_at_newest dropped it after shutdown)
}

// try_start for a re-armable task (the others start inline, shard.hpp): starts t (kPending ->
// kRunning) at the key it is filed at, unless it was re-armed since: then its filed key becomes
// the latest one and the caller puts it back in the queue, where it takes its place by
// (deadline, seq) — also when the new deadline is due already, so that equal deadlines keep
// re-arm order. A re-arm and a start thus never both win.
Shard::Start Shard::try_start_rearmable(TaskBase* t) noexcept {
  if (!lock_pending(t)) return Start::gone;  // (RA1)
  if (static_cast<RearmBase*>(t)->adopt_latest()) {
    unlock_pending(t);  // (RA2)
    return Start::refile;
  }
  unlock_pending(t, kRunning);  // (RA2)
  return Start::started;
}

// refiled_at_newest for a re-armable task: t, just taken out of the timer queue, goes back in
// line at its newest key if it was re-armed since it was filed: a pending task (its keys read and
// adopted under the re-arm lock, RA1/RA2) or a cancelled one still retained (its keys are final).
// True if it went back (or was dropped after shutdown: refiled_after_shutdown).
bool Shard::refile_rearmable_at_newest(Lock& lk, TaskBase* t) {
  KAIROS_DCHECK(lk.owns_lock() && !TimerQueue::queued(t));
  auto* r = static_cast<RearmBase*>(t);
  bool moved = false;
  if (lock_pending(t)) {  // (RA1)
    moved = r->adopt_latest();
    unlock_pending(t);  // (RA2)
  } else if (retained_after_rearm(t)) {
    moved = r->adopt_latest();
  }
  if (moved && refiled_after_shutdown(lk, t)) queue_.push(t);
  return moved;
}

// A cancelled task retained in the queue (remove-on-cancel was off when it was cancelled) stays
// counted until its deadline: for a task re-armed before the cancel, the newest one. True if t is
// such a task and is filed at an older key (mu_ held). Its keys no longer change: re-arm needs a
// pending task, and the cancel (CN1) that made it kCancelled came after the last re-arm let go.
bool Shard::retained_after_rearm(TaskBase* t) noexcept {
  if (!(t->flags & kRearmable)) return false;
  wait_unpinned(t);  // (CN3) kRemoved, if the cancel asks for removal, is set once the pin is clear
  std::uint32_t s = t->state.load(std::memory_order_acquire);  // (RA3) sees the last re-arm's keys
  return (s & kStateMask) == kCancelled && !(s & kRemoved) && static_cast<RearmBase*>(t)->rearmed();
}

// A pending task about to go back in line at a new key: after shutdown(), the policies judge it
// again at that key, as apply_policies() judged the tasks in the queue. False if they no longer
// allow it: it is cancelled and dropped here (the caller must not re-queue).
bool Shard::refiled_after_shutdown(Lock& lk, TaskBase* t) {
  KAIROS_DCHECK(lk.owns_lock());
  const RunState st = engine_.state();
  if (st != RunState::kShutdown || allowed_after_shutdown(lk, t, engine_.now_ns())) return true;
  drop_cancelled(lk, t, transition(t, kPending, kCancelled));  // (a retained cancelled task: dropped)
  return false;
}

// ---- the lifecycle calls (under mu_) ------------------------------------------------------------
// The key a task waiting in a runner's batch waits for now (its runner may start it meanwhile,
// without mu_): the one it was filed at, or, for a task re-armed since, the newest one, read while
// RA1/RA2 hold off a re-arm and the runner's start. Nothing if it is no longer pending. A periodic
// task's runner moves its deadline and its never byte when its run ends (advance_period, no
// lock), hence the atomic loads: a snapshot, which the caller's transition out of kPending then
// confirms or refutes (a task that started meanwhile is not taken).
std::optional<FiledKey> Shard::newest_key(TaskBase* t) noexcept {
  if (!(t->flags & kRearmable))
    return FiledKey{std::atomic_ref<std::int64_t>(t->deadline).load(std::memory_order_relaxed), t->seq,
               std::atomic_ref<std::uint8_t>(t->never).load(std::memory_order_relaxed) != 0};
  if (!lock_pending(t)) return std::nullopt;  // (RA1)
  auto* r = static_cast<RearmBase*>(t);
  FiledKey k{r->latest_deadline, r->latest_seq, r->latest_never != 0};
  unlock_pending(t);  // (RA2)
  return k;
}

// The head of the timer queue at its newest key: a head re-armed since it was filed goes back in
// line first, so that discard_oldest cancels (and next_deadline reports) the task that is
// earliest now.
TaskBase* Shard::head_at_newest_key(Lock& lk) {
  KAIROS_DCHECK(lk.owns_lock());
  while (!queue_.empty()) {
    TaskBase* t = queue_.top();
    if (!(t->flags & kRearmable)) return t;
    queue_.pop();
    if (refiled_at_newest(lk, t)) continue;
    queue_.push(t);  // at the key it was filed at: the head again
    return t;
  }
  return nullptr;
}

}  // namespace kairos::detail
