// engine_state.hpp: what every shard of one scheduler reads: its options, clock, lifecycle state
// and shutdown policies. Owned by the Engine (engine.cpp); shards hold a const reference.
// Threads: the atomics are written by lifecycle calls (shutdown, policy setters) on any thread.
#pragma once
#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>

#include <kairos/clock.hpp>
#include <kairos/detail/steady_clock.hpp>
#include <kairos/options.hpp>

#include "loop_wake.hpp"

namespace kairos::detail {

// The scheduler's lifecycle, in order (later states compare greater): running; shutdown() called;
// shutdown_now() called (its tasks taken or being taken); every thread (or poller) gone.
enum class RunState : int { kActive = 0, kShutdown = 1, kShutdownNow = 2, kTerminated = 3 };

struct EngineState {
  EngineState(const Options& o, ManualClock* clock)
      : opt(o),
        manual(clock),
        remove_on_cancel(o.remove_on_cancel),
        exec_delayed(o.execute_existing_delayed_tasks_after_shutdown),
        continue_periodic(o.continue_existing_periodic_tasks_after_shutdown),
        on_uncaught(std::make_shared<const std::function<void(std::exception_ptr)>>(o.on_uncaught)),
        exec_hooks(o.before_execute || o.decorate_task || o.after_execute),
        loop_wake(o.poll_mode ? std::make_unique<LoopWake>(o.on_wake, on_uncaught) : nullptr) {}

  const Options opt;
  ManualClock* const manual;
  // seq_cst where it is one side of a Dekker pair: a submission racing shutdown (RS1/RS2, engine.cpp).
  std::atomic<RunState> run_state{RunState::kActive};
  std::atomic<bool> remove_on_cancel;  // the policies: set with release (PO1), read acquire (PO2)
  std::atomic<bool> exec_delayed;
  std::atomic<bool> continue_periodic;
  const std::shared_ptr<const std::function<void(std::exception_ptr)>> on_uncaught;
  const bool exec_hooks;  // a run goes through Shard::run_hooked (shard_hooks.cpp)
  const std::unique_ptr<LoopWake> loop_wake;  // poll mode: the loop's wake fd and on_wake
  // A ManualClock scheduler's clock after its destructor (release_clock, MC1).
  std::atomic<bool> clock_released{false};
  std::atomic<std::int64_t> released_at{0};

  std::int64_t now_ns() const noexcept {
    if (manual == nullptr) return steady_now_ns();
    // (MC1) acquire, pairs with release_clock's release store: once the scheduler's destructor
    // is done, its clock is the user's again (it may go at once), yet a thread of this engine
    // can still be on its way out (destroyed from inside one of its own tasks: detached), or an
    // outer poll still running: they read the time the clock had then.
    if (clock_released.load(std::memory_order_acquire)) return released_at.load(std::memory_order_relaxed);
    return manual->now_ns();
  }
  // The destructor's last step (Engine::close): no read of the ManualClock after it.
  void release_clock() noexcept {
    if (manual == nullptr) return;
    released_at.store(manual->now_ns(), std::memory_order_relaxed);
    clock_released.store(true, std::memory_order_release);  // (MC1)
  }
  // (RS3) the shards' read of the lifecycle state: each caller needs an acquire (it sees what
  // RS1 or RS4 published, and the state only moves forward); the load is seq_cst, stronger than
  // that and no dearer on x86-64 (a plain load either way), so no caller's need is argued below
  // it. The Dekker pair's own load (RS2) reads run_state directly (engine.cpp).
  RunState state() const noexcept { return run_state.load(std::memory_order_seq_cst); }  // (RS3)
};

// Runs `handler` (stderr if empty) with `e`; an exception from the handler is dropped.
void report_uncaught(const std::function<void(std::exception_ptr)>& handler, std::exception_ptr e) noexcept;

}  // namespace kairos::detail
