// shard_poll.cpp: a shard driven by its owner's loop (Options::poll_mode, docs/poll-mode.md).
//
// The poller takes the role a worker thread has in run_worker, for one pass and without ever
// waiting: drain the inbox, pop what is due at the caller's `now`, and hand each batch to the
// batch loop both share (run_batch, shard_leader.cpp: run with mu_ released, re-queue or bury
// under mu_). Everything else is shared with
// the threaded shard, unchanged: producers, cancellers and re-armers talk to the shard through
// the same inbox and state words (they cannot tell a poller from a leader), and the lifecycle
// calls see the poller's batch in batches_[0] like a worker's.
//
// Who owns what. polling_ (under mu_) is the runner's role: one poll at a time holds it, also
// while it runs tasks with mu_ released; a second poll (another thread, or a task calling
// poll()) finds it held and returns 0. The shard counts its poller as its one thread from
// construction (threads_alive_ == 1), so shutdown and the destructor treat it as alive until a
// poll — or the engine's close() — retires it: the same cancel_leftovers a last worker thread
// does (shard_retire.cpp).
// Nobody waits on the shard's LeaderWait: a producer's notify finds it unarmed and costs a load.
#include <algorithm>
#include <exception>
#include <vector>

#include "shard.hpp"

namespace kairos::detail {

std::size_t Shard::poll(std::int64_t now, std::size_t limit, bool& retired) {
  // Each polling thread's own graveyard buffer: reserved once, so a poll allocates nothing.
  thread_local std::vector<TaskBase*> grave = [] {
    std::vector<TaskBase*> v;
    v.reserve(2 * kMaxBatch);
    return v;
  }();
  retired = false;
  Lock lk(mu_);
  if (polling_ || threads_alive_ == 0) return 0;  // a poll in progress, or retired already
  polling_ = true;
  // The loop is awake: no submission needs to wake it until its next next_deadline() arms.
  wait_.disarm();
  // Every submission made before this call is confirmed before anything is popped, however many
  // there are: a burst larger than one drain's passes does not make this poll run nothing.
  const std::uint64_t counted = inbox_.submitted(), seq_bound = inbox_.seqs_taken();
  Slot batch[kMaxBatch];
  std::size_t taken = 0, started = 0;
  // Nothing below throws on its own (the queue grows only where a refusal is survivable:
  // Shard::take_in_all; every throw point holds mu_); should anything still, the poller's role
  // is given back (mu_ still held: this guard goes before `lk`), so the next poll runs this
  // shard again.
  struct GiveBackOnThrow {
    bool& polling;
    const int before = std::uncaught_exceptions();
    ~GiveBackOnThrow() {
      if (std::uncaught_exceptions() > before) polling = false;
    }
  } give_back{polling_};
  for (bool first = true;; first = false) {
    if (first) drain_through(lk, counted, seq_bound);
    else drain(lk);
    if (must_exit(lk)) {  // finished after a shutdown: the poller retires like a last thread
      --threads_alive_;
      cancel_leftovers(lk);
      retired = true;
      break;
    }
    if (taken >= limit || engine_.state() >= RunState::kShutdownNow) break;  // shutdown_now() takes the rest
    std::size_t n = pop_due(lk, now, batch, std::min(kMaxBatch, limit - taken));
    if (n == 0) break;
    taken += n;
    // Lateness as the loop sees it: its `now` against the deadline (run_task reads no clock).
    for (std::size_t i = 0; i < n; ++i) batch[i].start = now;
    started += run_batch(lk, batch, n, 0, grave);  // the poller is runner 0 (batches_[0])
  }
  polling_ = false;
  unlock_and_bury(lk, grave);
  return started;
}

// next_deadline(): the loop's half of the wait protocol of leader_wait.hpp, with the loop in
// the leader's place. (WF1) arms the wait at the deadline about to be reported (the LW2 store);
// the count read after it (pairs with IN1) and drain_through take in every submission whose seq
// was taken before, so a submission is either counted here or compares its deadline with the
// armed one (LW3) and wakes the loop if it is earlier. If the earliest deadline came out later
// than the one armed (a head re-armed later, or cancelled), the arm goes up only by going round
// again: raising it after the count read could miss a submission in between.
std::int64_t Shard::earliest_deadline() {
  std::vector<TaskBase*> grave;  // empty unless the drain dropped something: no allocation then
  Lock lk(mu_);
  std::int64_t d = kMaxNs;
  if (threads_alive_ > 0) {  // retired: nothing is pending here any more
    std::int64_t armed = effective_earliest(lk);
    for (;;) {
      wait_.arm(armed);  // (WF1) the LW2 of leader_wait.hpp
      const std::uint64_t counted = inbox_.submitted(), seq_bound = inbox_.seqs_taken();  // count read
      drain_through(lk, counted, seq_bound);
      d = effective_earliest(lk);
      if (d <= armed) break;
      armed = d;
    }
    wait_.lower(d);
    // After a shutdown the answer is also about retiring. A shard whose poll would retire it is
    // due now (the clock's now: a real time point, which a timerfd takes as already passed);
    // after shutdown_now() nothing starts any more, and until it took the tasks it has more to
    // say: it wakes the loop when it has (Engine::shutdown_now), so nothing is due until then.
    // A lifecycle call wakes the loop only after it changed what is read here, so a wake that
    // next_deadline() read back is never lost: this answer already reflects it.
    if (must_exit(lk)) d = std::min(d, engine_.now_ns());
    else if (engine_.state() >= RunState::kShutdownNow) d = kMaxNs;
  }
  unlock_and_bury(lk, grave);
  return d;
}

// The earliest deadline a pending task of this shard waits for (mu_ held): the queue's head at
// its newest key (a head re-armed since it was filed goes back in line first), or a task still
// waiting in a running poll's batch (a task of that poll asking). kMaxNs if none is ever due.
std::int64_t Shard::effective_earliest(Lock& lk) {
  KAIROS_DCHECK(lk.owns_lock());
  std::int64_t d = kMaxNs;
  if (TaskBase* head = head_at_newest_key(lk); head != nullptr && !head->never_due()) d = head->deadline;
  for (const std::vector<TaskBase*>& popped : batches_)
    for (TaskBase* t : popped) {
      if (t == nullptr || (t->state.load(std::memory_order_acquire) & kStateMask) != kPending) continue;  // (TI2)
      std::optional<FiledKey> k = newest_key(t);
      if (k && !k->never) d = std::min(d, k->deadline);
    }
  return d;
}

void Shard::drain_through(Lock& lk, std::uint64_t counted, std::uint64_t seq_bound, int max_rounds) {
  inbox_.drain_through(counted, seq_bound, take_in_callback(lk), request_callback(lk), max_rounds);
  restamp_if_due(lk);  // as after every drain (shard_leader.cpp)
}

}  // namespace kairos::detail
