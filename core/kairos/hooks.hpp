// hooks.hpp: what the hooks of Options (kairos/options.hpp) receive.
//   ThreadInfo     a scheduler thread, given to on_thread_start on that thread before it serves.
//   ExecutionInfo  one run of a task, given to before_execute, decorate_task and after_execute
//                  on the thread that runs it.
//   RunFn          the run itself, handed to decorate_task (non-owning; valid during the call).
//   RejectionInfo  why a submission was refused, given to on_rejected with the task.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace kairos {

struct ThreadInfo {
  unsigned shard;         // the shard the thread serves
  unsigned index;         // its number within the shard (0 .. threads_per_shard - 1)
  int cpu;                // the CPU it was pinned to (Options::cpus), -1 if not pinned
  std::string_view name;  // the name it was given: <name>-<shard>-<index> (OS keeps 15 chars)
};

struct ExecutionInfo {
  const void* task;          // identity of the task (same for every run of a periodic task)
  std::int64_t deadline_ns;  // the deadline this run was due at, ns on the scheduler's clock
  unsigned shard;            // the shard whose thread runs it
  bool periodic;
};

// The task's run, as decorate_task receives it. Calling it runs the task once (its exception is
// kept for the task's future, never thrown here); later calls do nothing.
class RunFn {
 public:
  RunFn(void (*fn)(void*), void* ctx) noexcept : fn_(fn), ctx_(ctx) {}
  void operator()() const { fn_(ctx_); }

 private:
  void (*fn_)(void*);
  void* ctx_;
};

struct RejectionInfo {
  bool shut_down;         // refused because the scheduler was shut down
  std::size_t capacity;   // otherwise: the per-shard capacity (Options::capacity) was reached
  unsigned shard;         // the shard the submission was placed on
};

}  // namespace kairos
