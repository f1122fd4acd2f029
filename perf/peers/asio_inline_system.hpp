// asio_inline_system.hpp: AsioInlineSystem, Boost.Asio timers on an io_context that the
// workload's own thread runs (no io thread): the inline anchor of poll mode. A timer is armed
// directly (steady_timer::expires_at + async_wait, no post: the loop's thread owns the
// io_context) and cancelled directly (its handler then runs with operation_aborted at the next
// poll). Every kPollEvery calls the adapter runs io_context::poll() once, as KairosPollSystem
// polls kairos. W2 and W6 only (tools/lat/native_runs.cpp).
#pragma once
#include <chrono>
#include <cstdint>
#include <memory>
#include <utility>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include "../workloads/system.hpp"

namespace kairos::perf {

class AsioInlineSystem {
  using Clock = std::chrono::steady_clock;

 public:
  using Handle = std::shared_ptr<boost::asio::steady_timer>;
  static constexpr bool kAbsoluteDeadlines = true;
  static constexpr bool kInline = true;
  static constexpr unsigned kPollEvery = 64;

  explicit AsioInlineSystem(const SystemConfig&) {}

  template <class F>
  Handle schedule(F&& f, std::int64_t delay_ns) {
    return arm(std::forward<F>(f), Clock::now() + std::chrono::nanoseconds(delay_ns));
  }
  template <class F>
  Handle schedule_at(F&& f, std::int64_t deadline_ns) {
    return arm(std::forward<F>(f), Clock::time_point(std::chrono::nanoseconds(deadline_ns)));
  }
  template <class F>
  Handle schedule_at_fixed_rate(F&&, std::int64_t, std::int64_t) {
    throw std::logic_error("asio-inline: no periodic timers (W2 and W6 only)");
  }
  template <class F>
  void execute(F&& f) {
    tick();
    boost::asio::post(io_, std::forward<F>(f));
  }
  static bool cancel(Handle& h) { return h && h->cancel() == 1; }
  std::size_t queue_size() { return static_cast<std::size_t>(armed_ - completed_); }
  bool drain(std::chrono::nanoseconds) {
    io_.poll();  // the aborted handlers of cancelled timers
    io_.restart();
    return true;
  }
  bool run_inline(std::chrono::nanoseconds) {
    while (io_.poll() != 0) {
    }
    io_.restart();
    return true;
  }

 private:
  template <class F>
  Handle arm(F&& f, Clock::time_point due) {
    tick();
    auto timer = std::make_shared<boost::asio::steady_timer>(io_, due);
    ++armed_;
    timer->async_wait([this, fn = std::forward<F>(f)](const boost::system::error_code& ec) mutable {
      ++completed_;
      if (!ec) fn();
    });
    return timer;
  }
  void tick() {
    if (++calls_ % kPollEvery == 0) {
      io_.poll();
      io_.restart();
    }
  }

  boost::asio::io_context io_{1};  // concurrency hint 1: one thread, no locking inside
  std::uint64_t calls_ = 0;
  std::int64_t armed_ = 0;
  std::int64_t completed_ = 0;
};

}  // namespace kairos::perf
