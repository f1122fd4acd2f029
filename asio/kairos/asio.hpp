// asio.hpp: kairos for Boost.Asio programs (docs/api.md "Asio"; docs/coroutines.md).
//   co_await kairos::asio::async_sleep_for(scheduler, 5ms, boost::asio::use_awaitable);
//   kairos::asio::async_sleep_until(scheduler, deadline, token);      // any completion token
//   kairos::asio::async_wait(future, token);   // void(error_code) when the task is done
//   kairos::asio::PollBridge bridge(io, poll_mode_scheduler);   // kairos timers on io's thread
// Header-only. Boost is the including program's dependency (link Boost::headers): libkairos
// never includes or links Boost, and the CMake target kairos::asio links kairos::kairos only.
// Only kairos's public API is used (sleep_for/sleep_until with a stop token, co_await on a
// ScheduledFuture, poll mode).
//
// Why a token and not the awaiters of kairos/coro.hpp: asio::awaitable's promise has an
// await_transform that refuses foreign awaiters, so `co_await kairos::sleep_for(...)` does not
// compile inside an asio::awaitable. Completion tokens work with every Asio model: use_awaitable,
// callbacks (bind_executor them), use_future, deferred (Boost 1.80+), awaitable operators.
//
// Completion: void(boost::system::error_code), posted exactly once to the handler's associated
//   executor (system_executor when it has none), never run on a kairos thread or inline in the
//   initiating call. An error_code of {} means the deadline came (a sleep) or the task completed
//   normally or with an exception (async_wait: future.get() then returns the value or rethrows,
//   without blocking). operation_aborted means kairos let the sleep's task or the awaited task go
//   without running it: cancelled (also through the cancellation slot below), dropped by
//   shutdown() under its policy, by shutdown_now() (a dropped Task; a Task run() completes the
//   sleep at once, early, as with coro.hpp), by the scheduler's destructor, or rejected (any
//   Rejection policy, Rejection::abort's throw included; caller_runs over capacity runs the sleep
//   at once, early). A sleep whose task the pool cannot allocate completes with no_memory.
// Threads: the operations may be started on any thread; the handler runs where its executor
//   runs it. kairos's thread (or the polling loop, or the thread that cancels or drops the task)
//   only posts the handler. The handler's executor is kept busy (a work guard) from the start of
//   the operation until the handler is posted, so io_context::run() does not return while a
//   sleep is pending. The handler is moved into the posted function and destroyed after it ran
//   (or with the io_context's queue), never with a kairos lock held.
// Life: kairos's side touches the handler's executor (the post, then the work guard's release)
//   until just after the handler is queued, possibly while the handler already runs. So the
//   executor's context must outlive that: destroy the scheduler first (its destructor completes
//   every pending operation and joins its threads; declare the io_context before it), or destroy
//   the io_context only after its run() returned (the work guard is held until kairos's last
//   touch). The scheduler need not outlive an operation: a sleep or wait pending at its
//   destruction completes with operation_aborted.
// Exactly once. Each operation is a detached coroutine of this header (Detached below) that
//   co_awaits kairos's own awaiter and, once resumed, posts the handler. kairos resumes a
//   sleep's or a future's awaiting coroutine exactly once, with an outcome, never destroys it
//   (coro.hpp: the task's state CAS decides between its run and its cancellation; the await
//   table between a completion and a registration), so the handler is posted exactly once.
// Cancellation (Boost 1.77+, KAIROS_ASIO_HAS_CANCELLATION 1): if the handler has a connected
//   cancellation slot, the operation installs its cancellation handler before it starts, and the
//   cancellation handler holds only reference-counted kairos objects (a std::stop_source, a
//   ScheduledFuture), so a signal emitted after the operation completed (the slot keeps the
//   handler until its owner reuses or clears it) finds nothing to stop and does nothing.
//   - a sleep: terminal, partial and total cancellation request stop on the sleep's stop token:
//     kairos cancels its task; if the cancel wins, the sleep completes with operation_aborted
//     (resumed inside emit(), then posted); if the task started first, it completes with {}.
//     Nothing else changes, so the sleep supports all three types.
//   - async_wait: terminal and partial cancellation cancel the awaited task (future.cancel()):
//     the wait then completes with operation_aborted, or with {} if the task had completed
//     first. Total cancellation ("no side effect") is not supported and is ignored: cancelling
//     the task is a side effect the caller can see on its future.
//   As for every Asio operation, emit() the signal on the handler's executor (a cancellation
//   signal and its slot are not thread-safe); it races kairos's threads only through kairos's
//   thread-safe cancel.
// Cost: a sleep is kairos's (a 40-byte pooled task node) plus the coroutine frame (one
//   allocation holding the handler) and, with a connected slot, a std::stop_source's state;
//   async_wait is one frame and links a record into kairos's await table.
//
// PollBridge: a poll-mode scheduler's loop run by Asio (docs/poll-mode.md): after every poll(),
//   a steady_timer at next_deadline() and a wait on the scheduler's wake fd (a dup: a
//   stream_descriptor closes its fd, and the scheduler's own must never be closed). Threads: one
//   at a time, on the executor's thread (an io_context run by one thread, or a strand): start(),
//   stop(), the destructor and every handler it posts; iterations() and wakes() from any thread.
#pragma once
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <coroutine>
#include <cstdint>
#include <exception>
#include <future>
#include <memory>
#include <new>
#include <optional>
#include <stop_token>
#include <system_error>
#include <type_traits>
#include <utility>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/version.hpp>
#include <boost/system/error_code.hpp>

#if BOOST_ASIO_VERSION >= 101900  // Asio 1.19, Boost 1.77: per-operation cancellation
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/cancellation_type.hpp>
#define KAIROS_ASIO_HAS_CANCELLATION 1
#else
#define KAIROS_ASIO_HAS_CANCELLATION 0
#endif

#include <kairos/coro.hpp>
#include <kairos/future.hpp>
#include <kairos/scheduler.hpp>

namespace kairos::asio {

namespace detail {

// The coroutine each operation runs in: starts at once, owned by nobody, its frame freed at its
// end. kairos's awaiters resume it exactly once and never destroy it, so it always ends.
struct Detached {
  struct promise_type {
    Detached get_return_object() noexcept { return {}; }
    std::suspend_never initial_suspend() noexcept { return {}; }
    std::suspend_never final_suspend() noexcept { return {}; }
    void return_void() noexcept {}
    // The bodies catch what kairos throws; only a failing post() (no memory for the queued
    // handler) gets here, and a handler that can be neither run nor reported is fatal.
    void unhandled_exception() noexcept { std::terminate(); }
  };
};

// Posts the handler with `ec` to its associated executor (moved into the posted function, which
// the executor runs and destroys).
template <class Handler>
void post_completion(Handler& handler, boost::system::error_code ec) {
  auto executor = ::boost::asio::get_associated_executor(handler);
  ::boost::asio::post(executor, [h = std::move(handler), ec]() mutable { std::move(h)(ec); });
}

template <class Handler>
auto make_work(const Handler& handler) {
  return ::boost::asio::make_work_guard(::boost::asio::get_associated_executor(handler));
}

// Parameters are by value: they live in the frame (the scheduler by pointer: only the first
// step, which schedules the task, uses it). `work` keeps the handler's executor busy until the
// frame ends, after the post.
template <class Clock, class When, class Handler, class Work>
Detached sleep_then_post(BasicScheduler<Clock>* scheduler, When when, std::stop_token stop, Handler handler,
                         Work work) {
  boost::system::error_code ec;
  try {
    if constexpr (std::is_same_v<When, typename BasicScheduler<Clock>::time_point>)
      co_await kairos::sleep_until(*scheduler, when, std::move(stop));
    else
      co_await kairos::sleep_for(*scheduler, when, std::move(stop));
  } catch (const std::bad_alloc&) {
    ec = ::boost::asio::error::no_memory;  // the task pool could not grow: nothing was queued
  } catch (...) {
    ec = ::boost::asio::error::operation_aborted;  // CancelledError, RejectedExecution
  }
  post_completion(handler, ec);
  (void)work;
}

// co_await's FutureAwaiter without its get(): waits until the task is done and returns nothing,
// so a move-only result stays in the future for the caller's get().
template <class T>
struct DoneAwaiter {
  explicit DoneAwaiter(ScheduledFuture<T> future) noexcept : inner(std::move(future)) {}
  bool await_ready() const noexcept { return inner.await_ready(); }
  bool await_suspend(std::coroutine_handle<> h) noexcept { return inner.await_suspend(h); }
  void await_resume() const noexcept {}
  FutureAwaiter<T> inner;
};

template <class T, class Handler, class Work>
Detached wait_then_post(ScheduledFuture<T> future, Handler handler, Work work) {
  co_await DoneAwaiter<T>(future);
  // Done here: resumed by the task's completer (or at once if it was done). (FU2 of future.hpp:
  // is_cancelled() acquires the completing state.)
  post_completion(handler, future.is_cancelled() ? boost::system::error_code(::boost::asio::error::operation_aborted)
                                                 : boost::system::error_code());
  (void)work;
}

#if KAIROS_ASIO_HAS_CANCELLATION
// Cancellation handlers, constructed in the slot's own memory and kept there until the slot's
// owner reuses or clears it, possibly after the operation ended: they own what they touch.
struct StopSleep {
  std::stop_source source;
  void operator()(::boost::asio::cancellation_type_t type) noexcept {
    if (type != ::boost::asio::cancellation_type::none) source.request_stop();
  }
};
template <class T>
struct CancelTask {
  ScheduledFuture<T> future;
  void operator()(::boost::asio::cancellation_type_t type) noexcept {
    constexpr auto kSupported = ::boost::asio::cancellation_type::terminal | ::boost::asio::cancellation_type::partial;
    if ((type & kSupported) != ::boost::asio::cancellation_type::none) future.cancel();
  }
};
#endif

template <class Clock>
struct InitiateSleep {
  BasicScheduler<Clock>* scheduler;
  template <class Handler, class When>
  void operator()(Handler&& handler, When when) const {
    std::decay_t<Handler> h(std::forward<Handler>(handler));
    std::stop_token stop;
#if KAIROS_ASIO_HAS_CANCELLATION
    auto slot = ::boost::asio::get_associated_cancellation_slot(h);
    if (slot.is_connected()) {
      std::stop_source source;
      stop = source.get_token();
      slot.template emplace<StopSleep>(StopSleep{std::move(source)});  // before the sleep starts
    }
#endif
    auto work = make_work(h);
    sleep_then_post(scheduler, when, std::move(stop), std::move(h), std::move(work));
  }
};

struct InitiateWait {
  template <class Handler, class T>
  void operator()(Handler&& handler, ScheduledFuture<T> future) const {
    std::decay_t<Handler> h(std::forward<Handler>(handler));
#if KAIROS_ASIO_HAS_CANCELLATION
    auto slot = ::boost::asio::get_associated_cancellation_slot(h);
    if (slot.is_connected()) slot.template emplace<CancelTask<T>>(CancelTask<T>{future});
#endif
    auto work = make_work(h);
    wait_then_post(std::move(future), std::move(h), std::move(work));
  }
};

}  // namespace detail

// Completes after `delay` on the scheduler's clock (saturating; negative: as soon as possible),
// counted from the start of the operation (for use_awaitable and deferred: when it is awaited or
// invoked). Never early. Signature void(boost::system::error_code).
template <class Clock, class Rep, class Period, class CompletionToken>
auto async_sleep_for(BasicScheduler<Clock>& scheduler, std::chrono::duration<Rep, Period> delay,
                     CompletionToken&& token) {
  return ::boost::asio::async_initiate<CompletionToken, void(boost::system::error_code)>(
      detail::InitiateSleep<Clock>{&scheduler}, token, delay);
}

// Completes at `deadline` on the scheduler's clock (a past one: as soon as possible).
template <class Clock, class CompletionToken>
auto async_sleep_until(BasicScheduler<Clock>& scheduler, typename BasicScheduler<Clock>::time_point deadline,
                       CompletionToken&& token) {
  return ::boost::asio::async_initiate<CompletionToken, void(boost::system::error_code)>(
      detail::InitiateSleep<Clock>{&scheduler}, token, deadline);
}

// Completes when the future's task is done: {} if it completed (future.get() then returns its
// value or rethrows its exception, without blocking), operation_aborted if it was cancelled or
// dropped. A periodic task's future is done when its series ends. Any number of waits on one
// task; the future is copied, the caller keeps its own. An empty future throws
// std::future_error (no_state) here, before anything starts.
template <class T, class CompletionToken>
auto async_wait(const ScheduledFuture<T>& future, CompletionToken&& token) {
  if (!future.valid()) throw std::future_error(std::future_errc::no_state);
  return ::boost::asio::async_initiate<CompletionToken, void(boost::system::error_code)>(detail::InitiateWait{},
                                                                                          token, future);
}

// A poll-mode scheduler's loop on an Asio executor: each pass polls, asks next_deadline() (which
// arms the wake-up) and sets a steady_timer to it; the scheduler's wake fd (a dup of it, in a
// stream_descriptor) starts a pass when another thread submits or re-arms earlier. Kairos tasks
// then run on the executor's thread, beside its other handlers.
// Threads: start(), stop(), the destructor and the bridge's handlers on the executor's thread,
// one at a time (an io_context run by one thread, or a strand); the counters from any thread.
// Life: the handlers it leaves queued check a shared stop flag before touching the bridge, so
// the bridge may be destroyed (it stops itself) with its waits still queued; the scheduler and
// the executor's context must outlive it.
class PollBridge {
 public:
  // Throws std::logic_error (from wake_fd()) for a scheduler not in poll mode, std::system_error
  // if the wake fd cannot be duplicated or registered.
  PollBridge(const ::boost::asio::any_io_executor& executor, Scheduler& scheduler)
      : scheduler_(scheduler), timer_(executor), wake_(executor) {
    int fd = ::fcntl(scheduler.wake_fd(), F_DUPFD_CLOEXEC, 0);
    if (fd < 0) throw std::system_error(errno, std::generic_category(), "kairos::asio::PollBridge: dup(wake_fd())");
    boost::system::error_code ec;
    wake_.assign(fd, ec);
    if (ec) {
      ::close(fd);
      throw std::system_error(ec.value(), std::generic_category(), "kairos::asio::PollBridge: register the wake fd");
    }
  }
  PollBridge(::boost::asio::io_context& io, Scheduler& scheduler) : PollBridge(io.get_executor(), scheduler) {}
  PollBridge(const PollBridge&) = delete;
  PollBridge& operator=(const PollBridge&) = delete;
  ~PollBridge() { stop(); }

  // The first pass (tasks already due run here), then the waits. Once.
  void start() {
    pass();
    wait_for_wake();
  }
  // No pass after this; the timer's and the fd's waits are cancelled. Tasks stay in the
  // scheduler (a later bridge, or the scheduler's own close(), may run them).
  void stop() {
    *stopped_ = true;
    timer_.cancel();
    wake_.cancel();
  }

  // Passes so far: poll() + next_deadline() + the timer set, on the timer, a wake or start().
  std::uint64_t iterations() const noexcept { return iterations_.load(std::memory_order_relaxed); }
  // Passes started by the wake fd (another thread's earlier submission, or shutdown). Compare
  // with scheduler.stats().total().loop_wakes: a pass per signalled wake.
  std::uint64_t wakes() const noexcept { return wakes_.load(std::memory_order_relaxed); }

 private:
  void pass() {
    if (*stopped_) return;
    iterations_.fetch_add(1, std::memory_order_relaxed);  // relaxed: a statistic; publishes nothing
    scheduler_.poll();
    std::optional<Scheduler::time_point> next = scheduler_.next_deadline();  // arms the wake
    // SteadyClock is steady_clock: its time points are the timer's.
    timer_.expires_at(next ? *next : std::chrono::steady_clock::time_point::max());
    timer_.async_wait([this, stopped = stopped_](const boost::system::error_code& ec) {
      if (ec || *stopped) return;  // operation_aborted: a later pass replaced this wait
      pass();
    });
  }
  void wait_for_wake() {
    wake_.async_wait(::boost::asio::posix::stream_descriptor::wait_read,
                     [this, stopped = stopped_](const boost::system::error_code& ec) {
                       if (ec || *stopped) return;
                       wakes_.fetch_add(1, std::memory_order_relaxed);  // relaxed: a statistic
                       pass();  // its next_deadline() reads the wake fd back
                       wait_for_wake();
                     });
  }

  Scheduler& scheduler_;
  ::boost::asio::steady_timer timer_;
  ::boost::asio::posix::stream_descriptor wake_;
  // The executor's thread only; shared with the queued handlers, which may outlive the bridge.
  std::shared_ptr<bool> stopped_ = std::make_shared<bool>(false);
  std::atomic<std::uint64_t> iterations_{0};
  std::atomic<std::uint64_t> wakes_{0};
};

}  // namespace kairos::asio
