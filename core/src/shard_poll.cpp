// shard_poll.cpp: a shard driven by its owner's loop (Options::poll_mode, docs/poll-mode.md).
//
// The poller takes the role a worker thread has in run_worker, for one pass and without ever
// waiting: drain the inbox, pop what is due at the caller's `now`, run it with mu_ released,
// re-queue or bury under mu_. Everything else is shared with the threaded shard, unchanged:
// producers, cancellers and re-armers talk to the shard through the same inbox and state words
// (they cannot tell a poller from a leader), and the lifecycle calls see the poller's batch in
// staged_[0] like a worker's.
//
// Who owns what. polling_ (under mu_) is the runner's role: one poll at a time holds it, also
// while it runs tasks with mu_ released; a second poll (another thread, or a task calling
// poll()) finds it held and returns 0. The shard counts its poller as its one thread from
// construction (threads_alive_ == 1), so shutdown and the destructor treat it as alive until a
// poll — or the engine's close() — retires it: the same settle a last worker thread does.
// Nobody waits on the shard's LeaderWait: a producer's notify finds it unarmed and costs a load.
#include <algorithm>
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
  std::vector<TaskBase*>& staged = staged_[0];
  Slot batch[kMaxBatch];
  std::size_t taken = 0, started = 0;
  for (;;) {
    drain();
    if (must_exit()) {  // finished after a shutdown: the poller retires like a last thread
      --threads_alive_;
      settle_after_exit();
      retired = true;
      break;
    }
    if (taken >= limit || engine_.state() >= kStop) break;  // shutdown_now() takes the rest
    std::size_t n = pop_due(now, batch, std::min(kMaxBatch, limit - taken));
    if (n == 0) break;
    taken += n;
    for (std::size_t i = 0; i < n; ++i) {
      batch[i].start = now;  // lateness as the loop sees it: its `now` against the deadline
      staged.push_back(batch[i].task);
    }
    running_ += 1;
    unlock_and_bury(lk, grave);
    BatchClock unused(false);  // the starts are the poll's `now`, set above
    for (std::size_t i = 0; i < n; ++i) {
      run_task(batch[i], unused);
      started += batch[i].started;
    }
    lk.lock();
    for (std::size_t i = 0; i < n; ++i) after_run(batch[i], staged[i] == nullptr);
    staged.clear();
    running_ -= 1;
  }
  polling_ = false;
  unlock_and_bury(lk, grave);
  return started;
}

std::int64_t Shard::earliest_deadline() {
  std::vector<TaskBase*> grave;  // empty unless the drain dropped something: no allocation then
  Lock lk(mu_);
  if (threads_alive_ > 0) drain();
  std::int64_t d = kMaxNs;
  if (!queue_.empty() && !queue_.top()->never_due()) d = queue_.top()->deadline;
  unlock_and_bury(lk, grave);
  return d;
}

}  // namespace kairos::detail
