// rejection.hpp: what a submission gets when it cannot be accepted (after shutdown(), or when
// Options::capacity pending tasks are already queued on its shard).
//   abort          throws RejectedExecution naming the reason.
//   caller_runs    over capacity: runs the task at once in the caller (a periodic task's first
//                  run; later runs are scheduled as usual). After shutdown: discards it.
//   discard        the task is dropped; its future completes as cancelled at once.
//   discard_oldest over capacity: cancels the earliest-deadline queued tasks of the shard until
//                  there is room, then accepts. After shutdown: discards the new task.
#pragma once

namespace kairos {

enum class Rejection { abort, caller_runs, discard, discard_oldest };

}  // namespace kairos
