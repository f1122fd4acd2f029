// engine.cpp: the scheduler as a whole: placement of submissions on shards, the rejection
// policies, the lifecycle (shutdown, shutdown_now, termination, the destructor) and what it
// reports. Per-shard behaviour is in shard.cpp; it depends on nothing here but EngineState.
//
// Shutdown racing a submission (edges RS1-RS2). shutdown()/shutdown_now() store run_state (RS1,
// seq_cst), then drain every inbox until it holds nothing they have not seen. A producer loads
// run_state (reject if shut down), takes its seq (IN1, seq_cst), enqueues, and loads run_state
// again (RS2, seq_cst). In the single seq_cst order either the drain's count read sees its seq
// (and waits for its item), or RS2 comes after RS1 and the producer sees the new state; then it
// makes sure the item is looked at: the shard's threads will drain it before they exit, or, if
// they are gone, the producer settles the inbox itself under the shard lock.
#include <poll.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <kairos/detail/scheduler_core.hpp>
#include <kairos/errors.hpp>
#include <kairos/task.hpp>

#include "engine_state.hpp"
#include "shard.hpp"
#include "threads.hpp"

namespace kairos::detail {
namespace {

class Engine final : public SchedulerCore, public ClockListener, public std::enable_shared_from_this<Engine> {
 public:
  Engine(const Options& o, ManualClock* clock) : SchedulerCore(clock), state_(o, clock) {
    shards_.reserve(o.shards);
    for (unsigned i = 0; i < o.shards; ++i) shards_.push_back(std::make_unique<Shard>(state_, i));
  }

  ~Engine() override {
    // close() ran (the scheduler's destructor) or the threads never started.
    if (manual_ && listening_) manual_->remove_listener(this);
  }

  // Starts every thread. If the OS refuses one, the threads already started are stopped and
  // joined before the error leaves: nothing keeps running that nobody can stop.
  void start() {
    if (manual_) {
      manual_->add_listener(this);
      listening_ = true;
    }
    const Options& o = state_.opt;
    if (o.poll_mode) {  // no threads: each shard counts its poller as its one thread
      for (auto& sh : shards_) sh->add_thread();
      live_pollers_.store(o.shards, std::memory_order_release);
      return;
    }
    unsigned index = 0;
    for (unsigned s = 0; s < o.shards; ++s) {
      for (unsigned n = 0; n < o.threads_per_shard; ++n, ++index) {
        int cpu = o.cpus.empty() ? -1 : o.cpus[index % o.cpus.size()];
        std::string name = o.name + "-" + std::to_string(s) + "-" + std::to_string(n);
        shards_[s]->add_thread();
        live_threads_.fetch_add(1, std::memory_order_acq_rel);
        try {
          threads_.emplace_back([self = shared_from_this(), s, n, cpu, name] { self->worker_main(s, n, cpu, name); });
        } catch (...) {
          live_threads_.fetch_sub(1, std::memory_order_acq_rel);
          shards_[s]->thread_not_started();
          close();  // stops and joins the threads that did start
          throw;
        }
        largest_ = threads_.size();
      }
    }
    if (o.on_thread_start) await_thread_starts();
  }

  // (TS1) Every thread ran Options::on_thread_start (a worker writes start_error_ and counts
  // itself under start_mu_; this reads both under it). If one threw, nothing serves: the
  // constructor fails with that exception, after the threads are stopped and joined.
  void await_thread_starts() {
    std::exception_ptr error;
    {
      std::unique_lock lk(start_mu_);
      start_cv_.wait(lk, [&] { return threads_started_ == threads_.size(); });
      error = start_error_;
    }
    if (error) {
      close();
      std::rethrow_exception(error);
    }
  }

  UncaughtHandler uncaught_handler() const noexcept override { return state_.on_uncaught; }

  void on_clock_advanced() noexcept override {
    for (auto& sh : shards_) sh->wake_leader();
  }

  // ---- submission -------------------------------------------------------------------------------
  void submit(TaskBase* t, std::int64_t deadline, bool never) override {
    // Options::on_wake runs inside this call and may destroy the scheduler: kept alive till the end.
    std::shared_ptr<Engine> keep = state_.opt.on_wake ? shared_from_this() : nullptr;
    t->deadline = deadline;  // not yet published: no other thread can see t
    unsigned idx = shard_index();
    Shard& sh = *shards_[idx];
    t->shard = static_cast<std::uint8_t>(idx);
    if (state_.run_state.load(std::memory_order_acquire) != RunState::kActive) return reject(t, sh, false);
    std::uint64_t seq;
    const std::size_t cap = state_.opt.capacity;
    if (cap == 0) {
      seq = sh.inbox().take_seq();  // (IN1)
    } else {
      // Counted by what is pending (Shard::try_admit), not by sequence numbers in flight: a
      // re-arm racing this submission takes a seq but no place. Unsigned: a capacity of 2^63 or
      // more (SIZE_MAX: "no limit") bounds nothing.
      while (!sh.try_admit(cap)) {
        if (!state_.opt.on_rejected && state_.opt.rejection == Rejection::discard_oldest && sh.make_room()) continue;
        return reject(t, sh, true);
      }
      seq = sh.inbox().take_seq();  // (IN1)
    }
    sh.publish(t, seq, never);
    if (state_.run_state.load(std::memory_order_seq_cst) != RunState::kActive) sh.after_racing_shutdown();  // (RS2)
  }

  // Applies the rejection policy to t (not enqueued; the caller's scheduler reference).
  void reject(TaskBase* t, Shard& sh, bool over_capacity) {
    sh.count_rejected();
    // The user code below (on_rejected, a caller_runs task, on_uncaught) may destroy the
    // scheduler (shut down on a fatal error): this engine, its options and its handlers stay
    // alive until this call is done with them.
    const std::shared_ptr<Engine> keep = shared_from_this();
    if (state_.opt.on_rejected) {
      // Options::on_rejected: the caller's thread gets the task as a Task (kOrphan: it may run
      // it once or drop it, as with shutdown_now's). Never published: no other thread sees t.
      transition(t, kPending, kOrphan);
      RejectionInfo why{!over_capacity, over_capacity ? state_.opt.capacity : 0, t->shard};
      state_.opt.on_rejected(Task(t, state_.on_uncaught), why);
      return;
    }
    Rejection r = state_.opt.rejection;
    if (r == Rejection::abort) {
      release(t);
      if (over_capacity)
        throw RejectedExecution("kairos: rejected, capacity " + std::to_string(state_.opt.capacity) + " reached");
      throw RejectedExecution("kairos: rejected, the scheduler is shut down");
    }
    if (r == Rejection::caller_runs && over_capacity) return run_in_caller(t, sh);
    // discard, or any policy after shutdown: the future completes as cancelled at once.
    if (transition(t, kPending, kCancelled)) t->ops->drop_callable(t);
    release(t);
  }

  // caller_runs over capacity: the task's (first) run happens here and now.
  void run_in_caller(TaskBase* t, Shard& sh) {
    if (std::stop_source* src = t->ops->stop_source(t)) *src = std::stop_source();  // before kRunning
    if (!transition(t, kPending, kRunning)) {
      release(t);
      return;
    }
    bool ok = t->ops->invoke(t);
    if (!t->periodic()) {
      if (ok) transition(t, kRunning, kNormal);
      else if (transition(t, kRunning, kExceptional) && (t->flags & kNoFuture))
        report_uncaught(*state_.on_uncaught, stored_error(t));
      release(t);
      return;
    }
    if (!ok) {
      if (transition(t, kRunning, kExceptional)) report_uncaught(*state_.on_uncaught, stored_error(t));
      t->ops->drop_callable(t);
      release(t);
      return;
    }
    auto* p = static_cast<PeriodicBase*>(t);
    std::int64_t next;
    bool never = __builtin_add_overflow(t->flags & kFixedDelay ? now_ns() : t->deadline, p->period, &next);
    if (!transition(t, kRunning, kPending)) {  // cancelled during its run
      t->ops->drop_callable(t);
      release(t);
      return;
    }
    // A periodic re-queue is never rejected: enqueue without the capacity check.
    std::atomic_ref<std::int64_t>(t->deadline).store(never ? kMaxNs : next, std::memory_order_relaxed);
    sh.admit_unchecked();
    sh.publish(t, sh.inbox().take_seq(), never);
    if (state_.run_state.load(std::memory_order_seq_cst) != RunState::kActive) sh.after_racing_shutdown();
  }

  void on_cancelled(TaskBase* t, bool queued) noexcept override { shards_[t->shard]->on_cancelled(t, queued); }
  void rearm_locked(TaskBase* t, std::int64_t deadline, bool never) noexcept override {
    std::shared_ptr<Engine> keep = state_.opt.on_wake ? shared_from_this() : nullptr;  // (submit)
    shards_[t->shard]->rearm_locked(t, deadline, never);
  }

  // ---- threads ------------------------------------------------------------------------------------
  void worker_main(unsigned s, unsigned index, int cpu, const std::string& name) {
    t_own_shard = {this, s};
    set_current_thread_name(name);
    set_timer_slack_1ns();
    if (cpu >= 0) pin_current_thread(cpu);
    if (state_.opt.on_thread_start) thread_start_hook(ThreadInfo{s, index, cpu, name});
    shards_[s]->run_worker(index);
    if (live_threads_.fetch_sub(1, std::memory_order_acq_rel) == 1) terminate();
  }

  // The last thread (or, in poll mode, the last shard's poller) has stopped serving:
  // Options::terminated runs here, once (one thread sees the count reach 0), outside every
  // kairos lock, before RunState::kTerminated releases await_termination().
  void terminate() noexcept {
    if (state_.opt.terminated) {
      try {
        state_.opt.terminated();
      } catch (...) {
        report_uncaught(*state_.on_uncaught, std::current_exception());
      }
    }
    std::lock_guard tl(term_mu_);
    state_.run_state.store(RunState::kTerminated, std::memory_order_seq_cst);
    term_cv_.notify_all();
  }

  // ---- poll mode ----------------------------------------------------------------------------------
  // The poll in progress on this thread, if any: on_own_thread() answers from it, and a task that
  // destroys its scheduler during a poll leaves the engine to `keep` (close()), released when that
  // poll returns — after its last touch of the engine.
  struct PollScope {
    Engine* engine;
    std::shared_ptr<Engine> keep;
    PollScope* outer;
    explicit PollScope(Engine* e) noexcept : engine(e), outer(t_poll) { t_poll = this; }
    ~PollScope() { t_poll = outer; }  // then `keep` goes, and with it perhaps the engine
    PollScope(const PollScope&) = delete;
    PollScope& operator=(const PollScope&) = delete;
  };
  static thread_local PollScope* t_poll;

  void require_poll_mode(const char* call) const {
    if (!state_.opt.poll_mode)
      throw std::logic_error(std::string("kairos: ") + call + "() needs Options::poll_mode (this scheduler runs its own threads)");
  }

  std::size_t poll(std::int64_t now, std::size_t limit) override {
    require_poll_mode("poll");
    const std::thread::id me = std::this_thread::get_id();
    if (loop_thread_.load(std::memory_order_relaxed) != me) loop_thread_.store(me, std::memory_order_relaxed);
    PollScope scope(this);
    std::size_t started = 0;
    for (auto& sh : shards_) {
      bool retired = false;
      started += sh->poll(now, limit - std::min(limit, started), retired);
      if (retired && live_pollers_.fetch_sub(1, std::memory_order_acq_rel) == 1) terminate();
    }
    return started;
  }

  // Each shard arms the loop's wake-up at its own earliest deadline (shard_poll.cpp), then all
  // come down to the earliest of them, the one the loop sleeps until. A wake signalled before
  // this call is read off the fd first: from here on, the fd speaks of this call's arm.
  std::int64_t next_deadline() override {
    require_poll_mode("next_deadline");
    state_.loop_wake->consume();
    std::int64_t d = kMaxNs;
    for (auto& sh : shards_) d = std::min(d, sh->earliest_deadline());
    if (shards_.size() > 1)
      for (auto& sh : shards_) sh->lower_wake(d);
    return d;
  }
  int wake_fd() const override {
    require_poll_mode("wake_fd");
    return state_.loop_wake->fd();
  }

  bool polled_here() const noexcept {
    for (PollScope* p = t_poll; p != nullptr; p = p->outer)
      if (p->engine == this) return true;
    return false;
  }

  // wait_idle / await_termination in poll mode, called from the loop's thread (the last one that
  // polled; any thread before the first poll): nobody else runs the tasks, so it polls until
  // `done` or `until` (steady ns), napping while nothing is due. From another thread they wait
  // for the loop instead, as they wait for scheduler threads: tasks never move off the loop.
  bool drives_the_loop() const noexcept {
    std::thread::id loop = loop_thread_.load(std::memory_order_relaxed);
    return loop == std::thread::id{} || loop == std::this_thread::get_id();
  }
  template <class Done>
  bool poll_until(Done done, std::int64_t until) {
    for (;;) {
      std::size_t ran = poll(now_ns(), SIZE_MAX);
      if (done()) return true;
      std::int64_t now = steady_now_ns();
      if (now >= until) return false;
      if (ran != 0) continue;
      if (manual_) {  // ManualClock::advance() wakes no fd: look again soon
        std::this_thread::sleep_for(std::chrono::nanoseconds(std::min<std::int64_t>(until - now, 200'000)));
        continue;
      }
      // Asleep until the next deadline or a wake-up: next_deadline() arms the wake fd, so an
      // earlier submission from another thread ends the sleep (and lifecycle calls do too).
      std::int64_t nap = std::min(until - now, std::max<std::int64_t>(0, next_deadline() - now));
      if (nap > 0) wait_readable(state_.loop_wake->fd(), nap);
    }
  }

  static void wait_readable(int fd, std::int64_t ns) noexcept {
    pollfd p{fd, POLLIN, 0};
    timespec ts{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
    (void)::ppoll(&p, 1, &ts, nullptr);  // EINTR: the caller looks again
  }

  void thread_start_hook(const ThreadInfo& info) noexcept {
    std::exception_ptr error;
    try {
      state_.opt.on_thread_start(info);
    } catch (...) {
      error = std::current_exception();
    }
    std::lock_guard lk(start_mu_);  // (TS1)
    if (error && !start_error_) start_error_ = error;
    ++threads_started_;
    start_cv_.notify_all();
  }

  // ---- lifecycle ------------------------------------------------------------------------------------
  void shutdown() override {
    RunState st = RunState::kActive;
    const bool first = state_.run_state.compare_exchange_strong(st, RunState::kShutdown, std::memory_order_seq_cst);  // (RS1)
    for (auto& sh : shards_) sh->apply_shutdown();
    if (first && state_.loop_wake) state_.loop_wake->signal();  // the loop polls to retire its shards
  }

  std::vector<TaskBase*> shutdown_now() override {
    RunState st = state_.run_state.load(std::memory_order_seq_cst);
    while (st < RunState::kShutdownNow && !state_.run_state.compare_exchange_weak(st, RunState::kShutdownNow, std::memory_order_seq_cst)) {  // (RS1)
    }
    if (st < RunState::kShutdownNow && state_.loop_wake) state_.loop_wake->signal();  // (first call only)
    // The result's room is made before anything is taken (a shard makes more if racing
    // submissions need it): std::bad_alloc leaves with the tasks still pending, for a later
    // call or the destructor; a shard's failure after others gave theirs cancels those
    // (dropped, as the destructor would) before it leaves. Either way nothing is lost.
    std::vector<TaskBase*> orphans;
    std::size_t estimate = 0;
    for (auto& sh : shards_) estimate += static_cast<std::size_t>(std::max<std::int64_t>(0, sh->pending()));
    orphans.reserve(estimate + 16);
    try {
      for (auto& sh : shards_) sh->take_pending(orphans);
    } catch (...) {
      for (TaskBase* t : orphans) drop_orphan(t);
      throw;
    }
    std::stable_sort(orphans.begin(), orphans.end(),
                     [](const TaskBase* a, const TaskBase* b) { return TimerHeap::before(a, b); });
    return orphans;
  }

  bool await_termination(std::int64_t timeout_ns) override {
    if (timeout_ns < 0) timeout_ns = 0;
    if (state_.opt.poll_mode) {
      // Inside a task of this scheduler's poll, its own batch never finishes while it waits.
      if (polled_here()) return is_terminated();
      if (drives_the_loop())
        return poll_until([&] { return is_terminated(); }, add_saturated(steady_now_ns(), timeout_ns));
    }
    std::unique_lock lk(term_mu_);
    auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(std::min<std::int64_t>(timeout_ns, kMaxNs / 2));
    return term_cv_.wait_until(lk, until, [&] { return state_.state() == RunState::kTerminated; });
  }
  bool is_shutdown() const noexcept override { return state_.run_state.load(std::memory_order_acquire) != RunState::kActive; }
  bool is_terminating() const noexcept override {
    RunState st = state_.run_state.load(std::memory_order_acquire);
    return st == RunState::kShutdown || st == RunState::kShutdownNow;
  }
  bool is_terminated() const noexcept override { return state_.run_state.load(std::memory_order_acquire) == RunState::kTerminated; }

  void set_remove_on_cancel(bool v) override { state_.remove_on_cancel.store(v, std::memory_order_release); }
  void set_execute_existing_delayed_tasks_after_shutdown(bool v) override {
    state_.exec_delayed.store(v, std::memory_order_release);
    if (!v && is_shutdown()) reapply_policies();
  }
  void set_continue_existing_periodic_tasks_after_shutdown(bool v) override {
    state_.continue_periodic.store(v, std::memory_order_release);
    if (!v && is_shutdown()) reapply_policies();
  }
  void reapply_policies() {
    for (auto& sh : shards_) sh->apply_shutdown();
  }

  std::size_t queue_size() const noexcept override {
    std::int64_t total = 0;
    for (auto& sh : shards_) total += std::max<std::int64_t>(0, sh->pending());
    return static_cast<std::size_t>(total);
  }

  bool wait_idle(std::int64_t timeout_ns) override {
    std::int64_t until = add_saturated(steady_now_ns(), std::max<std::int64_t>(timeout_ns, 0));
    // What must have been applied: every submission and remove request made before this call.
    std::vector<std::uint64_t> subs, removes;
    for (auto& sh : shards_) {
      subs.push_back(sh->inbox().submitted());
      removes.push_back(sh->inbox().removes_sent());
    }
    auto is_idle = [&] {
      bool idle = true;
      std::int64_t now = now_ns();
      for (std::size_t i = 0; i < shards_.size() && idle; ++i) idle = shards_[i]->idle(subs[i], removes[i], now);
      return idle;
    };
    if (state_.opt.poll_mode && polled_here()) return false;
    if (state_.opt.poll_mode && drives_the_loop()) return poll_until(is_idle, until);
    for (int round = 0;; ++round) {
      if (is_idle()) return true;
      if (steady_now_ns() >= until) return false;
      if (round < 100) std::this_thread::yield();
      else std::this_thread::sleep_for(std::chrono::microseconds(round < 1000 ? 20 : 200));
    }
  }

  PoolCounts pool_counts() const override {
    PoolCounts c;
    for (auto& sh : shards_) {
      c.active += sh->active();
      c.completed += sh->completed();
    }
    c.pool = live_threads_.load(std::memory_order_acquire);
    c.largest = largest_;
    return c;
  }
  std::size_t purge() override {
    std::size_t n = 0;
    for (auto& sh : shards_) n += sh->purge();
    return n;
  }
  // threads_ is written only while the constructor runs (start()).
  bool on_own_thread() const noexcept override {
    if (state_.opt.poll_mode) return polled_here();
    std::thread::id me = std::this_thread::get_id();
    for (const std::thread& th : threads_)
      if (th.get_id() == me) return true;
    return false;
  }

  bool would_wait_for_itself() const noexcept override {
    if (state_.opt.poll_mode) return polled_here();  // the poll is every shard's one runner
    return t_own_shard.engine == this && state_.opt.threads_per_shard == 1 && shard_index() == t_own_shard.index;
  }

  SchedulerStats stats() const override {
    SchedulerStats out;
    for (auto& sh : shards_) out.shards.push_back(sh->stats());
    return out;
  }

  void close() noexcept override {
    std::vector<TaskBase*> orphans;
    try {
      orphans = shutdown_now();
    } catch (const std::bad_alloc&) {
      // No memory for the list: each shard cancels its tasks in place instead, and its exit
      // (settle_after_exit) drops them without building any list.
      for (auto& sh : shards_) sh->cancel_pending_in_place();
    }
    for (TaskBase* t : orphans) drop_orphan(t);
    std::thread::id me = std::this_thread::get_id();
    for (std::thread& th : threads_) {
      if (!th.joinable()) continue;
      if (th.get_id() == me) th.detach();  // destroyed from inside one of its own tasks
      else th.join();
    }
    if (manual_ && listening_) {
      manual_->remove_listener(this);
      listening_ = false;
    }
    if (state_.opt.poll_mode) {
      // Retire the pollers now (a poll after shutdown_now() only settles). Inside a task of
      // this scheduler's own poll, that poll retires its shard when the task returns, and keeps
      // the engine alive until then.
      for (PollScope* p = t_poll; p != nullptr; p = p->outer)
        if (p->engine == this && !p->keep) {
          p->keep = shared_from_this();
          break;
        }
      poll(now_ns(), 0);
    }
    // Threads other than the caller are gone; the shards keep what raced the end.
    for (auto& sh : shards_) sh->settle_if_dead();
  }

 private:
  static thread_local unsigned t_shard_slot;
  struct OwnShard {
    const Engine* engine = nullptr;  // a worker thread's scheduler and shard (worker_main)
    unsigned index = 0;
  };
  static thread_local OwnShard t_own_shard;

  // A thread's tasks all go to one shard: the k-th thread to submit gets shard k % shards.
  unsigned shard_index() const noexcept {
    if (shards_.size() == 1) return 0;
    if (t_shard_slot == ~0u) t_shard_slot = g_next_slot.fetch_add(1, std::memory_order_relaxed);
    return t_shard_slot % static_cast<unsigned>(shards_.size());
  }
  static inline std::atomic<unsigned> g_next_slot{0};

  EngineState state_;
  std::vector<std::unique_ptr<Shard>> shards_;
  std::vector<std::thread> threads_;
  std::atomic<unsigned> live_threads_{0};
  std::atomic<unsigned> live_pollers_{0};  // poll mode: shards whose poller has not retired
  std::atomic<std::thread::id> loop_thread_{};  // poll mode: the last thread that polled (relaxed:
                                                // only picks who drives a wait, never guards data)
  std::size_t largest_ = 0;  // threads started (the pool never grows later); set by start()
  std::mutex start_mu_;      // (TS1): on_thread_start's outcome
  std::condition_variable start_cv_;
  std::size_t threads_started_ = 0;
  std::exception_ptr start_error_;
  std::mutex term_mu_;
  std::condition_variable term_cv_;
  bool listening_ = false;
};

thread_local unsigned Engine::t_shard_slot = ~0u;
thread_local Engine::OwnShard Engine::t_own_shard{};
thread_local Engine::PollScope* Engine::t_poll = nullptr;

void validate(const Options& o) {
  if (o.shards == 0 || o.shards > 64)
    throw std::invalid_argument("kairos: shards must be in [1, 64], got " + std::to_string(o.shards));
  if (o.threads_per_shard == 0 || o.threads_per_shard > 256)
    throw std::invalid_argument("kairos: threads_per_shard must be in [1, 256], got " +
                                std::to_string(o.threads_per_shard));
  if (o.poll_mode && (o.threads_per_shard != 1 || !o.cpus.empty() || o.on_thread_start))
    throw std::invalid_argument(
        "kairos: poll_mode runs no scheduler threads: threads_per_shard must be 1, cpus and on_thread_start empty");
  unsigned hw = std::thread::hardware_concurrency();
  for (int cpu : o.cpus)
    if (cpu < 0 || (hw != 0 && static_cast<unsigned>(cpu) >= hw))
      throw std::invalid_argument("kairos: CPU id " + std::to_string(cpu) + " is not in [0, " +
                                  std::to_string(hw) + ")");
}

}  // namespace

std::shared_ptr<SchedulerCore> SchedulerCore::create(const Options& options, ManualClock* clock) {
  validate(options);
  auto core = std::make_shared<Engine>(options, clock);
  core->start();
  return core;
}

}  // namespace kairos::detail
