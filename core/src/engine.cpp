// engine.cpp: the scheduler as a whole (engine.hpp): placement of submissions on shards, the
// rejection policies, the threads, the lifecycle (shutdown, shutdown_now, termination, the
// destructor) and what it reports. Poll mode's half is in engine_poll.cpp.
//
// Shutdown racing a submission (edges RS1-RS2). shutdown()/shutdown_now() store run_state (RS1,
// seq_cst); from then on every count read of an inbox (IN5: the lifecycle's drains, a thread's
// must_exit, a poll) waits for the item of each seq it sees. A producer loads run_state (RS3: a
// fast refusal), takes its seq (IN1, seq_cst) and loads run_state again (RS2, seq_cst) before it
// enqueues. In the single seq_cst order, if RS2 reads kActive it precedes RS1, so IN1 does too,
// and every count read after RS1 sees the seq: the task is accepted, and no thread can exit (no
// shutdown_now() can return) before its item is taken in; the shutdown policies then apply to it
// as to any pending task. If RS2 reads a shutdown, the producer gives the seq back (IN4) and the
// rejection policy applies: the task is rejected, never enqueued. So a submission is accepted
// (then it runs, is cancelled by a policy or returned by shutdown_now()) or rejected, whatever
// the timing: never accepted and then dropped because the threads had gone meanwhile (what a
// check after the enqueue allowed: a producer preempted between its first check and its seq,
// or admitted under Options::capacity there, while shutdown() ran to termination).
// A periodic task's next run queued by a caller_runs caller is not a submission: it checks after
// its enqueue (RS5), and is cancelled if the threads are gone (after_racing_shutdown).
//
// Edges (each names its partner):
//   (RS1) shutdown / shutdown_now: run_state CAS seq_cst -> pairs with (RS2), (RS5) and the
//         drain's count read (IN5): the Dekker pair above.
//   (RS2) submit, submit_counted: run_state load seq_cst after the seq (IN1), before the enqueue
//         -> pairs with (RS1).
//   (RS5) run_in_caller's re-queue: run_state load seq_cst after the enqueue -> pairs with (RS1).
//   (RS3) loads of run_state that need an acquire: submit's fast refusal, is_shutdown,
//         is_terminating, is_terminated (acquire) and EngineState::state (seq_cst: stronger, no
//         dearer; engine_state.hpp) -> see what RS1 or RS4 published.
//   (RS4) terminate: run_state store seq_cst under term_mu_ -> await_termination's wait reads it.
//   (LC2) start: live_pollers_ store release -> pairs with the pollers' retirement (LC1,
//         engine_poll.cpp).
//   (LC3) live_threads_ RMWs acq_rel: the thread that takes the count to zero sees every other
//         thread's exit before terminate() runs; pool_counts reads it (acquire).
//   (PO1) the policy setters' release stores -> pair with the shards' acquire loads (PO2).
//   (TS1) await_thread_starts / thread_start_hook: start_error_ and threads_started_ under
//         start_mu_ (a mutex edge).
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

#include "completion.hpp"
#include "engine.hpp"
#include "engine_state.hpp"
#include "shard.hpp"
#include "threads.hpp"

namespace kairos::detail {

Engine::Engine(const Options& o, ManualClock* clock) : SchedulerCore(clock), state_(o, clock) {
  // Far timers (Options::far_timer_slack): delays of 1000 slacks or more, where a leader thread
  // reads the steady clock (not in poll mode, whose loop may not come back for a while, nor on
  // a ManualClock, whose tests read deadlines against the time of the call).
  if (!o.poll_mode && clock == nullptr && o.far_timer_slack.count() > 0)
    far_from_ns_ = o.far_timer_slack.count() > kMaxNs / 1000 ? kMaxNs : o.far_timer_slack.count() * 1000;
  shards_.reserve(o.shards);
  for (unsigned i = 0; i < o.shards; ++i) shards_.push_back(std::make_unique<Shard>(state_, i));
  if (shards_.size() == 1) only_shard_ = shards_.front().get();
}

Engine::~Engine() {
  // close() ran (the scheduler's destructor) or the threads never started.
  if (manual_ && listening_) manual_->remove_listener(this);
}

// Starts every thread. If the OS refuses one, the threads already started are stopped and
// joined before the error leaves: nothing keeps running that nobody can stop.
void Engine::start() {
  if (manual_) {
    manual_->add_listener(this);
    listening_ = true;
  }
  const Options& o = state_.opt;
  if (o.poll_mode) {  // no threads: each shard counts its poller as its one thread
    for (auto& sh : shards_) sh->add_thread();
    live_pollers_.store(o.shards, std::memory_order_release);  // (LC2) before any poll: pairs with LC1
    return;
  }
  unsigned index = 0;
  for (unsigned s = 0; s < o.shards; ++s) {
    for (unsigned n = 0; n < o.threads_per_shard; ++n, ++index) {
      int cpu = o.cpus.empty() ? -1 : o.cpus[index % o.cpus.size()];
      std::string name = o.name + "-" + std::to_string(s) + "-" + std::to_string(n);
      shards_[s]->add_thread();
      live_threads_.fetch_add(1, std::memory_order_acq_rel);  // (LC3) counted before it starts
      try {
        threads_.emplace_back([self = shared_from_this(), s, n, cpu, name] { self->worker_main(s, n, cpu, name); });
      } catch (...) {
        live_threads_.fetch_sub(1, std::memory_order_acq_rel);  // (LC3) it never started
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
void Engine::await_thread_starts() {
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

Engine::UncaughtHandler Engine::uncaught_handler() const noexcept { return state_.on_uncaught; }

void Engine::on_clock_advanced() noexcept {
  for (auto& sh : shards_) sh->wake_leader();
}

// Flattened: moodycamel's enqueue (and the token lookup) inline here, not a call with its own
// register saves (about 24 instructions less per submission: docs/design.md, the path budget);
// its slow paths (a new block) come along as branches not taken. The cold calls (a refusal, a
// capacity, a racing shutdown, no memory) stay calls: they are noinline.
[[gnu::flatten]] void Engine::submit(TaskBase* t, std::int64_t deadline, bool never) {
  t->deadline = deadline;  // not yet published: no other thread can see t
  const unsigned idx = shard_index();
  Shard& sh = only_shard_ != nullptr ? *only_shard_ : *shards_[idx];
  t->shard = static_cast<std::uint8_t>(idx);
  // (RS3) acquire: a fast refusal after shutdown; the race is settled by RS2 below.
  if (state_.run_state.load(std::memory_order_acquire) != RunState::kActive) return reject(t, sh, false);
  if (state_.opt.capacity != 0) return submit_counted(t, sh, never);
  const std::uint64_t seq = sh.take_seq();  // (IN1)
  // (RS2) seq_cst, after the seq, before the enqueue: accepted or rejected (above).
  if (state_.run_state.load(std::memory_order_seq_cst) != RunState::kActive) [[unlikely]] return reject_after_seq(t, sh);
  if (sh.publish(t, seq, never)) run_wake_callback();
}

// submit() under Options::capacity: admitted first (Shard::try_admit), counted by what is
// pending, not by sequence numbers in flight (a re-arm racing this submission takes a seq but no
// place). Unsigned: a capacity of 2^63 or more (SIZE_MAX: "no limit") bounds nothing.
[[gnu::noinline]] void Engine::submit_counted(TaskBase* t, Shard& sh, bool never) {
  // discard_oldest's make_room() releases its victim's callable: user code that may destroy the
  // scheduler, which is then kept alive until this call is done with it (empty otherwise: free).
  std::shared_ptr<Engine> keep;
  while (!sh.try_admit(state_.opt.capacity)) {
    if (!state_.opt.on_rejected && state_.opt.rejection == Rejection::discard_oldest) {
      if (!keep) keep = shared_from_this();
      if (sh.make_room()) continue;
    }
    return reject(t, sh, true);
  }
  // submit()'s tail, written again here so that it runs inside keep's life (the victim's
  // callable may have destroyed the scheduler) while submit() itself holds no shared_ptr.
  const std::uint64_t seq = sh.take_seq();  // (IN1)
  // (RS2) seq_cst, after the seq, before the enqueue: accepted or rejected (above).
  if (state_.run_state.load(std::memory_order_seq_cst) != RunState::kActive) [[unlikely]] return reject_after_seq(t, sh);
  t->flags |= kCountsCancel;  // its admission counted it: so must its cancel (shard_cancel.cpp)
  if (sh.publish(t, seq, never)) run_wake_callback();
}

// A submission whose RS2 saw the shutdown: its seq (and place) given back, then rejected as any
// submission after shutdown (the rejection policy: nothing of kairos is held while it runs).
[[gnu::noinline]] void Engine::reject_after_seq(TaskBase* t, Shard& sh) {
  sh.give_back_seq();
  reject(t, sh, false);
}

// The wake callback. Options::on_wake is user code: it runs last in the public call that woke
// the loop (submit, a re-arm, shutdown, shutdown_now), with nothing of kairos held — no shard
// lock, no task held in kRearming, no sequence number outstanding — and this engine kept alive
// across it, so that it may call anything, destroy the scheduler included. The caller is inside
// a call on a live scheduler (a re-arm: holds the task, so the scheduler is alive; it keeps the
// engine through rearm_locked's result).
void Engine::run_wake_callback() noexcept {
  const std::shared_ptr<Engine> keep = shared_from_this();
  state_.loop_wake->run_callback();
}

// Applies the rejection policy to t (not enqueued; the caller's scheduler reference).
[[gnu::noinline]] void Engine::reject(TaskBase* t, Shard& sh, bool over_capacity) {
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
  (void)complete(t, kPending, kCancelled);
  release(t);
}

// caller_runs over capacity: the task's (first) run happens here and now, ended by run_once
// (completion.hpp) as on a scheduler thread; a periodic task's next run is queued on its shard.
void Engine::run_in_caller(TaskBase* t, Shard& sh) {
  if (!start_outside(t, kPending)) {
    release(t);
    return;
  }
  const RunContext cx{state_.on_uncaught.get(), nullptr};
  if (!run_once(t, [t] { return t->ops->invoke(t); }, true, [this] { return now_ns(); }, cx).again) {
    release(t);
    return;
  }
  if (!transition(t, kRunning, kPending)) {  // cancelled during its run: the callable is ours
    drop_callable(t);
    release(t);
    return;
  }
  // A periodic re-queue is never rejected: enqueue without the capacity check.
  sh.admit_unchecked();
  const bool callback_owed = sh.publish(t, sh.take_seq(), t->never != 0);
  if (state_.run_state.load(std::memory_order_seq_cst) != RunState::kActive) sh.after_racing_shutdown();  // (RS5)
  if (callback_owed) run_wake_callback();
}

void Engine::on_cancelled(TaskBase* t, bool queued) noexcept { shards_[t->shard]->on_cancelled(t, queued); }

// t is held in kRearming, so this engine is alive here; the caller runs the callback after it
// lets go of t, through the reference returned (run_wake_callback).
std::shared_ptr<SchedulerCore> Engine::rearm_locked(TaskBase* t, std::int64_t deadline, bool never) noexcept {
  if (!shards_[t->shard]->rearm_locked(t, deadline, never)) return nullptr;
  return shared_from_this();
}

void Engine::worker_main(unsigned s, unsigned index, int cpu, const std::string& name) {
  t_own_shard = {this, s};
  set_current_thread_name(name);
  set_timer_slack_1ns();
  if (cpu >= 0) pin_current_thread(cpu);
  if (state_.opt.on_thread_start) thread_start_hook(ThreadInfo{s, index, cpu, name});
  shards_[s]->run_worker(index);
  if (live_threads_.fetch_sub(1, std::memory_order_acq_rel) == 1) terminate();  // (LC3) the last one
}

// The last thread (or, in poll mode, the last shard's poller) has stopped serving:
// Options::terminated runs here, once (one thread sees the count reach 0), outside every
// kairos lock, before RunState::kTerminated releases await_termination().
void Engine::terminate() noexcept {
  if (state_.opt.terminated) {
    try {
      state_.opt.terminated();
    } catch (...) {
      report_uncaught(*state_.on_uncaught, std::current_exception());
    }
  }
  std::lock_guard tl(term_mu_);
  state_.run_state.store(RunState::kTerminated, std::memory_order_seq_cst);  // (RS4) pairs with RS3's loads
  term_cv_.notify_all();
}

void Engine::thread_start_hook(const ThreadInfo& info) noexcept {
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

// Poll mode: the loop is woken after the shards are done with it (the policies applied, the tasks
// taken), so that the next_deadline() that reads the wake back sees them: it reports a shard
// that must retire as due at once (Shard::earliest_deadline). Then the callback, last.
void Engine::shutdown() {
  // The policies drop tasks (their captures' destructors and resumed sleeps run here) and the
  // wake runs Options::on_wake: user code that may destroy the scheduler. Kept alive to the end.
  const std::shared_ptr<Engine> keep = shared_from_this();
  RunState st = RunState::kActive;
  const bool first = state_.run_state.compare_exchange_strong(st, RunState::kShutdown, std::memory_order_seq_cst);  // (RS1)
  for (auto& sh : shards_) sh->apply_shutdown();
  if (first && state_.loop_wake) state_.loop_wake->signal();  // the loop polls to retire its shards
}

std::vector<TaskBase*> Engine::shutdown_now() {
  const std::shared_ptr<Engine> keep = shared_from_this();  // as shutdown(): Options::on_wake
  RunState st = state_.run_state.load(std::memory_order_seq_cst);  // (RS1) its CAS below
  while (st < RunState::kShutdownNow && !state_.run_state.compare_exchange_weak(st, RunState::kShutdownNow, std::memory_order_seq_cst)) {  // (RS1)
  }
  // The first call wakes the loop once the tasks are taken, also when taking them throws.
  struct WakeTheLoop {
    LoopWake* wake;
    ~WakeTheLoop() {
      if (wake) wake->signal();
    }
  } wake_the_loop{st < RunState::kShutdownNow ? state_.loop_wake.get() : nullptr};
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
                   [](const TaskBase* a, const TaskBase* b) { return filed_before(a, b); });
  return orphans;
}

bool Engine::await_termination(std::int64_t timeout_ns) {
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

// (RS3) acquire loads of run_state (here and in the two below): see what shutdown (RS1) or
// termination (RS4) published.
bool Engine::is_shutdown() const noexcept { return state_.run_state.load(std::memory_order_acquire) != RunState::kActive; }

bool Engine::is_terminating() const noexcept {
  RunState st = state_.run_state.load(std::memory_order_acquire);
  return st == RunState::kShutdown || st == RunState::kShutdownNow;
}

bool Engine::is_terminated() const noexcept { return state_.run_state.load(std::memory_order_acquire) == RunState::kTerminated; }

// (PO1) the policy setters' release stores: pair with the shards' acquire loads (PO2).
// Cancels made before this call that the shards have not met yet are taken in first, under the
// policy they were made under (a one-CAS cancel's policy is applied where it is met: Shard::take_in).
void Engine::set_remove_on_cancel(bool v) {
  for (auto& sh : shards_) sh->take_in_arrived();
  state_.remove_on_cancel.store(v, std::memory_order_release);  // (PO1)
}

void Engine::set_execute_existing_delayed_tasks_after_shutdown(bool v) {
  state_.exec_delayed.store(v, std::memory_order_release);
  if (!v && is_shutdown()) reapply_policies();
}

void Engine::set_continue_existing_periodic_tasks_after_shutdown(bool v) {
  state_.continue_periodic.store(v, std::memory_order_release);
  if (!v && is_shutdown()) reapply_policies();
}

void Engine::reapply_policies() {
  const std::shared_ptr<Engine> keep = shared_from_this();  // as shutdown(): dropped tasks' captures
  for (auto& sh : shards_) sh->apply_shutdown();
}

std::size_t Engine::queue_size() const noexcept {
  std::int64_t total = 0;
  for (auto& sh : shards_) {
    sh->take_in_arrived();  // a cancel made before this call is counted (shard_cancel.cpp)
    total += std::max<std::int64_t>(0, sh->pending());
  }
  return static_cast<std::size_t>(total);
}

bool Engine::wait_idle(std::int64_t timeout_ns) {
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

Engine::PoolCounts Engine::pool_counts() const {
  PoolCounts c;
  for (auto& sh : shards_) {
    c.active += sh->active();
    c.completed += sh->completed();
  }
  c.pool = live_threads_.load(std::memory_order_acquire);  // (LC3)
  c.largest = largest_;
  return c;
}

std::size_t Engine::purge() {
  const std::shared_ptr<Engine> keep = shared_from_this();  // as shutdown(): purged tasks' captures
  std::size_t n = 0;
  for (auto& sh : shards_) n += sh->purge();
  return n;
}

// threads_ is written only while the constructor runs (start()).
bool Engine::on_own_thread() const noexcept {
  if (state_.opt.poll_mode) return polled_here();
  std::thread::id me = std::this_thread::get_id();
  for (const std::thread& th : threads_)
    if (th.get_id() == me) return true;
  return false;
}

bool Engine::would_wait_for_itself() const noexcept {
  if (state_.opt.poll_mode) return polled_here();  // the poll is every shard's one runner
  return t_own_shard.engine == this && state_.opt.threads_per_shard == 1 && shard_index() == t_own_shard.index;
}

SchedulerStats Engine::stats() const {
  SchedulerStats out;
  for (auto& sh : shards_) {
    sh->take_in_arrived();  // a cancel made before this call is counted (shard_cancel.cpp)
    out.shards.push_back(sh->stats());
  }
  return out;
}

void Engine::close() noexcept {
  std::vector<TaskBase*> orphans;
  try {
    orphans = shutdown_now();
  } catch (const std::bad_alloc&) {
    // No memory for the list: each shard cancels its tasks in place instead, and its exit
    // (cancel_leftovers) drops them without building any list.
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
    // Retire the pollers now (a poll after shutdown_now() only retires). Inside a task of
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
  for (auto& sh : shards_) sh->cancel_leftovers_if_dead();
  // The scheduler's destructor returns next: a ManualClock is the user's again, to destroy at
  // once, while a thread detached above (or an outer poll) may still read the time (MC1).
  state_.release_clock();
}
thread_local unsigned Engine::t_shard_slot = ~0u;
thread_local Engine::OwnShard Engine::t_own_shard{};

namespace {

void validate(const Options& o) {
  if (o.shards == 0 || o.shards > 64)
    throw std::invalid_argument("kairos: shards must be in [1, 64], got " + std::to_string(o.shards));
  if (o.threads_per_shard == 0 || o.threads_per_shard > 256)
    throw std::invalid_argument("kairos: threads_per_shard must be in [1, 256], got " +
                                std::to_string(o.threads_per_shard));
  if (o.poll_mode && (o.threads_per_shard != 1 || !o.cpus.empty() || o.on_thread_start))
    throw std::invalid_argument(
        "kairos: poll_mode runs no scheduler threads: threads_per_shard must be 1, cpus and on_thread_start empty");
  if (o.far_timer_slack.count() < 0)
    throw std::invalid_argument("kairos: far_timer_slack must not be negative, got " +
                                std::to_string(o.far_timer_slack.count()) + " ns");
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
