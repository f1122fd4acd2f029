// invoke.hpp: the pieces of BasicScheduler::invoke_any (scheduler.hpp).
// AnyState: what the tasks of one invoke_any call report to the waiting caller. Each task
// reports exactly once: its wrapper (AnyCall) reports the outcome of its run, or, if the task
// never runs (cancelled, discarded, dropped after shutdown_now), a CancelledError when its
// callable is destroyed. A moved-from wrapper holds no state and reports nothing.
// Threads: reports come from scheduler threads (or a caller_runs / on_rejected caller), with no
// kairos lock held (task.hpp: callables are run and destroyed outside every kairos lock); the
// mutex orders them with the waiter, and the first normal result wins.
#pragma once
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <type_traits>
#include <utility>

#include <kairos/errors.hpp>

namespace kairos::detail {

template <class R>
struct AnyState {
  using Value = std::conditional_t<std::is_void_v<R>, bool, R>;
  std::mutex mu;
  std::condition_variable cv;
  std::optional<Value> value;  // the first normal result
  std::exception_ptr last;     // the last failure
  std::size_t failed = 0;

  template <class... V>
  void succeed(V&&... v) {
    {
      std::lock_guard lk(mu);
      if (value) return;
      if constexpr (std::is_void_v<R>) value.emplace(true);
      else value.emplace(std::forward<V>(v)...);
    }
    cv.notify_all();
  }
  void fail(std::exception_ptr e) noexcept {
    {
      std::lock_guard lk(mu);
      last = std::move(e);
      ++failed;
    }
    cv.notify_all();
  }
};

template <class F, class R>
struct AnyCall {
  F f;
  std::shared_ptr<AnyState<R>> st;  // null once reported or moved from

  AnyCall(F fn, std::shared_ptr<AnyState<R>> s) : f(std::move(fn)), st(std::move(s)) {}
  AnyCall(AnyCall&&) = default;
  AnyCall& operator=(AnyCall&&) = delete;
  ~AnyCall() {
    if (st) st->fail(std::make_exception_ptr(CancelledError("kairos: the task was cancelled")));
  }

  void operator()() requires std::is_invocable_v<F&> { report([&] { return f(); }); }
  void operator()(std::stop_token tok) requires std::is_invocable_v<F&, std::stop_token> {
    report([&] { return f(std::move(tok)); });
  }

 private:
  template <class Call>
  void report(Call&& call) {
    std::shared_ptr<AnyState<R>> s = std::move(st);  // reported here, whatever happens
    try {
      if constexpr (std::is_void_v<R>) {
        call();
        s->succeed();
      } else {
        s->succeed(call());
      }
    } catch (...) {
      s->fail(std::current_exception());
      throw;
    }
  }
};

}  // namespace kairos::detail
