// loop_wake.hpp: the wake-up of the owner's loop in poll mode (Scheduler::wake_fd(),
// Options::on_wake; docs/poll-mode.md "Sleeping until the next deadline").
// Threads: signal(): any thread (a producer or re-armer whose deadline is earlier than the one
//          the loop armed, or a lifecycle call). consume(): next_deadline(), any thread.
//
// What it is. One eventfd per scheduler, created at construction in poll mode, and the user's
// callback. Which submissions signal is decided elsewhere: the loop arms every shard's
// LeaderWait at the deadline next_deadline() returns (WF1, the LW2 of leader_wait.hpp, in
// Shard::earliest_deadline), and a producer that wins that wait's LW4 CAS signals here once. The
// LW4 CAS turns `armed` to kAwake, so there is at most one signal per arm, whatever the number of
// producers: a wake costs the one producer that wins it a write(2) (and the callback); every
// other submission, one load (LW3).
//
// The counter pair. signalled_ counts signals, bumped after the eventfd write (WF2, release);
// consume() reads it (WF3, acquire, pairs with WF2: a count it sees is a write already in the
// fd) and reads the fd back to 0 only when the count moved since it last looked, so a loop that
// asks for its next deadline without having been woken makes no system call. A signal of an
// older arm that writes after consume() read the count leaves the fd readable: one spurious
// wake, never a lost one (a signal of the current arm always comes after the arm, which comes
// after consume()).
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
  // One wake: the fd becomes readable, then Options::on_wake runs on this thread (an exception
  // from it goes to Options::on_uncaught).
  void signal() noexcept;
  // The fd read back to 0 if a signal was counted since the last consume().
  void consume() noexcept;
  std::uint64_t signalled() const noexcept { return signalled_.load(std::memory_order_relaxed); }

 private:
  int fd_ = -1;
  const std::function<void()> on_wake_;
  const std::shared_ptr<const std::function<void(std::exception_ptr)>> on_uncaught_;
  alignas(kCacheLine) std::atomic<std::uint64_t> signalled_{0};
  alignas(kCacheLine) std::atomic<std::uint64_t> consumed_{0};  // the count consume() last acted on
};
// The signallers' counter and the loop's do not share a line.
static_assert(alignof(LoopWake) == kCacheLine);

}  // namespace kairos::detail
