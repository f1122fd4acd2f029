// loop_wake.cpp: the eventfd behind Scheduler::wake_fd() (the protocol: loop_wake.hpp).
//
// Edges (each names its partner):
//   (WF2) post: posted_.fetch_add seq_cst before the write(2) -> pairs with (WF3): a write in
//         the fd was counted first (the write and the loop's read or epoll of it are ordered by
//         the kernel's lock on the eventfd, which both system calls take).
//   (WF3) consume: posted_ load seq_cst -> pairs with (WF2): it sees the count of every write
//         the loop saw the fd readable for before it asked.
//   (WF4) consume: consumed_.fetch_add relaxed of what one read emptied -> its only partner is
//         the next consume()'s comparison (WF3's line): a stale value only costs one read(2)
//         more, never a skipped one (consumed_ never passes the posts whose writes were read).
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

bool LoopWake::post() noexcept {
  posted_.fetch_add(1, std::memory_order_seq_cst);  // (WF2) before the write; pairs with (WF3)
  const std::uint64_t one = 1;
  // EAGAIN only when the counter would overflow (2^64 - 2 unread posts): readable already.
  while (::write(fd_, &one, sizeof one) < 0 && errno == EINTR) {
  }
  return static_cast<bool>(on_wake_);
}

void LoopWake::run_callback() const noexcept {
  if (!on_wake_) return;
  try {
    on_wake_();
  } catch (...) {
    report_uncaught(*on_uncaught_, std::current_exception());
  }
}

void LoopWake::consume() noexcept {
  const std::uint64_t posted = posted_.load(std::memory_order_seq_cst);  // (WF3) pairs with (WF2)
  if (posted == consumed_.load(std::memory_order_relaxed)) return;       // nothing unread: no syscall
  std::uint64_t writes = 0;
  ssize_t r;
  while ((r = ::read(fd_, &writes, sizeof writes)) < 0 && errno == EINTR) {
  }
  // EAGAIN: a post counted but not yet written, or a concurrent consume() read it first.
  if (r == static_cast<ssize_t>(sizeof writes)) consumed_.fetch_add(writes, std::memory_order_relaxed);  // (WF4)
}

}  // namespace kairos::detail
