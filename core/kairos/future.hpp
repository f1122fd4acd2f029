// future.hpp: ScheduledFuture<T>, the handle every schedule/submit returns.
// Threads: any thread may use any copy. get() may be called repeatedly on every copy (T
//          copyable); a move-only T is moved out by the first get(), later calls throw
//          std::future_error. The task's effects happen-before get() returns (acquire on state).
// Life:    holds a reference to the task node, so it may outlive its scheduler. delay() on a
//          ManualClock task reads that clock: keep the clock alive while you ask.
#pragma once
#include <atomic>
#include <chrono>
#include <exception>
#include <future>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include <kairos/clock.hpp>
#include <kairos/detail/scheduler_core.hpp>
#include <kairos/detail/task.hpp>
#include <kairos/duration.hpp>
#include <kairos/errors.hpp>

namespace kairos {

template <class Clock>
class BasicScheduler;
namespace detail {
struct FutureAccess;  // kairos/coro.hpp: co_await on a future reads its node
}

template <class T>
class ScheduledFuture {
 public:
  ScheduledFuture() noexcept = default;
  ScheduledFuture(const ScheduledFuture& o) noexcept : node_(o.node_), at_(o.at_), clock_bits_(o.clock_bits_) {
    if (node_) detail::add_ref(node_);
  }
  ScheduledFuture(ScheduledFuture&& o) noexcept
      : node_(std::exchange(o.node_, nullptr)), at_(o.at_), clock_bits_(std::exchange(o.clock_bits_, 0)) {}
  ScheduledFuture& operator=(ScheduledFuture o) noexcept {
    std::swap(node_, o.node_);
    std::swap(at_, o.at_);
    std::swap(clock_bits_, o.clock_bits_);
    return *this;
  }
  ~ScheduledFuture() {
    if (node_) detail::release(node_);
  }

  bool valid() const noexcept { return node_ != nullptr || let_go(); }

  // Blocks until done; returns the value, rethrows the task's exception (same object), or
  // throws CancelledError. A periodic task's future returns only by exception or cancellation.
  T get() {
    check();
    if (let_go()) throw CancelledError("kairos: the task was cancelled");
    std::uint32_t s = detail::wait_done(node_, -1);
    switch (s & detail::kStateMask) {
      case detail::kNormal:
        if constexpr (std::is_void_v<T>) {
          return;
        } else if constexpr (std::is_copy_constructible_v<T>) {
          return value();
        } else {
          // (FU1) acq_rel: one taker of a move-only result; pairs with the other takers' (FU1).
          if (node_->state.fetch_or(detail::kMovedOut, std::memory_order_acq_rel) & detail::kMovedOut)
            throw std::future_error(std::future_errc::future_already_retrieved);
          return std::move(value());
        }
      case detail::kExceptional:
        std::rethrow_exception(detail::stored_error(node_));
      default:
        throw CancelledError("kairos: the task was cancelled");
    }
  }

  // Blocks until done (completed, failed or cancelled), as std::future::wait(); get() then
  // does not block. A periodic task's future is done only when the series ends.
  void wait() const {
    check();
    if (!let_go()) detail::wait_done(node_, -1);
  }

  // Waits at most `timeout` (real time, also on a ManualClock scheduler).
  template <class Rep, class Period>
  std::future_status wait_for(std::chrono::duration<Rep, Period> timeout) const {
    check();
    if (let_go()) return std::future_status::ready;
    std::int64_t t = detail::to_ns_saturated(timeout);
    if (t < 0) t = 0;
    std::uint32_t s = detail::wait_done(node_, detail::add_saturated(detail::steady_now_ns(), t));
    return detail::is_terminal(s) ? std::future_status::ready : std::future_status::timeout;
  }

  // Waits until `deadline` at most, as std::future::wait_until(): real time on any clock with a
  // static now(). A steady_clock deadline (SteadyClock's time_point) is the futex wait's own
  // CLOCK_MONOTONIC deadline; any other clock (system_clock, ...) is waited for in steps of
  // wait_for(deadline - Clock::now()) until that clock reaches it, so a clock that is set back
  // is waited for longer, never less. A ManualClock time point is refused at compile time: no
  // real time passes on it (use wait_for, or advance the clock and wait()).
  template <class Clock, class Dur>
  std::future_status wait_until(std::chrono::time_point<Clock, Dur> deadline) const {
    static_assert(!std::is_same_v<Clock, ManualClock>,
                  "kairos: wait_until takes a real clock's time point; a ManualClock's time moves only "
                  "by advance() (use wait_for, or wait())");
    check();
    if (let_go()) return std::future_status::ready;
    if constexpr (std::is_same_v<Clock, std::chrono::steady_clock>) {
      std::int64_t at = detail::to_ns_saturated(deadline.time_since_epoch());
      if (at < 0) at = 0;  // before the clock's epoch: already passed (-1 would mean "no deadline")
      std::uint32_t s = detail::wait_done(node_, at);
      return detail::is_terminal(s) ? std::future_status::ready : std::future_status::timeout;
    } else {
      // In saturated nanoseconds: `deadline - Clock::now()` in the clock's own types overflows
      // for a far time point (time_point<system_clock, seconds>::max() is no deadline at all).
      const std::int64_t at = detail::to_ns_saturated(deadline.time_since_epoch());
      for (;;) {
        const std::int64_t left = detail::sub_saturated(at, detail::to_ns_saturated(Clock::now().time_since_epoch()));
        if (left <= 0) return is_done() ? std::future_status::ready : std::future_status::timeout;
        if (wait_for(Duration(left)) == std::future_status::ready) return std::future_status::ready;
      }
    }
  }

  // True iff this call cancelled the task (it had not completed). A running task's future
  // completes as cancelled at once; with may_interrupt_if_running its stop token is requested.
  // A pending one-shot task whose callable has no destructor is cancelled by one CAS that also
  // gives this handle's reference back (core/src/shard_cancel.cpp): the handle then holds no
  // node, and answers every call as for the cancelled task (delay() from the deadline it keeps);
  // its destruction costs nothing.
  bool cancel(bool may_interrupt_if_running = false) noexcept {
    if (!node_) return false;  // none, or cancelled by this handle already
    std::int64_t deadline = 0;
    const bool far = node_->flags & detail::kFarStamp;  // set before publication: read while attached
    switch (detail::cancel_task(node_, at_.core, may_interrupt_if_running, &deadline)) {
      case detail::CancelOutcome::kLost:
        return false;
      case detail::CancelOutcome::kWon:
        return true;
      case detail::CancelOutcome::kWonAndLet:
        break;
    }
    node_ = nullptr;  // the task's node may be gone already
    at_.deadline = deadline;
    // A far timer cancelled before its leader gave it a deadline keeps its delay (delay()).
    clock_bits_ |= kLetGo | (far && !detail::far_deadline_stamped(deadline) ? kLetGoUnstamped : 0);
    return true;
  }
  // (FU2) acquire: a done task's result, published by its completer (ST1), is visible.
  bool is_done() const noexcept {
    return node_ ? detail::is_terminal(node_->state.load(std::memory_order_acquire)) : let_go();
  }
  bool is_cancelled() const noexcept {
    return node_ ? (node_->state.load(std::memory_order_acquire) & detail::kStateMask) == detail::kCancelled  // (FU2)
                 : let_go();
  }
  bool is_periodic() const noexcept { return node_ && node_->periodic(); }

  // Moves a pending re-armable task (schedule_rearmable) to `delay` from now on its scheduler's
  // clock, in O(1) and without a lock: a later deadline is only recorded (the leader re-files
  // the task when the old one comes), an earlier one is sent to the leader at once. True iff
  // the task was pending: it then starts at the new deadline, never at the old one, and among
  // equal deadlines in re-arm order. False if it started, completed, was cancelled or returned
  // by shutdown_now, or is not re-armable. Saturating like schedule(); negative: at once.
  template <class Rep, class Period>
  bool rearm(std::chrono::duration<Rep, Period> delay) noexcept {
    if (!node_) return false;
    std::int64_t d = detail::to_ns_saturated(delay);
    if (d < 0) d = 0;
    const detail::DeadlineNs deadline = detail::deadline_after_ns(now_ns(), d);
    return detail::rearm_task(node_, at_.core, deadline.ns, deadline.never);
  }
  // rearm() to an absolute deadline on the task's scheduler's clock, for a loop that already
  // read that clock (one clock read per message instead of two): the same contract, the same
  // cost. The deadline is a SteadyClock (std::chrono::steady_clock) time point for a
  // steady-clock scheduler and a ManualClock one for a manual-clock scheduler; a deadline of the
  // other of the two throws std::invalid_argument (any other clock does not compile). A past
  // deadline is due at once (as schedule_at()).
  template <class Clock, class Dur>
    requires(std::is_same_v<Clock, std::chrono::steady_clock> || std::is_same_v<Clock, ManualClock>)
  bool rearm_at(std::chrono::time_point<Clock, Dur> deadline) {
    if (!node_) return false;
    if (std::is_same_v<Clock, ManualClock> != (clock() != nullptr))
      throw std::invalid_argument("kairos: rearm_at: the deadline is on another clock than the task's scheduler");
    return detail::rearm_task(node_, at_.core, detail::to_ns_saturated(deadline.time_since_epoch()), false);
  }
  bool is_rearmable() const noexcept { return node_ && (node_->flags & detail::kRearmable); }

  // Until the next trigger on the scheduler's clock; <= 0 when due.
  Duration delay() const noexcept {
    if (!node_) {
      if (!let_go()) return Duration::zero();
      if (clock_bits_ & kLetGoUnstamped) return Duration(detail::far_deadline_delay(at_.deadline));
      return Duration(detail::sub_saturated(at_.deadline, now_ns()));
    }
    std::int64_t& at = (node_->flags & detail::kRearmable) ? static_cast<detail::RearmBase*>(node_)->latest_deadline
                                                            : node_->deadline;
    // (FS2) relaxed: a far timer's field is its encoded delay until its leader's stamp (FS1,
    // core/src/shard_leader.cpp), which this may read either side of. Before it, the delay
    // itself: the deadline the task would get if it were taken in now.
    std::int64_t d = std::atomic_ref<std::int64_t>(at).load(std::memory_order_relaxed);
    if ((node_->flags & detail::kFarStamp) && !detail::far_deadline_stamped(d)) return Duration(detail::far_deadline_delay(d));
    return Duration(detail::sub_saturated(d, now_ns()));
  }

 private:
  template <class Clock>
  friend class BasicScheduler;
  friend struct detail::FutureAccess;
  ScheduledFuture(detail::TaskBase* adopted, detail::SchedulerCore* core, const ManualClock* clock) noexcept
      : node_(adopted), at_{core}, clock_bits_(reinterpret_cast<std::uintptr_t>(clock)) {}
  void check() const {
    if (!valid()) throw std::future_error(std::future_errc::no_state);
  }
  // This handle's cancel let its reference go (cancel()): the task is cancelled, node_ is null.
  bool let_go() const noexcept { return (clock_bits_ & kLetGo) != 0; }
  const ManualClock* clock() const noexcept {
    return reinterpret_cast<const ManualClock*>(clock_bits_ & ~(kLetGo | kLetGoUnstamped));
  }
  std::int64_t now_ns() const noexcept {
    const ManualClock* c = clock();
    return c ? c->now_ns() : detail::steady_now_ns();
  }
  // The result a completed run stored (read after an acquire of kNormal).
  std::add_lvalue_reference_t<T> value() const noexcept {
    return *static_cast<std::add_pointer_t<T>>(detail::task_result(node_));
  }

  // The task's node (one reference); nullptr: none, or let go by this handle's cancel (kLetGo).
  detail::TaskBase* node_ = nullptr;
  union Attachment {
    detail::SchedulerCore* core;  // with node_: its scheduler, for cancel() and rearm() (touched
                                  // only while the task is attached)
    std::int64_t deadline;        // once let go: the task's deadline, for delay()
  };
  Attachment at_{nullptr};
  // The scheduler's ManualClock (nullptr: the steady clock), with kLetGo in its low bit (a
  // ManualClock is aligned to 8 bytes at least).
  static constexpr std::uintptr_t kLetGo = 1;
  // With kLetGo: the deadline kept is a far timer's encoded delay (far_deadline_unstamped).
  static constexpr std::uintptr_t kLetGoUnstamped = 2;
  static_assert(alignof(ManualClock) > (kLetGo | kLetGoUnstamped));
  std::uintptr_t clock_bits_ = 0;
};

}  // namespace kairos
