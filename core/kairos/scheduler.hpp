// scheduler.hpp: BasicScheduler<Clock>, kairos's ScheduledThreadPoolExecutor.
//
// Guarantees (the README says them in plain words):
// - Whatever a thread did before calling schedule() is visible in the task body, and a task's
//   effects are visible to whoever get()s its result.
// - A task never starts before its deadline on the scheduler's clock.
// - Equal deadlines start in submission order within a shard, also across threads whenever one
//   submission returned before the other started. A thread's tasks all go to one shard.
// - Runs of one periodic task never overlap, and each run happens-before the next.
// - Every accepted task runs, is cancelled, or is returned by shutdown_now(); nothing is lost.
//
// Threads: every member may be called from any thread, also from inside a task. The submit path
//          takes no lock and makes at most one system call (a wake-up when the new task is
//          earlier than the deadline its shard's leader sleeps for).
#pragma once
#include <chrono>
#include <concepts>
#include <cstdint>
#include <memory>
#include <optional>
#include <ranges>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <kairos/clock.hpp>
#include <kairos/detail/invoke.hpp>
#include <kairos/detail/scheduler_core.hpp>
#include <kairos/detail/task.hpp>
#include <kairos/duration.hpp>
#include <kairos/errors.hpp>
#include <kairos/future.hpp>
#include <kairos/options.hpp>
#include <kairos/stats.hpp>
#include <kairos/task.hpp>

namespace kairos {

template <class Clock>
class BasicScheduler {
  static_assert(std::is_same_v<Clock, SteadyClock> || std::is_same_v<Clock, ManualClock>,
                "kairos: Clock is SteadyClock or ManualClock");

 public:
  using clock_type = Clock;
  using time_point = typename Clock::time_point;

  explicit BasicScheduler(Options options = {})
    requires std::is_same_v<Clock, SteadyClock>
      : core_(detail::SchedulerCore::create(options, nullptr)) {}
  BasicScheduler(Options options, Clock& clock) : core_(detail::SchedulerCore::create(options, manual(clock))) {}

  // shutdown_now(), its tasks dropped (their futures complete as cancelled), running tasks asked
  // to stop and waited for; never waits on a deadline. Called from inside one of its own tasks,
  // it returns without waiting for that task, whose thread then exits.
  ~BasicScheduler() {
    if (core_) core_->close();
  }
  BasicScheduler(const BasicScheduler&) = delete;
  BasicScheduler& operator=(const BasicScheduler&) = delete;

  // One-shot task after `delay` (negative: as soon as possible; any duration, saturating).
  template <class F, class Rep, class Period>
  auto schedule(F&& f, std::chrono::duration<Rep, Period> delay) {
    return submit_one(std::forward<F>(f), Delay{detail::to_ns_saturated(delay)});
  }
  // One-shot task at an absolute deadline on this scheduler's clock (a past one runs at once).
  template <class F>
  auto schedule_at(F&& f, time_point deadline) {
    return submit_one(std::forward<F>(f), deadline_at(deadline));
  }
  // A one-shot task whose deadline its future's rearm() can move (idle and heartbeat timeouts,
  // order timeouts that get extended): 16 bytes more than schedule()'s node; rearm() costs a
  // few atomic operations and no allocation. Otherwise exactly schedule() / schedule_at().
  template <class F, class Rep, class Period>
  auto schedule_rearmable(F&& f, std::chrono::duration<Rep, Period> delay) {
    return submit_one<true>(std::forward<F>(f), deadline_after(delay));
  }
  template <class F>
  auto schedule_rearmable_at(F&& f, time_point deadline) {
    return submit_one<true>(std::forward<F>(f), deadline_at(deadline));
  }
  // Run n is due at first + n * period; late runs start at once, one after another (catch-up).
  template <class F, class R1, class P1, class R2, class P2>
  ScheduledFuture<void> schedule_at_fixed_rate(F&& f, std::chrono::duration<R1, P1> initial_delay,
                                               std::chrono::duration<R2, P2> period) {
    return submit_periodic(std::forward<F>(f), initial_delay, period, 0, "period");
  }
  // The next run is due `delay` after the previous run ends.
  template <class F, class R1, class P1, class R2, class P2>
  ScheduledFuture<void> schedule_with_fixed_delay(F&& f, std::chrono::duration<R1, P1> initial_delay,
                                                  std::chrono::duration<R2, P2> delay) {
    return submit_periodic(std::forward<F>(f), initial_delay, delay, detail::kFixedDelay, "delay");
  }
  // Zero-delay schedule whose exception (nobody can get() it) goes to Options::on_uncaught.
  template <class F>
  void execute(F&& f) {
    post_one(std::forward<F>(f), deadline_after(Duration::zero()));
  }
  // execute() after `delay` / at an absolute deadline: a one-shot task with no future, for a
  // timer nobody cancels, waits for or awaits (a heartbeat, a deferred flush). Everything else is
  // schedule()'s (deadline, FIFO among equal deadlines, the shutdown policies, shutdown_now(),
  // rejection); its exception goes to Options::on_uncaught. With no handle to make and drop it is
  // one locked instruction cheaper than a schedule() whose future is dropped (the handle's
  // release, RC1).
  template <class F, class Rep, class Period>
  void execute_after(F&& f, std::chrono::duration<Rep, Period> delay) {
    post_one(std::forward<F>(f), Delay{detail::to_ns_saturated(delay)});
  }
  template <class F>
  void execute_at(F&& f, time_point deadline) {
    post_one(std::forward<F>(f), deadline_at(deadline));
  }
  template <class F>
  auto submit(F&& f) {
    return submit_one(std::forward<F>(f), deadline_after(Duration::zero()));
  }

  void shutdown() { core_->shutdown(); }
  // Stops accepting, asks running tasks to stop, returns the tasks that never started,
  // earliest deadline first.
  std::vector<Task> shutdown_now() {
    // A local reference: Options::on_wake runs inside and may destroy this scheduler.
    const std::shared_ptr<detail::SchedulerCore> core = core_;
    std::vector<detail::TaskBase*> nodes = core->shutdown_now();
    std::vector<Task> out;
    try {
      out.reserve(nodes.size());
    } catch (...) {  // no room for the Tasks: they complete as cancelled, none is lost
      for (detail::TaskBase* n : nodes) detail::drop_orphan(n);
      throw;
    }
    auto handler = core->uncaught_handler();
    for (detail::TaskBase* n : nodes) out.emplace_back(n, handler);
    return out;
  }
  template <class Rep, class Period>
  bool await_termination(std::chrono::duration<Rep, Period> timeout) {
    return core_->await_termination(detail::to_ns_saturated(timeout));
  }
  bool is_shutdown() const noexcept { return core_->is_shutdown(); }
  bool is_terminating() const noexcept { return core_->is_terminating(); }
  bool is_terminated() const noexcept { return core_->is_terminated(); }

  void set_remove_on_cancel(bool v) { core_->set_remove_on_cancel(v); }
  void set_execute_existing_delayed_tasks_after_shutdown(bool v) {
    core_->set_execute_existing_delayed_tasks_after_shutdown(v);
  }
  void set_continue_existing_periodic_tasks_after_shutdown(bool v) {
    core_->set_continue_existing_periodic_tasks_after_shutdown(v);
  }

  // Pending tasks, those still in an inbox and cancelled-but-retained ones included. Racy while
  // producers run.
  std::size_t queue_size() const noexcept { return core_->queue_size(); }
  // True once no scheduler thread runs a task, every submission and cancel that returned before
  // the call has been applied, and no task has a deadline at or before the clock's now.
  // Times out in real time.
  template <class Rep, class Period>
  bool wait_idle(std::chrono::duration<Rep, Period> timeout) {
    return core_->wait_idle(detail::to_ns_saturated(timeout));
  }
  SchedulerStats stats() const { return core_->stats(); }

  // ---- Java's ThreadPoolExecutor surface (docs/api.md "Java's counters, purge, invoke, close")
  // Removes every cancelled task the queue still retains (remove-on-cancel off); returns how
  // many. Takes each shard's lock once: O(pending).
  std::size_t purge() { return core_->purge(); }
  // Java's counts. Each is exact when the scheduler is quiet (wait_idle() returned true) and a
  // snapshot otherwise; each takes every shard's lock briefly.
  //   active_count          threads running tasks now (a thread runs its due tasks as a batch)
  //   completed_task_count  executions finished on scheduler threads; every periodic run counts
  //                         (caller_runs runs and Task::run() are not counted, as in Java)
  //   task_count            completed_task_count + active_count + queue_size (cancelled tasks
  //                         still retained count, as in Java)
  //   pool_size             scheduler threads alive: shards * threads_per_shard until shutdown,
  //                         then fewer; 0 once the last one exits (before is_terminated())
  //   largest_pool_size     most threads alive at once: shards * threads_per_shard (the pool
  //                         is started whole at construction and never grows)
  std::size_t active_count() const { return core_->pool_counts().active; }
  std::uint64_t completed_task_count() const { return core_->pool_counts().completed; }
  std::uint64_t task_count() const {
    auto c = core_->pool_counts();
    return c.completed + c.active + queue_size();
  }
  std::size_t pool_size() const { return core_->pool_counts().pool; }
  std::size_t largest_pool_size() const { return core_->pool_counts().largest; }

  // Submits every callable of `tasks` (copied from an lvalue range, moved from an rvalue one)
  // and waits until all are done; returns their futures in the range's order, all done. If a
  // submission throws, the tasks already submitted are cancelled and the exception leaves.
  // Blocks the caller: from inside a task it needs another free thread of this scheduler; from
  // a task whose shard has no other thread (one thread per shard, or a poll) it would wait for
  // ever, and throws std::logic_error instead (use the timed form there).
  template <std::ranges::input_range Range>
  auto invoke_all(Range&& tasks) {
    refuse_waiting_for_itself("invoke_all");
    auto futures = submit_all(std::forward<Range>(tasks));
    for (auto& f : futures)
      while (f.wait_for(std::chrono::hours(24)) != std::future_status::ready) {
      }
    return futures;
  }
  // As above, but waits at most `timeout` (real time); the tasks not done by then are
  // cancelled (cancel(true)), so every future returned is done.
  template <std::ranges::input_range Range, class Rep, class Period>
  auto invoke_all(Range&& tasks, std::chrono::duration<Rep, Period> timeout) {
    const std::int64_t until = detail::add_saturated(detail::steady_now_ns(), std::max<std::int64_t>(0, detail::to_ns_saturated(timeout)));
    auto futures = submit_all(std::forward<Range>(tasks));
    for (auto& f : futures) {
      if (f.wait_for(Duration(std::max<std::int64_t>(0, until - detail::steady_now_ns()))) != std::future_status::ready) {
        for (auto& g : futures) g.cancel(true);
        break;
      }
    }
    return futures;
  }
  // Submits every callable of `tasks` and returns the result of one that completed normally
  // (the first to do so); the others are then cancelled (cancel(true)). If every task fails,
  // rethrows the last failure (a task that never ran counts as CancelledError). Empty range:
  // std::invalid_argument. Blocks the caller like invoke_all.
  template <std::ranges::input_range Range>
  auto invoke_any(Range&& tasks) {
    refuse_waiting_for_itself("invoke_any");
    return any_of(std::forward<Range>(tasks), -1);
  }
  // As above; throws TimeoutError (and cancels every task) if none completed normally within
  // `timeout` (real time).
  template <std::ranges::input_range Range, class Rep, class Period>
  auto invoke_any(Range&& tasks, std::chrono::duration<Rep, Period> timeout) {
    return any_of(std::forward<Range>(tasks),
                  detail::add_saturated(detail::steady_now_ns(), std::max<std::int64_t>(0, detail::to_ns_saturated(timeout))));
  }
  // Java 19's ExecutorService.close(): shutdown(), then waits until terminated (the after-
  // shutdown policies decide what still runs; on a ManualClock, delayed tasks wait for the
  // clock). Called from inside one of its own tasks it cannot wait for itself: it does
  // shutdown() and returns at once. Nothing happens if already terminated.
  void close() {
    if (is_terminated()) return;
    shutdown();
    if (core_->on_own_thread()) return;
    while (!await_termination(std::chrono::hours(24))) {
    }
  }
  time_point now() const noexcept { return time_point(std::chrono::duration_cast<typename time_point::duration>(Duration(core_->now_ns()))); }

  // ---- poll mode (Options::poll_mode; docs/poll-mode.md) ---------------------------------------
  // The owner's loop drives the scheduler: no scheduler thread exists. Both calls throw
  // std::logic_error on a scheduler that runs its own threads.
  //
  // Runs, on the calling thread, the tasks due at `now` — at most `limit` taken from the queue —
  // and returns how many executions started. `now` is the loop's own reading of this clock
  // (the loop usually has one); a `now` ahead of the clock runs tasks early. The guarantees are
  // those of a shard with one thread: deadline order, FIFO among equal deadlines, a periodic
  // task's runs never overlap and each happens-before the next, cancel and re-arm from any
  // thread, the shutdown policies. After shutdown, the poll that finds nothing left to run
  // terminates the scheduler (Options::terminated runs in it). A task calling poll() of its
  // own scheduler gets 0. One poll at a time: a poll racing another returns 0 for the shards
  // the other holds. wait_idle(), await_termination() and close() called on the loop's thread
  // (the last thread that polled; any thread before the first poll) poll until they are done;
  // on another thread they wait for the loop. Futures block as usual: never get() a task's
  // result on the loop's thread before polling it.
  std::size_t poll(time_point now, std::size_t limit = SIZE_MAX) {
    return core_->poll(detail::to_ns_saturated(now.time_since_epoch()), limit);
  }
  std::size_t poll() { return core_->poll(core_->now_ns(), SIZE_MAX); }  // due at the clock's now
  // The earliest deadline of a pending task, at its newest deadline if it was re-armed, tasks
  // waiting in a running poll's batch and every submission made before the call included;
  // nullopt if none is pending, or none will ever be due. It also arms the wake-up: until the
  // next poll() or next_deadline(), the first submission or re-arm on another thread whose
  // deadline is earlier than the one returned (any, after nullopt) makes wake_fd() readable and
  // calls Options::on_wake. A loop that sleeps until the deadline returned, or until wake_fd()
  // is readable, wakes in time (docs/poll-mode.md).
  std::optional<time_point> next_deadline() {
    std::int64_t d = core_->next_deadline();
    if (d == detail::kMaxNs) return std::nullopt;
    return time_point(std::chrono::duration_cast<typename time_point::duration>(Duration(d)));
  }
  // Poll mode: an eventfd owned by the scheduler (non-blocking, close-on-exec; never close it),
  // readable once a wake-up was signalled (see next_deadline()); next_deadline() reads it back
  // to 0. Put it in the loop's epoll/poll set or an Asio stream_descriptor.
  int wake_fd() const { return core_->wake_fd(); }

 private:
  void refuse_waiting_for_itself(const char* call) const {
    if (core_->would_wait_for_itself())
      throw std::logic_error(std::string("kairos: ") + call +
                             "() without a timeout from a task whose shard has no other thread (or from a "
                             "poll) would wait for itself for ever; use the timed form");
  }
  static ManualClock* manual(Clock& c) noexcept {
    if constexpr (std::is_same_v<Clock, ManualClock>) return &c;
    else { (void)c; return nullptr; }
  }
  const ManualClock* clock_ptr() const noexcept { return core_->manual_clock(); }

  template <class F>
  static void check_callable(const F& f) {
    if (detail::is_empty_callable(f)) throw std::invalid_argument("kairos: empty callable");
  }

  struct Deadline {
    std::int64_t ns;
    bool never;  // the delay reaches past the clock's range
  };
  template <class Rep, class Period>
  Deadline deadline_after(std::chrono::duration<Rep, Period> delay) const noexcept {
    return deadline_in(detail::to_ns_saturated(delay));
  }
  // The same for a delay in saturated nanoseconds.
  Deadline deadline_in(std::int64_t d) const noexcept {
    if (d < 0) d = 0;  // a negative delay means "as soon as possible" (Java normalises to 0)
    // Past the clock's range (or Duration::max()): never. Exactly at the end of a ManualClock's
    // time: due then. The "now" is the clock the leader tests deadlines against.
    const detail::DeadlineNs deadline = detail::deadline_after_ns(core_->now_ns(), d);
    return {deadline.ns, deadline.never};
  }
  // schedule()'s and execute_after()'s delay in saturated ns, turned into a deadline only once
  // the node is made (submit_node): only the delay lives across its allocation, and the clock
  // read, later in the call, still comes after the call's start.
  struct Delay {
    std::int64_t ns;
  };
  // Hands n (the caller's scheduler reference) to the engine at `deadline`.
  void submit_node(detail::TaskBase* n, Deadline deadline) { core_->submit(n, deadline.ns, deadline.never); }
  // ... `delay` from now: a far timer (Options::far_timer_slack) if the delay is long enough, its
  // deadline left to the shard's leader (no clock read here); otherwise deadline_in's.
  void submit_node(detail::TaskBase* n, Delay delay) {
    if (delay.ns >= core_->far_from_ns() && delay.ns < detail::kFarMaxDelayNs) {
      n->flags |= detail::kFarStamp;  // not yet published: no other thread sees n
      core_->submit(n, detail::far_deadline_unstamped(delay.ns), false);
      return;
    }
    submit_node(n, deadline_in(delay.ns));
  }
  // An absolute deadline on this scheduler's clock: its time point, saturated (never `never`).
  static Deadline deadline_at(time_point t) noexcept {
    return {detail::to_ns_saturated(t.time_since_epoch()), false};
  }

  // One reference, the scheduler's: no future (execute, execute_after, execute_at). `when`: a
  // Deadline or a Delay (submit_node).
  template <class F, class When>
  void post_one(F&& f, When when) {
    check_callable(f);
    submit_node(detail::make_node<false>(std::forward<F>(f), detail::kNoFuture, 1), when);
  }

  template <bool Rearmable = false, class F, class When>
  auto submit_one(F&& f, When when) {
    check_callable(f);
    // Two references: the scheduler's and the future's; published by the inbox enqueue (release).
    auto* n = detail::make_node<false, F, Rearmable>(std::forward<F>(f), 0, 2);
    using R = detail::call_result_t<std::decay_t<F>>;
    ScheduledFuture<R> fut(n, core_.get(), clock_ptr());
    submit_node(n, when);
    return fut;
  }

  template <class F, class R1, class P1, class R2, class P2>
  ScheduledFuture<void> submit_periodic(F&& f, std::chrono::duration<R1, P1> initial_delay,
                                        std::chrono::duration<R2, P2> period, std::uint8_t flags,
                                        const char* what) {
    check_callable(f);
    std::int64_t p = detail::to_ns_saturated(period);
    if (p <= 0) throw std::invalid_argument(std::string("kairos: periodic task needs a ") + what + " > 0");
    Deadline deadline = deadline_after(initial_delay);
    auto* n = detail::make_node<true>(std::forward<F>(f), flags, 2);
    n->period = p;
    ScheduledFuture<void> fut(n, core_.get(), clock_ptr());
    submit_node(n, deadline);
    return fut;
  }

  template <class Range>
  static constexpr bool kMoveElements = !std::is_lvalue_reference_v<Range>;

  template <class Range>
  auto submit_all(Range&& tasks) {
    using F = std::ranges::range_value_t<std::remove_cvref_t<Range>>;
    std::vector<ScheduledFuture<detail::call_result_t<F>>> futures;
    try {
      for (auto&& f : tasks) {
        if constexpr (kMoveElements<Range>) futures.push_back(submit(std::move(f)));
        else futures.push_back(submit(f));
      }
    } catch (...) {
      for (auto& f : futures) f.cancel(true);
      throw;
    }
    return futures;
  }

  template <class Range>
  auto any_of(Range&& tasks, std::int64_t until_ns) {
    using F = std::ranges::range_value_t<std::remove_cvref_t<Range>>;
    using R = detail::call_result_t<F>;
    auto st = std::make_shared<detail::AnyState<R>>();
    std::vector<ScheduledFuture<void>> futures;
    try {
      for (auto&& f : tasks) {
        if constexpr (kMoveElements<Range>) futures.push_back(submit(detail::AnyCall<F, R>(std::move(f), st)));
        else futures.push_back(submit(detail::AnyCall<F, R>(F(f), st)));
      }
    } catch (...) {
      for (auto& f : futures) f.cancel(true);
      throw;
    }
    if (futures.empty()) throw std::invalid_argument("kairos: invoke_any needs at least one task");
    std::unique_lock lk(st->mu);
    auto decided = [&] { return st->value.has_value() || st->failed == futures.size(); };
    bool in_time = true;
    if (until_ns < 0) {
      st->cv.wait(lk, decided);
    } else {
      // steady_clock is CLOCK_MONOTONIC, the clock of steady_now_ns().
      in_time = st->cv.wait_until(lk, std::chrono::steady_clock::time_point(std::chrono::nanoseconds(until_ns)), decided);
    }
    // Decided now: a task that completes after the timeout (the cancel below asks it to stop,
    // and it may still return normally) does not turn a timeout into a result.
    const bool have_value = st->value.has_value();
    lk.unlock();
    for (auto& f : futures) f.cancel(true);
    lk.lock();
    if (have_value) {
      if constexpr (std::is_void_v<R>) return;
      else return R(std::move(*st->value));
    }
    if (!in_time) throw TimeoutError("kairos: invoke_any timed out");
    std::rethrow_exception(st->last);
  }

  std::shared_ptr<detail::SchedulerCore> core_;
};

using Scheduler = BasicScheduler<SteadyClock>;

}  // namespace kairos
