// loop_wake.cpp: the eventfd behind Scheduler::wake_fd() (the protocol: loop_wake.hpp).
#include "loop_wake.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

#include "engine_state.hpp"

namespace kairos::detail {

LoopWake::LoopWake(std::function<void()> on_wake,
                   std::shared_ptr<const std::function<void(std::exception_ptr)>> on_uncaught)
    : on_wake_(std::move(on_wake)), on_uncaught_(std::move(on_uncaught)) {
  fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (fd_ < 0) throw std::system_error(errno, std::generic_category(), "kairos: eventfd for the poll-mode wake-up");
}

LoopWake::~LoopWake() {
  if (fd_ >= 0) ::close(fd_);
}

void LoopWake::signal() noexcept {
  const std::uint64_t one = 1;
  // EAGAIN only when the counter would overflow (2^64 - 2 unread signals): readable already.
  while (::write(fd_, &one, sizeof one) < 0 && errno == EINTR) {
  }
  signalled_.fetch_add(1, std::memory_order_release);  // (WF2) after the write; pairs with (WF3)
  if (on_wake_) {
    try {
      on_wake_();
    } catch (...) {
      report_uncaught(*on_uncaught_, std::current_exception());
    }
  }
}

void LoopWake::consume() noexcept {
  const std::uint64_t seen = signalled_.load(std::memory_order_acquire);  // (WF3) pairs with (WF2)
  if (seen == consumed_.load(std::memory_order_relaxed)) return;          // not woken: no syscall
  std::uint64_t count;
  while (::read(fd_, &count, sizeof count) < 0 && errno == EINTR) {
  }  // EAGAIN: a concurrent consume() read it first
  consumed_.store(seen, std::memory_order_relaxed);  // relaxed: only saves the next read(2)
}

}  // namespace kairos::detail
