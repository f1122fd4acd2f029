// await_table.hpp: where a coroutine that awaits a ScheduledFuture (kairos/coro.hpp) waits.
// Memory:  nothing in the task node: a task nobody awaits costs no byte and, on completion, one
//          test of the kAwaited bit in the state word its completing CAS already read. An
//          awaiting coroutine's record lives in its own frame (the awaiter), linked into one of
//          a fixed set of buckets chosen by the node's address; no allocation.
// Threads: any thread registers; the task's completion wakes (wake_awaiters, called only by
//          finish_completion, core/src/completion.hpp). The protocol (AW1..AW4) is argued in
//          core/src/awaiters.cpp.
#pragma once
#include <coroutine>

#include <kairos/detail/task.hpp>

namespace kairos::detail {

struct AwaitRecord {
  TaskBase* node = nullptr;        // the awaited task; nullptr once a waker took the record
  std::coroutine_handle<> waiter;  // resumed once by the waker that took the record
  AwaitRecord* next = nullptr;     // bucket list; the bucket's lock only
};

// Registers `r` (r->node, r->waiter set) for the completion of r->node. True: the coroutine is
// suspended and will be resumed exactly once by a waker, possibly before this returns (then the
// caller must not touch the frame any more). False: the task was already done and the record is
// not registered (resume the coroutine yourself: await_suspend returns false).
bool await_register(AwaitRecord* r) noexcept;
// Unlinks `r` if no waker took it (a suspended frame being destroyed). True iff it was unlinked.
bool await_unregister(AwaitRecord* r) noexcept;

}  // namespace kairos::detail
