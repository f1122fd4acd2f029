// coro.hpp: awaitables for C++20 coroutines of any type: sleep on a scheduler, await a future.
//   co_await kairos::sleep_for(scheduler, 5ms);            // or sleep_for(scheduler, 5ms, token)
//   co_await kairos::sleep_until(scheduler, deadline);     // the scheduler's clock
//   int v = co_await scheduler.schedule(f, 1ms);           // any ScheduledFuture<T>
// No coroutine type is imposed: these work in any coroutine whose promise accepts plain awaiters
// (no await_transform that refuses them). docs/coroutines.md is the user's guide.
//
// Sleeps. One task per sleep (schedule_at), whose callable is one pointer to the awaiter (a
//   40-byte node: no allocation beyond it; the awaiter lives in the frame).
//   Resumed on the thread that runs the task (a scheduler thread; the loop's thread in poll
//   mode), never before the deadline, and among equal deadlines on one shard in the order the
//   sleeps began (the scheduler's FIFO). A sleep whose task never runs resumes the coroutine
//   with CancelledError, on the thread that lets go of the task: request_stop() on the stop
//   token, shutdown() when the policy drops delayed tasks, the drop of a Task that
//   shutdown_now() returned, the scheduler's destructor. Never destroyed: the awaiter does not
//   own the frame (its coroutine type does; destroying it here would be a double destroy for a
//   lazy task, and would skip the continuation of whoever awaits it). A stop that comes after
//   the task started has no effect: the sleep ended normally.
// Exactly once. The callable is either run once or destroyed without running (the task's state
//   CAS decides: start against cancel, shutdown_now and drop), and both end in finish(); the
//   awaiter's phase (SP1, SP2) decides between finish() and await_suspend() still on its way
//   out, so the coroutine is resumed by exactly one of them, once.
// Futures. co_await on a ScheduledFuture<T> returns get()'s result: the value, the task's
//   exception, CancelledError. Suspends only if the task is not done, and resumes on the thread
//   that completes it (the runner, or the thread that cancels it or lets it go: see
//   detail/await_table.hpp). A task nobody awaits pays nothing for this (no node byte).
// Destroying a frame suspended in one of these (by its owner, without resuming it) unlinks it
//   (a future) or cancels its task (a sleep): do it only while no thread can complete the sleep
//   at that moment, as for any coroutine another thread may resume.
#pragma once
#include <atomic>
#include <chrono>
#include <coroutine>
#include <cstdint>
#include <optional>
#include <stop_token>
#include <utility>

#include <kairos/detail/await_table.hpp>
#include <kairos/errors.hpp>
#include <kairos/future.hpp>
#include <kairos/scheduler.hpp>

namespace kairos {

namespace detail {
struct FutureAccess {
  template <class T>
  static TaskBase* node(const ScheduledFuture<T>& f) noexcept {
    return f.node_;
  }
};
}  // namespace detail

// The awaiter of sleep_for / sleep_until: not copyable or movable (co_await it where it is made).
template <class Clock>
class SleepAwaiter {
 public:
  using time_point = typename BasicScheduler<Clock>::time_point;

  SleepAwaiter(BasicScheduler<Clock>& scheduler, Duration delay, std::stop_token token) noexcept
      : scheduler_(&scheduler), delay_(delay), relative_(true), token_(std::move(token)) {}
  SleepAwaiter(BasicScheduler<Clock>& scheduler, time_point deadline, std::stop_token token) noexcept
      : scheduler_(&scheduler), deadline_(deadline), relative_(false), token_(std::move(token)) {}
  SleepAwaiter(const SleepAwaiter&) = delete;
  SleepAwaiter& operator=(const SleepAwaiter&) = delete;
  ~SleepAwaiter() {
    // A frame destroyed while suspended here: nobody may resume it; its task must not run.
    std::uint8_t s = kSuspended;
    // (SP3) acq_rel: against finish()'s exchange (SP2): exactly one of them sees kSuspended.
    if (phase_.compare_exchange_strong(s, kAbandoned, std::memory_order_acq_rel)) {
      on_stop_.reset();
      future_.cancel();  // the callable, dropped, finds kAbandoned and touches nothing
    }
  }

  // A stop already requested: no task, CancelledError at once.
  bool await_ready() noexcept {
    if (!token_.stop_requested()) return false;
    phase_.store(kCancelled, std::memory_order_relaxed);
    return true;
  }

  // Throws what the submission throws (RejectedExecution after shutdown under Rejection::abort;
  // the other policies drop the task: CancelledError). False: finished already, resume now.
  bool await_suspend(std::coroutine_handle<> h) {
    waiter_ = h;
    if (relative_) future_ = scheduler_->schedule(Wake(this), delay_);
    else future_ = scheduler_->schedule_at(Wake(this), deadline_);
    // The stop callback only cancels the task; if the task wins, the callback loses (cancel()
    // finds it running or done) and has no effect. It may run here, at once.
    if (token_.stop_possible()) on_stop_.emplace(token_, OnStop{this});
    // (SP1) acq_rel: publishes waiter_ and future_ to finish() (pairs with SP2); a failure reads
    // (acquire) the phase finish() left, and resumes inline.
    std::uint8_t s = kSuspending;
    return phase_.compare_exchange_strong(s, kSuspended, std::memory_order_acq_rel);
  }

  void await_resume() const {
    if (phase_.load(std::memory_order_relaxed) == kCancelled)
      throw CancelledError("kairos: the sleep was cancelled");
  }

 private:
  static constexpr std::uint8_t kSuspending = 0;  // await_suspend has not finished
  static constexpr std::uint8_t kSuspended = 1;   // suspended: finish() resumes
  static constexpr std::uint8_t kFired = 2;       // the deadline came
  static constexpr std::uint8_t kCancelled = 3;   // the task will never run
  static constexpr std::uint8_t kAbandoned = 4;   // the frame is being destroyed, not resumed

  // The task's callable: one pointer. Run once (the deadline came) or destroyed without a run
  // (cancelled, dropped); the first of the two calls finish(), the moved-from shell nothing.
  struct Wake {
    SleepAwaiter* awaiter;
    explicit Wake(SleepAwaiter* a) noexcept : awaiter(a) {}
    Wake(Wake&& o) noexcept : awaiter(std::exchange(o.awaiter, nullptr)) {}
    Wake(const Wake&) = delete;
    Wake& operator=(const Wake&) = delete;
    Wake& operator=(Wake&&) = delete;
    ~Wake() {
      if (awaiter) awaiter->finish(kCancelled);
    }
    void operator()() { std::exchange(awaiter, nullptr)->finish(kFired); }
  };
  static_assert(sizeof(detail::Node<Wake, void, false, false>) == detail::kClassSizes[0],
                "kairos: a sleep's task is a node of the smallest class");

  struct OnStop {
    SleepAwaiter* awaiter;
    void operator()() noexcept { awaiter->future_.cancel(); }
  };

  // (SP2) acq_rel: sees what await_suspend published at SP1; its release publishes nothing the
  // coroutine needs but the phase itself. Resumes iff the coroutine is suspended; after the
  // exchange nothing of the awaiter is touched except by the one resumer.
  void finish(std::uint8_t outcome) noexcept {
    std::coroutine_handle<> h = waiter_;  // read before the exchange: after it, the frame may end
    if (phase_.exchange(outcome, std::memory_order_acq_rel) == kSuspended) h.resume();
  }

  BasicScheduler<Clock>* scheduler_;
  Duration delay_{};
  time_point deadline_{};
  bool relative_;
  std::stop_token token_;
  std::coroutine_handle<> waiter_;
  std::atomic<std::uint8_t> phase_{kSuspending};
  ScheduledFuture<void> future_;
  std::optional<std::stop_callback<OnStop>> on_stop_;  // after future_: destroyed before it
};

// co_await sleep_for(s, d): resumes after d on s's clock (negative: as soon as possible).
template <class Clock, class Rep, class Period>
SleepAwaiter<Clock> sleep_for(BasicScheduler<Clock>& scheduler, std::chrono::duration<Rep, Period> delay,
                              std::stop_token token = {}) noexcept {
  return SleepAwaiter<Clock>(scheduler, Duration(detail::to_ns_saturated(delay)), std::move(token));
}
// co_await sleep_until(s, t): resumes at t on s's clock (a past t: as soon as possible).
template <class Clock>
SleepAwaiter<Clock> sleep_until(BasicScheduler<Clock>& scheduler, typename BasicScheduler<Clock>::time_point deadline,
                                std::stop_token token = {}) noexcept {
  return SleepAwaiter<Clock>(scheduler, deadline, std::move(token));
}

// The awaiter of co_await on a ScheduledFuture<T> (holds its own handle to the task).
template <class T>
class FutureAwaiter {
 public:
  explicit FutureAwaiter(ScheduledFuture<T> future) noexcept : future_(std::move(future)) {}
  FutureAwaiter(const FutureAwaiter&) = delete;
  FutureAwaiter& operator=(const FutureAwaiter&) = delete;
  ~FutureAwaiter() {
    if (record_.node != nullptr) detail::await_unregister(&record_);  // destroyed while suspended
  }

  bool await_ready() const noexcept { return !future_.valid() || future_.is_done(); }
  bool await_suspend(std::coroutine_handle<> h) noexcept {
    record_.node = detail::FutureAccess::node(future_);
    record_.waiter = h;
    return detail::await_register(&record_);  // true: resumed by whoever completes the task
  }
  T await_resume() { return future_.get(); }  // done (or invalid: future_error), never blocks

 private:
  ScheduledFuture<T> future_;
  detail::AwaitRecord record_;
};

template <class T>
FutureAwaiter<T> operator co_await(const ScheduledFuture<T>& future) noexcept {
  return FutureAwaiter<T>(future);
}
template <class T>
FutureAwaiter<T> operator co_await(ScheduledFuture<T>&& future) noexcept {
  return FutureAwaiter<T>(std::move(future));
}

}  // namespace kairos
