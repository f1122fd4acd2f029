// engine.hpp: the scheduler as a whole (SchedulerCore): placement of submissions on shards, the
// rejection policies, the lifecycle (shutdown, shutdown_now, termination, the destructor), what it
// reports, and poll mode's driving of the shards. The threaded half and the lifecycle are in
// engine.cpp, the poll-mode half in engine_poll.cpp (beside shard_poll.cpp). Per-shard behaviour
// is in the shard's files (shard.cpp lists them); a shard depends on nothing here but EngineState.
// Threads: submit, cancel and re-arm on any thread; the lifecycle calls on any thread; poll mode's
//          calls on the loop's thread (docs/poll-mode.md).
#pragma once
#include <poll.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <kairos/detail/scheduler_core.hpp>

#include "engine_state.hpp"
#include "shard.hpp"

namespace kairos::detail {

class Engine final : public SchedulerCore, public ClockListener, public std::enable_shared_from_this<Engine> {
 public:
  Engine(const Options& o, ManualClock* clock);
  ~Engine() override;
  void start();
  void await_thread_starts();
  UncaughtHandler uncaught_handler() const noexcept override;
  void on_clock_advanced() noexcept override;

  // ---- submission -------------------------------------------------------------------------------
  void submit(TaskBase* t, std::int64_t deadline, bool never) override;
  void submit_counted(TaskBase* t, Shard& sh, bool never);  // submit() under Options::capacity
  void reject(TaskBase* t, Shard& sh, bool over_capacity);
  void reject_after_seq(TaskBase* t, Shard& sh);  // a submission whose RS2 saw the shutdown
  void run_in_caller(TaskBase* t, Shard& sh);
  void on_cancelled(TaskBase* t, bool queued) noexcept override;
  std::shared_ptr<SchedulerCore> rearm_locked(TaskBase* t, std::int64_t deadline, bool never) noexcept override;
  void run_wake_callback() noexcept override;

  // ---- threads ------------------------------------------------------------------------------------
  void worker_main(unsigned s, unsigned index, int cpu, const std::string& name);
  void terminate() noexcept;
  void thread_start_hook(const ThreadInfo& info) noexcept;

  // ---- poll mode (engine_poll.cpp) -----------------------------------------------------------------
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
  void require_poll_mode(const char* call) const;
  std::size_t poll(std::int64_t now, std::size_t limit) override;
  std::int64_t next_deadline() override;
  int wake_fd() const override;
  bool polled_here() const noexcept;
  bool drives_the_loop() const noexcept;
  // wait_idle / await_termination on the loop's thread: polls until `done` or `until`.
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

  static void wait_readable(int fd, std::int64_t ns) noexcept;

  // ---- lifecycle ------------------------------------------------------------------------------------
  void shutdown() override;
  std::vector<TaskBase*> shutdown_now() override;
  bool await_termination(std::int64_t timeout_ns) override;
  bool is_shutdown() const noexcept override;
  bool is_terminating() const noexcept override;
  bool is_terminated() const noexcept override;
  void set_remove_on_cancel(bool v) override;
  void set_execute_existing_delayed_tasks_after_shutdown(bool v) override;
  void set_continue_existing_periodic_tasks_after_shutdown(bool v) override;
  void reapply_policies();
  std::size_t queue_size() const noexcept override;
  bool wait_idle(std::int64_t timeout_ns) override;
  PoolCounts pool_counts() const override;
  std::size_t purge() override;
  bool on_own_thread() const noexcept override;
  bool would_wait_for_itself() const noexcept override;
  SchedulerStats stats() const override;
  void close() noexcept override;

 private:
  static thread_local unsigned t_shard_slot;
  struct OwnShard {
    const Engine* engine = nullptr;  // a worker thread's scheduler and shard (worker_main)
    unsigned index = 0;
  };
  static thread_local OwnShard t_own_shard;

  // A thread's tasks all go to one shard: the k-th thread to submit gets shard k % shards.
  unsigned shard_index() const noexcept {
    if (only_shard_ != nullptr) return 0;
    if (t_shard_slot == ~0u) t_shard_slot = g_next_slot.fetch_add(1, std::memory_order_relaxed);
    return t_shard_slot % static_cast<unsigned>(shards_.size());
  }
  static inline std::atomic<unsigned> g_next_slot{0};
  EngineState state_;
  std::vector<std::unique_ptr<Shard>> shards_;
  // The one shard of a one-shard engine (the default), else null: submit() tests one word, not
  // the vector's size (set once, in the constructor, before any thread can submit).
  Shard* only_shard_ = nullptr;
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

}  // namespace kairos::detail
