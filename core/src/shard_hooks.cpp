// shard_hooks.cpp: what a shard does for Java's ThreadPoolExecutor surface: a run with the
// execution hooks of Options, purge(), and the active count.
//
// Hooks. Shard::run_task hands a run here only when one of before_execute, decorate_task or
// after_execute is set (EngineState::exec_hooks, fixed at construction), so a scheduler without
// them pays one predictable branch per run and nothing on submit. The hooks run on the runner's
// thread with no kairos lock held (run_task is called after unlock_and_bury), like the task
// itself; they see the task's node only through ExecutionInfo (identity, deadline, shard).
// Ownership during the call: the runner holds the batch's scheduler reference, so the node and
// its stored exception stay alive until after_run buries it under mu_, after this returns.
// The exception handed to after_execute is copied after the completing transition (acq_rel):
// from then a get() may copy it too; two copies of one exception_ptr only read it.
#include <exception>
#include <vector>

#include "completion.hpp"
#include "shard.hpp"

namespace kairos::detail {
namespace {

// decorate_task's `run`: the first call runs the task; later ones do nothing. invoke() keeps
// the task's exception in the node, so nothing leaves here.
struct InvokeOnce {
  TaskBase* t;
  bool ran = false;
  bool ok = false;
  static void call(void* p) {
    auto* r = static_cast<InvokeOnce*>(p);
    if (r->ran) return;
    r->ran = true;
    r->ok = r->t->ops->invoke(r->t);
  }
};

template <class Fn>
void guarded(const EngineState& e, Fn&& fn) noexcept {
  try {
    fn();
  } catch (...) {
    report_uncaught(*e.on_uncaught, std::current_exception());
  }
}

}  // namespace

// The tail of run_task (no lock held; t is kRunning and this thread owns the run): run_once
// (completion.hpp) with the hooks around the invocation; after_execute once the run is complete.
void Shard::run_hooked(TaskBase* t, std::int64_t deadline) {
  const Options& o = engine_.opt;
  const ExecutionInfo info{t, deadline, index_, t->periodic()};
  auto invoke = [&] {
    if (o.before_execute) guarded(engine_, [&] { o.before_execute(info); });
    InvokeOnce run{t};
    if (o.decorate_task) guarded(engine_, [&] { o.decorate_task(info, RunFn(&InvokeOnce::call, &run)); });
    InvokeOnce::call(&run);  // the decorator did not run it (or threw first): the run still happens
    return run.ok;
  };
  const bool ok = run_once(t, invoke, true, [this] { return engine_.now_ns(); }, run_context()).ok;
  if (o.after_execute) {
    std::exception_ptr e = ok ? nullptr : stored_error(t);
    guarded(engine_, [&] { o.after_execute(info, e); });
  }
}

// Java's purge(): every cancelled task the queue still retains (remove-on-cancel off, or
// cancelled before the policy was turned on) leaves now, counted out unless cancel() did
// (kRemoved). Cancelled tasks a runner already popped are its to drop. The inbox is drained
// first so a cancelled task not yet taken in is found too.
std::size_t Shard::purge() {
  std::vector<TaskBase*> grave;
  std::vector<TaskBase*> gone;
  Lock lk(mu_);
  if (threads_alive_ > 0) drain_all(lk);
  queue_.remove_if(
      [](TaskBase* t) { return (t->state.load(std::memory_order_acquire) & kStateMask) == kCancelled; },  // (TI2)
      [&](TaskBase* t) { gone.push_back(t); });
  for (TaskBase* t : gone) drop_cancelled(lk, t);  // its callable went with the cancel that won
  if (!gone.empty() && engine_.state() != RunState::kActive) {  // it may have been the last task
    wait_.wake();
    followers_cv_.notify_all();
  }
  unlock_and_bury(lk, grave);
  return gone.size();
}

std::uint64_t Shard::completed() const noexcept { return ran_.load(std::memory_order_relaxed); }

unsigned Shard::active() const {
  Lock lk(mu_);
  return running_;
}

}  // namespace kairos::detail
