// scheduler_core.cpp: the kairos engine. See kairos/scheduler.hpp for what users are promised.
//
// Shape. A scheduler is `shards` independent shards. A shard owns
//   - an MPSC inbox (moodycamel::ConcurrentQueue<TaskBase*>): producers enqueue new tasks and
//     remove requests (the pointer with its low bit set) without a lock;
//   - an indexed 4-ary heap (timer_heap.hpp) of its pending tasks, guarded by the shard lock `mu`;
//   - threads_per_shard threads working as leader/followers: one leader drains the inbox, waits
//     for the head's deadline, takes the due task(s), hands leadership to a follower and runs
//     them; followers wait untimed on `followers_cv`. With one thread the leader runs due tasks
//     itself, in batches, without giving up the lock between tasks of a batch.
// Producers never take `mu`: it is taken by the shard's threads, by shutdown/shutdown_now/
// policy setters/wait_idle/stats, and by the rare rejection paths (discard_oldest, a submission
// racing shutdown).
//
// Counting (queue_size, capacity). Per shard, all monotone: next_seq (sequence numbers handed
// out), abandoned (taken but never enqueued), removes_requested (pending tasks cancelled under
// remove-on-cancel: they leave the count when cancel() returns), out (tasks that left the shard
// otherwise: started, dropped, cancelled by a policy; minus periodic re-queues).
// pending = next_seq - abandoned - removes_requested - out.
//
// FIFO across producers. The seq is a fetch_add on next_seq, so a submission that returned
// before another started has the smaller seq. moodycamel gives no order between producers, and
// one pass over its sub-queues can miss A's item yet see B's (A happens-before B). But once B was
// seen, any later complete pass sees A. So drained items wait in `unconfirmed` until a complete
// pass (try_dequeue_bulk returning less than asked) has started after they were seen; only then
// do they enter the heap and may fire.
//
// Sleeping without a lost wake-up. The leader reads wake_word (w), publishes the deadline it
// will sleep for in `armed` (seq_cst), re-checks next_seq and the clock, then futex-waits on
// wake_word == w. A producer does next_seq.fetch_add (seq_cst), enqueues, then loads `armed`
// (seq_cst). In the single order of seq_cst operations either the leader's next_seq load sees the
// producer's increment (it does not sleep), or the producer's `armed` load sees the leader's
// store; then a producer whose deadline is earlier wins the CAS armed -> kAwake and bumps
// wake_word (the futex returns at once, or is woken). Only that winner makes a system call.
//
// Shutdown racing a submission. shutdown()/shutdown_now() store run_state (seq_cst), then drain
// every inbox until drained == next_seq - abandoned. A producer loads run_state (reject if shut
// down), fetch_adds next_seq, enqueues, and loads run_state again (seq_cst). Either the drain
// sees its seq (and waits for its item), or the producer sees the new state and applies the
// policies to its own task, under the shard lock if the shard's threads may already be gone.
//
// Cancel and lifetime. A cancel of a pending task CASes kPending -> kCancelled|kPin: while the
// pin is set the task is still attached, so the scheduler is alive, and the canceller may post
// its remove request. Whoever detaches a cancelled task (drops it, or destroys the scheduler)
// first waits for the pin to clear (wait_unpinned), so the canceller never touches a dead shard.
#include <pthread.h>
#include <sched.h>

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

#include <concurrentqueue.h>

#include <kairos/detail/scheduler_core.hpp>
#include <kairos/errors.hpp>

#include "threads.hpp"
#include "timer_queue.hpp"

namespace kairos::detail {
namespace {

inline constexpr std::int64_t kAwake = kMinNs;          // `armed` while the leader is not asleep
inline constexpr std::uint32_t kRemoved = 1u << 7;      // cancelled under remove-on-cancel
inline constexpr std::uintptr_t kRemoveTag = 1;         // inbox item: a remove request
inline constexpr std::size_t kDrainChunk = 256;
inline constexpr std::uint64_t kDrainEvery = 1024;     // power of two
inline constexpr std::size_t kMaxBatch = 64;            // due tasks one leader takes at once
inline constexpr std::size_t kCacheLine = 64;

// A task is due once the clock reaches its deadline, unless its deadline lies past the clock's
// range (kNever: hours::max(), a saturated period), even on a ManualClock advanced to its end.
inline bool is_due(const TaskBase* t, std::int64_t now) noexcept {
  return t->deadline <= now && !(t->flags & kNever);
}

enum RunState : int { kRunningState = 0, kShutdown = 1, kStop = 2, kTerminated = 3 };

void wait_unpinned(TaskBase* t) noexcept {
  // The pin is held for a few hundred instructions (an enqueue); spin, then yield.
  for (int i = 0; t->state.load(std::memory_order_acquire) & kPin; ++i) {
    if (i < 1000) cpu_relax();
    else std::this_thread::yield();
  }
}

void report_uncaught(const std::function<void(std::exception_ptr)>& handler, std::exception_ptr e) noexcept {
  if (handler) {
    try {
      handler(e);
    } catch (...) {
      // on_uncaught threw: dropped, as documented.
    }
    return;
  }
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& ex) {
    std::fprintf(stderr, "kairos: uncaught exception in a task: %s\n", ex.what());
  } catch (...) {
    std::fprintf(stderr, "kairos: uncaught exception of a non-std type in a task\n");
  }
}

struct alignas(kCacheLine) Shard {
  // -- written by producers --------------------------------------------------------------------
  alignas(kCacheLine) std::atomic<std::uint64_t> next_seq{0};
  std::atomic<std::uint64_t> abandoned{0};
  alignas(kCacheLine) std::atomic<std::uint64_t> removes_requested{0};  // by remove-on-cancel
  std::atomic<std::uint64_t> removes_lost{0};       // requests whose enqueue failed (no memory)
  std::atomic<std::uint64_t> rejected{0};
  alignas(kCacheLine) moodycamel::ConcurrentQueue<TaskBase*> inbox{1024};
  // -- the leader's wait; producers read `armed` and bump wake_word --------------------------
  alignas(kCacheLine) std::atomic<std::int64_t> armed{kAwake};
  std::atomic<std::uint32_t> wake_word{0};
  std::atomic<bool> sleeping{false};
  // -- guarded by mu (atomics where other threads read them without mu) ----------------------
  alignas(kCacheLine) std::mutex mu;
  std::condition_variable followers_cv;
  TimerQueue heap;                             // pending tasks (heap + due FIFO)
  std::vector<TaskBase*> unconfirmed;
  std::vector<TaskBase*> running_stoppable;   // executions shutdown_now must ask to stop
  // Per worker: due tasks it popped and has not started yet (still kPending, so a cancel or
  // shutdown_now() can take them); nullptr where shutdown_now() took one.
  std::vector<std::vector<TaskBase*>> staged;
  // Written under mu; atomic because the leader reads them while it waits without mu (a stale
  // value only makes it look once more).
  std::atomic<std::uint64_t> drained{0};       // submissions taken out of the inbox
  std::atomic<std::uint64_t> removes_done{0};
  bool has_leader = false;
  bool stop_done = false;                      // shutdown_now() has taken this shard's tasks
  unsigned running = 0;                        // tasks popped and not yet finished
  unsigned threads_alive = 0;
  std::atomic<std::int64_t> out{0};            // see "Counting"
  std::atomic<std::uint64_t> ran{0};
  std::atomic<std::uint64_t> cancelled{0};
  std::atomic<std::uint64_t> periodic_failures{0};
  LatencyHistogram lateness;

  std::uint64_t submitted() const noexcept {
    // seq_cst: the leader's half of the sleep protocol (see the header comment).
    return next_seq.load(std::memory_order_seq_cst) - abandoned.load(std::memory_order_seq_cst);
  }
  std::int64_t pending() const noexcept {
    return static_cast<std::int64_t>(submitted() - removes_requested.load(std::memory_order_acquire)) -
           out.load(std::memory_order_acquire);
  }
  static void bump(std::atomic<std::uint64_t>& c) noexcept {  // mu held: single writer
    c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
  // Under mu, or by a runner that just started a batched task (hence an RMW). release: a
  // reader that sees the new count also sees the transition that caused it.
  void add_out(std::int64_t d) noexcept { out.fetch_add(d, std::memory_order_release); }
  bool inbox_has_work() const noexcept {
    return submitted() != drained.load(std::memory_order_relaxed) ||
           removes_requested.load(std::memory_order_seq_cst) - removes_lost.load(std::memory_order_seq_cst) !=
               removes_done.load(std::memory_order_relaxed);
  }
  // Wakes the leader if it waits for a later deadline than `deadline` (see the header comment).
  void notify_earlier(std::int64_t deadline) noexcept {
    std::int64_t a = armed.load(std::memory_order_seq_cst);
    // kMaxNs: the leader waits with no deadline (nothing queued, or only never-due tasks); any
    // task wakes it, also one due at the end of a ManualClock's time.
    while (deadline < a || a == kMaxNs) {
      if (armed.compare_exchange_weak(a, kAwake, std::memory_order_seq_cst)) {
        kick();
        return;
      }
    }
  }
  // Makes the leader re-examine everything (time moved, state changed, a task was re-queued).
  void kick() noexcept {
    wake_word.fetch_add(1, std::memory_order_seq_cst);
    if (sleeping.load(std::memory_order_seq_cst)) futex_wake_all(&wake_word);
  }
};

class Core final : public SchedulerCore, public ClockListener, public std::enable_shared_from_this<Core> {
 public:
  Core(const Options& o, ManualClock* clock)
      : SchedulerCore(clock),
        opt_(o),
        shards_(o.shards),
        remove_on_cancel_(o.remove_on_cancel),
        exec_delayed_(o.execute_existing_delayed_tasks_after_shutdown),
        continue_periodic_(o.continue_existing_periodic_tasks_after_shutdown) {
    for (std::size_t i = 0; i < shards_.size(); ++i) shards_[i] = std::make_unique<Shard>();
  }

  ~Core() override {
    // close() ran (the scheduler's destructor) or the threads never started.
    if (manual_ && listening_) manual_->remove_listener(this);
  }

  void start() {
    live_threads_ = opt_.shards * opt_.threads_per_shard;
    if (manual_) {
      manual_->add_listener(this);
      listening_ = true;
    }
    unsigned index = 0;
    for (unsigned s = 0; s < opt_.shards; ++s) {
      shards_[s]->threads_alive = opt_.threads_per_shard;
      shards_[s]->staged.resize(opt_.threads_per_shard);
      for (unsigned n = 0; n < opt_.threads_per_shard; ++n, ++index) {
        int cpu = opt_.cpus.empty() ? -1 : opt_.cpus[index % opt_.cpus.size()];
        std::string name = opt_.name + "-" + std::to_string(s) + "-" + std::to_string(n);
        threads_.emplace_back([self = shared_from_this(), s, n, cpu, name] { self->worker_main(s, n, cpu, name); });
      }
    }
  }

  UncaughtHandler uncaught_handler() const noexcept override { return on_uncaught_; }

  // ---- ClockListener --------------------------------------------------------------------------
  void on_clock_advanced() noexcept override {
    for (auto& sh : shards_) sh->kick();
  }

  // ---- submission --------------------------------------------------------------------------------
  void submit(TaskBase* t, std::int64_t deadline) override {
    t->deadline = deadline;  // not yet published: no other thread can see t
    unsigned idx = shard_index();
    Shard& sh = *shards_[idx];
    t->shard = static_cast<std::uint8_t>(idx);
    if (run_state_.load(std::memory_order_acquire) != kRunningState) return reject(t, sh, false);
    std::uint64_t seq;
    if (opt_.capacity == 0) {
      seq = sh.next_seq.fetch_add(1, std::memory_order_seq_cst);
    } else {
      for (;;) {
        seq = sh.next_seq.load(std::memory_order_seq_cst);
        std::int64_t pending = static_cast<std::int64_t>(seq - sh.abandoned.load(std::memory_order_acquire) -
                                                         sh.removes_requested.load(std::memory_order_acquire)) -
                               sh.out.load(std::memory_order_acquire);
        if (pending >= static_cast<std::int64_t>(opt_.capacity)) {
          if (opt_.rejection == Rejection::discard_oldest && make_room(sh)) continue;
          return reject(t, sh, true);
        }
        if (sh.next_seq.compare_exchange_weak(seq, seq + 1, std::memory_order_seq_cst)) break;
      }
    }
    publish(t, sh, seq);
  }

  // Enqueues t with sequence number seq (already taken) and wakes the leader if needed.
  void publish(TaskBase* t, Shard& sh, std::uint64_t seq) {
    t->seq = seq;
    const std::int64_t deadline = t->deadline;  // once enqueued, t may run and be re-queued
    // enqueue publishes t's fields (release inside moodycamel; the leader's dequeue acquires).
    if (!sh.inbox.enqueue(t)) {
      sh.abandoned.fetch_add(1, std::memory_order_seq_cst);
      sh.kick();
      release(t);
      throw std::bad_alloc();
    }
    sh.notify_earlier(deadline);
    // A leader asleep for a far deadline still drains every kDrainEvery submissions, so the inbox
    // recycles its blocks instead of growing (and the FIFO check below sees the task soon).
    if ((seq & (kDrainEvery - 1)) == kDrainEvery - 1) sh.kick();
    if (run_state_.load(std::memory_order_seq_cst) != kRunningState) after_racing_shutdown(sh);
  }

  // A submission that saw the scheduler shut down only after it was enqueued. Under the shard
  // lock the shard's threads are either still there (they will drain it: their exit waits for
  // drained == submitted) or gone; then this thread drains the inbox and settles what it finds.
  void after_racing_shutdown(Shard& sh) {
    std::unique_lock lk(sh.mu);
    if (sh.threads_alive > 0) return;
    drain_all(sh, lk);
    settle_after_exit(sh);
  }

  // Applies the rejection policy to t (not enqueued; the caller's scheduler reference).
  void reject(TaskBase* t, Shard& sh, bool over_capacity) {
    sh.rejected.fetch_add(1, std::memory_order_relaxed);
    Rejection r = opt_.rejection;
    if (r == Rejection::abort) {
      release(t);
      if (over_capacity)
        throw RejectedExecution("kairos: rejected, capacity " + std::to_string(opt_.capacity) + " reached");
      throw RejectedExecution("kairos: rejected, the scheduler is shut down");
    }
    if (r == Rejection::caller_runs && over_capacity) return run_in_caller(t, sh);
    // discard, or any policy after shutdown: the future completes as cancelled at once.
    transition(t, kPending, kCancelled);
    release(t);
  }

  // caller_runs over capacity: the task's (first) run happens here and now.
  void run_in_caller(TaskBase* t, Shard& sh) {
    if (!transition(t, kPending, kRunning)) {
      release(t);
      return;
    }
    prepare_stop(t);
    bool ok = t->ops->invoke(t);
    if (!t->periodic()) {
      finish_one_shot(t, ok);
      release(t);
      return;
    }
    if (!ok) {
      fail_periodic(t, sh);
      release(t);
      return;
    }
    std::int64_t next = next_deadline(t);
    if (!transition(t, kRunning, kPending)) {
      release(t);
      return;
    }
    // A periodic re-queue is never rejected: enqueue without the capacity check.
    std::atomic_ref<std::int64_t>(t->deadline).store(next, std::memory_order_relaxed);
    std::uint64_t seq = sh.next_seq.fetch_add(1, std::memory_order_seq_cst);
    publish(t, sh, seq);
  }

  // discard_oldest: cancels the earliest-deadline pending task of the shard. False if none.
  bool make_room(Shard& sh) {
    std::unique_lock lk(sh.mu);
    drain_all(sh, lk);
    sh.kick();  // what was drained here may be earlier than the deadline the leader sleeps for
    while (!sh.heap.empty()) {
      TaskBase* t = sh.heap.pop();
      transition(t, kPending, kCancelled);  // a retained cancelled task makes room as well
      wait_unpinned(t);
      if (!(t->state.load(std::memory_order_acquire) & kRemoved)) sh.add_out(1);
      drop(sh, t);
      return true;
    }
    return false;
  }

  // ---- cancel ---------------------------------------------------------------------------------
  void on_cancelled(TaskBase* t) noexcept override {
    // t is kCancelled|kPin: attached, so this shard is alive until the pin is cleared below.
    Shard& sh = *shards_[t->shard];
    if (remove_on_cancel_.load(std::memory_order_acquire)) {
      add_ref(t);  // the remove request's reference
      // seq_cst: pairs with the leader's check before it sleeps, like next_seq (see the top).
      std::uint64_t n = sh.removes_requested.fetch_add(1, std::memory_order_seq_cst);
      if (!sh.inbox.enqueue(reinterpret_cast<TaskBase*>(reinterpret_cast<std::uintptr_t>(t) | kRemoveTag))) {
        // Could not post the request: the task stays in the heap until its deadline, cancelled
        // and already uncounted.
        sh.removes_lost.fetch_add(1, std::memory_order_seq_cst);
        release(t);
      } else if ((n & 255) == 255 || run_state_.load(std::memory_order_acquire) != kRunningState) {
        // A sleeping leader frees removed tasks in batches, not only at its deadline; after
        // shutdown at once, since the removal may be what lets the scheduler terminate.
        sh.kick();
      }
      // Sets kRemoved and clears the pin in one step. release: whoever waits for the pin to
      // clear (acquire) then sees kRemoved and the request in the inbox.
      t->state.fetch_xor(kPin | kRemoved, std::memory_order_release);
      return;
    }
    t->state.fetch_and(~kPin, std::memory_order_release);
  }

  // ---- the shard's threads ------------------------------------------------------------------
  // One execution slot of a batch (locals of the worker).
  struct Slot {
    TaskBase* task;
    std::int64_t deadline;  // the deadline it was due at (a periodic task's moves on)
    std::int64_t start;     // when it started (lateness), if recorded
    bool started_at_pop;    // a stoppable task: started under mu, alone in its batch
    bool started;
  };

  void worker_main(unsigned s, unsigned index, int cpu, const std::string& name) {
    set_current_thread_name(name);
    set_timer_slack_1ns();
    if (cpu >= 0) pin_current_thread(cpu);
    Shard& sh = *shards_[s];
    std::unique_lock lk(sh.mu);
    std::vector<TaskBase*>& staged = sh.staged[index];
    staged.reserve(kMaxBatch);
    Slot batch[kMaxBatch];
    for (;;) {
      while (sh.has_leader && !must_exit(sh)) sh.followers_cv.wait(lk);
      if (must_exit(sh)) break;
      sh.has_leader = true;
      std::size_t n = lead(sh, lk, batch);
      sh.has_leader = false;
      if (n == 0) continue;  // must_exit became true
      for (std::size_t i = 0; i < n; ++i) staged.push_back(batch[i].task);
      sh.running += 1;
      if (opt_.threads_per_shard > 1) sh.followers_cv.notify_one();  // promote a follower
      lk.unlock();
      for (std::size_t i = 0; i < n; ++i) run_task(sh, batch[i]);
      lk.lock();
      for (std::size_t i = 0; i < n; ++i) after_run(sh, batch[i], staged[i] == nullptr);
      staged.clear();
      sh.running -= 1;
    }
    sh.threads_alive -= 1;
    if (sh.threads_alive == 0) settle_after_exit(sh);
    sh.followers_cv.notify_all();
    sh.kick();  // a leader asleep on the futex re-checks must_exit too
    lk.unlock();
    if (live_threads_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      std::lock_guard tl(term_mu_);
      run_state_.store(kTerminated, std::memory_order_seq_cst);
      term_cv_.notify_all();
    }
  }

  bool must_exit(Shard& sh) const noexcept {  // mu held
    int st = run_state_.load(std::memory_order_seq_cst);
    if (st == kRunningState) return false;
    if (st >= kStop) return sh.stop_done;  // after shutdown_now() took the pending tasks
    return sh.heap.empty() && sh.unconfirmed.empty() && sh.running == 0 && !sh.inbox_has_work();
  }

  // The leader's loop: returns with due tasks in `batch`, or 0 when the thread must exit. The
  // tasks stay kPending until their runner starts them, one after another (a due task waiting
  // behind a long one can still be cancelled, or taken by shutdown_now()). mu held on entry and
  // exit; released while waiting.
  std::size_t lead(Shard& sh, std::unique_lock<std::mutex>& lk, Slot* batch) {
    int idle_spins = 0;
    for (;;) {
      std::uint32_t w = sh.wake_word.load(std::memory_order_seq_cst);
      bool got = drain(sh);
      if (must_exit(sh)) return 0;
      if (run_state_.load(std::memory_order_seq_cst) >= kStop) {
        // Nothing starts after shutdown_now(); it takes the tasks and kicks this thread out.
        wait(sh, lk, w, kMaxNs, true);
        continue;
      }
      std::int64_t now = now_ns();
      std::size_t n = 0;
      std::size_t max = opt_.threads_per_shard == 1 ? kMaxBatch : 1;
      while (n < max && !sh.heap.empty() && is_due(sh.heap.top(), now)) {
        TaskBase* t = sh.heap.top();
        bool stoppable = t->flags & kStoppable;
        if (stoppable && n > 0) break;  // starts alone: its stop source is set up under mu
        sh.heap.pop();
        if ((t->state.load(std::memory_order_acquire) & kStateMask) == kCancelled) {
          drop_cancelled(sh, t);
          continue;
        }
        if (stoppable && !start_stoppable(sh, t)) continue;
        batch[n++] = Slot{t, t->deadline, 0, stoppable, stoppable};
        if (t->periodic() || stoppable) break;  // a periodic task's next run may come before the
                                                // rest: re-queue it first
      }
      if (n > 0) return n;
      if (sh.inbox_has_work() || !sh.unconfirmed.empty()) {
        // An item is on its way (a producer between fetch_add and enqueue) or unconfirmed.
        if (!got && ++idle_spins > 64) std::this_thread::yield();
        continue;
      }
      idle_spins = 0;
      TaskBase* head = sh.heap.empty() ? nullptr : sh.heap.top();
      bool forever = head == nullptr || (head->flags & kNever);
      wait(sh, lk, w, forever ? kMaxNs : head->deadline, forever);
    }
  }

  // Waits until `deadline` (forever: no deadline), a submission, or a kick. mu held on entry
  // and exit.
  void wait(Shard& sh, std::unique_lock<std::mutex>& lk, std::uint32_t w, std::int64_t deadline, bool forever) {
    sh.armed.store(deadline, std::memory_order_seq_cst);
    if (sh.inbox_has_work() || (!forever && now_ns() >= deadline) || must_exit(sh)) {
      sh.armed.store(kAwake, std::memory_order_seq_cst);
      return;
    }
    lk.unlock();
    if (manual_) {
      sleep_until(sh, w, -1);
    } else {
      WaitPolicy::Mode mode = opt_.wait.mode();
      std::int64_t window = opt_.wait.spin_window().count();
      std::int64_t spin_from = mode == WaitPolicy::Mode::spin ? kMinNs
                               : mode == WaitPolicy::Mode::sleep ? kMaxNs
                                                                 : sub_saturated(deadline, window);
      bool woken = false;
      if (steady_now_ns() < spin_from) {
        woken = !sleep_until(sh, w, spin_from == kMaxNs ? (forever ? -1 : deadline) : spin_from);
      }
      if (!woken && mode != WaitPolicy::Mode::sleep) spin_until(sh, w, deadline);
    }
    sh.armed.store(kAwake, std::memory_order_seq_cst);
    lk.lock();
  }

  // Futex sleep on wake_word; returns true iff the deadline passed (deadline < 0: none).
  bool sleep_until(Shard& sh, std::uint32_t w, std::int64_t deadline) noexcept {
    sh.sleeping.store(true, std::memory_order_seq_cst);
    bool timed_out = false;
    if (sh.wake_word.load(std::memory_order_seq_cst) == w && !sh.inbox_has_work())
      timed_out = !futex_wait(&sh.wake_word, w, deadline);
    sh.sleeping.store(false, std::memory_order_relaxed);
    return timed_out;
  }

  void spin_until(Shard& sh, std::uint32_t w, std::int64_t deadline) noexcept {
    while (sh.wake_word.load(std::memory_order_acquire) == w && !sh.inbox_has_work() &&
           steady_now_ns() < deadline)
      cpu_relax();
  }

  // A task that left the heap cancelled: it leaves the count unless cancel() already took it out.
  void drop_cancelled(Shard& sh, TaskBase* t) noexcept {
    wait_unpinned(t);
    if (!(t->state.load(std::memory_order_acquire) & kRemoved)) sh.add_out(1);
    drop(sh, t);
  }

  // A task taking a stop token starts under mu: a fresh stop source, kPending -> kRunning, and
  // registered for shutdown_now()'s stop requests. False (dropped) if it was cancelled.
  bool start_stoppable(Shard& sh, TaskBase* t) {
    prepare_stop(t);
    if (!transition(t, kPending, kRunning)) {
      drop_cancelled(sh, t);
      return false;
    }
    sh.running_stoppable.push_back(t);
    sh.add_out(1);
    return true;
  }

  // A fresh stop source for each execution; already stopped once shutdown_now() has run.
  void prepare_stop(TaskBase* t) {
    if (std::stop_source* src = t->ops->stop_source(t)) {
      *src = std::stop_source();
      if (run_state_.load(std::memory_order_acquire) >= kStop) src->request_stop();
    }
  }

  // Starts and runs one execution (no lock held). Leaves slot.started false if the task was
  // cancelled or taken by shutdown_now() while it waited in the batch.
  void run_task(Shard& sh, Slot& slot) {
    TaskBase* t = slot.task;
    if (!slot.started_at_pop) {
      slot.started = transition(t, kPending, kRunning);
      if (!slot.started) return;
      sh.add_out(1);  // it left the queue (queue_size) the moment it started
    }
#if defined(KAIROS_SLOW_START_NS) && KAIROS_SLOW_START_NS > 0
    // A deliberately slowed build (CMake KAIROS_SLOW_START_NS): shows the latency gate failing.
    for (std::int64_t until = steady_now_ns() + KAIROS_SLOW_START_NS; steady_now_ns() < until;) cpu_relax();
#endif
    if (opt_.record_lateness) slot.start = now_ns();
    if ((t->state.load(std::memory_order_acquire) & kStateMask) == kCancelled) return;  // cancelled after start
    bool ok = t->ops->invoke(t);
    if (!t->periodic()) {
      finish_one_shot(t, ok);
    } else if (!ok) {
      fail_periodic(t, sh);
    } else {
      // The next deadline is computed here, at the end of the run (fixed delay needs it).
      std::atomic_ref<std::int64_t>(t->deadline).store(next_deadline(t), std::memory_order_relaxed);
    }
  }

  void finish_one_shot(TaskBase* t, bool ok) {
    if (ok) {
      transition(t, kRunning, kNormal);
    } else if (transition(t, kRunning, kExceptional) && (t->flags & kNoFuture)) {
      report_uncaught(opt_.on_uncaught, static_cast<ResultSlot<void>*>(t)->error);
    }
  }

  void fail_periodic(TaskBase* t, Shard& sh) {
    if (transition(t, kRunning, kExceptional)) {
      sh.periodic_failures.fetch_add(1, std::memory_order_relaxed);
      report_uncaught(opt_.on_uncaught, static_cast<ResultSlot<void>*>(t)->error);
    }
  }

  std::int64_t next_deadline(TaskBase* t) const noexcept {
    auto* p = static_cast<PeriodicBase*>(t);
    std::int64_t next;
    if (__builtin_add_overflow(t->flags & kFixedDelay ? now_ns() : t->deadline, p->period, &next)) {
      t->flags |= kNever;  // the runner owns t here; the next reader takes mu first
      return kMaxNs;
    }
    // A first run due "never" can only have been a caller_runs one; the next has a real time.
    // (Written only when set: flags is otherwise read-only once published.)
    if (t->flags & kNever) t->flags &= static_cast<std::uint8_t>(~kNever);
    return next;
  }

  // After a batch, under mu: counts each task out, re-queues a periodic task or lets it go.
  // taken: shutdown_now() took the task before it started (it holds its own reference).
  void after_run(Shard& sh, const Slot& slot, bool taken) {
    TaskBase* t = slot.task;
    if (!slot.started) {
      if (taken) release(t);       // counted out by shutdown_now()
      else drop_cancelled(sh, t);  // cancelled while it waited in the batch
      return;
    }
    sh.ran.fetch_add(1, std::memory_order_relaxed);
    if (opt_.record_lateness) sh.lateness.record(sub_saturated(slot.start, slot.deadline));
    if (t->flags & kStoppable) std::erase(sh.running_stoppable, t);
    std::uint32_t s = t->state.load(std::memory_order_acquire) & kStateMask;
    if (t->periodic() && s == kRunning) {
      int st = run_state_.load(std::memory_order_seq_cst);
      bool may_continue = st == kRunningState ||
                          (st == kShutdown && continue_periodic_.load(std::memory_order_acquire));
      if (may_continue && transition(t, kRunning, kPending)) {
        sh.add_out(-1);
        sh.heap.push(t, now_ns());  // this thread is, or will become, the leader, or the leader is kicked:
        if (sh.has_leader) sh.notify_earlier(t->deadline);
        return;
      }
      transition(t, kRunning, kCancelled);
      sh.cancelled.fetch_add(1, std::memory_order_relaxed);
    }
    release(t);
  }

  // Drops a task that left the heap or inbox without running (mu held or the shard is dead).
  void drop(Shard& sh, TaskBase* t) noexcept {
    wait_unpinned(t);
    std::uint32_t s = t->state.load(std::memory_order_acquire);
    if ((s & kStateMask) == kCancelled && !(s & kRemoved))  // removed ones were counted at cancel()
      sh.cancelled.fetch_add(1, std::memory_order_relaxed);
    release(t);
  }

  // ---- inbox ----------------------------------------------------------------------------------
  // Moves inbox items into the heap (through `unconfirmed`, see FIFO). mu held. True if any.
  bool drain(Shard& sh) {
    TaskBase* buf[kDrainChunk];
    bool any = false;
    for (int pass = 0; pass < 64; ++pass) {
      std::size_t n = sh.inbox.try_dequeue_bulk(buf, kDrainChunk);
      if (n < kDrainChunk) confirm(sh);  // a complete pass: what was seen before is confirmed
      for (std::size_t i = 0; i < n; ++i) stage(sh, buf[i]);
      any |= n > 0;
      if (n == 0) break;
    }
    return any;
  }

  // Drains until every submission that took a seq has arrived, and confirms everything.
  void drain_all(Shard& sh, std::unique_lock<std::mutex>&) {
    for (int i = 0;; ++i) {
      drain(sh);
      if (!sh.inbox_has_work() && sh.unconfirmed.empty()) return;
      if (i > 64) std::this_thread::yield();
    }
  }

  void stage(Shard& sh, TaskBase* item) {
    auto bits = reinterpret_cast<std::uintptr_t>(item);
    if (bits & kRemoveTag) {
      TaskBase* t = reinterpret_cast<TaskBase*>(bits & ~kRemoveTag);
      if (sh.heap.erase(t)) release(t);  // the heap's reference (its count left at cancel())
      release(t);                        // the request's reference
      Shard::bump(sh.removes_done);
      return;
    }
    Shard::bump(sh.drained);
    sh.unconfirmed.push_back(item);
  }

  void confirm(Shard& sh) {
    if (sh.unconfirmed.empty()) return;
    std::int64_t now = now_ns();
    for (TaskBase* t : sh.unconfirmed) accept(sh, t, now);
    sh.unconfirmed.clear();
  }

  // A drained submission enters the heap, unless cancelled or refused by the shutdown policies.
  void accept(Shard& sh, TaskBase* t, std::int64_t now) {
    std::uint32_t s = t->state.load(std::memory_order_acquire);
    if ((s & kStateMask) == kCancelled) {
      wait_unpinned(t);
      s = t->state.load(std::memory_order_acquire);
      bool shut = run_state_.load(std::memory_order_acquire) != kRunningState;
      if ((s & kRemoved) || shut) {  // removed (already uncounted), or no retention after shutdown
        if (!(s & kRemoved)) sh.add_out(1);
        drop(sh, t);
        return;
      }
    } else if (int st = run_state_.load(std::memory_order_seq_cst);
               st >= kStop ? sh.stop_done : (st == kShutdown && !allowed_after_shutdown(t, now))) {
      // Before shutdown_now() took this shard's tasks, it goes to the heap for it to take.
      sh.add_out(1);
      transition(t, kPending, kCancelled);
      drop(sh, t);
      return;
    }
    sh.heap.push(t, now);
  }

  bool allowed_after_shutdown(TaskBase* t, std::int64_t now) const noexcept {
    if (run_state_.load(std::memory_order_seq_cst) >= kStop) return false;
    if (t->periodic()) return continue_periodic_.load(std::memory_order_acquire);
    return is_due(t, now) || exec_delayed_.load(std::memory_order_acquire);
  }

  // Under mu after shutdown: cancels and removes what the policies no longer allow, and every
  // cancelled task retained in the heap.
  void apply_policies(Shard& sh) {
    std::int64_t now = now_ns();
    std::vector<TaskBase*> gone;
    sh.heap.for_each([&](TaskBase* t) {
      std::uint32_t s = t->state.load(std::memory_order_acquire) & kStateMask;
      if (s == kCancelled || !allowed_after_shutdown(t, now)) gone.push_back(t);
    });
    for (TaskBase* t : gone) {
      sh.heap.erase_any(t);
      std::uint32_t s = t->state.load(std::memory_order_acquire);
      if (!(s & kRemoved) || (s & kStateMask) != kCancelled) sh.add_out(1);
      transition(t, kPending, kCancelled);
      drop(sh, t);
    }
  }

  // The shard's last thread is gone (mu held): nothing may stay pending in it.
  void settle_after_exit(Shard& sh) {
    std::vector<TaskBase*> rest;
    TaskBase* buf[kDrainChunk];
    // stage() applies remove requests and collects submissions in `unconfirmed`: no order is
    // needed here, everything left is cancelled.
    while (std::size_t n = sh.inbox.try_dequeue_bulk(buf, kDrainChunk))
      for (std::size_t i = 0; i < n; ++i) stage(sh, buf[i]);
    for (TaskBase* t : sh.unconfirmed) rest.push_back(t);
    sh.unconfirmed.clear();
    sh.heap.for_each([&](TaskBase* t) { rest.push_back(t); });
    sh.heap.clear();
    for (TaskBase* t : rest) {
      std::uint32_t s = t->state.load(std::memory_order_acquire);
      if (!((s & kStateMask) == kCancelled && (s & kRemoved))) sh.add_out(1);
      transition(t, kPending, kCancelled);
      drop(sh, t);
    }
  }

  // ---- shutdown -------------------------------------------------------------------------------
  void shutdown() override {
    int st = kRunningState;
    run_state_.compare_exchange_strong(st, kShutdown, std::memory_order_seq_cst);
    for (auto& shp : shards_) {
      Shard& sh = *shp;
      std::unique_lock lk(sh.mu);
      if (sh.threads_alive > 0) drain_all(sh, lk);
      apply_policies(sh);
      sh.kick();
      sh.followers_cv.notify_all();
    }
  }

  std::vector<TaskBase*> shutdown_now() override {
    int st = run_state_.load(std::memory_order_seq_cst);
    while (st < kStop && !run_state_.compare_exchange_weak(st, kStop, std::memory_order_seq_cst)) {
    }
    std::vector<TaskBase*> orphans;
    for (auto& shp : shards_) {
      Shard& sh = *shp;
      std::unique_lock lk(sh.mu);
      drain_all(sh, lk);
      std::vector<TaskBase*> pending;
      sh.heap.for_each([&](TaskBase* t) { pending.push_back(t); });
      for (TaskBase* t : pending) {
        t->heap_index = kNotInHeap;
        std::uint32_t s = t->state.load(std::memory_order_acquire);
        if (!((s & kStateMask) == kCancelled && (s & kRemoved))) sh.add_out(1);
        if (transition(t, kPending, kOrphan)) {
          orphans.push_back(t);  // the scheduler's reference now belongs to the caller
        } else {
          drop(sh, t);
        }
      }
      sh.heap.clear();
      for (std::vector<TaskBase*>& staged : sh.staged) {
        for (TaskBase*& t : staged) {
          if (t != nullptr && transition(t, kPending, kOrphan)) {
            add_ref(t);  // the Task's; the runner releases the batch's own
            sh.add_out(1);
            orphans.push_back(t);
            t = nullptr;
          }
        }
      }
      sh.stop_done = true;
      for (TaskBase* t : sh.running_stoppable)
        if (std::stop_source* src = t->ops->stop_source(t)) src->request_stop();
      sh.kick();
      sh.followers_cv.notify_all();
    }
    std::stable_sort(orphans.begin(), orphans.end(),
                     [](const TaskBase* a, const TaskBase* b) { return TimerHeap::before(a, b); });
    return orphans;
  }

  bool await_termination(std::int64_t timeout_ns) override {
    std::unique_lock lk(term_mu_);
    if (timeout_ns < 0) timeout_ns = 0;
    auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(std::min<std::int64_t>(timeout_ns, kMaxNs / 2));
    return term_cv_.wait_until(lk, until, [&] { return run_state_.load(std::memory_order_seq_cst) == kTerminated; });
  }
  bool is_shutdown() const noexcept override { return run_state_.load(std::memory_order_acquire) != kRunningState; }
  bool is_terminating() const noexcept override {
    int st = run_state_.load(std::memory_order_acquire);
    return st == kShutdown || st == kStop;
  }
  bool is_terminated() const noexcept override { return run_state_.load(std::memory_order_acquire) == kTerminated; }

  void set_remove_on_cancel(bool v) override { remove_on_cancel_.store(v, std::memory_order_release); }
  void set_execute_existing_delayed_tasks_after_shutdown(bool v) override {
    exec_delayed_.store(v, std::memory_order_release);
    if (!v && is_shutdown()) reapply_policies();
  }
  void set_continue_existing_periodic_tasks_after_shutdown(bool v) override {
    continue_periodic_.store(v, std::memory_order_release);
    if (!v && is_shutdown()) reapply_policies();
  }
  void reapply_policies() {
    for (auto& shp : shards_) {
      Shard& sh = *shp;
      std::unique_lock lk(sh.mu);
      if (sh.threads_alive > 0) drain_all(sh, lk);
      apply_policies(sh);
      sh.kick();
      sh.followers_cv.notify_all();
    }
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
      subs.push_back(sh->submitted());
      removes.push_back(sh->removes_requested.load(std::memory_order_seq_cst) - sh->removes_lost.load(std::memory_order_seq_cst));
    }
    for (int round = 0;; ++round) {
      bool idle = true;
      std::int64_t now = now_ns();
      for (std::size_t i = 0; i < shards_.size() && idle; ++i) {
        Shard& sh = *shards_[i];
        std::lock_guard lk(sh.mu);
        bool dead = sh.threads_alive == 0;
        if (sh.running != 0) idle = false;
        else if (!dead && (sh.drained.load() < subs[i] || sh.removes_done.load() < removes[i] || !sh.unconfirmed.empty())) idle = false;
        else if (!dead && !sh.heap.empty() && is_due(sh.heap.top(), now)) idle = false;
        if (!idle) sh.kick();
      }
      if (idle) return true;
      if (steady_now_ns() >= until) return false;
      if (round < 100) std::this_thread::yield();
      else std::this_thread::sleep_for(std::chrono::microseconds(round < 1000 ? 20 : 200));
    }
  }

  SchedulerStats stats() const override {
    SchedulerStats out;
    for (auto& shp : shards_) {
      Shard& sh = *shp;
      ShardStats s;
      s.submitted = sh.submitted();
      s.ran = sh.ran.load(std::memory_order_relaxed);
      s.cancelled = sh.cancelled.load(std::memory_order_relaxed) + sh.removes_requested.load(std::memory_order_relaxed);
      s.rejected = sh.rejected.load(std::memory_order_relaxed);
      s.pending = static_cast<std::uint64_t>(std::max<std::int64_t>(0, sh.pending()));
      s.periodic_failures = sh.periodic_failures.load(std::memory_order_relaxed);
      {
        std::lock_guard lk(sh.mu);
        s.lateness = sh.lateness;
      }
      out.shards.push_back(std::move(s));
    }
    return out;
  }

  void close() noexcept override {
    std::vector<TaskBase*> orphans = shutdown_now();
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
    // Threads other than the caller are gone; the shards keep what raced the end.
    for (auto& shp : shards_) {
      std::lock_guard lk(shp->mu);
      if (shp->threads_alive == 0) settle_after_exit(*shp);
    }
  }

 private:
  static thread_local unsigned t_shard_slot;

  // A thread's tasks all go to one shard: the k-th thread to submit gets shard k % shards.
  unsigned shard_index() const noexcept {
    if (shards_.size() == 1) return 0;
    if (t_shard_slot == ~0u) t_shard_slot = g_next_slot.fetch_add(1, std::memory_order_relaxed);
    return t_shard_slot % static_cast<unsigned>(shards_.size());
  }
  static inline std::atomic<unsigned> g_next_slot{0};

  Options opt_;
  std::vector<std::unique_ptr<Shard>> shards_;
  std::vector<std::thread> threads_;
  std::atomic<int> run_state_{kRunningState};
  std::atomic<bool> remove_on_cancel_;
  std::atomic<bool> exec_delayed_;
  std::atomic<bool> continue_periodic_;
  std::atomic<unsigned> live_threads_{0};
  std::mutex term_mu_;
  std::condition_variable term_cv_;
  bool listening_ = false;
  UncaughtHandler on_uncaught_ = std::make_shared<const std::function<void(std::exception_ptr)>>(opt_.on_uncaught);
};

thread_local unsigned Core::t_shard_slot = ~0u;

void validate(const Options& o) {
  if (o.shards == 0 || o.shards > 64)
    throw std::invalid_argument("kairos: shards must be in [1, 64], got " + std::to_string(o.shards));
  if (o.threads_per_shard == 0 || o.threads_per_shard > 256)
    throw std::invalid_argument("kairos: threads_per_shard must be in [1, 256], got " +
                                std::to_string(o.threads_per_shard));
  unsigned hw = std::thread::hardware_concurrency();
  for (int cpu : o.cpus)
    if (cpu < 0 || (hw != 0 && static_cast<unsigned>(cpu) >= hw))
      throw std::invalid_argument("kairos: CPU id " + std::to_string(cpu) + " is not in [0, " +
                                  std::to_string(hw) + ")");
}

}  // namespace

std::shared_ptr<SchedulerCore> SchedulerCore::create(const Options& options, ManualClock* clock) {
  validate(options);
  auto core = std::make_shared<Core>(options, clock);
  core->start();
  return core;
}

bool cancel_task(TaskBase* t, bool may_interrupt_if_running) noexcept {
  std::uint32_t s = t->state.load(std::memory_order_acquire);
  for (;;) {
    std::uint32_t st = s & kStateMask;
    std::uint32_t n;
    if (st == kPending) n = (s & ~kStateMask) | kCancelled | kPin;
    else if (st == kRunning || st == kOrphan) n = (s & ~kStateMask) | kCancelled;
    else return false;
    if (!t->state.compare_exchange_weak(s, n, std::memory_order_acq_rel, std::memory_order_acquire)) continue;
    if (s & kWaiters) futex_wake_all(&t->state);
    if (st == kPending) {
      t->core->on_cancelled(t);
    } else if (st == kRunning && may_interrupt_if_running) {
      if (std::stop_source* src = t->ops->stop_source(t)) src->request_stop();
    }
    return true;
  }
}

void run_orphan(TaskBase* t, const std::function<void(std::exception_ptr)>* on_uncaught) noexcept {
  if (transition(t, kOrphan, kRunning)) {
    if (std::stop_source* src = t->ops->stop_source(t)) *src = std::stop_source();
    bool ok = t->ops->invoke(t);
    if (t->periodic()) {
      if (!ok) transition(t, kRunning, kExceptional);
      else transition(t, kRunning, kCancelled);  // no later runs: the future completes as cancelled
    } else {
      transition(t, kRunning, ok ? kNormal : kExceptional);
    }
    if (!ok && (t->flags & kNoFuture))
      report_uncaught(on_uncaught ? *on_uncaught : std::function<void(std::exception_ptr)>{},
                      static_cast<ResultSlot<void>*>(t)->error);
  }
  release(t);
}

void drop_orphan(TaskBase* t) noexcept {
  transition(t, kOrphan, kCancelled);
  release(t);
}

}  // namespace kairos::detail
