// shard.cpp: a shard's leader/follower loop, its drain and accept, and its lifecycle steps.
// The protocols are argued in shard.hpp (draining, cancel, locks, counting), inbox.hpp (FIFO)
// and leader_wait.hpp (no lost wake-up). Edges named here: (A1) the accept CAS, (C1) the cancel
// CAS in task_lifecycle.cpp, (P1)/(P2) the pin.
#include "shard.hpp"

#include <algorithm>
#include <optional>
#include <thread>

#include <kairos/wait.hpp>

#include "threads.hpp"

namespace kairos::detail {
namespace {

// A task is due once the clock reaches its deadline, unless its deadline lies past the clock's
// range (never due: hours::max(), a saturated period), even on a ManualClock at its end.
inline bool is_due(const TaskBase* t, std::int64_t now) noexcept {
  return t->deadline <= now && !t->never_due();
}

// (P2) acquire, pairs with the canceller's pin-clearing release (P1, Shard::on_cancelled): once
// the pin is clear, the canceller is out of this shard and its kRemoved is visible.
void wait_unpinned(TaskBase* t) noexcept {
  // The pin is held for a few instructions (counting, one enqueue); spin, then yield.
  for (int i = 0; t->state.load(std::memory_order_acquire) & kPin; ++i) {
    if (i < 1000) cpu_relax();
    else std::this_thread::yield();
  }
}

}  // namespace

Shard::Shard(const EngineState& engine, unsigned index) : engine_(engine), index_(index) {
  staged_.resize(engine.opt.threads_per_shard);
  graveyard_.reserve(2 * kMaxBatch);
  if (engine.loop_wake) wait_.set_loop_wake(engine.loop_wake.get());  // before any producer
  (void)tsc_is_clocksource();  // its one file read here, not in a runner's first batch
}

Shard::~Shard() = default;

// ---- cancel ---------------------------------------------------------------------------------
void Shard::on_cancelled(TaskBase* t, bool queued) noexcept {
  // t is kCancelled|kPin: attached, so this shard is alive until the pin is cleared below.
  if (!engine_.remove_on_cancel.load(std::memory_order_acquire)) {
    t->state.fetch_and(~kPin, std::memory_order_release);  // (P1) retained until its deadline
    return;
  }
  // release: a queue_size() that sees the count (acquire) also sees the cancel.
  std::uint64_t n = removes_requested_.fetch_add(1, std::memory_order_release);
  bool kick = engine_.state() != kRunningState;  // after shutdown at once: it may be the last task
  if (queued) {  // in the timer queue (or a batch): the leader must be told
    add_ref(t);  // the request's reference
    if (!inbox_.post(t, Inbox::kRemoveTag)) release(t);  // no memory: it stays queued until its deadline,
                                             // already uncounted (kRemoved); not the last ref
    else if ((n & (kDrainEvery - 1)) == kDrainEvery - 1) kick = true;
  }  // not queued: the leader drops the node when it drains it; nothing to send
  if (kick) wait_.kick();
  // (P1) release: sets kRemoved and clears the pin in one step; pairs with (P2).
  t->state.fetch_xor(kPin | kRemoved, std::memory_order_release);
}

// ---- re-arm ---------------------------------------------------------------------------------
// (t held in kRearming by the caller: no start, cancel or shutdown_now until it lets go.)
// The new key takes a sequence number like a submission (I1): equal deadlines keep re-arm
// order against other re-arms and submissions. The seq is then counted as abandoned (no
// submission item follows), after any request: the leader's count read (leader_wait.hpp) that
// sees (I1) waits for that abandon, so it drains the request before it waits.
void Shard::rearm_locked(TaskBase* t, std::int64_t deadline, bool never) noexcept {
  auto* r = static_cast<RearmBase*>(t);
  std::uint64_t seq = inbox_.take_seq();  // (I1)
  std::atomic_ref<std::int64_t>(r->latest_deadline).store(never ? kMaxNs : deadline, std::memory_order_relaxed);
  r->latest_seq = static_cast<std::uint32_t>(seq);  // the order stamp (seq_before)
  r->latest_never = never;
  // Filed later than the new deadline: the leader must move it now (never late). Filed earlier:
  // nothing to send; when the filed deadline comes, the leader re-files it (never early).
  std::int64_t filed = std::atomic_ref<std::int64_t>(t->deadline).load(std::memory_order_relaxed);
  bool earlier = !never && (deadline < filed || t->never_due());
  if (earlier) {
    add_ref(t);  // the request's reference
    // No memory for the request: it starts at its filed deadline, later than asked (the one
    // way a re-arm can be late; the inbox allocates only when it grows past its high-water).
    if (!inbox_.post(t, Inbox::kRefileTag)) release(t);
    wait_.notify_earlier(deadline);
  }
  inbox_.abandon();
}

// Leader side, under mu_: a re-arm to an earlier deadline. A task in the timer queue moves to
// its new key now; one in a batch or not yet accepted is checked when it starts (try_start).
void Shard::refile(TaskBase* t) {
  if (!TimerQueue::queued(t)) return;
  queue_.erase(t);  // its key changes only while it is out
  if (!refiled_at_newest(t)) queue_.push(t);  // not re-armed after all: where it was (or gone:
                                              // refiled_at_newest dropped it after shutdown)
}

// Starts t (kPending -> kRunning) at the key it is filed at, unless it was re-armed since: then
// its filed key becomes the latest one and the caller puts it back in the queue, where it takes
// its place by (deadline, seq) — also when the new deadline is due already, so that equal
// deadlines keep re-arm order. A re-arm and a start thus never both win.
Shard::Start Shard::try_start(TaskBase* t) noexcept {
  if (!(t->flags & kRearmable)) return transition(t, kPending, kRunning) ? Start::started : Start::gone;
  if (!lock_pending(t)) return Start::gone;  // (L1)
  if (static_cast<RearmBase*>(t)->adopt_latest()) {
    unlock_pending(t);  // (L2)
    return Start::refile;
  }
  unlock_pending(t, kRunning);  // (L2)
  return Start::started;
}

// A cancelled task retained in the queue (remove-on-cancel was off when it was cancelled) stays
// counted until its deadline: for a task re-armed before the cancel, the newest one. True if t is
// such a task and is filed at an older key (mu_ held). Its keys no longer change: re-arm needs a
// pending task, and the cancel (C1) that made it kCancelled came after the last re-arm let go;
// the acquire load below (after the pin, P2) sees that re-arm's keys.
bool Shard::retained_after_rearm(TaskBase* t) noexcept {
  if (!(t->flags & kRearmable)) return false;
  wait_unpinned(t);  // (P2) kRemoved, if the cancel asks for removal, is set once the pin is clear
  std::uint32_t s = t->state.load(std::memory_order_acquire);
  return (s & kStateMask) == kCancelled && !(s & kRemoved) && static_cast<RearmBase*>(t)->rearmed();
}

// The head of the timer queue at its newest key (mu_ held): a head re-armed since it was filed
// goes back in line first, so that discard_oldest cancels the task that is earliest now.
TaskBase* Shard::settled_head() {
  while (!queue_.empty()) {
    TaskBase* t = queue_.top();
    if (!(t->flags & kRearmable)) return t;
    queue_.pop();
    if (refiled_at_newest(t)) continue;
    queue_.push(t);  // at the key it was filed at: the head again
    return t;
  }
  return nullptr;
}

// The key a task waiting in a runner's batch waits for now (mu_ held; its runner may start it
// meanwhile, without mu_): the one it was filed at, or, for a task re-armed since, the newest one,
// read while (L1)/(L2) hold off a re-arm and the runner's start. Nothing if it is no longer
// pending. A periodic task's runner moves its deadline and its never byte when its run ends
// (next_deadline, no lock), hence the atomic loads: a snapshot, which the caller's transition
// out of kPending then confirms or refutes (a task that started meanwhile is not taken).
std::optional<Shard::Key> Shard::newest_key(TaskBase* t) noexcept {
  if (!(t->flags & kRearmable))
    return Key{std::atomic_ref<std::int64_t>(t->deadline).load(std::memory_order_relaxed), t->seq,
               std::atomic_ref<std::uint8_t>(t->never).load(std::memory_order_relaxed) != 0};
  if (!lock_pending(t)) return std::nullopt;  // (L1)
  auto* r = static_cast<RearmBase*>(t);
  Key k{r->latest_deadline, r->latest_seq, r->latest_never != 0};
  unlock_pending(t);  // (L2)
  return k;
}

// t, just taken out of the timer queue (mu_ held), goes back in line at its newest key if it was
// re-armed since it was filed: a pending task (its keys read and adopted under the re-arm lock,
// L1/L2) or a cancelled one still retained (its keys are final). True if it went back.
bool Shard::refiled_at_newest(TaskBase* t) {
  if (!(t->flags & kRearmable)) return false;
  auto* r = static_cast<RearmBase*>(t);
  bool moved = false;
  if (lock_pending(t)) {  // (L1)
    moved = r->adopt_latest();
    unlock_pending(t);  // (L2)
  } else if (retained_after_rearm(t)) {
    moved = r->adopt_latest();
  }
  if (moved && refiled_after_shutdown(t)) queue_.push(t);
  return moved;
}

// A pending task about to go back in line at a new key (mu_ held): after shutdown(), the
// policies judge it again at that key, as apply_policies() judged the tasks in the queue. False
// if they no longer allow it: it is cancelled and dropped here (the caller must not re-queue).
bool Shard::refiled_after_shutdown(TaskBase* t) {
  const int st = engine_.state();
  if (st != kShutdown || allowed_after_shutdown(t, engine_.now_ns())) return true;
  drop_cancelled(t, transition(t, kPending, kCancelled));  // (a retained cancelled task: dropped)
  return false;
}

// ---- threads --------------------------------------------------------------------------------
void Shard::add_thread() {
  std::lock_guard lk(mu_);
  ++threads_alive_;
}

void Shard::thread_not_started() noexcept {
  std::vector<TaskBase*> grave;
  Lock lk(mu_);
  if (--threads_alive_ == 0) settle_after_exit();
  unlock_and_bury(lk, grave);
}

void Shard::run_worker(unsigned index) {
  std::vector<TaskBase*> grave;
  grave.reserve(2 * kMaxBatch);
  Lock lk(mu_);
  std::vector<TaskBase*>& staged = staged_[index];
  staged.reserve(kMaxBatch);
  Slot batch[kMaxBatch];
  const bool followers = engine_.opt.threads_per_shard > 1;
  for (;;) {
    while (has_leader_ && !must_exit()) followers_cv_.wait(lk);
    if (must_exit()) break;
    has_leader_ = true;
    std::size_t n = lead(lk, batch, grave);
    has_leader_ = false;
    if (n == 0) continue;  // must_exit became true
    for (std::size_t i = 0; i < n; ++i) staged.push_back(batch[i].task);
    running_ += 1;
    if (followers) followers_cv_.notify_one();  // promote a follower
    unlock_and_bury(lk, grave);
    BatchClock clock(engine_.manual == nullptr);
    for (std::size_t i = 0; i < n; ++i) run_task(batch[i], clock);
    lk.lock();
    for (std::size_t i = 0; i < n; ++i) after_run(batch[i], staged[i] == nullptr);
    staged.clear();
    running_ -= 1;
  }
  if (--threads_alive_ == 0) settle_after_exit();
  followers_cv_.notify_all();
  wait_.kick();  // a leader asleep on the futex re-checks must_exit too
  unlock_and_bury(lk, grave);
}

bool Shard::must_exit() const noexcept {  // mu_ held
  int st = engine_.state();
  if (st == kRunningState) return false;
  if (st >= kStop) return stop_done_;  // after shutdown_now() took the pending tasks
  return queue_.empty() && running_ == 0 && inbox_settled();
}

bool Shard::inbox_settled() const noexcept {
  return !inbox_.has_unconfirmed() && inbox_.drained() == inbox_.submitted() &&
         inbox_.removes_done() == inbox_.removes_sent();
}

// The leader's loop: returns with due tasks in `batch`, or 0 when the thread must exit. The
// tasks stay kPending until their runner starts them, one after another (a due task waiting
// behind a long one can still be cancelled, or taken by shutdown_now()). mu_ held on entry and
// exit; released while waiting.
std::size_t Shard::lead(Lock& lk, Slot* batch, std::vector<TaskBase*>& grave) {
  for (;;) {
    // (W0) first: a kick during this pass (the clock moved, a lifecycle call, a re-queue) ends
    // the wait it leads to at once. Read after the clock or the queue, it could swallow a
    // ManualClock::advance that came between: the leader would then sleep for ever.
    const std::uint32_t w = wait_.wake_epoch();
    drain();
    if (must_exit()) return 0;
    if (engine_.state() >= kStop) {
      // Nothing starts after shutdown_now(); it takes the tasks and kicks this thread out.
      wait_for(lk, w, kMaxNs, true, grave);
      continue;
    }
    std::int64_t now = engine_.now_ns();
    if (std::size_t n = pop_due(now, batch, engine_.opt.threads_per_shard == 1 ? kMaxBatch : 1)) return n;
    const bool refused = inbox_.accept_refused();
    if (inbox_.has_unconfirmed() && !refused) continue;  // one more (complete) pass confirms them
    if (must_exit()) return 0;               // pop_due may have dropped the last cancelled task
    TaskBase* head = queue_.empty() ? nullptr : queue_.top();
    bool forever = head == nullptr || head->never_due();
    std::int64_t deadline = forever ? kMaxNs : head->deadline;
    if (refused) {  // the timer queue could not grow: try again in a while, not in a loop
      deadline = std::min(deadline, add_saturated(now, kRetryAcceptNs));
      forever = false;
    }
    if (!arm_and_check(deadline)) continue;
    wait_for(lk, w, deadline, forever, grave);
  }
}

// Arms the wait for `deadline` and takes in every submission counted before (leader_wait.hpp).
// False (disarmed) if one of them must be looked at first: it is due, or earlier than deadline.
bool Shard::arm_and_check(std::int64_t deadline) {
  wait_.arm(deadline);                        // (W1)
  std::uint64_t counted = inbox_.submitted();  // the count read: pairs with (I1)
  if (inbox_.drained() >= counted) return true;
  // A few submissions passed (I1) before the count read: drain until they are here (they may be
  // between their seq and their enqueue: a few instructions). Later ones see (W1) themselves.
  for (int i = 0; inbox_.drained() < std::min(counted, inbox_.submitted()) ||
                  (inbox_.has_unconfirmed() && !inbox_.accept_refused());
       ++i) {
    drain();
    if (i > 64) std::this_thread::yield();
  }
  // A counted seq may have been a re-arm's (abandoned after its request): take the request in.
  drain();
  while (inbox_.has_unconfirmed() && !inbox_.accept_refused()) drain();
  TaskBase* head = queue_.empty() ? nullptr : queue_.top();
  bool earlier = head != nullptr && !head->never_due() && head->deadline < deadline;
  if (earlier || (head != nullptr && deadline == kMaxNs)) {
    wait_.disarm();
    return false;
  }
  return true;
}

// Waits until `deadline` (forever: no deadline), a kick or an earlier submission. mu_ held on
// entry and exit; released (and the graveyard buried) while waiting. The wait is armed.
void Shard::wait_for(Lock& lk, std::uint32_t w, std::int64_t deadline, bool forever, std::vector<TaskBase*>& grave) {
  if (deadline == kMaxNs && !forever) forever = true;
  wait_.arm(deadline);  // (W1) again: a no-op store when arm_and_check did it
  unlock_and_bury(lk, grave);
  // The task pool's next slab is populated here, off the producers' path and never just before
  // a deadline (it can take a few hundred microseconds on a VM).
  if (forever || sub_saturated(deadline, engine_.now_ns()) > kPrepareAheadNs) task_pool_prepare();
  if (engine_.manual) {
    wait_.sleep_until(w, -1);  // ManualClock::advance kicks every shard
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
      // adaptive: how late a sleep that timed out woke (a kick's wake-up says nothing of that).
      if (adaptive && !woken && !forever) adaptive_.record(steady_now_ns() - until);
    }
    if (!woken && mode != WaitPolicy::Mode::sleep) wait_.spin_until(w, deadline);
  }
  wait_.disarm();
  lk.lock();
}

// At most `max` (<= kMaxBatch) due tasks into `batch`.
std::size_t Shard::pop_due(std::int64_t now, Slot* batch, std::size_t max) {
  std::size_t n = 0;
  while (n < max && !queue_.empty() && is_due(queue_.top(), now)) {
    TaskBase* t = queue_.top();
    bool stoppable = t->flags & kStoppable;
    if (stoppable && n > 0) break;  // starts alone: its stop source is set up under mu_
    queue_.pop();
    if (refiled_at_newest(t)) continue;  // re-armed since it was filed (also a retained
                                         // cancelled task: it leaves at its newest deadline)
    if ((t->state.load(std::memory_order_acquire) & kStateMask) == kCancelled) {
      drop_cancelled(t);
      continue;
    }
    if (stoppable && !start_stoppable(t)) continue;
    batch[n++] = Slot{t, t->deadline, 0, stoppable, stoppable};
    if (t->periodic() || stoppable) break;  // a periodic task's next run may come before the
                                            // rest: re-queue it first
  }
  return n;
}

// ---- running --------------------------------------------------------------------------------
// A task taking a stop token starts under mu_: a fresh stop source (written before the task is
// visible as running: cancel(true) touches it only after winning kRunning -> kCancelled), then
// kPending -> kRunning, and registered for shutdown_now()'s stop requests.
bool Shard::start_stoppable(TaskBase* t) {
  if (std::stop_source* src = t->ops->stop_source(t)) {
    *src = std::stop_source();
    if (engine_.state() >= kStop) src->request_stop();
  }
  switch (try_start(t)) {
    case Start::started: break;
    case Start::refile:
      if (refiled_after_shutdown(t)) queue_.push(t);
      return false;
    case Start::gone: drop_cancelled(t); return false;
  }
  running_stoppable_.push_back(t);
  add_out(1);
  return true;
}

// Starts and runs one execution (no lock held). Leaves slot.started false if the task was
// cancelled or taken by shutdown_now() while it waited in the batch.
void Shard::run_task(Slot& slot, BatchClock& clock) {
  TaskBase* t = slot.task;
  if (!slot.started_at_pop) {
    Start st = try_start(t);
    slot.started = st == Start::started;
    slot.refile = st == Start::refile;
    if (!slot.started) return;
    add_out(1);  // it left the queue (queue_size) the moment it started
  }
#if defined(KAIROS_SLOW_START_NS) && KAIROS_SLOW_START_NS > 0
  // A deliberately slowed build (CMake KAIROS_SLOW_START_NS): shows the latency gate failing.
  for (std::int64_t until = steady_now_ns() + KAIROS_SLOW_START_NS; steady_now_ns() < until;) cpu_relax();
#endif
  // Poll mode: the poll's `now` (set by Shard::poll), one clock read per poll, not per task.
  if (engine_.opt.record_lateness && !engine_.opt.poll_mode)
    slot.start = clock.next_start([this] { return engine_.now_ns(); });
  if ((t->state.load(std::memory_order_acquire) & kStateMask) == kCancelled) {
    t->ops->drop_callable(t);  // cancelled after it started: the runner owns the callable
    return;
  }
  if (engine_.exec_hooks) return run_hooked(t, slot.deadline);  // shard_hooks.cpp
  finish_run(t, t->ops->invoke(t));  // a one-shot task's callable is gone when invoke returns
}

// After a run (the runner, no lock): completes a one-shot task's future, stops a periodic task
// that threw, or computes its next deadline (here, at the end of the run: fixed delay needs it).
void Shard::finish_run(TaskBase* t, bool ok) {
  if (!t->periodic()) finish_one_shot(t, ok);
  else if (!ok) fail_periodic(t);
  else next_deadline(t);
}

void Shard::finish_one_shot(TaskBase* t, bool ok) {
  if (ok) {
    transition(t, kRunning, kNormal);
  } else if (transition(t, kRunning, kExceptional) && (t->flags & kNoFuture)) {
    report_uncaught(*engine_.on_uncaught, stored_error(t));
  }
}

void Shard::fail_periodic(TaskBase* t) {
  if (transition(t, kRunning, kExceptional)) {
    periodic_failures_.fetch_add(1, std::memory_order_relaxed);
    report_uncaught(*engine_.on_uncaught, stored_error(t));
  }
  t->ops->drop_callable(t);  // no run follows
}

// The runner owns t's deadline and seq between pop and re-queue; delay() reads the deadline
// through an atomic_ref (relaxed: a snapshot).
void Shard::next_deadline(TaskBase* t) noexcept {
  auto* p = static_cast<PeriodicBase*>(t);
  std::int64_t next;
  bool never = __builtin_add_overflow(t->flags & kFixedDelay ? engine_.now_ns() : t->deadline, p->period, &next);
  if (never) next = kMaxNs;
  // A first run due "never" can only have been a caller_runs one; the next has a real time.
  // Relaxed atomic stores: lifecycle calls read both as a snapshot (newest_key) without the lock.
  std::atomic_ref<std::uint8_t>(t->never).store(never ? 1 : 0, std::memory_order_relaxed);
  std::atomic_ref<std::int64_t>(t->deadline).store(next, std::memory_order_relaxed);
}

// After a batch, under mu_: counts each task out, re-queues a periodic task or lets it go.
// taken: shutdown_now() took the task before it started (it holds its own reference).
void Shard::after_run(const Slot& slot, bool taken) {
  TaskBase* t = slot.task;
  if (!slot.started) {
    if (slot.refile && !taken) {  // re-armed after it was popped: still pending, back in line
      if (!refiled_after_shutdown(t)) return;
      queue_.push(t);
      if (has_leader_) wait_.notify_earlier(t->never_due() ? kMaxNs : t->deadline);
      return;
    }
    if (taken) bury_later(t);  // counted out by shutdown_now()
    else drop_cancelled(t);    // cancelled while it waited in the batch
    return;
  }
  bump(ran_);
  if (engine_.opt.record_lateness) lateness_.record(sub_saturated(slot.start, slot.deadline));
  if (t->flags & kStoppable) std::erase(running_stoppable_, t);
  std::uint32_t s = t->state.load(std::memory_order_acquire) & kStateMask;
  if (t->periodic() && s == kRunning) {
    int st = engine_.state();
    bool may_continue =
        st == kRunningState || (st == kShutdown && engine_.continue_periodic.load(std::memory_order_acquire));
    if (may_continue && transition(t, kRunning, kPending)) {  // kQueued stays: it is queued again
      add_out(-1);
      queue_.push(t);
      if (has_leader_) wait_.notify_earlier(t->never_due() ? kMaxNs : t->deadline);
      return;
    }
    if (transition(t, kRunning, kCancelled)) bump(cancelled_);
  }
  bury_later(t, t->periodic());  // a periodic task's callable goes with its last run
}

// ---- inbox ----------------------------------------------------------------------------------
void Shard::drain() {
  inbox_.drain([&](std::span<TaskBase* const> confirmed) { return accept_all(confirmed); },
               [&](TaskBase* t, std::uintptr_t tag) { request(t, tag); });
}

bool Shard::drain_all() {
  return inbox_.drain_all([&](std::span<TaskBase* const> confirmed) { return accept_all(confirmed); },
                   [&](TaskBase* t, std::uintptr_t tag) { request(t, tag); });
}

// Growth happens here, before a task is taken in, and nowhere else on the runner's paths: the
// heap's capacity covers every task this shard may hold (the queue, the tasks out in batches,
// and these), so re-queues, refiles and moves never allocate (timer_queue.hpp), and the
// graveyard has room for each of these to leave. If the memory is not there, none is taken:
// they stay confirmed in the inbox, in order, and the leader retries after a pause (lead()).
// Nothing is lost and nothing throws on a runner; submissions meanwhile get bad_alloc when the
// pool cannot grow, and everything goes on once memory is back.
std::size_t Shard::accept_all(std::span<TaskBase* const> confirmed) {
  const std::size_t in_batches = kMaxBatch * staged_.size();
  if (!queue_.try_reserve(queue_.size() + in_batches + confirmed.size()) ||
      !reserve_graveyard(confirmed.size()))
    return 0;
  for (TaskBase* t : confirmed) accept(t);
  return confirmed.size();
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

// A confirmed submission enters the timer queue, unless cancelled or refused by the shutdown
// policies.
void Shard::accept(TaskBase* t) {
  std::uint32_t s = t->state.load(std::memory_order_acquire);
  for (;;) {
    if ((s & kStateMask) == kCancelled) {  // cancelled before it was queued: no request was sent
      wait_unpinned(t);
      s = t->state.load(std::memory_order_acquire);
      bool shut = engine_.state() != kRunningState;
      if ((s & kRemoved) || shut) {  // removed (already uncounted), or no retention after shutdown
        if (!(s & kRemoved)) add_out(1);
        drop(t, false);
      } else {
        queue_.push(t);  // retained until its deadline, as Java's class does
      }
      return;
    }
    int st = engine_.state();
    if (st >= kStop ? stop_done_ : (st == kShutdown && !allowed_after_shutdown(t, engine_.now_ns()))) {
      // Before shutdown_now() took this shard's tasks, it goes to the queue for it to take.
      if (!transition(t, kPending, kCancelled)) {
        s = t->state.load(std::memory_order_acquire);
        continue;
      }
      add_out(1);
      drop(t, true);
      return;
    }
    // (A1) acq_rel: marks t queued. Pairs with the cancel CAS (C1): a cancel that fails against
    // it reloads, sees kQueued, and posts a remove request; one that won first made this fail.
    if ((s & kStateMask) == kRearming) {  // a re-arm holds it for a moment
      cpu_relax();
      s = t->state.load(std::memory_order_acquire);
      continue;
    }
    if (t->state.compare_exchange_weak(s, s | kQueued, std::memory_order_acq_rel, std::memory_order_acquire)) {
      if ((t->flags & kRearmable) && lock_pending(t)) {  // filed at its latest key
        static_cast<RearmBase*>(t)->adopt_latest();
        unlock_pending(t);
      }
      queue_.push(t);
      return;
    }
  }
}

// A request: remove (remove-on-cancel of a queued task; counted out at cancel()) or refile (a
// re-arm to an earlier deadline).
void Shard::request(TaskBase* t, std::uintptr_t tag) {
  if (tag == Inbox::kRefileTag) {
    refile(t);
    bury_later(t);  // the request's reference
    return;
  }
  if (queue_.erase(t)) bury_later(t);  // the queue's reference
  bury_later(t);                       // the request's reference
}

// The policies of shutdown() (the caller has seen run_state == kShutdown; a shutdown_now()
// racing it takes what is allowed here: it needs mu_, which the caller holds).
// A re-armed task is judged at its newest deadline (the one it will start at), not the one it
// is filed at: one re-armed to later must not slip through as "due" after shutdown.
bool Shard::allowed_after_shutdown(TaskBase* t, std::int64_t now) const noexcept {
  if (t->periodic()) return engine_.continue_periodic.load(std::memory_order_acquire);
  if (engine_.exec_delayed.load(std::memory_order_acquire)) return true;
  if (!(t->flags & kRearmable)) return is_due(t, now);
  std::optional<Key> k = newest_key(t);  // nullopt: no longer pending (cancelled, started)
  return k ? (k->deadline <= now && !k->never) : is_due(t, now);
}

// ---- dropping ---------------------------------------------------------------------------------
// A task that leaves without running (mu_ held): counted as cancelled unless cancel() counted it
// already; its references and callable are released after mu_.
void Shard::drop(TaskBase* t, bool drop_callable) {
  wait_unpinned(t);
  std::uint32_t s = t->state.load(std::memory_order_acquire);
  if ((s & kStateMask) == kCancelled && !(s & kRemoved)) bump(cancelled_);
  bury_later(t, drop_callable);
}

// A task that left the queue or inbox cancelled: it leaves the count unless cancel() already
// took it out (kRemoved). drop_callable: the caller won that cancel itself.
void Shard::drop_cancelled(TaskBase* t, bool drop_callable) {
  wait_unpinned(t);
  if (!(t->state.load(std::memory_order_acquire) & kRemoved)) add_out(1);
  drop(t, drop_callable);
}

void Shard::unlock_and_bury(Lock& lk, std::vector<TaskBase*>& grave) {
  grave.swap(graveyard_);  // graveyard_ keeps the (empty) capacity of grave
  lk.unlock();
  bury(grave);
}

void Shard::bury(std::vector<TaskBase*>& grave) noexcept {
  for (TaskBase* item : grave) {
    auto bits = reinterpret_cast<std::uintptr_t>(item);
    TaskBase* t = reinterpret_cast<TaskBase*>(bits & ~kDropCallable);
    if (bits & kDropCallable) t->ops->drop_callable(t);
    // (AW3) cancelled under mu_ (shutdown policies, discard_oldest, a cancelled periodic task's
    // last run): its awaiters are resumed here, with no lock held.
    std::uint32_t s = t->state.load(std::memory_order_acquire);
    if ((s & kAwaited) && is_terminal(s)) wake_awaiters(t);
    release(t);
  }
  grave.clear();
}

// ---- lifecycle --------------------------------------------------------------------------------
void Shard::notify_state_changed() {
  wait_.kick();
  std::lock_guard lk(mu_);
  followers_cv_.notify_all();
}

// A submission that saw the scheduler shut down only after it was enqueued. Under mu_ the shard's
// threads are either still there (they will drain it: their exit waits for the inbox to settle)
// or gone; then this thread drains the inbox and settles what it finds.
void Shard::after_racing_shutdown() {
  std::vector<TaskBase*> grave;
  Lock lk(mu_);
  if (threads_alive_ == 0) settle_after_exit();
  else wait_.kick();
  unlock_and_bury(lk, grave);
}

// discard_oldest: cancels the earliest-deadline pending task: the head of the timer queue or a
// due task waiting in a runner's batch, whichever is earlier. False if there is none.
bool Shard::make_room() {
  std::vector<TaskBase*> grave;
  TaskBase* staged_victim = nullptr;  // its callable goes after mu_, under a reference of ours
  Lock lk(mu_);
  drain_all();
  wait_.kick();  // what was drained here may be earlier than the deadline the leader waits for
  bool made = false;
  while (!made) {
    TaskBase* oldest = settled_head();
    Key oldest_key = oldest == nullptr ? Key{} : Key{oldest->deadline, oldest->seq, oldest->never_due()};
    bool in_batch = false;
    for (auto& staged : staged_)
      for (TaskBase* t : staged) {
        if (t == nullptr || (t->state.load(std::memory_order_acquire) & kStateMask) != kPending) continue;
        std::optional<Key> k = newest_key(t);  // re-armed while it waited: re-filed at that key
        if (k && (oldest == nullptr || *k < oldest_key)) {
          oldest = t;
          oldest_key = *k;
          in_batch = true;
        }
      }
    if (oldest == nullptr) break;
    if (in_batch) {
      // Its runner will find it cancelled and drop it; kRemoved: counted out here already.
      if (!transition(oldest, kPending, kCancelled)) continue;  // started or cancelled meanwhile
      oldest->state.fetch_or(kRemoved, std::memory_order_relaxed);  // its runner reads it under mu_
      add_out(1);
      bump(cancelled_);
      add_ref(oldest);
      staged_victim = oldest;
    } else {
      queue_.pop();
      drop_cancelled(oldest, transition(oldest, kPending, kCancelled));  // a retained cancelled
                                                                         // task makes room too
    }
    made = true;
  }
  unlock_and_bury(lk, grave);
  if (staged_victim != nullptr) {
    staged_victim->ops->drop_callable(staged_victim);
    if (staged_victim->state.load(std::memory_order_acquire) & kAwaited) wake_awaiters(staged_victim);  // (AW3)
    release(staged_victim);
  }
  return made;
}

void Shard::apply_shutdown() {
  std::vector<TaskBase*> grave;
  Lock lk(mu_);
  if (threads_alive_ > 0) drain_all();
  apply_policies();
  wait_.kick();
  followers_cv_.notify_all();
  unlock_and_bury(lk, grave);
}

// Under mu_ after shutdown: cancels and removes what the policies no longer allow, and every
// cancelled task retained in the queue. After shutdown_now() started, nothing: it takes them.
void Shard::apply_policies() {
  if (engine_.state() >= kStop) return;
  std::int64_t now = engine_.now_ns();
  auto refused = [&](TaskBase* t) {
    std::uint32_t s = t->state.load(std::memory_order_acquire) & kStateMask;
    return s == kCancelled || !allowed_after_shutdown(t, now);
  };
  if (!reserve_graveyard(queue_.size())) {
    // No memory to bury them now: cancelled in place (their callables go with their nodes),
    // they leave the queue at their deadline like any retained cancelled task.
    queue_.for_each([&](TaskBase* t) {
      if (refused(t)) transition(t, kPending, kCancelled);
    });
    return;
  }
  queue_.remove_if(refused, [&](TaskBase* t) { drop_cancelled(t, transition(t, kPending, kCancelled)); });
}

// shutdown_now(): every pending task of this shard leaves as an orphan, at its newest key (the
// order shutdown_now() returns them in). The room it needs (the result, the graveyard) is made
// before anything is taken: if the memory is not there, bad_alloc leaves with the tasks still
// here, for a later shutdown_now() or the destructor (the engine's caller decides).
void Shard::take_pending(std::vector<TaskBase*>& orphans) {
  std::vector<TaskBase*> grave;
  Lock lk(mu_);
  auto take = [&](TaskBase* t) {
    if (transition(t, kPending, kOrphan)) {  // waits out a re-arm in progress (kRearming)
      // No re-arm after kOrphan; the acquire of that CAS sees the last one's keys (L2).
      if (t->flags & kRearmable) static_cast<RearmBase*>(t)->adopt_latest();
      add_out(1);
      orphans.push_back(t);  // the scheduler's reference now belongs to the caller
    } else {
      drop_cancelled(t);
    }
  };
  for (bool settled = false; !settled;) {
    settled = drain_all();  // false: the queue could not take some in; they are taken from the inbox
    std::size_t n = queue_.size() + inbox_.unconfirmed_count();
    for (const std::vector<TaskBase*>& staged : staged_) n += staged.size();
    orphans.reserve(orphans.size() + n);  // std::bad_alloc: nothing of this round taken yet
    if (!reserve_graveyard(n)) throw std::bad_alloc();
    inbox_.take_unconfirmed(take);
    queue_.remove_if([](TaskBase*) { return true; }, take);
  }
  for (std::vector<TaskBase*>& staged : staged_) {
    for (TaskBase*& t : staged) {
      if (t != nullptr && transition(t, kPending, kOrphan)) {
        if (t->flags & kRearmable) static_cast<RearmBase*>(t)->adopt_latest();  // as above
        add_ref(t);  // the Task's; the runner releases the batch's own
        add_out(1);
        orphans.push_back(t);
        t = nullptr;
      }
    }
  }
  stop_done_ = true;
  for (TaskBase* t : running_stoppable_)
    if (std::stop_source* src = t->ops->stop_source(t)) src->request_stop();
  wait_.kick();
  followers_cv_.notify_all();
  unlock_and_bury(lk, grave);
}

// The destructor, when shutdown_now() could not allocate its list: what waits in a runner's
// batch is cancelled where it is (its runner drops it; its callable goes with its node), the
// rest is left to settle_after_exit, which the exit of this shard's threads (or poller) runs.
void Shard::cancel_pending_in_place() noexcept {
  Lock lk(mu_);
  for (std::vector<TaskBase*>& staged : staged_)
    for (TaskBase* t : staged)
      if (t != nullptr) transition(t, kPending, kCancelled);
  stop_done_ = true;
  wait_.kick();
  followers_cv_.notify_all();
}

// The shard's last thread is gone (mu_ held): nothing may stay pending in it.
void Shard::settle_after_exit() {
  // No order is needed here: everything left is cancelled, in place (no list of them is built).
  auto drop_one = [&](TaskBase* t) { drop_cancelled(t, transition(t, kPending, kCancelled)); };
  (void)reserve_graveyard(queue_.size() + inbox_.unconfirmed_count());
  inbox_.take_unconfirmed(drop_one);
  do {
    inbox_.drain(
        [&](std::span<TaskBase* const> confirmed) {
          for (TaskBase* t : confirmed) drop_one(t);
          return confirmed.size();
        },
        [&](TaskBase* t, std::uintptr_t tag) { request(t, tag); });
  } while (inbox_.has_unconfirmed());
  queue_.remove_if([](TaskBase*) { return true; }, drop_one);
}

void Shard::settle_if_dead() {
  std::vector<TaskBase*> grave;
  Lock lk(mu_);
  if (threads_alive_ == 0) settle_after_exit();
  unlock_and_bury(lk, grave);
}

bool Shard::idle(std::uint64_t submitted, std::uint64_t removes, std::int64_t now) {
  std::vector<TaskBase*> grave;
  Lock lk(mu_);
  bool dead = threads_alive_ == 0;
  bool idle = true;
  if (running_ != 0) idle = false;
  else if (!dead && (inbox_.drained() < submitted || inbox_.removes_done() < removes || inbox_.has_unconfirmed())) idle = false;
  else if (!dead && !queue_.empty() && is_due(queue_.top(), now)) idle = false;
  if (!idle) wait_.kick();
  unlock_and_bury(lk, grave);
  return idle;
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
  std::lock_guard lk(mu_);
  s.lateness = lateness_;
  return s;
}

}  // namespace kairos::detail
