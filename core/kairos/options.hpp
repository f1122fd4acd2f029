// options.hpp: how a scheduler is built. Checked once, at construction (std::invalid_argument).
#pragma once
#include <chrono>
#include <cstddef>
#include <exception>
#include <functional>
#include <string>
#include <vector>

#include <kairos/hooks.hpp>
#include <kairos/rejection.hpp>
#include <kairos/wait.hpp>

namespace kairos {

class Task;

struct Options {
  unsigned shards = 1;               // independent heaps, each with its own leader
  unsigned threads_per_shard = 1;    // leader/follower threads of one shard
  std::vector<int> cpus{};           // thread i pinned to cpus[i % cpus.size()]; empty: no pinning
  WaitPolicy wait = WaitPolicy::fitted();  // hybrid(50us) where that suffices, wider where the host needs it
  Rejection rejection = Rejection::abort;
  std::size_t capacity = 0;          // most pending tasks of one shard at once; 0 = unbounded
  bool remove_on_cancel = false;
  bool execute_existing_delayed_tasks_after_shutdown = true;
  bool continue_existing_periodic_tasks_after_shutdown = false;
  std::function<void(std::exception_ptr)> on_uncaught{};  // exceptions nobody will get(): execute()'d
                                                        // tasks and failed periodic tasks
  std::string name = "kairos";       // threads are named <name>-<shard>-<n> (15 chars kept)
  bool record_lateness = true;       // per-shard lateness histogram in stats() (a counter read and
                                     // a record per task: docs/api.md, "Statistics (kairos/stats.hpp)")
  // Far timers (docs/api.md, "Far timers"): schedule() and execute_after() with a delay of at
  // least 1000 x far_timer_slack (1 s by default) make no clock read in the call. The shard's
  // leader gives such a task its deadline when it takes it in: its own clock read, made after
  // the submission, plus the delay. So a far timer never starts before the call + its delay, and
  // may start up to about far_timer_slack later (0.1 % of its delay at most; plus the leader's
  // wake-up latency): the leader takes far timers in at least every far_timer_slack while they
  // come. Zero: every deadline is the caller's clock read, as in Java's class. Ignored in poll
  // mode and on a ManualClock (the caller reads the clock). Negative: std::invalid_argument.
  std::chrono::nanoseconds far_timer_slack = std::chrono::milliseconds(1);
  // Poll mode (docs/poll-mode.md): no scheduler threads. The owner's own loop runs the due tasks
  // inline with BasicScheduler::poll() and asks next_deadline() when to come back; submit,
  // cancel and re-arm work from any thread as usual. threads_per_shard must stay 1, and `cpus`
  // and on_thread_start empty: there is no scheduler thread to pin or to start.
  bool poll_mode = false;
  // Poll mode: called on the thread whose submission or re-arm wakes the loop (its deadline is
  // earlier than the one next_deadline() last returned; at most once per next_deadline() call),
  // right after BasicScheduler::wake_fd() became readable; and once by shutdown() and
  // shutdown_now(). For loops woken some other way than by a file descriptor. Keep it short and
  // non-blocking: it runs inside submit(). An exception from it goes to on_uncaught.
  std::function<void()> on_wake = {};

  // ---- hooks (docs/api.md "Hooks"); empty: not called, and nothing on any path costs more ----
  // On each new scheduler thread, after it is named and pinned, before it serves: set SCHED_FIFO,
  // the memory policy, thread-locals, check CPU isolation. The constructor waits for every
  // thread's call; if one throws, the scheduler is stopped and the constructor rethrows it.
  std::function<void(const ThreadInfo&)> on_thread_start{};
  // A refused submission (shut down, or capacity reached), instead of the `rejection` policy.
  // Runs on the submitting thread, which owns the Task: it may run it, keep it, hand it on, or
  // drop it (its future then completes as cancelled). An exception leaves the submit call.
  std::function<void(Task, const RejectionInfo&)> on_rejected{};
  // Around every run on a scheduler thread, in this order, without any kairos lock:
  // before_execute, decorate_task (which must call `run` once; if it does not, the task runs
  // after it returns), the run, the task's completion, after_execute (with the task's exception,
  // or nullptr). An exception from a hook goes to on_uncaught; the task's outcome is unchanged.
  std::function<void(const ExecutionInfo&)> before_execute{};
  std::function<void(const ExecutionInfo&, RunFn run)> decorate_task{};
  std::function<void(const ExecutionInfo&, std::exception_ptr)> after_execute{};
  // Once, on the last scheduler thread after it stopped serving, before is_terminated() turns
  // true and await_termination() returns; no kairos lock held.
  std::function<void()> terminated{};
};

}  // namespace kairos
