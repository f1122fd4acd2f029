// engine_poll.cpp: poll mode's half of the engine (Options::poll_mode, docs/poll-mode.md): the
// owner's loop drives every shard (Shard::poll, shard_poll.cpp) and sleeps until the earliest of
// their deadlines or a wake-up (next_deadline, wake_fd).
//
// Ownership (who may touch what):
//   t_poll                    the calling thread's stack of polls in progress (a task may poll
//                             again, or destroy its scheduler): this thread only.
//   loop_thread_              the last thread that polled; relaxed: it only picks who drives a
//                             wait (drives_the_loop), never guards data.
//   live_pollers_             shards whose poller has not retired: (LC1) the last to retire
//                             terminates the engine.
// Edges (each names its partner):
//   (LC1) poll: live_pollers_.fetch_sub acq_rel: the retirement that takes the count to zero sees
//         every other shard's retirement (their LC1) before terminate() runs.
//   The wake-up's edges are the shards' (WF1-WF3, shard_poll.cpp and loop_wake.cpp).
#include <poll.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <thread>

#include "engine.hpp"

namespace kairos::detail {

thread_local Engine::PollScope* Engine::t_poll = nullptr;

void Engine::require_poll_mode(const char* call) const {
  if (!state_.opt.poll_mode)
    throw std::logic_error(std::string("kairos: ") + call + "() needs Options::poll_mode (this scheduler runs its own threads)");
}

std::size_t Engine::poll(std::int64_t now, std::size_t limit) {
  require_poll_mode("poll");
  const std::thread::id me = std::this_thread::get_id();
  if (loop_thread_.load(std::memory_order_relaxed) != me) loop_thread_.store(me, std::memory_order_relaxed);
  PollScope scope(this);
  std::size_t started = 0;
  for (auto& sh : shards_) {
    bool retired = false;
    started += sh->poll(now, limit - std::min(limit, started), retired);
    if (retired && live_pollers_.fetch_sub(1, std::memory_order_acq_rel) == 1) terminate();  // (LC1)
  }
  return started;
}

// Each shard arms the loop's wake-up at its own earliest deadline (shard_poll.cpp), then all
// come down to the earliest of them, the one the loop sleeps until. A wake signalled before
// this call is read off the fd first: from here on, the fd speaks of this call's arm.
std::int64_t Engine::next_deadline() {
  require_poll_mode("next_deadline");
  state_.loop_wake->consume();
  std::int64_t d = kMaxNs;
  for (auto& sh : shards_) d = std::min(d, sh->earliest_deadline());
  if (shards_.size() > 1)
    for (auto& sh : shards_) sh->lower_wake(d);
  return d;
}

int Engine::wake_fd() const {
  require_poll_mode("wake_fd");
  return state_.loop_wake->fd();
}

bool Engine::polled_here() const noexcept {
  for (PollScope* p = t_poll; p != nullptr; p = p->outer)
    if (p->engine == this) return true;
  return false;
}

// wait_idle / await_termination in poll mode, called from the loop's thread (the last one that
// polled; any thread before the first poll): nobody else runs the tasks, so it polls until
// `done` or `until` (steady ns), napping while nothing is due. From another thread they wait
// for the loop instead, as they wait for scheduler threads: tasks never move off the loop.
bool Engine::drives_the_loop() const noexcept {
  std::thread::id loop = loop_thread_.load(std::memory_order_relaxed);
  return loop == std::thread::id{} || loop == std::this_thread::get_id();
}

void Engine::wait_readable(int fd, std::int64_t ns) noexcept {
  pollfd p{fd, POLLIN, 0};
  timespec ts{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
  (void)::ppoll(&p, 1, &ts, nullptr);  // EINTR: the caller looks again
}
}  // namespace kairos::detail
