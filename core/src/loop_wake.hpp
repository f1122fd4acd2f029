// loop_wake.hpp: the wake-up of the owner's loop in poll mode (Scheduler::wake_fd(),
// Options::on_wake; docs/poll-mode.md "Sleeping until the next deadline").
// Threads: post(), run_callback(), signal(): any thread (a producer or re-armer whose deadline is
//          earlier than the one the loop armed, or a lifecycle call). consume(): next_deadline(),
//          any thread.
//
// What it is. One eventfd per scheduler, created at construction in poll mode, and the user's
// callback. Which submissions signal is decided elsewhere: the loop arms every shard's
// LeaderWait at the deadline next_deadline() returns (WF1, the LW2 of leader_wait.hpp, in
// Shard::earliest_deadline), and a producer that wins that wait's LW4 CAS posts here once. The
// LW4 CAS turns `armed` to kAwake, so there is at most one signal per arm, whatever the number of
// producers: a wake costs the one producer that wins it a write(2) (and the callback); every
// other submission, one load (LW3).
//
// Two halves, run at two moments. post() makes the fd readable; it runs where the wake is won,
// possibly with kairos state held (a re-arm holds its task in kRearming, a submission's sequence
// number may be outstanding). run_callback() runs Options::on_wake, user code: the public call
// that won the wake runs it last, with nothing of kairos held and the engine kept alive, so the
// callback may call anything, destroy the scheduler included (engine.cpp, "The wake callback").
//
// The fd is readable only while a post is unconsumed (a loop that sees it readable and asks
// next_deadline() finds it read back, so a level-triggered epoll or Asio's wait_read returns
// once per wake, never in a loop). The counters: posted_ counts posts, bumped *before* the write
// (WF2); consumed_ counts the posts whose write consume() read (an eventfd read returns the sum
// of the writes it empties: one per post). Every write in the fd was counted in posted_ first,
// so while one is unread, posted_ > consumed_, and consume() — which reads whenever the two
// differ — reads it. A post between its count and its write makes a consume() read nothing
// (EAGAIN): consumed_ stays behind and the next consume() reads again; the write, when it
// lands, is a real wake of the loop (the post's deadline is earlier than the armed one), never
// a spurious one left behind. A loop that was not woken makes no system call here.
#pragma once
#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>

#include "cache_line.hpp"

namespace kairos::detail {

class LoopWake {
 public:
  // Creates the eventfd (EFD_NONBLOCK | EFD_CLOEXEC); std::system_error if it cannot.
  LoopWake(std::function<void()> on_wake,
           std::shared_ptr<const std::function<void(std::exception_ptr)>> on_uncaught);
  ~LoopWake();
  LoopWake(const LoopWake&) = delete;
  LoopWake& operator=(const LoopWake&) = delete;

  int fd() const noexcept { return fd_; }
  // The fd becomes readable (no user code runs). True if Options::on_wake is set: the caller
  // owes a run_callback() once it holds nothing of kairos.
  bool post() noexcept;
  // Options::on_wake on this thread (an exception from it goes to Options::on_uncaught). The
  // caller holds nothing of kairos and keeps the engine alive across the call.
  void run_callback() const noexcept;
  // A lifecycle call's wake: post(), then the callback (the caller holds nothing of kairos).
  void signal() noexcept {
    if (post()) run_callback();
  }
  // Reads the fd back to 0 if a post is unconsumed (see above); no system call otherwise.
  void consume() noexcept;
  std::uint64_t signalled() const noexcept { return posted_.load(std::memory_order_relaxed); }

 private:
  int fd_ = -1;
  const std::function<void()> on_wake_;
  const std::shared_ptr<const std::function<void(std::exception_ptr)>> on_uncaught_;
  alignas(kCacheLine) std::atomic<std::uint64_t> posted_{0};
  alignas(kCacheLine) std::atomic<std::uint64_t> consumed_{0};  // posts whose write was read
};
// The signallers' counter and the loop's do not share a line.
static_assert(alignof(LoopWake) == kCacheLine);

}  // namespace kairos::detail
